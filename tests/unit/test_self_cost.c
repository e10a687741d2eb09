// SPDX-License-Identifier: GPL-2.0
/* Unit tests of tailtrace's self-accounting: the deltas of the kernel's cumulative program
 * statistics, what is reported when the kernel refuses them, the rates derived from them,
 * their merge across intervals and their trip through a record segment. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>
#include "collect/budget.h"
#include "collect/self_cost.h"
#include "core/histogram.h"
#include "core/snapshot.h"
#include "core/stages.h"
#include "record/record_format.h"

static void test_delta_grows(void **state)
{
	struct prog_stat prev = { .runs = 1000, .run_ns = 350000 };
	struct prog_stat cur = { .runs = 1500, .run_ns = 400000 }, d;

	(void)state;
	prog_stat_delta(&prev, &cur, &d);
	assert_int_equal(d.runs, 500);
	assert_int_equal(d.run_ns, 50000);
	prog_stat_delta(&cur, &cur, &d);
	assert_int_equal(d.runs, 0);
	assert_int_equal(d.run_ns, 0);
}

/* counters that went backwards were restarted: what they hold now is the interval's */
static void test_delta_restart(void **state)
{
	struct prog_stat prev = { .runs = 1000, .run_ns = 350000 };
	struct prog_stat cur = { .runs = 10, .run_ns = 900 }, d;

	(void)state;
	prog_stat_delta(&prev, &cur, &d);
	assert_int_equal(d.runs, 10);
	assert_int_equal(d.run_ns, 900);
	/* near 2^64: no wrap into a huge delta */
	prev = (struct prog_stat){ .runs = ~0ULL - 5, .run_ns = ~0ULL - 100 };
	cur = (struct prog_stat){ .runs = 3, .run_ns = 40 };
	prog_stat_delta(&prev, &cur, &d);
	assert_int_equal(d.runs, 3);
	assert_int_equal(d.run_ns, 40);
	/* the run count grew but the run time went back: restarted all the same */
	prev = (struct prog_stat){ .runs = 100, .run_ns = 50000 };
	cur = (struct prog_stat){ .runs = 120, .run_ns = 700 };
	prog_stat_delta(&prev, &cur, &d);
	assert_int_equal(d.runs, 120);
	assert_int_equal(d.run_ns, 700);
}

/* Statistics the kernel refused at the start: each followed program is reported under its
 * hook's name with zero runs and run time, interval after interval, and the process's own
 * CPU and RSS are still read. */
static void test_refused_zeros(void **state)
{
	struct self_cost sc;
	struct snapshot s;

	(void)state;
	memset(&sc, 0, sizeof(sc));
	sc.stats_fd = -1;
	/* stdin is no BPF program: its counts cannot be read either */
	self_cost__add_prog(&sc, 0, "tt_tcp_probe");
	self_cost__add_prog(&sc, 0, "net_dev_xmit");
	self_cost__add_prog(&sc, -1, "tt_not_loaded");
	assert_int_equal(sc.nprogs, 2);
	for (int round = 0; round < 2; round++) {
		snapshot__init(&s);
		self_cost__collect(&sc, &s);
		assert_int_equal(s.nprogs, 2);
		assert_string_equal(s.progs[0].name, "tcp_probe");
		assert_string_equal(s.progs[1].name, "net_dev_xmit");
		for (size_t i = 0; i < s.nprogs; i++) {
			assert_int_equal(s.progs[i].runs, 0);
			assert_int_equal(s.progs[i].run_ns, 0);
		}
		assert_true(s.self_cpu_s >= 0);
		assert_true(s.self_rss_kb > 0);
		snapshot__free(&s);
	}
	assert_int_equal(self_cost__total_ns(&sc), 0);
	self_cost__close(&sc);
	assert_int_equal(sc.nprogs, 0);
	assert_int_equal(sc.stats_fd, -1);
}

static void test_rates(void **state)
{
	struct snap_prog p = { .name = "tcp_probe", .runs = 20000, .run_ns = 7000000 };
	struct snap_prog none = { .name = "idle" };

	(void)state;
	assert_true(fabs(prog_runs_per_s(&p, 2.0) - 10000) < 1e-9);
	assert_true(fabs(prog_ns_per_run(&p) - 350) < 1e-9);
	assert_true(prog_runs_per_s(&p, 0) == 0);
	assert_true(prog_ns_per_run(&none) == 0);
}

static void test_merge_by_hook(void **state)
{
	struct snapshot a, b;

	(void)state;
	snapshot__init(&a);
	snapshot__init(&b);
	snapshot__add_prog(&a, "tcp_probe", 100, 35000);
	snapshot__add_prog(&a, "net_dev_xmit", 50, 5000);
	a.sample_rate = 0.5;
	snapshot__add_prog(&b, "tcp_probe", 300, 105000);
	snapshot__add_prog(&b, "sock_recv_length", 7, 2100);
	b.sample_rate = 0.25;
	b.budget_pct = 1;
	assert_int_equal(snapshot__merge(&a, &b), 0);
	assert_int_equal(a.nprogs, 3);
	assert_string_equal(a.progs[0].name, "tcp_probe");
	assert_int_equal(a.progs[0].runs, 400);
	assert_int_equal(a.progs[0].run_ns, 140000);
	assert_int_equal(snap_prog_time_ns(&a), 140000 + 5000 + 2100);
	assert_true(snapshot__sample_rate(&a) == 0.25);
	assert_true(a.budget_pct == 1);
	snapshot__free(&a);
	snapshot__free(&b);
	/* not sampled: the rate reads as 1 */
	assert_true(snapshot__sample_rate(&a) == 1);
}

static int decoded(const struct snapshot *s, void *ctx)
{
	struct snapshot *out = ctx;

	return snapshot__merge(out, s);
}

static void test_record_roundtrip(void **state)
{
	struct rec_header h = { .version = REC_VERSION,
				.flags = REC_FLAG_ZLIB,
				.hist_sub_bits = HIST_SUB_BITS,
				.hist_max_log2 = HIST_MAX_LOG2,
				.host = "testhost" };
	struct rec_buf buf = { 0 };
	struct snapshot s, back;
	struct rec_diag d;

	(void)state;
	snapshot__init(&s);
	snapshot__init(&back);
	s.start_ns = 1000000000;
	s.end_ns = 2000000000;
	snapshot__add_prog(&s, "tcp_sendmsg", 1234, 324000);
	s.sample_rate = 0.125;
	s.budget_pct = 2.5;
	s.budget_floor_pct = 1.75;
	assert_int_equal(rec_header_encode(&buf, &h), 0);
	assert_int_equal(rec_interval_encode(&buf, &s), 0);
	assert_int_equal(rec_decode(buf.p, buf.len, "mem", &h, decoded, &back, &d), 0);
	assert_int_equal(back.nprogs, 1);
	assert_string_equal(back.progs[0].name, "tcp_sendmsg");
	assert_int_equal(back.progs[0].runs, 1234);
	assert_int_equal(back.progs[0].run_ns, 324000);
	assert_true(fabs(back.sample_rate - 0.125) < 1e-9);
	assert_true(fabs(back.budget_pct - 2.5) < 1e-9);
	assert_true(fabs(back.budget_floor_pct - 1.75) < 1e-9);
	rec_buf__free(&buf);
	snapshot__free(&s);
	snapshot__free(&back);
}

/* The fit of steps whose cost is 3 % of a CPU plus 2 % times the rate, one step in eight
 * 40 % over (a noisy interval): the floor is the 3 %; steps at nearby low rates, whose
 * pairwise slopes are mostly noise, weigh little; without the rate moving there is
 * nothing to fit; a cost that is all sampled work has a floor of 0. */
static void test_budget_fit(void **state)
{
	static const double rates[] = { 1,     0.5,    0.25,  0.125, 0.25, 0.5,
					0.125, 0.0625, 0.125, 0.25,  1,    0.5 };
	double rate[BUDGET_FLOOR_STEPS], cost[BUDGET_FLOOR_STEPS];
	size_t n = sizeof(rates) / sizeof(rates[0]);
	struct budget_fit fit;

	(void)state;
	for (size_t i = 0; i < n; i++) {
		rate[i] = rates[i];
		cost[i] = (3 + 2 * rates[i]) * (i % 8 == 3 ? 1.4 : 1);
	}
	assert_int_equal(budget_fit_steps(rate, cost, n, &fit), 0);
	assert_true(fit.known);
	assert_true(fabs(fit.floor - 3) < 0.05);
	assert_true(fabs(fit.slope - 2) < 0.1);
	/* at low rates a step's noise over a small rate difference is a wild slope: two
	 * steps at rate 1 outweigh ten such pairs */
	for (size_t i = 0; i < 14; i++) {
		rate[i] = i < 2 ? 1 : 0.01 * (1 + i % 4);
		cost[i] = 3 + 2 * rate[i] + (i % 2 ? 0.3 : -0.3) * (i >= 2);
	}
	assert_int_equal(budget_fit_steps(rate, cost, 14, &fit), 0);
	assert_true(fabs(fit.floor - 3) < 0.35);
	assert_true(fabs(fit.slope - 2) < 0.5);
	/* rates within a factor 4: not known, however many pairs */
	for (size_t i = 0; i < n; i++) {
		rate[i] = 0.3 + 0.05 * (double)(i % 6);
		cost[i] = 3 + 2 * rate[i];
	}
	assert_int_equal(budget_fit_steps(rate, cost, n, &fit), -1);
	/* two steps, or a rate that never moved: not known */
	assert_int_equal(budget_fit_steps(rate, cost, 2, &fit), -1);
	assert_false(fit.known);
	for (size_t i = 0; i < n; i++)
		rate[i] = 1;
	assert_int_equal(budget_fit_steps(rate, cost, n, &fit), -1);
	/* all of the cost is the sampled flows' */
	for (size_t i = 0; i < n; i++) {
		rate[i] = rates[i];
		cost[i] = 4 * rates[i];
	}
	assert_int_equal(budget_fit_steps(rate, cost, n, &fit), 0);
	assert_true(fit.floor < 0.01);
	/* a cost falling with the rate is noise: the slope is 0, the floor the median cost */
	for (size_t i = 0; i < n; i++)
		cost[i] = 5 - rates[i];
	assert_int_equal(budget_fit_steps(rate, cost, n, &fit), 0);
	assert_true(fit.slope == 0);
	assert_true(fabs(fit.floor - 4.75) < 1e-9);
}

/* A budget under the floor: the rate goes where the traced flows cost a twentieth of the
 * floor, not to the bottom; with no cost per flow, there is nothing to sample away. A
 * floor between the aim and the budget: where the fit puts the cost under the budget. */
static void test_budget_under_floor(void **state)
{
	struct budget_fit fit = { .known = true, .floor = 4, .slope = 2 };

	(void)state;
	/* 0.05 * 4 / 2 */
	assert_true(fabs(budget_next_rate(0.02, 4.1, 3, &fit) - 0.1) < 1e-9);
	assert_true(fabs(budget_next_rate(1, 6, 3, &fit) - 0.1) < 1e-9);
	/* the floor over the aim (90 % of 4.2) but under the budget: 80 % of the way up to it,
	 * 0.8 * (4.2 - 4) / 2 = 0.08, under the twentieth (0.1); with 4.4, 0.16 */
	assert_true(fabs(budget_next_rate(1, 6, 4.2, &fit) - 0.1) < 1e-9);
	assert_true(fabs(budget_next_rate(1, 6, 4.4, &fit) - 0.16) < 1e-9);
	fit.slope = 0;
	assert_true(budget_next_rate(0.3, 4.2, 3, &fit) == 1);
	/* a floor well under the budget: the usual rule */
	fit.floor = 1;
	fit.slope = 4;
	assert_true(fabs(budget_next_rate(1, 5, 3, &fit) - budget_next_rate(1, 5, 3, NULL)) < 1e-9);
	/* under the floor but the cost within the budget (the load fell): the usual rule */
	fit.floor = 4;
	assert_true(budget_next_rate(0.1, 2, 3, &fit) == budget_next_rate(0.1, 2, 3, NULL));
}

static void test_budget_rate(void **state)
{
	(void)state;
	/* no budget: everything */
	assert_true(budget_next_rate(0.5, 10, 0, NULL) == 1);
	/* twice over budget at full rate: down in proportion to 90 % of it */
	assert_true(fabs(budget_next_rate(1, 4, 2, NULL) - 0.45) < 1e-9);
	/* well under: up, at most twofold a step, never above 1 */
	assert_true(fabs(budget_next_rate(0.1, 0.5, 2, NULL) - 0.2) < 1e-9);
	assert_true(budget_next_rate(0.8, 0.5, 2, NULL) == 1);
	/* near the aim: stays */
	assert_true(budget_next_rate(0.3, 1.85, 2, NULL) == 0.3);
	/* inside the budget but close under it: down to the aim, not left to noise */
	assert_true(fabs(budget_next_rate(0.3, 1.96, 2, NULL) - 0.3 * 1.8 / 1.96) < 1e-9);
	/* a cost no rate can meet: the floor */
	assert_true(budget_next_rate(BUDGET_MIN_RATE, 50, 1, NULL) == BUDGET_MIN_RATE);
}

static void test_budget_threshold(void **state)
{
	unsigned int in = 0, n = 100000;

	(void)state;
	assert_int_equal(budget_threshold(1), 0xffffffffu);
	assert_true(fabs(budget_rate_of(budget_threshold(0.25)) - 0.25) < 1e-9);
	/* socket addresses (slab objects 2 KiB apart): the hash keeps the share asked for */
	for (unsigned int i = 0; i < n; i++)
		in += budget_flow_hash(0xffff888100000000ULL + (__u64)i * 2048, 0) <=
		      budget_threshold(0.25);
	assert_true(fabs((double)in / n - 0.25) < 0.01);
}

/* 64 sockets at rate 0.5: one draw keeps a share that can be far from half, the draws of
 * a run (a new salt every step) keep half on average, and every socket in its turn. */
static void test_budget_redraws(void **state)
{
	unsigned int turns[64] = { 0 }, total = 0, draws = 2000, min = ~0u, max = 0;
	__u32 thr = budget_threshold(0.5);
	__u64 salt = 1;

	(void)state;
	assert_true(budget_next_salt(1) != budget_next_salt(2));
	for (unsigned int d = 0; d < draws; d++) {
		salt = budget_next_salt(salt);
		for (unsigned int i = 0; i < 64; i++) {
			unsigned int in = budget_flow_hash(0xffff888100000000ULL + (__u64)i * 2048,
							   salt) <= thr;

			turns[i] += in;
			total += in;
		}
	}
	assert_true(fabs((double)total / (64.0 * draws) - 0.5) < 0.01);
	for (unsigned int i = 0; i < 64; i++) {
		min = turns[i] < min ? turns[i] : min;
		max = turns[i] > max ? turns[i] : max;
	}
	assert_true(min > 0.4 * draws && max < 0.6 * draws);
}

static void test_hist_scale_and_error(void **state)
{
	struct hist h, s;

	(void)state;
	memset(&h, 0, sizeof(h));
	for (int i = 1; i <= 10000; i++)
		hist_record(&h, (__u64)i * 1000);
	s = h;
	hist_scale(&s, 4);
	assert_int_equal(s.count, 4 * h.count);
	assert_int_equal(s.sum_ns, 4 * h.sum_ns);
	assert_int_equal(hist_quantile(&s, 0.99), hist_quantile(&h, 0.99));
	/* not sampled: no error; fewer samples seen: a larger one */
	assert_true(hist_p99_error(&s, 1) == 0);
	assert_true(hist_p99_error(&s, 0.25) > 0);
	assert_true(hist_p99_error(&s, 0.25) < 0.1);
	assert_true(hist_p99_error(&s, 0.01) > hist_p99_error(&s, 0.25));
	assert_true(hist_p99_error(&s, 1e-6) == 1);
}

/* A snapshot at rate 0.25 of: a stage of 10000 events seen spread evenly, one of 2000 seen
 * spread evenly (fewer samples: a larger error), and one of 400 seen with a tail 50000 times its
 * median: the largest error, but too few samples to enter the summary. */
static void fill_sampled(struct snapshot *s)
{
	struct hist even, fewer, few;
	struct hist_key k;

	memset(&even, 0, sizeof(even));
	memset(&fewer, 0, sizeof(fewer));
	memset(&few, 0, sizeof(few));
	for (int i = 1; i <= 10000; i++)
		hist_record(&even, (__u64)i * 1000);
	for (int i = 0; i < 2000; i++)
		hist_record(&fewer, (__u64)(i + 1) * 5000);
	for (int i = 0; i < 400; i++)
		hist_record(&few, i < 396 ? 1000 : 50000000);
	hist_scale(&even, 4);
	hist_scale(&fewer, 4);
	hist_scale(&few, 4);
	memset(&k, 0, sizeof(k));
	k.stage = STAGE_RX_STACK;
	assert_int_equal(snapshot__add_hist(s, &k, &even), 0);
	k.stage = STAGE_TX_SENDQ;
	assert_int_equal(snapshot__add_hist(s, &k, &fewer), 0);
	k.stage = STAGE_REQ_LATENCY;
	assert_int_equal(snapshot__add_hist(s, &k, &few), 0);
	/* the driver's stage times every packet of the ports, whatever the share of flows:
	 * its tail is no sampling error, however heavy */
	hist_scale(&few, 10);
	k.stage = STAGE_RX_BACKLOG;
	assert_int_equal(snapshot__add_hist(s, &k, &few), 0);
	s->sample_rate = 0.25;
}

/* The summary names the stage of the largest error among the p99s with 1000 samples seen;
 * a window of intervals has more samples than one interval, so smaller errors. */
static void test_p99_error_summary(void **state)
{
	struct snapshot one, win;
	double e1, ew;
	int st;

	(void)state;
	snapshot__init(&one);
	fill_sampled(&one);
	e1 = snapshot__p99_error(&one, &st);
	assert_int_equal(st, STAGE_TX_SENDQ);
	assert_true(e1 > hist_p99_error(&one.hists[0].h, 0.25));
	assert_true(hist_p99_error(&one.hists[3].h, 0.25) > e1);
	assert_true(snapshot__hist_p99_error(&one, &one.hists[3]) == 0);
	/* what flow sampling thins: not the driver's stages, nor with --dev the places' */
	assert_false(stage_flow_sampled(STAGE_RX_BACKLOG, false));
	assert_true(stage_flow_sampled(STAGE_TX_QDISC, false));
	assert_false(stage_flow_sampled(STAGE_TX_QDISC, true));
	assert_true(stage_flow_sampled(STAGE_REQ_LATENCY, true));
	snapshot__init(&win);
	for (int i = 0; i < 10; i++)
		assert_int_equal(snapshot__merge(&win, &one), 0);
	/* ten intervals: each p99 rests on ten times the samples, and the third stage's on
	 * 4000, enough to enter the summary with its heavy tail */
	ew = snapshot__p99_error(&win, &st);
	assert_int_equal(st, STAGE_REQ_LATENCY);
	assert_true(ew > e1);
	assert_true(hist_p99_error(&win.hists[1].h, 0.25) < hist_p99_error(&one.hists[1].h, 0.25));
	assert_true(hist_p99_error(&win.hists[1].h, 0.25) > 0);
	/* every flow traced: no error, no stage */
	one.sample_rate = 1;
	assert_true(snapshot__p99_error(&one, &st) == 0);
	assert_int_equal(st, -1);
	snapshot__free(&one);
	snapshot__free(&win);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_delta_grows),
		cmocka_unit_test(test_p99_error_summary),
		cmocka_unit_test(test_budget_fit),
		cmocka_unit_test(test_budget_under_floor),
		cmocka_unit_test(test_delta_restart),
		cmocka_unit_test(test_refused_zeros),
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_merge_by_hook),
		cmocka_unit_test(test_record_roundtrip),
		cmocka_unit_test(test_budget_rate),
		cmocka_unit_test(test_budget_threshold),
		cmocka_unit_test(test_budget_redraws),
		cmocka_unit_test(test_hist_scale_and_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
