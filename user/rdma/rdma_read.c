// SPDX-License-Identifier: GPL-2.0
/* The RDMA tracer's reading side: per-CPU maps into interval histograms (rows with their
 * QP facts for `tailtrace rdma`, or snapshot entries), counters, and the sweep of stale
 * in-flight work requests. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "rdma/rdma_tracer_int.h"
#include "rdma.skel.h"
#include "core/histogram.h"
#include "lib/clock.h"

/* dst = cur - prev (both cumulative). max is exact when it moved, else bounded by the
 * highest bucket that gained values. */
static void hist_delta(struct hist *dst, const struct hist *cur, const struct hist *prev)
{
	int top = -1;

	memset(dst, 0, sizeof(*dst));
	for (int i = 0; i < (int)HIST_SLOTS; i++) {
		dst->slots[i] = cur->slots[i] - (prev ? prev->slots[i] : 0);
		if (dst->slots[i])
			top = i;
	}
	dst->count = cur->count - (prev ? prev->count : 0);
	dst->sum_ns = cur->sum_ns - (prev ? prev->sum_ns : 0);
	if (!prev || cur->max_ns != prev->max_ns) {
		dst->max_ns = cur->max_ns;
	} else if (top >= 0) {
		__u64 hi = hist_slot_hi((__u32)top) - 1;

		dst->max_ns = hi < cur->max_ns ? hi : cur->max_ns;
	}
}

static struct prev_hist *prev_find(struct prev_set *p, const struct rdma_hist_key *k)
{
	for (size_t i = 0; i < p->n; i++)
		if (!memcmp(&p->v[i].key, k, sizeof(*k)))
			return &p->v[i];
	return NULL;
}

static int prev_put(struct prev_set *p, const struct rdma_hist_key *k, const struct hist *h)
{
	struct prev_hist *e = prev_find(p, k);

	if (!e) {
		if (p->n == p->cap) {
			size_t ncap = p->cap ? p->cap * 2 : 32;
			struct prev_hist *n = realloc(p->v, ncap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			p->v = n;
			p->cap = ncap;
		}
		e = &p->v[p->n++];
		e->key = *k;
	}
	e->h = *h;
	return 0;
}

typedef int (*row_fn)(void *arg, const struct rdma_hist_key *k, const struct hist *win,
		      const struct hist *total);

static int walk_hists(struct rdma_tracer *t, struct prev_set *p, row_fn fn, void *arg, __u64 *live)
{
	int fd = bpf_map__fd(t->skel->maps.hists);
	struct rdma_hist_key k, next;
	struct hist total, win;
	void *key = NULL;
	int err = 0;

	*live = 0;
	while (!bpf_map_get_next_key(fd, key, &next)) {
		k = next;
		key = &k;
		if (bpf_map_lookup_elem(fd, &k, &total))
			continue;
		(*live)++;
		{
			struct prev_hist *ph = prev_find(p, &k);

			hist_delta(&win, &total, ph ? &ph->h : NULL);
		}
		if ((err = prev_put(p, &k, &total)))
			break;
		if ((err = fn(arg, &k, &win, &total)))
			break;
	}
	return err;
}

static void read_counters(struct rdma_tracer *t, __u64 *out)
{
	int fd = bpf_map__fd(t->skel->maps.counters);
	__u64 *v = calloc((size_t)t->ncpus, sizeof(__u64));

	memset(out, 0, sizeof(__u64) * RC__MAX);
	if (!v)
		return;
	for (__u32 i = 0; i < RC__MAX; i++) {
		if (bpf_map_lookup_elem(fd, &i, v))
			continue;
		for (int c = 0; c < t->ncpus; c++)
			out[i] += v[c];
	}
	free(v);
}

/* Removes the (queue, wr_id) states whose newest occurrence is no longer in flight (swept,
 * evicted): all older ones are gone too, and an application with a new wr_id per WR would
 * otherwise fill the map with states of WRs whose completions fell between windows. */
static void sweep_wrseq(struct rdma_tracer *t)
{
	int fd = bpf_map__fd(t->skel->maps.wrseq), ifd = bpf_map__fd(t->skel->maps.inflight);
	struct rdma_wrid_key k, next, *key = NULL, gone;
	struct rdma_wr_seq s;
	struct rdma_wr_key wk;
	struct rdma_wr_val v;
	bool have_gone = false;

	while (!bpf_map_get_next_key(fd, key, &next)) {
		if (have_gone)
			bpf_map_delete_elem(fd, &gone);
		have_gone = false;
		k = next;
		key = &k;
		if (bpf_map_lookup_elem(fd, &k, &s) || s.head == s.tail)
			continue;
		memset(&wk, 0, sizeof(wk));
		wk.id = k;
		wk.seq = s.tail - 1;
		if (bpf_map_lookup_elem(ifd, &wk, &v)) {
			gone = k;
			have_gone = true;
		}
	}
	if (have_gone)
		bpf_map_delete_elem(fd, &gone);
}

/* An in-flight entry that no completion can match any more: the BPF side learnt that its
 * WR completed while the poll side was not watched (it is older than its state's head),
 * or its (queue, wr_id) state is gone. */
static bool known_complete(struct rdma_tracer *t, const struct rdma_wr_key *k)
{
	struct rdma_wr_seq s;

	if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.wrseq), &k->id, &s))
		return true;
	return (__s32)(k->seq - s.head) < 0;
}

/* Counts live in-flight entries, removes those known complete (counted as retired) and
 * those older than RDMA_STALE_NS (aged). */
static __u64 sweep_inflight(struct rdma_tracer *t)
{
	int fd = bpf_map__fd(t->skel->maps.inflight);
	struct rdma_wr_key k, next, *key = NULL;
	__u64 now = mono_ns(), live = 0;
	struct rdma_wr_val v;
	bool have_stale = false, stale_done = false;
	struct rdma_wr_key stale;

	while (!bpf_map_get_next_key(fd, key, &next)) {
		/* delete the previous stale key only after stepping past it */
		if (have_stale && !bpf_map_delete_elem(fd, &stale))
			stale_done ? t->retired++ : t->aged++;
		stale_done = false;
		have_stale = false;
		k = next;
		key = &k;
		if (bpf_map_lookup_elem(fd, &k, &v))
			continue;
		if (known_complete(t, &k)) {
			stale = k;
			have_stale = true;
			stale_done = true;
			continue;
		}
		if (now > v.post_ns && now - v.post_ns > RDMA_STALE_NS) {
			stale = k;
			have_stale = true;
		} else {
			live++;
		}
	}
	if (have_stale && !bpf_map_delete_elem(fd, &stale))
		stale_done ? t->retired++ : t->aged++;
	sweep_wrseq(t);
	return live;
}

struct read_ctx {
	struct rdma_tracer *t;
	struct rdma_read *r;
	size_t cap;
};

static int add_row(void *arg, const struct rdma_hist_key *k, const struct hist *win,
		   const struct hist *total)
{
	struct read_ctx *c = arg;
	struct rdma_qp_key qk = { 0 };
	struct rdma_row *row;

	if (c->r->nrows == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 16;
		struct rdma_row *n = realloc(c->r->rows, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		c->r->rows = n;
		c->cap = ncap;
	}
	row = &c->r->rows[c->r->nrows++];
	memset(row, 0, sizeof(*row));
	row->key = *k;
	row->win = *win;
	row->total = *total;
	if (k->stage == STAGE_RDMA_WR) {
		/* the QP map is keyed by context too: scan for tgid + qpn */
		int fd = bpf_map__fd(c->t->skel->maps.qps);
		struct rdma_qp_key *kp = NULL, nk;

		while (!bpf_map_get_next_key(fd, kp, &nk)) {
			qk = nk;
			kp = &qk;
			if (nk.tgid == k->tgid && nk.qpn == k->qpn &&
			    !bpf_map_lookup_elem(fd, &nk, &row->qp)) {
				row->qp_known = true;
				break;
			}
		}
	}
	return 0;
}

int rdma_tracer__read(struct rdma_tracer *t, struct rdma_read *r)
{
	struct read_ctx c = { t, r, 0 };
	__u64 cnt[RC__MAX];
	int err;

	free(r->rows);
	memset(r, 0, sizeof(*r));
	err = walk_hists(t, &t->for_read, add_row, &c, &r->hist_live);
	if (err)
		return err;
	read_counters(t, cnt);
	for (int i = 0; i < RC__MAX; i++) {
		r->cnt[i] = cnt[i];
		r->cnt_win[i] = cnt[i] - t->for_read.cnt[i];
		t->for_read.cnt[i] = cnt[i];
	}
	r->inflight_live = sweep_inflight(t);
	r->inflight_aged = t->aged;
	r->post_attached_ns = t->skel->bss->post_attached_ns;
	{
		__u64 gone = cnt[RC_INFLIGHT_DELETES] + cnt[RC_INFLIGHT_RETIRED] + t->retired +
			     t->aged + r->inflight_live;

		r->inflight_evicted =
			cnt[RC_INFLIGHT_INSERTS] > gone ? cnt[RC_INFLIGHT_INSERTS] - gone : 0;
	}
	return 0;
}

void rdma_read__free(struct rdma_read *r)
{
	free(r->rows);
	memset(r, 0, sizeof(*r));
}

static int snap_row(void *arg, const struct rdma_hist_key *k, const struct hist *win,
		    const struct hist *total)
{
	struct snapshot *s = arg;
	struct hist_key hk;

	(void)total;
	if (!win->count)
		return 0;
	memset(&hk, 0, sizeof(hk));
	hk.stage = k->stage;
	hk.by = GROUP_NONE;
	hk.tgid = k->tgid;
	hk.id = RDMA_SNAP_ID(k->qpn, k->opcode, k->status, k->peer_qpn);
	return snapshot__add_hist(s, &hk, win);
}

int rdma_tracer__collect(struct rdma_tracer *t, struct snapshot *s)
{
	__u64 live, cnt[RC__MAX];
	int err = walk_hists(t, &t->for_collect, snap_row, s, &live);

	if (err)
		return err;
	read_counters(t, cnt);
	/* what the RDMA maps failed to keep this interval */
	s->hist_evicted += (cnt[RC_HIST_FAIL] - t->for_collect.cnt[RC_HIST_FAIL]) +
			   (cnt[RC_INFLIGHT_FAIL] - t->for_collect.cnt[RC_INFLIGHT_FAIL]);
	memcpy(t->for_collect.cnt, cnt, sizeof(cnt));
	return 0;
}
