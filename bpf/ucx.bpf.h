/* SPDX-License-Identifier: GPL-2.0 */
/* UCX transfers (rdma.ucx), included by rdma.bpf.c: a UCP operation's start (entry of
 * ucp_put_nbx, ucp_get_nbx, ucp_tag_send_nbx, ucp_am_send_nbx) to its completion - the
 * call returning UCS_OK (immediate), the request's completion callback being entered, or
 * ucp_request_check_status() returning something other than UCS_INPROGRESS - per process,
 * endpoint and operation. The callback's address is read from the request parameters
 * and sent to userspace, which attaches ucx_complete there. */
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
	__u64 cb; /* completion callback, 0 if none */
	__u32 op; /* enum ucx_op */
	__u32 reserved;
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

static __always_inline void ucx_put(__u32 tgid, const struct ucx_start *s, __u32 status, __u64 now)
{
	struct rdma_hist_key hk = {};

	hk.tgid = tgid;
	hk.qpn = (__u32)s->ep;
	hk.peer_qpn = (__u32)(s->ep >> 32);
	hk.stage = STAGE_RDMA_UCX;
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

static __always_inline int ucx_enter(__u64 ep, __u64 param, __u32 op)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ucx_start s = {};

	s.start_ns = bpf_ktime_get_ns();
	s.ep = ep;
	s.op = op;
	if (param && (rd_u32(param, UCX_PARAM_MASK_OFF) & UCX_ATTR_FIELD_CALLBACK))
		s.cb = rd_u64(param, UCX_PARAM_CB_OFF);
	if (bpf_map_update_elem(&ucx_calls, &tid, &s, BPF_ANY))
		count(RC_THREAD_FAIL);
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
	count(RC_UCX_OPS);
	if (!ret) {
		count(RC_UCX_IMMEDIATE);
		ucx_put(id >> 32, &s, 0, now);
		return 0;
	}
	if (ret < 0 && ret >= UCX_ERR_LAST) {
		count(RC_UCX_ERRORS);
		ucx_put(id >> 32, &s, (__u32)-ret, now);
		return 0;
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
		return; /* not ours (a receive), or already completed */
	count(RC_UCX_COMPLETED);
	if (status)
		count(RC_UCX_ERRORS);
	ucx_put(k.tgid, s, status < 0 ? (__u32)-status : 0, now);
	bpf_map_delete_elem(&ucx_inflight, &k);
}

/* Entry of the application's completion callback: (request, status, user_data). */
SEC("uprobe")
int BPF_KPROBE(ucx_complete, void *req, long status)
{
	ucx_done((__u64)req, (__s8)status); /* ucs_status_t is a packed, 1-byte enum */
	return 0;
}

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
