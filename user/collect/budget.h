/* SPDX-License-Identifier: GPL-2.0 */
/* The CPU budget (--budget PCT): each step tailtrace measures what it costs (its programs'
 * run time by the kernel's accounting plus its own CPU) and lowers or raises the share of
 * flows it traces to stay inside the budget. A flow is in the sample when a hash of its
 * socket's address is at most a threshold the BPF programs read (bpf/maps.bpf.h); counts
 * of sampled intervals are scaled up. The pure rules here; collector_budget.c applies them. */
#ifndef TT_BUDGET_H
#define TT_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define BUDGET_STEP_S 1.0 /* seconds between two looks at the cost */
/* Seconds a draw of the sample lasts: every draw moves about half the flows in or out.
 * The more draws a span holds, the less a few unlike flows decide its p99: over 14 s of
 * the budget check in tests/ns/test_tcp_stages.sh (64 flows, a third traced), the sampled
 * req.latency p99 came within one 1/16 bucket of the unsampled one in 6 runs of 6 with a
 * draw every second, two buckets off in 2 runs of 7 with a draw every 10 s. With requests
 * a flow leaves at its next request boundary and a draw costs nothing; without, every draw
 * walks the flow map to delete the flows out of it, so draws are rarer. */
#define BUDGET_DRAW_S      1.0
#define BUDGET_DRAW_WALK_S 10.0
#define BUDGET_MIN_RATE    (1.0 / 4096)
#define BUDGET_AIM         0.9 /* the share of the budget the cost aims at */
/* a deep tier the budget stopped gets this share of its duty back after this long, to
 * measure its cost again */
#define BUDGET_DEEP_RETRY_S     60.0
#define BUDGET_DEEP_RETRY_SHARE 0.1

/* What tracing costs against the share of flows traced: cost = floor + slope * rate, % of
 * one CPU. The floor is the cost with no flow traced: every hook still runs for every
 * event, the driver stamps every packet of the ports. known: a fit was made. */
struct budget_fit {
	bool known;
	double floor, slope;
};

/* The rate for the next step: cost_pct was measured at `rate`. Aims at 90 % of the budget:
 * lowers at once in proportion, raises at most twofold a step, and keeps the rate when it
 * would move by less than a tenth. With the floor at 90 % of the budget or more (fit known)
 * the aim cannot be reached, and the lower the rate the larger each p99's error: over the
 * budget, the rate goes to where the fit puts the cost 80 % of the way from the floor to
 * the budget, or, the budget under the floor, to where the traced flows cost a twentieth
 * of the floor (within 5 % of the least tailtrace can cost), and no lower (1 when tracing
 * costs nothing per flow). fit may be NULL. Within [BUDGET_MIN_RATE, 1]. */
double budget_next_rate(double rate, double cost_pct, double budget_pct,
			const struct budget_fit *fit);
/* The steps the floor is estimated from, how many pairs of them with rates a factor
 * BUDGET_FLOOR_SPREAD apart it needs, and the factor between their lowest and highest rate
 * (a fit over rates close together extrapolates its noise down to rate 0). */
#define BUDGET_FLOOR_STEPS      16
#define BUDGET_FLOOR_MIN_PAIRS  3
#define BUDGET_FLOOR_SPREAD     1.5
#define BUDGET_FLOOR_MIN_SPREAD 4.0
/* The fit of n steps' (rate, cost) pairs, by a weighted Theil-Sen: the slope is the median
 * of the pairwise slopes of the pairs whose rates differ by a factor BUDGET_FLOOR_SPREAD or
 * more, each weighted by the square of its rate difference (a slope over a small
 * difference is mostly the cost's noise), the floor the median of cost - slope * rate;
 * robust to the odd noisy step (on a shared host a program's ns per run moves from one
 * step to the next, docs/performance.md). Neither the floor nor the slope below 0.
 * Returns -1 (fit not known) with fewer than BUDGET_FLOOR_MIN_PAIRS such pairs or rates within a
 * factor BUDGET_FLOOR_MIN_SPREAD of each other: the rate barely moved. */
int budget_fit_steps(const double *rate, const double *cost, size_t n, struct budget_fit *fit);

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
