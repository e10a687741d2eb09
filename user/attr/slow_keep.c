// SPDX-License-Identifier: GPL-2.0
/* Which requests the flight recorder keeps. The threshold is the p99 of the last two
 * intervals, not of everything since start: it follows a service that gets slower or
 * faster, and a burst of slow requests early in a run does not shut the recorder for
 * hours. Within an interval the slowest `cap` requests win (a min-heap: a slower request
 * evicts the fastest kept one); at its end they are filtered again by the final threshold
 * (the first requests of a run are judged once enough are seen) and limited to the
 * interval's p99 group by rank, 1 % of its requests. */
#include "attr/slow_keep.h"

#include <stdlib.h>
#include <string.h>

#define SLOW_REFRESH      64   /* requests between threshold updates, ... */
#define SLOW_REFRESH_BUSY 1024 /* ... once 8192 are seen: 1024 more move the p99 little */
#define SLOW_MIN_SEEN     100  /* fewer: no p99 yet, every request is a candidate */

static __u64 lat_of(const struct req_event *ev)
{
	return ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0;
}

/* Lower bound of the slot holding the p99 of prev + cur: a request in the same slot as
 * the p99 counts as at the p99. */
static __u64 p99_floor(const struct slow_keep *k, __u64 *seen)
{
	struct hist both = k->prev;

	hist_add(&both, &k->cur);
	*seen = both.count;
	if (!both.count)
		return 0;
	return hist_slot_lo(hist_slot(hist_quantile(&both, 0.99)));
}

static void refresh(struct slow_keep *k)
{
	__u64 seen, t = p99_floor(k, &seen);

	k->threshold = seen >= SLOW_MIN_SEEN ? t : 0;
	k->since_refresh = 0;
}

static void sift_down(struct req_event *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct req_event t;

		if (l < n && lat_of(&h[l]) < lat_of(&h[m]))
			m = l;
		if (r < n && lat_of(&h[r]) < lat_of(&h[m]))
			m = r;
		if (m == i)
			return;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void sift_up(struct req_event *h, size_t i)
{
	while (i) {
		size_t p = (i - 1) / 2;
		struct req_event t;

		if (lat_of(&h[p]) <= lat_of(&h[i]))
			return;
		t = h[i];
		h[i] = h[p];
		h[p] = t;
		i = p;
	}
}

int slow_keep__init(struct slow_keep *k, size_t cap)
{
	memset(k, 0, sizeof(*k));
	k->heap = calloc(cap ? cap : 1, sizeof(*k->heap));
	if (!k->heap)
		return -1;
	k->cap = cap;
	return 0;
}

void slow_keep__free(struct slow_keep *k)
{
	free(k->heap);
	k->heap = NULL;
	k->n = k->cap = 0;
}

void slow_keep__offer(struct slow_keep *k, const struct req_event *ev)
{
	__u64 lat = lat_of(ev), seen;

	hist_record(&k->cur, lat);
	seen = k->cur.count + k->prev.count;
	if (++k->since_refresh >= (seen < 8192 ? SLOW_REFRESH : SLOW_REFRESH_BUSY) ||
	    seen == SLOW_MIN_SEEN)
		refresh(k);
	if (lat < k->threshold || !k->cap)
		return;
	if (k->n < k->cap) {
		k->heap[k->n] = *ev;
		sift_up(k->heap, k->n++);
		return;
	}
	if (lat <= lat_of(&k->heap[0]))
		return;
	k->heap[0] = *ev;
	sift_down(k->heap, k->n, 0);
}

static int slower_first(const void *a, const void *b)
{
	__u64 x = lat_of(a), y = lat_of(b);

	return x < y ? 1 : x > y ? -1 : 0;
}

/* Requests of the histogram at or above t, a slot's lower bound: exact. */
static __u64 count_from(const struct hist *h, __u64 t)
{
	__u64 n = 0;

	for (__u32 s = hist_slot(t); s < HIST_SLOTS; s++)
		n += h->slots[s];
	return n;
}

size_t slow_keep__take(struct slow_keep *k, struct req_event *out, __u64 *cut, __u64 *threshold_ns)
{
	__u64 seen, slow, t = p99_floor(k, &seen);
	/* the interval's own p99 group by rank (nearest rank: ranks ceil(0.99 n)..n): ties at
	 * the threshold's slot, a quarter of all requests in a tight distribution, are not
	 * all tail requests */
	__u64 tail = (k->cur.count + 99) / 100;
	size_t n = 0;

	for (size_t i = 0; i < k->n; i++)
		if (lat_of(&k->heap[i]) >= t)
			out[n++] = k->heap[i];
	qsort(out, n, sizeof(*out), slower_first);
	if (n > tail)
		n = tail;
	/* counted here, by the final threshold: one that looked slow early in the interval
	 * and was evicted later was no tail request after all */
	slow = count_from(&k->cur, t);
	if (slow > tail)
		slow = tail;
	*cut = slow > n ? slow - n : 0;
	*threshold_ns = t;
	k->n = 0;
	k->prev = k->cur;
	memset(&k->cur, 0, sizeof(k->cur));
	refresh(k);
	return n;
}
