// SPDX-License-Identifier: GPL-2.0
/* Unit tests of tailtrace's own priority: the watchdog's decision rule, and that the
 * thread really runs SCHED_IDLE between start and stop and gets its policy back. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <sched.h>
#include <stdbool.h>
#include <unistd.h>
#include <sys/resource.h>
#include "self_prio.h"

#define MS 1000000ULL
#define RING (4ULL << 20)

static struct self_prio_sample at(__u64 now_ms, __u64 backlog, __u64 waited_ms)
{
	struct self_prio_sample x = {
		.now_ns = now_ms * MS, .backlog = backlog, .ring_size = RING,
		.waited_ns = waited_ms * MS, .period_ns = 50 * MS,
	};
	return x;
}

static void test_stays_idle_when_keeping_up(void **state)
{
	struct self_prio_state s = { 0 };
	struct self_prio_sample x;

	(void)state;
	for (__u64 t = 50; t < 5000; t += 50) {
		x = at(t, RING / 4 - 1, 24); /* just under both thresholds */
		assert_false(self_prio_next(&s, &x));
	}
	assert_int_equal(s.boosts, 0);
}

static void test_boosts_on_a_filling_ring(void **state)
{
	struct self_prio_state s = { 0 };
	struct self_prio_sample x = at(100, RING / 4, 0);

	(void)state;
	assert_true(self_prio_next(&s, &x));
	assert_int_equal(s.boosts, 1);
	/* drained at once, but the hold keeps it at normal priority for a second */
	x = at(150, 0, 0);
	assert_true(self_prio_next(&s, &x));
	x = at(1099, 0, 0);
	assert_true(self_prio_next(&s, &x));
	x = at(1100, 0, 0);
	assert_false(self_prio_next(&s, &x));
	assert_int_equal(s.boosts, 1);
}

static void test_boosts_when_starved(void **state)
{
	struct self_prio_state s = { 0 };
	struct self_prio_sample x = at(100, 0, 25); /* waited half the period for a CPU */

	(void)state;
	assert_true(self_prio_next(&s, &x));
	/* no ring (hist without requests): the wait alone decides */
	s = (struct self_prio_state){ 0 };
	x = at(100, 0, 30);
	x.ring_size = 0;
	assert_true(self_prio_next(&s, &x));
}

static void test_holds_while_the_ring_is_not_drained(void **state)
{
	struct self_prio_state s = { 0 };
	struct self_prio_sample x = at(0, RING / 2, 0);

	(void)state;
	assert_true(self_prio_next(&s, &x));
	x = at(2000, RING / 16, 0); /* past the hold, still a sixteenth full */
	assert_true(self_prio_next(&s, &x));
	x = at(2050, RING / 16 - 1, 0);
	assert_false(self_prio_next(&s, &x));
	x = at(2100, RING / 4, 0); /* and back up when it fills again */
	assert_true(self_prio_next(&s, &x));
	assert_int_equal(s.boosts, 2);
}

static bool full_backlog(void *ctx, __u64 *used, __u64 *size)
{
	(void)ctx;
	*used = *size = RING;
	return true;
}

/* Live: only where the thread can come back from SCHED_IDLE (root, CAP_SYS_NICE). */
static void test_live_policy(void **state)
{
	struct self_prio *p;
	int before = sched_getscheduler(0);

	(void)state;
	if (before != SCHED_OTHER || getpriority(PRIO_PROCESS, 0) != 0)
		skip();
	p = self_prio__start(NULL, NULL);
	if (!p) {
		assert_int_not_equal(geteuid(), 0); /* root can always come back */
		skip();
	}
	assert_int_equal(sched_getscheduler(0), SCHED_IDLE);
	self_prio__stop(p);
	assert_int_equal(sched_getscheduler(0), SCHED_OTHER);

	/* a full ring: the watchdog restores the policy within a period or two */
	p = self_prio__start(full_backlog, NULL);
	assert_non_null(p);
	for (int i = 0; i < 100 && sched_getscheduler(0) == SCHED_IDLE; i++)
		usleep(10000);
	assert_int_equal(sched_getscheduler(0), SCHED_OTHER);
	self_prio__stop(p);
	assert_int_equal(sched_getscheduler(0), SCHED_OTHER);

	/* a priority the user chose is left alone */
	if (!setpriority(PRIO_PROCESS, 0, -1)) {
		assert_null(self_prio__start(NULL, NULL));
		assert_int_equal(sched_getscheduler(0), SCHED_OTHER);
		assert_int_equal(setpriority(PRIO_PROCESS, 0, 0), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stays_idle_when_keeping_up),
		cmocka_unit_test(test_boosts_on_a_filling_ring),
		cmocka_unit_test(test_boosts_when_starved),
		cmocka_unit_test(test_holds_while_the_ring_is_not_drained),
		cmocka_unit_test(test_live_policy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
