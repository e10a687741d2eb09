// SPDX-License-Identifier: GPL-2.0
/* One request's latency split into classed parts that sum to it exactly, and the table of
 * those parts. docs/attribution.md §1 is the prose version of this file. */
#include <string.h>
#include "attr/attr_int.h"

#define THREAD  (PLACE_PROC | PLACE_TID)
#define FLOWDEV (PLACE_FLOW | PLACE_DEV)

/* Each stage's name and class from the catalogue, as constants a static table can hold. */
#define STAGE_CONSTS(sid, nm, cls, ...)                                                            \
	static const char stage_name_##sid[] __attribute__((unused)) = nm;                         \
	enum { stage_class_##sid = CLASS_##cls };
TT_STAGE_CATALOGUE(STAGE_CONSTS)

/* A part that is a stage's time: the stage's name and its catalogue class, which must be a
 * component class (a split or request stage needs evidence to class: SPLIT_PART). */
#define STAGE_PART(sid)                                                                            \
	stage_name_##sid, STAGE_##sid,                                                             \
		(enum attr_class)((int)stage_class_##sid < (int)ATTR_UNATTRIBUTED                  \
					  ? stage_class_##sid                                      \
					  : ATTR_CLASSES)
/* A share of a stage's time that evidence classes: the stage's name, the share's class. */
#define SPLIT_PART(sid, cls) stage_name_##sid, STAGE_##sid, ATTR_##cls
/* Time no stage is: its own name. */
#define RESIDUAL_PART(name, cls) name, -1, ATTR_##cls

const struct attr_part_info attr_parts[ATTR_PARTS] = {
	[PART_RX_STACK] = { STAGE_PART(RX_STACK), PLACE_FLOW, PLACE_PEER,
			    "driver receive -> socket queue" },
	[PART_RX_SOCKQ] = { STAGE_PART(RX_SOCKQ), THREAD | PLACE_FLOW, PLACE_PROC | PLACE_PEER,
			    "data queued on the socket, application not reading" },
	[PART_TX_SENDQ] = { STAGE_PART(TX_SENDQ), FLOWDEV, PLACE_DEV,
			    "sent by the application, held by TCP (cwnd, pacing)" },
	[PART_TX_QDISC] = { STAGE_PART(TX_QDISC), PLACE_DEV, PLACE_DEV, "qdisc sojourn" },
	[PART_TX_NIC] = { STAGE_PART(TX_NIC), PLACE_DEV, PLACE_DEV, "driver -> transmitted" },
	[PART_RETRANS_LOSS] = { SPLIT_PART(TCP_RETRANS, TRANSPORT), FLOWDEV, PLACE_DEV,
				"waiting for retransmission, no queue-drop evidence" },
	[PART_RETRANS_QUEUE] = { SPLIT_PART(TCP_RETRANS, CONGESTION), FLOWDEV, PLACE_DEV,
				 "waiting for retransmission after queue drops / ECN CE" },
	[PART_RTT_BASE] = { SPLIT_PART(TCP_RTT, TRANSPORT), FLOWDEV, PLACE_DEV,
			    "round trip at the path minimum" },
	[PART_RTT_QUEUE] = { SPLIT_PART(TCP_RTT, CONGESTION), FLOWDEV, PLACE_DEV,
			     "round trip inflation above the path minimum" },
	/* a wait for a CPU is about the CPU, whichever thread of the process waited */
	[PART_SCHED_RUNQ] = { STAGE_PART(SCHED_RUNQ), PLACE_PROC | PLACE_CPU, PLACE_PROC,
			      "serving thread runnable, waiting for a CPU" },
	[PART_SCHED_ONCPU] = { STAGE_PART(SCHED_ONCPU), THREAD, PLACE_PROC,
			       "serving thread on CPU" },
	[PART_SCHED_OFFCPU] = { STAGE_PART(SCHED_OFFCPU), THREAD, PLACE_PROC,
				"serving thread blocked (not in a GPU wait)" },
	[PART_GPU_WAIT] = { STAGE_PART(GPU_WAIT), THREAD, PLACE_PROC,
			    "serving thread blocked in a CUDA synchronisation call" },
	[PART_APP_OTHER] = { RESIDUAL_PART("app.other", COMPUTE), THREAD, PLACE_PROC,
			     "server: before the first response, no thread stage" },
	[PART_REMOTE] = { RESIDUAL_PART("remote", UNATTRIBUTED), PLACE_FLOW, PLACE_PEER,
			  "client: peer and network beyond the round trip" },
	[PART_UNCOVERED] = { RESIDUAL_PART("unattributed", UNATTRIBUTED), PLACE_FLOW, PLACE_PEER,
			     "covered by no stage" },
	/* named by its cause: the stage is tx.sendq, the wait is the loss recovery's */
	[PART_TX_SENDQ_LOSS] = { SPLIT_PART(TCP_RETRANS, TRANSPORT), FLOWDEV, PLACE_DEV,
				 "response held in the send queue while TCP recovers from loss" },
	/* the backlog drains when the NET_RX softirq gets the CPU: the host's compute */
	[PART_RX_BACKLOG] = { STAGE_PART(RX_BACKLOG), PLACE_FLOW, PLACE_PEER,
			      "received, waiting in the backlog/GRO for the NET_RX softirq" },
};

const struct attr_part_info *attr_part_info(enum attr_part p)
{
	return (unsigned)p < ATTR_PARTS ? &attr_parts[p] : NULL;
}

const char *attr_class_name(enum attr_class c)
{
	/* the component classes are the catalogue's */
	if (c == ATTR_UNATTRIBUTED)
		return "unattributed";
	return (unsigned)c < ATTR_CLASSES ? class_name((enum tt_class)c) : "?";
}

/* A retransmission counts as congestion only with evidence that a queue was full: ECN CE,
 * or queue drops on the flow while the request also saw a standing queue (its own qdisc
 * sojourn or an inflated RTT). Drops without a queue (a lossy link emulated by a qdisc)
 * stay transport. */
#define ATTR_QUEUE_SOJOURN_NS 1000000ULL
#define ATTR_RTT_INFLATION_NS 1000000ULL

static bool queue_evidence(const struct req_event *ev, __u64 base)
{
	__u64 infl_min = ATTR_RTT_INFLATION_NS;

	if (ev->stage_ns[STAGE_TX_QDISC] >= ATTR_QUEUE_SOJOURN_NS)
		return true;
	if (!base || ev->srtt_ns <= base)
		return false;
	if (base / 4 > infl_min)
		infl_min = base / 4;
	return ev->srtt_ns - base >= infl_min;
}

struct filler {
	__u64 budget;            /* wall time of the phase not yet claimed */
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
	PART_RX_BACKLOG,  PART_RX_STACK,     PART_SCHED_RUNQ, PART_GPU_WAIT,
	PART_SCHED_ONCPU, PART_SCHED_OFFCPU, PART_RX_SOCKQ,
};
static const enum attr_part srv_response[] = {
	PART_RETRANS_QUEUE, PART_RETRANS_LOSS, PART_TX_QDISC, PART_TX_SENDQ,   PART_TX_SENDQ_LOSS,
	PART_TX_NIC,        PART_RX_BACKLOG,   PART_RX_STACK, PART_SCHED_RUNQ, PART_GPU_WAIT,
	PART_SCHED_ONCPU,   PART_SCHED_OFFCPU, PART_RX_SOCKQ,
};
static const enum attr_part cli_request[] = {
	PART_RETRANS_QUEUE, PART_RETRANS_LOSS, PART_TX_QDISC,   PART_TX_SENDQ,
	PART_TX_SENDQ_LOSS, PART_TX_NIC,       PART_RX_BACKLOG, PART_RX_STACK,
};
/* the client's own reading: runq, then the data it leaves on the socket */
static const enum attr_part cli_read[] = {
	PART_SCHED_RUNQ, PART_RX_SOCKQ, PART_SCHED_ONCPU,   PART_GPU_WAIT,
	PART_RX_BACKLOG, PART_RX_STACK, PART_RETRANS_QUEUE, PART_RETRANS_LOSS,
	PART_TX_QDISC,   PART_TX_SENDQ, PART_TX_SENDQ_LOSS, PART_TX_NIC,
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

void attr_split_request(const struct req_event *ev, struct attr_split *o)
{
	attr_split_request_base(ev, 0, o);
}

void attr_split_request_base(const struct req_event *ev, __u64 base_rtt_ns, struct attr_split *o)
{
	const __u64 *st = ev->stage_ns;
	struct filler f = { .out = o->part_ns };
	__u64 cls[ATTR_CLASSES] = { 0 };
	__u64 L, T = 0, base;
	bool have_first;

	memset(o, 0, sizeof(*o));
	L = ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0;
	o->latency_ns = L;
	have_first = ev->first_resp_ns > ev->start_ns && ev->first_resp_ns <= ev->end_ns;
	if (have_first)
		T = ev->first_resp_ns - ev->start_ns;
	o->ttft_ns = T;
	/* the path's floor when the caller knows one below the flow's own minimum */
	base = ev->min_rtt_ns ? ev->min_rtt_ns : ev->srtt_ns;
	if (base_rtt_ns && base_rtt_ns < base)
		base = base_rtt_ns;
	o->retrans_congestion = (ev->retrans || st[STAGE_TCP_RETRANS]) &&
				(ev->ecn_ce || (ev->drops && queue_evidence(ev, base)));

	f.avail[PART_RX_BACKLOG] = st[STAGE_RX_BACKLOG];
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
	f.avail[PART_GPU_WAIT] = st[STAGE_GPU_WAIT] < st[STAGE_SCHED_OFFCPU]
					 ? st[STAGE_GPU_WAIT]
					 : st[STAGE_SCHED_OFFCPU];
	f.avail[PART_SCHED_OFFCPU] = st[STAGE_SCHED_OFFCPU] - f.avail[PART_GPU_WAIT];

	if (ev->role == ROLE_CLIENT) {
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
	/* unrolled, attr_parts[p].class is a constant and the sums stay in registers (a loop adds
	 * through memory, each add waiting for the last one's store) */
#pragma GCC unroll 32
	for (int p = 0; p < ATTR_PARTS; p++)
		cls[attr_parts[p].class] += o->part_ns[p];
	memcpy(o->class_ns, cls, sizeof(cls));
}
