/* SPDX-License-Identifier: GPL-2.0 */
/* The two clocks of tailtrace: CLOCK_MONOTONIC (the clock bpf_ktime_get_ns() reads) for
 * periods and for comparing with the kernel's times, CLOCK_REALTIME for what is recorded
 * and shown as a date. */
#ifndef TT_LIB_CLOCK_H
#define TT_LIB_CLOCK_H

#include <time.h>
#include <linux/types.h>

static inline __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in seconds, for interval loops */
static inline double mono_s(void)
{
	return (double)mono_ns() / 1e9;
}

/* CLOCK_REALTIME in nanoseconds since the epoch */
static inline __u64 realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

#endif
