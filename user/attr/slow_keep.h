/* SPDX-License-Identifier: GPL-2.0 */
/* The flight recorder's choice of slow requests (`record`): per interval, its slowest 1 %
 * that are at or above the p99 of recent traffic, at most `cap` of them. Pure code. */
#ifndef TT_SLOW_KEEP_H
#define TT_SLOW_KEEP_H

#include <stdbool.h>
#include <stddef.h>
#include "core/histogram.h"
#include "tailtrace.h"

struct slow_keep {
	struct req_event *heap; /* kept requests, a min-heap on latency */
	size_t n, cap;
	struct hist cur, prev; /* latencies of this interval and of the one before */
	__u64 threshold;       /* p99 of prev + cur, 0 while fewer than 100 requests */
	__u64 since_refresh;
};

int slow_keep__init(struct slow_keep *k, size_t cap);
void slow_keep__free(struct slow_keep *k);
/* One finished request. */
void slow_keep__offer(struct slow_keep *k, const struct req_event *ev);
/* The interval ends: writes the kept requests (at or above the interval's final threshold,
 * at most 1 % of the interval's requests, rounded up) to out (room for `cap`), slowest
 * first, and returns their number; *cut gets how many more of them there were than room,
 * *threshold_ns the threshold. Starts the next interval. */
size_t slow_keep__take(struct slow_keep *k, struct req_event *out, __u64 *cut, __u64 *threshold_ns);

#endif
