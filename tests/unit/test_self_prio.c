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
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include "collect/self_prio.h"

#define MS   1000000ULL
#define RING (4ULL << 20)

static struct self_prio_sample at(__u64 now_ms, __u64 backlog, __u64 waited_ms)
{
	struct self_prio_sample x = {
		.now_ns = now_ms * MS,
		.backlog = backlog,
		.ring_size = RING,
		.waited_ns = waited_ms * MS,
		.period_ns = 50 * MS,
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

static void test_looks_often_only_while_unsettled(void **state)
{
	struct self_prio_state s = { 0 };
	struct self_prio_sample x = at(250, 0, 0), woke = { .now_ns = 300 * MS, .ring_woke = true };

	(void)state;
	assert_int_equal(self_prio_period_ns(&s), SELF_PRIO_QUIET_NS);
	x.period_ns = SELF_PRIO_QUIET_NS;
	assert_false(self_prio_next(&s, &x));
	assert_int_equal(self_prio_period_ns(&s), SELF_PRIO_QUIET_NS);
	/* the ring's wakeup alone boosts nothing (its reader was woken too): it makes the
	 * watchdog look again soon */
	assert_false(self_prio_next(&s, &woke));
	assert_int_equal(self_prio_period_ns(&s), SELF_PRIO_BUSY_NS);
	for (__u64 t = 350; t < 1300; t += 50) {
		x = at(t, RING / 8, 0);
		assert_false(self_prio_next(&s, &x));
		assert_int_equal(self_prio_period_ns(&s), SELF_PRIO_BUSY_NS);
	}
	x = at(1300, 0, 0); /* a second calm since the wakeup */
	assert_false(self_prio_next(&s, &x));
	assert_int_equal(self_prio_period_ns(&s), SELF_PRIO_QUIET_NS);
	/* a wait of a quarter of the period: not starved yet, but looked at more often */
	x = at(1550, 0, 0);
	x.period_ns = 250 * MS;
	x.waited_ns = 63 * MS;
	assert_false(self_prio_next(&s, &x));
	assert_int_equal(self_prio_period_ns(&s), SELF_PRIO_BUSY_NS);
	/* boosted: busy until a second after the boost ended */
	x = at(1600, RING / 4, 0);
	assert_true(self_prio_next(&s, &x));
	x = at(2600, 0, 0);
	assert_false(self_prio_next(&s, &x));
	assert_int_equal(self_prio_period_ns(&s), SELF_PRIO_BUSY_NS);
	x = at(3550, 0, 0);
	assert_false(self_prio_next(&s, &x));
	assert_int_equal(self_prio_period_ns(&s), SELF_PRIO_BUSY_NS);
	x = at(3600, 0, 0);
	assert_false(self_prio_next(&s, &x));
	assert_int_equal(self_prio_period_ns(&s), SELF_PRIO_QUIET_NS);
	assert_int_equal(s.boosts, 1);
}

static bool full_backlog(void *ctx, __u64 *used, __u64 *size)
{
	(void)ctx;
	*used = *size = RING;
	return true;
}

static bool counted_backlog(void *ctx, __u64 *used, __u64 *size)
{
	(*(int *)ctx)++;
	*used = 0;
	*size = RING;
	return true;
}

static __u64 now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000;
}

/* Live: only where the thread can come back from SCHED_IDLE (root, CAP_SYS_NICE). */
static void test_live_policy(void **state)
{
	struct self_prio *p;
	int before = sched_getscheduler(0), efd, looks = 0;
	__u64 fastest = ~0ULL;

	(void)state;
	if (before != SCHED_OTHER || getpriority(PRIO_PROCESS, 0) != 0)
		skip();
	p = self_prio__start(NULL, NULL, NULL, 0);
	if (!p) {
		assert_int_not_equal(geteuid(), 0); /* root can always come back */
		skip();
	}
	assert_int_equal(sched_getscheduler(0), SCHED_IDLE);
	self_prio__stop(p);
	assert_int_equal(sched_getscheduler(0), SCHED_OTHER);

	/* a full ring: the watchdog restores the policy within a period or two */
	p = self_prio__start(full_backlog, NULL, NULL, 0);
	assert_non_null(p);
	for (int i = 0; i < 100 && sched_getscheduler(0) == SCHED_IDLE; i++)
		usleep(10000);
	assert_int_equal(sched_getscheduler(0), SCHED_OTHER);
	self_prio__stop(p);
	assert_int_equal(sched_getscheduler(0), SCHED_OTHER);

	/* a ring's wakeup (an eventfd here) makes the watchdog look after a busy period
	 * (50 ms), not a quiet one (250 ms); the fastest of three tries, as a vCPU can stall */
	efd = eventfd(0, EFD_CLOEXEC);
	assert_true(efd >= 0);
	for (int t = 0; t < 3; t++) {
		__u64 one = 1, t0;

		p = self_prio__start(full_backlog, NULL, &efd, 1);
		assert_non_null(p);
		t0 = now_ms();
		assert_int_equal(write(efd, &one, sizeof(one)), sizeof(one));
		for (int i = 0; i < 1000 && sched_getscheduler(0) == SCHED_IDLE; i++)
			usleep(1000);
		if (now_ms() - t0 < fastest)
			fastest = now_ms() - t0;
		assert_int_equal(sched_getscheduler(0), SCHED_OTHER);
		self_prio__stop(p);
		assert_int_equal(read(efd, &one, sizeof(one)), sizeof(one));
	}
	assert_in_range(fastest, 0, 200);

	/* data left waiting in a ring (the eventfd stays readable) wakes the watchdog once,
	 * not at every look: ~20 looks in the busy second after that wakeup, then one per
	 * quiet period (a level-triggered wait gave ~50 looks in 2.5 s) */
	p = self_prio__start(counted_backlog, &looks, &efd, 1);
	assert_non_null(p);
	assert_int_equal(write(efd, &(__u64){ 1 }, sizeof(__u64)), sizeof(__u64));
	usleep(2500000);
	self_prio__stop(p);
	close(efd);
	assert_in_range(looks, 15, 38);

	/* a priority the user chose is left alone */
	if (!setpriority(PRIO_PROCESS, 0, -1)) {
		assert_null(self_prio__start(NULL, NULL, NULL, 0));
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
		cmocka_unit_test(test_looks_often_only_while_unsettled),
		cmocka_unit_test(test_live_policy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
