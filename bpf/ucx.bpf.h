/* SPDX-License-Identifier: GPL-2.0 */
/* UCX transfers, included by rdma.bpf.c. rdma.ucx_op: a UCP operation's issue (entry of
 * ucp_put_nbx, ucp_get_nbx, ucp_tag_send_nbx, ucp_am_send_nbx, ucp_stream_send_nbx) to its
 * request's completion - the call returning UCS_OK (immediate), the request's completion
 * callback being entered, or a request test (ucp_request_check_status and the receive
 * tests) returning something other than UCS_INPROGRESS - per process, endpoint and
 * operation. A send completes locally (its buffer handed to the transport), so for
 * request/response traffic rdma.ucx_rtt times the round instead: on each thread, the
 * first send after the thread's last completed receive to the completion of the next
 * receive that thread posted (ucp_tag_recv_nbx, ucp_stream_recv_nbx). Callback addresses
 * are read from the request parameters and sent to userspace, which attaches
 * ucx_complete there. */
#ifndef TT_UCX_BPF_H
#define TT_UCX_BPF_H

/* Arguments 6 and 7 of a user function (libbpf 1.1 has no PT_REGS_PARM6). */
#if defined(__TARGET_ARCH_x86)
#define UARG6(ctx) ((__u64)(ctx)->r9)
static __always_inline __u64 uarg7(struct pt_regs *ctx)
{
	__u64 v = 0;

	/* on entry sp points at the return address; argument 7 is the next slot */
	bpf_probe_read_user(&v, sizeof(v), (const void *)(ctx->sp + 8));
	return v;
}
#elif defined(__TARGET_ARCH_arm64)
#define UARG6(ctx) ((__u64)(ctx)->regs[5])
static __always_inline __u64 uarg7(struct pt_regs *ctx)
{
	return ctx->regs[6];
}
#else
#define UARG6(ctx) 0ull
static __always_inline __u64 uarg7(struct pt_regs *ctx)
{
	return 0;
}
#endif

struct ucx_start {
	__u64 start_ns;
	__u64 ep;
	__u64 cb;  /* completion callback, 0 if none */
	__u32 op;  /* enum ucx_op */
	__u32 tid; /* issuing thread (receives: whose round their completion ends) */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RDMA_THREADS_MAX);
	__type(key, __u32);
	__type(value, struct ucx_start);
} ucx_calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, UCX_INFLIGHT_MAX);
	__type(key, struct ucx_req_key);
	__type(value, struct ucx_start);
} ucx_inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RDMA_THREADS_MAX);
	__type(key, __u32);
	__type(value, __u64); /* request of a ucp_request_check_status call */
} ucx_checks SEC(".maps");

/* Per thread, the round waiting for a receive: the first send since the thread's last
 * completed receive. LRU: a thread that sends and exits leaves its round behind. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RDMA_THREADS_MAX);
	__type(key, __u32);
	__type(value, struct ucx_start);
} ucx_rounds SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, UCX_CB_MAX);
	__type(key, struct ucx_cb_event);
	__type(value, __u8);
} ucx_cb_seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} ucx_events SEC(".maps");

static __always_inline bool ucx_is_recv(__u32 op)
{
	return op == UCX_OP_TAG_RECV || op == UCX_OP_STREAM_RECV;
}

static __always_inline void ucx_put(__u32 tgid, const struct ucx_start *s, __u32 status, __u64 now,
				    __u16 stage)
{
	struct rdma_hist_key hk = {};

	hk.tgid = tgid;
	hk.qpn = (__u32)s->ep;
	hk.peer_qpn = (__u32)(s->ep >> 32);
	hk.stage = stage;
	hk.opcode = s->op;
	hk.status = status > 255 ? 255 : status;
	hist_put(&hk, now - s->start_ns);
}

/* Tells userspace about a completion callback it has not attached yet. */
static __always_inline void ucx_cb_report(__u32 tgid, __u64 cb)
{
	struct ucx_cb_event k = {}, *e;
	__u8 one = 1;

	k.cb = cb;
	k.tgid = tgid;
	if (bpf_map_lookup_elem(&ucx_cb_seen, &k))
		return;
	e = bpf_ringbuf_reserve(&ucx_events, sizeof(*e), 0);
	if (!e) {
		count(RC_UCX_CB_LOST);
		return;
	}
	*e = k;
	bpf_ringbuf_submit(e, 0);
	bpf_map_update_elem(&ucx_cb_seen, &k, &one, BPF_ANY);
}

/* A send opens the thread's round unless one is open: the round is timed from the first
 * send of a request (a request may take several sends) to its reply. A GET waits for
 * its own data and opens none. */
static __always_inline void ucx_round_open(const struct ucx_start *s)
{
	struct ucx_start *r;

	if (s->op == UCX_OP_GET || ucx_is_recv(s->op))
		return;
	r = bpf_map_lookup_elem(&ucx_rounds, &s->tid);
	if (r && s->start_ns - r->start_ns < UCX_RTT_STALE_NS)
		return;
	if (r)
		count(RC_UCX_RTT_STALE);
	if (bpf_map_update_elem(&ucx_rounds, &s->tid, s, BPF_ANY))
		count(RC_THREAD_FAIL);
}

/* A receive posted by thread tid completed: the round of that thread, if one is open,
 * is over. */
static __always_inline void ucx_round_end(__u32 tid, __u32 tgid, __u32 status, __u64 now)
{
	struct ucx_start *r = bpf_map_lookup_elem(&ucx_rounds, &tid);

	count(RC_UCX_RECVS);
	if (!r)
		return; /* a receive no send of this thread waits for (a responder's request) */
	ucx_put(tgid, r, status, now, STAGE_RDMA_UCX_RTT);
	bpf_map_delete_elem(&ucx_rounds, &tid);
}

static __always_inline int ucx_enter(__u64 ep, __u64 param, __u32 op)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ucx_start s = {};

	s.start_ns = bpf_ktime_get_ns();
	s.ep = ep;
	s.op = op;
	s.tid = tid;
	if (param && (rd_u32(param, UCX_PARAM_MASK_OFF) & UCX_ATTR_FIELD_CALLBACK))
		s.cb = rd_u64(param, UCX_PARAM_CB_OFF);
	if (bpf_map_update_elem(&ucx_calls, &tid, &s, BPF_ANY))
		count(RC_THREAD_FAIL);
	ucx_round_open(&s);
	return 0;
}

/* ucp_put_nbx(ep, buffer, count, remote_addr, rkey, param) */
SEC("uprobe")
int BPF_KPROBE(ucx_put_enter, void *ep)
{
	return ucx_enter((__u64)ep, UARG6(ctx), UCX_OP_PUT);
}

/* ucp_get_nbx(ep, buffer, count, remote_addr, rkey, param) */
SEC("uprobe")
int BPF_KPROBE(ucx_get_enter, void *ep)
{
	return ucx_enter((__u64)ep, UARG6(ctx), UCX_OP_GET);
}

/* ucp_tag_send_nbx(ep, buffer, count, tag, param) */
SEC("uprobe")
int BPF_KPROBE(ucx_tag_send_enter, void *ep, void *buf, __u64 n, __u64 tag, void *param)
{
	return ucx_enter((__u64)ep, (__u64)param, UCX_OP_TAG_SEND);
}

/* ucp_am_send_nbx(ep, id, header, header_length, buffer, count, param) */
SEC("uprobe")
int BPF_KPROBE(ucx_am_send_enter, void *ep)
{
	return ucx_enter((__u64)ep, uarg7(ctx), UCX_OP_AM_SEND);
}

/* ucp_stream_send_nbx(ep, buffer, count, param) */
SEC("uprobe")
int BPF_KPROBE(ucx_stream_send_enter, void *ep, void *buf, __u64 n, void *param)
{
	return ucx_enter((__u64)ep, (__u64)param, UCX_OP_STREAM_SEND);
}

/* ucp_tag_recv_nbx(worker, buffer, count, tag, tag_mask, param): "ep" holds the worker */
SEC("uprobe")
int BPF_KPROBE(ucx_tag_recv_enter, void *worker)
{
	return ucx_enter((__u64)worker, UARG6(ctx), UCX_OP_TAG_RECV);
}

/* ucp_stream_recv_nbx(ep, buffer, count, length, param) */
SEC("uprobe")
int BPF_KPROBE(ucx_stream_recv_enter, void *ep, void *buf, __u64 n, void *len, void *param)
{
	return ucx_enter((__u64)ep, (__u64)param, UCX_OP_STREAM_RECV);
}

/* Return of any of them: UCS_OK (NULL) completed in the call, an error pointer failed,
 * anything else is a request that completes later. */
SEC("uretprobe")
int BPF_KRETPROBE(ucx_op_exit, long ret)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	struct ucx_req_key k = {};
	struct ucx_start *sp, s;
	__u32 tid = (__u32)id;
	int err;

	sp = bpf_map_lookup_elem(&ucx_calls, &tid);
	if (!sp)
		return 0;
	s = *sp;
	bpf_map_delete_elem(&ucx_calls, &tid);
	if (ucx_is_recv(s.op)) {
		/* a message already there completes the receive in the call */
		if (!ret || (ret < 0 && ret >= UCX_ERR_LAST)) {
			if (ret)
				count(RC_UCX_ERRORS);
			ucx_round_end(tid, id >> 32, ret ? (__u32)-ret : 0, now);
			return 0;
		}
	} else {
		count(RC_UCX_OPS);
		if (!ret) {
			count(RC_UCX_IMMEDIATE);
			ucx_put(id >> 32, &s, 0, now, STAGE_RDMA_UCX);
			return 0;
		}
		if (ret < 0 && ret >= UCX_ERR_LAST) {
			count(RC_UCX_ERRORS);
			ucx_put(id >> 32, &s, (__u32)-ret, now, STAGE_RDMA_UCX);
			return 0;
		}
	}
	k.req = (__u64)ret;
	k.tgid = id >> 32;
	err = bpf_map_update_elem(&ucx_inflight, &k, &s, BPF_NOEXIST);
	if (err == -17 /* EEXIST: a request freed without a completion we saw, reused */) {
		count(RC_UCX_REPLACED);
		err = bpf_map_update_elem(&ucx_inflight, &k, &s, BPF_ANY);
	}
	if (err)
		count(RC_UCX_INFLIGHT_FAIL);
	if (s.cb)
		ucx_cb_report(k.tgid, s.cb);
	return 0;
}

static __always_inline void ucx_done(__u64 req, long status)
{
	__u64 now = bpf_ktime_get_ns();
	struct ucx_req_key k = {};
	struct ucx_start *s;

	k.req = req;
	k.tgid = bpf_get_current_pid_tgid() >> 32;
	s = bpf_map_lookup_elem(&ucx_inflight, &k);
	if (!s)
		return; /* not ours (issued before tracing), or already completed */
	if (status)
		count(RC_UCX_ERRORS);
	if (ucx_is_recv(s->op)) {
		ucx_round_end(s->tid, k.tgid, status < 0 ? (__u32)-status : 0, now);
	} else {
		count(RC_UCX_COMPLETED);
		ucx_put(k.tgid, s, status < 0 ? (__u32)-status : 0, now, STAGE_RDMA_UCX);
	}
	bpf_map_delete_elem(&ucx_inflight, &k);
}

/* Entry of the application's completion callback: (request, status, ...): the send,
 * tag receive and stream receive callbacks all take these two first. */
SEC("uprobe")
int BPF_KPROBE(ucx_complete, void *req, long status)
{
	ucx_done((__u64)req, (__s8)status); /* ucs_status_t is a packed, 1-byte enum */
	return 0;
}

/* ucp_request_check_status(req), ucp_tag_recv_request_test(req, info),
 * ucp_stream_recv_request_test(req, length): the request first, its status returned */
SEC("uprobe")
int BPF_KPROBE(ucx_check_enter, void *req)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 r = (__u64)req;

	if (bpf_map_update_elem(&ucx_checks, &tid, &r, BPF_ANY))
		count(RC_THREAD_FAIL);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(ucx_check_exit, long ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *req = bpf_map_lookup_elem(&ucx_checks, &tid);
	__u64 r;

	if (!req)
		return 0;
	r = *req;
	bpf_map_delete_elem(&ucx_checks, &tid);
	if ((__s8)ret != UCX_INPROGRESS)
		ucx_done(r, (__s8)ret);
	return 0;
}

#endif
