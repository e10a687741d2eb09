/* SPDX-License-Identifier: GPL-2.0 */
/* Requests from the application's framing, where the protocol has one. The tracing hooks
 * see headers only; cgroup_skb programs read a segment's payload (paged skbs included),
 * and from it only the protocol, frame types, lengths, flags and stream ids: nothing of a
 * prompt or a token is read past a frame header or kept.
 *
 * HTTP/1.1: a response whose header block goes alone (as SSE servers send it) has its
 * first token in the data after it (AWAIT_TOKEN, requests.bpf.h); exchanges stay the
 * requests.
 * HTTP/2 (h2c, gRPC): every stream is a request, from the HEADERS that open it to the
 * END_STREAM of its response; control frames (SETTINGS, PING, WINDOW_UPDATE) belong to
 * none. Streams of one connection overlap, so the connection's stage times accumulate in
 * flow->req, never sent itself, and each stream takes the deltas over its own life.
 * TLS hides the framing: such connections are marked, and their requests are exchanges,
 * unless --tls-uprobes shows the plaintext (tls.bpf.h), which the same code here reads.
 */
#ifndef TT_FRAMING_BPF_H
#define TT_FRAMING_BPF_H

#include "requests.bpf.h"

#define H2_HDR_LEN        9
#define H2_FRAMES_PER_SKB 24         /* frame headers one segment is walked for */
#define H2_LEN_MAX        (1u << 20) /* longest frame believed (SETTINGS_MAX_FRAME_SIZE) */
#define PROTO_TRIES       4          /* data segments looked at before giving up */

enum h2_type {
	H2_DATA,
	H2_HEADERS,
	H2_PRIORITY,
	H2_RST_STREAM,
	H2_SETTINGS,
	H2_PUSH_PROMISE,
	H2_PING,
	H2_GOAWAY,
	H2_WINDOW_UPDATE,
	H2_CONTINUATION,
};
#define H2_END_STREAM 0x1

struct h2_stream_key {
	__u64 sk_addr;
	__u32 sid;
	__u32 pad;
};

/* A stream in progress. The connection's stage times (cumulative in flow->req) at its
 * start, first token and latest token: a stage claims what it took before the first token
 * and after the latest one, the critical path of a paced stream (requests.bpf.h). */
struct h2_stream {
	__u64 start_ns, first_ns, last_ns, max_gap_ns;
	__u64 base[TT_REQ_STAGES];
	__u64 at_first[TT_REQ_STAGES];
	__u64 at_last[TT_REQ_STAGES];
	struct sched_mark mark;
	__u32 tokens;
	__u32 req_bytes, resp_bytes;
	__u32 retrans, retrans_rto, drops, ecn_ce; /* the connection's counts at the start */
	__u32 tid;
	__u8 mark_valid;
	__u8 pad[3];
	__u32 deep_gen; /* the deep tier's generation at its start */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct h2_stream_key);
	__type(value, struct h2_stream);
} h2_streams SEC(".maps");

/* the event of a finished stream is built here: too large for the stack */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct req_event);
} h2_event SEC(".maps");

static const struct h2_stream zero_stream;

/* A segment with more frame headers than one walk takes (a TSO segment of a backlog of
 * small tokens holds hundreds) goes on in the same program again: a tail call per walk,
 * up to the kernel's 33. One array a direction (the kernel holds a program array to one
 * attach type); userspace fills slot 0. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} framing_more_out SEC(".maps"), framing_more_in SEC(".maps");

/* A frame header that HTTP/2 allows (RFC 9113 section 6): a type's fixed length and
 * whether it belongs to a stream or the connection. */
static __always_inline bool h2_plausible(const __u8 *b)
{
	__u32 len = (__u32)b[0] << 16 | (__u32)b[1] << 8 | b[2];
	__u32 sid = ((__u32)b[5] << 24 | (__u32)b[6] << 16 | (__u32)b[7] << 8 | b[8]);

	if (len > H2_LEN_MAX || (sid & 0x80000000u))
		return false;
	switch (b[3]) {
	case H2_DATA:
	case H2_HEADERS:
	case H2_PUSH_PROMISE:
	case H2_CONTINUATION:
		return sid != 0;
	case H2_PRIORITY:
		return sid != 0 && len == 5;
	case H2_RST_STREAM:
		return sid != 0 && len == 4;
	case H2_SETTINGS:
		return sid == 0 && len % 6 == 0 && !(b[4] & 1 && len);
	case H2_PING:
		return sid == 0 && len == 8;
	case H2_GOAWAY:
		return sid == 0 && len >= 8;
	case H2_WINDOW_UPDATE:
		return len == 4;
	default:
		return false;
	}
}

static __always_inline bool bytes_are(const __u8 *b, const char *s, int n)
{
	for (int i = 0; i < n; i++)
		if (b[i] != (__u8)s[i])
			return false;
	return true;
}

/* The protocol a connection's first bytes name: the HTTP/2 client preface, an HTTP/1
 * request or status line, a TLS record; PROTO_UNKNOWN otherwise. */
static __always_inline __u8 proto_of_prefix(const __u8 *b, __u32 n)
{
	if (n >= 16 && bytes_are(b, "PRI * HTTP/2.0\r\n", 16))
		return PROTO_HTTP2;
	if (n >= 7 && bytes_are(b, "HTTP/1.", 7))
		return PROTO_HTTP1;
	if (n >= 5 &&
	    (bytes_are(b, "GET ", 4) || bytes_are(b, "POST ", 5) || bytes_are(b, "PUT ", 4) ||
	     bytes_are(b, "HEAD ", 5) || bytes_are(b, "DELETE ", 5) || bytes_are(b, "PATCH ", 5) ||
	     bytes_are(b, "OPTIONS ", 5)))
		return PROTO_HTTP1;
	if (n >= 3 && (b[0] == 0x16 || b[0] == 0x17) && b[1] == 3 && b[2] <= 4)
		return PROTO_TLS;
	return PROTO_UNKNOWN;
}

/* The protocol from a connection's data: proto_of_prefix(), or (a connection older than
 * tailtrace) two HTTP/2 frame headers in a row. */
static __always_inline __u8 proto_of(const __u8 *b, __u32 n, struct __sk_buff *skb, __u32 poff,
				     __u32 plen)
{
	__u8 next[H2_HDR_LEN];
	__u8 p = proto_of_prefix(b, n);
	__u32 len;

	if (p != PROTO_UNKNOWN)
		return p;
	if (n < H2_HDR_LEN || !h2_plausible(b))
		return PROTO_UNKNOWN;
	len = (__u32)b[0] << 16 | (__u32)b[1] << 8 | b[2];
	if (len + H2_HDR_LEN > plen)
		return PROTO_UNKNOWN; /* one frame cut by the segment: too weak alone */
	if (len + 2 * H2_HDR_LEN > plen)
		return len + H2_HDR_LEN == plen ? PROTO_HTTP2 : PROTO_UNKNOWN;
	if (bpf_skb_load_bytes(skb, poff + len + H2_HDR_LEN, next, H2_HDR_LEN))
		return PROTO_UNKNOWN;
	return h2_plausible(next) ? PROTO_HTTP2 : PROTO_UNKNOWN;
}

/* The connection's cumulative stage times, as a stream's mark. */
static __always_inline void h2_stage_mark(const struct flow *f, __u64 *to)
{
	for (__u32 s = 0; s < TT_REQ_STAGES; s++)
		to[s] = f->req.stage_ns[s];
}

/* A stream's end: its event, from the connection's deltas over its life. A global
 * function, verified once: a number for the socket, which the caller found traced. */
__noinline int h2_finish(__u64 sk_addr, __u32 sid, __u64 now)
{
	struct h2_stream_key key = { .sk_addr = sk_addr, .sid = sid };
	struct sched_mark m;
	struct req_event *e;
	struct h2_stream *st;
	struct flow *f;
	__u32 zero = 0;

	f = bpf_map_lookup_elem(&flows, &sk_addr);
	st = bpf_map_lookup_elem(&h2_streams, &key);
	e = bpf_map_lookup_elem(&h2_event, &zero);
	if (!f || !st || !e)
		return 0;
	if (targ_role != ROLE_AUTO && f->role != targ_role)
		goto out;
	__builtin_memset(e, 0, sizeof(*e));
	req_fill_flow(f, e);
	e->stream_id = sid;
	e->flags = REQ_F_STREAM;
	if (!deep_on() || st->deep_gen != deep_gen)
		e->flags |= REQ_F_PARTIAL;
	e->start_ns = st->start_ns;
	e->first_resp_ns = st->first_ns ? st->first_ns : now;
	e->end_ns = now > e->first_resp_ns ? now : e->first_resp_ns;
	e->max_gap_ns = st->max_gap_ns;
	e->chunks = st->tokens;
	e->bytes_in = f->role == ROLE_CLIENT ? st->resp_bytes : st->req_bytes;
	e->bytes_out = f->role == ROLE_CLIENT ? st->req_bytes : st->resp_bytes;
	for (__u32 s = 0; s < TT_REQ_STAGES; s++) {
		if (!stage_on_path(s))
			continue;
		if (st->tokens > 1)
			e->stage_ns[s] = (st->at_first[s] - st->base[s]) +
					 (f->req.stage_ns[s] - st->at_last[s]);
		else
			e->stage_ns[s] = f->req.stage_ns[s] - st->base[s];
	}
	if (st->mark_valid && st->tid && thread_mark(st->tid, now, &m)) {
		e->stage_ns[STAGE_SCHED_RUNQ] = m.runq - st->mark.runq;
		e->stage_ns[STAGE_SCHED_ONCPU] = m.oncpu - st->mark.oncpu;
		e->stage_ns[STAGE_SCHED_OFFCPU] = m.offcpu - st->mark.offcpu;
		e->stage_ns[STAGE_GPU_WAIT] = m.gpu - st->mark.gpu;
		e->tid = st->tid;
	}
	req_fill_cpu(f, e);
	e->retrans = f->req.retrans - st->retrans;
	e->retrans_rto = f->req.retrans_rto - st->retrans_rto;
	e->drops = f->req.drops - st->drops;
	e->ecn_ce = f->req.ecn_ce - st->ecn_ce;
	flow_sample(f, STAGE_REQ_LATENCY, e->end_ns - e->start_ns);
	flow_sample(f, STAGE_REQ_TTFT, e->first_resp_ns - e->start_ns);
	req_output(e);
out:
	if (!bpf_map_delete_elem(&h2_streams, &key))
		cnt_add(CNT_STREAM_DELETES, 1);
	return 0;
}

/* A stream's END_STREAM frame ends at `end_seq`: the stream ends when that byte leaves for
 * the device (server) or is read (client). Four wait per connection; a fifth ends the
 * oldest now. */
static __always_inline void h2_pending_add(struct flow *f, __u32 sid, __u32 end_seq, __u64 now)
{
	__u32 n = f->h2_npending;

	if (n >= H2_PENDING) {
		h2_finish(f->sk_addr, f->h2_pending[f->h2_phead % H2_PENDING].sid, now);
		f->h2_phead++;
		n--;
	}
	f->h2_pending[(f->h2_phead + n) % H2_PENDING].sid = sid;
	f->h2_pending[(f->h2_phead + n) % H2_PENDING].end_seq = end_seq;
	f->h2_npending = n + 1;
}

/* This side's bytes up to `upto` left (server: for the device) or were read (client). */
static __always_inline void h2_pending_done(struct flow *f, __u32 upto, __u64 now)
{
	for (int i = 0; i < H2_PENDING; i++) {
		struct h2_pending *p = &f->h2_pending[f->h2_phead % H2_PENDING];

		if (!f->h2_npending || (__s32)(upto - p->end_seq) < 0)
			break;
		h2_finish(f->sk_addr, p->sid, now);
		f->h2_phead++;
		f->h2_npending--;
	}
}

/* The connection closes: streams whose END_STREAM went out or arrived end now. */
static __always_inline void h2_pending_flush(struct flow *f)
{
	__u32 last = (f->h2_phead + f->h2_npending - 1) % H2_PENDING;

	if (f->h2_npending)
		h2_pending_done(f, f->h2_pending[last].end_seq, bpf_ktime_get_ns());
}

/* One frame header: `out` whether this side sends it, `end_seq` one past its last byte.
 * Packed arguments: a global function takes five. */
__noinline int h2_frame(__u64 sk_addr, __u64 hdr, __u64 sid_end, __u64 now, __u32 out)
{
	struct h2_stream_key key = { .sk_addr = sk_addr, .sid = (__u32)sid_end & 0x7fffffff };
	__u32 len = hdr >> 16, end_seq = sid_end >> 32;
	__u8 type = (hdr >> 8) & 0xff, flags = hdr & 0xff;
	struct h2_stream *st;
	struct flow *f;
	bool from_client;

	f = bpf_map_lookup_elem(&flows, &sk_addr);
	if (!f || !key.sid)
		return 0;
	from_client = f->role == ROLE_CLIENT ? out : !out;
	st = bpf_map_lookup_elem(&h2_streams, &key);
	if (from_client) {
		if (type == H2_HEADERS && !st) {
			/* a new stream: the request starts */
			if (bpf_map_update_elem(&h2_streams, &key, &zero_stream, BPF_NOEXIST)) {
				cnt_add(CNT_STREAM_UPDATE_FAIL, 1);
				return 0;
			}
			st = bpf_map_lookup_elem(&h2_streams, &key);
			if (!st)
				return 0;
			cnt_add(CNT_STREAM_INSERTS, 1);
			st->start_ns = now;
			st->deep_gen = deep_gen;
			h2_stage_mark(f, st->base);
			st->retrans = f->req.retrans;
			st->retrans_rto = f->req.retrans_rto;
			st->drops = f->req.drops;
			st->ecn_ce = f->req.ecn_ce;
			st->tid = f->tid;
			if (f->tid && thread_mark(f->tid, now, &st->mark))
				st->mark_valid = 1;
		}
		if (st && type == H2_DATA)
			st->req_bytes += len;
		return 0;
	}
	if (!st)
		return 0;
	if (type == H2_DATA && len) {
		/* a token (a gRPC message, an event): the response's data */
		if (!st->first_ns) {
			st->first_ns = now;
			h2_stage_mark(f, st->at_first);
			/* a server that hands a stream to a worker: the thread that writes its
			 * first token (the socket's latest writer, as egress follows the send)
			 * serves it from here on */
			if (out && f->tid && f->tid != st->tid) {
				st->tid = f->tid;
				st->mark_valid = thread_mark(f->tid, now, &st->mark);
			}
		} else {
			__u64 gap = now - st->last_ns;

			if (gap > st->max_gap_ns)
				st->max_gap_ns = gap;
			req_gap_sample(f, gap);
		}
		h2_stage_mark(f, st->at_last);
		st->last_ns = now;
		st->tokens++;
		st->resp_bytes += len;
	}
	if (type == H2_RST_STREAM) {
		h2_finish(sk_addr, key.sid, now);
		return 0;
	}
	if ((type == H2_DATA || type == H2_HEADERS) && (flags & H2_END_STREAM)) {
		/* through TLS (tls.bpf.h) the frame is seen as the application writes or reads
		 * it, which is when the stream ends: its offset is in plaintext, no sequence */
		if (f->tls_bound)
			h2_finish(sk_addr, key.sid, now);
		else
			h2_pending_add(f, key.sid, end_seq, now);
	}
	return 0;
}

/* HTTP/2 from here on: the connection's exchange model stops; its stage times accumulate
 * (req_stage) in a request that is never sent. */
static __always_inline void h2_begin(struct flow *f, __u64 now)
{
	f->proto = PROTO_HTTP2;
	__builtin_memset(&f->req, 0, sizeof(f->req));
	__builtin_memset(f->covered, 0, sizeof(f->covered));
	f->mark_valid = 0;
	f->req.start_ns = now;
	f->phase = REQ_IN;
}

/* One frame header at `next` in direction `dir`; returns where the next one starts. */
static __always_inline __u32 h2_header(struct flow *f, const __u8 *b, __u32 next, __u32 dir,
				       __u64 now)
{
	__u32 len = (__u32)b[0] << 16 | (__u32)b[1] << 8 | b[2];
	__u32 sid = (__u32)b[5] << 24 | (__u32)b[6] << 16 | (__u32)b[7] << 8 | b[8];

	next += H2_HDR_LEN + len;
	h2_frame(f->sk_addr, (__u64)len << 16 | (__u32)b[3] << 8 | b[4], (__u64)next << 32 | sid,
		 now, dir == 0);
	return next;
}

/* The frame headers in this segment's payload [seq, seq + plen), from the direction's
 * cursor. A header cut by the segment's end is kept and completed by the next one.
 * Returns true when frames are left for another walk. */
static __always_inline bool h2_walk(struct __sk_buff *skb, struct flow *f, __u32 dir, __u32 seq,
				    __u32 poff, __u32 plen, __u64 now)
{
	__u8 b[H2_HDR_LEN] = {};
	__u32 next, off, have, i;

	if (dir > 1)
		return false;
	next = f->h2_next[dir];
	if (f->h2_synced[dir] && (__s32)(next - seq) < 0 &&
	    !(f->h2_part_len[dir] && next + f->h2_part_len[dir] == seq)) {
		/* bytes were missed (out of order, or not seen): find a frame again */
		f->h2_synced[dir] = 0;
		cnt_add(CNT_FRAMING_LOST, 1);
	}
	if (!f->h2_synced[dir]) {
		if (plen < H2_HDR_LEN || bpf_skb_load_bytes(skb, poff, b, H2_HDR_LEN) ||
		    !h2_plausible(b))
			return false;
		next = seq;
		f->h2_part_len[dir] = 0;
		f->h2_synced[dir] = 1;
	}
	if ((__s32)(next + f->h2_part_len[dir] - (seq + plen)) >= 0)
		return false; /* all of it is before the cursor: a retransmission */
	have = f->h2_part_len[dir];
	if (have) {
		__u32 need;

		f->h2_part_len[dir] = 0;
		if (have > 8 || next + have != seq)
			goto lost;
		/* 1 to 8, as the verifier can see */
		need = ((H2_HDR_LEN - have - 1) & 7) + 1;
		if (need > plen)
			goto lost;
		/* completed in the flow: the verifier takes a variable offset into a map
		 * value, not into the stack */
		if (bpf_skb_load_bytes(skb, poff, &f->h2_part[dir][have], need))
			goto lost;
		__builtin_memcpy(b, f->h2_part[dir], H2_HDR_LEN);
		next = h2_header(f, b, next, dir, now);
	}
	for (i = 0; i < H2_FRAMES_PER_SKB; i++) {
		off = next - seq;
		if (off >= plen)
			break;
		if (plen - off < H2_HDR_LEN) {
			/* 1 to 8 bytes (off < plen), as the verifier can see */
			have = ((plen - off - 1) & 7) + 1;
			if (!bpf_skb_load_bytes(skb, poff + off, f->h2_part[dir], have))
				f->h2_part_len[dir] = have;
			break;
		}
		if (bpf_skb_load_bytes(skb, poff + off, b, H2_HDR_LEN))
			break;
		next = h2_header(f, b, next, dir, now);
	}
	f->h2_next[dir] = next;
	return i == H2_FRAMES_PER_SKB && (__s32)(next - (seq + plen)) < 0;
lost:
	f->h2_synced[dir] = 0;
	cnt_add(CNT_FRAMING_LOST, 1);
	return false;
}

/* HTTP/1: a response's header block alone in a segment (status line, and the block's end
 * "\r\n\r\n" at the segment's end, not a chunked body's "0\r\n\r\n"). */
static __always_inline bool h1_headers_alone(struct __sk_buff *skb, const __u8 *b, __u32 n,
					     __u32 poff, __u32 plen)
{
	__u8 tail[8];

	if (n < 7 || !bytes_are(b, "HTTP/1.", 7) || plen < 16 || plen > 8192)
		return false;
	if (bpf_skb_load_bytes(skb, poff + plen - 8, tail, 8))
		return false;
	return bytes_are(tail + 4, "\r\n\r\n", 4) && !bytes_are(tail + 1, "\r\n0\r\n\r\n", 7);
}

/* Where a TCP segment's payload lies. */
struct tcp_seg {
	__u32 seq;  /* of its first byte */
	__u32 poff; /* its offset from the network header */
	__u32 plen;
};

/* Read from the linear headers with direct packet access (cgroup_skb's data starts at the
 * network header; TCP has pulled its own header before the ingress hook, and builds it in
 * the linear part on egress), before the flow lookup. False for a segment without payload
 * (an ACK, a SYN or FIN alone: on a bulk transfer every other packet) and for anything but
 * TCP right after the IP header. */
static __always_inline bool skb_tcp_seg(struct __sk_buff *skb, struct tcp_seg *s)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct tcphdr *th;
	__u32 off;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data;

		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_TCP)
			return false;
		off = ip->ihl * 4;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data;

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_TCP)
			return false;
		off = sizeof(*ip6);
	} else {
		return false;
	}
	th = data + (off & 0x3f);
	if ((void *)(th + 1) > end)
		return false;
	s->seq = bpf_ntohl(th->seq);
	s->poff = (off & 0x3f) + th->doff * 4;
	if (skb->len <= s->poff)
		return false;
	s->plen = skb->len - s->poff;
	return true;
}

/* The flow of a segment's socket, when traced and its framing still read. */
static __always_inline struct flow *framing_flow(struct __sk_buff *skb)
{
	struct bpf_sock *bsk = skb->sk;
	struct tcp_sock *tp;
	struct flow *f;
	__u64 addr;

	if (!targ_requests || !bsk)
		return NULL;
	/* --port: the context's own loads of the socket's ports, before any helper; most
	 * packets of a host are not traced. remote_port is in network order, in the upper
	 * half on little-endian hosts and the lower on big-endian ones. */
	if (targ_nports) {
		__u32 rp = skb->remote_port;

		if (!port_selected(skb->local_port, bpf_ntohs((__u16)(rp >> 16 | rp))))
			return NULL;
	}
	tp = bpf_skc_to_tcp_sock(bsk);
	if (!tp)
		return NULL;
	addr = (__u64)tp;
	f = bpf_map_lookup_elem(&flows, &addr);
	if (!f || f->verdict != FLOW_TRACED || f->proto == PROTO_OPAQUE || f->proto == PROTO_TLS ||
	    f->tls_bound)
		return NULL;
	return f;
}

/* A segment of a traced connection: `out` from this side. Returns true when frame headers
 * are left for another walk. */
static __always_inline bool framing_skb(struct __sk_buff *skb, const struct tcp_seg *s, bool out)
{
	__u32 poff = s->poff, plen = s->plen, seq = s->seq, n, dir = out ? 0 : 1;
	struct flow *f = framing_flow(skb);
	__u8 b[16] = {};
	__u64 now;

	if (!f)
		return false;
	/* HTTP/1.1 needs a look only where a response may begin; unknown ones at their first
	 * data segments. The rest of an HTTP/1.1 connection's packets leave here, before any
	 * header is read. */
	if (f->proto == PROTO_HTTP1 &&
	    !(f->role == ROLE_SERVER && out && f->phase == REQ_OUT && f->req.chunks == 1 &&
	      f->await_token == AWAIT_NONE) &&
	    !(f->role == ROLE_CLIENT && !out && f->phase == REQ_IN))
		return false;
	now = bpf_ktime_get_ns();
	if (f->proto == PROTO_HTTP2)
		return h2_walk(skb, f, dir, seq, poff, plen, now);
	/* constant lengths: shorter segments tell nothing */
	n = plen >= sizeof(b) ? sizeof(b) : H2_HDR_LEN;
	if (plen < H2_HDR_LEN ||
	    bpf_skb_load_bytes(skb, poff, b, plen >= sizeof(b) ? sizeof(b) : H2_HDR_LEN))
		return false;
	if (f->proto == PROTO_UNKNOWN) {
		__u8 p = proto_of(b, n, skb, poff, plen);

		if (p == PROTO_UNKNOWN && ++f->proto_tries < PROTO_TRIES)
			return false;
		f->proto = p == PROTO_UNKNOWN ? PROTO_OPAQUE : p;
		if (p == PROTO_HTTP2) {
			h2_begin(f, now);
			/* after the client preface (24 bytes) a frame follows; the other
			 * direction is found by its first frame header */
			f->h2_synced[dir] = 1;
			f->h2_next[dir] = seq + (bytes_are(b, "PRI *", 5) ? 24 : 0);
			f->h2_synced[dir ^ 1] = 0;
			return h2_walk(skb, f, dir, seq, poff, plen, now);
		}
		if (p != PROTO_HTTP1)
			return false;
	}
	if (!h1_headers_alone(skb, b, n, poff, plen))
		return false;
	if (out)
		f->await_token = AWAIT_TOKEN; /* the server's next send is the first token */
	else
		f->await_token = AWAIT_HEADERS_HERE; /* TCP takes this segment next */
	return false;
}

/* More frame headers than 33 walks take: the rest of the segment is lost to the framing,
 * which looks for a frame header again at the next segment. */
static __always_inline void framing_give_up(struct __sk_buff *skb, bool out)
{
	struct flow *f = framing_flow(skb);

	if (f) {
		f->h2_synced[out ? 0 : 1] = 0;
		cnt_add(CNT_FRAMING_LOST, 1);
	}
}

/* Always let the packet through: tailtrace only looks. */
SEC("cgroup_skb/egress")
int tt_skb_egress(struct __sk_buff *skb)
{
	struct tcp_seg seg;

	if (!skb_tcp_seg(skb, &seg))
		return 1;
	if (framing_skb(skb, &seg, true)) {
		bpf_tail_call(skb, &framing_more_out, 0);
		framing_give_up(skb, true);
	}
	return 1;
}

SEC("cgroup_skb/ingress")
int tt_skb_ingress(struct __sk_buff *skb)
{
	struct tcp_seg seg;

	if (!skb_tcp_seg(skb, &seg))
		return 1;
	if (framing_skb(skb, &seg, false)) {
		bpf_tail_call(skb, &framing_more_in, 0);
		framing_give_up(skb, false);
	}
	return 1;
}

#endif
