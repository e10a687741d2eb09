// SPDX-License-Identifier: GPL-2.0
/* The attribution report as text for a person: the verdict with both questions' answers,
 * then the latency quantiles, then the tail against the median group and each group's mean
 * request split into floor, work and waiting. Pure: it reads only the struct the JSON is
 * written from. Every figure names what it is (a quantile, a group's mean, a share), and
 * the columns of each table add up to their total row. */
#include <string.h>
#include "attr/attr_int.h"

/* One style for sentences and table cells, precise enough that a table's rows visibly add
 * up to its total (12 us, 4.56 ms, 1.23 s). */
static const char *dur(char *b, size_t n, double ns)
{
	double a = ns < 0 ? -ns : ns;

	if (a < 500) /* no "-0 us" */
		ns = 0;
	if (a >= 1e9)
		snprintf(b, n, "%.2f s", ns / 1e9);
	else if (a >= 1e6)
		snprintf(b, n, "%.2f ms", ns / 1e6);
	else
		snprintf(b, n, "%.0f us", ns / 1e3);
	return b;
}

/* A share in percent, without "-0%". */
static double pct(double share)
{
	double p = 100 * share;

	return p > -0.5 && p < 0.5 ? 0 : p;
}

static void pr_cell(FILE *f, int width, double ns)
{
	char b[24];

	fprintf(f, " %*s", width, dur(b, sizeof(b), ns));
}

static const char *role_name(int role)
{
	return role == ROLE_CLIENT ? "client" : "server";
}

/* A part's label: the stage, and what the part is where two parts share a stage. */
static const char *part_label(enum attr_part p)
{
	switch (p) {
	case PART_RETRANS_LOSS:
		return "tcp.retrans (loss)";
	case PART_RETRANS_QUEUE:
		return "tcp.retrans (queue)";
	case PART_TX_SENDQ_LOSS:
		return "tx.sendq (loss recovery)";
	case PART_RTT_BASE:
		return "tcp.rtt (base)";
	case PART_RTT_QUEUE:
		return "tcp.rtt (queueing)";
	default:
		return attr_part_info(p)->stage;
	}
}

static const char *kind_words(enum attr_verdict_kind k)
{
	switch (k) {
	case VERDICT_KIND_EPISODIC:
		return "episodic";
	case VERDICT_KIND_CHRONIC:
		return "chronic";
	case VERDICT_KIND_BOTH:
		return "episodic and chronic";
	default:
		return NULL;
	}
}

/* "verdict: congestion (tx.qdisc), episodic and chronic" */
static void pr_verdict_line(FILE *f, const char *label, const struct attr_verdict *v)
{
	const char *k = kind_words(v->kind);

	fprintf(f, "%s: %s", label, attr_verdict_name(v->class));
	if (v->has_part)
		fprintf(f, " in %s", part_label(v->part));
	if (k)
		fprintf(f, ", %s", k);
	fputc('\n', f);
}

/* Classes by their share of the group's excess, largest first. */
static void classes_ranked(const struct attr_group *g, int order[ATTR_CLASSES])
{
	for (int c = 0; c < ATTR_CLASSES; c++)
		order[c] = c;
	for (int i = 1; i < ATTR_CLASSES; i++)
		for (int j = i;
		     j > 0 && g->excess_shares[order[j]] > g->excess_shares[order[j - 1]]; j--) {
			int t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
}

/* The episodic question's answer for group g, in one line with its numbers. */
static void pr_episodic(FILE *f, const struct attr_report *r, const struct attr_group *g)
{
	const struct attr_params *P = &r->params;
	enum attr_verdict_class e = g->verdict.episodic;
	char tm[24], mm[24], ex[24];
	int order[ATTR_CLASSES];
	double q = 100 * g->quantile;

	fputs("  episodic: ", f);
	if (r->requests < P->min_requests) {
		fprintf(f, "%llu requests, fewer than %llu: too few to judge the p%g tail\n",
			(unsigned long long)r->requests, (unsigned long long)P->min_requests, q);
		return;
	}
	dur(tm, sizeof(tm), g->mean_ns);
	dur(mm, sizeof(mm), r->median.mean_ns);
	dur(ex, sizeof(ex), g->excess_ns);
	classes_ranked(g, order);
	if (e == VERDICT_NONE) {
		fprintf(f,
			"the p%g tail mean %s is %s over the median group's mean %s (x%.2f): not "
			"meaningfully worse (needs >= %.1f ms over and >= x%.2f)\n",
			q, tm, ex, mm, g->ratio, (double)P->min_excess_ns / 1e6, P->min_ratio);
	} else if (e == VERDICT_MIXED) {
		fprintf(f,
			"the p%g tail mean %s is %s over the median group's mean %s (x%.2f); no "
			"class holds most of that excess: %s %.0f%%, %s %.0f%%\n",
			q, tm, ex, mm, g->ratio, attr_class_name(order[0]),
			100 * g->excess_shares[order[0]], attr_class_name(order[1]),
			100 * g->excess_shares[order[1]]);
	} else {
		fprintf(f,
			"the p%g tail mean %s is %s over the median group's mean %s (x%.2f); %s "
			"holds %.0f%% of that excess",
			q, tm, ex, mm, g->ratio, attr_class_name(order[0]),
			pct(g->excess_shares[order[0]]));
		if (pct(g->excess_shares[order[1]]) > 0)
			fprintf(f, " (next: %s %.0f%%)", attr_class_name(order[1]),
				pct(g->excess_shares[order[1]]));
		fputc('\n', f);
	}
	if (g->streamed && e != VERDICT_NONE) {
		bool first = g->first_token_share >= 0.5;

		fprintf(f,
			"  streams: %s is what is slow: %.0f%% of the excess lies %s the first "
			"token\n",
			first ? "the time to first token" : "the time between tokens",
			100 * (first ? g->first_token_share : 1 - g->first_token_share),
			first ? "before" : "after");
	}
}

/* The chronic question's answer: the waiting both groups have. */
static void pr_chronic_answer(FILE *f, const struct attr_report *r)
{
	const struct attr_params *P = &r->params;
	const struct attr_chronic *c = &r->chronic;
	char w[24], mm[24], phrase[240];
	double share = r->median.mean_ns > 0 ? c->wait_ns / r->median.mean_ns : 0;

	fputs("  chronic: ", f);
	if (r->requests < P->min_requests) {
		fputs("too few requests to judge\n", f);
		return;
	}
	dur(w, sizeof(w), c->wait_ns);
	dur(mm, sizeof(mm), r->median.mean_ns);
	if (c->found) {
		attr_chronic_phrase(c, phrase, sizeof(phrase));
		fprintf(f,
			"%s (%s waiting in both groups: %s, %.0f%% of the median group's mean "
			"%s)\n",
			phrase, attr_class_name(c->class), w, 100 * share, mm);
	} else {
		fprintf(f,
			"no standing fault: the most waiting both groups share is %s's %s, %.0f%% "
			"of "
			"the median group's mean %s (needs >= %.1f ms and >= %.0f%%)\n",
			attr_class_name(c->class), w, 100 * share, mm,
			(double)P->chronic_min_wait_ns / 1e6, 100 * P->chronic_min_share);
	}
}

/* The p99 verdict: what, where, what to do, and each question's answer. */
static void pr_verdict(FILE *f, const struct attr_report *r)
{
	const struct attr_verdict *v = &r->tail.verdict;
	const char *hint = attr_action_hint(v->class, v->part, r->role == ROLE_CLIENT);

	pr_verdict_line(f, "verdict", v);
	if (v->where[0])
		fprintf(f, "  where: %s\n", v->where);
	if (hint[0])
		fprintf(f, "  what to do: %s\n", hint);
	if (!r->requests) {
		fputs("  no requests seen\n", f);
		return;
	}
	pr_episodic(f, r, &r->tail);
	pr_chronic_answer(f, r);
	if (v->kind == VERDICT_KIND_BOTH) {
		double epi = r->tail.excess_ns;
		char a[24], b[24];

		/* attr_chronic.c's rule: the answer that explains more of the p99 tail names it */
		for (int k = 0; k < ATTR_CLASSES && v->episodic != VERDICT_MIXED; k++)
			if (attr_class_verdict(k) == v->episodic)
				epi = r->tail.excess_ns * r->tail.excess_shares[k];
		fprintf(f,
			"  named by the %s answer: %s of the tail's excess against %s of waiting "
			"in both groups\n",
			epi >= r->chronic.wait_ns ? "episodic" : "chronic", dur(a, sizeof(a), epi),
			dur(b, sizeof(b), r->chronic.wait_ns));
	}
}

/* p50 .. max of a latency figure, one row of the quantile table. */
static void pr_quantile_row(FILE *f, const char *name, const struct hist_summary *h)
{
	if (!h->count)
		return;
	fprintf(f, "  %-32s %9llu", name, (unsigned long long)h->count);
	pr_cell(f, 9, (double)h->p50_ns);
	pr_cell(f, 9, (double)h->p90_ns);
	pr_cell(f, 9, (double)h->p99_ns);
	pr_cell(f, 9, (double)h->p999_ns);
	pr_cell(f, 9, (double)h->max_ns);
	if (h->overflow)
		fprintf(f, "  (%llu beyond range)", (unsigned long long)h->overflow);
	fputc('\n', f);
}

/* What a request is here: HTTP/2 streams and HTTP/1.1 responses follow the protocol's
 * framing, TLS connections hide it (their requests are exchanges of data). */
static void pr_framing(FILE *f, const struct attr_report *r)
{
	const __u64 *p = r->proto_reqs;
	__u64 h1_streamed = r->stream_reqs > p[PROTO_HTTP2] ? r->stream_reqs - p[PROTO_HTTP2] : 0;

	if (!p[PROTO_HTTP1] && !p[PROTO_HTTP2] && !p[PROTO_TLS])
		return;
	fprintf(f, "  framing: %llu HTTP/2 streams, %llu HTTP/1 (%llu streamed), %llu other",
		(unsigned long long)p[PROTO_HTTP2], (unsigned long long)p[PROTO_HTTP1],
		(unsigned long long)h1_streamed,
		(unsigned long long)(p[PROTO_UNKNOWN] + p[PROTO_OPAQUE]));
	if (r->stream_reqs)
		fprintf(f, ", %.1f tokens a stream",
			(double)r->stream_tokens / (double)r->stream_reqs);
	if (p[PROTO_TLS])
		fprintf(f,
			", %llu TLS (framing hidden: these are exchanges, not requests; "
			"--tls-uprobes reads it through OpenSSL)",
			(unsigned long long)p[PROTO_TLS]);
	fputc('\n', f);
}

static void pr_latency(FILE *f, const struct attr_report *r)
{
	fprintf(f, "%llu requests (%s side) in %.1f s", (unsigned long long)r->requests,
		role_name(r->role), r->duration_s);
	if (r->duration_s > 0)
		fprintf(f, ", %.1f/s", (double)r->requests / r->duration_s);
	fprintf(f, "\n  %-32s %9s %9s %9s %9s %9s %9s\n", "quantiles", "count", "p50", "p90", "p99",
		"p99.9", "max");
	pr_quantile_row(f, "latency", &r->latency);
	pr_quantile_row(f, "time to first token", &r->ttft);
	pr_quantile_row(f, "largest gap between tokens", &r->gap);
	pr_quantile_row(f, "every gap between tokens", &r->itl);
	pr_quantile_row(f, "time per output token", &r->tpot);
	pr_framing(f, r);
	if (r->overlap_reqs)
		fprintf(f,
			"  warning: %llu of %llu requests overlapped others on their connection "
			"(pipelining): their count and latencies are those of exchanges (a run of "
			"requests, then of responses), not of single requests\n",
			(unsigned long long)r->overlap_reqs, (unsigned long long)r->requests);
}

/* One row of a tail-against-median table: tail mean, median mean, their difference and
 * that difference's share of the group's excess. */
static void pr_excess_row(FILE *f, const char *name, const char *cls, double tail, double med,
			  double excess)
{
	double d = tail - med;

	fprintf(f, "  %-24s %-12s", name, cls);
	pr_cell(f, 10, tail);
	pr_cell(f, 11, med);
	pr_cell(f, 10, d);
	fprintf(f, " %9.0f%%", excess > 0 ? pct(d / excess) : 0.0);
}

static void pr_evidence(FILE *f, const char *name, const struct attr_evidence *e)
{
	char a[24], b[24];

	fprintf(f,
		"  evidence, %s: retransmissions %.3f a request (%.3f by timeout), in %.1f%% of "
		"requests "
		"(%.1f%% with queue-drop or ECN evidence); queue drops %.3f a request; ECN CE "
		"%.3f a request",
		name, e->retrans, e->retrans_rto, 100 * e->retrans_reqs,
		100 * e->retrans_congestion_reqs, e->drops, e->ecn_ce);
	if (e->srtt_ns > 0)
		fprintf(f, "; mean srtt %s (mean min_rtt %s)", dur(a, sizeof(a), e->srtt_ns),
			dur(b, sizeof(b), e->min_rtt_ns));
	fputc('\n', f);
}

/* A tail group against the median group: by class, then by stage with its top place. The
 * class rows add up to the total row; the stage rows with "other stages" do too. */
static void pr_tail(FILE *f, const struct attr_report *r, const struct attr_group *g, double q_ns)
{
	const struct attr_group *m = &r->median;
	double q = 100 * g->quantile, st = 0, sm = 0;
	char a[24], b[24];

	fprintf(f, "\nthe p%g tail against the median group, mean time per request:\n", q);
	fprintf(f, "  p%g tail: the %llu slowest requests, from the p%g one (%s) to the max (%s)\n",
		q, (unsigned long long)g->count, q, dur(a, sizeof(a), q_ns),
		dur(b, sizeof(b), (double)r->latency.max_ns));
	fprintf(f, "  median group: the %llu requests ranked p40 to p60 (p50 %s)\n",
		(unsigned long long)m->count, dur(a, sizeof(a), (double)r->latency.p50_ns));
	fprintf(f, "  %-24s %-12s %10s %11s %10s %10s\n", "class", "", "tail mean", "median mean",
		"excess", "of excess");
	for (int c = 0; c < ATTR_CLASSES; c++) {
		pr_excess_row(f, attr_class_name(c), "", g->class_mean_ns[c], m->class_mean_ns[c],
			      g->excess_ns);
		fputc('\n', f);
	}
	pr_excess_row(f, "all", "", g->mean_ns, m->mean_ns, g->excess_ns);
	fprintf(f, "   (tail mean x%.2f the median group's)\n", g->ratio);

	fprintf(f, "  %-24s %-12s %10s %11s %10s %10s  %s\n", "stage", "class", "tail mean",
		"median mean", "excess", "of excess", "where (its share of the stage's tail time)");
	for (int i = 0; i < g->nstages; i++) {
		const struct attr_stage_line *l = &g->stages[i];

		pr_excess_row(f, part_label(l->part),
			      attr_class_name(attr_part_info(l->part)->class), l->mean_ns,
			      l->median_mean_ns, g->excess_ns);
		if (!l->nplaces)
			fputs("  no place kept", f);
		else if (l->nplaces == 1)
			fprintf(f, "  %s", l->places[0].where);
		else
			fprintf(f, "  %s (%.0f%%; %d more place%s)", l->places[0].where,
				100 * l->places[0].share, l->nplaces - 1,
				l->nplaces > 2 ? "s" : "");
		fputc('\n', f);
		st += l->mean_ns;
		sm += l->median_mean_ns;
	}
	if (g->nstages) {
		pr_excess_row(f, "other stages", "", g->mean_ns - st, m->mean_ns - sm,
			      g->excess_ns);
		fputc('\n', f);
	}
	snprintf(a, sizeof(a), "p%g tail", q);
	pr_evidence(f, a, &g->ev);
	if (g == &r->tail)
		pr_evidence(f, "median group", &m->ev);
}

static void pr_budget_row(FILE *f, const char *name, const struct attr_group *g)
{
	const struct attr_budget *b = &g->budget;

	fprintf(f, "  %-14s", name);
	pr_cell(f, 10, g->mean_ns);
	pr_cell(f, 9, b->floor_ns);
	pr_cell(f, 9, b->work_ns);
	for (int c = 0; c < ATTR_UNATTRIBUTED; c++)
		pr_cell(f, 12, b->wait_ns[c]);
	/* no waiting part is unattributed: what this host cannot see is unseen */
	pr_cell(f, 9, b->unseen_ns + b->wait_ns[ATTR_UNATTRIBUTED]);
	fputc('\n', f);
}

/* Each group's mean request as floor + work + waiting + unseen (the chronic question). */
static void pr_budget(FILE *f, const struct attr_report *r)
{
	fputs("\nwhere the time goes: each group's mean request = floor (the cost when nothing "
	      "waits) + work + waiting + unseen\n",
	      f);
	fprintf(f, "  %-14s %10s %9s %9s %12s %12s %12s %9s\n", "", "mean", "floor", "work",
		"wait:compute", "transport", "congestion", "unseen");
	pr_budget_row(f, "p99 tail", &r->tail);
	pr_budget_row(f, "median group", &r->median);
	if (r->chronic.evidence[0])
		fprintf(f, "  chronic evidence: %s\n", r->chronic.evidence);
	fprintf(f, "  floor's round trip: %s", r->floor.source);
	if (r->floor.known && r->floor.own_min_ns > 1.5 * r->floor.rtt_ns) {
		char a[24];

		fprintf(f, " (the flows' own min_rtt averages %s)",
			dur(a, sizeof(a), r->floor.own_min_ns));
	}
	fputc('\n', f);
}

/* The other side of the connection, when it was traced too. */
static void pr_other(FILE *f, const struct attr_report *r)
{
	const struct attr_verdict *o = &r->other;

	if (!r->has_other)
		return;
	fprintf(f, "the %s side's own verdict: %s", r->role == ROLE_CLIENT ? "server" : "client",
		attr_verdict_name(o->class));
	if (o->has_part)
		fprintf(f, " (%s)", part_label(o->part));
	fprintf(f, "; this report is the %s side's (%s)\n", role_name(r->role), r->role_rule);
}

void attr_report__print_text(const struct attr_report *r, FILE *f)
{
	pr_verdict(f, r);
	if (r->has_p999) {
		const struct attr_verdict *w = &r->p999.verdict;

		pr_verdict_line(f, "p99.9 verdict", w);
		if (w->where[0])
			fprintf(f, "  where: %s\n", w->where);
		pr_episodic(f, r, &r->p999);
	}
	pr_other(f, r);
	if (!r->requests)
		return;
	fputc('\n', f);
	pr_latency(f, r);
	pr_tail(f, r, &r->tail, (double)r->latency.p99_ns);
	if (r->has_p999)
		pr_tail(f, r, &r->p999, (double)r->latency.p999_ns);
	pr_budget(f, r);
	if (r->places_unstored)
		fprintf(f, "places not stored (table full): %llu\n",
			(unsigned long long)r->places_unstored);
}
