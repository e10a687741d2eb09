// SPDX-License-Identifier: GPL-2.0
/* The aggregate's place table: where each part's time went (device, flow, thread), kept
 * for tail candidates in a bounded open-addressing index, with a memo that lets repeats
 * of one flow and thread skip the index. Every request looks up several places, so this
 * is the hot path of attr_agg__add(). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "attr/attr_int.h"

/* A slot of the place index: the key's hash (low 32 bits, which also give its home
 * slot) and the place's position in the dense array + 1 (0: empty). Probing touches only
 * these 8-byte slots, not the 88-byte places, and compares keys only when hashes agree:
 * the index stays in cache where a table of whole places did not (every request looks up
 * several places). */
struct place_slot {
	__u32 hash;
	__u32 ref;
};

/* The places a request lands in are a function of its place fields (the key less part
 * and band), its parts and its band, and consecutive requests of one flow and thread
 * mostly repeat all three. The memo maps them to the place: a repeat then costs one
 * compare of the fields per request, not a key, a hash and an index probe per part (which
 * were half of the aggregate's time per request). A cache only: a miss takes the index,
 * and places never move or go, so a stored ref stays right. Direct-mapped both ways. */
#define MEMO_CTX_BITS  9
#define MEMO_WAY_BITS  7
#define MEMO_REF_BITS  14 /* refs up to ATTR_PLACES_MAX */
#define MEMO_KEY_WORDS 9

struct place_memo {
	__u64 w[MEMO_KEY_WORDS];        /* role and family, then the request's place_words() */
	__u32 way[1u << MEMO_WAY_BITS]; /* (part << 8 | band) << MEMO_REF_BITS | ref; 0: empty */
};

static inline __u64 hash_mix(__u64 h, __u64 w)
{
	h = (h ^ w) * 0xff51afd7ed558ccdULL;
	return h ^ (h >> 29);
}

/* Three independent chains of three words each: a lookup waits for ~3 multiplies, not 9. */
static inline __u64 hash_words(__u64 w0, __u64 w1, __u64 w2, __u64 w3, __u64 w4, __u64 w5, __u64 w6,
			       __u64 w7, __u64 w8)
{
	__u64 a = 0x9e3779b97f4a7c15ULL, b = 0x243f6a8885a308d3ULL, c = 0x13198a2e03707344ULL;
	__u64 h;

	a = hash_mix(a, w0);
	b = hash_mix(b, w1);
	c = hash_mix(c, w2);
	a = hash_mix(a, w3);
	b = hash_mix(b, w4);
	c = hash_mix(c, w5);
	a = hash_mix(a, w6);
	b = hash_mix(b, w7);
	c = hash_mix(c, w8);
	h = a ^ (b << 21 | b >> 43) ^ (c << 42 | c >> 22);
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 33);
}

static inline __u64 key_word0(__u8 part, __u8 band, __u8 family, __u8 role, __u8 level)
{
	return part | (__u64)band << 8 | (__u64)family << 16 | (__u64)role << 24 |
	       (__u64)level << 32;
}

/* A key's place fields as the eight words hashed after key_word0(); the place memo
 * compares the same words. */
static inline void place_words(__u64 w[8], __u32 netns, __u32 ifindex, __u32 qdisc, __u32 tgid,
			       __u32 tid, __u32 cpu, __u16 lport, __u16 rport, const __u64 ra[2],
			       const __u64 cm[2])
{
	w[0] = netns | (__u64)ifindex << 32;
	w[1] = qdisc | (__u64)tgid << 32;
	w[2] = tid | (__u64)cpu << 32;
	w[3] = lport | (__u64)rport << 16;
	w[4] = ra[0];
	w[5] = ra[1];
	w[6] = cm[0];
	w[7] = cm[1];
}

/* The hash of a stored key. place_key_fill() hashes the same words from the values it
 * stores (see there why not from the key); test_merge_equals_add_all fails if they drift. */
__u64 attr_place_key_hash(const struct attr_place_key *k)
{
	__u64 ra[2], cm[2], w[8];

	memcpy(ra, k->raddr, sizeof(ra));
	memcpy(cm, k->comm, sizeof(cm));
	place_words(w, k->netns, k->ifindex, k->qdisc_handle, k->tgid, k->tid, k->cpu, k->lport,
		    k->rport, ra, cm);
	return hash_words(key_word0(k->part, k->band, k->family, k->role, k->level), w[0], w[1],
			  w[2], w[3], w[4], w[5], w[6], w[7]);
}

/* 16 bytes as two words (memcmp is a call, and reads them in other widths) */
static inline bool words_equal(const void *a, const void *b)
{
	__u64 x[2], y[2];

	memcpy(x, a, sizeof(x));
	memcpy(y, b, sizeof(y));
	return x[0] == y[0] && x[1] == y[1];
}

/* Field by field, in the widths place_key_fill() writes them: a key filled a moment ago is
 * still in the store buffer, and a wider load that spans several of its stores (memcmp's)
 * stalls until they drain. */
static inline bool key_equal(const struct attr_place_key *a, const struct attr_place_key *b)
{
	return a->part == b->part && a->band == b->band && a->family == b->family &&
	       a->role == b->role && a->level == b->level && a->netns == b->netns &&
	       a->ifindex == b->ifindex && a->qdisc_handle == b->qdisc_handle &&
	       a->tgid == b->tgid && a->tid == b->tid && a->cpu == b->cpu && a->lport == b->lport &&
	       a->rport == b->rport && words_equal(a->raddr, b->raddr) &&
	       words_equal(a->comm, b->comm);
}

/* The index slot holding k, or the empty slot where it would go (a->cap > 0). */
static inline struct place_slot *place_slot_of(const struct attr_agg *a,
					       const struct attr_place_key *k, __u32 h)
{
	size_t i = h & (a->cap - 1);

	for (;;) {
		struct place_slot *s = &a->index[i];

		if (!s->ref || (s->hash == h && key_equal(&a->places[s->ref - 1].key, k)))
			return s;
		i = (i + 1) & (a->cap - 1);
	}
}

const struct attr_place *attr_place_find(const struct attr_agg *a, const struct attr_place_key *k)
{
	const struct place_slot *s;

	if (!a->cap)
		return NULL;
	s = place_slot_of(a, k, (__u32)attr_place_key_hash(k));
	return s->ref ? &a->places[s->ref - 1] : NULL;
}

/* Room for one more place: grows the dense array and, past half load, the index (rebuilt
 * from the stored hashes). Returns 1 when the index moved, 0, or -ENOMEM. */
static int places_reserve(struct attr_agg *a)
{
	size_t ncap;
	struct place_slot *n;

	if (a->nplaces == a->places_cap) {
		size_t pcap = a->places_cap ? a->places_cap * 2 : 32;
		struct attr_place *np = realloc(a->places, pcap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		a->places = np;
		a->places_cap = pcap;
	}
	if ((a->nplaces + 1) * 2 <= a->cap)
		return 0;
	ncap = a->cap ? a->cap * 2 : 64;
	n = calloc(ncap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < a->cap; i++) {
		size_t j = a->index[i].hash & (ncap - 1);

		if (!a->index[i].ref)
			continue;
		while (n[j].ref)
			j = (j + 1) & (ncap - 1);
		n[j] = a->index[i];
	}
	free(a->index);
	a->index = n;
	a->cap = ncap;
	return 1;
}

/* h is computed by the caller where k was filled (see attr_place_key_hash()). */
__u32 attr_place_add(struct attr_agg *a, const struct attr_place_key *k, __u32 h, __u64 ns, __u64 n)
{
	struct place_slot *s = NULL;
	struct attr_place *e;
	int r = 0;

	if (!n)
		return 0;
	if (a->cap) {
		s = place_slot_of(a, k, h);
		if (s->ref) {
			e = &a->places[s->ref - 1];
			e->ns += ns;
			e->count += n;
			return s->ref;
		}
	}
	if (a->nplaces >= ATTR_PLACES_MAX || (r = places_reserve(a)) < 0) {
		a->places_unstored += n;
		a->places_unstored_ns += ns;
		return 0;
	}
	if (r || !s)
		s = place_slot_of(a, k, h);
	e = &a->places[a->nplaces++];
	e->key = *k;
	e->ns = ns;
	e->count = n;
	s->hash = h;
	s->ref = (__u32)a->nplaces;
	return s->ref;
}

/* The last byte of comm as a mask on its second 8-byte word (the name is cut there). */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define COMM_CUT_MASK 0x00ffffffffffffffULL
#else
#define COMM_CUT_MASK 0xffffffffffffff00ULL
#endif

/* Keeps the fields of `set` from the event (level 0 is what the table stores) and returns
 * the key's hash. Every field is written once, and the hash is taken from the values, not
 * read back from the key: loads spanning several narrow stores still in the store buffer
 * stall until they drain (store-to-load forwarding fails), which was most of the time of
 * hashing a key read back. */
static __u64 place_key_fill(struct attr_place_key *k, enum attr_part p, __u32 band,
			    const struct req_event *ev)
{
	unsigned set = attr_parts[p].place_fine;
	bool dev = set & PLACE_DEV, flow = set & (PLACE_FLOW | PLACE_PEER);
	bool proc = set & PLACE_PROC;
	__u8 role = ev->role == ROLE_CLIENT ? ROLE_CLIENT : ROLE_SERVER;
	__u8 family = flow ? ev->family : 0;
	__u32 netns = dev ? ev->netns : 0, ifindex = dev ? ev->ifindex : 0;
	__u32 qdisc = dev ? ev->qdisc_handle : 0, tgid = proc ? ev->tgid : 0;
	__u32 tid = set & PLACE_TID ? ev->tid : 0, cpu = set & PLACE_CPU ? ev->cpu : 0;
	__u16 lport = flow ? ev->lport : 0, rport = flow ? ev->rport : 0;
	__u64 ra[2] = { 0, 0 }, cm[2] = { 0, 0 }, w[8];

	if (flow && !(set & PLACE_FLOW)) /* keep the service port only */
		*(role == ROLE_CLIENT ? &lport : &rport) = 0;
	if (flow)
		memcpy(ra, ev->raddr, sizeof(ra));
	if (proc) {
		memcpy(cm, ev->comm, sizeof(cm));
		cm[1] &= COMM_CUT_MASK;
	}
	k->part = (__u8)p;
	k->band = (__u8)band;
	k->family = family;
	k->role = role;
	k->level = 0;
	memset(k->reserved, 0, sizeof(k->reserved));
	k->netns = netns;
	k->ifindex = ifindex;
	k->qdisc_handle = qdisc;
	k->tgid = tgid;
	k->tid = tid;
	k->cpu = cpu;
	k->lport = lport;
	k->rport = rport;
	memcpy(k->raddr, ra, sizeof(ra));
	memcpy(k->comm, cm, sizeof(cm));
	place_words(w, netns, ifindex, qdisc, tgid, tid, cpu, lport, rport, ra, cm);
	return hash_words(key_word0((__u8)p, (__u8)band, family, role, 0), w[0], w[1], w[2], w[3],
			  w[4], w[5], w[6], w[7]);
}

void attr_place_key_coarsen(struct attr_place_key *k)
{
	unsigned set = attr_parts[k->part].place_coarse;

	k->level = 1;
	if (!(set & PLACE_DEV))
		k->netns = k->ifindex = k->qdisc_handle = 0;
	if (!(set & (PLACE_FLOW | PLACE_PEER))) {
		k->family = 0;
		k->lport = k->rport = 0;
		memset(k->raddr, 0, sizeof(k->raddr));
	} else if (!(set & PLACE_FLOW)) {
		*(k->role == ROLE_CLIENT ? &k->lport : &k->rport) = 0;
	}
	if (!(set & PLACE_PROC)) {
		k->tgid = 0;
		memset(k->comm, 0, sizeof(k->comm));
	}
	if (!(set & PLACE_TID))
		k->tid = 0;
	if (!(set & PLACE_CPU))
		k->cpu = 0;
}

_Static_assert(ATTR_PLACES_MAX < (1u << MEMO_REF_BITS), "a memo way holds any ref");
_Static_assert(ATTR_PARTS <= (1u << (32 - MEMO_REF_BITS - 8)) &&
		       HIST_SLOTS >> ATTR_BAND_SHIFT < 256,
	       "a memo way holds any part and band");

/* The request's memo entry, emptied first when it held another request's place fields. */
static struct place_memo *memo_of(struct attr_agg *a, const struct req_event *ev)
{
	__u64 w[MEMO_KEY_WORDS], ra[2], cm[2];
	struct place_memo *m;
	bool same = true;

	if (!a->memo && !(a->memo = calloc(1u << MEMO_CTX_BITS, sizeof(*a->memo))))
		return NULL; /* no memo: every part takes the index */
	memcpy(ra, ev->raddr, sizeof(ra));
	memcpy(cm, ev->comm, sizeof(cm));
	cm[1] &= COMM_CUT_MASK;
	w[0] = (ev->role == ROLE_CLIENT ? ROLE_CLIENT : ROLE_SERVER) | (__u64)ev->family << 8;
	place_words(&w[1], ev->netns, ev->ifindex, ev->qdisc_handle, ev->tgid, ev->tid, ev->cpu,
		    ev->lport, ev->rport, ra, cm);
	/* the socket and thread pick the entry; the fields decide whether it holds them */
	m = &a->memo[((ev->sk_cookie ^ (__u64)ev->tid << 20 ^ ev->cpu) * 0x9e3779b97f4a7c15ULL) >>
		     (64 - MEMO_CTX_BITS)];
	for (int i = 0; i < MEMO_KEY_WORDS; i++)
		same &= m->w[i] == w[i];
	if (!same) {
		memcpy(m->w, w, sizeof(w));
		memset(m->way, 0, sizeof(m->way));
	}
	return m;
}

void attr_places_record(struct attr_agg *a, const struct req_event *ev, const struct attr_split *s,
			__u32 band)
{
	struct attr_place_key keys[ATTR_PARTS];
	__u64 hashes[ATTR_PARTS];
	int kparts[ATTR_PARTS], nkeys = 0;
	__u32 tags[ATTR_PARTS], *ways[ATTR_PARTS];
	struct place_memo *m;

	/* parts the memo knows go straight to their place. The others: all keys first, their
	 * index slots asked for at once, so the lookups wait for memory together instead of
	 * one after the other (the index and the places are mostly out of cache when a batch
	 * of events starts) */
	m = memo_of(a, ev);
	for (int p = 0; p < ATTR_PARTS; p++) {
		__u32 tag = (__u32)p << 8 | band, *way = NULL;

		if (!s->part_ns[p] || s->part_ns[p] < s->latency_ns >> ATTR_PLACE_MIN_SHIFT)
			continue;
		if (m) {
			way = &m->way[(tag * 0x9e3779b1u) >> (32 - MEMO_WAY_BITS)];
			if (*way >> MEMO_REF_BITS == tag && (*way & ((1u << MEMO_REF_BITS) - 1))) {
				struct attr_place *e =
					&a->places[(*way & ((1u << MEMO_REF_BITS) - 1)) - 1];

				e->ns += s->part_ns[p];
				e->count++;
				continue;
			}
		}
		hashes[nkeys] = place_key_fill(&keys[nkeys], p, band, ev);
		if (a->cap)
			__builtin_prefetch(&a->index[hashes[nkeys] & (a->cap - 1)]);
		tags[nkeys] = tag;
		ways[nkeys] = way;
		kparts[nkeys++] = p;
	}
	for (int i = 0; i < nkeys; i++) {
		__u32 ref = attr_place_add(a, &keys[i], (__u32)hashes[i], s->part_ns[kparts[i]], 1);

		if (ways[i] && ref)
			*ways[i] = tags[i] << MEMO_REF_BITS | ref;
	}
}
