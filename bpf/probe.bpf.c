// SPDX-License-Identifier: GPL-2.0
/* Minimal programs of each hook kind: `tailtrace probe` loads and attaches them one at a
 * time to learn what this kernel really allows, and checks that each one fires. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "probe.bpf.h"

#define SOL_SOCKET 1

/* weak: a kernel without them (before 6.2 and 6.15) still loads every other probe; the
 * sockops probe then fails to load, which is what it reports */
extern void *bpf_cast_to_kern_ctx(void *obj) __ksym __weak;
extern int bpf_sock_ops_enable_tx_tstamp(struct bpf_sock_ops_kern *skops,
					 __u64 flags) __ksym __weak;

const volatile __u16 targ_port = 0; /* the probe's own loopback connection */

__u64 hits[PK__MAX];
__u64 tstamp_hits[PT__MAX];

SEC("tp_btf/sched_switch")
int BPF_PROG(probe_tp_btf)
{
	__sync_fetch_and_add(&hits[PK_TP_BTF], 1);
	return 0;
}

SEC("raw_tp/sched_switch")
int probe_raw_tp(void *ctx)
{
	__sync_fetch_and_add(&hits[PK_RAW_TP], 1);
	return 0;
}

SEC("tracepoint/sched/sched_switch")
int probe_tracepoint(void *ctx)
{
	__sync_fetch_and_add(&hits[PK_TRACEPOINT], 1);
	return 0;
}

SEC("kprobe/tcp_sendmsg")
int probe_kprobe(void *ctx)
{
	__sync_fetch_and_add(&hits[PK_KPROBE], 1);
	return 0;
}

SEC("fentry/tcp_sendmsg")
int BPF_PROG(probe_fentry)
{
	__sync_fetch_and_add(&hits[PK_FENTRY], 1);
	return 0;
}

SEC("uprobe")
int probe_uprobe(void *ctx)
{
	__sync_fetch_and_add(&hits[PK_UPROBE], 1);
	return 0;
}

SEC("sockops")
int probe_sockops(struct bpf_sock_ops *skops)
{
	int on = 1;

	if (skops->local_port != targ_port && bpf_ntohl(skops->remote_port) != targ_port)
		return 1;
	switch (skops->op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		bpf_setsockopt(skops, SOL_SOCKET, SK_BPF_CB_FLAGS, &on, sizeof(on));
		break;
	case BPF_SOCK_OPS_TSTAMP_SENDMSG_CB:
		if (!bpf_sock_ops_enable_tx_tstamp(bpf_cast_to_kern_ctx(skops), 0))
			__sync_fetch_and_add(&tstamp_hits[PT_SENDMSG], 1);
		break;
	case BPF_SOCK_OPS_TSTAMP_SCHED_CB:
		__sync_fetch_and_add(&tstamp_hits[PT_SCHED], 1);
		break;
	case BPF_SOCK_OPS_TSTAMP_SND_SW_CB:
		__sync_fetch_and_add(&tstamp_hits[PT_SND_SW], 1);
		break;
	case BPF_SOCK_OPS_TSTAMP_SND_HW_CB:
		__sync_fetch_and_add(&tstamp_hits[PT_SND_HW], 1);
		break;
	case BPF_SOCK_OPS_TSTAMP_ACK_CB:
		__sync_fetch_and_add(&tstamp_hits[PT_ACK], 1);
		break;
	}
	return 1;
}

SEC("tc")
int probe_tc(struct __sk_buff *skb)
{
	__sync_fetch_and_add(&hits[PK_TC], 1);
	return 0; /* TC_ACT_OK */
}

SEC("xdp")
int probe_xdp(struct xdp_md *ctx)
{
	__sync_fetch_and_add(&hits[PK_XDP], 1);
	return 2; /* XDP_PASS */
}

/* ---- helper features: loaded, never attached ---- */

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(feat_sk_cookie, struct sock *sk)
{
	return bpf_get_socket_cookie(sk) == 0;
}

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} feat_map SEC(".maps");

static long feat_visit(struct bpf_map *map, __u32 *key, __u64 *val, void *ctx)
{
	return 0;
}

SEC("raw_tp")
int feat_for_each(void *ctx)
{
	return bpf_for_each_map_elem(&feat_map, feat_visit, NULL, 0);
}

char LICENSE[] SEC("license") = "GPL";
