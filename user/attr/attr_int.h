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
#include "core/snapshot.h"

struct snapshot;

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
	F_PARTS,                                /* ATTR_PARTS part sums follow */
	ATTR_ROW_FIELDS = F_PARTS + ATTR_PARTS, /* a bucket's row in the encoding */
	/* requests the deep tier did not see whole (REQ_F_PARTIAL): counted and timed above,
	 * their parts left out; the parts stand for the rest (attr_analysis.c group_fill) */
	F_PARTIAL_REQS = ATTR_ROW_FIELDS,
	F_PARTIAL_LAT,
	ATTR_FIELDS,
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
	struct hist lat, ttft, gap, tpot;
	struct attr_bucket b[HIST_SLOTS];
	__u64 overlap_reqs;  /* requests with REQ_F_OVERLAP: several were in flight at once */
	__u64 stream_reqs;   /* streamed responses (REQ_F_STREAM): HTTP/2 streams, SSE */
	__u64 stream_tokens; /* ... their tokens (chunks) */
	__u64 proto_reqs[PROTO__MAX]; /* requests by the connection's protocol */
};

/* The path's base round trip (docs/attribution.md §1, "Base vs inflation RTT"): the
 * lowest RTT seen towards one peer over one device, across every flow and the whole life
 * of the aggregate, not one flow's own min_rtt (a flow opened while a queue stands never
 * sees the clean path). attr_floor.c keeps them; merging takes the lower. */
struct attr_path_key {
	__u8 side; /* SIDE_SERVER or SIDE_CLIENT */
	__u8 family;
	__u8 reserved[2];
	__u32 netns;
	__u32 ifindex;
	__u8 raddr[16];
};

struct attr_path {
	struct attr_path_key key;
	__u64 min_rtt_ns;     /* lowest min_rtt any flow on this path reported */
	__u64 reqs;           /* requests that carried an RTT on this path */
	__u64 own_min_sum_ns; /* sum of those requests' own min_rtt (to show the difference) */
	__u16 lport, rport;   /* the flow that reported min_rtt_ns */
};

#define ATTR_PATHS_MAX 256

struct place_slot;
struct place_memo;

struct attr_agg {
	struct snapshot_agg base; /* first: how core/ merges and frees it in a snapshot */
	struct attr_side side[SIDES];
	struct attr_place *places; /* dense, in insertion order */
	size_t nplaces, places_cap;
	struct place_slot *index; /* open addressing over places, load <= 1/2 */
	size_t cap;               /* index slots, a power of two */
	__u64 places_unstored, places_unstored_ns;
	struct place_memo *memo; /* attr_place.c; made by the first add; NULL: none */
	/* attr_floor.c: path floors, in memory only (not in the record encoding) */
	struct attr_path paths[ATTR_PATHS_MAX];
	size_t npaths;
	size_t path_memo;     /* index of the last path used: requests repeat their path */
	__u64 paths_unstored; /* requests whose path found no room: own min_rtt used */
};

/* ---- path floors (attr_floor.c) ---- */

/* Notes ev's RTT on its path and returns the path's base RTT for ev's split: the lowest
 * min_rtt seen on the path so far (never above ev's own), 0 when ev carries no RTT. */
__u64 attr_floor_note(struct attr_agg *a, const struct req_event *ev);
void attr_floor_merge(struct attr_agg *dst, const struct attr_agg *src);
/* The same paths with the same floors and counts, in any order. */
bool attr_floor_equal(const struct attr_agg *a, const struct attr_agg *b);
/* The path of a side with the most requests, or NULL. */
const struct attr_path *attr_floor_top(const struct attr_agg *a, int side);

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

/* ---- shared by the analysis files (attr_analysis.c, attr_chronic.c) ---- */

/* Where a part's recorded time in latency bands from band_lo up went (l->places). */
void attr_stage_places(const struct attr_agg *a, int role, const struct snapshot *s,
		       enum attr_part part, __u32 band_lo, struct attr_stage_line *l);
/* "dev NAME qdisc MAJ:MIN (netns N)", "flow :LPORT <-> RADDR:RPORT", ... (the part's set) */
void attr_fmt_place(char *dst, size_t n, const struct attr_place_key *k, const struct snapshot *s);
/* vsnprintf appended at the end of dst (truncated: display text) */
void attr_appendf(char *dst, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
enum attr_verdict_class attr_class_verdict(enum attr_class c);
/* What to do about a verdict of class v whose top stage is p (client: the client's view). */
const char *attr_action_hint(enum attr_verdict_class v, enum attr_part p, bool client);
/* "standing queue: every request waits ~17 ms in dev X qdisc Y", from a found chronic fault */
void attr_chronic_phrase(const struct attr_chronic *c, char *dst, size_t n);
/* The chronic question for one side's report whose median and p99 groups are filled, and
 * the verdict that combines it with the episodic one (docs/attribution.md §3). */
void attr_chronic_analyze(const struct attr_agg *a, int side, const struct snapshot *s,
			  const struct attr_params *P, struct attr_report *r);

/* attr_backlog.c: for a tail in rx.backlog, the backlog place (CPU, device, RX queue)
 * with the most time at or above the stage's p99 in s's placed rx.backlog histograms, and
 * how long that CPU's NET_RX softirq waited (rx.softirq), written to where; false when s
 * has no placed rx.backlog histogram (where untouched). */
bool attr_backlog_where(const struct snapshot *s, char *where, size_t len);

#endif
