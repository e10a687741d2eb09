// SPDX-License-Identifier: GPL-2.0
/* Stage -> hook table: which kernel hooks each stage needs, and whether this kernel has
 * them. Pure, so `probe` and the collector agree and tests can drive it with fake caps. */
#include <stdio.h>
#include <string.h>
#include "collect/kernel_caps.h"

struct feed_rule {
	enum tt_stage stage;
	int kind;		/* enum probe_kind required, -1 none beyond tracepoints */
	const char *tps[4];	/* tracepoints required (tp_btf) */
	const char *hook;
};

static const struct feed_rule rules[] = {
	{ STAGE_TX_SENDQ, -1,
	  { "tcp:tcp_sendmsg_locked", "sock:sock_send_length", "net:net_dev_queue" },
	  "tp_btf tcp:tcp_sendmsg_locked -> net:net_dev_queue of the send's last byte" },
	{ STAGE_TX_QDISC, -1, { "qdisc:qdisc_enqueue", "qdisc:qdisc_dequeue" },
	  "tp_btf qdisc:qdisc_enqueue -> qdisc:qdisc_dequeue" },
	{ STAGE_TX_NIC, -1, { "net:net_dev_start_xmit", "net:net_dev_xmit" },
	  "tp_btf net:net_dev_start_xmit -> net:net_dev_xmit" },
	{ STAGE_TX_ACK, -1,
	  { "tcp:tcp_sendmsg_locked", "net:net_dev_queue", "net:net_dev_start_xmit", "tcp:tcp_probe" },
	  "tp_btf net:net_dev_start_xmit of the send's last byte -> tcp:tcp_probe of its ACK" },
	{ STAGE_RX_STACK, -1, { "net:netif_receive_skb", "tcp:tcp_probe" },
	  "tp_btf net:netif_receive_skb -> tcp:tcp_probe" },
	{ STAGE_RX_SOCKQ, -1, { "sock:sk_data_ready", "sock:sock_recv_length" },
	  "tp_btf sock:sk_data_ready -> sock:sock_recv_length" },
	{ STAGE_TCP_RTT, -1, { "tcp:tcp_probe" }, "tp_btf tcp:tcp_probe (srtt, min RTT)" },
	{ STAGE_TCP_RETRANS, -1, { "net:net_dev_queue", "tcp:tcp_retransmit_skb" },
	  "tp_btf net:net_dev_queue (first send) -> tcp:tcp_retransmit_skb" },
	{ STAGE_SCHED_RUNQ, -1, { "sched:sched_switch", "sched:sched_wakeup" },
	  "tp_btf sched:sched_wakeup -> sched:sched_switch" },
	{ STAGE_SCHED_ONCPU, -1, { "sched:sched_switch" }, "tp_btf sched:sched_switch" },
	{ STAGE_SCHED_OFFCPU, -1, { "sched:sched_switch", "sched:sched_wakeup" },
	  "tp_btf sched:sched_switch -> sched:sched_wakeup" },
	{ STAGE_GPU_WAIT, PK_UPROBE, { "sched:sched_switch", "sched:sched_wakeup" },
	  "uprobes on libcuda cu*Synchronize + sched tracepoints (--cuda)" },
	{ STAGE_REQ_LATENCY, -1, { "tcp:tcp_sendmsg_locked", "tcp:tcp_probe", "sock:sock_recv_length" },
	  "request segmentation on tcp_sendmsg_locked / tcp_probe / sock_recv_length" },
	{ STAGE_REQ_TTFT, -1, { "tcp:tcp_sendmsg_locked", "tcp:tcp_probe" },
	  "request segmentation (first response byte)" },
	{ STAGE_REQ_GAP, -1, { "tcp:tcp_sendmsg_locked" }, "request segmentation (chunk gaps)" },
	{ STAGE_RDMA_WR, PK_UPROBE, { 0 }, "uprobes on the verbs provider's post/poll functions" },
	{ STAGE_RDMA_CQ_EVENT, PK_UPROBE, { 0 }, "uprobe/uretprobe on ibv_get_cq_event" },
};

void stage_feed_of(const struct kernel_caps *c, enum tt_stage s, struct stage_feed *out)
{
	memset(out, 0, sizeof(*out));
	out->hook = "none";
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		const struct feed_rule *r = &rules[i];

		if (r->stage != s)
			continue;
		out->hook = r->hook;
		if (!c->btf) {
			snprintf(out->why, sizeof(out->why), "no kernel BTF (tp_btf and CO-RE need it)");
			return;
		}
		if (r->kind >= 0 && !c->kinds[r->kind].available) {
			snprintf(out->why, sizeof(out->why), "%s unavailable: %s",
				 probe_kind_name(r->kind), c->kinds[r->kind].detail);
			return;
		}
		for (int t = 0; t < 4 && r->tps[t]; t++) {
			if (!kernel_caps_has_tp(c, r->tps[t])) {
				snprintf(out->why, sizeof(out->why), "tracepoint %s missing", r->tps[t]);
				return;
			}
		}
		out->available = true;
		return;
	}
	snprintf(out->why, sizeof(out->why), "no hook known");
}
