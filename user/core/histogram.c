// SPDX-License-Identifier: GPL-2.0
/* Merging and quantiles of the shared log-linear histograms. */
#include <math.h>
#include <string.h>
#include "core/histogram.h"

void hist_record(struct hist *h, __u64 v)
{
	h->slots[hist_slot(v)]++;
	h->count++;
	h->sum_ns += v;
	if (v > h->max_ns)
		h->max_ns = v;
}

void hist_add(struct hist *dst, const struct hist *src)
{
	for (__u32 i = 0; i < HIST_SLOTS; i++)
		dst->slots[i] += src->slots[i];
	dst->count += src->count;
	dst->sum_ns += src->sum_ns;
	if (src->max_ns > dst->max_ns)
		dst->max_ns = src->max_ns;
}

void hist_merge_percpu(struct hist *dst, const void *percpu, int ncpus, size_t stride)
{
	for (int c = 0; c < ncpus; c++)
		hist_add(dst, (const struct hist *)((const char *)percpu + (size_t)c * stride));
}

void hist_interval(struct hist *out, const struct hist *cur, const struct hist *prev,
		   __u64 max_hint)
{
	int top = -1;

	for (__u32 i = 0; i < HIST_SLOTS; i++) {
		out->slots[i] = cur->slots[i] - prev->slots[i];
		if (out->slots[i])
			top = (int)i;
	}
	out->count = cur->count - prev->count;
	out->sum_ns = cur->sum_ns - prev->sum_ns;
	out->max_ns = 0;
	if (top < 0)
		return;
	/* the largest sample of the interval lies in its highest non-empty bucket */
	if (max_hint < hist_slot_lo((__u32)top))
		max_hint = hist_slot_lo((__u32)top);
	if (top != HIST_OVERFLOW_SLOT && max_hint >= hist_slot_hi((__u32)top))
		max_hint = hist_slot_hi((__u32)top) - 1;
	out->max_ns = max_hint;
}

static __u64 rank_of(__u64 count, double q)
{
	double r = ceil(q * (double)count);

	if (r < 1)
		r = 1;
	if (r > (double)count)
		r = (double)count;
	return (__u64)r;
}

__u64 hist_quantile(const struct hist *h, double q)
{
	__u64 total = 0, rank, seen = 0;

	for (__u32 i = 0; i < HIST_SLOTS; i++)
		total += h->slots[i];
	if (!total)
		return 0;
	rank = rank_of(total, q);
	for (__u32 i = 0; i < HIST_SLOTS; i++) {
		__u64 lo, hi, mid;

		seen += h->slots[i];
		if (seen < rank)
			continue;
		if (i == HIST_OVERFLOW_SLOT)
			return h->max_ns > hist_slot_lo(i) ? h->max_ns : hist_slot_lo(i);
		lo = hist_slot_lo(i);
		hi = hist_slot_hi(i) - 1;
		mid = lo + (hi - lo) / 2;
		/* the max is exact: never report above it, nor below the bucket */
		if (h->max_ns && mid > h->max_ns)
			mid = h->max_ns < lo ? lo : h->max_ns;
		return mid;
	}
	return h->max_ns;
}

void hist_summarize(const struct hist *h, struct hist_summary *s)
{
	memset(s, 0, sizeof(*s));
	for (__u32 i = 0; i < HIST_SLOTS; i++)
		s->count += h->slots[i];
	if (!s->count)
		return;
	s->mean_ns = (double)h->sum_ns / (double)s->count;
	s->p50_ns = hist_quantile(h, 0.50);
	s->p90_ns = hist_quantile(h, 0.90);
	s->p99_ns = hist_quantile(h, 0.99);
	s->p999_ns = hist_quantile(h, 0.999);
	s->max_ns = h->max_ns;
	s->overflow = h->slots[HIST_OVERFLOW_SLOT];
}

__u64 exact_quantile(const __u64 *sorted, size_t n, double q)
{
	if (!n)
		return 0;
	return sorted[rank_of(n, q) - 1];
}

void hist_scale(struct hist *h, double factor)
{
	__u64 count = 0;

	if (factor == 1)
		return;
	for (__u32 i = 0; i < HIST_SLOTS; i++) {
		h->slots[i] = (__u64)((double)h->slots[i] * factor + 0.5);
		count += h->slots[i];
	}
	h->count = count;
	h->sum_ns = (__u64)((double)h->sum_ns * factor + 0.5);
}

/* Quantile q with linear interpolation inside its bucket: finer than a bucket, for the
 * spread between two nearby ranks. */
static double interp_quantile(const struct hist *h, __u64 total, double q)
{
	double rank = q * (double)total, seen = 0;

	for (__u32 i = 0; i < HIST_SLOTS; i++) {
		double n = (double)h->slots[i], lo, hi;

		if (!n || seen + n < rank) {
			seen += n;
			continue;
		}
		lo = (double)hist_slot_lo(i);
		hi = i == HIST_OVERFLOW_SLOT ? (double)h->max_ns : (double)hist_slot_hi(i);
		if (hi < lo)
			hi = lo;
		return lo + (hi - lo) * (rank - seen) / n;
	}
	return (double)h->max_ns;
}

double hist_p99_error(const struct hist *h, double rate)
{
	double n, d, p, lo, hi, err;
	__u64 total = 0;

	if (rate >= 1 || rate <= 0)
		return 0;
	for (__u32 i = 0; i < HIST_SLOTS; i++)
		total += h->slots[i];
	n = (double)total * rate;
	if (n < 1)
		return 1;
	/* rank of the p99 among n samples: binomial, 1.96 standard deviations either side */
	d = 1.96 * sqrt(0.99 * 0.01 / n);
	p = interp_quantile(h, total, 0.99);
	lo = interp_quantile(h, total, 0.99 - d > 0 ? 0.99 - d : 0);
	hi = interp_quantile(h, total, 0.99 + d < 1 ? 0.99 + d : 1);
	if (p <= 0)
		return 0;
	err = (hi - p > p - lo ? hi - p : p - lo) / p;
	return err > 1 ? 1 : err;
}
