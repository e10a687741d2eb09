/* SPDX-License-Identifier: GPL-2.0 */
/* What the attribution files share and nothing outside user/attr/ may use: the parts
 * table, the aggregate's layout and its place table (attr_place.c). */
#ifndef TT_ATTR_INT_H
#define TT_ATTR_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "attr/attribution.h"
#include "core/histogram.h"

/* Indexed by enum attr_part (attr_split.c). */
extern const struct attr_part_info attr_parts[ATTR_PARTS];

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
	F_PARTS, /* ATTR_PARTS part sums follow */
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
#define ATTR_BAND_SHIFT      2
#define ATTR_PLACES_MAX      8192

struct attr_place_key {
	__u8 part;
	__u8 band;
	__u8 family;
	__u8 role;  /* ROLE_SERVER or ROLE_CLIENT: the side the request was seen on */
	__u8 level; /* analysis only: 1 when coarsened; never stored */
	__u8 reserved[3];
	__u32 netns;
	__u32 ifindex;
	__u32 qdisc_handle;
	__u32 tgid;
	__u32 tid;
	__u32 cpu;
	__u16 lport;
	__u16 rport;
	__u8 raddr[TT_ADDR_LEN];
	char comm[TT_COMM_LEN];
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

struct place_slot;
struct place_memo;

struct attr_agg {
	struct attr_side side[SIDES];
	struct attr_place *places; /* dense, in insertion order */
	size_t nplaces, places_cap;
	struct place_slot *index; /* open addressing over places, load <= 1/2 */
	size_t cap;               /* index slots, a power of two */
	__u64 places_unstored, places_unstored_ns;
	struct place_memo *memo; /* attr_place.c; made by the first add; NULL: none */
};

/* ---- the place table (attr_place.c) ---- */

/* The stored place of k, or NULL. */
const struct attr_place *attr_place_find(const struct attr_agg *a, const struct attr_place_key *k);
/* Adds ns and n to k's place, storing it when new. h: attr_place_key_hash(k), or the hash
 * place_key_fill() returned for it. Returns the place's position + 1, or 0 when nothing
 * is stored (n == 0; or the table is full or out of memory, counted as unstored). */
__u32 attr_place_add(struct attr_agg *a, const struct attr_place_key *k, __u32 h, __u64 ns,
		     __u64 n);
__u64 attr_place_key_hash(const struct attr_place_key *k);
/* The same place at the coarse level of its part (level = 1 marks it). */
void attr_place_key_coarsen(struct attr_place_key *k);
/* Adds the parts of one request (s, split from ev) that are tail candidates to their
 * places in latency band `band`. */
void attr_places_record(struct attr_agg *a, const struct req_event *ev, const struct attr_split *s,
			__u32 band);

#endif
