// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the deep tier's plan (user/collect/deep_plan.c): the duty cycle's share of
 * the time, windows that grow with the requests' p99, the tail trigger and its cap. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include "collect/deep_plan.h"

#define MS 1000000ULL
#define S  1000000000ULL

/* Steps the plan every 10 ms from `from` for `secs`, feeding `per_step` requests of
 * `lat` each step; returns the share of the steps it was on. */
static double run(struct deep_plan *p, __u64 *now, double secs, int per_step, __u64 lat)
{
	__u64 end = *now + (__u64)(secs * (double)S), on = 0, steps = 0;

	for (; *now < end; *now += 10 * MS) {
		for (int i = 0; i < per_step; i++)
			deep_plan_request(p, lat);
		on += deep_plan_step(p, *now);
		steps++;
	}
	return (double)on / (double)steps;
}

static void test_always_and_never(void **state)
{
	struct deep_plan p;
	__u64 now = 5 * S, on, span;
	__u32 w, t;

	(void)state;
	deep_plan_init(&p, 1, now);
	assert_true(run(&p, &now, 30, 10, 50 * MS) == 1.0);
	deep_plan_take(&p, now, &on, &span, &w, &t);
	assert_int_equal(w, 0); /* never toggled */
	deep_plan_init(&p, 0, now);
	assert_true(run(&p, &now, 30, 10, 50 * MS) == 0.0);
}

static void test_duty_share(void **state)
{
	struct deep_plan p;
	__u64 now = 5 * S, on, span;
	__u32 windows, trig;

	(void)state;
	deep_plan_init(&p, 0.1, now);
	/* steady 1 ms requests: no trigger, 1 s windows every 10 s */
	double share = run(&p, &now, 100, 5, 1 * MS);

	assert_true(share > 0.09 && share < 0.11);
	deep_plan_take(&p, now, &on, &span, &windows, &trig);
	assert_int_equal(trig, 0);
	assert_true(windows >= 9 && windows <= 11);
	assert_true((double)on / (double)span > 0.09 && (double)on / (double)span < 0.11);
}

/* 2 s requests: a window of 4 x p99 (8 s), so requests start and end inside it */
static void test_window_follows_p99(void **state)
{
	struct deep_plan p;
	__u64 now = 5 * S;

	(void)state;
	deep_plan_init(&p, 0.1, now);
	run(&p, &now, 60, 1, 2 * S);
	assert_true(p.window_ns >= 7 * S && p.window_ns <= 9 * S);
	p.lat_cur.count = 0;
	deep_plan_init(&p, 0.1, now);
	run(&p, &now, 60, 1, 400 * S); /* capped */
	assert_int_equal(p.window_ns, DEEP_WINDOW_MAX_NS);
}

/* A slow request while off opens a window at once; the trigger's windows stay under its
 * cap even when every request is slow. */
static void test_tail_trigger(void **state)
{
	struct deep_plan p;
	__u64 now = 5 * S, on, span;
	__u32 windows, trig;
	double share;

	(void)state;
	deep_plan_init(&p, 0.1, now);
	run(&p, &now, 25, 5, 1 * MS); /* a threshold near 1 ms */
	assert_true(p.threshold_ns > 0);
	/* off, in the middle of the gap between duty windows */
	while (p.on)
		run(&p, &now, 0.01, 5, 1 * MS);
	run(&p, &now, 2, 5, 1 * MS);
	assert_false(p.on);
	deep_plan_request(&p, 50 * MS);
	assert_true(deep_plan_step(&p, now));
	assert_true(p.triggered);
	deep_plan_take(&p, now, &on, &span, &windows, &trig);
	assert_int_equal(trig, 1);
	/* a slow request every second (0.2 % of them: the p99 stays ~1 ms): triggered
	 * windows up to the cap only, which the run then holds */
	{
		__u64 on_steps = 0, steps = 0;

		for (int s = 0; s < 300; s++) {
			deep_plan_request(&p, 50 * MS);
			for (int k = 0; k < 100; k++, steps++) {
				for (int i = 0; i < 5; i++)
					deep_plan_request(&p, 1 * MS);
				on_steps += deep_plan_step(&p, now);
				now += 10 * MS;
			}
		}
		share = (double)on_steps / (double)steps;
	}
	assert_true(share <= DEEP_TRIGGER_CAP * 0.1 + 0.02);
	assert_true(share > 0.15);
}

/* --budget: the duty that keeps the average cost at the aim, never above the asked one;
 * at 0 the tier stays off, raised again it runs. */
static void test_budget_duty(void **state)
{
	struct deep_plan p;
	__u64 now = 5 * S;

	(void)state;
	/* 0.9 % aim, 5 % with the tier, 0.4 % without: (0.9 - 0.4) / (5 - 0.4) */
	assert_true(fabs(deep_plan_duty_within(0.9, 5, 0.4, 0.5) - 0.5 / 4.6) < 1e-9);
	assert_true(deep_plan_duty_within(0.9, 1, 0.4, 0.1) == 0.1); /* affordable */
	assert_true(deep_plan_duty_within(0.9, 5, 0.95, 0.1) == 0);  /* the rest is over */
	assert_true(deep_plan_duty_within(0.9, 0.3, 0.4, 0.1) == 0.1);
	deep_plan_init(&p, 0.1, now);
	deep_plan_set_duty(&p, 0.5); /* never above the asked */
	assert_true(p.duty == 0.1);
	deep_plan_set_duty(&p, 0);
	assert_true(run(&p, &now, 30, 5, 1 * MS) == 0.0);
	deep_plan_set_duty(&p, 0.05);
	{
		double share = run(&p, &now, 100, 5, 1 * MS);

		assert_true(share > 0.04 && share < 0.06);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_always_and_never),   cmocka_unit_test(test_duty_share),
		cmocka_unit_test(test_window_follows_p99), cmocka_unit_test(test_tail_trigger),
		cmocka_unit_test(test_budget_duty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
