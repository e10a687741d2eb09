// SPDX-License-Identifier: GPL-2.0
/* Stage names and classes: the single table behind docs/stages.md and every output. */
#include <errno.h>
#include <string.h>
#include "core/stages.h"

static const struct stage_info stages[STAGE__MAX] = {
	[STAGE_TX_SENDQ] = { STAGE_TX_SENDQ, "tx.sendq", CLASS_CONGESTION,
			     "application send -> data leaves TCP for IP/qdisc" },
	[STAGE_TX_QDISC] = { STAGE_TX_QDISC, "tx.qdisc", CLASS_CONGESTION,
			     "qdisc enqueue -> dequeue" },
	[STAGE_TX_NIC] = { STAGE_TX_NIC, "tx.nic", CLASS_TRANSPORT,
			   "handed to the driver -> software TX timestamp" },
	[STAGE_TX_ACK] = { STAGE_TX_ACK, "tx.ack", CLASS_SPLIT,
			   "data sent -> cumulatively acknowledged" },
	[STAGE_RX_STACK] = { STAGE_RX_STACK, "rx.stack", CLASS_TRANSPORT,
			     "driver receive -> queued on the socket" },
	[STAGE_RX_SOCKQ] = { STAGE_RX_SOCKQ, "rx.sockq", CLASS_COMPUTE,
			     "queued on the socket -> read by the application" },
	[STAGE_TCP_RTT] = { STAGE_TCP_RTT, "tcp.rtt", CLASS_SPLIT, "smoothed RTT samples" },
	[STAGE_TCP_RETRANS] = { STAGE_TCP_RETRANS, "tcp.retrans", CLASS_TRANSPORT,
				"original transmission -> retransmission" },
	[STAGE_SCHED_RUNQ] = { STAGE_SCHED_RUNQ, "sched.runq", CLASS_COMPUTE,
			       "serving thread runnable, waiting for a CPU" },
	[STAGE_SCHED_ONCPU] = { STAGE_SCHED_ONCPU, "sched.oncpu", CLASS_COMPUTE,
				"serving thread on CPU inside a request" },
	[STAGE_SCHED_OFFCPU] = { STAGE_SCHED_OFFCPU, "sched.offcpu", CLASS_COMPUTE,
				 "serving thread blocked inside a request" },
	[STAGE_GPU_WAIT] = { STAGE_GPU_WAIT, "gpu.wait", CLASS_COMPUTE,
			     "blocked inside a CUDA synchronisation call" },
	[STAGE_REQ_LATENCY] = { STAGE_REQ_LATENCY, "req.latency", CLASS_REQUEST,
				"request start -> end on the socket" },
	[STAGE_REQ_TTFT] = { STAGE_REQ_TTFT, "req.ttft", CLASS_REQUEST,
			     "request start -> first response byte" },
	[STAGE_REQ_GAP] = { STAGE_REQ_GAP, "req.gap", CLASS_REQUEST,
			    "gap between response chunks" },
	[STAGE_RDMA_WR] = { STAGE_RDMA_WR, "rdma.wr", CLASS_TRANSPORT,
			    "RDMA work request post -> completion" },
	[STAGE_RDMA_CQ_EVENT] = { STAGE_RDMA_CQ_EVENT, "rdma.cq_event", CLASS_COMPUTE,
				  "completion event -> waiter woken" },
};

const struct stage_info *stage_info(enum tt_stage id)
{
	if ((unsigned)id >= STAGE__MAX)
		return NULL;
	return &stages[id];
}

int stage_by_name(const char *name)
{
	for (int i = 0; i < STAGE__MAX; i++)
		if (!strcmp(stages[i].name, name))
			return i;
	return -ENOENT;
}

const char *class_name(enum tt_class c)
{
	static const char *const names[CLASS__MAX] = { "compute", "transport", "congestion",
						       "split", "request" };

	return (unsigned)c < CLASS__MAX ? names[c] : "?";
}

static const char *const group_names[GROUP__MAX] = { "none", "port", "raddr", "comm",
						     "cgroup" };

const char *group_by_name(enum tt_group_by by)
{
	return (unsigned)by < GROUP__MAX ? group_names[by] : "?";
}

int group_by_parse(const char *s)
{
	for (int i = 0; i < GROUP__MAX; i++)
		if (!strcmp(group_names[i], s))
			return i;
	return -EINVAL;
}
