// SPDX-License-Identifier: GPL-2.0
/* Path floors: the lowest round trip seen towards each peer over each device, across all
 * flows and the aggregate's whole life. A flow's own min_rtt is no floor when the flow was
 * opened behind a standing queue (measured: 1.4-8.8 ms on a path whose clean round trip is
 * ~10 us), so the client split takes the path's floor as the base RTT and books the rest as
 * inflation (docs/attribution.md §1). */
#include <string.h>
#include "attr/attr_int.h"

static void path_key_of(const struct req_event *ev, struct attr_path_key *k)
{
	memset(k, 0, sizeof(*k));
	k->side = ev->role == ROLE_CLIENT ? SIDE_CLIENT : SIDE_SERVER;
	k->family = ev->family;
	k->netns = ev->netns;
	k->ifindex = ev->ifindex;
	memcpy(k->raddr, ev->raddr, sizeof(k->raddr));
}

/* The path of k, stored when new; NULL when the table is full. */
static struct attr_path *path_get(struct attr_agg *a, const struct attr_path_key *k)
{
	struct attr_path *p;

	if (a->path_memo < a->npaths && !memcmp(&a->paths[a->path_memo].key, k, sizeof(*k)))
		return &a->paths[a->path_memo];
	for (size_t i = 0; i < a->npaths; i++)
		if (!memcmp(&a->paths[i].key, k, sizeof(*k))) {
			a->path_memo = i;
			return &a->paths[i];
		}
	if (a->npaths >= ATTR_PATHS_MAX)
		return NULL;
	p = &a->paths[a->npaths];
	memset(p, 0, sizeof(*p));
	p->key = *k;
	a->path_memo = a->npaths++;
	return p;
}

__u64 attr_floor_note(struct attr_agg *a, const struct req_event *ev)
{
	__u64 own = ev->min_rtt_ns ? ev->min_rtt_ns : ev->srtt_ns;
	struct attr_path_key k;
	struct attr_path *p;

	if (!own)
		return 0;
	path_key_of(ev, &k);
	p = path_get(a, &k);
	if (!p) {
		a->paths_unstored++;
		return own;
	}
	if (!p->min_rtt_ns || own < p->min_rtt_ns) {
		p->min_rtt_ns = own;
		p->lport = ev->lport;
		p->rport = ev->rport;
	}
	p->reqs++;
	p->own_min_sum_ns += own;
	return p->min_rtt_ns;
}

void attr_floor_merge(struct attr_agg *dst, const struct attr_agg *src)
{
	for (size_t i = 0; i < src->npaths; i++) {
		const struct attr_path *s = &src->paths[i];
		struct attr_path *d = path_get(dst, &s->key);

		if (!d) {
			dst->paths_unstored += s->reqs;
			continue;
		}
		if (!d->min_rtt_ns || (s->min_rtt_ns && s->min_rtt_ns < d->min_rtt_ns)) {
			d->min_rtt_ns = s->min_rtt_ns;
			d->lport = s->lport;
			d->rport = s->rport;
		}
		d->reqs += s->reqs;
		d->own_min_sum_ns += s->own_min_sum_ns;
	}
	dst->paths_unstored += src->paths_unstored;
}

const struct attr_path *attr_floor_top(const struct attr_agg *a, int side)
{
	const struct attr_path *top = NULL;

	for (size_t i = 0; i < a->npaths; i++)
		if (a->paths[i].key.side == side && (!top || a->paths[i].reqs > top->reqs))
			top = &a->paths[i];
	return top;
}

bool attr_floor_equal(const struct attr_agg *a, const struct attr_agg *b)
{
	if (a->npaths != b->npaths || a->paths_unstored != b->paths_unstored)
		return false;
	for (size_t i = 0; i < a->npaths; i++) {
		const struct attr_path *p = &a->paths[i];
		size_t j = 0;

		while (j < b->npaths && memcmp(&b->paths[j].key, &p->key, sizeof(p->key)))
			j++;
		if (j == b->npaths || b->paths[j].min_rtt_ns != p->min_rtt_ns ||
		    b->paths[j].reqs != p->reqs || b->paths[j].own_min_sum_ns != p->own_min_sum_ns)
			return false;
	}
	return true;
}
