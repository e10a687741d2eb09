// SPDX-License-Identifier: GPL-2.0
/* Rendering of an attribution report: text for a person (verdict first, then the
 * evidence, then the numbers) and the JSON keys that docs/attribution.md defines. */
#include <string.h>
#include "attr/attribution.h"
#include "lib/json.h"

static const char *role_name(const struct attr_report *r)
{
	return r->role == ROLE_CLIENT ? "client" : "server";
}

static const char *stage_class(enum attr_part p)
{
	return attr_class_name(attr_part_info(p)->class);
}

/* ---- text ---- */

static void pr_dur(FILE *f, double ns)
{
	if (ns < 0) {
		fputc('-', f);
		ns = -ns;
	}
	if (ns >= 1e9)
		fprintf(f, "%.2f s", ns / 1e9);
	else if (ns >= 1e6)
		fprintf(f, "%.2f ms", ns / 1e6);
	else
		fprintf(f, "%.0f us", ns / 1e3);
}

static void pr_dur_col(FILE *f, double ns)
{
	char b[24];

	if (ns >= 1e9)
		snprintf(b, sizeof(b), "%.2f s", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(b, sizeof(b), "%.2f ms", ns / 1e6);
	else
		snprintf(b, sizeof(b), "%.0f us", ns / 1e3);
	fprintf(f, "%10s", b);
}

static void pr_summary_line(FILE *f, const char *name, const struct hist_summary *h)
{
	if (!h->count)
		return;
	fprintf(f, "  %-8s n=%llu  p50 ", name, (unsigned long long)h->count);
	pr_dur(f, (double)h->p50_ns);
	fputs("  p90 ", f);
	pr_dur(f, (double)h->p90_ns);
	fputs("  p99 ", f);
	pr_dur(f, (double)h->p99_ns);
	fputs("  p99.9 ", f);
	pr_dur(f, (double)h->p999_ns);
	fputs("  max ", f);
	pr_dur(f, (double)h->max_ns);
	if (h->overflow)
		fprintf(f, "  (%llu beyond range)", (unsigned long long)h->overflow);
	fputc('\n', f);
}

static void pr_shares(FILE *f, const char *name, const double *s)
{
	fprintf(f, "  %-18s", name);
	for (int c = 0; c < ATTR_CLASSES; c++)
		fprintf(f, " %11.0f%%", 100 * s[c]);
	fputc('\n', f);
}

static void pr_evidence(FILE *f, const char *name, const struct attr_evidence *e)
{
	fprintf(f,
		"  %-18s retrans/req %.3f (rto %.3f, %.1f%% of requests, %.1f%% with queue "
		"evidence)  drops/req %.3f  ecn-ce/req %.3f",
		name, e->retrans, e->retrans_rto, 100 * e->retrans_reqs,
		100 * e->retrans_congestion_reqs, e->drops, e->ecn_ce);
	if (e->srtt_ns > 0) {
		fputs("  srtt ", f);
		pr_dur(f, e->srtt_ns);
		fputs(" (min ", f);
		pr_dur(f, e->min_rtt_ns);
		fputc(')', f);
	}
	fputc('\n', f);
}

static void pr_group_stages(FILE *f, const struct attr_group *g)
{
	fprintf(f, "  %-14s %-12s %7s %7s %10s  %s\n", "stage", "class", "share", "excess", "mean",
		"where");
	for (int i = 0; i < g->nstages; i++) {
		const struct attr_stage_line *l = &g->stages[i];

		fprintf(f, "  %-14s %-12s %6.0f%% %6.0f%% ", attr_part_info(l->part)->stage,
			stage_class(l->part), 100 * l->share, 100 * l->excess_share);
		pr_dur_col(f, l->mean_ns);
		fprintf(f, "  %s", l->nplaces ? l->places[0].where : "-");
		if (l->nplaces > 1)
			fprintf(f, " (%.0f%%; +%d more)", 100 * l->places[0].share, l->nplaces - 1);
		fputc('\n', f);
	}
}

static void pr_group(FILE *f, const char *label, const struct attr_group *g)
{
	fprintf(f, "%s: %llu requests >= ", label, (unsigned long long)g->count);
	pr_dur(f, (double)g->lo_ns);
	fputs(", mean ", f);
	pr_dur(f, g->mean_ns);
	fputs(" (+", f);
	pr_dur(f, g->excess_ns);
	fprintf(f, " over the median, x%.2f)\n", g->ratio);
	pr_group_stages(f, g);
	pr_evidence(f, "", &g->ev);
}

static void pr_budget(FILE *f, const char *name, const struct attr_group *g)
{
	const struct attr_budget *b = &g->budget;

	fprintf(f, "  %-8s mean ", name);
	pr_dur(f, g->mean_ns);
	fputs(" = floor ", f);
	pr_dur(f, b->floor_ns);
	fputs(" + work ", f);
	pr_dur(f, b->work_ns);
	for (int c = 0; c < ATTR_CLASSES; c++) {
		fprintf(f, " + %s waiting ", attr_class_name(c));
		pr_dur(f, b->wait_ns[c]);
	}
	fputs(" + unseen ", f);
	pr_dur(f, b->unseen_ns);
	fputc('\n', f);
}

/* The chronic question: the p99 and median requests' floor, work and waiting. */
/* What a request is here: HTTP/2 streams and HTTP/1.1 responses follow the protocol's
 * framing, TLS connections hide it (their requests are exchanges of data). */
static void pr_framing(FILE *f, const struct attr_report *r)
{
	const __u64 *p = r->proto_reqs;
	__u64 h1_streamed = r->stream_reqs > p[PROTO_HTTP2] ? r->stream_reqs - p[PROTO_HTTP2] : 0;

	if (!r->requests || (!p[PROTO_HTTP1] && !p[PROTO_HTTP2] && !p[PROTO_TLS]))
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

static void pr_chronic(FILE *f, const struct attr_report *r)
{
	fputs("where the time goes (floor: what a request costs when nothing waits):\n", f);
	pr_budget(f, "p99", &r->tail);
	pr_budget(f, "median", &r->median);
	fprintf(f, "  base RTT: %s", r->floor.source);
	if (r->floor.known && r->floor.own_min_ns > 1.5 * r->floor.rtt_ns) {
		fputs(" (the flows' own min_rtt average ", f);
		pr_dur(f, r->floor.own_min_ns);
		fputc(')', f);
	}
	fprintf(f, "\n  chronic: %s\n", r->chronic.rule);
	if (r->chronic.evidence[0])
		fprintf(f, "  evidence: %s\n", r->chronic.evidence);
}

void attr_report__print_text(const struct attr_report *r, FILE *f)
{
	const struct attr_verdict *v = &r->tail.verdict;

	fprintf(f, "verdict: %s", attr_verdict_name(v->class));
	if (v->has_part)
		fprintf(f, " (%s)", attr_part_info(v->part)->stage);
	if (v->kind != VERDICT_KIND_NONE)
		fprintf(f, ", %s", attr_verdict_kind_name(v->kind));
	fprintf(f, "\n  %s\n  rule: %s\n", v->summary, v->rule);
	if (r->has_p999) {
		const struct attr_verdict *w = &r->p999.verdict;

		fprintf(f, "p99.9 verdict: %s", attr_verdict_name(w->class));
		if (w->has_part)
			fprintf(f, " (%s)", attr_part_info(w->part)->stage);
		fprintf(f, "\n  %s\n", w->summary);
	}
	if (r->has_other) {
		fprintf(f, "view: %s side (%s)\n  the %s side says: %s", role_name(r), r->role_rule,
			r->role == ROLE_CLIENT ? "server" : "client",
			attr_verdict_name(r->other.class));
		if (r->other.has_part)
			fprintf(f, " (%s)", attr_part_info(r->other.part)->stage);
		fputc('\n', f);
	}
	fputc('\n', f);
	if (!r->requests) {
		fputs("no requests seen\n", f);
		return;
	}

	if (r->overlap_reqs)
		fprintf(f,
			"warning: %llu of %llu requests overlapped others on their connection "
			"(pipelining): their count and latencies are those of exchanges (a run of "
			"requests, then of responses), not of single requests\n\n",
			(unsigned long long)r->overlap_reqs, (unsigned long long)r->requests);
	pr_chronic(f, r);
	fputc('\n', f);
	pr_group(f, "p99 tail", &r->tail);
	if (r->has_p999) {
		fputc('\n', f);
		pr_group(f, "p99.9 tail", &r->p999);
	}

	fprintf(f, "\nshares of latency   %12s %12s %12s %12s\n", "compute", "transport",
		"congestion", "unattributed");
	pr_shares(f, "p99 tail", r->tail.shares);
	pr_shares(f, "p99 tail excess", r->tail.excess_shares);
	if (r->has_p999) {
		pr_shares(f, "p99.9 tail", r->p999.shares);
		pr_shares(f, "p99.9 tail excess", r->p999.excess_shares);
	}
	pr_shares(f, "median (p40-p60)", r->median.shares);
	fputs("median group: ", f);
	pr_dur(f, (double)r->median.lo_ns);
	fputs(" - ", f);
	pr_dur(f, (double)r->median.hi_ns);
	fprintf(f, ", %llu requests, mean ", (unsigned long long)r->median.count);
	pr_dur(f, r->median.mean_ns);
	fputc('\n', f);
	pr_evidence(f, "", &r->median.ev);

	fprintf(f, "\n%llu requests (%s side) in %.1f s", (unsigned long long)r->requests,
		role_name(r), r->duration_s);
	if (r->duration_s > 0)
		fprintf(f, ", %.1f/s", (double)r->requests / r->duration_s);
	fputc('\n', f);
	pr_summary_line(f, "latency", &r->latency);
	pr_summary_line(f, "ttft", &r->ttft);
	pr_summary_line(f, "gap", &r->gap);
	pr_summary_line(f, "itl", &r->itl);
	pr_summary_line(f, "tpot", &r->tpot);
	pr_framing(f, r);
	if (r->places_unstored)
		fprintf(f, "places not stored (table full): %llu\n",
			(unsigned long long)r->places_unstored);
}

/* ---- JSON ---- */

static void js_quantiles(struct json_writer *w, const char *key, const struct hist_summary *h)
{
	jw_object_begin(w, key);
	jw_uint(w, "count", h->count);
	jw_double(w, "mean", h->mean_ns / 1e3);
	jw_double(w, "p50", (double)h->p50_ns / 1e3);
	jw_double(w, "p90", (double)h->p90_ns / 1e3);
	jw_double(w, "p99", (double)h->p99_ns / 1e3);
	jw_double(w, "p999", (double)h->p999_ns / 1e3);
	jw_double(w, "max", (double)h->max_ns / 1e3);
	jw_uint(w, "overflow", h->overflow);
	jw_object_end(w);
}

static void js_framing(struct json_writer *w, const struct attr_report *r)
{
	jw_object_begin(w, "framing");
	jw_uint(w, "http2_streams", r->proto_reqs[PROTO_HTTP2]);
	jw_uint(w, "http1", r->proto_reqs[PROTO_HTTP1]);
	jw_uint(w, "tls", r->proto_reqs[PROTO_TLS]);
	jw_uint(w, "other", r->proto_reqs[PROTO_UNKNOWN] + r->proto_reqs[PROTO_OPAQUE]);
	jw_uint(w, "streamed", r->stream_reqs);
	jw_double(w, "tokens_per_stream",
		  r->stream_reqs ? (double)r->stream_tokens / (double)r->stream_reqs : 0);
	/* TLS hides the framing: its requests are exchanges of data */
	jw_bool(w, "tls_figures_are_exchanges", r->proto_reqs[PROTO_TLS] > 0);
	jw_object_end(w);
}

static void js_classes(struct json_writer *w, const char *key, const double *v)
{
	jw_object_begin(w, key);
	for (int c = 0; c < ATTR_CLASSES; c++)
		jw_double(w, attr_class_name(c), v[c]);
	jw_object_end(w);
}

static void js_evidence(struct json_writer *w, const struct attr_evidence *e)
{
	jw_object_begin(w, "evidence");
	jw_double(w, "retrans_per_req", e->retrans);
	jw_double(w, "retrans_rto_per_req", e->retrans_rto);
	jw_double(w, "retrans_req_share", e->retrans_reqs);
	jw_double(w, "retrans_congestion_req_share", e->retrans_congestion_reqs);
	jw_double(w, "drops_per_req", e->drops);
	jw_double(w, "ecn_ce_per_req", e->ecn_ce);
	jw_double(w, "srtt_us", e->srtt_ns / 1e3);
	jw_double(w, "min_rtt_us", e->min_rtt_ns / 1e3);
	jw_object_end(w);
}

static void js_verdict(struct json_writer *w, const char *key, const struct attr_verdict *v)
{
	jw_object_begin(w, key);
	jw_string(w, "class", attr_verdict_name(v->class));
	jw_string(w, "kind", attr_verdict_kind_name(v->kind));
	jw_string(w, "episodic", attr_verdict_name(v->episodic));
	if (v->has_part) {
		jw_string(w, "stage", attr_part_info(v->part)->stage);
		jw_string(w, "stage_class", stage_class(v->part));
	} else {
		jw_null(w, "stage");
		jw_null(w, "stage_class");
	}
	if (v->where[0])
		jw_string(w, "where", v->where);
	else
		jw_null(w, "where");
	jw_string(w, "summary", v->summary);
	jw_string(w, "rule", v->rule);
	jw_object_end(w);
}

/* The group's mean request as floor + work + waiting per class + unseen. */
static void js_budget(struct json_writer *w, const struct attr_budget *b)
{
	jw_object_begin(w, "split");
	jw_double(w, "floor_us", b->floor_ns / 1e3);
	jw_double(w, "work_us", b->work_ns / 1e3);
	jw_object_begin(w, "waiting_us");
	for (int c = 0; c < ATTR_CLASSES; c++)
		jw_double(w, attr_class_name(c), b->wait_ns[c] / 1e3);
	jw_object_end(w);
	jw_double(w, "unseen_us", b->unseen_ns / 1e3);
	jw_object_end(w);
}

static void js_chronic(struct json_writer *w, const struct attr_report *r)
{
	const struct attr_chronic *c = &r->chronic;

	jw_object_begin(w, "floor");
	if (r->floor.known) {
		jw_double(w, "rtt_us", r->floor.rtt_ns / 1e3);
		jw_double(w, "flows_min_rtt_us", r->floor.own_min_ns / 1e3);
	} else {
		jw_null(w, "rtt_us");
		jw_null(w, "flows_min_rtt_us");
	}
	jw_uint(w, "requests", r->floor.reqs);
	jw_string(w, "source", r->floor.source);
	jw_object_end(w);
	jw_object_begin(w, "chronic");
	jw_bool(w, "found", c->found);
	jw_string(w, "class", attr_class_name(c->class));
	if (c->has_part)
		jw_string(w, "stage", attr_part_info(c->part)->stage);
	else
		jw_null(w, "stage");
	if (c->where[0])
		jw_string(w, "where", c->where);
	else
		jw_null(w, "where");
	jw_double(w, "wait_us", c->wait_ns / 1e3);
	jw_double(w, "tail_wait_us", c->tail_wait_ns / 1e3);
	jw_double(w, "median_wait_us", c->median_wait_ns / 1e3);
	jw_double(w, "stage_median_us", c->part_median_ns / 1e3);
	jw_string(w, "rule", c->rule);
	jw_string(w, "evidence", c->evidence);
	jw_object_end(w);
}

static void js_tail(struct json_writer *w, const char *key, const struct attr_group *g,
		    bool with_verdict)
{
	jw_object_begin(w, key);
	jw_double(w, "quantile", g->quantile);
	jw_double(w, "threshold_us", (double)g->lo_ns / 1e3);
	jw_uint(w, "count", g->count);
	jw_double(w, "mean_us", g->mean_ns / 1e3);
	jw_double(w, "excess_us", g->excess_ns / 1e3);
	jw_double(w, "ratio", g->ratio);
	js_classes(w, "shares", g->shares);
	js_classes(w, "excess_shares", g->excess_shares);
	/* where in the request the excess is (streamed responses) */
	jw_double(w, "ttft_mean_us", g->ttft_mean_ns / 1e3);
	jw_double(w, "first_token_share", g->first_token_share);
	jw_bool(w, "streamed", g->streamed);
	jw_array_begin(w, "stages");
	for (int i = 0; i < g->nstages; i++) {
		const struct attr_stage_line *l = &g->stages[i];

		jw_object_begin(w, NULL);
		jw_string(w, "stage", attr_part_info(l->part)->stage);
		jw_string(w, "class", stage_class(l->part));
		jw_double(w, "share", l->share);
		jw_double(w, "excess_share", l->excess_share);
		jw_double(w, "mean_us", l->mean_ns / 1e3);
		jw_double(w, "median_mean_us", l->median_mean_ns / 1e3);
		if (l->nplaces)
			jw_string(w, "where", l->places[0].where);
		else
			jw_null(w, "where");
		jw_array_begin(w, "places");
		for (int j = 0; j < l->nplaces; j++) {
			jw_object_begin(w, NULL);
			jw_string(w, "where", l->places[j].where);
			jw_double(w, "share", l->places[j].share);
			jw_object_end(w);
		}
		jw_array_end(w);
		jw_object_end(w);
	}
	jw_array_end(w);
	js_evidence(w, &g->ev);
	js_budget(w, &g->budget);
	if (with_verdict)
		js_verdict(w, "verdict", &g->verdict);
	jw_object_end(w);
}

void attr_report__print_json(const struct attr_report *r, struct json_writer *w)
{
	const struct attr_params *p = &r->params;

	jw_double(w, "duration_s", r->duration_s);
	jw_uint(w, "requests", r->requests);
	jw_string(w, "role", r->requests ? role_name(r) : "none");
	jw_object_begin(w, "roles");
	jw_uint(w, "server", r->server_reqs);
	jw_uint(w, "client", r->client_reqs);
	jw_string(w, "rule", r->role_rule);
	if (r->has_other)
		js_verdict(w, "other", &r->other);
	else
		jw_null(w, "other");
	jw_object_end(w);
	js_quantiles(w, "latency_us", &r->latency);
	js_quantiles(w, "ttft_us", &r->ttft);
	js_quantiles(w, "gap_us", &r->gap);
	js_quantiles(w, "inter_token_us", &r->itl);
	js_quantiles(w, "tpot_us", &r->tpot);
	js_framing(w, r);
	/* requests in flight together on one connection: the figures above are exchanges */
	jw_object_begin(w, "overlap");
	jw_uint(w, "requests", r->overlap_reqs);
	jw_double(w, "share", r->requests ? (double)r->overlap_reqs / (double)r->requests : 0);
	jw_bool(w, "figures_are_exchanges", r->overlap_reqs > 0);
	jw_object_end(w);
	js_tail(w, "tail", &r->tail, false);
	if (r->has_p999)
		js_tail(w, "p999", &r->p999, true);
	else
		jw_null(w, "p999");
	jw_object_begin(w, "median");
	jw_double(w, "low_us", (double)r->median.lo_ns / 1e3);
	jw_double(w, "high_us", (double)r->median.hi_ns / 1e3);
	jw_uint(w, "count", r->median.count);
	jw_double(w, "mean_us", r->median.mean_ns / 1e3);
	js_classes(w, "shares", r->median.shares);
	js_evidence(w, &r->median.ev);
	js_budget(w, &r->median.budget);
	jw_object_end(w);
	js_verdict(w, "verdict", &r->tail.verdict);
	js_chronic(w, r);
	jw_object_begin(w, "attribution");
	jw_uint(w, "places_unstored", r->places_unstored);
	jw_double(w, "places_unstored_ms", (double)r->places_unstored_ns / 1e6);
	jw_object_begin(w, "thresholds");
	jw_uint(w, "min_requests", p->min_requests);
	jw_double(w, "min_excess_us", (double)p->min_excess_ns / 1e3);
	jw_double(w, "min_ratio", p->min_ratio);
	jw_double(w, "majority", p->majority);
	jw_double(w, "plurality", p->plurality);
	jw_double(w, "plurality_lead", p->plurality_lead);
	jw_uint(w, "p999_min_requests", p->p999_min_requests);
	jw_double(w, "chronic_min_wait_us", (double)p->chronic_min_wait_ns / 1e3);
	jw_double(w, "chronic_min_share", p->chronic_min_share);
	jw_object_end(w);
	jw_object_end(w);
}
