// SPDX-License-Identifier: GPL-2.0
/* The text of `tailtrace explain` for each verdict kind (none, episodic, chronic, both),
 * rendered from report structs built here, against golden files in tests/unit/golden/.
 * TT_GOLDEN_UPDATE=1 rewrites the files (review the diff before committing). Also: no
 * empty words, and each table's rows add up to its total row. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attr/attribution.h"

#define US 1000.0
#define MS 1000000.0

/* Fills a group's means from its parts, as attr_analyze() does. */
static void group_parts(struct attr_group *g, const double part_ns[ATTR_PARTS], __u64 count)
{
	g->count = count;
	g->mean_ns = 0;
	memset(g->class_mean_ns, 0, sizeof(g->class_mean_ns));
	memset(&g->budget, 0, sizeof(g->budget));
	for (int p = 0; p < ATTR_PARTS; p++) {
		double v = part_ns[p];
		enum attr_class c = attr_part_info(p)->class;

		g->part_mean_ns[p] = v;
		g->class_mean_ns[c] += v;
		g->mean_ns += v;
		/* attr_chronic.c's kinds of parts */
		switch (p) {
		case PART_RX_STACK:
		case PART_TX_NIC:
		case PART_RTT_BASE:
			g->budget.floor_ns += v;
			break;
		case PART_SCHED_ONCPU:
		case PART_SCHED_OFFCPU:
		case PART_GPU_WAIT:
		case PART_APP_OTHER:
			g->budget.work_ns += v;
			break;
		case PART_REMOTE:
		case PART_UNCOVERED:
			g->budget.unseen_ns += v;
			break;
		default:
			g->budget.wait_ns[c] += v;
		}
	}
	for (int c = 0; c < ATTR_CLASSES; c++)
		g->shares[c] = g->class_mean_ns[c] / g->mean_ns;
}

static void tail_vs(struct attr_group *g, const struct attr_group *m, double q)
{
	g->quantile = q;
	g->excess_ns = g->mean_ns - m->mean_ns;
	g->ratio = g->mean_ns / m->mean_ns;
	for (int c = 0; c < ATTR_CLASSES; c++)
		g->excess_shares[c] = (g->class_mean_ns[c] - m->class_mean_ns[c]) / g->excess_ns;
}

static void stage(struct attr_group *g, const struct attr_group *m, enum attr_part p,
		  const char *where, double share, int nplaces)
{
	struct attr_stage_line *l = &g->stages[g->nstages++];

	l->part = p;
	l->mean_ns = g->part_mean_ns[p];
	l->median_mean_ns = m->part_mean_ns[p];
	l->share = l->mean_ns / g->mean_ns;
	l->excess_share = (l->mean_ns - l->median_mean_ns) / g->excess_ns;
	l->nplaces = where ? nplaces : 0;
	for (int i = 0; i < l->nplaces; i++) {
		snprintf(l->places[i].where, sizeof(l->places[i].where), "%s", where);
		l->places[i].share = i ? (1 - share) / (nplaces - 1) : share;
	}
}

static void evidence(struct attr_evidence *e, double retrans, double drops, double srtt_us)
{
	e->retrans = retrans;
	e->retrans_rto = retrans / 4;
	e->retrans_reqs = retrans > 1 ? 1 : retrans;
	e->retrans_congestion_reqs = drops > 0 ? e->retrans_reqs : 0;
	e->drops = drops;
	e->srtt_ns = srtt_us * US;
	e->min_rtt_ns = 40 * US;
}

#define QDISC_WHERE  "dev tt-srv0 qdisc 1:0 (netns 4026532303)"
#define THREAD_WHERE "tid 812 (model-server)"

/* The report every case starts from: 20000 server requests in 10 s, the median group's
 * mean 600 us (550 us of it work), both ends traced. */
static void base_report(struct attr_report *r)
{
	double med[ATTR_PARTS] = { 0 };

	memset(r, 0, sizeof(*r));
	attr_params__default(&r->params);
	r->duration_s = 10;
	r->role = ROLE_SERVER;
	r->requests = r->server_reqs = r->client_reqs = 20000;
	snprintf(r->role_rule, sizeof(r->role_rule),
		 "both ends traced: the server's view covers what the client sees as remote");
	r->has_other = true;
	r->other.class = VERDICT_UNATTRIBUTED;
	r->other.part = PART_REMOTE;
	r->other.has_part = true;
	r->latency = (struct hist_summary){ .count = 20000,
					    .mean_ns = 700 * US,
					    .p50_ns = 598 * US,
					    .p90_ns = 680 * US,
					    .p99_ns = 1400 * US,
					    .p999_ns = 3100 * US,
					    .max_ns = 9200 * US };
	r->ttft = r->latency;
	r->ttft.p50_ns = 560 * US;
	med[PART_RX_STACK] = 8 * US;
	med[PART_TX_NIC] = 4 * US;
	med[PART_RX_SOCKQ] = 6 * US;
	med[PART_SCHED_RUNQ] = 20 * US;
	med[PART_SCHED_ONCPU] = 30 * US;
	med[PART_SCHED_OFFCPU] = 520 * US;
	med[PART_TX_SENDQ] = 12 * US;
	group_parts(&r->median, med, 4000);
	evidence(&r->median.ev, 0, 0, 90);
	r->floor.known = true;
	r->floor.rtt_ns = 41 * US;
	r->floor.own_min_ns = 45 * US;
	r->floor.reqs = 20000;
	snprintf(r->floor.source, sizeof(r->floor.source),
		 "lowest RTT (41 us) seen on flow :7000 <-> 198.18.1.2:33552 via dev tt-srv0 "
		 "(netns 4026532303), over 20000 requests on that path");
	r->chronic.class = ATTR_COMPUTE;
	r->chronic.part = PART_SCHED_RUNQ;
	r->chronic.has_part = true;
	r->chronic.wait_ns = 20 * US;
	r->chronic.part_median_ns = 20 * US;
	r->chronic.median_wait_ns = 20 * US;
}

/* A tail of the median's parts plus extra time in the given parts. */
static void tail_with(struct attr_report *r, const double extra[ATTR_PARTS])
{
	double t[ATTR_PARTS];

	for (int p = 0; p < ATTR_PARTS; p++)
		t[p] = r->median.part_mean_ns[p] + extra[p];
	group_parts(&r->tail, t, 200);
	tail_vs(&r->tail, &r->median, 0.99);
	r->chronic.tail_wait_ns = r->tail.budget.wait_ns[r->chronic.class];
}

static void verdict(struct attr_verdict *v, enum attr_verdict_class c, enum attr_verdict_class epi,
		    enum attr_verdict_kind k, enum attr_part p, const char *where)
{
	v->class = c;
	v->episodic = epi;
	v->kind = k;
	v->part = p;
	v->has_part = c != VERDICT_NONE && c != VERDICT_MIXED;
	snprintf(v->where, sizeof(v->where), "%s", where ? where : "");
}

/* none: the tail is 300 us over the median (below the 2 ms bar), nothing standing */
static void case_none(struct attr_report *r)
{
	double x[ATTR_PARTS] = { 0 };

	base_report(r);
	x[PART_SCHED_OFFCPU] = 250 * US;
	x[PART_SCHED_RUNQ] = 50 * US;
	tail_with(r, x);
	stage(&r->tail, &r->median, PART_SCHED_OFFCPU, THREAD_WHERE, 0.7, 2);
	stage(&r->tail, &r->median, PART_SCHED_RUNQ, "pid 812 (model-server) on cpu 1", 1, 1);
	stage(&r->tail, &r->median, PART_SCHED_ONCPU, NULL, 0, 0);
	evidence(&r->tail.ev, 0, 0, 95);
	verdict(&r->tail.verdict, VERDICT_NONE, VERDICT_NONE, VERDICT_KIND_NONE, 0, NULL);
	r->other.class = VERDICT_NONE;
	r->other.has_part = false;
}

/* episodic: 1 % of the requests 50 ms slower in the model */
static void case_episodic(struct attr_report *r)
{
	double x[ATTR_PARTS] = { 0 };

	base_report(r);
	r->latency.p99_ns = 50600 * US;
	r->latency.p999_ns = 51200 * US;
	r->latency.max_ns = 53800 * US;
	x[PART_SCHED_OFFCPU] = 50000 * US;
	x[PART_SCHED_RUNQ] = 400 * US;
	x[PART_TX_SENDQ] = 30 * US;
	tail_with(r, x);
	stage(&r->tail, &r->median, PART_SCHED_OFFCPU, THREAD_WHERE, 0.6, 3);
	stage(&r->tail, &r->median, PART_SCHED_RUNQ, "pid 812 (model-server) on cpu 1", 1, 1);
	stage(&r->tail, &r->median, PART_TX_SENDQ, QDISC_WHERE, 1, 1);
	evidence(&r->tail.ev, 0, 0, 110);
	verdict(&r->tail.verdict, VERDICT_COMPUTE, VERDICT_COMPUTE, VERDICT_KIND_EPISODIC,
		PART_SCHED_OFFCPU, THREAD_WHERE);
}

/* chronic: a standing queue of ~45 ms in the server's qdisc, the tail not much worse */
static void case_chronic(struct attr_report *r)
{
	double x[ATTR_PARTS] = { 0 }, q = 45000 * US;

	base_report(r);
	r->median.part_mean_ns[PART_TX_QDISC] = q;
	group_parts(&r->median, r->median.part_mean_ns, 4000);
	evidence(&r->median.ev, 0, 0.01, 22800);
	r->latency.p50_ns = 45600 * US;
	r->latency.p90_ns = 47100 * US;
	r->latency.p99_ns = 55500 * US;
	r->latency.p999_ns = 77600 * US;
	r->latency.max_ns = 77800 * US;
	x[PART_TX_QDISC] = 21500 * US;
	x[PART_TX_SENDQ] = 100 * US;
	tail_with(r, x);
	stage(&r->tail, &r->median, PART_TX_QDISC, QDISC_WHERE, 1, 1);
	stage(&r->tail, &r->median, PART_TX_SENDQ, QDISC_WHERE, 1, 1);
	stage(&r->tail, &r->median, PART_SCHED_OFFCPU, NULL, 0, 0);
	evidence(&r->tail.ev, 0, 0.6, 25000);
	r->chronic.found = true;
	r->chronic.class = ATTR_CONGESTION;
	r->chronic.part = PART_TX_QDISC;
	r->chronic.wait_ns = q + 12 * US;
	r->chronic.part_median_ns = q;
	r->chronic.median_wait_ns = q + 12 * US;
	r->chronic.tail_wait_ns = r->tail.budget.wait_ns[ATTR_CONGESTION];
	snprintf(r->chronic.where, sizeof(r->chronic.where), "%s", QDISC_WHERE);
	snprintf(r->chronic.evidence, sizeof(r->chronic.evidence),
		 "qdisc 1:0 on dev tt-srv0: 3007 packets of the traced flows in 10 s, sojourn p10 "
		 "19.4 ms p50 22.5 ms (the backlog they met); qdisc drops 39 of 6004 packets on "
		 "traced devices");
	verdict(&r->tail.verdict, VERDICT_CONGESTION, VERDICT_NONE, VERDICT_KIND_CHRONIC,
		PART_TX_QDISC, QDISC_WHERE);
	r->other.class = VERDICT_NONE;
	r->other.has_part = false;
}

/* both: the standing queue, and bursts that fill it and drop (a tail mean far above p99,
 * which the text must not call a quantile); p99.9 judged too */
static void case_both(struct attr_report *r)
{
	double x[ATTR_PARTS] = { 0 }, q = 6200 * US;

	case_chronic(r);
	r->median.part_mean_ns[PART_TX_QDISC] = q;
	group_parts(&r->median, r->median.part_mean_ns, 4000);
	r->latency.p50_ns = 6950 * US;
	r->latency.p90_ns = 7210 * US;
	r->latency.p99_ns = 24640 * US;
	r->latency.p999_ns = 61870 * US;
	r->latency.max_ns = 194450 * US;
	x[PART_RETRANS_QUEUE] = 18400 * US;
	x[PART_TX_QDISC] = 15400 * US;
	x[PART_RETRANS_LOSS] = 3060 * US;
	x[PART_TX_SENDQ_LOSS] = 2190 * US;
	memset(&r->tail, 0, sizeof(r->tail));
	tail_with(r, x);
	stage(&r->tail, &r->median, PART_RETRANS_QUEUE,
	      "flow :7000 <-> 198.18.1.2:50338 via " QDISC_WHERE, 0.66, 2);
	stage(&r->tail, &r->median, PART_TX_QDISC, QDISC_WHERE, 1, 1);
	stage(&r->tail, &r->median, PART_RETRANS_LOSS,
	      "flow :7000 <-> 198.18.1.2:50338 via " QDISC_WHERE, 0.61, 2);
	stage(&r->tail, &r->median, PART_TX_SENDQ_LOSS,
	      "flow :7000 <-> 198.18.1.2:50330 via " QDISC_WHERE, 0.51, 2);
	evidence(&r->tail.ev, 1.119, 0.952, 15570);
	r->chronic.wait_ns = q + 12 * US;
	r->chronic.part_median_ns = q;
	r->chronic.median_wait_ns = q + 12 * US;
	r->chronic.tail_wait_ns = r->tail.budget.wait_ns[ATTR_CONGESTION];
	verdict(&r->tail.verdict, VERDICT_CONGESTION, VERDICT_CONGESTION, VERDICT_KIND_BOTH,
		PART_RETRANS_QUEUE, "flow :7000 <-> 198.18.1.2:50338 via " QDISC_WHERE);
	/* the p99.9 group: the worst bursts */
	r->has_p999 = true;
	memset(x, 0, sizeof(x));
	for (int p = 0; p < ATTR_PARTS; p++)
		x[p] = r->median.part_mean_ns[p];
	x[PART_RETRANS_QUEUE] = 61000 * US;
	x[PART_TX_QDISC] += 20000 * US;
	group_parts(&r->p999, x, 20);
	tail_vs(&r->p999, &r->median, 0.999);
	stage(&r->p999, &r->median, PART_RETRANS_QUEUE,
	      "flow :7000 <-> 198.18.1.2:50338 via " QDISC_WHERE, 1, 1);
	stage(&r->p999, &r->median, PART_TX_QDISC, QDISC_WHERE, 1, 1);
	evidence(&r->p999.ev, 2, 2, 30000);
	verdict(&r->p999.verdict, VERDICT_CONGESTION, VERDICT_CONGESTION, VERDICT_KIND_EPISODIC,
		PART_RETRANS_QUEUE, "flow :7000 <-> 198.18.1.2:50338 via " QDISC_WHERE);
}

static char *render(const struct attr_report *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	attr_report__print_text(r, f);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* Words left with nothing after them, or a placeholder for a value. */
static void assert_no_empty_words(const char *text)
{
	static const char *const bad[] = {
		"none (none)", "waiting \n", "waiting  ", ": \n", "()",
		" \n",         "(null)",     "nan",       "-0%",  "-0 us"
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (strstr(text, bad[i]))
			fail_msg("\"%s\" in:\n%s", bad[i], text);
}

static double parse_dur(const char *s)
{
	double v = strtod(s, NULL);

	if (strstr(s, " ms") == strchr(s, ' '))
		return v * MS;
	if (strstr(s, " s") == strchr(s, ' '))
		return v * 1e9;
	return v * US;
}

/* The class rows of each tail table add up to its "all" row, column by column, within the
 * rounding of what is printed. */
static void assert_tables_add_up(const char *text)
{
	const char *p = text;
	int tables = 0;

	while ((p = strstr(p, "\n  class "))) {
		double sum[3] = { 0 }, all[3];
		const char *line = strchr(p + 1, '\n') + 1;

		for (int row = 0; row < ATTR_CLASSES + 1; row++) {
			const char *c = line + 2 + 24 + 1 + 12;
			double v[3];

			for (int k = 0; k < 3; k++) {
				while (*c == ' ')
					c++;
				v[k] = parse_dur(c);
				c = strchr(c, ' ') + 1;
				c = strchr(c, ' ');
			}
			for (int k = 0; k < 3; k++) {
				if (row < ATTR_CLASSES)
					sum[k] += v[k];
				else
					all[k] = v[k];
			}
			line = strchr(line, '\n') + 1;
		}
		for (int k = 0; k < 3; k++)
			if (sum[k] < all[k] * 0.995 - 2 * US || sum[k] > all[k] * 1.005 + 2 * US)
				fail_msg("column %d: rows sum to %.0f ns, total %.0f ns", k, sum[k],
					 all[k]);
		tables++;
		p = line;
	}
	assert_true(tables >= 1);
}

static void check_golden(const char *name, void (*build)(struct attr_report *))
{
	struct attr_report *r = calloc(1, sizeof(*r));
	const char *root = getenv("TT_ROOT");
	char path[512], *got, *want;

	assert_non_null(r);
	build(r);
	got = render(r);
	assert_no_empty_words(got);
	assert_tables_add_up(got);
	snprintf(path, sizeof(path), "%s/tests/unit/golden/explain_%s.txt", root ? root : ".",
		 name);
	if (getenv("TT_GOLDEN_UPDATE")) {
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fputs(got, f);
		fclose(f);
	}
	want = slurp(path);
	if (!want)
		fail_msg("%s: cannot read (run from the repository root, or set TT_ROOT)", path);
	if (strcmp(got, want))
		fail_msg("%s differs; got:\n%s", path, got);
	free(want);
	free(got);
	free(r);
}

static void test_none(void **state)
{
	(void)state;
	check_golden("none", case_none);
}

static void test_episodic(void **state)
{
	(void)state;
	check_golden("episodic", case_episodic);
}

static void test_chronic(void **state)
{
	(void)state;
	check_golden("chronic", case_chronic);
}

static void test_both(void **state)
{
	(void)state;
	check_golden("both", case_both);
}

/* What the words say, whatever the layout: the tail mean is never called a quantile, and
 * the verdict line comes first. */
static void test_words(void **state)
{
	struct attr_report *r = calloc(1, sizeof(*r));
	char *t;

	(void)state;
	case_both(r);
	t = render(r);
	{
		static const char first[] =
			"verdict: congestion in tcp.retrans (queue), episodic and chronic\n";

		assert_int_equal(strncmp(t, first, sizeof(first) - 1), 0);
	}
	/* p99 is 24.64 ms; the tail's mean (45.85 ms) is called a mean */
	assert_non_null(strstr(t, "from the p99 one (24.64 ms)"));
	assert_non_null(strstr(t, "the p99 tail mean 45.85 ms"));
	assert_null(strstr(t, "p99 45.85"));
	assert_non_null(strstr(t, "named by the episodic answer"));
	free(t);

	/* no requests: the verdict and one line saying so */
	memset(r, 0, sizeof(*r));
	attr_params__default(&r->params);
	t = render(r);
	assert_string_equal(t, "verdict: none\n  no requests seen\n");
	free(t);

	/* too few: each question says so */
	case_none(r);
	r->requests = 40;
	t = render(r);
	assert_non_null(strstr(t, "  episodic: 40 requests, fewer than 100: too few to judge"));
	assert_non_null(strstr(t, "  chronic: too few requests to judge\n"));
	assert_no_empty_words(t);
	free(t);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none),    cmocka_unit_test(test_episodic),
		cmocka_unit_test(test_chronic), cmocka_unit_test(test_both),
		cmocka_unit_test(test_words),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
