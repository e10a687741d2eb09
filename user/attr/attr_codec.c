// SPDX-License-Identifier: GPL-2.0
/* The aggregate's byte encoding for record segments (docs/record-format.md): versioned,
 * self-describing, checksummed; the decoder validates every length and count and refuses
 * what it cannot read instead of guessing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "attr/attr_int.h"

/*
 * Layout:
 *   "TTAT" u16 version u16 nfields u16 nparts u16 reserved u64 total_len  (little-endian)
 *   per side (server, client):
 *     3 x hist: count sum max, n, n x (slot, value)
 *     nbuckets, nbuckets x (slot, nfields x value)
 *     overlap_reqs (version 3 on)
 *     (version 4) tpot hist, stream_reqs, stream_tokens, nprotos, nprotos x requests
 *     (version 5) npartial, npartial x (slot, requests, latency sum)
 *   nplaces, nplaces x place
 *   places_unstored, places_unstored_ns
 *   (version 3) npaths, npaths x path, paths_unstored
 *   u64 FNV-1a of everything before it (little-endian)
 * Version 5 (written) is version 4 with each side's requests the deep tier did not see
 * whole (record's duty cycle: timed, not split) per bucket after the streams: no more
 * than the bucket's requests and latency. Versions 1 to 4 read them as none.
 * Version 4 is version 3 with each side's streamed responses after overlap_reqs:
 * the time-per-output-token histogram, how many requests were streamed and their tokens,
 * and the requests
 * by connection protocol (enum tt_proto order; a decoder takes the protocols it knows and
 * refuses a count above its own). Versions 1 to 3 read them as absent.
 * Version 3 is version 2 with each side's count of requests that overlapped
 * others on their connection after its buckets (no more than the side's requests), and
 * the path floors (docs/attribution.md §1) at the end, so that `report` over recorded
 * windows knows the base RTT of each path: a path is
 *   side family netns ifindex, u8 present (bit 0: 16 raddr bytes follow),
 *   min_rtt_ns reqs own_min_sum_ns lport rport
 * as varints; a path is unique by its key and carries at least one request. Versions 1
 * and 2 (still read) read both as absent.
 * Version 2 (written) stores every number between header and checksum as an unsigned
 * LEB128 varint (canonical: no padding bytes, within the field's width), and a place as
 *   part band family role netns ifindex qdisc tgid tid cpu lport rport, u8 present
 *   (bit 0: 16 raddr bytes follow, bit 1: 16 comm bytes follow; absent ones are zero and
 *   present ones are not all zero), ns count.
 * Most numbers are small or zero, so a snapshot's blob is less than half of version 1's,
 * which the record path encodes and compresses every interval.
 * Version 1 (still read) has the same order with fixed-width numbers: u32 counts and
 * slots, u64 values, a place's key as u8 x4, u32 x6, u16 x2, raddr, comm, then u64 ns
 * and count.
 * A decoder refuses other versions and other field/part counts, except blobs from before
 * parts were added at the end (ATTR_PARTS_V2 .. ATTR_PARTS parts; the missing parts read
 * as zero): a record written by a different model is not silently reinterpreted. */
#define ATTR_MAGIC           "TTAT"
#define ATTR_VERSION         5
#define ATTR_VERSION_PARTIAL 5
#define ATTR_VERSION_STREAMS 4
#define ATTR_VERSION_VARINT  2
#define ATTR_VERSION_FIXED   1
#define ATTR_HDR_LEN         20
#define ATTR_PRESENT_RADDR   1u
#define ATTR_PRESENT_COMM    2u

struct wbuf {
	unsigned char *p;
	size_t len, cap;
	int err;
	bool varint; /* version 2 and 3 numbers */
};

static bool w_room(struct wbuf *w, size_t n)
{
	if (w->err)
		return false;
	if (w->len + n > w->cap) {
		size_t ncap = w->cap ? w->cap : 4096;
		unsigned char *np;

		while (ncap < w->len + n)
			ncap *= 2;
		np = realloc(w->p, ncap);
		if (!np) {
			w->err = -ENOMEM;
			return false;
		}
		w->p = np;
		w->cap = ncap;
	}
	return true;
}

static void w_bytes(struct wbuf *w, const void *src, size_t n)
{
	if (!w_room(w, n))
		return;
	memcpy(w->p + w->len, src, n);
	w->len += n;
}

static void w_le(struct wbuf *w, __u64 v, int n)
{
	if (!w_room(w, (size_t)n))
		return;
	for (int i = 0; i < n; i++)
		w->p[w->len++] = (unsigned char)(v >> (8 * i));
}

/* A number of a field n bytes wide: a varint in version 2, n bytes in version 1. */
static void w_num(struct wbuf *w, __u64 v, int n)
{
	if (!w->varint) {
		w_le(w, v, n);
		return;
	}
	if (!w_room(w, 10))
		return;
	while (v >= 0x80) {
		w->p[w->len++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	w->p[w->len++] = (unsigned char)v;
}

static void w_hist(struct wbuf *w, const struct hist *h)
{
	__u32 n = 0;

	w_num(w, h->count, 8);
	w_num(w, h->sum_ns, 8);
	w_num(w, h->max_ns, 8);
	for (__u32 i = 0; i < HIST_SLOTS; i++)
		n += !!h->slots[i];
	w_num(w, n, 4);
	for (__u32 i = 0; i < HIST_SLOTS; i++) {
		if (!h->slots[i])
			continue;
		w_num(w, i, 4);
		w_num(w, h->slots[i], 8);
	}
}

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static void w_key(struct wbuf *w, const struct attr_place_key *k)
{
	unsigned present = 0;

	w_num(w, k->part, 1);
	w_num(w, k->band, 1);
	w_num(w, k->family, 1);
	w_num(w, k->role, 1);
	w_num(w, k->netns, 4);
	w_num(w, k->ifindex, 4);
	w_num(w, k->qdisc_handle, 4);
	w_num(w, k->tgid, 4);
	w_num(w, k->tid, 4);
	w_num(w, k->cpu, 4);
	w_num(w, k->lport, 2);
	w_num(w, k->rport, 2);
	if (w->varint) {
		present = (all_zero(k->raddr, sizeof(k->raddr)) ? 0 : ATTR_PRESENT_RADDR) |
			  (all_zero(k->comm, sizeof(k->comm)) ? 0 : ATTR_PRESENT_COMM);
		w_le(w, present, 1);
	}
	if (!w->varint || (present & ATTR_PRESENT_RADDR))
		w_bytes(w, k->raddr, sizeof(k->raddr));
	if (!w->varint || (present & ATTR_PRESENT_COMM))
		w_bytes(w, k->comm, sizeof(k->comm));
}

#define ATTR_KEY_LEN (4 + 6 * 4 + 2 * 2 + 16 + 16)

static __u64 fnv1a(const unsigned char *p, size_t n)
{
	__u64 h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void w_paths(struct wbuf *w, const struct attr_agg *a)
{
	w_num(w, a->npaths, 4);
	for (size_t i = 0; i < a->npaths; i++) {
		const struct attr_path *p = &a->paths[i];
		bool raddr = !all_zero(p->key.raddr, sizeof(p->key.raddr));

		w_num(w, p->key.side, 1);
		w_num(w, p->key.family, 1);
		w_num(w, p->key.netns, 4);
		w_num(w, p->key.ifindex, 4);
		w_le(w, raddr ? ATTR_PRESENT_RADDR : 0, 1);
		if (raddr)
			w_bytes(w, p->key.raddr, sizeof(p->key.raddr));
		w_num(w, p->min_rtt_ns, 8);
		w_num(w, p->reqs, 8);
		w_num(w, p->own_min_sum_ns, 8);
		w_num(w, p->lport, 2);
		w_num(w, p->rport, 2);
	}
	w_num(w, a->paths_unstored, 8);
}

int attr_agg__encode_version(const struct attr_agg *a, int version, void **buf, size_t *len)
{
	struct wbuf w = { .varint = version >= ATTR_VERSION_VARINT };
	__u32 n = 0;

	if (version < ATTR_VERSION_FIXED || version > ATTR_VERSION)
		return -EINVAL;
	w_bytes(&w, ATTR_MAGIC, 4);
	w_le(&w, (__u64)version, 2);
	w_le(&w, ATTR_ROW_FIELDS, 2);
	w_le(&w, ATTR_PARTS, 2);
	w_le(&w, 0, 2);
	w_le(&w, 0, 8); /* total length, patched below */
	for (int d = 0; d < SIDES; d++) {
		const struct attr_side *sd = &a->side[d];

		w_hist(&w, &sd->lat);
		w_hist(&w, &sd->ttft);
		w_hist(&w, &sd->gap);
		n = 0;
		for (__u32 i = 0; i < HIST_SLOTS; i++)
			n += !!sd->b[i].v[F_COUNT];
		w_num(&w, n, 4);
		for (__u32 i = 0; i < HIST_SLOTS; i++) {
			if (!sd->b[i].v[F_COUNT])
				continue;
			w_num(&w, i, 4);
			for (int f = 0; f < ATTR_ROW_FIELDS; f++)
				w_num(&w, sd->b[i].v[f], 8);
		}
		if (version >= 3)
			w_num(&w, sd->overlap_reqs, 8);
		if (version >= ATTR_VERSION_STREAMS) {
			w_hist(&w, &sd->tpot);
			w_num(&w, sd->stream_reqs, 8);
			w_num(&w, sd->stream_tokens, 8);
			w_num(&w, PROTO__MAX, 4);
			for (int p = 0; p < PROTO__MAX; p++)
				w_num(&w, sd->proto_reqs[p], 8);
		}
		if (version >= ATTR_VERSION_PARTIAL) {
			n = 0;
			for (__u32 i = 0; i < HIST_SLOTS; i++)
				n += !!sd->b[i].v[F_PARTIAL_REQS];
			w_num(&w, n, 4);
			for (__u32 i = 0; i < HIST_SLOTS; i++) {
				if (!sd->b[i].v[F_PARTIAL_REQS])
					continue;
				w_num(&w, i, 4);
				w_num(&w, sd->b[i].v[F_PARTIAL_REQS], 8);
				w_num(&w, sd->b[i].v[F_PARTIAL_LAT], 8);
			}
		}
	}
	w_num(&w, a->nplaces, 4);
	for (size_t i = 0; i < a->nplaces; i++) {
		w_key(&w, &a->places[i].key);
		w_num(&w, a->places[i].ns, 8);
		w_num(&w, a->places[i].count, 8);
	}
	w_num(&w, a->places_unstored, 8);
	w_num(&w, a->places_unstored_ns, 8);
	if (version >= 3)
		w_paths(&w, a);
	if (!w.err) {
		size_t total = w.len + 8;

		for (int i = 0; i < 8; i++)
			w.p[12 + i] = (unsigned char)((__u64)total >> (8 * i));
		w_le(&w, fnv1a(w.p, w.len), 8);
	}
	if (w.err) {
		free(w.p);
		return w.err;
	}
	*buf = w.p;
	*len = w.len;
	return 0;
}

int attr_agg__encode(const struct attr_agg *a, void **buf, size_t *len)
{
	return attr_agg__encode_version(a, ATTR_VERSION, buf, len);
}

struct rbuf {
	const unsigned char *p;
	size_t len, off;
	int err;
	bool varint; /* version 2 and 3 numbers */
	int version;
	__u32 nfields; /* fields of a bucket in this blob: older blobs have fewer parts */
};

static __u64 r_le(struct rbuf *r, int n)
{
	__u64 v = 0;

	if (r->err || r->len - r->off < (size_t)n) {
		r->err = -EINVAL;
		return 0;
	}
	for (int i = 0; i < n; i++)
		v |= (__u64)r->p[r->off + i] << (8 * i);
	r->off += n;
	return v;
}

/* A number of a field n bytes wide (see w_num()); a varint must be canonical and fit. */
static __u64 r_num(struct rbuf *r, int n)
{
	__u64 v = 0;

	if (!r->varint)
		return r_le(r, n);
	for (int shift = 0; !r->err; shift += 7) {
		unsigned char b;

		if (r->off == r->len || shift > 63) {
			r->err = -EINVAL;
			break;
		}
		b = r->p[r->off++];
		if ((shift == 63 && b > 1) || (shift && !b)) {
			r->err = -EINVAL; /* past 64 bits, or a padding byte */
			break;
		}
		v |= (__u64)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
	}
	if (!r->err && n < 8 && v >> (8 * n))
		r->err = -EINVAL;
	return r->err ? 0 : v;
}

static void r_bytes(struct rbuf *r, void *dst, size_t n)
{
	if (r->err || r->len - r->off < n) {
		r->err = -EINVAL;
		return;
	}
	memcpy(dst, r->p + r->off, n);
	r->off += n;
}

static void r_hist(struct rbuf *r, struct hist *h)
{
	__u64 total = 0;
	__u32 n, prev = 0;

	h->count = r_num(r, 8);
	h->sum_ns = r_num(r, 8);
	h->max_ns = r_num(r, 8);
	n = (__u32)r_num(r, 4);
	if (n > HIST_SLOTS)
		r->err = -EINVAL;
	for (__u32 i = 0; i < n && !r->err; i++) {
		__u32 slot = (__u32)r_num(r, 4);
		__u64 v = r_num(r, 8);

		/* strictly increasing, in range, non-empty: one encoding per histogram */
		if (slot >= HIST_SLOTS || (i && slot <= prev) || !v) {
			r->err = -EINVAL;
			break;
		}
		h->slots[slot] = v;
		total += v;
		prev = slot;
	}
	if (!r->err && total != h->count)
		r->err = -EINVAL;
}

/* Version 5: the requests of each bucket the deep tier did not see whole. */
static void r_partial(struct rbuf *r, struct attr_side *sd)
{
	__u32 n = (__u32)r_num(r, 4), prev = 0;

	if (n > HIST_SLOTS)
		r->err = -EINVAL;
	for (__u32 i = 0; i < n && !r->err; i++) {
		__u32 slot = (__u32)r_num(r, 4);
		struct attr_bucket *b;

		if (slot >= HIST_SLOTS || (i && slot <= prev)) {
			r->err = -EINVAL;
			break;
		}
		b = &sd->b[slot];
		b->v[F_PARTIAL_REQS] = r_num(r, 8);
		b->v[F_PARTIAL_LAT] = r_num(r, 8);
		if (!b->v[F_PARTIAL_REQS] || b->v[F_PARTIAL_REQS] > b->v[F_COUNT] ||
		    b->v[F_PARTIAL_LAT] > b->v[F_LAT])
			r->err = -EINVAL;
		prev = slot;
	}
}

static void r_side(struct rbuf *r, struct attr_side *sd)
{
	__u32 n, prev = 0;
	__u64 reqs = 0;

	r_hist(r, &sd->lat);
	r_hist(r, &sd->ttft);
	r_hist(r, &sd->gap);
	n = (__u32)r_num(r, 4);
	if (n > HIST_SLOTS)
		r->err = -EINVAL;
	for (__u32 i = 0; i < n && !r->err; i++) {
		__u32 slot = (__u32)r_num(r, 4);

		if (slot >= HIST_SLOTS || (i && slot <= prev)) {
			r->err = -EINVAL;
			break;
		}
		for (__u32 f = 0; f < r->nfields; f++)
			sd->b[slot].v[f] = r_num(r, 8);
		/* a bucket holds what the latency histogram says it holds */
		if (sd->b[slot].v[F_COUNT] != sd->lat.slots[slot])
			r->err = -EINVAL;
		reqs += sd->b[slot].v[F_COUNT];
		prev = slot;
	}
	if (!r->err && reqs != sd->lat.count)
		r->err = -EINVAL;
	if (r->version >= 3) {
		sd->overlap_reqs = r_num(r, 8);
		if (!r->err && sd->overlap_reqs > reqs)
			r->err = -EINVAL;
	}
	if (r->version >= ATTR_VERSION_STREAMS) {
		__u64 nprotos, sum = 0;

		r_hist(r, &sd->tpot);
		sd->stream_reqs = r_num(r, 8);
		sd->stream_tokens = r_num(r, 8);
		nprotos = r_num(r, 4);
		if (!r->err && (sd->stream_reqs > reqs || nprotos > PROTO__MAX))
			r->err = -EINVAL;
		for (__u64 p = 0; p < nprotos && !r->err; p++) {
			sd->proto_reqs[p] = r_num(r, 8);
			sum += sd->proto_reqs[p];
		}
		if (!r->err && (sum > reqs || sd->tpot.count > reqs))
			r->err = -EINVAL;
	}
	if (r->version >= ATTR_VERSION_PARTIAL)
		r_partial(r, sd);
}

/* Checks the header, the total length and the checksum; leaves r over the body (between
 * the header and the checksum) with its number format set. */
static int r_frame(struct rbuf *r)
{
	__u64 version, nfields, nparts;

	if (!r->p || r->len < ATTR_HDR_LEN + 8 || memcmp(r->p, ATTR_MAGIC, 4))
		return -EINVAL;
	r->off = 4;
	version = r_le(r, 2);
	nfields = r_le(r, 2);
	nparts = r_le(r, 2);
	/* parts are only ever added at the end, after every other field: a blob written
	 * before one was added reads with that part zero */
	if (version < ATTR_VERSION_FIXED || version > ATTR_VERSION || nparts < ATTR_PARTS_V2 ||
	    nparts > ATTR_PARTS || nfields != F_PARTS + nparts)
		return -EINVAL;
	r->nfields = (__u32)nfields;
	r->varint = version >= ATTR_VERSION_VARINT;
	r->version = (int)version;
	r_le(r, 2);
	if (r_le(r, 8) != r->len)
		return -EINVAL;
	r->off = r->len - 8;
	if (r_le(r, 8) != fnv1a(r->p, r->len - 8))
		return -EINVAL;
	r->off = ATTR_HDR_LEN;
	r->len -= 8;
	return 0;
}

/* Version 2 writes raddr and comm only when present, and present means not all zero. */
static void r_key_bytes(struct rbuf *r, struct attr_place_key *k)
{
	unsigned present;

	if (!r->varint) {
		r_bytes(r, k->raddr, sizeof(k->raddr));
		r_bytes(r, k->comm, sizeof(k->comm));
		return;
	}
	present = (unsigned)r_le(r, 1);
	if (present & ~(ATTR_PRESENT_RADDR | ATTR_PRESENT_COMM))
		r->err = -EINVAL;
	if (present & ATTR_PRESENT_RADDR) {
		r_bytes(r, k->raddr, sizeof(k->raddr));
		if (all_zero(k->raddr, sizeof(k->raddr)))
			r->err = -EINVAL;
	}
	if (present & ATTR_PRESENT_COMM) {
		r_bytes(r, k->comm, sizeof(k->comm));
		if (all_zero(k->comm, sizeof(k->comm)))
			r->err = -EINVAL;
	}
}

static void r_key(struct rbuf *r, struct attr_place_key *k)
{
	memset(k, 0, sizeof(*k));
	k->part = (__u8)r_num(r, 1);
	k->band = (__u8)r_num(r, 1);
	k->family = (__u8)r_num(r, 1);
	k->role = (__u8)r_num(r, 1);
	k->netns = (__u32)r_num(r, 4);
	k->ifindex = (__u32)r_num(r, 4);
	k->qdisc_handle = (__u32)r_num(r, 4);
	k->tgid = (__u32)r_num(r, 4);
	k->tid = (__u32)r_num(r, 4);
	k->cpu = (__u32)r_num(r, 4);
	k->lport = (__u16)r_num(r, 2);
	k->rport = (__u16)r_num(r, 2);
	r_key_bytes(r, k);
}

/* One place, added to a: it must be valid, new, and fit in the table. */
static void r_place(struct rbuf *r, struct attr_agg *a)
{
	struct attr_place_key k;
	size_t stored = a->nplaces;
	__u64 ns, cnt;

	r_key(r, &k);
	ns = r_num(r, 8);
	cnt = r_num(r, 8);
	if (r->err)
		return;
	if (k.part >= r->nfields - F_PARTS || !cnt ||
	    (k.role != ROLE_SERVER && k.role != ROLE_CLIENT) || k.comm[sizeof(k.comm) - 1] ||
	    (__u32)k.band > HIST_SLOTS >> ATTR_BAND_SHIFT) {
		r->err = -EINVAL;
		return;
	}
	if (attr_place_find(a, &k)) { /* duplicate key */
		r->err = -EINVAL;
		return;
	}
	attr_place_add(a, &k, (__u32)attr_place_key_hash(&k), ns, cnt);
	if (a->nplaces != stored + 1)
		r->err = -ENOMEM; /* the table could not grow */
}

/* One path floor, added to a: valid, new, and within the table. */
static void r_path(struct rbuf *r, struct attr_agg *a)
{
	struct attr_path p = { 0 };
	unsigned present;

	p.key.side = (__u8)r_num(r, 1);
	p.key.family = (__u8)r_num(r, 1);
	p.key.netns = (__u32)r_num(r, 4);
	p.key.ifindex = (__u32)r_num(r, 4);
	present = (unsigned)r_le(r, 1);
	if (present & ~ATTR_PRESENT_RADDR)
		r->err = -EINVAL;
	if (present & ATTR_PRESENT_RADDR) {
		r_bytes(r, p.key.raddr, sizeof(p.key.raddr));
		if (all_zero(p.key.raddr, sizeof(p.key.raddr)))
			r->err = -EINVAL;
	}
	p.min_rtt_ns = r_num(r, 8);
	p.reqs = r_num(r, 8);
	p.own_min_sum_ns = r_num(r, 8);
	p.lport = (__u16)r_num(r, 2);
	p.rport = (__u16)r_num(r, 2);
	if (r->err)
		return;
	if (p.key.side >= SIDES || !p.reqs || !p.min_rtt_ns || a->npaths >= ATTR_PATHS_MAX) {
		r->err = -EINVAL;
		return;
	}
	for (size_t i = 0; i < a->npaths; i++)
		if (!memcmp(&a->paths[i].key, &p.key, sizeof(p.key))) {
			r->err = -EINVAL; /* duplicate key */
			return;
		}
	a->paths[a->npaths++] = p;
}

int attr_agg__decode(struct attr_agg **out, const void *buf, size_t len)
{
	struct rbuf r = { .p = buf, .len = len };
	struct attr_agg *a;
	__u32 n;

	*out = NULL;
	if (r_frame(&r))
		return -EINVAL;
	a = attr_agg__new();
	if (!a)
		return -ENOMEM;
	for (int d = 0; d < SIDES && !r.err; d++)
		r_side(&r, &a->side[d]);
	n = (__u32)r_num(&r, 4);
	if (n > ATTR_PLACES_MAX)
		r.err = -EINVAL;
	for (__u32 i = 0; i < n && !r.err; i++)
		r_place(&r, a);
	a->places_unstored = r_num(&r, 8);
	a->places_unstored_ns = r_num(&r, 8);
	if (r.version >= 3) {
		n = (__u32)r_num(&r, 4);
		if (n > ATTR_PATHS_MAX)
			r.err = -EINVAL;
		for (__u32 i = 0; i < n && !r.err; i++)
			r_path(&r, a);
		a->paths_unstored = r_num(&r, 8);
	}
	if (!r.err && r.off != r.len)
		r.err = -EINVAL; /* trailing bytes */
	if (r.err) {
		attr_agg__free(a);
		return r.err;
	}
	*out = a;
	return 0;
}
