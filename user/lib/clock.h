/* SPDX-License-Identifier: GPL-2.0 */
/* CLOCK_MONOTONIC in nanoseconds: the clock bpf_ktime_get_ns() reads, for userspace code
 * that compares its own times with the kernel's or measures periods. */
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

#endif
