/* SPDX-License-Identifier: GPL-2.0 */
/* --tls-uprobes: the plaintext framing of TLS connections, from uprobes on the TLS
 * library's SSL_write(_ex) and SSL_read(_ex) (OpenSSL's libssl), attached by userspace
 * only with the option. The first bytes of the buffer a call wrote or read (a frame
 * header, a status line, the end of a header block) go through the same classifier and
 * state machine as a cleartext segment's (framing.bpf.h, requests.bpf.h); nothing else of
 * the buffer is read, and nothing of it kept.
 *
 * Which socket a call is on: the one its thread sends on or reads from during the call
 * (tls_bind(), from the send and receive hooks), remembered per SSL object for the calls
 * that touch no socket (a read served from a record read earlier). Reading the fd from
 * the SSL's BIO instead would follow OpenSSL's private struct layouts, which change
 * between versions; a thread stays inside SSL_write while the library writes the record,
 * so the correlation holds for every socket BIO. A library that writes to a memory BIO
 * and leaves the socket I/O to its caller (Python's asyncio) gives no such send inside
 * the call: its connections stay exchanges. */
#ifndef TT_TLS_BPF_H
#define TT_TLS_BPF_H

#include "framing.bpf.h"

#define TLS_FRAMES_PER_CALL 64 /* frame headers walked in one call's plaintext */

/* A TLS library call in progress on a thread. */
struct tls_call {
	__u64 ssl;     /* the SSL object */
	__u64 buf;     /* the plaintext buffer */
	__u64 len_ptr; /* SSL_*_ex: where the library stores the byte count */
	__u64 sk_addr; /* the socket the thread sent on or read from inside the call */
	__u32 out;     /* SSL_write */
	__u32 pad;
};

/* one a thread: an LRU, as a thread killed inside the call never returns */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct tls_call);
} tls_calls SEC(".maps");

struct tls_ssl_key {
	__u64 ssl;
	__u32 tgid; /* an SSL pointer is an address in its process */
	__u32 pad;
};

/* the socket of each SSL object seen on one */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct tls_ssl_key);
	__type(value, __u64);
} tls_socks SEC(".maps");

/* A send (`out`) or read on flow f: when the thread is inside a TLS call, that call is
 * on f's socket. Called from the socket hooks; compiled out without --tls-uprobes. */
static __always_inline void tls_bind(struct flow *f, bool out)
{
	struct tls_call *c;
	__u32 tid;

	if (!targ_tls)
		return;
	tid = (__u32)bpf_get_current_pid_tgid();
	c = bpf_map_lookup_elem(&tls_calls, &tid);
	if (!c)
		return;
	c->sk_addr = f->sk_addr;
	if (f->tls_bound)
		return;
	f->tls_bound = 1;
	if (f->proto != PROTO_HTTP1 && f->proto != PROTO_HTTP2)
		f->proto = PROTO_TLS;
	/* a client's first write through the library: its exchange so far was the
	 * handshake's (its Finished), the request starts with this send; the session
	 * tickets of TLS 1.3 may arrive before the response */
	if (out && f->role == ROLE_CLIENT) {
		if (f->phase != REQ_IDLE) {
			__builtin_memset(&f->req, 0, sizeof(f->req));
			__builtin_memset(f->covered, 0, sizeof(f->covered));
			f->mark_valid = 0;
			f->await_token = AWAIT_NONE;
			f->phase = REQ_IDLE;
		}
		f->tls_first = 1;
	}
	/* a server's first read through the library, in an exchange that has sent: what it
	 * sent was the handshake's (TLS 1.3 session tickets, when the request came in
	 * before them); the response is still to come */
	if (!out && f->role == ROLE_SERVER && f->phase == REQ_OUT) {
		f->phase = REQ_IN;
		f->req.first_resp_ns = 0;
		f->req.chunks = 0;
		f->req.max_gap_ns = 0;
		f->req.bytes_out = 0;
		f->last_send_ns = 0;
	}
}

/* The frame headers in a call's plaintext [seq, seq + n) at buf: as h2_walk() does for
 * a segment, with offsets in the direction's plaintext instead of TCP sequence. */
static __always_inline void tls_h2_walk(struct flow *f, __u32 dir, __u64 buf, __u32 n, __u64 now)
{
	__u8 b[H2_HDR_LEN] = {};
	__u32 seq, next, off, have, i;

	if (dir > 1)
		return;
	seq = f->tls_off[dir];
	f->tls_off[dir] = seq + n;
	next = f->h2_next[dir];
	if (f->h2_synced[dir] && (__s32)(next + f->h2_part_len[dir] - seq) < 0) {
		/* a call was missed (its socket not known): find a frame again */
		f->h2_synced[dir] = 0;
		cnt_add(CNT_FRAMING_LOST, 1);
	}
	if (!f->h2_synced[dir]) {
		if (n < H2_HDR_LEN || bpf_probe_read_user(b, H2_HDR_LEN, (void *)buf))
			return;
		/* the client preface read with the frames after it (a server that wrote its
		 * SETTINGS first found HTTP/2 from them) */
		if (n >= 24 && bytes_are(b, "PRI * HTT", H2_HDR_LEN))
			next = seq + 24;
		else if (h2_plausible(b))
			next = seq;
		else
			return;
		f->h2_part_len[dir] = 0;
		f->h2_synced[dir] = 1;
	}
	have = f->h2_part_len[dir];
	if (have) {
		__u32 need;

		f->h2_part_len[dir] = 0;
		if (have > 8 || next + have != seq)
			goto lost;
		need = ((H2_HDR_LEN - have - 1) & 7) + 1;
		if (need > n || bpf_probe_read_user(&f->h2_part[dir][have], need, (void *)buf))
			goto lost;
		__builtin_memcpy(b, f->h2_part[dir], H2_HDR_LEN);
		next = h2_header(f, b, next, dir, now);
	}
	for (i = 0; i < TLS_FRAMES_PER_CALL; i++) {
		off = next - seq;
		if (off >= n)
			break;
		if (n - off < H2_HDR_LEN) {
			have = ((n - off - 1) & 7) + 1;
			if (!bpf_probe_read_user(f->h2_part[dir], have, (void *)(buf + off)))
				f->h2_part_len[dir] = have;
			break;
		}
		if (bpf_probe_read_user(b, H2_HDR_LEN, (void *)(buf + off)))
			break;
		next = h2_header(f, b, next, dir, now);
	}
	f->h2_next[dir] = next;
	if (i == TLS_FRAMES_PER_CALL && (__s32)(next - (seq + n)) < 0)
		goto lost;
	return;
lost:
	f->h2_synced[dir] = 0;
	cnt_add(CNT_FRAMING_LOST, 1);
}

/* HTTP/1: the call's plaintext is a response's header block alone (status line, the
 * block's end at its end, not a chunked body's last chunk). */
static __always_inline bool tls_h1_headers_alone(__u64 buf, __u32 n)
{
	__u8 head[8], tail[8];

	if (n < 16 || n > 8192 || bpf_probe_read_user(head, 8, (void *)buf) ||
	    bpf_probe_read_user(tail, 8, (void *)(buf + n - 8)))
		return false;
	return bytes_are(head, "HTTP/1.", 7) && bytes_are(tail + 4, "\r\n\r\n", 4) &&
	       !bytes_are(tail + 1, "\r\n0\r\n\r\n", 7);
}

/* The protocol from a connection's first plaintext: the HTTP/2 client preface, an
 * HTTP/1 request or status line, or two HTTP/2 frame headers (one that fills the call). */
static __always_inline __u8 tls_proto_of(const __u8 *b, __u64 buf, __u32 n)
{
	__u8 next[H2_HDR_LEN];
	__u8 p = proto_of_prefix(b, n >= 16 ? 16 : n);
	__u32 len;

	if (p != PROTO_UNKNOWN || !h2_plausible(b))
		return p == PROTO_TLS ? PROTO_UNKNOWN : p;
	len = (__u32)b[0] << 16 | (__u32)b[1] << 8 | b[2];
	if (len + H2_HDR_LEN == n)
		return PROTO_HTTP2;
	if (len + 2 * H2_HDR_LEN > n ||
	    bpf_probe_read_user(next, H2_HDR_LEN, (void *)(buf + len + H2_HDR_LEN)))
		return PROTO_UNKNOWN;
	return h2_plausible(next) ? PROTO_HTTP2 : PROTO_UNKNOWN;
}

/* n bytes of plaintext at buf went out (dir 0) or came in (dir 1) on flow f. */
static __always_inline void tls_plaintext(struct flow *f, __u64 buf, __u32 n, __u32 dir, __u64 now)
{
	__u8 b[16] = {};

	if (f->proto == PROTO_HTTP2) {
		tls_h2_walk(f, dir, buf, n, now);
		return;
	}
	if (f->proto != PROTO_HTTP1) {
		__u8 p;

		/* constant lengths: shorter calls tell nothing */
		if (n < H2_HDR_LEN ||
		    bpf_probe_read_user(b, n >= sizeof(b) ? sizeof(b) : H2_HDR_LEN, (void *)buf)) {
			f->tls_off[dir & 1] += n;
			return;
		}
		p = tls_proto_of(b, buf, n);
		if (p == PROTO_HTTP2) {
			h2_begin(f, now);
			/* after the client preface (24 bytes) a frame follows; the other
			 * direction is found by its first frame header */
			f->h2_synced[dir & 1] = 1;
			f->h2_next[dir & 1] =
				f->tls_off[dir & 1] + (bytes_are(b, "PRI *", 5) ? 24 : 0);
			f->h2_synced[(dir & 1) ^ 1] = 0;
			f->h2_part_len[0] = 0;
			f->h2_part_len[1] = 0;
			tls_h2_walk(f, dir, buf, n, now);
			return;
		}
		f->tls_off[dir & 1] += n;
		if (p != PROTO_HTTP1)
			return;
		f->proto = PROTO_HTTP1;
	} else {
		f->tls_off[dir & 1] += n;
	}
	/* HTTP/1.1: where a response may begin, as framing_skb() looks */
	if (dir == 0 && f->role == ROLE_SERVER && f->phase == REQ_OUT && f->req.chunks == 1 &&
	    f->await_token == AWAIT_NONE && tls_h1_headers_alone(buf, n)) {
		f->await_token = AWAIT_TOKEN; /* the server's next send is the first token */
		return;
	}
	/* the client reads after the data arrived: the header block is the response's only
	 * arrival so far, or a token is already in and this cannot be told. The first
	 * response's arrivals may begin with the session tickets, read in the same call. */
	if (dir == 1 && f->role == ROLE_CLIENT && f->phase == REQ_OUT &&
	    !(f->req.flags & REQ_F_STREAM) && f->await_token == AWAIT_NONE &&
	    (f->last_in_ns == f->req.first_resp_ns || f->tls_first) && tls_h1_headers_alone(buf, n))
		f->await_token = AWAIT_TOKEN; /* the next arrival is the first token */
	if (dir == 1)
		f->tls_first = 0;
}

static __always_inline int tls_enter(struct pt_regs *ctx, __u32 out, bool ex)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct tls_call c = {
		.ssl = PT_REGS_PARM1(ctx),
		.buf = PT_REGS_PARM2(ctx),
		.len_ptr = ex ? PT_REGS_PARM4(ctx) : 0,
		.out = out,
	};

	if (bpf_map_update_elem(&tls_calls, &tid, &c, BPF_ANY))
		cnt_add(CNT_FLOW_UPDATE_FAIL, 1);
	return 0;
}

/* int SSL_write(SSL *, const void *buf, int num) */
SEC("uprobe")
int tt_tls_write_enter(struct pt_regs *ctx)
{
	return tls_enter(ctx, 1, false);
}

/* int SSL_write_ex(SSL *, const void *buf, size_t num, size_t *written) */
SEC("uprobe")
int tt_tls_write_ex_enter(struct pt_regs *ctx)
{
	return tls_enter(ctx, 1, true);
}

/* int SSL_read(SSL *, void *buf, int num) */
SEC("uprobe")
int tt_tls_read_enter(struct pt_regs *ctx)
{
	return tls_enter(ctx, 0, false);
}

/* int SSL_read_ex(SSL *, void *buf, size_t num, size_t *readbytes) */
SEC("uprobe")
int tt_tls_read_ex_enter(struct pt_regs *ctx)
{
	return tls_enter(ctx, 0, true);
}

/* The return of any of the four: what was written or read, on which socket. */
SEC("uretprobe")
int tt_tls_exit(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), sk_addr, n, *known;
	struct tls_ssl_key key = { .tgid = id >> 32 };
	__u32 tid = (__u32)id;
	long ret = (long)PT_REGS_RC(ctx);
	struct tls_call call, *c;
	struct flow *f;

	c = bpf_map_lookup_elem(&tls_calls, &tid);
	if (!c)
		return 0;
	call = *c;
	bpf_map_delete_elem(&tls_calls, &tid);
	if (call.len_ptr) {
		if ((int)ret != 1 || bpf_probe_read_user(&n, sizeof(n), (void *)call.len_ptr))
			return 0;
	} else {
		if ((int)ret <= 0)
			return 0;
		n = (__u32)ret;
	}
	if (!n || n > (1u << 30))
		return 0;
	key.ssl = call.ssl;
	known = bpf_map_lookup_elem(&tls_socks, &key);
	if (call.sk_addr) {
		sk_addr = call.sk_addr;
		if (!known || *known != sk_addr)
			bpf_map_update_elem(&tls_socks, &key, &sk_addr, BPF_ANY);
	} else if (known) {
		sk_addr = *known;
	} else {
		return 0; /* no socket seen for this SSL yet */
	}
	f = bpf_map_lookup_elem(&flows, &sk_addr);
	if (!f || f->verdict != FLOW_TRACED || !f->tls_bound || !targ_requests)
		return 0;
	tls_plaintext(f, call.buf, (__u32)n, call.out ? 0 : 1, bpf_ktime_get_ns());
	return 0;
}

#endif
