/* SPDX-License-Identifier: GPL-2.0 */
/* The CPU budget (--budget PCT): each step tailtrace measures what it costs (its programs'
 * run time by the kernel's accounting plus its own CPU) and lowers or raises the share of
 * flows it traces to stay inside the budget. A flow is in the sample when a hash of its
 * socket's address is at most a threshold the BPF programs read (bpf/maps.bpf.h); counts
 * of sampled intervals are scaled up. The pure rules here; collector_budget.c applies them. */
#ifndef TT_BUDGET_H
#define TT_BUDGET_H

#include <stdbool.h>
#include <linux/types.h>

#define BUDGET_STEP_S   1.0 /* seconds between two looks at the cost */
#define BUDGET_MIN_RATE (1.0 / 4096)

/* The rate for the next step: cost_pct was measured at `rate`. Aims at 90 % of the budget:
 * lowers at once in proportion, raises at most twofold a step, and keeps the rate when it
 * would move by less than a tenth. Within [BUDGET_MIN_RATE, 1]. */
double budget_next_rate(double rate, double cost_pct, double budget_pct);
/* The threshold of a rate and back (the sample is hash <= threshold). */
__u32 budget_threshold(double rate);
double budget_rate_of(__u32 threshold);
/* The hash the BPF side compares (flow_in_sample): Fibonacci hashing of the address and
 * the sample's salt. */
static inline __u32 budget_flow_hash(__u64 addr, __u64 salt)
{
	return (__u32)(((addr ^ salt) * 0x9E3779B97F4A7C15ULL) >> 32);
}
/* The next salt after `salt` (splitmix64): a new draw of the sample. Pure. */
__u64 budget_next_salt(__u64 salt);

#endif
