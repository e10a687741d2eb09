// SPDX-License-Identifier: GPL-2.0
/* Unit tests of ring_wake_due() (bpf/tailtrace.h), the rule by which req_emit wakes a
 * request ring's reader: a ring filled event by event, never drained, must wake it once
 * per quarter crossed, and one drained in between must wake it again at the next quarter. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "tailtrace.h"

#define RING (4u << 20)
#define STEP (RING / 4)
#define REC  REQ_RECORD_BYTES

/* Events written into a ring holding `unread` bytes until it is full: the wakeups. */
static unsigned int fill(__u64 *unread, __u64 step, unsigned int *events)
{
	unsigned int wakes = 0;

	*events = 0;
	while (*unread + REC <= RING) {
		wakes += ring_wake_due(*unread, REC, step);
		*unread += REC;
		(*events)++;
	}
	return wakes;
}

static void test_once_per_quarter(void **state)
{
	unsigned int events, wakes;
	__u64 unread = 0;

	(void)state;
	wakes = fill(&unread, STEP, &events);
	/* the quarter, the half and three quarters; the last quarter is not crossed by a
	 * record that still fits */
	assert_int_equal(wakes, 3);
	assert_true(events > 14000);
}

static void test_the_crossing_event_wakes(void **state)
{
	(void)state;
	assert_false(ring_wake_due(STEP - REC - 8, REC, STEP)); /* ends short of it */
	assert_true(ring_wake_due(STEP - REC, REC, STEP));      /* ends exactly at it */
	assert_true(ring_wake_due(STEP - REC + 8, REC, STEP));  /* goes past it */
	assert_false(ring_wake_due(STEP, REC, STEP));           /* already at it */
	assert_false(ring_wake_due(STEP + 8 * REC, REC, STEP));
	assert_true(ring_wake_due(2 * STEP - 1, REC, STEP));
	assert_false(ring_wake_due(0, REC, STEP));
}

static void test_drained_ring_wakes_again(void **state)
{
	unsigned int events, first, again;
	__u64 unread = 0;

	(void)state;
	first = fill(&unread, STEP, &events);
	unread = 0; /* the reader caught up */
	again = fill(&unread, STEP, &events);
	assert_int_equal(first, again);
}

/* Every power-of-two step and unread offset: the bit test agrees with the division. */
static void test_bits_equal_division(void **state)
{
	(void)state;
	for (__u64 step = 1; step <= RING; step <<= 1)
		for (__u64 unread = 0; unread < 4 * step + 3 * REC; unread += 7)
			assert_int_equal(ring_wake_due(unread, REC, step),
					 unread / step != (unread + REC) / step);
}

static void test_no_step_never_wakes(void **state)
{
	unsigned int events;
	__u64 unread = 0;

	(void)state;
	assert_int_equal(fill(&unread, 0, &events), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_once_per_quarter),
		cmocka_unit_test(test_the_crossing_event_wakes),
		cmocka_unit_test(test_drained_ring_wakes_again),
		cmocka_unit_test(test_bits_equal_division),
		cmocka_unit_test(test_no_step_never_wakes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
