/* SPDX-License-Identifier: GPL-2.0 */
/* Loss: retransmissions by kind with tcp.retrans (time since the original transmission),
 * SYN-ACK retransmissions, drops by kernel reason and the qdisc's tail drops. */
#ifndef TT_LOSS_BPF_H
#define TT_LOSS_BPF_H

#include "flow.bpf.h"
#include "packet.bpf.h"
#include "requests.bpf.h"
#include "sends.bpf.h"

static __always_inline void handle_retransmit(struct sock *sk, struct sk_buff *skb)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	struct flow *f;
	__u32 segs, seq, state;
	__u64 now;

	f = flow_traced(sk);
	if (!f)
		return;
	segs = skb_gso_segs(skb);
	if (!segs)
		segs = 1;
	cnt_add(CNT_RETRANS, segs);
	f->retrans_seen += segs;
	retrans_sync(f, sk);
	now = bpf_ktime_get_ns();
	f->last_retrans_ns = now;
	state = BPF_CORE_READ_BITFIELD_PROBED(icsk, icsk_ca_state);
	if (state == 4 /* TCP_CA_Loss */)
		cnt_add(CNT_RETRANS_RTO, segs);
	else if (state == 3 /* TCP_CA_Recovery */)
		cnt_add(CNT_RETRANS_FAST, segs);
	else if (BPF_CORE_READ(icsk, icsk_pending) == 5 /* ICSK_TIME_LOSS_PROBE (3 is PROBE0) */)
		cnt_add(CNT_RETRANS_TLP, segs);
	else
		cnt_add(CNT_RETRANS_OTHER, segs);
	if (f->phase != REQ_IDLE) {
		f->req.retrans += segs;
		if (state == 4)
			f->req.retrans_rto += segs;
	}
	/* time since the original transmission of the first byte of this segment, which
	 * net_dev_queue notes only while the deep tier runs */
	if (!deep_on())
		return;
	seq = BPF_CORE_READ((struct tcp_skb_cb *)&skb->cb[0], seq);
	/* ring entries are in increasing end_seq order from the oldest (txseq_next): the
	 * first one ending after seq holds the original transmission of that byte */
	for (int i = 0; i < TXSEQ_SLOTS; i++) {
		struct txseq_entry *e = &f->txseq[(f->txseq_next + i) % TXSEQ_SLOTS];

		if (e->ts <= deep_since_ns || (__s32)(e->end_seq - seq) <= 0)
			continue;
		if (now > e->ts) {
			flow_sample(f, STAGE_TCP_RETRANS, now - e->ts);
			req_stage(f, STAGE_TCP_RETRANS, e->ts, now);
		}
		return;
	}
	cnt_add(CNT_RETRANS_UNTIMED, segs);
}

/* Newer kernels (after 6.12) fire the event for every attempt, with its error */
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tt_tcp_retransmit_skb, struct sock *sk, struct sk_buff *skb, int err)
{
	if (!err) /* the kernel counts only retransmissions that went out */
		handle_retransmit(sk, skb);
	return 0;
}

/* Older ones fire it only for retransmissions that went out, with no error */
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tt_tcp_retransmit_skb_sent, struct sock *sk, struct sk_buff *skb)
{
	handle_retransmit(sk, skb);
	return 0;
}

/* Drops by a full or policing queue: the congestion evidence for retransmissions. Each
 * reason is looked up by name (CO-RE), as the enum's values move between kernels. */
#define QUEUE_REASON(name)                                                                         \
	(bpf_core_enum_value_exists(enum skb_drop_reason, name) &&                                 \
	 r == bpf_core_enum_value(enum skb_drop_reason, name))

static __always_inline bool queue_drop(__u32 r)
{
	return QUEUE_REASON(SKB_DROP_REASON_QDISC_DROP) ||
	       QUEUE_REASON(SKB_DROP_REASON_QDISC_OVERLIMIT) ||
	       QUEUE_REASON(SKB_DROP_REASON_QDISC_CONGESTED) ||
	       QUEUE_REASON(SKB_DROP_REASON_CAKE_FLOOD) ||
	       QUEUE_REASON(SKB_DROP_REASON_FQ_BAND_LIMIT) ||
	       QUEUE_REASON(SKB_DROP_REASON_FQ_FLOW_LIMIT);
}

/* SYN-ACK retransmissions happen on request sockets, before any flow exists; the kernel
 * counts them in TcpRetransSegs and each costs the client about a second. */
SEC("tp_btf/tcp_retransmit_synack")
int BPF_PROG(tt_tcp_retransmit_synack, struct sock *sk, struct request_sock *req)
{
	__u16 lport = BPF_CORE_READ(req, __req_common.skc_num);
	__u16 rport = bpf_ntohs(BPF_CORE_READ(req, __req_common.skc_dport));

	if (!port_selected(lport, rport))
		return 0;
	cnt_add(CNT_RETRANS, 1);
	cnt_add(CNT_RETRANS_SYNACK, 1);
	return 0;
}

/* `has_reason`: the kernel gives drop reasons (5.17+); without them a drop is counted, but
 * no drop can be told to be a queue's */
static __always_inline void handle_kfree_skb(struct sk_buff *skb, __u32 reason, struct sock *rx_sk,
					     bool has_reason)
{
	struct pkt_stamp st = {};
	struct flow *f;
	__u32 r = reason;
	bool queued;

	/* a stamped packet freed before its stage ended gives no sample: its stamp stays
	 * counted as unmatched, unless the drop is counted as a qdisc drop below */
	queued = stamp_take(&qdisc_stamps, skb, &st);
	if (stamp_take(&rx_stamps, skb, &st))
		cnt_add(CNT_PKT_DELETES, (__u64)-1);
	f = flow_get(skb->sk ? skb->sk : rx_sk, false);
	/* the enqueue tracepoint fires only for accepted packets: tail drops are seen here */
	if (has_reason && queue_drop(r) &&
	    (targ_ndevs ? dev_selected(skb->dev) : (f && f->verdict == FLOW_TRACED)))
		cnt_add(CNT_QDISC_DROPS, 1);
	else if (queued)
		cnt_add(CNT_PKT_DELETES, (__u64)-1);
	if (!f || f->verdict != FLOW_TRACED)
		return;
	cnt_add(CNT_DROPS, 1);
	if (r >= TT_DROP_REASONS)
		r = TT_DROP_REASONS - 1;
	{
		__u64 *c = bpf_map_lookup_elem(&drop_reasons, &r);

		if (c)
			*c += 1;
	}
	/* the request keeps queue drops only: other drops (filters, bad checksums) are not
	 * evidence of congestion */
	if (!has_reason || !queue_drop(reason))
		return;
	if (f->phase != REQ_IDLE)
		f->req.drops++;
	/* a send whose last byte a full qdisc dropped here waits in TCP until a later
	 * attempt gets through (after a local drop, often the RTO-based probe timer) */
	if (skb->sk && f->send_xmit != f->send_queued) {
		__u32 seq, end = skb_tcp_end(skb, &seq);

		if (end != seq)
			sends_unqueue(f, seq, end);
	}
}

/* 6.12+: the receiving socket of a drop in the receive path is an argument */
SEC("tp_btf/kfree_skb")
int BPF_PROG(tt_kfree_skb, struct sk_buff *skb, void *location, enum skb_drop_reason reason,
	     struct sock *rx_sk)
{
	handle_kfree_skb(skb, reason, rx_sk, true);
	return 0;
}

/* 5.17 - 6.11: a reason, no receiving socket */
SEC("tp_btf/kfree_skb")
int BPF_PROG(tt_kfree_skb_reason, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	handle_kfree_skb(skb, reason, NULL, true);
	return 0;
}

/* before 5.17: neither */
SEC("tp_btf/kfree_skb")
int BPF_PROG(tt_kfree_skb_noreason, struct sk_buff *skb, void *location)
{
	handle_kfree_skb(skb, 0, NULL, false);
	return 0;
}

#endif
