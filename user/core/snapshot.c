// SPDX-License-Identifier: GPL-2.0
/* Snapshot containers and merging: every aggregate here is mergeable by addition. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include "core/snapshot.h"
#include "core/histogram.h"
#include "core/stages.h"
#include "lib/util.h"

void snapshot__init(struct snapshot *s)
{
	memset(s, 0, sizeof(*s));
}

/* An open-addressing hash index over the first n entries of an array whose elements start
 * with their key: slot[] holds positions + 1 (0 = empty), at most half full. The seed is
 * per index and random, so a crafted input cannot pick keys that all collide. */
struct snap_index {
	size_t *slot;
	size_t mask; /* slots - 1 */
	size_t n;    /* entries indexed */
	__u64 seed;
};

#define NOT_FOUND ((size_t)-1)

static __u64 index_seed(void)
{
	static __u64 counter;
	__u64 seed;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
		seed = (__u64)time(NULL) ^ (__u64)(uintptr_t)&seed;
	return seed ^ __atomic_add_fetch(&counter, 0x9e3779b97f4a7c15ULL, __ATOMIC_RELAXED);
}

static size_t key_hash(const struct snap_index *x, const void *key, size_t klen)
{
	const __u8 *p = key;
	__u64 h = x->seed;

	for (size_t off = 0; off < klen; off += 8) {
		__u64 w = 0;

		memcpy(&w, p + off, klen - off < 8 ? klen - off : 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	h ^= h >> 32;
	return (size_t)h;
}

/* Position of key in base[], or NOT_FOUND. */
static size_t index_find(const struct snap_index *x, const void *base, size_t elem, const void *key,
			 size_t klen)
{
	for (size_t i = key_hash(x, key, klen) & x->mask;; i = (i + 1) & x->mask) {
		size_t pos = x->slot[i];

		if (!pos)
			return NOT_FOUND;
		if (!memcmp((const char *)base + (pos - 1) * elem, key, klen))
			return pos - 1;
	}
}

static void index_put(struct snap_index *x, const void *base, size_t elem, size_t klen, size_t pos)
{
	size_t i = key_hash(x, (const char *)base + pos * elem, klen) & x->mask;

	while (x->slot[i])
		i = (i + 1) & x->mask;
	x->slot[i] = pos + 1;
}

/* Makes *px index base[0, n): created, grown or rebuilt as needed. 0 or -ENOMEM. */
static int index_sync(struct snap_index **px, const void *base, size_t elem, size_t klen, size_t n)
{
	struct snap_index *x = *px;
	size_t want = 16;

	if (!x) {
		x = calloc(1, sizeof(*x));
		if (!x)
			return -ENOMEM;
		x->seed = index_seed();
		*px = x;
	}
	while (want < 2 * n)
		want *= 2;
	if (!x->slot || want > x->mask + 1 || x->n > n) {
		size_t *slot = calloc(want, sizeof(*slot));

		if (!slot)
			return -ENOMEM;
		free(x->slot);
		x->slot = slot;
		x->mask = want - 1;
		x->n = 0;
	}
	for (; x->n < n; x->n++)
		index_put(x, base, elem, klen, x->n);
	return 0;
}

static void index_free(struct snap_index *x)
{
	if (x)
		free(x->slot);
	free(x);
}

void snapshot__free(struct snapshot *s)
{
	free(s->hists);
	free(s->devs);
	free(s->slow_reqs);
	free(s->napi);
	free(s->softnet);
	if (s->attr)
		((struct snapshot_agg *)s->attr)->ops->destroy(s->attr);
	index_free(s->hist_idx);
	index_free(s->dev_idx);
	memset(s, 0, sizeof(*s));
}

_Static_assert(offsetof(struct snap_hist, key) == 0, "the index finds keys at offset 0");
_Static_assert(offsetof(struct snap_dev, key) == 0, "the index finds keys at offset 0");

struct hist *snapshot__hist(struct snapshot *s, const struct hist_key *key)
{
	struct snap_hist *sh;
	size_t pos;

	if (index_sync(&s->hist_idx, s->hists, sizeof(*s->hists), sizeof(*key), s->nhists))
		return NULL;
	pos = index_find(s->hist_idx, s->hists, sizeof(*s->hists), key, sizeof(*key));
	if (pos != NOT_FOUND)
		return &s->hists[pos].h;
	if (ARRAY_RESERVE(s->hists, s->hists_cap, s->nhists + 1))
		return NULL;
	sh = &s->hists[s->nhists++];
	sh->key = *key;
	memset(&sh->h, 0, sizeof(sh->h));
	/* a failure here leaves the entry unindexed; the next call indexes it */
	index_sync(&s->hist_idx, s->hists, sizeof(*s->hists), sizeof(*key), s->nhists);
	return &sh->h;
}

int snapshot__add_hist(struct snapshot *s, const struct hist_key *key, const struct hist *h)
{
	struct hist *dst = snapshot__hist(s, key);

	if (!dst)
		return -ENOMEM;
	hist_add(dst, h);
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
	struct snap_dev *d;
	int err;

	err = index_sync(&s->dev_idx, s->devs, sizeof(*s->devs), sizeof(*key), s->ndevs);
	if (err)
		return err;
	if (index_find(s->dev_idx, s->devs, sizeof(*s->devs), key, sizeof(*key)) != NOT_FOUND)
		return 0;
	if (ARRAY_RESERVE(s->devs, s->devs_cap, s->ndevs + 1))
		return -ENOMEM;
	d = &s->devs[s->ndevs++];
	d->key = *key;
	memset(d->name, 0, sizeof(d->name));
	strncpy(d->name, name, sizeof(d->name) - 1);
	index_sync(&s->dev_idx, s->devs, sizeof(*s->devs), sizeof(*key), s->ndevs);
	return 0;
}

int snapshot__count_new(struct snapshot *dst, const struct snapshot *src, size_t *hists,
			size_t *devs)
{
	const size_t hk = sizeof(struct hist_key), dk = sizeof(struct dev_key);

	*hists = *devs = 0;
	if (index_sync(&dst->hist_idx, dst->hists, sizeof(*dst->hists), hk, dst->nhists) ||
	    index_sync(&dst->dev_idx, dst->devs, sizeof(*dst->devs), dk, dst->ndevs))
		return -ENOMEM;
	for (size_t i = 0; i < src->nhists; i++)
		*hists += index_find(dst->hist_idx, dst->hists, sizeof(*dst->hists),
				     &src->hists[i].key, hk) == NOT_FOUND;
	for (size_t i = 0; i < src->ndevs; i++)
		*devs += index_find(dst->dev_idx, dst->devs, sizeof(*dst->devs), &src->devs[i].key,
				    dk) == NOT_FOUND;
	return 0;
}

const char *snapshot__dev_name(const struct snapshot *s, __u32 netns, __u32 ifindex)
{
	for (size_t i = 0; i < s->ndevs; i++)
		if (s->devs[i].key.ifindex == ifindex && (!netns || s->devs[i].key.netns == netns))
			return s->devs[i].name;
	return NULL;
}

void snapshot__dev_label(const struct snapshot *s, __u32 netns, __u32 ifindex, char *buf,
			 size_t len)
{
	const char *name = s && ifindex ? snapshot__dev_name(s, netns, ifindex) : NULL;

	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "ifindex %u", ifindex);
}

void qdisc_label(__u32 handle, char *buf, size_t len)
{
	snprintf(buf, len, "%x:%x", handle >> 16, handle & 0xffff);
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

double snapshot__hist_p99_error(const struct snapshot *s, const struct snap_hist *sh)
{
	/* the snapshot does not say whether --dev was given: tx.qdisc and tx.nic keep theirs */
	if (!stage_flow_sampled(sh->key.stage, false))
		return 0;
	return hist_p99_error(&sh->h, snapshot__sample_rate(s));
}

double snapshot__p99_error(const struct snapshot *s, int *stage)
{
	double rate = snapshot__sample_rate(s), worst = 0;
	int which = -1;

	for (size_t i = 0; rate < 1 && i < s->nhists; i++) {
		double e;

		if (!stage_flow_sampled(s->hists[i].key.stage, false) ||
		    (double)s->hists[i].h.count * rate < SNAP_P99_ERROR_MIN_SEEN)
			continue;
		e = snapshot__hist_p99_error(s, &s->hists[i]);
		if (which < 0 || e > worst) {
			worst = e;
			which = (int)s->hists[i].key.stage;
		}
	}
	if (stage)
		*stage = which;
	return worst;
}

/* A window of intervals states the lowest rate any of them ran at; its p99 error comes from
 * its merged histograms (snapshot__p99_error), smaller than any one interval's. */
static void merge_sampling(struct snapshot *dst, const struct snapshot *src)
{
	if (src->sample_rate > 0 && (dst->sample_rate <= 0 || src->sample_rate < dst->sample_rate))
		dst->sample_rate = src->sample_rate;
	if (src->budget_pct > dst->budget_pct)
		dst->budget_pct = src->budget_pct;
	if (src->budget_floor_pct > dst->budget_floor_pct)
		dst->budget_floor_pct = src->budget_floor_pct;
	if (src->deep_duty > dst->deep_duty)
		dst->deep_duty = src->deep_duty;
	if (src->deep_duty_asked > dst->deep_duty_asked)
		dst->deep_duty_asked = src->deep_duty_asked;
	dst->deep_ns += src->deep_ns;
	dst->deep_span_ns += src->deep_span_ns;
	dst->deep_windows += src->deep_windows;
	dst->deep_triggered += src->deep_triggered;
}

int snapshot__merge(struct snapshot *dst, const struct snapshot *src)
{
	int err;

	if (!dst->start_ns || (src->start_ns && src->start_ns < dst->start_ns))
		dst->start_ns = src->start_ns;
	if (src->end_ns > dst->end_ns)
		dst->end_ns = src->end_ns;
	if (!dst->host[0])
		memcpy(dst->host, src->host, sizeof(dst->host));
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
	if (src->nslow) {
		if (ARRAY_RESERVE(dst->slow_reqs, dst->slow_cap, dst->nslow + src->nslow))
			return -ENOMEM;
		memcpy(dst->slow_reqs + dst->nslow, src->slow_reqs,
		       src->nslow * sizeof(*src->slow_reqs));
		dst->nslow += src->nslow;
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
		const struct snapshot_agg_ops *ops = ((const struct snapshot_agg *)src->attr)->ops;

		if (!dst->attr && !(dst->attr = ops->create()))
			return -ENOMEM;
		ops->merge(dst->attr, src->attr);
	}
	return 0;
}
