// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the shared slot math (bpf/hist.h) and of user/core/histogram.c: bucket bounds
 * over every magnitude, and quantiles checked against exact nearest-rank values of the
 * sorted samples, for the distributions tail latency actually has. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/histogram.h"
#include "lib/util.h"

#define US 1000ULL
#define MS 1000000ULL

/* ---- deterministic generator (xorshift64*) ---- */

static __u64 rng_state;

static void rng_seed(__u64 s)
{
	rng_state = s ? s : 0x9e3779b97f4a7c15ULL;
}

static __u64 rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

/* uniform in (0, 1]: never 0, so it can be raised to negative powers and logged */
static double urand(void)
{
	return ((double)(rnd() >> 11) + 1.0) / (double)(1ULL << 53);
}

static double gauss(void)
{
	return sqrt(-2.0 * log(urand())) * cos(2.0 * M_PI * urand());
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank in integers: the smallest r with r/n >= num/den. Independent of the
 * floating point the code under test uses. */
static __u64 ref_quantile(const __u64 *sorted, size_t n, __u64 num, __u64 den)
{
	__u64 r = (num * n + den - 1) / den;

	if (r < 1)
		r = 1;
	return sorted[r - 1];
}

static struct hist *hist_new(void)
{
	struct hist *h = calloc(1, sizeof(*h));

	assert_non_null(h);
	return h;
}

static void assert_close(__u64 reported, __u64 exact, const char *what, const char *dist)
{
	__u64 diff = reported > exact ? reported - exact : exact - reported;

	if (diff > exact / 16)
		fail_msg("%s %s: reported %llu, exact %llu (error %llu > exact/16)", dist, what,
			 (unsigned long long)reported, (unsigned long long)exact,
			 (unsigned long long)diff);
}

/* Records samples, then checks every summary figure against the sorted samples. */
static void check_dist(__u64 *v, size_t n, const char *dist)
{
	struct hist *h = hist_new();
	struct hist_summary s;
	long double sum = 0;

	for (size_t i = 0; i < n; i++) {
		hist_record(h, v[i]);
		sum += v[i];
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	hist_summarize(h, &s);
	assert_int_equal(s.count, n);
	assert_int_equal(s.max_ns, v[n - 1]);
	assert_int_equal(s.overflow, 0);
	assert_close(s.p50_ns, ref_quantile(v, n, 50, 100), "p50", dist);
	assert_close(s.p90_ns, ref_quantile(v, n, 90, 100), "p90", dist);
	assert_close(s.p99_ns, ref_quantile(v, n, 99, 100), "p99", dist);
	assert_close(s.p999_ns, ref_quantile(v, n, 999, 1000), "p99.9", dist);
	assert_close(hist_quantile(h, 1.0), v[n - 1], "max quantile", dist);
	/* quantiles never claim more than was observed */
	assert_true(s.p50_ns <= s.p90_ns && s.p90_ns <= s.p99_ns && s.p99_ns <= s.p999_ns);
	assert_true(s.p999_ns <= s.max_ns);
	if (fabsl((long double)s.mean_ns - sum / n) > 1e-9L * (sum / n) + 1e-9L)
		fail_msg("%s mean: reported %.6f, exact %.6Lf", dist, s.mean_ns, sum / n);
	free(h);
}

/* ---- slot function ---- */

static void check_value_in_slot(__u64 v)
{
	__u32 s = hist_slot(v);

	assert_true(s < HIST_SLOTS);
	if (v >= 1ULL << HIST_MAX_LOG2) {
		assert_int_equal(s, HIST_OVERFLOW_SLOT);
		return;
	}
	assert_true(s < HIST_OVERFLOW_SLOT);
	if (!(hist_slot_lo(s) <= v && v < hist_slot_hi(s)))
		fail_msg("value %llu in slot %u [%llu, %llu)", (unsigned long long)v, s,
			 (unsigned long long)hist_slot_lo(s), (unsigned long long)hist_slot_hi(s));
}

static void test_slot_bounds_powers_of_two(void **state)
{
	(void)state;
	check_value_in_slot(0);
	for (int m = 0; m < 64; m++) {
		__u64 p = 1ULL << m;

		check_value_in_slot(p - 1);
		check_value_in_slot(p);
		check_value_in_slot(p + 1);
		/* every sub-bucket boundary within this power of two, and ±1 around it */
		for (__u64 k = 1; k < HIST_SUB && m >= HIST_SUB_BITS; k++) {
			__u64 b = p + k * (p >> HIST_SUB_BITS);

			check_value_in_slot(b - 1);
			check_value_in_slot(b);
			check_value_in_slot(b + 1);
		}
	}
	check_value_in_slot(~0ULL);
	check_value_in_slot(~0ULL - 1);
}

static void test_slot_bounds_random(void **state)
{
	(void)state;
	rng_seed(1);
	for (int i = 0; i < 200000; i++) {
		int bits = (int)(rnd() % 64) + 1;
		__u64 v = bits == 64 ? rnd() : rnd() & ((1ULL << bits) - 1);

		check_value_in_slot(v);
	}
	/* exhaustively over small values */
	for (__u64 v = 0; v < 1 << 20; v++)
		check_value_in_slot(v);
}

static void test_slot_monotonic(void **state)
{
	__u64 prev_v = 0;
	__u32 prev_s = hist_slot(0);

	(void)state;
	/* geometric walk with odd steps over 0 .. 2^64, plus random pairs */
	for (__u64 v = 1; v && v < ~0ULL / 2; v = v + v / 7 + 1) {
		__u32 s = hist_slot(v);

		assert_true(s >= prev_s);
		assert_true(s <= prev_s + HIST_SUB + 1 || prev_v < HIST_SUB);
		prev_s = s;
		prev_v = v;
	}
	rng_seed(2);
	for (int i = 0; i < 100000; i++) {
		__u64 a = rnd() >> (rnd() % 64), b = rnd() >> (rnd() % 64);

		if (a > b) {
			__u64 t = a;

			a = b;
			b = t;
		}
		assert_true(hist_slot(a) <= hist_slot(b));
	}
}

/* The regular slots tile [0, 2^48) without gaps or overlaps, so every value lands in
 * exactly one bucket; bucket width stays within lo/16 once lo >= 16. */
static void test_slots_tile_the_range(void **state)
{
	(void)state;
	assert_int_equal(hist_slot_lo(0), 0);
	for (__u32 s = 0; s < HIST_OVERFLOW_SLOT; s++) {
		__u64 lo = hist_slot_lo(s), hi = hist_slot_hi(s);

		assert_true(lo < hi);
		if (s + 1 < HIST_OVERFLOW_SLOT)
			assert_int_equal(hi, hist_slot_lo(s + 1));
		else
			assert_int_equal(hi, 1ULL << HIST_MAX_LOG2);
		if (lo >= 16)
			assert_true(hi - lo <= lo / 16);
		else
			assert_int_equal(hi - lo, 1);
		/* both ends map back to this slot */
		assert_int_equal(hist_slot(lo), s);
		assert_int_equal(hist_slot(hi - 1), s);
	}
	assert_int_equal(hist_slot_lo(HIST_OVERFLOW_SLOT), 1ULL << HIST_MAX_LOG2);
	assert_int_equal(hist_slot_hi(HIST_OVERFLOW_SLOT), ~0ULL);
}

static void test_log2(void **state)
{
	(void)state;
	for (int m = 0; m < 64; m++) {
		assert_int_equal(hist_log2(1ULL << m), m);
		if (m)
			assert_int_equal(hist_log2((1ULL << m) - 1), m - 1);
		assert_int_equal(hist_log2((1ULL << m) | ((1ULL << m) - 1)), m);
	}
}

static void test_overflow_visible(void **state)
{
	struct hist *h = hist_new();
	struct hist_summary s;

	(void)state;
	hist_record(h, (1ULL << HIST_MAX_LOG2) - 1);
	hist_record(h, 1ULL << HIST_MAX_LOG2);
	hist_record(h, 1ULL << 60);
	hist_record(h, ~0ULL >> 1);
	assert_int_equal(h->slots[HIST_OVERFLOW_SLOT], 3);
	hist_summarize(h, &s);
	assert_int_equal(s.count, 4);
	assert_int_equal(s.overflow, 3);
	assert_int_equal(s.max_ns, ~0ULL >> 1);
	/* a quantile in the overflow slot reports the observed max, not a made-up bound */
	assert_int_equal(hist_quantile(h, 1.0), ~0ULL >> 1);
	assert_true(hist_quantile(h, 0.5) >= 1ULL << HIST_MAX_LOG2);
	/* the one regular value is the lowest rank */
	assert_close(hist_quantile(h, 0.25), (1ULL << HIST_MAX_LOG2) - 1, "p25", "overflow");
	free(h);
}

/* ---- quantiles against exact values ---- */

#define N 100000

static void test_quantiles_uniform(void **state)
{
	__u64 *v = malloc(N * sizeof(*v));

	(void)state;
	rng_seed(11);
	for (size_t i = 0; i < N; i++)
		v[i] = rnd() % (10 * MS);
	check_dist(v, N, "uniform");
	free(v);
}

static void test_quantiles_pareto(void **state)
{
	__u64 *v = malloc(N * sizeof(*v));

	(void)state;
	rng_seed(12);
	/* alpha 1.2: mean finite, p99.9 hundreds of times the median */
	for (size_t i = 0; i < N; i++) {
		double x = 200.0 * US / pow(urand(), 1.0 / 1.2);

		v[i] = x > 1e14 ? (__u64)1e14 : (__u64)x;
	}
	check_dist(v, N, "pareto");
	free(v);
}

static void test_quantiles_lognormal(void **state)
{
	__u64 *v = malloc(N * sizeof(*v));

	(void)state;
	rng_seed(13);
	for (size_t i = 0; i < N; i++)
		v[i] = (__u64)exp(log(2.0 * MS) + 1.5 * gauss());
	check_dist(v, N, "lognormal");
	free(v);
}

static void test_quantiles_bimodal(void **state)
{
	__u64 *v = malloc(N * sizeof(*v));
	struct hist *h = hist_new();

	(void)state;
	rng_seed(14);
	/* exactly 1 % in the slow mode, in random positions */
	for (size_t i = 0; i < N; i++) {
		__u64 base = i < N / 100 ? 50 * MS : 1 * MS;

		v[i] = base - base / 10 + rnd() % (base / 5);
	}
	for (size_t i = N - 1; i > 0; i--) {
		size_t j = rnd() % (i + 1);
		__u64 t = v[i];

		v[i] = v[j];
		v[j] = t;
	}
	for (size_t i = 0; i < N; i++)
		hist_record(h, v[i]);
	/* p99 is still in the fast mode, p99.9 in the slow one */
	assert_true(hist_quantile(h, 0.99) < 2 * MS);
	assert_true(hist_quantile(h, 0.999) > 40 * MS);
	free(h);
	check_dist(v, N, "bimodal");
	free(v);
}

static void test_quantiles_single_bucket(void **state)
{
	__u64 v[1000];
	struct hist *h = hist_new();
	struct hist_summary s;

	(void)state;
	for (size_t i = 0; i < 1000; i++)
		v[i] = 12345678;
	check_dist(v, 1000, "single value");
	/* all equal to the bottom of a bucket: the midpoint lies above the observed max, and
	 * the clamp to the max makes every quantile exact */
	assert_int_equal(hist_slot_lo(hist_slot(0xb80000)), 0xb80000);
	for (size_t i = 0; i < 1000; i++)
		hist_record(h, 0xb80000);
	hist_summarize(h, &s);
	assert_int_equal(s.p50_ns, 0xb80000);
	assert_int_equal(s.p999_ns, 0xb80000);
	assert_int_equal(s.max_ns, 0xb80000);
	free(h);
}

static void test_quantiles_tiny_counts(void **state)
{
	const __u64 pool[] = { 0,    1,    15,   16,   17,     31,     32,        33,
			       1000, 4095, 4096, 4097, 777777, 3 * MS, 123456789, 1ULL << 40 };
	size_t np = ARRAY_SIZE(pool);
	char name[64];
	__u64 v[3];

	(void)state;
	for (size_t a = 0; a < np; a++) {
		v[0] = pool[a];
		snprintf(name, sizeof(name), "1 sample %llu", (unsigned long long)pool[a]);
		check_dist(v, 1, name);
		for (size_t b = 0; b < np; b++) {
			v[0] = pool[a];
			v[1] = pool[b];
			snprintf(name, sizeof(name), "2 samples");
			check_dist(v, 2, name);
			for (size_t c = 0; c < np; c += 3) {
				v[0] = pool[a];
				v[1] = pool[b];
				v[2] = pool[c];
				check_dist(v, 3, "3 samples");
			}
		}
	}
}

static void test_quantiles_huge(void **state)
{
	__u64 *v = malloc(N * sizeof(*v));

	(void)state;
	rng_seed(15);
	/* log-uniform between 2^30 and just under the overflow bound */
	for (size_t i = 0; i < N; i++) {
		double x = exp2(30.0 + 18.0 * urand());

		v[i] = x >= exp2(HIST_MAX_LOG2) ? (1ULL << HIST_MAX_LOG2) - 1 : (__u64)x;
	}
	v[0] = (1ULL << HIST_MAX_LOG2) - 1;
	check_dist(v, N, "huge");
	free(v);
}

/* Small values are exact: below 16 ns every value has its own bucket. */
static void test_quantiles_exact_small(void **state)
{
	struct hist *h = hist_new();

	(void)state;
	for (__u64 x = 1; x <= 10; x++)
		hist_record(h, x);
	assert_int_equal(hist_quantile(h, 0.5), 5);
	assert_int_equal(hist_quantile(h, 0.9), 9);
	assert_int_equal(hist_quantile(h, 0.91), 10);
	assert_int_equal(hist_quantile(h, 0.0), 1);
	free(h);
}

/* exact_quantile is the reference other tests use: it must be nearest rank, including
 * where q * n is an integer that floating point may round up. */
static void test_exact_quantile_rank(void **state)
{
	static const struct {
		double q;
		__u64 num, den;
	} qs[] = {
		{ 0.5, 50, 100 },     { 0.9, 90, 100 }, { 0.99, 99, 100 },
		{ 0.999, 999, 1000 }, { 1.0, 1, 1 },
	};
	__u64 *v = malloc(5000 * sizeof(*v));

	(void)state;
	for (size_t i = 0; i < 5000; i++)
		v[i] = i * 10;
	assert_int_equal(exact_quantile(v, 0, 0.5), 0);
	for (size_t n = 1; n <= 5000; n++)
		for (size_t k = 0; k < ARRAY_SIZE(qs); k++)
			if (exact_quantile(v, n, qs[k].q) !=
			    ref_quantile(v, n, qs[k].num, qs[k].den))
				fail_msg("n %zu q %g: %llu, nearest rank %llu", n, qs[k].q,
					 (unsigned long long)exact_quantile(v, n, qs[k].q),
					 (unsigned long long)ref_quantile(v, n, qs[k].num,
									  qs[k].den));
	free(v);
}

/* ---- merging ---- */

static void test_merge_percpu_equals_all_in_one(void **state)
{
	const int ncpus = 7;
	const size_t stride = sizeof(struct hist) + 24; /* libbpf rounds values up */
	char *percpu = calloc(ncpus, stride);
	struct hist *all = hist_new(), *merged = hist_new(), *added = hist_new();

	(void)state;
	assert_non_null(percpu);
	rng_seed(21);
	for (int i = 0; i < 50000; i++) {
		__u64 v = rnd() >> (rnd() % 64);
		int cpu = (int)(rnd() % (ncpus - 1)); /* the last CPU stays empty */

		hist_record(all, v);
		hist_record((struct hist *)(percpu + (size_t)cpu * stride), v);
	}
	/* junk in the padding between CPUs must not be read */
	for (int c = 0; c < ncpus; c++)
		memset(percpu + (size_t)c * stride + sizeof(struct hist), 0xa5, 24);
	hist_merge_percpu(merged, percpu, ncpus, stride);
	assert_memory_equal(merged, all, sizeof(*all));
	for (int c = 0; c < ncpus; c++)
		hist_add(added, (struct hist *)(percpu + (size_t)c * stride));
	assert_memory_equal(added, all, sizeof(*all));
	/* merging into a non-empty histogram adds */
	hist_merge_percpu(merged, percpu, ncpus, stride);
	assert_int_equal(merged->count, 2 * all->count);
	assert_int_equal(merged->sum_ns, 2 * all->sum_ns);
	assert_int_equal(merged->max_ns, all->max_ns);
	free(percpu);
	free(all);
	free(merged);
	free(added);
}

static void test_add_keeps_max_and_quantiles(void **state)
{
	struct hist *a = hist_new(), *b = hist_new(), *all = hist_new();
	struct hist_summary sa, sall;

	(void)state;
	rng_seed(22);
	for (int i = 0; i < 10000; i++) {
		__u64 v = 1 * MS + rnd() % MS;

		hist_record(i & 1 ? a : b, v);
		hist_record(all, v);
	}
	hist_record(b, 90 * MS);
	hist_record(all, 90 * MS);
	hist_add(a, b);
	hist_summarize(a, &sa);
	hist_summarize(all, &sall);
	assert_memory_equal(&sa, &sall, sizeof(sa));
	assert_int_equal(sa.max_ns, 90 * MS);
	free(a);
	free(b);
	free(all);
}

static void test_empty_summary(void **state)
{
	struct hist *h = hist_new();
	struct hist_summary s, zero;

	(void)state;
	memset(&s, 0x5a, sizeof(s));
	memset(&zero, 0, sizeof(zero));
	hist_summarize(h, &s);
	assert_memory_equal(&s, &zero, sizeof(s));
	assert_int_equal(hist_quantile(h, 0.99), 0);
	free(h);
}

/* A cumulative histogram read twice: the difference holds exactly the samples added in
 * between, and the maximum stays inside the difference's highest bucket whatever the
 * kernel's hint says (a hint from before the interval, or none at all). */
static void test_interval_of_cumulative(void **state)
{
	static struct hist before, after, direct, delta;
	const __u64 first[] = { 5, 900, 70000, 5000000 };
	const __u64 second[] = { 12, 1200, 1300, 64000 };

	(void)state;
	for (size_t i = 0; i < 4; i++) {
		hist_record(&before, first[i]);
		hist_record(&after, first[i]);
	}
	for (size_t i = 0; i < 4; i++) {
		hist_record(&after, second[i]);
		hist_record(&direct, second[i]);
	}
	hist_interval(&delta, &after, &before, 64000);
	assert_memory_equal(delta.slots, direct.slots, sizeof(direct.slots));
	assert_int_equal(delta.count, 4);
	assert_int_equal(delta.sum_ns, 12 + 1200 + 1300 + 64000);
	assert_int_equal(delta.max_ns, 64000);
	/* a stale hint (5 ms, from the earlier interval) is clamped into 64000's bucket */
	hist_interval(&delta, &after, &before, 5000000);
	assert_true(delta.max_ns >= hist_slot_lo(hist_slot(64000)));
	assert_true(delta.max_ns < hist_slot_hi(hist_slot(64000)));
	/* no hint: the bucket's lower bound */
	hist_interval(&delta, &after, &before, 0);
	assert_int_equal(delta.max_ns, hist_slot_lo(hist_slot(64000)));
	/* nothing new */
	hist_interval(&delta, &after, &after, 77);
	assert_int_equal(delta.count, 0);
	assert_int_equal(delta.max_ns, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log2),
		cmocka_unit_test(test_slot_bounds_powers_of_two),
		cmocka_unit_test(test_slot_bounds_random),
		cmocka_unit_test(test_slot_monotonic),
		cmocka_unit_test(test_slots_tile_the_range),
		cmocka_unit_test(test_overflow_visible),
		cmocka_unit_test(test_quantiles_uniform),
		cmocka_unit_test(test_quantiles_pareto),
		cmocka_unit_test(test_quantiles_lognormal),
		cmocka_unit_test(test_quantiles_bimodal),
		cmocka_unit_test(test_quantiles_single_bucket),
		cmocka_unit_test(test_quantiles_tiny_counts),
		cmocka_unit_test(test_quantiles_huge),
		cmocka_unit_test(test_quantiles_exact_small),
		cmocka_unit_test(test_exact_quantile_rank),
		cmocka_unit_test(test_merge_percpu_equals_all_in_one),
		cmocka_unit_test(test_add_keeps_max_and_quantiles),
		cmocka_unit_test(test_empty_summary),
		cmocka_unit_test(test_interval_of_cumulative),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
