/* SPDX-License-Identifier: GPL-2.0 */
/* Socket lifetime: the side of each connection (sockops), the end of a request at close,
 * and forgetting a socket's flow when it closes, or when the sweep finds it closed. */
#ifndef TT_SOCK_BPF_H
#define TT_SOCK_BPF_H

#include "flow.bpf.h"
#include "framing.bpf.h"
#include "requests.bpf.h"

/* The flow of a sockops callback's socket (created when its ports match). */
static __always_inline struct flow *sockops_flow(struct bpf_sock_ops *skops, bool create)
{
	struct bpf_sock *bsk = skops->sk;
	struct sock *sk;

	/* keep the null-checked register: a reload would be sock_or_null again */
	asm volatile("" : "+r"(bsk));
	if (!bsk)
		return NULL;
	sk = (struct sock *)bpf_skc_to_tcp_sock(bsk);
	return sk ? flow_get(sk, create) : NULL;
}

/* A connection is established: its side, and its cookie. */
static __always_inline struct flow *sockops_established(struct bpf_sock_ops *skops)
{
	struct flow *f = sockops_flow(skops, true);

	if (!f)
		return NULL;
	if (!f->cookie)
		f->cookie = bpf_get_socket_cookie(skops);
	f->role = skops->op == BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB ? ROLE_CLIENT : ROLE_SERVER;
	return f;
}

SEC("sockops")
int tt_sockops(struct bpf_sock_ops *skops)
{
	if (skops->op == BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB ||
	    skops->op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB)
		sockops_established(skops);
	return 1;
}

/* From 6.15 (probed: PK_SOCKOPS_TSTAMP) the kernel reports, per socket that asks, when
 * each send's last byte reaches the driver (SND_SW): the end of a server's request when
 * the deep tier, whose driver hook sees it otherwise, is off. Only the server side of
 * connections traced at their handshake asks (targ_tx_tstamp: record's duty cycle), so
 * other sockets pay nothing; older connections end at their last send's return
 * (requests.bpf.h). */
#define TT_SOL_SOCKET 1
#ifndef TT_NO_KFUNCS
extern void *bpf_cast_to_kern_ctx(void *obj) __ksym __weak;
extern int bpf_sock_ops_enable_tx_tstamp(struct bpf_sock_ops_kern *skops,
					 __u64 flags) __ksym __weak;
#endif

SEC("sockops")
int tt_sockops_tstamp(struct bpf_sock_ops *skops)
{
	struct flow *f;
	int on = SK_BPF_CB_TX_TIMESTAMPING;

	switch (skops->op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		f = sockops_established(skops);
		/* a server's request ends with its response's last byte; a client's, with its
		 * read: only the accepting side asks */
		if (targ_tx_tstamp && f && skops->op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB)
			bpf_setsockopt(skops, TT_SOL_SOCKET, SK_BPF_CB_FLAGS, &on, sizeof(on));
		break;
#ifndef TT_NO_KFUNCS
	case BPF_SOCK_OPS_TSTAMP_SENDMSG_CB:
		/* only while the deep tier is off: its driver hook times the send otherwise */
		if (!deep_on())
			bpf_sock_ops_enable_tx_tstamp(bpf_cast_to_kern_ctx(skops), 0);
		break;
	case BPF_SOCK_OPS_TSTAMP_SND_SW_CB: {
		struct bpf_sock_ops_kern *kctx = bpf_cast_to_kern_ctx(skops);
		struct sk_buff *skb = BPF_CORE_READ(kctx, skb);
		__u32 end = BPF_CORE_READ((struct tcp_skb_cb *)&skb->cb[0], end_seq);
		__u64 now = bpf_ktime_get_ns();

		f = sockops_flow(skops, false);
		if (!f || f->verdict != FLOW_TRACED || deep_on())
			break;
		req_on_tx_out(f, now, 0);
		if (f->h2_npending && f->role != ROLE_CLIENT)
			h2_pending_done(f, end, now);
		break;
	}
#endif
	}
	return 1;
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
		h2_pending_flush(f);
	}
	if (newstate == TCP_CLOSE_STATE)
		flow_forget(sk);
	return 0;
}

/* One flow of the sweep: its socket closed (or was freed and reused) without a close
 * event reaching tailtrace. Probe reads: the socket may be gone. */
static __always_inline void sweep_flow(__u64 *addr, struct flow *f)
{
	struct sock *sk = (struct sock *)*addr;
	__u64 cookie = 0;
	__u8 state = 0;

	bpf_probe_read_kernel(&state, sizeof(state), (void *)&sk->__sk_common.skc_state);
	bpf_probe_read_kernel(&cookie, sizeof(cookie), &sk->__sk_common.skc_cookie);
	if (state == TCP_CLOSE_STATE || (f->cookie && cookie != f->cookie)) {
		bpf_map_delete_elem(&flows, addr);
		cnt_add(CNT_CLOSES_UNSEEN, 1);
	} else if (f->verdict == FLOW_UNSAMPLED) {
		bpf_map_delete_elem(&flows, addr); /* it may come back with a later draw */
	}
}

static long flow_sweep_one(struct bpf_map *map, __u64 *addr, struct flow *f, void *ctx)
{
	sweep_flow(addr, f);
	return 0;
}

/* Not attached: userspace runs it every second (BPF_PROG_TEST_RUN). Without it a flow
 * whose close event the kernel skipped would hold its slot until tailtrace exits. */
SEC("raw_tp")
int tt_flow_sweep(void *ctx)
{
	bpf_for_each_map_elem(&flows, flow_sweep_one, NULL, 0);
	return 0;
}

/* The same before 5.13, which has no bpf_for_each_map_elem(): userspace walks the keys
 * and hands them in, TT_SWEEP_KEYS a run, as the arguments (0 ends the list). */
SEC("raw_tp")
int tt_flow_sweep_keys(__u64 *keys)
{
#pragma unroll
	for (int i = 0; i < TT_SWEEP_KEYS; i++) {
		__u64 addr = keys[i];
		struct flow *f;

		if (!addr)
			break;
		f = bpf_map_lookup_elem(&flows, &addr);
		if (f)
			sweep_flow(&addr, f);
	}
	return 0;
}

#endif
