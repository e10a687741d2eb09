/* SPDX-License-Identifier: GPL-2.0 */
/* TCP path stages: send queue, qdisc, driver, ACK, receive stack, receive queue, RTT,
 * retransmissions and drops, from tracepoints (and sockops for the side of a connection). */
#ifndef TT_TCP_BPF_H
#define TT_TCP_BPF_H

#define TCP_CLOSE_STATE 7
#define TCP_FIN_WAIT1_STATE 4
#define TCP_CLOSE_WAIT_STATE 8

/* Per-packet stamps live in direct-mapped, two-way arrays instead of hash
 * maps: a stamp is written and taken millions of times a second, and an LRU hash pays a
 * jhash, a lock and a free-list pop or push each time, where an array slot costs a few
 * loads and stores. An entry is free when its owner field is 0. When both ways of a bucket
 * hold live stamps, the older one is overwritten: it never reaches a sample and shows up
 * in `unmatched_stamps` (inserts - deletes - live, counted by userspace from the mmapped
 * arrays), like an LRU eviction did. */

static __always_inline __u32 stamp_hash(__u64 v)
{
	return (__u32)((v * 0x9E3779B97F4A7C15ULL) >> (64 - STAMP_BUCKET_BITS));
}

/* Per packet (skb address): struct stamp_bucket in tailtrace.h. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, STAMP_BUCKETS);
	__type(key, __u32);
	__type(value, struct stamp_bucket);
} qdisc_stamps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, STAMP_BUCKETS);
	__type(key, __u32);
	__type(value, struct stamp_bucket);
} rx_stamps SEC(".maps");

/* net_dev_start_xmit and net_dev_xmit run back to back on one CPU: a per-CPU slot is
 * enough to time the driver call, no hash needed. */
struct nic_slot {
	__u64 skb;
	__u64 sk;	/* the driver may orphan the skb (veth, lo): keep its socket */
	__u64 ts;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nic_slot);
} nic_slots SEC(".maps");

/* skbs are slab objects at least 256 bytes apart: the low bits carry nothing */
static __always_inline struct stamp_bucket *stamp_bucket_of(void *map, __u64 skb)
{
	__u32 i = stamp_hash(skb >> 8);

	return bpf_map_lookup_elem(map, &i);
}

static __always_inline void stamp_put(void *map, const void *skb_ptr, struct pkt_stamp *st)
{
	__u64 skb = ptr_value(skb_ptr);
	struct stamp_bucket *b = skb ? stamp_bucket_of(map, skb) : NULL;
	struct pkt_stamp *e;
	bool again = false;

	if (!b)
		return;
	/* the same skb crosses several devices (veth pairs, a bridge): restamp in place,
	 * which is not a second insert */
	if (b->e[0].skb == skb) {
		e = &b->e[0];
		again = true;
	} else if (b->e[1].skb == skb) {
		e = &b->e[1];
		again = true;
	} else if (!b->e[0].skb) {
		e = &b->e[0];
	} else if (!b->e[1].skb) {
		e = &b->e[1];
	} else {
		e = b->e[0].ts <= b->e[1].ts ? &b->e[0] : &b->e[1];
	}
	e->ts = st->ts;
	e->len = st->len;
	e->seq = st->seq;
	e->ce = st->ce;
	/* the owner last (a compiler barrier; x86 keeps stores in order): a reader on another
	 * CPU that sees it sees the time too. Where stores can be reordered, a reader racing
	 * the writer takes at worst one wrong sample, never a crash. */
	asm volatile("" ::: "memory");
	e->skb = skb;
	if (!again)
		cnt_add(CNT_PKT_INSERTS, 1);
}

static __always_inline bool stamp_take(void *map, const void *skb_ptr, struct pkt_stamp *out)
{
	__u64 skb = ptr_value(skb_ptr);
	struct stamp_bucket *b = skb ? stamp_bucket_of(map, skb) : NULL;
	struct pkt_stamp *e;

	if (!b)
		return false;
	if (b->e[0].skb == skb)
		e = &b->e[0];
	else if (b->e[1].skb == skb)
		e = &b->e[1];
	else
		return false;
	*out = *e;
	if (out->skb != skb)
		return false; /* overwritten between the check and the copy: not ours */
	e->skb = 0;
	cnt_add(CNT_PKT_DELETES, 1);
	return true;
}

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

/* The thread doing I/O on a traced flow gets its scheduler state tracked; a flow asks again
 * only when its thread changes (or its state was found gone), not at every send and read. */
static __always_inline void flow_track_thread(struct flow *f, __u32 tid)
{
	if (f->tracked_tid == tid)
		return;
	thread_track_current(tid);
	f->tracked_tid = tid;
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

/* In tracepoint programs the skb is a BTF pointer: its fields are plain loads. */
static __always_inline __u32 skb_gso_segs(struct sk_buff *skb)
{
	__u16 segs = 0;

	bpf_probe_read_kernel(&segs, sizeof(segs), skb->head + skb->end +
			      bpf_core_field_offset(struct skb_shared_info, gso_segs));
	return segs;
}

/* ---- sockops: the side of each connection, told by who opened it ---- */

SEC("sockops")
int tt_sockops(struct bpf_sock_ops *skops)
{
	struct bpf_sock *bsk;
	struct flow *f;
	struct sock *sk;

	if (skops->op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB &&
	    skops->op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB)
		return 1;
	bsk = skops->sk;
	/* keep the null-checked register: a reload would be sock_or_null again */
	asm volatile("" : "+r"(bsk));
	if (!bsk)
		return 1;
	sk = (struct sock *)bpf_skc_to_tcp_sock(bsk);
	if (!sk)
		return 1;
	f = flow_get(sk, true);
	if (!f)
		return 1;
	if (!f->cookie)
		f->cookie = bpf_get_socket_cookie(skops);
	f->role = skops->op == BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB ? ROLE_CLIENT : ROLE_SERVER;
	return 1;
}

/* ---- send side tracepoints ---- */

SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(tt_tcp_sendmsg, struct sock *sk, struct msghdr *msg, struct sk_buff *skb,
	     int size_goal)
{
	struct flow *f = flow_owner(sk);
	struct tcp_sock *tp;
	__u64 now;
	__u32 tid;

	/* it fires for every skb the send fills: the first one starts the send */
	if (!f || f->send_start_ns)
		return 0;
	/* a typed pointer: write_seq is a plain load */
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return 0;
	now = bpf_ktime_get_ns();
	tid = (__u32)bpf_get_current_pid_tgid();
	f->send_start_ns = now;
	retrans_sync(f, sk);
	send_begin(f, tp->write_seq, (__u32)msg->msg_iter.count, now);
	flow_track_thread(f, tid);
	req_on_send(f, now, tid);
	if (targ_requests && f->phase != REQ_IDLE && loss_holds(f, sk, now))
		f->req.flags |= REQ_F_LOSS_RECOVERY;
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(tt_sock_send_length, struct sock *sk, int ret, int flags)
{
	struct flow *f = flow_get(sk, false);

	if (f && f->send_start_ns) {
		f->send_start_ns = 0;
		send_end(f, ret);
	}
	return 0;
}

/* First transmissions of a traced flow's data: kept per flow so a retransmission can be
 * timed from the original send. */
SEC("tp_btf/net_dev_queue")
int BPF_PROG(tt_net_dev_queue, struct sk_buff *skb)
{
	struct flow *f = flow_get(skb->sk, false);
	struct sock *sk = skb->sk;
	__u32 seq, end, i;
	__u64 now, sent;

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

/* A packet is timed when its socket is traced, or, with --dev, when it crosses a selected
 * device (forwarded packets have no socket). */
static __always_inline bool skb_selected(struct sk_buff *skb, struct net_device *dev,
					 struct flow **fp)
{
	struct flow *f = flow_get(skb->sk, false);

	*fp = f && f->verdict == FLOW_TRACED ? f : NULL;
	if (targ_ndevs)
		return dev_selected(dev);
	return *fp != NULL;
}

SEC("tp_btf/qdisc_enqueue")
int BPF_PROG(tt_qdisc_enqueue, struct Qdisc *q, struct netdev_queue *txq, struct sk_buff *skb)
{
	struct pkt_stamp st = {};
	struct flow *f;

	if (!skb_selected(skb, q->dev_queue->dev, &f))
		return 0;
	st.ts = bpf_ktime_get_ns();
	stamp_put(&qdisc_stamps, skb, &st);
	return 0;
}

/* Enqueue time of a segment the qdisc created by splitting a GSO packet: the latest
 * transmission whose sequence range holds the segment's first byte. */
static __always_inline bool qseq_enqueue_time(struct flow *f, struct sk_buff *skb,
					      struct pkt_stamp *st)
{
	__u64 best = 0;
	__u32 seq;

	if (skb_tcp_end(skb, &seq) == seq)
		return false; /* no payload, or the header could not be read */
	for (int i = 0; i < QSEQ_SLOTS; i++) {
		struct qseq_entry *e = &f->qseq[i];

		if (e->ts > best && (__s32)(seq - e->seq) >= 0 && (__s32)(e->end_seq - seq) > 0)
			best = e->ts;
	}
	if (!best)
		return false;
	st->ts = best;
	return true;
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

	if (!skb_selected(skb, dev, &f))
		return 0;
	now = bpf_ktime_get_ns();
	slot = bpf_map_lookup_elem(&nic_slots, &zero);
	if (slot) {
		slot->skb = (__u64)skb;
		slot->sk = (__u64)skb->sk;
		slot->ts = now;
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
	}
	return 0;
}

SEC("tp_btf/net_dev_xmit")
int BPF_PROG(tt_net_dev_xmit, struct sk_buff *skb, int rc, struct net_device *dev,
	     unsigned int len)
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
	ce = remember_dev(dev, &dk);
	f = flow_get((struct sock *)slot->sk, false);
	if (f && f->verdict != FLOW_TRACED)
		f = NULL;
	if (f)
		req_stage(f, STAGE_TX_NIC, slot->ts, now);
	if (f && targ_by != GROUP_NONE)
		flow_sample_at(f, STAGE_TX_NIC, now - slot->ts, dk.ifindex, dk.netns, 0);
	else
		place_sample(ce, &dk, STAGE_TX_NIC, 0, now - slot->ts);
	return 0;
}

/* ---- receive side ---- */

/* Driver receive: TCP data for selected ports gets a timestamp (and its ECN mark). */
SEC("tp_btf/netif_receive_skb")
int BPF_PROG(tt_netif_receive_skb, struct sk_buff *skb)
{
	unsigned char *data = skb->data;
	struct pkt_stamp st = {};
	__u16 proto = bpf_ntohs(skb->protocol);
	__u32 thoff, tot;
	struct tcphdr th;
	__u8 tos;

	/* the IP and TCP headers in one read (one helper call a packet, not two); an IPv4
	 * header with options needs a second one for the TCP header */
	if (proto == ETH_P_IP) {
		struct {
			struct iphdr ip;
			struct tcphdr th;
		} h;

		if (bpf_probe_read_kernel(&h, sizeof(h), data) || h.ip.protocol != IPPROTO_TCP)
			return 0;
		thoff = h.ip.ihl * 4;
		tot = bpf_ntohs(h.ip.tot_len);
		tos = h.ip.tos;
		if (thoff == sizeof(h.ip))
			th = h.th;
		else if (bpf_probe_read_kernel(&th, sizeof(th), data + thoff))
			return 0;
	} else if (proto == ETH_P_IPV6) {
		struct {
			struct ipv6hdr ip6;
			struct tcphdr th;
		} h;

		if (bpf_probe_read_kernel(&h, sizeof(h), data) || h.ip6.nexthdr != IPPROTO_TCP)
			return 0;
		thoff = sizeof(h.ip6);
		tot = sizeof(h.ip6) + bpf_ntohs(h.ip6.payload_len);
		tos = (h.ip6.priority << 4) | (h.ip6.flow_lbl[0] >> 4);
		th = h.th;
	} else {
		return 0;
	}
	if (!port_selected(bpf_ntohs(th.dest), bpf_ntohs(th.source)))
		return 0;
	if ((tos & 3) == 3)
		st.ce = 1;
	if (tot <= thoff + th.doff * 4 && !st.ce)
		return 0; /* pure ACK without a mark: nothing to time */
	st.ts = bpf_ktime_get_ns();
	st.len = tot > thoff + th.doff * 4 ? tot - thoff - th.doff * 4 : 0;
	st.seq = bpf_ntohl(th.seq);
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
	if (f->send_acked != f->send_next && (cb->tcp_flags & 0x10 /* ACK */))
		sends_acked(f, cb->ack_seq, now);
	if (!f->rx_probed || (__s32)(cb->end_seq - f->rx_probed) > 0)
		f->rx_probed = cb->end_seq;
	/* data not received before: tcp_probe fires before TCP takes the segment, so rcv_nxt
	 * is still the old edge. A retransmission of data this side already has (the peer's
	 * timer fired because this side's ACK was held up) is no new request. */
	from = (__s32)(cb->seq - tp->rcv_nxt) > 0 ? cb->seq : tp->rcv_nxt;
	fresh = (__s32)(cb->end_seq - from) > 0 ? cb->end_seq - from : 0;
	if (fresh && (cb->tcp_flags & 0x01 /* FIN */))
		fresh--;
	if (fresh >= (1u << 30))
		fresh = 0;
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
			req_on_inbound(f, now, now, fresh);
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
	req_on_inbound(f, st.ts, now, fresh);
	req_stage(f, STAGE_RX_STACK, st.ts, now);
	return 0;
}

/* Data queued on the socket: remember (rcv_nxt, time) to time the application's read. */
SEC("tp_btf/sk_data_ready")
int BPF_PROG(tt_sk_data_ready, struct sock *sk)
{
	struct flow *f = flow_get(sk, false);
	struct tcp_sock *tp;
	__u32 nxt, i, last;

	if (!f || f->verdict != FLOW_TRACED)
		return 0;
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return 0;
	nxt = tp->rcv_nxt;
	/* data TCP queued without passing tcp_rcv_established, where tcp_probe fires: the
	 * segment that completed a handshake whose last ACK was dropped (a full accept
	 * queue), data after this side's FIN. The request logic gets it from here, at the
	 * time it is queued. */
	if (targ_requests && (!f->rx_probed || (__s32)(nxt - f->rx_probed) > 0)) {
		__u32 bytes = f->rx_probed ? nxt - f->rx_probed : (__u32)tp->bytes_received;
		__u64 t;

		/* a FIN taken here is in rcv_nxt, and is no data */
		if (f->rx_probed && bytes && (BPF_CORE_READ_BITFIELD_PROBED(sk, sk_shutdown) & 1))
			bytes--;
		f->rx_probed = nxt;
		if (bytes) {
			t = bpf_ktime_get_ns();
			req_on_inbound(f, t, t, bytes);
		}
	}
	if (f->rxq_tail != f->rxq_head) {
		last = (f->rxq_tail - 1) % RXQ_SLOTS;
		if (f->rxq[last].seq_end == nxt)
			return 0;
	}
	if (f->rxq_tail - f->rxq_head >= RXQ_SLOTS) {
		/* full: extend the newest entry instead of losing the oldest arrival time */
		f->rxq_overflow++;
		f->rxq[(f->rxq_tail - 1) % RXQ_SLOTS].seq_end = nxt;
		return 0;
	}
	i = f->rxq_tail % RXQ_SLOTS;
	f->rxq[i].seq_end = nxt;
	f->rxq[i].ts = bpf_ktime_get_ns();
	f->rxq_tail++;
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(tt_sock_recv_length, struct sock *sk, int ret, int flags)
{
	struct tcp_sock *tp;
	struct flow *f;
	__u32 copied, tid;
	__u64 now;

	if (ret <= 0 || (flags & 2 /* MSG_PEEK */))
		return 0;
	f = flow_owner(sk);
	tp = bpf_skc_to_tcp_sock(sk);
	if (!f || !tp)
		return 0;
	now = bpf_ktime_get_ns();
	tid = (__u32)bpf_get_current_pid_tgid();
	flow_track_thread(f, tid);
	copied = tp->copied_seq;
	for (int n = 0; n < RXQ_SLOTS; n++) {
		__u32 i = f->rxq_head % RXQ_SLOTS;

		if (f->rxq_head == f->rxq_tail || (__s32)(f->rxq[i].seq_end - copied) > 0)
			break;
		flow_sample(f, STAGE_RX_SOCKQ, now - f->rxq[i].ts);
		req_stage(f, STAGE_RX_SOCKQ, f->rxq[i].ts, now);
		f->rxq_head++;
	}
	req_on_read(f, now, ret);
	return 0;
}

/* ---- loss ---- */

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tt_tcp_retransmit_skb, struct sock *sk, struct sk_buff *skb, int err)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	struct flow *f;
	__u32 segs, seq, state;
	__u64 now;

	if (err)
		return 0; /* the kernel counts only retransmissions that went out */
	f = flow_traced(sk);
	if (!f)
		return 0;
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
	/* time since the original transmission of the first byte of this segment */
	seq = BPF_CORE_READ((struct tcp_skb_cb *)&skb->cb[0], seq);
	/* ring entries are in increasing end_seq order from the oldest (txseq_next): the
	 * first one ending after seq holds the original transmission of that byte */
	for (int i = 0; i < TXSEQ_SLOTS; i++) {
		struct txseq_entry *e = &f->txseq[(f->txseq_next + i) % TXSEQ_SLOTS];

		if (!e->ts || (__s32)(e->end_seq - seq) <= 0)
			continue;
		if (now > e->ts) {
			flow_sample(f, STAGE_TCP_RETRANS, now - e->ts);
			req_stage(f, STAGE_TCP_RETRANS, e->ts, now);
		}
		return 0;
	}
	cnt_add(CNT_RETRANS_UNTIMED, segs);
	return 0;
}

/* Drops by a full or policing queue: the congestion evidence for retransmissions. Each
 * reason is looked up by name (CO-RE), as the enum's values move between kernels. */
#define QUEUE_REASON(name)                                                                  \
	(bpf_core_enum_value_exists(enum skb_drop_reason, name) &&                          \
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

SEC("tp_btf/kfree_skb")
int BPF_PROG(tt_kfree_skb, struct sk_buff *skb, void *location, enum skb_drop_reason reason,
	     struct sock *rx_sk)
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
	if (queue_drop(r) && (targ_ndevs ? dev_selected(skb->dev)
					 : (f && f->verdict == FLOW_TRACED)))
		cnt_add(CNT_QDISC_DROPS, 1);
	else if (queued)
		cnt_add(CNT_PKT_DELETES, (__u64)-1);
	if (!f || f->verdict != FLOW_TRACED)
		return 0;
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
	if (!queue_drop(reason))
		return 0;
	if (f->phase != REQ_IDLE)
		f->req.drops++;
	/* a send whose last byte a full qdisc dropped here waits in TCP until a later
	 * attempt gets through (after a local drop, often the RTO-based probe timer) */
	if (skb->sk && f->send_xmit != f->send_queued) {
		__u32 seq, end = skb_tcp_end(skb, &seq);

		if (end != seq)
			sends_unqueue(f, seq, end);
	}
	return 0;
}

/* Every full TCP socket is destroyed through here, including the children a listener
 * drops unaccepted (inet_child_forget), which never pass through TCP_CLOSE. */
SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(tt_tcp_destroy_sock, struct sock *sk)
{
	struct flow *f = flow_get(sk, false);

	if (f)
		retrans_sync(f, sk);
	flow_forget(sk);
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(tt_inet_sock_set_state, struct sock *sk, int oldstate, int newstate)
{
	struct flow *f;

	if (newstate != TCP_CLOSE_STATE && newstate != TCP_FIN_WAIT1_STATE &&
	    newstate != TCP_CLOSE_WAIT_STATE)
		return 0;
	f = flow_get(sk, false);
	if (f && f->verdict == FLOW_TRACED) {
		retrans_sync(f, sk);
		req_emit(f);
	}
	if (newstate == TCP_CLOSE_STATE)
		flow_forget(sk);
	return 0;
}

#endif
