/* SPDX-License-Identifier: GPL-2.0 */
/* `explain --rdma`: why the slow RDMA transfers of a window were slow. Judges the verbs
 * work requests (rdma.wr) and the UCX operations (rdma.ucx) of one window apart, with the
 * evidence this host has: the fabric counters' call (rdma_counters.h), completions that
 * failed on a transport retry or timeout, and how long event-driven waiters took to run
 * (rdma.cq_event). Pure: the rules are unit-tested on built rows (docs/attribution.md). */
#ifndef TT_RDMA_VERDICT_H
#define TT_RDMA_VERDICT_H
#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>
#include "attr/attribution.h"
#include "rdma/rdma_counters.h"
#include "rdma/rdma_tracer.h"

struct json_writer;

enum rdma_family {
	RDMA_FAM_VERBS, /* rdma.wr: provider post -> poll */
	RDMA_FAM_UCX,   /* rdma.ucx: UCP operation -> completion */
};

struct rdma_verdict_params {
	__u64 min_count;   /* fewer successful transfers: no verdict */
	double tail_ratio; /* a tail: p99 >= tail_ratio x p50 ... */
	__u64 tail_min_ns; /* ... and p99 - p50 >= this */
	double wake_share; /* compute: waiters' p99 wake-up >= this share of p99 - p50 */
	double wake_lead;  /* ... and it comes first when its share is at least this */
	__u64 wake_min_ns; /* ... and that wake-up is at least this long */
};

void rdma_verdict_params__default(struct rdma_verdict_params *p);

struct rdma_verdict {
	enum rdma_family family;
	enum attr_verdict_class cls; /* NONE, COMPUTE, TRANSPORT, CONGESTION, UNATTRIBUTED */
	bool tail;                   /* p99 stands out from p50 (the thresholds above) */
	__u64 count;                 /* successful transfers */
	__u64 p50_ns, p99_ns;
	__u64 failed;       /* transfers that completed with an error */
	__u64 retry_failed; /* ... of which on a transport retry or timeout */
	/* waiters of completion events (verbs only) */
	__u64 wake_count, wake_p99_ns;
	double wake_share; /* wake_p99 / (p99 - p50) */
	/* the fabric counters of the window */
	bool counters;
	enum rdma_call fabric;
	__u64 congestion_events, transport_events;
	char fabric_top[96]; /* the risen counter with the largest delta */
	/* the place: the (pid, QP, peer, opcode) or (pid, endpoint, operation) holding most
	 * of the transfers at or above the p99 */
	char where[ATTR_WHERE_LEN];
	__u64 where_tail, tail_total;
	char rule[448]; /* the rule that decided, with its figures */
};

/* Judges one family over rd's window rows (total false) or their run totals, with the
 * fabric call of the same window (NULL when there is no RDMA device). Returns false when
 * the family had no transfer at all (nothing to say). */
bool rdma_verdict_judge(const struct rdma_read *rd, bool total, enum rdma_family fam,
			const struct rdma_window_call *call, const struct rdma_verdict_params *p,
			struct rdma_verdict *v);
const char *rdma_family_name(enum rdma_family f);
void rdma_verdict__print_text(const struct rdma_verdict *v, FILE *f);
void rdma_verdict__print_json(const struct rdma_verdict *v, struct json_writer *w);

#endif
