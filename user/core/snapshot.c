// SPDX-License-Identifier: GPL-2.0
/* Snapshot containers and merging: every aggregate here is mergeable by addition. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/snapshot.h"
#include "core/histogram.h"
#include "attr/attribution.h"
#include "lib/util.h"

void snapshot__init(struct snapshot *s)
{
	memset(s, 0, sizeof(*s));
}

void snapshot__free(struct snapshot *s)
{
	free(s->hists);
	free(s->devs);
	free(s->slow_reqs);
	free(s->napi);
	free(s->softnet);
	attr_agg__free(s->attr);
	memset(s, 0, sizeof(*s));
}

int snapshot__add_hist(struct snapshot *s, const struct hist_key *key, const struct hist *h)
{
	for (size_t i = 0; i < s->nhists; i++) {
		if (!memcmp(&s->hists[i].key, key, sizeof(*key))) {
			hist_add(&s->hists[i].h, h);
			return 0;
		}
	}
	if (ARRAY_RESERVE(s->hists, s->hists_cap, s->nhists + 1))
		return -ENOMEM;
	s->hists[s->nhists].key = *key;
	s->hists[s->nhists].h = *h;
	s->nhists++;
	return 0;
}

int snapshot__add_napi(struct snapshot *s, const struct napi_key *key, const struct napi_count *c)
{
	struct snap_napi *n = NULL;

	for (size_t i = 0; i < s->nnapi && !n; i++)
		if (!memcmp(&s->napi[i].key, key, sizeof(*key)))
			n = &s->napi[i];
	if (!n) {
		if (ARRAY_RESERVE(s->napi, s->napi_cap, s->nnapi + 1))
			return -ENOMEM;
		n = &s->napi[s->nnapi++];
		memset(n, 0, sizeof(*n));
		n->key = *key;
	}
	n->c.polls += c->polls;
	n->c.exhausted += c->exhausted;
	n->c.work += c->work;
	return 0;
}

int snapshot__add_softnet(struct snapshot *s, const struct snap_softnet *row)
{
	struct snap_softnet *r = NULL;

	for (size_t i = 0; i < s->nsoftnet && !r; i++)
		if (s->softnet[i].cpu == row->cpu)
			r = &s->softnet[i];
	if (!r) {
		if (ARRAY_RESERVE(s->softnet, s->softnet_cap, s->nsoftnet + 1))
			return -ENOMEM;
		r = &s->softnet[s->nsoftnet++];
		memset(r, 0, sizeof(*r));
		r->cpu = row->cpu;
	}
	r->processed += row->processed;
	r->dropped += row->dropped;
	r->time_squeeze += row->time_squeeze;
	r->received_rps += row->received_rps;
	r->flow_limit += row->flow_limit;
	return 0;
}

int snapshot__add_dev(struct snapshot *s, const struct dev_key *key, const char *name)
{
	for (size_t i = 0; i < s->ndevs; i++)
		if (s->devs[i].key.netns == key->netns && s->devs[i].key.ifindex == key->ifindex)
			return 0;
	if (ARRAY_RESERVE(s->devs, s->devs_cap, s->ndevs + 1))
		return -ENOMEM;
	s->devs[s->ndevs].key = *key;
	memset(s->devs[s->ndevs].name, 0, sizeof(s->devs[s->ndevs].name));
	strncpy(s->devs[s->ndevs].name, name, sizeof(s->devs[s->ndevs].name) - 1);
	s->ndevs++;
	return 0;
}

const char *snapshot__dev_name(const struct snapshot *s, __u32 netns, __u32 ifindex)
{
	for (size_t i = 0; i < s->ndevs; i++)
		if (s->devs[i].key.ifindex == ifindex && (!netns || s->devs[i].key.netns == netns))
			return s->devs[i].name;
	return NULL;
}

int snapshot__merge(struct snapshot *dst, const struct snapshot *src)
{
	int err;

	if (!dst->start_ns || (src->start_ns && src->start_ns < dst->start_ns))
		dst->start_ns = src->start_ns;
	if (src->end_ns > dst->end_ns)
		dst->end_ns = src->end_ns;
	for (size_t i = 0; i < src->nhists; i++)
		if ((err = snapshot__add_hist(dst, &src->hists[i].key, &src->hists[i].h)))
			return err;
	for (size_t i = 0; i < src->ndevs; i++)
		if ((err = snapshot__add_dev(dst, &src->devs[i].key, src->devs[i].name)))
			return err;
	for (size_t i = 0; i < src->nnapi; i++)
		if ((err = snapshot__add_napi(dst, &src->napi[i].key, &src->napi[i].c)))
			return err;
	for (size_t i = 0; i < src->nsoftnet; i++)
		if ((err = snapshot__add_softnet(dst, &src->softnet[i])))
			return err;
	for (int i = 0; i < CNT__MAX; i++)
		dst->counters[i] += src->counters[i];
	for (int i = 0; i < TT_DROP_REASONS; i++)
		dst->drop_reasons[i] += src->drop_reasons[i];
	dst->hist_evicted += src->hist_evicted;
	if (src->hist_live > dst->hist_live)
		dst->hist_live = src->hist_live;
	dst->events_lost += src->events_lost;
	dst->pkt_unmatched += src->pkt_unmatched;
	for (size_t i = 0; i < src->nslow; i++) {
		if (ARRAY_RESERVE(dst->slow_reqs, dst->slow_cap, dst->nslow + 1))
			return -ENOMEM;
		dst->slow_reqs[dst->nslow++] = src->slow_reqs[i];
	}
	dst->slow_cut += src->slow_cut;
	if (src->slow_threshold_ns > dst->slow_threshold_ns)
		dst->slow_threshold_ns = src->slow_threshold_ns;
	dst->self_cpu_s += src->self_cpu_s;
	if (src->self_rss_kb > dst->self_rss_kb)
		dst->self_rss_kb = src->self_rss_kb;
	if (src->attr) {
		if (!dst->attr && !(dst->attr = attr_agg__new()))
			return -ENOMEM;
		attr_agg__merge(dst->attr, src->attr);
	}
	return 0;
}
