// SPDX-License-Identifier: GPL-2.0
/* The mergeable aggregate of request splits: per side (server, client), latency
 * histograms and per latency bucket the sums of each part and of the flow evidence, plus
 * the place table (attr_place.c). Merging two aggregates equals adding both populations. */
#include <stdlib.h>
#include <string.h>
#include "attr/attr_int.h"

static void *agg_create(void)
{
	return attr_agg__new();
}

static void agg_merge(void *dst, const void *src)
{
	attr_agg__merge(dst, src);
}

static void agg_destroy(void *a)
{
	attr_agg__free(a);
}

static const struct snapshot_agg_ops agg_ops = {
	.create = agg_create,
	.merge = agg_merge,
	.destroy = agg_destroy,
};

struct attr_agg *attr_agg__new(void)
{
	struct attr_agg *a = calloc(1, sizeof(*a));

	if (a)
		a->base.ops = &agg_ops;
	return a;
}

void attr_agg__free(struct attr_agg *a)
{
	if (!a)
		return;
	free(a->places);
	free(a->index);
	free(a->memo);
	free(a);
}

__u64 attr_agg__requests(const struct attr_agg *a)
{
	return a ? a->side[SIDE_SERVER].lat.count + a->side[SIDE_CLIENT].lat.count : 0;
}

/* The request's own evidence, summed in its latency bucket. */
static void bucket_add(struct attr_bucket *b, const struct req_event *ev,
		       const struct attr_split *s)
{
	b->v[F_COUNT]++;
	b->v[F_LAT] += s->latency_ns;
	if (s->ttft_ns) {
		b->v[F_TTFT] += s->ttft_ns;
		b->v[F_TTFT_REQS]++;
	}
	b->v[F_RETRANS] += ev->retrans;
	b->v[F_RETRANS_RTO] += ev->retrans_rto;
	b->v[F_DROPS] += ev->drops;
	b->v[F_ECN_CE] += ev->ecn_ce;
	if (ev->retrans || ev->stage_ns[STAGE_TCP_RETRANS]) {
		b->v[F_RETRANS_REQS]++;
		b->v[F_RETRANS_CONG_REQS] += s->retrans_congestion;
	}
	if (ev->srtt_ns) {
		b->v[F_SRTT] += ev->srtt_ns;
		b->v[F_MIN_RTT] += ev->min_rtt_ns ? ev->min_rtt_ns : ev->srtt_ns;
		b->v[F_RTT_REQS]++;
	}
	if (ev->flags & REQ_F_PARTIAL) {
		b->v[F_PARTIAL_REQS]++;
		b->v[F_PARTIAL_LAT] += s->latency_ns;
		return;
	}
	for (int p = 0; p < ATTR_PARTS; p++)
		b->v[F_PARTS + p] += s->part_ns[p];
}

void attr_agg__add(struct attr_agg *a, const struct req_event *ev)
{
	struct attr_split s;
	struct attr_side *sd;
	struct attr_bucket *b;
	__u32 slot;

	/* the bucket is known from the latency alone: ask for its lines before the split */
	slot = hist_slot(ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0);
	sd = &a->side[ev->role == ROLE_CLIENT ? SIDE_CLIENT : SIDE_SERVER];
	b = &sd->b[slot];
	for (size_t off = 0; off < sizeof(*b); off += 64)
		__builtin_prefetch((const char *)b + off, 1);
	attr_split_request_base(ev, attr_floor_note(a, ev), &s);
	hist_record(&sd->lat, s.latency_ns);
	if (s.ttft_ns)
		hist_record(&sd->ttft, s.ttft_ns);
	if (ev->chunks > 1) {
		hist_record(&sd->gap, ev->max_gap_ns);
		/* time per output token: the response after its first token, per token */
		if (ev->end_ns > ev->first_resp_ns && ev->first_resp_ns)
			hist_record(&sd->tpot, (ev->end_ns - ev->first_resp_ns) / (ev->chunks - 1));
	}
	if (ev->flags & REQ_F_STREAM) {
		sd->stream_reqs++;
		sd->stream_tokens += ev->chunks;
	}
	sd->proto_reqs[ev->proto < PROTO__MAX ? ev->proto : PROTO_UNKNOWN]++;
	bucket_add(b, ev, &s);
	sd->overlap_reqs += !!(ev->flags & REQ_F_OVERLAP);
	if (!(ev->flags & REQ_F_PARTIAL))
		attr_places_record(a, ev, &s, slot >> ATTR_BAND_SHIFT);
}

void attr_agg__merge(struct attr_agg *dst, const struct attr_agg *src)
{
	for (int d = 0; d < SIDES; d++) {
		struct attr_side *ds = &dst->side[d];
		const struct attr_side *ss = &src->side[d];

		hist_add(&ds->lat, &ss->lat);
		hist_add(&ds->ttft, &ss->ttft);
		hist_add(&ds->gap, &ss->gap);
		hist_add(&ds->tpot, &ss->tpot);
		ds->overlap_reqs += ss->overlap_reqs;
		ds->stream_reqs += ss->stream_reqs;
		ds->stream_tokens += ss->stream_tokens;
		for (int p = 0; p < PROTO__MAX; p++)
			ds->proto_reqs[p] += ss->proto_reqs[p];
		for (__u32 i = 0; i < HIST_SLOTS; i++)
			for (int f = 0; f < ATTR_FIELDS; f++)
				ds->b[i].v[f] += ss->b[i].v[f];
	}
	for (size_t i = 0; i < src->nplaces; i++)
		attr_place_add(dst, &src->places[i].key,
			       (__u32)attr_place_key_hash(&src->places[i].key), src->places[i].ns,
			       src->places[i].count);
	dst->places_unstored += src->places_unstored;
	dst->places_unstored_ns += src->places_unstored_ns;
	attr_floor_merge(dst, src);
}

bool attr_agg__equal(const struct attr_agg *a, const struct attr_agg *b)
{
	if (memcmp(a->side, b->side, sizeof(a->side)))
		return false;
	if (a->nplaces != b->nplaces || a->places_unstored != b->places_unstored ||
	    a->places_unstored_ns != b->places_unstored_ns)
		return false;
	for (size_t i = 0; i < a->nplaces; i++) {
		const struct attr_place *e = &a->places[i], *o = attr_place_find(b, &e->key);

		if (!o || o->count != e->count || o->ns != e->ns)
			return false;
	}
	return attr_floor_equal(a, b);
}
