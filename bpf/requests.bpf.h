/* SPDX-License-Identifier: GPL-2.0 */
/* Request segmentation on TCP sockets without reading payload: on a server socket inbound
 * data followed by outbound data is one exchange (the reverse on a client socket). The
 * request's stage times are unions of intervals, so concurrent packets in one stage never
 * count the same nanosecond twice. One ring buffer event per finished request.
 * Several requests in flight on one connection (pipelining) cannot be told apart this way;
 * the ACK number of the peer's data says when they overlap (req_overlaps_*), and every
 * request of that connection from then on carries REQ_F_OVERLAP. */
#ifndef TT_REQUESTS_BPF_H
#define TT_REQUESTS_BPF_H

#include "flow.bpf.h"
#include "sched.bpf.h"

/* The ACK number an inbound data segment carries, and this side's write_seq then. */
struct seg_ack {
	__u32 ack;
	__u32 write_seq;
	bool valid; /* the segment has the ACK flag */
};

/* Add [start, end] to a stage of the request in progress, minus what is already covered. */
static __always_inline void req_stage(struct flow *f, __u32 stage, __u64 start, __u64 end)
{
	__u64 from;

	if (!targ_requests || f->phase == REQ_IDLE || stage >= TT_REQ_STAGES || end <= start)
		return;
	if (start < f->req.start_ns)
		start = f->req.start_ns;
	from = f->covered[stage] > start ? f->covered[stage] : start;
	if (end > from)
		f->req.stage_ns[stage] += end - from;
	if (end > f->covered[stage])
		f->covered[stage] = end;
}

/* HTTP/1.1: where a response's header block went alone (framing.bpf.h). */
enum await_token {
	AWAIT_NONE,
	AWAIT_TOKEN,        /* the header block is out (in): the next data is the first token */
	AWAIT_HEADERS_HERE, /* client: the segment TCP takes next is that header block */
};

/* Stages a response's path can delay: all but the scheduler's (marks, not intervals) and
 * the request histograms. */
static __always_inline bool stage_on_path(__u32 s)
{
	return s < STAGE_SCHED_RUNQ || s == STAGE_RX_BACKLOG;
}

/* The critical path of a paced response: its first token (server: written; client:
 * arrived) starts the response; the path's time on each token overlaps the making of the
 * next one, so only the path's time after the latest token can delay the end. */
static __always_inline void req_path_base(struct flow *f)
{
	for (__u32 s = 0; s < TT_REQ_STAGES; s++)
		f->path_base[s] = f->req.stage_ns[s];
}

/* A later token at `now`: what the path took since the first token was off the critical
 * path (the application was making this token meanwhile); from now on it counts again. */
static __always_inline void req_path_restart(struct flow *f, __u64 now)
{
	for (__u32 s = 0; s < TT_REQ_STAGES; s++) {
		if (!stage_on_path(s))
			continue;
		f->req.stage_ns[s] = f->path_base[s];
		if (f->covered[s] < now)
			f->covered[s] = now;
	}
}

/* A gap between two tokens of a response (req.gap): every one, of the side --role keeps. */
static __always_inline void req_gap_sample(const struct flow *f, __u64 gap)
{
	if (targ_role == ROLE_AUTO || f->role == targ_role)
		flow_sample(f, STAGE_REQ_GAP, gap);
}

/* Scheduler deltas over the request: from its start mark to its end mark. */
static __always_inline void req_sched_deltas(struct flow *f)
{
	struct sched_mark end;

	if (f->mark_valid != 3) {
		f->req.stage_ns[STAGE_SCHED_RUNQ] = 0;
		f->req.stage_ns[STAGE_SCHED_ONCPU] = 0;
		f->req.stage_ns[STAGE_SCHED_OFFCPU] = 0;
		f->req.stage_ns[STAGE_GPU_WAIT] = 0;
		return;
	}
	end.runq = f->req.stage_ns[STAGE_SCHED_RUNQ];
	end.oncpu = f->req.stage_ns[STAGE_SCHED_ONCPU];
	end.offcpu = f->req.stage_ns[STAGE_SCHED_OFFCPU];
	end.gpu = f->req.stage_ns[STAGE_GPU_WAIT];
	f->req.stage_ns[STAGE_SCHED_RUNQ] = end.runq - f->mark.runq;
	f->req.stage_ns[STAGE_SCHED_ONCPU] = end.oncpu - f->mark.oncpu;
	f->req.stage_ns[STAGE_SCHED_OFFCPU] = end.offcpu - f->mark.offcpu;
	f->req.stage_ns[STAGE_GPU_WAIT] = end.gpu - f->mark.gpu;
	/* per-request scheduler time for `hist --stage sched.*`: only when asked, as
	 * explain and record get it from the events */
	if (targ_sched_hist) {
		flow_sample(f, STAGE_SCHED_RUNQ, f->req.stage_ns[STAGE_SCHED_RUNQ]);
		flow_sample(f, STAGE_SCHED_ONCPU, f->req.stage_ns[STAGE_SCHED_ONCPU]);
		flow_sample(f, STAGE_SCHED_OFFCPU, f->req.stage_ns[STAGE_SCHED_OFFCPU]);
		if (f->req.stage_ns[STAGE_GPU_WAIT])
			flow_sample(f, STAGE_GPU_WAIT, f->req.stage_ns[STAGE_GPU_WAIT]);
	}
}

/* Who and where: the flow's fields the event carries. */
static __always_inline void req_fill_flow(struct flow *f, struct req_event *e)
{
	e->sk_cookie = f->cookie;
	e->tgid = f->tgid;
	e->tid = f->tid;
	e->cgroup_id = f->cgroup_id;
	e->srtt_ns = f->srtt_ns;
	e->min_rtt_ns = f->min_rtt_ns;
	e->ifindex = f->ifindex;
	e->qdisc_handle = f->qdisc_handle;
	e->netns = f->netns;
	e->lport = f->lport;
	e->rport = f->rport;
	e->family = f->family;
	e->role = f->role;
	e->proto = f->proto;
	__builtin_memcpy(e->raddr, f->raddr, TT_ADDR_LEN);
	__builtin_memcpy(e->comm, f->comm, TT_COMM_LEN);
}

/* The serving thread's last CPU: names the run queue it waited in (sched.runq); kept by
 * req_mark_end, which runs on that thread, else looked up. */
static __always_inline void req_fill_cpu(struct flow *f, struct req_event *e)
{
	__u32 tid = f->tid;
	struct thread *t = tid ? bpf_map_lookup_elem(&threads, &tid) : NULL;

	if (t)
		e->cpu = t->cpu;
}

/* The finished request to this CPU's ring. userspace polls every 100 ms at the latest:
 * waking it per request costs more than the request's tracing; wake it early only when
 * this CPU's ring fills up, once per quarter (ring_wake_due). Every wakeup is an irq_work
 * self-IPI, a VM exit on a guest: woken at every event past the first quarter, a ring
 * raised thousands a second while its reader caught up. */
static __always_inline void req_output(struct req_event *e)
{
	__u32 ring = bpf_get_smp_processor_id();
	void *rb;

	if (ring >= targ_nrings)
		ring %= targ_nrings;
	rb = bpf_map_lookup_elem(&req_rings, &ring);
	if (!rb || bpf_ringbuf_output(rb, e, sizeof(*e),
				      ring_wake_due(bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA),
						    REQ_RECORD_BYTES, targ_ring_wake)
					      ? BPF_RB_FORCE_WAKEUP
					      : BPF_RB_NO_WAKEUP))
		cnt_add(CNT_EVENTS_LOST, 1);
}

static __always_inline void req_emit(struct flow *f)
{
	if (f->proto == PROTO_HTTP2)
		return; /* its streams are the requests (framing.bpf.h) */
	if (f->phase == REQ_IDLE || !f->req.first_resp_ns)
		goto reset;
	/* --tls-uprobes: before the TLS library's first read or write on it, a connection's
	 * first two exchanges are its handshake (hello to the peer's flight, then Finished to
	 * the session tickets or the peer's Finished), no request */
	if (targ_tls && f->proto == PROTO_TLS && !f->tls_bound && f->tls_hs < 2) {
		f->tls_hs++;
		goto reset;
	}
	/* --role picks the side to analyse: both ends of a connection can be on this host */
	if (targ_role != ROLE_AUTO && f->role != targ_role)
		goto reset;
	if (!f->req.end_ns || f->req.end_ns < f->req.first_resp_ns)
		f->req.end_ns = f->last_send_ns > f->req.first_resp_ns ? f->last_send_ns
								       : f->req.first_resp_ns;
	req_sched_deltas(f);
	/* the CPU names sched.runq's place: only a request the deep tier splits has one */
	if (f->mark_valid != 3 && deep_on())
		req_fill_cpu(f, &f->req);
	req_fill_flow(f, &f->req);
	if (f->overlapped)
		f->req.flags |= REQ_F_OVERLAP;
	if (!deep_on() || f->req_gen != deep_gen)
		f->req.flags |= REQ_F_PARTIAL;
	flow_sample(f, STAGE_REQ_LATENCY, f->req.end_ns - f->req.start_ns);
	flow_sample(f, STAGE_REQ_TTFT, f->req.first_resp_ns - f->req.start_ns);
	req_output(&f->req);
reset:
	__builtin_memset(&f->req, 0, sizeof(f->req));
	__builtin_memset(f->covered, 0, sizeof(f->covered));
	f->mark_valid = 0;
	f->await_token = AWAIT_NONE;
	f->phase = REQ_IDLE;
}

/* A request starts at `start` (a client's send, or a packet's arrival at the driver); `now`
 * is the caller's clock reading, which the thread's counters are brought up to. */
static __always_inline void req_begin(struct flow *f, __u64 start, __u64 now)
{
	req_emit(f);
	/* --budget: a flow that left the sample (drawn anew every step) leaves at a request
	 * boundary, never in the middle of one: each request is kept when its flow is in the
	 * sample as it starts, whatever its length. From now on no hook finds the flow; the
	 * sweep deletes it (sock.bpf.h) and it comes back with a later draw. A store, not a
	 * branch: the paths of the hooks that inline this stay one. */
	if (!flow_in_sample(f->sk_addr))
		f->verdict = FLOW_UNSAMPLED;
	f->phase = REQ_IN;
	f->req.start_ns = start;
	f->req_gen = deep_gen;
	/* the scheduler's counters move only while the deep tier runs: without it the
	 * request is not split, and a mark would cost a hash lookup for nothing */
	if (!deep_on())
		return;
	if (f->tid && thread_mark(f->tid, now, &f->mark))
		f->mark_valid = 1;
	else
		f->tracked_tid = 0; /* gone (exited or evicted): track it again at its next I/O */
}

/* The serving thread's counters now, kept as the request's end mark (stored in the
 * sched stage slots until req_emit turns them into deltas). */
static __always_inline void req_mark_end(struct flow *f, __u64 now)
{
	struct sched_mark m;

	if (!(f->mark_valid & 1) || !deep_on())
		return;
	if (!thread_mark(f->tid, now, &m)) {
		f->tracked_tid = 0;
		return;
	}
	f->req.cpu = bpf_get_smp_processor_id(); /* we run on the serving thread */
	f->req.stage_ns[STAGE_SCHED_RUNQ] = m.runq;
	f->req.stage_ns[STAGE_SCHED_ONCPU] = m.oncpu;
	f->req.stage_ns[STAGE_SCHED_OFFCPU] = m.offcpu;
	f->req.stage_ns[STAGE_GPU_WAIT] = m.gpu;
	f->mark_valid = 3;
}

/* The peer's data segment acknowledges `ack` of this side's bytes: what it had received when
 * it sent the segment. A response is sent after its request arrived, so data that does not
 * acknowledge the client's request's first byte answers an earlier request: the client
 * sent this one before the previous response had all arrived. */
static __always_inline bool req_overlaps_client(struct flow *f, const struct seg_ack *a)
{
	return a && a->valid && (__s32)(a->ack - f->req_seq) <= 0;
}

/* A server's next request was sent before the client had all the response bytes this
 * side has written: the client did not wait for the response, requests overlap. */
static __always_inline bool req_overlaps_server(struct flow *f, const struct seg_ack *a)
{
	return a && a->valid && f->phase == REQ_OUT && (__s32)(a->write_seq - a->ack) > 0;
}

/* Inbound data reached the socket at `now`; `arrival` is its driver receive time; `a`: the
 * segment's ACK number, when the caller has the segment (NULL otherwise). */
static __always_inline void req_on_inbound(struct flow *f, __u64 arrival, __u64 now, __u32 bytes,
					   const struct seg_ack *a)
{
	if (!targ_requests || f->proto == PROTO_HTTP2)
		return;
	if (f->role == ROLE_CLIENT) {
		if (f->phase == REQ_IN && req_overlaps_client(f, a)) {
			/* the end of an earlier response, not this request's first byte */
			f->overlapped = 1;
			return;
		}
		if (f->phase == REQ_IN) {
			f->phase = REQ_OUT;
			f->req.first_resp_ns = arrival;
			if (f->await_token == AWAIT_HEADERS_HERE)
				f->await_token = AWAIT_TOKEN;
			else
				req_path_base(f);
		} else if (f->phase == REQ_OUT && f->await_token == AWAIT_TOKEN) {
			/* the first token after a header block that came alone */
			f->await_token = AWAIT_NONE;
			f->req.first_resp_ns = arrival;
			f->req.flags |= REQ_F_STREAM;
			f->req.chunks = 1;
			f->req.max_gap_ns = 0;
			req_path_base(f);
		} else if (f->phase == REQ_OUT && (f->req.flags & REQ_F_STREAM) &&
			   arrival > f->last_in_ns) {
			__u64 gap = arrival - f->last_in_ns;

			if (gap > f->req.max_gap_ns)
				f->req.max_gap_ns = gap;
			req_gap_sample(f, gap);
			f->req.chunks++;
			req_path_restart(f, arrival);
		}
		if (f->phase == REQ_OUT) {
			f->req.bytes_in += bytes;
			f->last_in_ns = arrival;
		}
		return;
	}
	if (f->phase != REQ_IN) {
		if (req_overlaps_server(f, a))
			f->overlapped = 1;
		req_begin(f, arrival, now);
	}
	f->req.bytes_in += bytes;
}

/* The application starts a send; `write_seq`: the sequence number of its first byte;
 * `unread`: data bytes received and not read yet. A client that sends its next request
 * before reading the whole response to this one has requests overlapping: the data it
 * has not read arrived before the new request left, so it answers an earlier one. */
static __always_inline void req_on_send(struct flow *f, __u64 now, __u32 tid, __u32 write_seq,
					__u32 unread)
{
	if (!targ_requests || f->proto == PROTO_HTTP2)
		return;
	if (f->role == ROLE_CLIENT) {
		if (f->phase != REQ_IN) {
			if (f->phase == REQ_OUT && unread)
				f->overlapped = 1;
			req_begin(f, now, now);
			f->req_seq = write_seq;
		}
		return;
	}
	if (f->phase == REQ_IN) {
		f->phase = REQ_OUT;
		f->req.first_resp_ns = now;
		f->req.chunks = 0;
		req_path_base(f);
	} else if (f->phase == REQ_OUT && f->await_token == AWAIT_TOKEN) {
		/* the header block went alone (framing.bpf.h): this is the first token */
		f->await_token = AWAIT_NONE;
		f->req.first_resp_ns = now;
		f->req.flags |= REQ_F_STREAM;
		f->req.chunks = 0;
		f->req.max_gap_ns = 0;
		req_path_base(f);
	} else if (f->phase == REQ_OUT && f->last_send_ns) {
		__u64 gap = now - f->last_send_ns;
		__u64 ret = f->last_send_end_ns > f->last_send_ns ? f->last_send_end_ns
								  : f->last_send_ns;

		if (gap > f->req.max_gap_ns)
			f->req.max_gap_ns = gap;
		req_gap_sample(f, gap);
		/* paced by the application (it paused longer than its last send took), not
		 * by a send that waited for the path */
		if (now - ret > ret - f->last_send_ns)
			req_path_restart(f, now);
	} else {
		return;
	}
	f->req.chunks++;
	f->last_send_ns = now;
	if (f->tid == tid)
		req_mark_end(f, now);
}

/* The application read data. A client reading while its request is still in REQ_IN got
 * a response whose arrival no hook saw: TCP can queue data on a socket without
 * tcp_probe or sk_data_ready firing for it (seen behind a standing queue, 0.2-0.8 % of
 * nginx's responses). It had nothing unread when it sent (overlapped is 0), so this is
 * the response; its first byte counts from the read. */
static __always_inline void req_on_read(struct flow *f, __u64 now, __u32 bytes)
{
	if (!targ_requests || f->proto == PROTO_HTTP2)
		return;
	if (f->role == ROLE_CLIENT && f->phase == REQ_IN && !f->overlapped) {
		f->phase = REQ_OUT;
		f->req.first_resp_ns = now;
		f->req.bytes_in += bytes;
		cnt_add(CNT_RESP_UNSEEN, 1);
	}
	if (f->role == ROLE_CLIENT && f->phase == REQ_OUT) {
		/* a streamed response's tokens are its arrivals, not its reads */
		if (f->req.end_ns && now - f->req.end_ns > 0 && !(f->req.flags & REQ_F_STREAM)) {
			__u64 gap = now - f->req.end_ns;

			if (gap > f->req.max_gap_ns)
				f->req.max_gap_ns = gap;
		}
		f->req.end_ns = now;
		if (!(f->req.flags & REQ_F_STREAM))
			f->req.chunks++;
		req_mark_end(f, now);
	}
	(void)bytes;
}

/* A send of the response returned, `sent` bytes taken: without the deep tier, whose driver
 * hook sees the packets leave (req_on_tx_out), the server's request ends with its last
 * one, the latest point the socket-level hooks see. */
static __always_inline void req_on_send_return(struct flow *f, __u64 now, int sent)
{
	if (targ_requests && f->role != ROLE_CLIENT && f->phase == REQ_OUT &&
	    f->proto != PROTO_HTTP2) {
		f->req.end_ns = now;
		f->req.bytes_out += sent > 0 ? sent : 0;
	}
}

/* A response packet left for the device: the server's request ends with its last one. */
static __always_inline void req_on_tx_out(struct flow *f, __u64 now, __u32 bytes)
{
	if (targ_requests && f->role != ROLE_CLIENT && f->phase == REQ_OUT &&
	    f->proto != PROTO_HTTP2) {
		f->req.end_ns = now;
		f->req.bytes_out += bytes;
	}
}

#endif
