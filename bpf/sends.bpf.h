/* SPDX-License-Identifier: GPL-2.0 */
/* tx.sendq and tx.ack from tracepoints that run anyway: a ring of sends per flow.
 *
 * A send is recorded at its first tcp_sendmsg_locked (one past its last byte: write_seq
 * plus what the message holds, cut by sock_send_length when only part was taken). Its last
 * byte is queued to the device when net_dev_queue sees it go (where the kernel takes its
 * SCHED TX timestamp: the end of tx.sendq), handed to the driver in net_dev_start_xmit
 * (SND_SW) and acknowledged when an incoming segment's ack_seq in tcp_probe passes it (the
 * end of tx.ack). The sockops TX timestamping callbacks report the same points, at four
 * program runs a send, only from 6.15 and only on connections armed at their handshake.
 * These hooks see every send, older connections' too. A send that finds the ring full is
 * not timed, and counted in failed_updates. */
#ifndef TT_SENDS_BPF_H
#define TT_SENDS_BPF_H

#include "flow.bpf.h"
#include "requests.bpf.h"

/* The TCP sequence one past an outgoing skb's payload, and its first byte in *seq (equal
 * for a pure ACK). The skb is a BTF pointer: its fields are plain loads. */
static __always_inline __u32 skb_tcp_end(struct sk_buff *skb, __u32 *seq)
{
	unsigned char *head = skb->head;
	__u16 thoff = skb->transport_header;
	__u32 doff;
	TT_HDR(struct tcphdr, th, head + thoff);

	doff = th->doff * 4;

	if (doff < sizeof(*th))
		return *seq = 0; /* not a TCP header (or unreadable: a faulting load reads 0) */
	*seq = bpf_ntohl(th->seq);
	/* payload = skb->len - (L2 + L3 headers in front of the TCP header) - TCP header */
	return *seq + skb->len - (thoff - (__u16)(skb->data - head)) - doff;
}

/* sendmsg starts: `left` bytes will follow write_seq. */
static __always_inline void send_begin(struct flow *f, __u32 write_seq, __u32 left, __u64 now)
{
	struct send_entry *e;

	f->send_seq = write_seq;
	/* the programs that end a send's stages run only in the deep tier */
	if (!left || !deep_on())
		return;
	if (f->send_next - f->send_acked >= SEND_SLOTS) {
		cnt_add(CNT_PKT_UPDATE_FAIL, 1);
		return;
	}
	e = &f->sends[f->send_next % SEND_SLOTS];
	e->end_seq = write_seq + left;
	e->start_ns = now;
	e->queued_ns = 0;
	e->xmit_ns = 0;
	f->send_next++;
}

/* sendmsg returned `sent` bytes. A failed send is forgotten; a partial one ends earlier,
 * and if that byte already left (sent inside the call) its queueing time was missed: it
 * is forgotten too. Only the newest entry can be this send's, and only while not queued. */
static __always_inline void send_end(struct flow *f, int sent)
{
	struct send_entry *e;
	__u32 end;

	if (f->send_next == f->send_queued)
		return;
	e = &f->sends[(f->send_next - 1) % SEND_SLOTS];
	if ((__s32)(e->end_seq - f->send_seq) <= 0)
		return; /* an earlier send's: this one found the ring full */
	end = f->send_seq + (__u32)(sent > 0 ? sent : 0);
	if ((__s32)(e->end_seq - end) <= 0)
		return; /* all of it was taken */
	if (sent <= 0 || (f->txseq_max && (__s32)(f->txseq_max - end) >= 0)) {
		f->send_next--;
		return;
	}
	e->end_seq = end;
}

/* Data up to `end` is queued to the device (a first transmission, or the next attempt
 * after a qdisc dropped one): the sends whose last byte it carries leave TCP now
 * (tx.sendq). The request gets the time now; the histogram only once the send is past
 * the qdisc (sends_xmit), because a drop at its enqueue sends it back to TCP and the
 * send's one sample is its last attempt, as its last SCHED timestamp. Returns the start
 * of the newest of them, 0 when none. */
static __always_inline __u64 sends_queued(struct flow *f, __u32 end, __u64 now)
{
	__u64 start = 0;

	for (int n = 0; n < SEND_SLOTS; n++) {
		struct send_entry *e = &f->sends[f->send_queued % SEND_SLOTS];

		if (f->send_queued == f->send_next || (__s32)(e->end_seq - end) > 0)
			break;
		e->queued_ns = now;
		e->xmit_ns = 0;
		req_stage(f, STAGE_TX_SENDQ, e->start_ns, now);
		start = e->start_ns;
		f->send_queued++;
	}
	return start;
}

/* A full qdisc dropped the skb [seq, end) at its enqueue: TCP keeps the data and sends it
 * again later (after a local drop, often on the probe timer), so the sends whose last byte
 * it carried are back to waiting in TCP. Their send queue lasts until that next attempt
 * (a second, longer sample), as the kernel's SCHED timestamp does. */
static __always_inline void sends_unqueue(struct flow *f, __u32 seq, __u32 end)
{
	for (int n = 0; n < SEND_SLOTS; n++) {
		__u32 i = f->send_xmit + n;
		struct send_entry *e = &f->sends[i % SEND_SLOTS];

		if (i == f->send_queued)
			break;
		if ((__s32)(e->end_seq - seq) > 0 && (__s32)(e->end_seq - end) <= 0) {
			f->send_queued = i;
			break;
		}
	}
}

/* An skb with data up to `end` goes to the driver: the queued sends it carries get their
 * stamp, and their tx.sendq sample (no qdisc drop can send them back now). The first
 * device on the way counts (a vlan over a NIC: the vlan's). */
static __always_inline void sends_xmit(struct flow *f, __u32 end, __u64 now)
{
	for (int n = 0; n < SEND_SLOTS; n++) {
		struct send_entry *e = &f->sends[f->send_xmit % SEND_SLOTS];

		if (f->send_xmit == f->send_queued || (__s32)(e->end_seq - end) > 0)
			break;
		e->xmit_ns = now;
		flow_sample(f, STAGE_TX_SENDQ, e->queued_ns - e->start_ns);
		f->send_xmit++;
	}
}

/* When the skb carrying byte `last` of this socket's data last went out, from the
 * retransmit queue (an rbtree by sequence): skb_mstamp_ns is TCP's own clock
 * (tcp_clock_ns(), the clock bpf_ktime_get_ns() reads) at the skb's latest transmission.
 * 0 when no skb holds it. A global function, verified once on its own: its callers pay
 * one call, not its loop. Its reads are probe reads: the walk crosses rb_node -> sk_buff,
 * which BTF pointers cannot follow. */
__noinline __u64 rtx_queue_sent_ns(__u64 sk_addr, __u32 last)
{
	struct sock *sk = (struct sock *)sk_addr;
	struct rb_node *node = NULL;

	bpf_probe_read_kernel(&node, sizeof(node), &sk->tcp_rtx_queue.rb_node);
	/* 32 levels: a red-black tree that deep holds more skbs than any send buffer */
	for (int depth = 0; depth < 32 && node; depth++) {
		/* rbnode is the first member of struct sk_buff */
		struct sk_buff *skb = (struct sk_buff *)node;
		struct tcp_skb_cb *cb = (struct tcp_skb_cb *)&skb->cb[0];
		__u32 seq = 0, end = 0;
		__u64 sent = 0;

		bpf_probe_read_kernel(&seq, sizeof(seq), &cb->seq);
		bpf_probe_read_kernel(&end, sizeof(end), &cb->end_seq);
		if ((__s32)(last - seq) < 0) {
			bpf_probe_read_kernel(&node, sizeof(node), &node->rb_left);
		} else if ((__s32)(last - end) >= 0) {
			bpf_probe_read_kernel(&node, sizeof(node), &node->rb_right);
		} else {
			bpf_probe_read_kernel(&sent, sizeof(sent), &skb->skb_mstamp_ns);
			return sent;
		}
	}
	return 0;
}

/* An incoming segment acknowledges everything before ack_seq: tx.ack, from the driver's
 * stamp (the queueing one when no driver was seen: a qdisc dropped it after accepting it,
 * and a retransmission got through; its tx.sendq sample is taken here). A send
 * acknowledged without having been seen queued is timed from the retransmit queue: the
 * kernel sometimes does not run the tracing programs of an event (seen here for about 1
 * in 500 transmissions under load, in softirqs run on top of another task), and a send
 * whose last byte left while the ring was being corrected after a qdisc drop is in the
 * same case. Only when neither is known is it counted in CNT_SENDS_UNTIMED. */
/* Sends the ack loop could not time (at most four a call): their time from the
 * retransmit queue, where the acknowledged skbs still are when tcp_probe runs. */
static __always_inline void sends_acked_late(struct flow *f, __u64 now)
{
	__u32 n = f->sends_untimed;

	for (__u32 k = 0; k < 4 && k < n; k++) {
		struct send_entry *e = &f->sends[f->untimed_slots[k] % SEND_SLOTS];
		__u64 sent = rtx_queue_sent_ns(f->sk_addr, e->end_seq - 1);

		if (sent <= e->start_ns || sent >= now)
			continue;
		flow_sample(f, STAGE_TX_SENDQ, sent - e->start_ns);
		flow_sample(f, STAGE_TX_ACK, now - sent);
		req_stage(f, STAGE_TX_ACK, sent, now);
		f->sends_untimed--;
	}
}

static __always_inline void sends_acked(struct flow *f, __u32 ack_seq, __u64 now)
{
	for (int n = 0; n < SEND_SLOTS; n++) {
		struct send_entry *e = &f->sends[f->send_acked % SEND_SLOTS];
		__u64 sent;

		if (f->send_acked == f->send_next || (__s32)(ack_seq - e->end_seq) < 0)
			break;
		sent = e->xmit_ns ? e->xmit_ns : e->queued_ns;
		if (sent && (__s32)(f->send_queued - f->send_acked) > 0) {
			if (!e->xmit_ns)
				flow_sample(f, STAGE_TX_SENDQ, sent - e->start_ns);
			flow_sample(f, STAGE_TX_ACK, now - sent);
			req_stage(f, STAGE_TX_ACK, sent, now);
		} else {
			f->untimed_slots[f->sends_untimed & 3] = f->send_acked % SEND_SLOTS;
			f->sends_untimed++;
		}
		f->send_acked++;
	}
	/* after the loop: a call inside it multiplies the verifier's states */
	if (f->sends_untimed) {
		sends_acked_late(f, now);
		cnt_add(CNT_SENDS_UNTIMED, f->sends_untimed);
		f->sends_untimed = 0;
	}
	if ((__s32)(f->send_queued - f->send_acked) < 0)
		f->send_queued = f->send_acked;
	if ((__s32)(f->send_xmit - f->send_acked) < 0)
		f->send_xmit = f->send_acked;
}

#endif
