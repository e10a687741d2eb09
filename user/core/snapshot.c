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

void snapshot__add_prog(struct snapshot *s, const char *name, __u64 runs, __u64 run_ns)
{
	size_t i;

	for (i = 0; i < s->nprogs; i++)
		if (!strncmp(s->progs[i].name, name, SNAP_PROG_NAME - 1))
			break;
	if (i == s->nprogs) {
		if (s->nprogs == SNAP_PROGS_MAX)
			return;
		memset(&s->progs[i], 0, sizeof(s->progs[i]));
		strncpy(s->progs[i].name, name, SNAP_PROG_NAME - 1);
		s->nprogs++;
	}
	s->progs[i].runs += runs;
	s->progs[i].run_ns += run_ns;
}

double prog_runs_per_s(const struct snap_prog *p, double seconds)
{
	return seconds > 0 ? (double)p->runs / seconds : 0;
}

double prog_ns_per_run(const struct snap_prog *p)
{
	return p->runs ? (double)p->run_ns / (double)p->runs : 0;
}

__u64 snap_prog_time_ns(const struct snapshot *s)
{
	__u64 t = 0;

	for (size_t i = 0; i < s->nprogs; i++)
		t += s->progs[i].run_ns;
	return t;
}

double snapshot__sample_rate(const struct snapshot *s)
{
	return s->sample_rate > 0 && s->sample_rate < 1 ? s->sample_rate : 1;
}

/* A window of intervals states the lowest rate any of them ran at and the largest error. */
static void merge_sampling(struct snapshot *dst, const struct snapshot *src)
{
	if (src->sample_rate > 0 && (dst->sample_rate <= 0 || src->sample_rate < dst->sample_rate))
		dst->sample_rate = src->sample_rate;
	if (src->p99_error > dst->p99_error)
		dst->p99_error = src->p99_error;
	if (src->budget_pct > dst->budget_pct)
		dst->budget_pct = src->budget_pct;
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
	for (size_t i = 0; i < src->nprogs; i++)
		snapshot__add_prog(dst, src->progs[i].name, src->progs[i].runs,
				   src->progs[i].run_ns);
	merge_sampling(dst, src);
	if (src->attr) {
		if (!dst->attr && !(dst->attr = attr_agg__new()))
			return -ENOMEM;
		attr_agg__merge(dst->attr, src->attr);
	}
	return 0;
}
