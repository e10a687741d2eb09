/* SPDX-License-Identifier: GPL-2.0 */
/* Userspace side of the log-linear histograms: merging CPUs and snapshots, quantiles,
 * summaries. Pure code, unit-tested against exact sorted values. */
#ifndef TT_USER_HISTOGRAM_H
#define TT_USER_HISTOGRAM_H

#include <stddef.h>
#include <linux/types.h>
#include "hist.h"

struct hist_summary {
	__u64 count;
	double mean_ns;
	__u64 p50_ns, p90_ns, p99_ns, p999_ns;
	__u64 max_ns;
	__u64 overflow; /* values beyond 2^HIST_MAX_LOG2 ns */
};

/* Add one value, exactly as the BPF side does (for userspace-built histograms). */
void hist_record(struct hist *h, __u64 value_ns);
/* dst += src (histograms are mergeable: CPUs, groups, time windows). */
void hist_add(struct hist *dst, const struct hist *src);
/* Sum `ncpus` per-CPU copies laid out `stride` bytes apart (libbpf per-CPU lookups). */
/* The samples added between two readings of a cumulative histogram: out = cur - prev.
 * max_hint is the largest sample the kernel saw in the interval (or 0); it is kept inside
 * the highest non-empty bucket of the difference, where the true maximum lies. */
void hist_interval(struct hist *out, const struct hist *cur, const struct hist *prev,
		   __u64 max_hint);
void hist_merge_percpu(struct hist *dst, const void *percpu, int ncpus, size_t stride);
/* Nearest-rank quantile q in [0,1]: the bucket holding rank ceil(q*count), reported as the
 * bucket midpoint clamped to the observed max; 0 for an empty histogram. */
__u64 hist_quantile(const struct hist *h, double q);
void hist_summarize(const struct hist *h, struct hist_summary *s);
/* A sampled histogram scaled up to the whole: each bucket (and count, sum) times factor,
 * rounded; the count stays the sum of the buckets. */
void hist_scale(struct hist *h, double factor);
/* Estimated relative error of h's p99 when h holds a share `rate` of the events, scaled up
 * (so count * rate were seen): the half-width of the 95 % interval of the p99's rank among
 * that many samples, in the histogram's values, relative to the p99. 0 when rate >= 1;
 * 1 when fewer than one sample was seen. */
double hist_p99_error(const struct hist *h, double rate);
/* Value of the nearest-rank quantile over a sorted array (exact reference). */
__u64 exact_quantile(const __u64 *sorted, size_t n, double q);

#endif
