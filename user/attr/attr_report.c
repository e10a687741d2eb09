// SPDX-License-Identifier: GPL-2.0
/* Rendering of an attribution report as the JSON keys that docs/attribution.md defines
 * (attr_text.c renders the same struct as text). */
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
	jw_uint(w, "split_count", g->split_count);
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
