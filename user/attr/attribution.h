/* SPDX-License-Identifier: GPL-2.0 */
/* Per-request attribution into compute, transport and congestion, and the tail-vs-median
 * verdict. Pure code over struct req_event (bpf/tailtrace.h); docs/attribution.md defines
 * the model. The aggregate is mergeable so `record`/`report` can answer any time window.
 * attr_split.c splits a request, attr_aggregate.c and attr_place.c aggregate, attr_codec.c
 * encodes, attr_analysis.c judges the tail, attr_report.c (JSON) and attr_text.c (text)
 * print the report. */
#ifndef TT_ATTRIBUTION_H
#define TT_ATTRIBUTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include "tailtrace.h"
#include "core/histogram.h"
#include "core/stages.h"

/*
 * What the engine expects of struct req_event (the BPF side fills it this way):
 *
 * ROLE_SERVER (accepted socket; ROLE_AUTO is treated the same):
 *   start_ns      driver receive of the request's first segment; with the driver/softirq
 *                 programs, when it entered the stack (before the backlog or GRO)
 *   first_resp_ns first response send() by the application (0 if none)
 *   end_ns        last response byte handed to the device, retransmissions included, so a
 *                 retransmitted response keeps its recovery inside the request (falls back
 *                 to the last send when no TX time is known)
 * ROLE_CLIENT (connected socket):
 *   start_ns      application send of the request
 *   first_resp_ns first response byte queued on the socket
 *   end_ns        last response byte read by the application
 * stage_ns[s]     time in stage s, summed over this request's packets/sends and clipped to
 *                 [start_ns, end_ns]. Overlaps are expected (see attr_split_request()).
 *                 STAGE_GPU_WAIT is a part of STAGE_SCHED_OFFCPU; STAGE_TCP_RTT and
 *                 STAGE_TX_ACK are not used (srtt_ns/min_rtt_ns carry the RTT).
 * retrans/drops/ecn_ce counted on the flow inside the request; drops are queue drops on the
 * flow's device (QDISC_DROP and friends), not every kfree_skb.
 */

/* What a part of a request's time is blamed on. Not the catalogue's class (enum tt_class):
 * a request's tcp.rtt and tcp.retrans time is divided by evidence into transport and
 * congestion (the catalogue says split, or one class for all), request totals are no part,
 * and time no stage covers is unattributed. The three component classes keep the
 * catalogue's values, so a part that is a stage's time takes the stage's class as it is
 * (attr_parts[], attr_split.c); the verdicts and aggregates index arrays by these. */
enum attr_class {
	ATTR_COMPUTE = CLASS_COMPUTE,
	ATTR_TRANSPORT = CLASS_TRANSPORT,
	ATTR_CONGESTION = CLASS_CONGESTION,
	ATTR_UNATTRIBUTED = 3, /* not observable from this host, or covered by no stage */
	ATTR_CLASSES,
};
_Static_assert((int)CLASS_COMPUTE < 3 && (int)CLASS_TRANSPORT < 3 && (int)CLASS_CONGESTION < 3,
	       "attr_class indexes arrays: the component classes come first in TT_CLASSES");

/* The components a request's latency is partitioned into. Most are stages of the
 * catalogue; tcp.retrans and tcp.rtt are split by class; three are residuals. */
enum attr_part {
	PART_RX_STACK,      /* rx.stack, transport */
	PART_RX_SOCKQ,      /* rx.sockq, compute: the application not reading */
	PART_TX_SENDQ,      /* tx.sendq, congestion: cwnd/pacing waits */
	PART_TX_QDISC,      /* tx.qdisc, congestion */
	PART_TX_NIC,        /* tx.nic, transport */
	PART_RETRANS_LOSS,  /* tcp.retrans without queue-drop evidence, transport */
	PART_RETRANS_QUEUE, /* tcp.retrans with ECN CE or queue drops, congestion */
	PART_RTT_BASE,      /* tcp.rtt up to the path minimum (client only), transport */
	PART_RTT_QUEUE,     /* tcp.rtt above the minimum (client only), congestion */
	PART_SCHED_RUNQ,    /* sched.runq, compute */
	PART_SCHED_ONCPU,   /* sched.oncpu, compute */
	PART_SCHED_OFFCPU,  /* sched.offcpu minus gpu.wait, compute */
	PART_GPU_WAIT,      /* gpu.wait, compute */
	PART_APP_OTHER,     /* server, before the first response, no stage: compute */
	PART_REMOTE,        /* client: peer + network beyond the RTT, unattributed */
	PART_UNCOVERED,     /* covered by no stage, unattributed */
	PART_TX_SENDQ_LOSS, /* tx.sendq in a request that retransmitted without queue
			     * evidence: cwnd held back by loss recovery, transport */
	/* parts are added here, at the end: older aggregate blobs have the ones above */
	PART_RX_BACKLOG, /* rx.backlog, compute: waiting for the receive softirq's CPU */
	ATTR_PARTS,
};

/* Parts of an aggregate blob written before rx.backlog was added (attr_codec.c). */
#define ATTR_PARTS_V2 PART_RX_BACKLOG

/* What identifies a place; a part's places are kept at a fine level and, when no fine
 * place holds half of the part's tail time, reported at a coarse one. */
enum attr_place_field {
	PLACE_DEV = 1,  /* netns, ifindex, qdisc handle */
	PLACE_FLOW = 2, /* local port <-> remote address:port */
	PLACE_PEER = 4, /* local port <-> remote address (any remote port) */
	PLACE_PROC = 8, /* tgid, comm */
	PLACE_TID = 16, /* thread id */
	PLACE_CPU = 32, /* CPU the thread last ran on */
};

struct attr_part_info {
	const char *stage; /* stage name in outputs ("tx.qdisc", "app.other", ...) */
	int stage_id;      /* the catalogue's stage it is named after, -1: a residual */
	enum attr_class class;
	unsigned place_fine, place_coarse; /* enum attr_place_field sets */
	const char *desc;
};

const struct attr_part_info *attr_part_info(enum attr_part p);
const char *attr_class_name(enum attr_class c);

/* One request's latency L = end_ns - start_ns split into parts that sum to L exactly. */
struct attr_split {
	__u64 latency_ns;
	__u64 ttft_ns; /* 0 when first_resp_ns is not inside the request */
	__u64 part_ns[ATTR_PARTS];
	__u64 class_ns[ATTR_CLASSES];
	bool retrans_congestion; /* retransmissions classed congestion (queue evidence) */
};

void attr_split_request(const struct req_event *ev, struct attr_split *out);
/* The same with the path's base RTT known from other flows (attr_agg__add() keeps the
 * lowest RTT seen per peer and device): the lower of it and the flow's own min_rtt is the
 * base; 0 means the flow's own. */
void attr_split_request_base(const struct req_event *ev, __u64 base_rtt_ns, struct attr_split *out);

struct attr_agg; /* opaque, mergeable */

struct attr_agg *attr_agg__new(void);
void attr_agg__free(struct attr_agg *a);
void attr_agg__add(struct attr_agg *a, const struct req_event *ev);
void attr_agg__merge(struct attr_agg *dst, const struct attr_agg *src);
/* Versioned, self-describing byte encoding for record segments; decode validates all
 * lengths and returns -EINVAL (never crashes) on corrupt input. */
int attr_agg__encode(const struct attr_agg *a, void **buf, size_t *len);
int attr_agg__decode(struct attr_agg **out, const void *buf, size_t len);
/* attr_agg__encode() in a given format version (1, 2 or 3): tests write old blobs with it. */
int attr_agg__encode_version(const struct attr_agg *a, int version, void **buf, size_t *len);
/* Same content (place tables compared as sets). */
bool attr_agg__equal(const struct attr_agg *a, const struct attr_agg *b);
__u64 attr_agg__requests(const struct attr_agg *a);

/* ---- analysis ---- */

/* Thresholds of the verdict rule; attr_params__default() gives the documented values. */
struct attr_params {
	__u64 min_requests;  /* fewer requests: verdict none ("too few") */
	__u64 min_excess_ns; /* tail mean - median mean below this: none */
	double min_ratio;    /* tail mean / median mean below this: none */
	double majority;     /* a class with this share of the excess is named */
	double plurality;    /* ... or with this share and plurality_lead x the runner-up */
	double plurality_lead;
	__u64 p999_min_requests; /* p99.9 section only with this many requests */
	/* the chronic question (attr_chronic.c): waiting every request shares with the p99 one */
	__u64 chronic_min_wait_ns; /* standing waiting of a class below this: no chronic fault */
	double chronic_min_share;  /* ... or below this share of the median group's mean */
	int role;                  /* enum tt_role to analyse; ROLE_AUTO chooses (see the docs) */
};

void attr_params__default(struct attr_params *p);

enum attr_verdict_class {
	VERDICT_NONE, /* tail not meaningfully worse than the median, or too few */
	VERDICT_COMPUTE,
	VERDICT_TRANSPORT,
	VERDICT_CONGESTION,
	VERDICT_UNATTRIBUTED, /* most of the excess is where this host cannot see */
	VERDICT_MIXED,        /* no class holds a clear majority or plurality */
};

const char *attr_verdict_name(enum attr_verdict_class v);

/* Which question found the fault: the tail's excess over the median (episodic), waiting
 * that every request has (chronic), or both. */
enum attr_verdict_kind {
	VERDICT_KIND_NONE,
	VERDICT_KIND_EPISODIC,
	VERDICT_KIND_CHRONIC,
	VERDICT_KIND_BOTH,
};

const char *attr_verdict_kind_name(enum attr_verdict_kind k);

#define ATTR_TOP_STAGES 6
#define ATTR_TOP_PLACES 3
#define ATTR_WHERE_LEN  160

struct attr_place_line {
	char where[ATTR_WHERE_LEN];
	double share; /* of this stage's recorded time in the tail */
};

struct attr_stage_line {
	enum attr_part part;
	double share;          /* of the group's latency */
	double excess_share;   /* of the group's excess over the median */
	double mean_ns;        /* mean per request in the group */
	double median_mean_ns; /* ... in the median group */
	struct attr_place_line places[ATTR_TOP_PLACES];
	int nplaces;
};

/* Mean per request of the flow evidence in a group. */
struct attr_evidence {
	double retrans, retrans_rto, drops, ecn_ce;
	double retrans_reqs;            /* share of requests with at least one retransmission */
	double retrans_congestion_reqs; /* ... classed congestion */
	double srtt_ns, min_rtt_ns;     /* over requests that carry an RTT */
};

struct attr_verdict {
	enum attr_verdict_class class;
	enum attr_verdict_kind kind;
	enum attr_verdict_class episodic; /* the episodic question's own answer */
	enum attr_part part; /* top stage of the named class (valid unless NONE/MIXED) */
	bool has_part;
	char where[ATTR_WHERE_LEN];
	char rule[640];    /* which rule decided, with the numbers (both questions) */
	char summary[640]; /* one line a person can act on */
};

/* A group's mean request split by what its time is: the floor (what it costs when nothing
 * waits: the path's base round trip, the stack, the driver), work (the request's own
 * compute), waiting above the floor per class, and time this host cannot see. */
struct attr_budget {
	double floor_ns, work_ns, unseen_ns;
	double wait_ns[ATTR_CLASSES];
};

/* The chronic question's answer: the waiting the p99 request shares with the median one. */
struct attr_chronic {
	bool found;
	enum attr_class class;
	enum attr_part part; /* the class's part with the most standing waiting */
	bool has_part;
	double wait_ns;                      /* standing waiting of the class */
	double tail_wait_ns, median_wait_ns; /* ... of the class in either group */
	double part_median_ns;               /* what the median request waits in `part` */
	char where[ATTR_WHERE_LEN];
	char rule[256];
	char evidence[320];
};

/* Where the base round trip came from (the path floor of the analysed side). */
struct attr_floor_info {
	bool known;
	double rtt_ns;     /* the lowest RTT seen on the path */
	double own_min_ns; /* mean of the requests' own flow min_rtt on that path */
	__u64 reqs;        /* requests that carried an RTT on that path */
	char source[256];
};

struct attr_group {
	double quantile;    /* 0.99, 0.999; 0 for the median group */
	__u64 lo_ns, hi_ns; /* latency range of the buckets taken */
	__u64 count;
	/* ... of which the deep tier saw whole: the parts and shares are theirs (record's
	 * duty cycle; count without one) */
	__u64 split_count;
	double mean_ns;
	double class_mean_ns[ATTR_CLASSES];
	double part_mean_ns[ATTR_PARTS];
	double shares[ATTR_CLASSES];
	/* tail groups only */
	double excess_ns;
	double ratio; /* mean / median mean */
	double excess_shares[ATTR_CLASSES];
	/* streamed responses: where in the request the excess is. ttft_mean_ns: the group's
	 * mean time to first token (0: none had one); first_token_share: the share of the
	 * excess before the first token (TTFT), the rest after it (the inter-token gaps) */
	double ttft_mean_ns;
	double first_token_share;
	bool streamed; /* most of the group's requests were streamed responses */
	struct attr_stage_line stages[ATTR_TOP_STAGES];
	int nstages;
	struct attr_evidence ev;
	struct attr_verdict verdict;
	struct attr_budget budget; /* p99 and median groups (attr_chronic.c) */
};

struct attr_report {
	double duration_s;
	int role;            /* ROLE_SERVER or ROLE_CLIENT: the side analysed */
	char role_rule[160]; /* why that side */
	__u64 requests;      /* ... of that side */
	__u64 overlap_reqs;  /* ... of which overlapped others on their connection */
	__u64 server_reqs, client_reqs;
	bool has_other;            /* the other side had requests too: */
	struct attr_verdict other; /* its p99 verdict */
	struct hist_summary latency, ttft, gap;
	struct hist_summary tpot; /* streamed responses: time per output token */
	struct hist_summary itl;  /* every gap between tokens (req.gap), not only the largest */
	__u64 stream_reqs;        /* streamed responses (HTTP/2 streams, SSE) */
	__u64 stream_tokens;      /* ... their tokens */
	__u64 proto_reqs[PROTO__MAX];
	struct attr_group median, tail, p999;
	bool has_p999;
	__u64 places_unstored; /* place updates the bounded table could not keep */
	__u64 places_unstored_ns;
	struct attr_params params;
	struct attr_chronic chronic;
	struct attr_floor_info floor;
};

struct snapshot;
/* Pure: thresholds, groups, shares, verdict. `s` (may be NULL) names devices; `p` NULL
 * means attr_params__default(). */
void attr_analyze(const struct attr_agg *a, const struct snapshot *s, double duration_s,
		  const struct attr_params *p, struct attr_report *r);

struct json_writer;
/* Verdict first, then evidence, then the numbers. */
void attr_report__print_text(const struct attr_report *r, FILE *f);
/* Writes the keys of docs/attribution.md into an already-open object. */
void attr_report__print_json(const struct attr_report *r, struct json_writer *w);

#endif
