/* SPDX-License-Identifier: GPL-2.0 */
/* Receive stages: rx.stack (driver to TCP), rx.sockq (queued on the socket until the
 * application reads it), tcp.rtt, ECN marks; the ACKs that end tx.ack. */
#ifndef TT_RX_BPF_H
#define TT_RX_BPF_H

#include "flow.bpf.h"
#include "framing.bpf.h"
#include "nic.bpf.h"
#include "packet.bpf.h"
#include "requests.bpf.h"
#include "sched.bpf.h"
#include "sends.bpf.h"
#include "stash.bpf.h"
#include "tls.bpf.h"

/* Driver receive: TCP data for selected ports gets a timestamp (and its ECN mark), and the
 * time it spent in the backlog or GRO before (rx.backlog, with targ_nic). */
SEC("tp_btf/netif_receive_skb")
int BPF_PROG(tt_netif_receive_skb, struct sk_buff *skb)
{
	unsigned char *data = skb->data;
	struct pkt_stamp st = {};
	__u16 proto = bpf_ntohs(skb->protocol);
	__u64 now = 0;
	__u64 backlog = targ_nic ? rx_backlog_end(skb, &now) : 0;
	__u32 thoff, tot, doff;
	__u8 tos;

	/* the headers through casts: each field one guarded load, no helper call (a load
	 * that faults reads 0, which no TCP packet passes below) */
	if (proto == ETH_P_IP) {
		TT_HDR(struct iphdr, ip, data);

		if (ip->protocol != IPPROTO_TCP)
			return 0;
		thoff = ip->ihl * 4;
		tot = bpf_ntohs(ip->tot_len);
		tos = ip->tos;
	} else if (proto == ETH_P_IPV6) {
		TT_HDR(struct ipv6hdr, ip6, data);

		if (ip6->nexthdr != IPPROTO_TCP)
			return 0;
		thoff = sizeof(*ip6);
		tot = sizeof(*ip6) + bpf_ntohs(ip6->payload_len);
		tos = (ip6->priority << 4) | (ip6->flow_lbl[0] >> 4);
	} else {
		return 0;
	}
	TT_HDR(struct tcphdr, th, data + thoff);
	doff = th->doff * 4;
	if (doff < sizeof(*th))
		return 0; /* not a TCP header (or unreadable) */
	if (!port_selected(bpf_ntohs(th->dest), bpf_ntohs(th->source)))
		return 0;
	if (backlog && targ_nports && !targ_ndevs)
		nic_sample(skb->dev, STAGE_RX_BACKLOG, skb->queue_mapping, backlog);
	st.backlog_ns = backlog < 0xffffffffULL ? (__u32)backlog : 0xffffffffu;
	if ((tos & 3) == 3)
		st.ce = 1;
	if (tot <= thoff + doff && !st.ce)
		return 0; /* pure ACK without a mark: nothing to time */
	/* the backlog's end, read a few instructions ago, is this packet's driver stamp */
	st.ts = now ? now : bpf_ktime_get_ns();
	st.len = tot > thoff + doff ? tot - thoff - doff : 0;
	st.seq = bpf_ntohl(th->seq);
	stamp_put(&rx_stamps, skb, &st);
	return 0;
}

/* Segment processed by TCP on an established socket (tcp_rcv_established): the end of
 * rx.stack, RTT samples and ECN marks. */
SEC("tp_btf/tcp_probe")
int BPF_PROG(tt_tcp_probe, struct sock *sk, struct sk_buff *skb)
{
	struct tcp_skb_cb *cb = (struct tcp_skb_cb *)skb->cb;
	struct pkt_stamp st = {};
	struct seg_ack sa;
	struct tcp_sock *tp;
	struct flow *f;
	__u64 now, srtt, minrtt;
	__u32 una, from, fresh;
	bool stamped;

	stamped = stamp_take(&rx_stamps, skb, &st);
	if (stamped && st.seq != cb->seq) {
		/* left by an earlier packet at this address that TCP never processed on an
		 * established socket: not this packet's arrival, and counted as unmatched */
		stamped = false;
		cnt_add(CNT_PKT_DELETES, (__u64)-1);
	}
	f = flow_traced(sk);
	/* a typed pointer: its fields are plain loads, not probe-read helper calls */
	tp = bpf_skc_to_tcp_sock(sk);
	if (!f || !tp)
		return 0;
	now = bpf_ktime_get_ns();
	/* a new RTT sample needs new data acknowledged: sample srtt only when snd_una moves,
	 * not on every segment */
	una = tp->snd_una;
	srtt = 0;
	if (una != f->last_snd_una) {
		f->last_snd_una = una;
		srtt = (__u64)(tp->srtt_us >> 3) * 1000;
	}
	minrtt = srtt ? (__u64)tp->rtt_min.s[0].v * 1000 : 0;
	/* tcp_probe runs for every segment, before TCP processes its ACK */
	if (f->send_acked != f->send_next && (cb->tcp_flags & TCPHDR_ACK))
		sends_acked(f, cb->ack_seq, now);
	/* data not received before: tcp_probe fires before TCP takes the segment, so rcv_nxt
	 * is still the old edge. A retransmission of data this side already has (the peer's
	 * timer fired because this side's ACK was held up) is no new request. */
	from = (__s32)(cb->seq - tp->rcv_nxt) > 0 ? cb->seq : tp->rcv_nxt;
	fresh = (__s32)(cb->end_seq - from) > 0 ? cb->end_seq - from : 0;
	if (from != tp->rcv_nxt && f->role == ROLE_CLIENT) {
		/* out of order, behind a hole: a client's response has not arrived until the
		 * hole is filled (its first byte is what the application waits for); the
		 * bytes are counted by sk_data_ready once TCP queues them */
		fresh = 0;
	} else if (!f->rx_probed || (__s32)(cb->end_seq - f->rx_probed) > 0) {
		f->rx_probed = cb->end_seq;
	}
	if (fresh && (cb->tcp_flags & TCPHDR_FIN))
		fresh--;
	if (fresh >= (1u << 30))
		fresh = 0;
	sa.ack = cb->ack_seq;
	sa.write_seq = tp->write_seq;
	sa.valid = !!(cb->tcp_flags & TCPHDR_ACK);
	if (srtt) {
		f->srtt_ns = srtt;
		if (minrtt && minrtt != ~0U * 1000ULL)
			f->min_rtt_ns = minrtt;
		flow_sample(f, STAGE_TCP_RTT, srtt);
	}
	if (!stamped) {
		/* data whose driver stamp was overwritten in a full bucket (counted as
		 * unmatched): no rx.stack sample, but the request still starts or gets its
		 * first response byte, from when TCP takes it */
		if (fresh)
			req_on_inbound(f, now, now, fresh, &sa);
		return 0;
	}
	if (st.ce) {
		cnt_add(CNT_ECN_CE, 1);
		if (f->phase != REQ_IDLE)
			f->req.ecn_ce++;
	}
	if (!st.len)
		return 0;
	flow_sample(f, STAGE_RX_STACK, now - st.ts);
	if (!fresh)
		return 0;
	/* a request starts when its first segment entered the stack: the backlog or GRO wait
	 * before the driver stamp is part of it (rx.backlog) */
	req_on_inbound(f, st.ts - st.backlog_ns, now, fresh, &sa);
	req_stage(f, STAGE_RX_BACKLOG, st.ts - st.backlog_ns, st.ts);
	req_stage(f, STAGE_RX_STACK, st.ts, now);
	return 0;
}

/* Data queued on the socket: remember (rcv_nxt, time) to time the application's read.
 * `btf`: sk is a typed pointer (plain loads), else a raw address (probe reads). */
static __always_inline void handle_data_ready(struct sock *sk, bool btf)
{
	struct flow *f = sk_ports_selected(sk, btf) ? flow_get(sk, false) : NULL;
	struct tcp_sock *tp;
	__u32 nxt, i, last;
	__u64 t = 0;

	/* a flow whose owner is not known yet (-p, --comm, --cgroup: FLOW_PENDING until its
	 * process first sends or reads) is kept: a server's request usually arrives before
	 * its process touches the accepted socket, and its arrival is only seen here. The
	 * owner's verdict at that first read keeps or drops what was recorded. */
	if (!f)
		return;
	tp = btf ? bpf_skc_to_tcp_sock(sk) : (struct tcp_sock *)sk;
	if (!tp)
		return;
	nxt = TT_READ(btf, tp, rcv_nxt);
	/* data TCP queued without passing tcp_rcv_established, where tcp_probe fires: the
	 * segment that completed a handshake whose last ACK was dropped (a full accept
	 * queue), data after this side's FIN. The request logic gets it from here, at the
	 * time it is queued. */
	if (targ_requests && (!f->rx_probed || (__s32)(nxt - f->rx_probed) > 0)) {
		__u32 bytes =
			f->rx_probed ? nxt - f->rx_probed : (__u32)TT_READ(btf, tp, bytes_received);

		/* a FIN taken here is in rcv_nxt, and is no data */
		if (f->rx_probed && bytes && (TT_READ_BITFIELD(btf, sk, sk_shutdown) & 1))
			bytes--;
		f->rx_probed = nxt;
		if (bytes) {
			/* the peer's cumulative ACK as TCP took it with this data (it processes
			 * a segment's ACK before its data): what tcp_probe reads off the
			 * segment, for the overlap tests of requests.bpf.h */
			struct seg_ack sa = {
				.ack = TT_READ(btf, tp, snd_una),
				.write_seq = TT_READ(btf, tp, write_seq),
				.valid = true,
			};

			t = bpf_ktime_get_ns();
			req_on_inbound(f, t, t, bytes, &sa);
		}
	}
	if (f->rxq_tail != f->rxq_head) {
		last = (f->rxq_tail - 1) % RXQ_SLOTS;
		if (f->rxq[last].seq_end == nxt)
			return;
	}
	if (f->rxq_tail - f->rxq_head >= RXQ_SLOTS) {
		/* full: extend the newest entry instead of losing the oldest arrival time */
		f->rxq_overflow++;
		f->rxq[(f->rxq_tail - 1) % RXQ_SLOTS].seq_end = nxt;
		return;
	}
	i = f->rxq_tail % RXQ_SLOTS;
	f->rxq[i].seq_end = nxt;
	f->rxq[i].ts = t ? t : bpf_ktime_get_ns();
	f->rxq_tail++;
}

/* Where data is queued, cheapest first (bpf/program_catalogue.h): the tracepoint (6.6+),
 * fentry on tcp_data_ready (which wakes the reader), a kprobe there. */
SEC("tp_btf/sk_data_ready")
int BPF_PROG(tt_sk_data_ready, struct sock *sk)
{
	handle_data_ready(sk, true);
	return 0;
}

SEC("fentry/tcp_data_ready")
int BPF_PROG(tt_tcp_data_ready_fentry, struct sock *sk)
{
	handle_data_ready(sk, true);
	return 0;
}

SEC("kprobe/tcp_data_ready")
int BPF_KPROBE(tt_tcp_data_ready_kprobe, struct sock *sk)
{
	handle_data_ready(sk, false);
	return 0;
}

/* The application read `ret` bytes. */
static __always_inline void handle_recv(struct sock *sk, int ret, int flags, bool btf)
{
	struct tcp_sock *tp;
	struct flow *f;
	__u32 copied, tid;
	__u64 now;

	if (ret <= 0 || (flags & 2 /* MSG_PEEK */))
		return;
	f = flow_owner(sk, btf);
	tp = btf ? bpf_skc_to_tcp_sock(sk) : (struct tcp_sock *)sk;
	if (!f || !tp)
		return;
	now = bpf_ktime_get_ns();
	tid = f->tid; /* flow_owner() just stored the current thread */
	flow_track_thread(f, tid);
	copied = TT_READ(btf, tp, copied_seq);
	for (int n = 0; n < RXQ_SLOTS; n++) {
		__u32 i = f->rxq_head % RXQ_SLOTS;

		if (f->rxq_head == f->rxq_tail || (__s32)(f->rxq[i].seq_end - copied) > 0)
			break;
		flow_sample(f, STAGE_RX_SOCKQ, now - f->rxq[i].ts);
		req_stage(f, STAGE_RX_SOCKQ, f->rxq[i].ts, now);
		f->rxq_head++;
	}
	tls_bind(f, false);
	req_on_read(f, now, ret);
	if (f->h2_npending)
		h2_pending_done(f, copied, now);
}

/* Where a read ends: the tracepoint (6.3+), fexit on tcp_recvmsg (whose arguments lost
 * `nonblock` in 5.19), or a kretprobe with the arguments its kprobe kept. */
SEC("tp_btf/sock_recv_length")
int BPF_PROG(tt_sock_recv_length, struct sock *sk, int ret, int flags)
{
	handle_recv(sk, ret, flags, true);
	return 0;
}

SEC("fexit/tcp_recvmsg")
int BPF_PROG(tt_tcp_recvmsg_fexit, struct sock *sk, struct msghdr *msg, size_t len, int flags,
	     int *addr_len, int ret)
{
	handle_recv(sk, ret, flags, true);
	return 0;
}

SEC("fexit/tcp_recvmsg")
int BPF_PROG(tt_tcp_recvmsg_fexit_nb, struct sock *sk, struct msghdr *msg, size_t len, int nonblock,
	     int flags, int *addr_len, int ret)
{
	handle_recv(sk, ret, flags, true);
	return 0;
}

SEC("kprobe/tcp_recvmsg")
int BPF_KPROBE(tt_tcp_recvmsg_stash, struct sock *sk)
{
	/* both read, then one picked: a load at an offset chosen at run time is no context
	 * access the verifier accepts */
	__u64 p4 = PT_REGS_PARM4(ctx), p5 = PT_REGS_PARM5(ctx);

	barrier_var(p4);
	barrier_var(p5);
	if (sk_ports_selected(sk, false))
		io_stash_put(IO_RECV, sk, (__u32)(targ_recvmsg_nargs >= 6 ? p5 : p4));
	return 0;
}

SEC("kretprobe/tcp_recvmsg")
int BPF_KRETPROBE(tt_tcp_recvmsg_kretprobe, int ret)
{
	struct io_stash st;

	if (io_stash_take(IO_RECV, &st))
		handle_recv((struct sock *)st.sk, ret, (int)st.flags, false);
	return 0;
}

#endif
