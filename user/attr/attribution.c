// SPDX-License-Identifier: GPL-2.0
/* The attribution model: one request's latency split into classed parts, the mergeable
 * aggregate of those splits by latency bucket, its encoding, and the tail-vs-median
 * analysis. docs/attribution.md is the prose version of this file. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "attr/attribution.h"
#include "core/histogram.h"
#include "core/snapshot.h"

#define THREAD (PLACE_PROC | PLACE_TID)
#define FLOWDEV (PLACE_FLOW | PLACE_DEV)

static const struct attr_part_info parts[ATTR_PARTS] = {
	[PART_RX_STACK] = { "rx.stack", ATTR_TRANSPORT, PLACE_FLOW, PLACE_PEER,
			    "driver receive -> socket queue" },
	[PART_RX_SOCKQ] = { "rx.sockq", ATTR_COMPUTE, THREAD | PLACE_FLOW,
			    PLACE_PROC | PLACE_PEER,
			    "data queued on the socket, application not reading" },
	[PART_TX_SENDQ] = { "tx.sendq", ATTR_CONGESTION, FLOWDEV, PLACE_DEV,
			    "sent by the application, held by TCP (cwnd, pacing)" },
	[PART_TX_QDISC] = { "tx.qdisc", ATTR_CONGESTION, PLACE_DEV, PLACE_DEV,
			    "qdisc sojourn" },
	[PART_TX_NIC] = { "tx.nic", ATTR_TRANSPORT, PLACE_DEV, PLACE_DEV,
			  "driver -> transmitted" },
	[PART_RETRANS_LOSS] = { "tcp.retrans", ATTR_TRANSPORT, FLOWDEV, PLACE_DEV,
				"waiting for retransmission, no queue-drop evidence" },
	[PART_RETRANS_QUEUE] = { "tcp.retrans", ATTR_CONGESTION, FLOWDEV, PLACE_DEV,
				 "waiting for retransmission after queue drops / ECN CE" },
	[PART_RTT_BASE] = { "tcp.rtt", ATTR_TRANSPORT, FLOWDEV, PLACE_DEV,
			    "round trip at the path minimum" },
	[PART_RTT_QUEUE] = { "tcp.rtt", ATTR_CONGESTION, FLOWDEV, PLACE_DEV,
			     "round trip inflation above the path minimum" },
	/* a wait for a CPU is about the CPU, whichever thread of the process waited */
	[PART_SCHED_RUNQ] = { "sched.runq", ATTR_COMPUTE, PLACE_PROC | PLACE_CPU, PLACE_PROC,
			      "serving thread runnable, waiting for a CPU" },
	[PART_SCHED_ONCPU] = { "sched.oncpu", ATTR_COMPUTE, THREAD, PLACE_PROC,
			       "serving thread on CPU" },
	[PART_SCHED_OFFCPU] = { "sched.offcpu", ATTR_COMPUTE, THREAD, PLACE_PROC,
				"serving thread blocked (not in a GPU wait)" },
	[PART_GPU_WAIT] = { "gpu.wait", ATTR_COMPUTE, THREAD, PLACE_PROC,
			    "serving thread blocked in a CUDA synchronisation call" },
	[PART_APP_OTHER] = { "app.other", ATTR_COMPUTE, THREAD, PLACE_PROC,
			     "server: before the first response, no thread stage" },
	[PART_REMOTE] = { "remote", ATTR_UNATTRIBUTED, PLACE_FLOW, PLACE_PEER,
			  "client: peer and network beyond the round trip" },
	[PART_UNCOVERED] = { "unattributed", ATTR_UNATTRIBUTED, PLACE_FLOW, PLACE_PEER,
			     "covered by no stage" },
	/* named by its cause: the stage is tx.sendq, the wait is the loss recovery's */
	[PART_TX_SENDQ_LOSS] = { "tcp.retrans", ATTR_TRANSPORT, FLOWDEV, PLACE_DEV,
				 "response held in the send queue while TCP recovers from loss" },
};

const struct attr_part_info *attr_part_info(enum attr_part p)
{
	return (unsigned)p < ATTR_PARTS ? &parts[p] : NULL;
}

const char *attr_class_name(enum attr_class c)
{
	static const char *const names[ATTR_CLASSES] = { "compute", "transport", "congestion",
							 "unattributed" };

	return (unsigned)c < ATTR_CLASSES ? names[c] : "?";
}

const char *attr_verdict_name(enum attr_verdict_class v)
{
	static const char *const names[] = { "none", "compute", "transport", "congestion",
					     "unattributed", "mixed" };

	return (unsigned)v <= VERDICT_MIXED ? names[v] : "?";
}

/* ---- one request ---- */

/* A retransmission counts as congestion only with evidence that a queue was full: ECN CE,
 * or queue drops on the flow while the request also saw a standing queue (its own qdisc
 * sojourn or an inflated RTT). Drops without a queue (a lossy link emulated by a qdisc)
 * stay transport. */
#define ATTR_QUEUE_SOJOURN_NS 1000000ULL
#define ATTR_RTT_INFLATION_NS 1000000ULL

static bool queue_evidence(const struct req_event *ev)
{
	__u64 infl_min = ATTR_RTT_INFLATION_NS;

	if (ev->stage_ns[STAGE_TX_QDISC] >= ATTR_QUEUE_SOJOURN_NS)
		return true;
	if (!ev->min_rtt_ns || ev->srtt_ns <= ev->min_rtt_ns)
		return false;
	if (ev->min_rtt_ns / 4 > infl_min)
		infl_min = ev->min_rtt_ns / 4;
	return ev->srtt_ns - ev->min_rtt_ns >= infl_min;
}

struct filler {
	__u64 budget;		/* wall time of the phase not yet claimed */
	__u64 avail[ATTR_PARTS]; /* stage time not yet placed */
	__u64 *out;
};

/* The part takes what it has left, up to what the phase has left. */
static __u64 claim(struct filler *f, enum attr_part p)
{
	__u64 x = f->avail[p] < f->budget ? f->avail[p] : f->budget;

	f->avail[p] -= x;
	f->budget -= x;
	f->out[p] += x;
	return x;
}

static void claim_all(struct filler *f, const enum attr_part *order, size_t n)
{
	for (size_t i = 0; i < n; i++)
		claim(f, order[i]);
}

static void claim_rest(struct filler *f, enum attr_part p)
{
	f->out[p] += f->budget;
	f->budget = 0;
}

/* Orders, most specific evidence first. A wait on the network overlaps the thread being
 * off CPU (blocked in send, or back waiting for the next request), so network stages claim
 * before the thread states; runq before rx.sockq because a request waiting for its reader
 * to get a CPU is a CPU problem first. */
static const enum attr_part srv_service[] = {
	PART_RX_STACK, PART_SCHED_RUNQ, PART_GPU_WAIT, PART_SCHED_ONCPU, PART_SCHED_OFFCPU,
	PART_RX_SOCKQ,
};
static const enum attr_part srv_response[] = {
	PART_RETRANS_QUEUE, PART_RETRANS_LOSS, PART_TX_QDISC, PART_TX_SENDQ, PART_TX_SENDQ_LOSS, PART_TX_NIC,
	PART_RX_STACK, PART_SCHED_RUNQ, PART_GPU_WAIT, PART_SCHED_ONCPU, PART_SCHED_OFFCPU,
	PART_RX_SOCKQ,
};
static const enum attr_part cli_request[] = {
	PART_RETRANS_QUEUE, PART_RETRANS_LOSS, PART_TX_QDISC, PART_TX_SENDQ, PART_TX_SENDQ_LOSS, PART_TX_NIC,
	PART_RX_STACK,
};
/* the client's own reading: runq, then the data it leaves on the socket */
static const enum attr_part cli_read[] = {
	PART_SCHED_RUNQ, PART_RX_SOCKQ, PART_SCHED_ONCPU, PART_GPU_WAIT, PART_RX_STACK,
	PART_RETRANS_QUEUE, PART_RETRANS_LOSS, PART_TX_QDISC, PART_TX_SENDQ, PART_TX_SENDQ_LOSS, PART_TX_NIC,
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

void attr_split_request(const struct req_event *ev, struct attr_split *o)
{
	const __u64 *st = ev->stage_ns;
	struct filler f = { .out = o->part_ns };
	__u64 cls[ATTR_CLASSES] = { 0 };
	__u64 L, T = 0;
	bool have_first;

	memset(o, 0, sizeof(*o));
	L = ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0;
	o->latency_ns = L;
	have_first = ev->first_resp_ns > ev->start_ns && ev->first_resp_ns <= ev->end_ns;
	if (have_first)
		T = ev->first_resp_ns - ev->start_ns;
	o->ttft_ns = T;
	o->retrans_congestion = (ev->retrans || st[STAGE_TCP_RETRANS]) &&
				(ev->ecn_ce || (ev->drops && queue_evidence(ev)));

	f.avail[PART_RX_STACK] = st[STAGE_RX_STACK];
	f.avail[PART_RX_SOCKQ] = st[STAGE_RX_SOCKQ];
	/* a send queue held back by loss recovery is the loss's doing: the same evidence rule
	 * as the retransmission itself (a cwnd wait without any loss stays congestion) */
	f.avail[(ev->retrans || st[STAGE_TCP_RETRANS] || (ev->flags & REQ_F_LOSS_RECOVERY)) &&
			!o->retrans_congestion
			? PART_TX_SENDQ_LOSS
			: PART_TX_SENDQ] = st[STAGE_TX_SENDQ];
	f.avail[PART_TX_QDISC] = st[STAGE_TX_QDISC];
	f.avail[PART_TX_NIC] = st[STAGE_TX_NIC];
	f.avail[o->retrans_congestion ? PART_RETRANS_QUEUE : PART_RETRANS_LOSS] =
		st[STAGE_TCP_RETRANS];
	f.avail[PART_SCHED_RUNQ] = st[STAGE_SCHED_RUNQ];
	f.avail[PART_SCHED_ONCPU] = st[STAGE_SCHED_ONCPU];
	/* gpu.wait is inside sched.offcpu: count it once, under its own name */
	f.avail[PART_GPU_WAIT] = st[STAGE_GPU_WAIT] < st[STAGE_SCHED_OFFCPU] ?
					 st[STAGE_GPU_WAIT] : st[STAGE_SCHED_OFFCPU];
	f.avail[PART_SCHED_OFFCPU] = st[STAGE_SCHED_OFFCPU] - f.avail[PART_GPU_WAIT];

	if (ev->role == ROLE_CLIENT) {
		__u64 base = ev->min_rtt_ns ? ev->min_rtt_ns : ev->srtt_ns;
		__u64 infl = ev->srtt_ns > base ? ev->srtt_ns - base : 0;
		__u64 q;

		/* until the first response byte: our send, one round trip, the peer */
		f.budget = have_first ? T : L;
		claim_all(&f, cli_request, N(cli_request));
		if (!have_first) /* reading is local evidence: it outranks the unseen peer */
			claim_all(&f, cli_read, N(cli_read));
		q = o->part_ns[PART_TX_QDISC];
		/* srtt includes our own qdisc sojourn, already claimed above */
		infl = infl > q ? infl - q : 0;
		f.avail[PART_RTT_BASE] = base;
		f.avail[PART_RTT_QUEUE] = infl;
		claim(&f, PART_RTT_BASE);
		claim(&f, PART_RTT_QUEUE);
		claim_rest(&f, PART_REMOTE);
		/* after it: the client reading the rest, the peer streaming it */
		f.budget = have_first ? L - T : 0;
		claim_all(&f, cli_read, N(cli_read));
		claim_rest(&f, PART_REMOTE);
	} else {
		/* before the first response the server holds the request: compute */
		if (have_first) {
			f.budget = T;
			claim_all(&f, srv_service, N(srv_service));
			claim_rest(&f, PART_APP_OTHER);
		}
		f.budget = L - T;
		claim_all(&f, srv_response, N(srv_response));
		claim_rest(&f, PART_UNCOVERED);
	}
	/* unrolled, parts[p].class is a constant and the sums stay in registers (a loop adds
	 * through memory, each add waiting for the last one's store) */
#pragma GCC unroll 32
	for (int p = 0; p < ATTR_PARTS; p++)
		cls[parts[p].class] += o->part_ns[p];
	memcpy(o->class_ns, cls, sizeof(cls));
}

/* ---- the aggregate ---- */

/* Evidence kept per latency bucket besides the parts. */
enum attr_field {
	F_COUNT,
	F_LAT,
	F_TTFT,
	F_TTFT_REQS,
	F_RETRANS,
	F_RETRANS_RTO,
	F_DROPS,
	F_ECN_CE,
	F_RETRANS_REQS,
	F_RETRANS_CONG_REQS,
	F_SRTT,
	F_MIN_RTT,
	F_RTT_REQS,
	F_PARTS,		/* ATTR_PARTS part sums follow */
	ATTR_FIELDS = F_PARTS + ATTR_PARTS,
};

/* Buckets are the fine latency histogram slots, so the tail and median groups are cut
 * exactly where the quantiles fall (within one 1/16-octave slot). */
struct attr_bucket {
	__u64 v[ATTR_FIELDS];
};

/* Places are kept for tail candidates: per part, per latency band (a quarter octave), per
 * place; only parts that make up at least 1/16 of their request are recorded, which is
 * what keeps the table small and still names where the tail's time went. */
#define ATTR_PLACE_MIN_SHIFT 4
#define ATTR_BAND_SHIFT 2
#define ATTR_PLACES_MAX 8192

struct attr_place_key {
	__u8 part;
	__u8 band;
	__u8 family;
	__u8 role;		/* ROLE_SERVER or ROLE_CLIENT: the side the request was seen on */
	__u8 level;		/* analysis only: 1 when coarsened; never stored */
	__u8 reserved[3];
	__u32 netns;
	__u32 ifindex;
	__u32 qdisc_handle;
	__u32 tgid;
	__u32 tid;
	__u32 cpu;
	__u16 lport;
	__u16 rport;
	__u8 raddr[16];
	char comm[16];
};

struct attr_place {
	struct attr_place_key key;
	__u64 ns;
	__u64 count;
};

/* Server and client requests are kept apart: the two views of one exchange explain
 * different things (the client's `remote` is the server's whole request). */
enum { SIDE_SERVER, SIDE_CLIENT, SIDES };

struct attr_side {
	struct hist lat, ttft, gap;
	struct attr_bucket b[HIST_SLOTS];
};

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
#define MEMO_CTX_BITS 9
#define MEMO_WAY_BITS 7
#define MEMO_REF_BITS 14	/* refs up to ATTR_PLACES_MAX */
#define MEMO_KEY_WORDS 9

struct place_memo {
	__u64 w[MEMO_KEY_WORDS];	/* role and family, then the request's place_words() */
	__u32 way[1u << MEMO_WAY_BITS]; /* (part << 8 | band) << MEMO_REF_BITS | ref; 0: empty */
};

struct attr_agg {
	struct attr_side side[SIDES];
	struct attr_place *places;	/* dense, in insertion order */
	size_t nplaces, places_cap;
	struct place_slot *index;	/* open addressing over places, load <= 1/2 */
	size_t cap;			/* index slots, a power of two */
	__u64 places_unstored, places_unstored_ns;
	struct place_memo *memo;	/* 1 << MEMO_CTX_BITS, made by the first add; NULL: none */
};

struct attr_agg *attr_agg__new(void)
{
	return calloc(1, sizeof(struct attr_agg));
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

static inline __u64 hash_mix(__u64 h, __u64 w)
{
	h = (h ^ w) * 0xff51afd7ed558ccdULL;
	return h ^ (h >> 29);
}

/* Three independent chains of three words each: a lookup waits for ~3 multiplies, not 9. */
static inline __u64 hash_words(__u64 w0, __u64 w1, __u64 w2, __u64 w3, __u64 w4, __u64 w5,
			       __u64 w6, __u64 w7, __u64 w8)
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
static __u64 key_hash(const struct attr_place_key *k)
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
	       a->tgid == b->tgid && a->tid == b->tid && a->cpu == b->cpu &&
	       a->lport == b->lport && a->rport == b->rport && words_equal(a->raddr, b->raddr) &&
	       words_equal(a->comm, b->comm);
}

/* The index slot holding k, or the empty slot where it would go (a->cap > 0). */
static inline struct place_slot *place_slot_of(const struct attr_agg *a, const struct attr_place_key *k,
					__u32 h)
{
	size_t i = h & (a->cap - 1);

	for (;;) {
		struct place_slot *s = &a->index[i];

		if (!s->ref || (s->hash == h && key_equal(&a->places[s->ref - 1].key, k)))
			return s;
		i = (i + 1) & (a->cap - 1);
	}
}

static const struct attr_place *place_find(const struct attr_agg *a,
					   const struct attr_place_key *k)
{
	const struct place_slot *s;

	if (!a->cap)
		return NULL;
	s = place_slot_of(a, k, (__u32)key_hash(k));
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

/* h: key_hash(k), computed by the caller where k was filled (see key_hash()). Returns
 * the place's position + 1, or 0 when it is not stored. */
static __u32 place_add(struct attr_agg *a, const struct attr_place_key *k, __u32 h, __u64 ns,
		       __u64 n)
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
	unsigned set = parts[p].place_fine;
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
	return hash_words(key_word0((__u8)p, (__u8)band, family, role, 0), w[0], w[1], w[2],
			  w[3], w[4], w[5], w[6], w[7]);
}

/* The same place at the coarse level of its part (level = 1 marks it). */
static void place_key_coarsen(struct attr_place_key *k)
{
	unsigned set = parts[k->part].place_coarse;

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
_Static_assert(ATTR_PARTS <= (1u << (32 - MEMO_REF_BITS - 8)) && HIST_SLOTS >> ATTR_BAND_SHIFT < 256,
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

void attr_agg__add(struct attr_agg *a, const struct req_event *ev)
{
	struct attr_place_key keys[ATTR_PARTS];
	__u64 hashes[ATTR_PARTS];
	int kparts[ATTR_PARTS], nkeys = 0;
	__u32 tags[ATTR_PARTS], *ways[ATTR_PARTS];
	struct place_memo *m;
	struct attr_split s;
	struct attr_side *sd;
	struct attr_bucket *b;
	__u32 slot, band;

	/* the bucket is known from the latency alone: ask for its lines before the split */
	slot = hist_slot(ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0);
	sd = &a->side[ev->role == ROLE_CLIENT ? SIDE_CLIENT : SIDE_SERVER];
	b = &sd->b[slot];
	for (size_t off = 0; off < sizeof(*b); off += 64)
		__builtin_prefetch((const char *)b + off, 1);
	attr_split_request(ev, &s);
	hist_record(&sd->lat, s.latency_ns);
	if (s.ttft_ns)
		hist_record(&sd->ttft, s.ttft_ns);
	if (ev->chunks > 1)
		hist_record(&sd->gap, ev->max_gap_ns);

	b->v[F_COUNT]++;
	b->v[F_LAT] += s.latency_ns;
	if (s.ttft_ns) {
		b->v[F_TTFT] += s.ttft_ns;
		b->v[F_TTFT_REQS]++;
	}
	b->v[F_RETRANS] += ev->retrans;
	b->v[F_RETRANS_RTO] += ev->retrans_rto;
	b->v[F_DROPS] += ev->drops;
	b->v[F_ECN_CE] += ev->ecn_ce;
	if (ev->retrans || ev->stage_ns[STAGE_TCP_RETRANS]) {
		b->v[F_RETRANS_REQS]++;
		b->v[F_RETRANS_CONG_REQS] += s.retrans_congestion;
	}
	if (ev->srtt_ns) {
		b->v[F_SRTT] += ev->srtt_ns;
		b->v[F_MIN_RTT] += ev->min_rtt_ns ? ev->min_rtt_ns : ev->srtt_ns;
		b->v[F_RTT_REQS]++;
	}
	for (int p = 0; p < ATTR_PARTS; p++)
		b->v[F_PARTS + p] += s.part_ns[p];

	/* parts the memo knows go straight to their place. The others: all keys first, their
	 * index slots asked for at once, so the lookups wait for memory together instead of
	 * one after the other (the index and the places are mostly out of cache when a batch
	 * of events starts) */
	band = slot >> ATTR_BAND_SHIFT;
	m = memo_of(a, ev);
	for (int p = 0; p < ATTR_PARTS; p++) {
		__u32 tag = (__u32)p << 8 | band, *way = NULL;

		if (!s.part_ns[p] || s.part_ns[p] < s.latency_ns >> ATTR_PLACE_MIN_SHIFT)
			continue;
		if (m) {
			way = &m->way[(tag * 0x9e3779b1u) >> (32 - MEMO_WAY_BITS)];
			if (*way >> MEMO_REF_BITS == tag && (*way & ((1u << MEMO_REF_BITS) - 1))) {
				struct attr_place *e =
					&a->places[(*way & ((1u << MEMO_REF_BITS) - 1)) - 1];

				e->ns += s.part_ns[p];
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
		__u32 ref = place_add(a, &keys[i], (__u32)hashes[i], s.part_ns[kparts[i]], 1);

		if (ways[i] && ref)
			*ways[i] = tags[i] << MEMO_REF_BITS | ref;
	}
}

void attr_agg__merge(struct attr_agg *dst, const struct attr_agg *src)
{
	for (int d = 0; d < SIDES; d++) {
		struct attr_side *ds = &dst->side[d];
		const struct attr_side *ss = &src->side[d];

		hist_add(&ds->lat, &ss->lat);
		hist_add(&ds->ttft, &ss->ttft);
		hist_add(&ds->gap, &ss->gap);
		for (__u32 i = 0; i < HIST_SLOTS; i++)
			for (int f = 0; f < ATTR_FIELDS; f++)
				ds->b[i].v[f] += ss->b[i].v[f];
	}
	for (size_t i = 0; i < src->nplaces; i++)
		place_add(dst, &src->places[i].key, (__u32)key_hash(&src->places[i].key),
			  src->places[i].ns, src->places[i].count);
	dst->places_unstored += src->places_unstored;
	dst->places_unstored_ns += src->places_unstored_ns;
}

bool attr_agg__equal(const struct attr_agg *a, const struct attr_agg *b)
{
	if (memcmp(a->side, b->side, sizeof(a->side)))
		return false;
	if (a->nplaces != b->nplaces || a->places_unstored != b->places_unstored ||
	    a->places_unstored_ns != b->places_unstored_ns)
		return false;
	for (size_t i = 0; i < a->nplaces; i++) {
		const struct attr_place *e = &a->places[i], *o = place_find(b, &e->key);

		if (!o || o->count != e->count || o->ns != e->ns)
			return false;
	}
	return true;
}

/* ---- encoding ----
 * Layout:
 *   "TTAT" u16 version u16 nfields u16 nparts u16 reserved u64 total_len  (little-endian)
 *   per side (server, client):
 *     3 x hist: count sum max, n, n x (slot, value)
 *     nbuckets, nbuckets x (slot, nfields x value)
 *   nplaces, nplaces x place
 *   places_unstored, places_unstored_ns
 *   u64 FNV-1a of everything before it (little-endian)
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
 * A decoder refuses other versions and other field/part counts: a record written by a
 * different model is not silently reinterpreted. */
#define ATTR_MAGIC "TTAT"
#define ATTR_VERSION 2
#define ATTR_VERSION_FIXED 1
#define ATTR_HDR_LEN 20
#define ATTR_PRESENT_RADDR 1u
#define ATTR_PRESENT_COMM 2u

struct wbuf {
	unsigned char *p;
	size_t len, cap;
	int err;
	bool varint;	/* version 2 numbers */
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

int attr_agg__encode_version(const struct attr_agg *a, int version, void **buf, size_t *len)
{
	struct wbuf w = { .varint = version == ATTR_VERSION };
	__u32 n = 0;

	if (version != ATTR_VERSION && version != ATTR_VERSION_FIXED)
		return -EINVAL;
	w_bytes(&w, ATTR_MAGIC, 4);
	w_le(&w, (__u64)version, 2);
	w_le(&w, ATTR_FIELDS, 2);
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
			for (int f = 0; f < ATTR_FIELDS; f++)
				w_num(&w, sd->b[i].v[f], 8);
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
	bool varint;	/* version 2 numbers */
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
		for (int f = 0; f < ATTR_FIELDS; f++)
			sd->b[slot].v[f] = r_num(r, 8);
		/* a bucket holds what the latency histogram says it holds */
		if (sd->b[slot].v[F_COUNT] != sd->lat.slots[slot])
			r->err = -EINVAL;
		reqs += sd->b[slot].v[F_COUNT];
		prev = slot;
	}
	if (!r->err && reqs != sd->lat.count)
		r->err = -EINVAL;
}

int attr_agg__decode(struct attr_agg **out, const void *buf, size_t len)
{
	struct rbuf r = { .p = buf, .len = len };
	struct attr_agg *a;
	__u64 version;
	__u32 n;

	*out = NULL;
	if (!buf || len < ATTR_HDR_LEN + 8 || memcmp(buf, ATTR_MAGIC, 4))
		return -EINVAL;
	r.off = 4;
	version = r_le(&r, 2);
	if ((version != ATTR_VERSION && version != ATTR_VERSION_FIXED) ||
	    r_le(&r, 2) != ATTR_FIELDS || r_le(&r, 2) != ATTR_PARTS)
		return -EINVAL;
	r.varint = version == ATTR_VERSION;
	r_le(&r, 2);
	if (r_le(&r, 8) != len)
		return -EINVAL;
	r.off = len - 8;
	if (r_le(&r, 8) != fnv1a(r.p, len - 8))
		return -EINVAL;
	r.off = ATTR_HDR_LEN;
	r.len = len - 8;

	a = attr_agg__new();
	if (!a)
		return -ENOMEM;
	for (int d = 0; d < SIDES && !r.err; d++)
		r_side(&r, &a->side[d]);
	n = (__u32)r_num(&r, 4);
	if (n > ATTR_PLACES_MAX)
		r.err = -EINVAL;
	for (__u32 i = 0; i < n && !r.err; i++) {
		struct attr_place_key k;
		__u64 ns, cnt;

		memset(&k, 0, sizeof(k));
		k.part = (__u8)r_num(&r, 1);
		k.band = (__u8)r_num(&r, 1);
		k.family = (__u8)r_num(&r, 1);
		k.role = (__u8)r_num(&r, 1);
		k.netns = (__u32)r_num(&r, 4);
		k.ifindex = (__u32)r_num(&r, 4);
		k.qdisc_handle = (__u32)r_num(&r, 4);
		k.tgid = (__u32)r_num(&r, 4);
		k.tid = (__u32)r_num(&r, 4);
		k.cpu = (__u32)r_num(&r, 4);
		k.lport = (__u16)r_num(&r, 2);
		k.rport = (__u16)r_num(&r, 2);
		if (r.varint) {
			unsigned present = (unsigned)r_le(&r, 1);

			if (present & ~(ATTR_PRESENT_RADDR | ATTR_PRESENT_COMM))
				r.err = -EINVAL;
			if (present & ATTR_PRESENT_RADDR) {
				r_bytes(&r, k.raddr, sizeof(k.raddr));
				if (all_zero(k.raddr, sizeof(k.raddr)))
					r.err = -EINVAL; /* present means not zero */
			}
			if (present & ATTR_PRESENT_COMM) {
				r_bytes(&r, k.comm, sizeof(k.comm));
				if (all_zero(k.comm, sizeof(k.comm)))
					r.err = -EINVAL;
			}
		} else {
			r_bytes(&r, k.raddr, sizeof(k.raddr));
			r_bytes(&r, k.comm, sizeof(k.comm));
		}
		ns = r_num(&r, 8);
		cnt = r_num(&r, 8);
		if (r.err)
			break;
		if (k.part >= ATTR_PARTS || !cnt ||
		    (k.role != ROLE_SERVER && k.role != ROLE_CLIENT) ||
		    k.comm[sizeof(k.comm) - 1] ||
		    (__u32)k.band > HIST_SLOTS >> ATTR_BAND_SHIFT) {
			r.err = -EINVAL;
			break;
		}
		if (place_find(a, &k)) { /* duplicate key */
			r.err = -EINVAL;
			break;
		}
		place_add(a, &k, (__u32)key_hash(&k), ns, cnt);
		if (a->nplaces != i + 1)
			r.err = -ENOMEM; /* the table could not grow */
	}
	a->places_unstored = r_num(&r, 8);
	a->places_unstored_ns = r_num(&r, 8);
	if (!r.err && r.off != r.len)
		r.err = -EINVAL; /* trailing bytes */
	if (r.err) {
		attr_agg__free(a);
		return r.err;
	}
	*out = a;
	return 0;
}

/* ---- analysis ---- */

void attr_params__default(struct attr_params *p)
{
	p->min_requests = 100;
	p->min_excess_ns = 2000000;	/* 2 ms */
	p->min_ratio = 1.5;
	p->majority = 0.5;
	p->plurality = 0.35;
	p->plurality_lead = 1.5;
	p->p999_min_requests = 10000;
	p->role = ROLE_AUTO;
}

struct group_sum {
	double v[ATTR_FIELDS];
	__u32 lo, hi;		/* slots it touches */
};

/* Sums of the requests of ranks [first, last] (1-based, by latency). A slot the range
 * cuts through contributes pro rata: a tight distribution puts thousands of requests in
 * the slot that holds p99, and taking them all would drown the tail in typical ones. */
static void sum_ranks(const struct attr_side *sd, __u64 first, __u64 last, struct group_sum *g)
{
	__u64 seen = 0;

	memset(g, 0, sizeof(*g));
	g->lo = HIST_SLOTS - 1;
	for (__u32 i = 0; i < HIST_SLOTS && seen < last; i++) {
		__u64 n = sd->b[i].v[F_COUNT], from, to;
		double frac;

		if (!n)
			continue;
		from = seen + 1 > first ? seen + 1 : first;
		to = seen + n < last ? seen + n : last;
		seen += n;
		if (to < from)
			continue;
		frac = (double)(to - from + 1) / (double)n;
		for (int f = 0; f < ATTR_FIELDS; f++)
			g->v[f] += frac * (double)sd->b[i].v[f];
		if (i < g->lo)
			g->lo = i;
		g->hi = i;
	}
	if (g->lo > g->hi)
		g->lo = g->hi;
}

/* 1-based nearest rank of quantile q over n requests */
static __u64 rank_of_q(__u64 n, double q)
{
	double r = q * (double)n;
	__u64 k = (__u64)r;

	if ((double)k < r)
		k++;
	return k < 1 ? 1 : k > n ? n : k;
}

static double div0(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static void group_fill(struct attr_group *g, const struct group_sum *s)
{
	double n = s->v[F_COUNT];

	g->lo_ns = hist_slot_lo(s->lo);
	g->hi_ns = hist_slot_hi(s->hi);
	g->count = (__u64)(n + 0.5);
	g->mean_ns = div0(s->v[F_LAT], n);
	for (int p = 0; p < ATTR_PARTS; p++) {
		g->part_mean_ns[p] = div0(s->v[F_PARTS + p], n);
		g->class_mean_ns[parts[p].class] += g->part_mean_ns[p];
	}
	for (int c = 0; c < ATTR_CLASSES; c++)
		g->shares[c] = div0(g->class_mean_ns[c], g->mean_ns);
	g->ev.retrans = div0(s->v[F_RETRANS], n);
	g->ev.retrans_rto = div0(s->v[F_RETRANS_RTO], n);
	g->ev.drops = div0(s->v[F_DROPS], n);
	g->ev.ecn_ce = div0(s->v[F_ECN_CE], n);
	g->ev.retrans_reqs = div0(s->v[F_RETRANS_REQS], n);
	g->ev.retrans_congestion_reqs = div0(s->v[F_RETRANS_CONG_REQS], n);
	g->ev.srtt_ns = div0(s->v[F_SRTT], s->v[F_RTT_REQS]);
	g->ev.min_rtt_ns = div0(s->v[F_MIN_RTT], s->v[F_RTT_REQS]);
}

/* vsnprintf appended at the end of dst: truncation is fine for display text. */
static void appendf(char *dst, size_t n, const char *fmt, ...)
{
	size_t l = strnlen(dst, n);
	va_list ap;

	if (l + 1 >= n)
		return;
	va_start(ap, fmt);
	vsnprintf(dst + l, n - l, fmt, ap);
	va_end(ap);
}

static void fmt_addr(char *dst, size_t n, __u8 family, const __u8 *addr)
{
	char tmp[INET6_ADDRSTRLEN];

	if (family == AF_INET && inet_ntop(AF_INET, addr, tmp, sizeof(tmp)))
		snprintf(dst, n, "%s", tmp);
	else if (family == AF_INET6 && inet_ntop(AF_INET6, addr, tmp, sizeof(tmp)))
		snprintf(dst, n, "[%s]", tmp);
	else
		snprintf(dst, n, "?");
}

static void fmt_place(char *dst, size_t n, const struct attr_place_key *k,
		      const struct snapshot *s)
{
	unsigned set = k->level ? parts[k->part].place_coarse : parts[k->part].place_fine;
	char dev[96] = "", flow[80] = "", thr[80] = "";

	if (set & PLACE_DEV) {
		const char *name = s ? snapshot__dev_name(s, k->netns, k->ifindex) : NULL;
		char qd[24] = "";

		if (k->qdisc_handle)
			snprintf(qd, sizeof(qd), " qdisc %x:%x", k->qdisc_handle >> 16,
				 k->qdisc_handle & 0xffff);
		if (name)
			snprintf(dev, sizeof(dev), "dev %s%s (netns %u)", name, qd, k->netns);
		else if (k->ifindex)
			snprintf(dev, sizeof(dev), "dev ifindex %u%s (netns %u)", k->ifindex,
				 qd, k->netns);
	}
	if (set & (PLACE_FLOW | PLACE_PEER)) {
		char ra[INET6_ADDRSTRLEN + 2];

		fmt_addr(ra, sizeof(ra), k->family, k->raddr);
		if (set & PLACE_FLOW)
			snprintf(flow, sizeof(flow), "flow :%u <-> %s:%u", k->lport, ra,
				 k->rport);
		else if (k->role == ROLE_CLIENT)
			snprintf(flow, sizeof(flow), "flows to %s:%u", ra, k->rport);
		else
			snprintf(flow, sizeof(flow), "flows :%u <-> %s", k->lport, ra);
	}
	if (set & PLACE_TID)
		appendf(thr, sizeof(thr), "tid %u (%.16s)", k->tid, k->comm);
	else if (set & PLACE_PROC)
		appendf(thr, sizeof(thr), "pid %u (%.16s)", k->tgid, k->comm);
	if (set & PLACE_CPU)
		appendf(thr, sizeof(thr), " on cpu %u", k->cpu);
	dst[0] = 0;
	appendf(dst, n, "%s%s%s%s%s", thr, thr[0] && (flow[0] || dev[0]) ? " " : "", flow,
		flow[0] && dev[0] ? " via " : "", dev);
	if (!dst[0])
		snprintf(dst, n, "unknown");
}

/* Same place whatever the band. */
static int place_cmp_noband(const void *x, const void *y)
{
	struct attr_place_key a = ((const struct attr_place *)x)->key;
	struct attr_place_key b = ((const struct attr_place *)y)->key;

	a.band = b.band = 0;
	return memcmp(&a, &b, sizeof(a));
}

static int place_cmp_ns(const void *x, const void *y)
{
	const struct attr_place *a = x, *b = y;

	if (a->ns != b->ns)
		return a->ns < b->ns ? 1 : -1;
	return place_cmp_noband(x, y); /* deterministic ties */
}

/* Merges equal places (bands differ) in sel[0..n), sorted by time; returns the count. */
static size_t places_merge(struct attr_place *sel, size_t n)
{
	size_t m = 0;

	qsort(sel, n, sizeof(*sel), place_cmp_noband);
	for (size_t i = 0; i < n; i++) {
		if (m && !place_cmp_noband(&sel[m - 1], &sel[i])) {
			sel[m - 1].ns += sel[i].ns;
			sel[m - 1].count += sel[i].count;
		} else {
			sel[m++] = sel[i];
		}
	}
	qsort(sel, m, sizeof(*sel), place_cmp_ns);
	return m;
}

/* Where a part's tail time went: the places of the tail's bands, at the fine level, or at
 * the coarse one when no fine place holds half of it (loss spread over many flows is a
 * device's problem, not one flow's). */
static void stage_places(const struct attr_agg *a, int role, const struct snapshot *s,
			 enum attr_part part, __u32 band_lo, struct attr_stage_line *l)
{
	struct attr_place *sel;
	size_t n = 0, m;
	__u64 total = 0;

	l->nplaces = 0;
	if (!a->nplaces)
		return;
	sel = calloc(a->nplaces, sizeof(*sel));
	if (!sel)
		return;
	for (size_t i = 0; i < a->nplaces; i++) {
		const struct attr_place *e = &a->places[i];

		if (e->key.part == part && e->key.role == role &&
		    e->key.band >= band_lo) {
			sel[n++] = *e;
			total += e->ns;
		}
	}
	m = places_merge(sel, n);
	if (m > 1 && 2 * sel[0].ns < total &&
	    parts[part].place_coarse != parts[part].place_fine) {
		for (size_t i = 0; i < m; i++)
			place_key_coarsen(&sel[i].key);
		m = places_merge(sel, m);
	}
	for (size_t i = 0; i < m && l->nplaces < ATTR_TOP_PLACES; i++) {
		struct attr_place_line *pl = &l->places[l->nplaces++];

		fmt_place(pl->where, sizeof(pl->where), &sel[i].key, s);
		pl->share = div0((double)sel[i].ns, (double)total);
	}
	free(sel);
}

static void fmt_ms(char *dst, size_t n, double ns)
{
	if (ns >= 1e9)
		snprintf(dst, n, "%.2f s", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(dst, n, "%.1f ms", ns / 1e6);
	else
		snprintf(dst, n, "%.0f us", ns / 1e3);
}

struct part_rank {
	enum attr_part p;
	double key, tie;
};

static int rank_cmp(const void *x, const void *y)
{
	const struct part_rank *a = x, *b = y;

	if (a->key != b->key)
		return a->key < b->key ? 1 : -1;
	if (a->tie != b->tie)
		return a->tie < b->tie ? 1 : -1;
	return (int)a->p - (int)b->p;
}

static enum attr_verdict_class class_verdict(enum attr_class c)
{
	switch (c) {
	case ATTR_COMPUTE: return VERDICT_COMPUTE;
	case ATTR_TRANSPORT: return VERDICT_TRANSPORT;
	case ATTR_CONGESTION: return VERDICT_CONGESTION;
	default: return VERDICT_UNATTRIBUTED;
	}
}

static const char *action_hint(enum attr_verdict_class v, enum attr_part p, bool client)
{
	switch (v) {
	case VERDICT_COMPUTE:
		if (p == PART_SCHED_RUNQ)
			return "the serving thread waits for a CPU: isolate or pin it, or move "
			       "the competing load";
		if (p == PART_RX_SOCKQ)
			return "the application leaves data unread on its socket";
		if (p == PART_GPU_WAIT)
			return "the thread waits on the GPU";
		return "the application itself is slow on these requests";
	case VERDICT_CONGESTION:
		return "a queue on the path builds up: look at what shares that device/flow";
	case VERDICT_TRANSPORT:
		if (p == PART_RETRANS_LOSS || p == PART_TX_SENDQ_LOSS)
			return "packets are lost without a standing queue: check the link";
		return "the host stack or the path itself is slow";
	case VERDICT_UNATTRIBUTED:
		return client ? "the time is spent beyond this host: run explain on the server"
			      : "no stage covers the time: see docs/attribution.md";
	default:
		return "";
	}
}

static void tail_analyze(const struct attr_agg *a, int d, const struct snapshot *s,
			 const struct attr_params *P, const struct attr_group *med,
			 double q, struct attr_group *g)
{
	const struct attr_side *sd = &a->side[d];
	bool client = d == SIDE_CLIENT;
	__u32 lo;
	struct part_rank rk[ATTR_PARTS];
	struct group_sum gs;
	struct attr_verdict *v = &g->verdict;
	char tm[24], mm[24], ex[24];
	int order[ATTR_CLASSES] = { 0, 1, 2, 3 };

	memset(g, 0, sizeof(*g));
	g->quantile = q;
	/* the tail: the requests at or above the nearest rank of q */
	sum_ranks(sd, rank_of_q(sd->lat.count, q), sd->lat.count, &gs);
	group_fill(g, &gs);
	lo = gs.lo;
	g->hi_ns = sd->lat.max_ns;
	g->excess_ns = g->mean_ns - med->mean_ns;
	g->ratio = div0(g->mean_ns, med->mean_ns);
	for (int c = 0; c < ATTR_CLASSES; c++)
		g->excess_shares[c] =
			div0(g->class_mean_ns[c] - med->class_mean_ns[c], g->excess_ns);

	fmt_ms(tm, sizeof(tm), g->mean_ns);
	fmt_ms(mm, sizeof(mm), med->mean_ns);
	fmt_ms(ex, sizeof(ex), g->excess_ns);

	/* the verdict */
	v->class = VERDICT_NONE;
	if (sd->lat.count < P->min_requests) {
		snprintf(v->rule, sizeof(v->rule), "%llu requests < %llu: too few to judge",
			 (unsigned long long)sd->lat.count,
			 (unsigned long long)P->min_requests);
	} else if (g->excess_ns < (double)P->min_excess_ns || g->ratio < P->min_ratio) {
		snprintf(v->rule, sizeof(v->rule),
			 "tail mean %s vs median %s (+%s, x%.2f): not meaningfully worse "
			 "(needs >= +%.1f ms and >= x%.2f)",
			 tm, mm, ex, g->ratio, (double)P->min_excess_ns / 1e6, P->min_ratio);
	} else {
		for (int i = 1; i < ATTR_CLASSES; i++) /* insertion sort, descending */
			for (int j = i; j > 0 && g->excess_shares[order[j]] >
						      g->excess_shares[order[j - 1]]; j--) {
				int t = order[j];

				order[j] = order[j - 1];
				order[j - 1] = t;
			}
		double s1 = g->excess_shares[order[0]], s2 = g->excess_shares[order[1]];

		if (s1 >= P->majority ||
		    (s1 >= P->plurality && s1 >= P->plurality_lead * (s2 > 0 ? s2 : 0))) {
			v->class = class_verdict(order[0]);
			snprintf(v->rule, sizeof(v->rule),
				 "tail mean %s vs median %s (+%s, x%.2f); %s holds %.0f%% of the "
				 "excess (%s %.0f%%): %s",
				 tm, mm, ex, g->ratio, attr_class_name(order[0]), 100 * s1,
				 attr_class_name(order[1]), 100 * s2,
				 s1 >= P->majority ? "majority" : "clear plurality");
		} else {
			v->class = VERDICT_MIXED;
			snprintf(v->rule, sizeof(v->rule),
				 "tail mean %s vs median %s (+%s, x%.2f); no class holds a "
				 "majority: %s %.0f%%, %s %.0f%%",
				 tm, mm, ex, g->ratio, attr_class_name(order[0]), 100 * s1,
				 attr_class_name(order[1]), 100 * s2);
		}
	}

	/* stages: by their part of the excess when there is one to explain, else by share */
	for (int p = 0; p < ATTR_PARTS; p++) {
		double exc = g->part_mean_ns[p] - med->part_mean_ns[p];

		rk[p].p = p;
		rk[p].key = v->class == VERDICT_NONE ? g->part_mean_ns[p] : exc;
		rk[p].tie = g->part_mean_ns[p];
	}
	qsort(rk, ATTR_PARTS, sizeof(rk[0]), rank_cmp);
	for (int i = 0; i < ATTR_PARTS && g->nstages < ATTR_TOP_STAGES; i++) {
		struct attr_stage_line *l = &g->stages[g->nstages];
		enum attr_part p = rk[i].p;

		if (g->part_mean_ns[p] <= 0)
			continue;
		l->part = p;
		l->mean_ns = g->part_mean_ns[p];
		l->median_mean_ns = med->part_mean_ns[p];
		l->share = div0(l->mean_ns, g->mean_ns);
		l->excess_share = div0(l->mean_ns - l->median_mean_ns, g->excess_ns);
		stage_places(a, client ? ROLE_CLIENT : ROLE_SERVER, s, p, lo >> ATTR_BAND_SHIFT,
			     l);
		g->nstages++;
	}

	/* the verdict's stage: the top stage of the named class */
	if (v->class != VERDICT_NONE && v->class != VERDICT_MIXED) {
		for (int i = 0; i < g->nstages; i++) {
			enum attr_verdict_class pc = class_verdict(parts[g->stages[i].part].class);

			if (pc != v->class)
				continue;
			v->part = g->stages[i].part;
			v->has_part = true;
			if (g->stages[i].nplaces)
				snprintf(v->where, sizeof(v->where), "%s",
					 g->stages[i].places[0].where);
			break;
		}
	}
	if (v->class == VERDICT_NONE) {
		snprintf(v->summary, sizeof(v->summary),
			 "p%g tail (%llu requests, mean %s) is not meaningfully worse than the "
			 "median (%s)",
			 q * 100, (unsigned long long)g->count, tm, mm);
		if (sd->lat.count < P->min_requests)
			snprintf(v->summary, sizeof(v->summary),
				 "too few requests (%llu) to judge the p%g tail",
				 (unsigned long long)sd->lat.count, q * 100);
	} else if (v->class == VERDICT_MIXED) {
		snprintf(v->summary, sizeof(v->summary),
			 "p%g tail (%llu requests, mean %s vs median %s): the excess is spread: "
			 "%s %.0f%%, %s %.0f%%",
			 q * 100, (unsigned long long)g->count, tm, mm,
			 attr_class_name(order[0]), 100 * g->excess_shares[order[0]],
			 attr_class_name(order[1]), 100 * g->excess_shares[order[1]]);
	} else {
		enum attr_class c = order[0];

		appendf(v->summary, sizeof(v->summary),
			"%s: %.0f%% of the p%g tail's excess (+%s over the median %s)",
			attr_class_name(c), 100 * g->excess_shares[c], q * 100, ex, mm);
		if (v->has_part)
			appendf(v->summary, sizeof(v->summary), ", mostly %s",
				parts[v->part].stage);
		if (v->where[0])
			appendf(v->summary, sizeof(v->summary), " at %s", v->where);
		appendf(v->summary, sizeof(v->summary), "; %s",
			action_hint(v->class, v->part, client));
	}
}

static void side_analyze(const struct attr_agg *a, int d, const struct snapshot *s,
			 const struct attr_params *P, struct attr_report *r)
{
	const struct attr_side *sd = &a->side[d];
	struct group_sum gs;

	memset(r, 0, sizeof(*r));
	r->role = d == SIDE_CLIENT ? ROLE_CLIENT : ROLE_SERVER;
	r->requests = sd->lat.count;
	hist_summarize(&sd->lat, &r->latency);
	hist_summarize(&sd->ttft, &r->ttft);
	hist_summarize(&sd->gap, &r->gap);

	/* the median group: the requests ranked from p40 to p60 */
	if (sd->lat.count) {
		sum_ranks(sd, rank_of_q(sd->lat.count, 0.40), rank_of_q(sd->lat.count, 0.60),
			  &gs);
		group_fill(&r->median, &gs);
	}

	tail_analyze(a, d, s, P, &r->median, 0.99, &r->tail);
	r->has_p999 = sd->lat.count >= P->p999_min_requests;
	if (r->has_p999)
		tail_analyze(a, d, s, P, &r->median, 0.999, &r->p999);
}

static bool named(enum attr_verdict_class v)
{
	return v == VERDICT_COMPUTE || v == VERDICT_TRANSPORT || v == VERDICT_CONGESTION ||
	       v == VERDICT_MIXED;
}

void attr_analyze(const struct attr_agg *a, const struct snapshot *s, double duration_s,
		  const struct attr_params *p, struct attr_report *r)
{
	static const struct attr_agg empty;
	struct attr_report *other;
	struct attr_params P;
	__u64 n[SIDES];
	int d;

	if (p)
		P = *p;
	else
		attr_params__default(&P);
	if (!a)
		a = &empty;
	memset(r, 0, sizeof(*r));
	for (d = 0; d < SIDES; d++)
		n[d] = a->side[d].lat.count;

	if (P.role == ROLE_SERVER || P.role == ROLE_CLIENT || !n[SIDE_SERVER] ||
	    !n[SIDE_CLIENT]) {
		d = P.role == ROLE_CLIENT || (P.role != ROLE_SERVER && !n[SIDE_SERVER] &&
					      n[SIDE_CLIENT]) ? SIDE_CLIENT : SIDE_SERVER;
		side_analyze(a, d, s, &P, r);
		snprintf(r->role_rule, sizeof(r->role_rule), "%s",
			 P.role != ROLE_AUTO ? "role chosen by the caller"
					     : "the only role with requests");
		if (n[!d]) {
			other = malloc(sizeof(*other));
			if (other) {
				side_analyze(a, !d, s, &P, other);
				r->has_other = true;
				r->other = other->tail.verdict;
				free(other);
			}
		}
	} else {
		/* Both ends traced on this host. The server sees what the client calls
		 * remote, so its view explains more -- unless the client is slow itself:
		 * a client that does not read fills the server's send queue, and then the
		 * server's view blames the network for the client. */
		struct attr_report *srv = malloc(sizeof(*srv));
		struct attr_report *cli = malloc(sizeof(*cli));

		if (!srv || !cli) {
			free(srv);
			free(cli);
			side_analyze(a, SIDE_SERVER, s, &P, r);
			snprintf(r->role_rule, sizeof(r->role_rule), "server (out of memory)");
			goto done;
		}
		side_analyze(a, SIDE_SERVER, s, &P, srv);
		side_analyze(a, SIDE_CLIENT, s, &P, cli);
		if (cli->tail.verdict.class == VERDICT_COMPUTE) {
			*r = *cli;
			r->other = srv->tail.verdict;
			snprintf(r->role_rule, sizeof(r->role_rule),
				 "both ends traced: the client is slow itself (compute), which "
				 "the server's view cannot show");
		} else if (named(srv->tail.verdict.class) ||
			   cli->tail.verdict.class == VERDICT_NONE) {
			*r = *srv;
			r->other = cli->tail.verdict;
			snprintf(r->role_rule, sizeof(r->role_rule),
				 "both ends traced: the server's view covers what the client "
				 "sees as remote");
		} else {
			*r = *cli;
			r->other = srv->tail.verdict;
			snprintf(r->role_rule, sizeof(r->role_rule),
				 "both ends traced: the server's tail explains nothing, the "
				 "client's view is used");
		}
		r->has_other = true;
		free(srv);
		free(cli);
	}
done:
	r->params = P;
	r->duration_s = duration_s;
	r->server_reqs = n[SIDE_SERVER];
	r->client_reqs = n[SIDE_CLIENT];
	r->places_unstored = a->places_unstored;
	r->places_unstored_ns = a->places_unstored_ns;
}
