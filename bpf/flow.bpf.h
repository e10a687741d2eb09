/* SPDX-License-Identifier: GPL-2.0 */
/* Per-socket state, keyed by the socket's address. Not socket-local storage: the packet
 * hooks (qdisc, driver, net_dev_queue) only reach the socket through skb->sk, an untrusted
 * pointer that bpf_sk_storage_get() refuses. Entries are deleted when the socket reaches
 * TCP_CLOSE or is destroyed, so flows that come and go do not accumulate; a full map is
 * counted. Holds the filter verdict, the group fields of the histogram key, the
 * receive-queue FIFO and the request being built. */
#ifndef TT_FLOW_BPF_H
#define TT_FLOW_BPF_H

#include "maps.bpf.h"

enum flow_verdict {
	FLOW_PENDING, /* ports match; owner (pid/comm/cgroup) not seen yet */
	FLOW_TRACED,
	FLOW_IGNORED,
	FLOW_UNSAMPLED, /* left the --budget sample at a request boundary: the sweep deletes it */
};

enum req_phase {
	REQ_IDLE,
	REQ_IN,  /* server: request arriving; client: request being sent */
	REQ_OUT, /* server: response being sent; client: response arriving */
};

#define RXQ_SLOTS   8
#define TXSEQ_SLOTS 32
#define QSEQ_SLOTS  16

struct rxq_entry {
	__u32 seq_end; /* rcv_nxt after the data was queued */
	__u32 pad;
	__u64 ts;
};

/* Every transmission (retransmissions too) as it enters the IP/qdisc layer: a qdisc that
 * splits a GSO packet (tbf beyond its burst) dequeues new skbs, which are matched back to
 * their enqueue time by sequence number. */
struct qseq_entry {
	__u32 seq, end_seq;
	__u64 ts;
};

struct txseq_entry {
	__u32 end_seq; /* one past the last byte of a first transmission */
	__u32 pad;
	__u64 ts;
};

/* One application send, from its sendmsg to the ACK of its last byte (tx.sendq, tx.ack;
 * bpf/sends.bpf.h). TCP sends bytes in order, so a flow keeps its sends in a ring with one
 * cursor per step. */
#define SEND_SLOTS 32

struct send_entry {
	__u32 end_seq; /* one past the send's last byte */
	__u32 pad;
	__u64 start_ns;  /* its sendmsg started */
	__u64 queued_ns; /* its last byte was queued to the device (net_dev_queue) */
	__u64 xmit_ns;   /* ... and handed to the driver (net_dev_start_xmit) */
};

/* An HTTP/2 stream whose END_STREAM frame was seen: it ends when the frame's last byte
 * leaves for the device (server) or is read by the application (client). */
#define H2_PENDING 4

struct h2_pending {
	__u32 sid;
	__u32 end_seq;
};

/* Thread counters at request start, to take deltas at the end. */
struct sched_mark {
	__u64 runq, oncpu, offcpu, gpu;
};

struct flow {
	__u8 verdict;
	__u8 role; /* enum tt_role, detected or forced */
	__u8 family;
	__u8 phase; /* enum req_phase */
	__u16 lport, rport;
	__u8 raddr[TT_ADDR_LEN];
	__u32 tgid, tid; /* last application thread that read or wrote */
	char comm[TT_COMM_LEN];
	__u64 cgroup_id;
	__u64 cookie;
	__u64 sk_addr;        /* the socket, as a number: global functions take no pointers */
	__u32 retrans_base;   /* tcp_sock.total_retrans when the flow was created */
	__u32 retrans_seen;   /* segments tcp_retransmit_skb reported */
	__u32 retrans_unseen; /* segments counted by retrans_sync() instead */
	__u64 send_start_ns;  /* start of the sendmsg in progress */
	__u64 min_rtt_ns;
	__u64 srtt_ns;
	__u64 last_retrans_ns; /* latest retransmission of this flow */
	__u32 last_snd_una;    /* snd_una at the last RTT sample */
	__u32 tracked_tid;     /* thread last made sure to be tracked (0: none) */
	__u32 ifindex, qdisc_handle, netns;
	__u32 rxq_head, rxq_tail;
	__u32 txseq_next;
	__u32 txseq_max; /* highest end_seq recorded (new data only) */
	__u32 rxq_overflow;
	__u32 rx_probed; /* highest end_seq tcp_probe saw (0: none yet) */
	struct rxq_entry rxq[RXQ_SLOTS];
	struct txseq_entry txseq[TXSEQ_SLOTS];
	struct qseq_entry qseq[QSEQ_SLOTS];
	__u32 qseq_next;
	__u32 send_seq; /* write_seq when the sendmsg in progress started */
	/* sends: [send_acked, send_next) are held, the cursors only move forward (but
	 * send_queued, back over a send whose last byte a full qdisc dropped) */
	__u32 send_acked;  /* oldest send not acknowledged */
	__u32 send_xmit;   /* oldest send not seen at the driver */
	__u32 send_queued; /* oldest send whose last byte was not queued */
	__u32 send_next;
	struct send_entry sends[SEND_SLOTS];
	/* request being built */
	struct req_event req;
	__u64 covered[TT_REQ_STAGES]; /* per stage: union of intervals so far */
	__u64 last_send_ns;
	struct sched_mark mark;
	__u8 mark_valid;
	__u8 sends_untimed;    /* this call's, for CNT_SENDS_UNTIMED (a store, not a branch) */
	__u8 untimed_slots[4]; /* ring slots of this call's first untimed sends */
	__u8 overlapped;       /* requests were seen to overlap on this connection */
	__u8 tls_bound;        /* --tls-uprobes: a TLS library call was seen on it (tls.bpf.h) */
	__u32 req_seq;         /* a client's write_seq at its request's first byte */
	/* application framing (bpf/framing.bpf.h) */
	__u8 proto;          /* enum tt_proto */
	__u8 proto_tries;    /* data segments looked at without telling the protocol */
	__u8 await_token;    /* HTTP/1.1: enum await_token */
	__u8 h2_synced[2];   /* HTTP/2, per direction (0 out, 1 in): h2_next is a frame header */
	__u8 h2_part_len[2]; /* ... bytes of a frame header cut by a segment's end */
	__u8 h2_npending;    /* streams ended, waiting for their last byte (h2_pending) */
	__u8 h2_phead;       /* ... the oldest of them */
	__u8 h2_part[2][16];
	__u32 h2_next[2]; /* sequence of the next frame header */
	struct h2_pending h2_pending[H2_PENDING];
	__u32 tls_off[2]; /* --tls-uprobes: plaintext bytes so far, per direction */
	__u8 tls_hs;      /* ... exchanges left out as the TLS handshake's */
	__u8 tls_first;   /* ... a client's first response through the library is awaited */
	__u8 tls_reserved[6];
	__u64 last_send_end_ns;         /* the latest sendmsg returned */
	__u64 last_in_ns;               /* client: the latest data of a streamed response arrived */
	__u64 path_base[TT_REQ_STAGES]; /* stage time at the response's first token */
	__u32 deep_gen; /* the deep tier's generation this flow's packet state is of */
	__u32 req_gen;  /* ... when its request in progress started */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct flow);
} flows SEC(".maps");

static const struct flow zero_flow;

static __always_inline void flow_fill_addrs(struct flow *f, struct sock *sk)
{
	f->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	f->lport = BPF_CORE_READ(sk, __sk_common.skc_num);
	f->rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (f->family == AF_INET) {
		__u32 a = BPF_CORE_READ(sk, __sk_common.skc_daddr);

		__builtin_memcpy(f->raddr, &a, 4);
	} else {
		BPF_CORE_READ_INTO(&f->raddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
	}
}

/* The cgroup v2 id of the socket's owner: the cgroup of the process that created it (an
 * accepted socket inherits its listener's). Read from the socket, it is right where the
 * hook runs in softirq on behalf of another task, e.g. a server's first request before
 * its process read it. 0 where the kernel keeps no cgroup pointer in the socket (before
 * 5.15: a packed value). A global function, verified once: flow creation is inlined into
 * many hooks. */
__noinline __u64 sk_owner_cgroup_id(__u64 sk_addr)
{
	struct sock *sk = (struct sock *)sk_addr;
	struct cgroup *cg;

	if (!bpf_core_field_exists(struct sock_cgroup_data, cgroup))
		return 0;
	cg = BPF_CORE_READ(sk, sk_cgrp_data.cgroup);
	if (!cg)
		return 0;
	return BPF_CORE_READ(cg, kn, id);
}

/* The deep tier was attached or detached since this flow was last seen: the sends its
 * programs were timing lost their ends (or never had their starts) and start over, so
 * no stage spans a time its programs were not running. */
static __always_inline void flow_deep_sync(struct flow *f)
{
	f->deep_gen = deep_gen;
	f->send_acked = f->send_next;
	f->send_xmit = f->send_next;
	f->send_queued = f->send_next;
	f->sends_untimed = 0;
}

/* --port: only a socket with a selected port has a flow. The events of the others (most
 * sockets of a host, UDP and unix ones too: the sock_* tracepoints fire for every socket)
 * leave on two loads, before the hash lookup. `btf`: a typed pointer (plain loads), else
 * a raw address (probe reads). Not for the hooks that end a flow: the kernel clears the
 * local port of a socket that leaves TCP_CLOSE's hash before it is destroyed. */
static __always_inline bool sk_ports_selected(struct sock *sk, bool btf)
{
	if (!targ_nports)
		return true;
	if (!sk)
		return false;
	return port_selected(TT_READ(btf, sk, __sk_common.skc_num),
			     bpf_ntohs(TT_READ(btf, sk, __sk_common.skc_dport)));
}

/* Flow state of a socket, created on first sight when its ports match. NULL when the
 * socket is not TCP-over-IP, does not match, or was judged out by the owner filters.
 * The socket cookie is filled by the caller: sockops and tracing get it differently. */
static __always_inline struct flow *flow_get(struct sock *sk, bool create)
{
	struct flow *f;
	__u16 lport, rport;

	__u64 addr = (__u64)sk;

	if (!sk)
		return NULL;
	/* --budget: the lookup first, the sample second. A flow already traced stays visible
	 * to every hook until it leaves the sample at its next request boundary
	 * (requests.bpf.h req_begin), however the draw moved meanwhile: tested before the
	 * lookup, the sample hid it from the send and receive hooks in the middle of a
	 * request, which was then never finished (the request in flight when the draw
	 * moved, more often a long one: the sampled p99s came out low) and stayed in the map
	 * to be emitted seconds long when a later draw brought the flow back. The price, a
	 * lookup per event of a socket out of the sample, is what the packet hooks pay. */
	f = bpf_map_lookup_elem(&flows, &addr);
	if (f) {
		if (f->verdict >= FLOW_IGNORED)
			return NULL;
		if (f->deep_gen != deep_gen)
			flow_deep_sync(f);
		return f;
	}
	if (!create)
		return NULL;
	/* the multiply on the address as a number: the verifier multiplies no pointer */
	if (sample_threshold != ~0u && !flow_in_sample(ptr_value(sk)))
		return NULL;
	if (BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return NULL;
	/* a hook firing after TCP_CLOSE would recreate an entry nothing deletes any more */
	if (BPF_CORE_READ(sk, __sk_common.skc_state) == TCP_CLOSE_STATE)
		return NULL;
	lport = BPF_CORE_READ(sk, __sk_common.skc_num);
	rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (!port_selected(lport, rport))
		return NULL;
	if (bpf_map_update_elem(&flows, &addr, &zero_flow, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&flows, &addr)) {
		cnt_add(CNT_FLOW_UPDATE_FAIL, 1);
		return NULL;
	}
	f = bpf_map_lookup_elem(&flows, &addr);
	if (!f)
		return NULL;
	flow_fill_addrs(f, sk);
	f->sk_addr = addr;
	f->deep_gen = deep_gen;
	/* read back from the map: a number there, where the verifier would see a pointer */
	f->cgroup_id = sk_owner_cgroup_id(*(volatile __u64 *)&f->sk_addr);
	f->retrans_base = BPF_CORE_READ((struct tcp_sock *)sk, total_retrans);
	/* sockops overrides this guess at connection setup; sockets that predate tailtrace
	 * are classed by which side holds the selected (or the lower) port */
	if (targ_nports)
		f->role = port_selected(f->lport, 0) ? ROLE_SERVER : ROLE_CLIENT;
	else
		f->role = f->lport < f->rport ? ROLE_SERVER : ROLE_CLIENT;
	f->verdict =
		(targ_tgid || targ_filter_comm || targ_filter_cgroup) ? FLOW_PENDING : FLOW_TRACED;
	return f;
}

/* The socket's cookie. bpf_get_socket_cookie() takes a socket in tracing programs from 5.12
 * (targ_sk_cookie_helper, probed) and never in kprobes: there the cookie as the kernel
 * keeps it, which is 0 until someone asked for it (sockops does, at the handshake). */
static __always_inline __u64 sk_cookie(struct sock *sk, bool btf)
{
	if (btf && targ_sk_cookie_helper)
		return bpf_get_socket_cookie(sk);
	return BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
}

static __always_inline bool comm_matches(const char *comm)
{
	for (int i = 0; i < 16; i++) {
		if (comm[i] != targ_comm[i])
			return false;
		if (!comm[i])
			break;
	}
	return true;
}

/* Called in process context (send/recv; `btf`: sk is a typed pointer): records the owner and
 * applies the pid, comm and cgroup filters once. Returns the flow when it is traced. */
static __always_inline struct flow *flow_owner(struct sock *sk, bool btf)
{
	struct flow *f;
	__u64 id;

	if (!sk_ports_selected(sk, btf))
		return NULL;
	f = flow_get(sk, true);
	if (!f)
		return NULL;
	if (!f->cookie)
		f->cookie = sk_cookie(sk, btf);
	id = bpf_get_current_pid_tgid();
	f->tgid = id >> 32;
	f->tid = (__u32)id;
	if (f->verdict == FLOW_PENDING || !f->comm[0]) {
		bpf_get_current_comm(f->comm, sizeof(f->comm));
		/* the socket's own cgroup when the kernel has it: all of a flow's samples
		 * under one key, from the first one on */
		if (!f->cgroup_id)
			f->cgroup_id = bpf_get_current_cgroup_id();
	}
	if (f->verdict == FLOW_PENDING) {
		bool ok = true;

		if (targ_tgid && f->tgid != targ_tgid)
			ok = false;
		if (ok && targ_filter_comm && !comm_matches(f->comm))
			ok = false;
		if (ok && targ_filter_cgroup &&
		    bpf_current_task_under_cgroup(&cgroup_filter, 0) != 1)
			ok = false;
		f->verdict = ok ? FLOW_TRACED : FLOW_IGNORED;
	}
	f = f->verdict == FLOW_TRACED ? f : NULL;
	/* the caller tests the pointer itself: verifiers before 6.3 cannot follow a test of
	 * the verdict that the compiler would put in its place */
	barrier_var(f);
	return f;
}

/* The socket is gone (TCP_CLOSE): forget it. */
static __always_inline void flow_forget(struct sock *sk)
{
	__u64 addr = (__u64)sk;

	bpf_map_delete_elem(&flows, &addr);
}

/* Retransmissions the kernel counted on this socket (tcp_sock.total_retrans, the per-socket
 * side of RetransSegs) that no tcp_retransmit_skb event reported: the kernel sometimes
 * does not run a tracing program for an event. They join the retransmission count and
 * are counted apart as unseen (they have no kind and no timing). Order-free: an event
 * that runs before the kernel adds its segments only leaves the difference negative
 * until a later sync. */
static __always_inline void retrans_sync_total(struct flow *f, __u32 total)
{
	__s32 missing = (__s32)(total - f->retrans_base - f->retrans_seen - f->retrans_unseen);

	if (f->verdict != FLOW_TRACED || missing <= 0)
		return;
	f->retrans_unseen += missing;
	cnt_add(CNT_RETRANS, missing);
	cnt_add(CNT_RETRANS_UNSEEN, missing);
}

/* The same where only the socket is at hand: total_retrans through a probe read. */
static __always_inline void retrans_sync(struct flow *f, struct sock *sk)
{
	retrans_sync_total(f, BPF_CORE_READ((struct tcp_sock *)sk, total_retrans));
}

/* From a program handed a typed socket pointer (tp_btf, fentry). */
static __always_inline struct flow *flow_traced(struct sock *sk)
{
	struct flow *f = sk_ports_selected(sk, true) ? flow_get(sk, true) : NULL;

	if (f && !f->cookie)
		f->cookie = sk_cookie(sk, true);

	f = f && f->verdict == FLOW_TRACED ? f : NULL;
	barrier_var(f); /* as in flow_owner() */
	return f;
}

/* Histogram key for a flow's sample: the group the user asked for, plus the place. */
static __always_inline void flow_key(const struct flow *f, struct hist_key *k, __u16 stage)
{
	__builtin_memset(k, 0, sizeof(*k));
	k->stage = stage;
	k->by = targ_by;
	switch (targ_by) {
	case GROUP_PORT:
		/* the well-known side: the local port of servers, the remote one of clients */
		k->id = f->role == ROLE_CLIENT || (f->role == ROLE_AUTO && f->rport < f->lport)
				? f->rport
				: f->lport;
		break;
	case GROUP_RADDR:
		k->family = f->family;
		__builtin_memcpy(k->addr, f->raddr, 16);
		break;
	case GROUP_COMM:
		k->tgid = f->tgid;
		__builtin_memcpy(k->comm, f->comm, 16);
		break;
	case GROUP_CGROUP:
	case GROUP_POD:
		k->id = f->cgroup_id;
		break;
	}
}

/* A flow's sample in its group's histogram. A global function (checked once by the
 * verifier, not at each call site: the send ring's loops call it up to 64 times in one
 * program); it takes no pointer, so it finds the flow again by its socket. */
__noinline int flow_hist_update(__u64 sk_addr, __u32 stage, __u64 v)
{
	struct flow *f = bpf_map_lookup_elem(&flows, &sk_addr);
	struct hist_key k;

	if (!f)
		return 0;
	flow_key(f, &k, stage);
	hist_update(&k, v);
	return 0;
}

static __always_inline void flow_sample(const struct flow *f, __u16 stage, __u64 v)
{
	if (targ_by == GROUP_NONE)
		stage_hist_update(stage, v);
	else
		flow_hist_update(f->sk_addr, stage, v);
}

/* ... and with a place: netns_handle is the device's netns inode << 32 | qdisc handle
 * (five arguments at most). */
__noinline int flow_hist_update_at(__u64 sk_addr, __u32 stage, __u64 v, __u32 ifindex,
				   __u64 netns_handle)
{
	struct flow *f = bpf_map_lookup_elem(&flows, &sk_addr);
	struct hist_key k;

	if (!f)
		return 0;
	flow_key(f, &k, stage);
	k.ifindex = ifindex;
	k.netns = (__u32)(netns_handle >> 32);
	k.qdisc_handle = (__u32)netns_handle;
	hist_update(&k, v);
	return 0;
}

static __always_inline void flow_sample_at(const struct flow *f, __u16 stage, __u64 v,
					   __u32 ifindex, __u32 netns, __u32 handle)
{
	flow_hist_update_at(f->sk_addr, stage, v, ifindex, (__u64)netns << 32 | handle);
}

#endif
