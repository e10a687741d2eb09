/* SPDX-License-Identifier: GPL-2.0 */
/* Transmit stages: tx.sendq (sendmsg to the device queue), tx.qdisc, tx.nic (the driver's
 * xmit), the start of tx.ring (nic.bpf.h) and, with sends.bpf.h, tx.ack; whether a send
 * waits for a loss. */
#ifndef TT_TX_BPF_H
#define TT_TX_BPF_H

#include "flow.bpf.h"
#include "framing.bpf.h"
#include "nic.bpf.h"
#include "packet.bpf.h"
#include "requests.bpf.h"
#include "sched.bpf.h"
#include "sends.bpf.h"
#include "stash.bpf.h"
#include "tls.bpf.h"

/* TCP is recovering from a loss (Recovery or Loss state, or segments marked lost): sends
 * made now wait for the loss, not for a queue. */
/* How long after a retransmission a send still counts as held back by the loss: cwnd and
 * the pacing rate (BBR estimates bandwidth from the delivery during the recovery) take
 * several round trips, and several timeouts, to come back. */
#define LOSS_AFTERMATH_NS 1000000000ULL

static __always_inline bool in_loss_recovery(struct sock *sk)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u8 state = BPF_CORE_READ_BITFIELD_PROBED(icsk, icsk_ca_state);

	return state == 3 /* TCP_CA_Recovery */ || state == 4 /* TCP_CA_Loss */ ||
	       BPF_CORE_READ(tp, lost_out) || BPF_CORE_READ(tp, retrans_out);
}

/* A send at time t is held back by a loss: TCP is recovering, or retransmitted within
 * LOSS_AFTERMATH_NS. A flow that never retransmitted skips the socket reads. */
static __always_inline bool loss_holds(struct flow *f, struct sock *sk, __u64 t)
{
	if (!f->last_retrans_ns)
		return false;
	return (t > f->last_retrans_ns && t - f->last_retrans_ns < LOSS_AFTERMATH_NS) ||
	       in_loss_recovery(sk);
}

/* A client's data received and not read yet (a FIN is no data); only asked when a new
 * request may start: after a response. */
static __always_inline __u32 client_unread(struct flow *f, struct sock *sk, struct tcp_sock *tp,
					   bool btf)
{
	__u32 n;

	if (!targ_requests || f->role != ROLE_CLIENT || f->phase != REQ_OUT)
		return 0;
	n = TT_READ(btf, tp, rcv_nxt) - TT_READ(btf, tp, copied_seq);
	if (n && (BPF_CORE_READ_BITFIELD_PROBED(sk, sk_shutdown) & 1))
		n--;
	return n;
}

/* The application starts a send of `left` bytes on sk (`btf`: a typed pointer, whose fields
 * are plain loads; else a raw address, read with probe reads). */
static __always_inline void handle_send_start(struct sock *sk, __u32 left, bool btf)
{
	struct flow *f = flow_owner(sk, btf);
	struct tcp_sock *tp;
	__u32 tid, write_seq;
	__u64 now;

	/* the tracepoint fires for every skb the send fills: the first one starts the send */
	if (!f || f->send_start_ns)
		return;
	tp = btf ? bpf_skc_to_tcp_sock(sk) : (struct tcp_sock *)sk;
	if (!tp)
		return;
	now = bpf_ktime_get_ns();
	tid = f->tid; /* flow_owner() just stored the current thread */
	f->send_start_ns = now;
	write_seq = TT_READ(btf, tp, write_seq);
	retrans_sync_total(f, TT_READ(btf, tp, total_retrans));
	send_begin(f, write_seq, left, now);
	flow_track_thread(f, tid);
	tls_bind(f, true);
	req_on_send(f, now, tid, write_seq, client_unread(f, sk, tp, btf));
	if (targ_requests && f->phase != REQ_IDLE && loss_holds(f, sk, now))
		f->req.flags |= REQ_F_LOSS_RECOVERY;
}

/* The send returned `ret` (bytes taken, or an error). */
static __always_inline void handle_send_end(struct sock *sk, int ret, bool btf)
{
	struct flow *f = sk_ports_selected(sk, btf) ? flow_get(sk, false) : NULL;

	if (f && f->send_start_ns) {
		__u64 now = bpf_ktime_get_ns();

		f->send_start_ns = 0;
		f->last_send_end_ns = now;
		send_end(f, ret);
		if (!deep_on()) {
			req_on_send_return(f, now, ret);
			/* a server's HTTP/2 streams whose END_STREAM this send carried */
			if (f->h2_npending && f->role != ROLE_CLIENT && ret > 0)
				h2_pending_done(f, f->send_seq + (__u32)ret, now);
		}
	}
}

/* Where a send starts, cheapest first (bpf/program_catalogue.h): the tracepoint (after 6.12),
 * fentry on the function it sits in, a kprobe there. */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(tt_tcp_sendmsg, struct sock *sk, struct msghdr *msg, struct sk_buff *skb,
	     int size_goal)
{
	handle_send_start(sk, (__u32)msg->msg_iter.count, true);
	return 0;
}

SEC("fentry/tcp_sendmsg_locked")
int BPF_PROG(tt_tcp_sendmsg_fentry, struct sock *sk, struct msghdr *msg, size_t size)
{
	handle_send_start(sk, (__u32)msg->msg_iter.count, true);
	return 0;
}

SEC("kprobe/tcp_sendmsg_locked")
int BPF_KPROBE(tt_tcp_sendmsg_kprobe, struct sock *sk, struct msghdr *msg)
{
	handle_send_start(sk, (__u32)BPF_CORE_READ(msg, msg_iter.count), false);
	return 0;
}

/* Where it ends: the tracepoint (6.3+), fexit, or a kretprobe, which has no arguments: a
 * kprobe of its own keeps the socket per thread until then (the send may sleep). */
SEC("tp_btf/sock_send_length")
int BPF_PROG(tt_sock_send_length, struct sock *sk, int ret, int flags)
{
	handle_send_end(sk, ret, true);
	return 0;
}

SEC("fexit/tcp_sendmsg_locked")
int BPF_PROG(tt_tcp_sendmsg_fexit, struct sock *sk, struct msghdr *msg, size_t size, int ret)
{
	handle_send_end(sk, ret, true);
	return 0;
}

SEC("kprobe/tcp_sendmsg_locked")
int BPF_KPROBE(tt_tcp_sendmsg_stash, struct sock *sk)
{
	if (sk_ports_selected(sk, false))
		io_stash_put(IO_SEND, sk, 0);
	return 0;
}

SEC("kretprobe/tcp_sendmsg_locked")
int BPF_KRETPROBE(tt_tcp_sendmsg_kretprobe, int ret)
{
	struct io_stash st;

	if (io_stash_take(IO_SEND, &st))
		handle_send_end((struct sock *)st.sk, ret, false);
	return 0;
}

/* A packet is timed when its socket is traced, or, with --dev, when it crosses a selected
 * device (forwarded packets have no socket). */
static __always_inline bool skb_selected(struct sk_buff *skb, struct net_device *dev,
					 struct flow **fp)
{
	struct flow *f = sk_ports_selected(skb->sk, true) ? flow_get(skb->sk, false) : NULL;

	*fp = f && f->verdict == FLOW_TRACED ? f : NULL;
	if (targ_ndevs)
		return dev_selected(dev);
	return *fp != NULL;
}

static __always_inline void qdisc_in(struct sk_buff *skb, struct net_device *dev)
{
	struct pkt_stamp st = {};
	struct flow *f;

	if (!skb_selected(skb, dev, &f))
		return;
	st.ts = bpf_ktime_get_ns();
	stamp_put(&qdisc_stamps, skb, &st);
}

/* First transmissions of a traced flow's data: kept per flow so a retransmission can be
 * timed from the original send. */
SEC("tp_btf/net_dev_queue")
int BPF_PROG(tt_net_dev_queue, struct sk_buff *skb)
{
	struct flow *f = sk_ports_selected(skb->sk, true) ? flow_get(skb->sk, false) : NULL;
	struct sock *sk = skb->sk;
	__u32 seq, end, i;
	__u64 now, sent;

	/* a kernel without qdisc:qdisc_enqueue: the packet's qdisc wait starts here, a few
	 * hundred nanoseconds of stack before the qdisc */
	if (targ_qdisc_at_dev_queue)
		qdisc_in(skb, skb->dev);
	if (!f || f->verdict != FLOW_TRACED || !sk)
		return 0;
	end = skb_tcp_end(skb, &seq);
	if (end == seq)
		return 0; /* pure ACK */
	now = bpf_ktime_get_ns();
	/* before the retransmission test: data a full qdisc dropped comes again with the same
	 * sequence numbers, and its sends leave TCP then */
	if (f->send_queued != f->send_next) {
		sent = sends_queued(f, end, now);
		/* data leaving after a long wait while TCP recovers: the loss held it */
		if (sent && targ_requests && f->phase != REQ_IDLE && loss_holds(f, sk, sent))
			f->req.flags |= REQ_F_LOSS_RECOVERY;
	}
	i = f->qseq_next++ % QSEQ_SLOTS;
	f->qseq[i].seq = seq;
	f->qseq[i].end_seq = end;
	f->qseq[i].ts = now;
	if (f->txseq_max && (__s32)(end - f->txseq_max) <= 0)
		return 0; /* a retransmission: the ring keeps first transmissions */
	f->txseq_max = end;
	i = f->txseq_next++ % TXSEQ_SLOTS;
	f->txseq[i].end_seq = end;
	f->txseq[i].ts = now;
	return 0;
}

SEC("tp_btf/qdisc_enqueue")
int BPF_PROG(tt_qdisc_enqueue, struct Qdisc *q, struct netdev_queue *txq, struct sk_buff *skb)
{
	qdisc_in(skb, q->dev_queue->dev);
	return 0;
}

/* Enqueue time of a segment the qdisc created by splitting a GSO packet: the latest
 * transmission whose sequence range holds the segment's first byte. The ring is walked
 * from its newest entry and the first match ends the walk: a running maximum over all the
 * slots cost the verifier 16 paths a slot inside tt_qdisc_dequeue's loop. */
static __always_inline bool qseq_enqueue_time(struct flow *f, struct sk_buff *skb,
					      struct pkt_stamp *st)
{
	__u32 seq, newest = f->qseq_next;

	if (skb_tcp_end(skb, &seq) == seq)
		return false; /* no payload, or the header could not be read */
	for (int k = 1; k <= QSEQ_SLOTS; k++) {
		struct qseq_entry *e = &f->qseq[(newest - k) % QSEQ_SLOTS];

		if (e->ts > deep_since_ns && (__s32)(seq - e->seq) >= 0 &&
		    (__s32)(e->end_seq - seq) > 0) {
			st->ts = e->ts;
			return true;
		}
	}
	return false;
}

static __always_inline void qdisc_out(struct Qdisc *q, struct sk_buff *skb, __u64 now)
{
	struct dev_cache_entry *ce;
	struct pkt_stamp st = {};
	struct dev_key dk;
	struct flow *f;
	__u32 handle, segs;

	if (!skb_selected(skb, q->dev_queue->dev, &f))
		return;
	/* one count per wire packet, as tc's "Sent ... pkt": a GSO skb small enough for the
	 * qdisc not to segment it (tbf: <= its burst) leaves as one skb of gso_segs packets */
	segs = skb_gso_segs(skb);
	cnt_add(CNT_QDISC_PKTS, segs ? segs : 1);
	if (!stamp_take(&qdisc_stamps, skb, &st) && !(f && qseq_enqueue_time(f, skb, &st)))
		return;
	ce = remember_dev(q->dev_queue->dev, &dk);
	handle = q->handle;
	if (f) {
		f->ifindex = dk.ifindex;
		f->netns = dk.netns;
		f->qdisc_handle = handle;
		req_stage(f, STAGE_TX_QDISC, st.ts, now);
	}
	if (f && targ_by != GROUP_NONE)
		flow_sample_at(f, STAGE_TX_QDISC, now - st.ts, dk.ifindex, dk.netns, handle);
	else
		place_sample(ce, &dk, STAGE_TX_QDISC, handle, now - st.ts);
}

SEC("tp_btf/qdisc_dequeue")
int BPF_PROG(tt_qdisc_dequeue, struct Qdisc *q, struct netdev_queue *txq, int packets,
	     struct sk_buff *skb)
{
	__u64 now = bpf_ktime_get_ns();

	/* bulk dequeue hands over a list linked through skb->next */
	for (int i = 0; i < 16 && skb; i++) {
		if (i >= packets)
			break;
		qdisc_out(q, skb, now);
		skb = skb->next;
	}
	return 0;
}

SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(tt_net_dev_start_xmit, struct sk_buff *skb, struct net_device *dev)
{
	struct nic_slot *slot;
	__u32 zero = 0;
	struct flow *f;
	__u64 now;

	if (targ_qdisc_at_dev_queue) {
		struct pkt_stamp st;

		/* stamped at net_dev_queue, and no qdisc dequeued it (noqueue, or a bypass) */
		stamp_take(&qdisc_stamps, skb, &st);
	}
	if (!skb_selected(skb, dev, &f))
		return 0;
	now = bpf_ktime_get_ns();
	slot = bpf_map_lookup_elem(&nic_slots, &zero);
	if (slot) {
		slot->skb = (__u64)skb;
		slot->sk = (__u64)skb->sk;
		slot->ts = now;
		slot->freed = 0;
	}
	if (f) {
		/* where the driver's software TX timestamp is taken; only while a send waits
		 * for it, so most packets cost no header read */
		if (f->send_xmit != f->send_queued) {
			__u32 seq, end = skb_tcp_end(skb, &seq);

			if (end != seq)
				sends_xmit(f, end, now);
		}
		req_on_tx_out(f, now, skb->len);
		if (f->h2_npending) {
			__u32 seq, end = skb_tcp_end(skb, &seq);

			if (end != seq)
				h2_pending_done(f, end, now);
		}
	}
	return 0;
}

SEC("tp_btf/net_dev_xmit")
int BPF_PROG(tt_net_dev_xmit, struct sk_buff *skb, int rc, struct net_device *dev, unsigned int len)
{
	struct dev_cache_entry *ce;
	struct nic_slot *slot;
	struct dev_key dk;
	__u32 zero = 0;
	struct flow *f;
	__u64 now;

	slot = bpf_map_lookup_elem(&nic_slots, &zero);
	if (!slot || slot->skb != (__u64)skb)
		return 0;
	slot->skb = 0;
	now = bpf_ktime_get_ns();
	if (targ_nic)
		tx_ring_start(slot, skb, dev, rc, now);
	ce = remember_dev(dev, &dk);
	f = flow_get((struct sock *)slot->sk, false);
	if (f && f->verdict != FLOW_TRACED)
		f = NULL;
	if (f && !f->ifindex) {
		/* a device without a qdisc (noqueue: veth, loopback) names the flow's way out */
		f->ifindex = dk.ifindex;
		f->netns = dk.netns;
	}
	if (f)
		req_stage(f, STAGE_TX_NIC, slot->ts, now);
	if (f && targ_by != GROUP_NONE)
		flow_sample_at(f, STAGE_TX_NIC, now - slot->ts, dk.ifindex, dk.netns, 0);
	else
		place_sample(ce, &dk, STAGE_TX_NIC, 0, now - slot->ts);
	return 0;
}

#endif
