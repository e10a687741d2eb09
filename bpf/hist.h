/* SPDX-License-Identifier: GPL-2.0 */
/* Log-linear latency histogram shared by the BPF programs and userspace: the slot math
 * lives here once so the exact kernel-side bucketing is unit-tested without root. */
#ifndef TT_HIST_H
#define TT_HIST_H

#ifndef __VMLINUX_H__
#include <linux/types.h> /* BPF side gets the types from vmlinux.h */
#endif

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* Each power of two [2^m, 2^(m+1)) is split into 2^HIST_SUB_BITS linear sub-buckets, so a
 * bucket is at most 1/16 of its lower bound wide: reporting its midpoint keeps any quantile
 * within 1/32 (and certainly 1/16) of the exact value. Values below 16 ns are exact. */
#define HIST_SUB_BITS 4
#define HIST_SUB      (1u << HIST_SUB_BITS)
/* Values >= 2^HIST_MAX_LOG2 ns (~78 hours) land in the overflow slot, which is counted and
 * shown, never folded silently into a regular bucket. */
#define HIST_MAX_LOG2      48
#define HIST_REGULAR_SLOTS ((HIST_MAX_LOG2 - HIST_SUB_BITS + 1) * HIST_SUB)
#define HIST_OVERFLOW_SLOT HIST_REGULAR_SLOTS
#define HIST_SLOTS         (HIST_REGULAR_SLOTS + 1)

/* One histogram as stored per CPU in kernel maps; userspace sums the CPUs. */
struct hist {
	__u64 slots[HIST_SLOTS];
	__u64 count;
	__u64 sum_ns;
	__u64 max_ns;
};

/* floor(log2(v)) for v > 0 by binary search: BPF has no count-leading-zeros instruction. */
static __always_inline __u32 hist_log2(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) {
		v >>= 32;
		r += 32;
	}
	if (v >> 16) {
		v >>= 16;
		r += 16;
	}
	if (v >> 8) {
		v >>= 8;
		r += 8;
	}
	if (v >> 4) {
		v >>= 4;
		r += 4;
	}
	if (v >> 2) {
		v >>= 2;
		r += 2;
	}
	if (v >> 1) {
		r += 1;
	}
	return r;
}

static __always_inline __u32 hist_slot(__u64 v)
{
	__u32 m;

	if (v < HIST_SUB)
		return (__u32)v;
	m = hist_log2(v);
	if (m >= HIST_MAX_LOG2)
		return HIST_OVERFLOW_SLOT;
	return (m - HIST_SUB_BITS + 1) * HIST_SUB +
	       (__u32)((v >> (m - HIST_SUB_BITS)) & (HIST_SUB - 1));
}

/* Lowest value that lands in a regular slot. */
static __always_inline __u64 hist_slot_lo(__u32 slot)
{
	__u32 group, sub;

	if (slot < HIST_SUB)
		return slot;
	if (slot >= HIST_OVERFLOW_SLOT)
		return 1ULL << HIST_MAX_LOG2;
	group = slot / HIST_SUB;
	sub = slot % HIST_SUB;
	return (__u64)(HIST_SUB + sub) << (group - 1);
}

/* One past the highest value of a regular slot; the overflow slot is unbounded (~0). */
static __always_inline __u64 hist_slot_hi(__u32 slot)
{
	if (slot < HIST_SUB)
		return slot + 1;
	if (slot >= HIST_OVERFLOW_SLOT)
		return ~0ULL;
	return hist_slot_lo(slot) + (1ULL << (slot / HIST_SUB - 1));
}

#endif /* TT_HIST_H */
