// SPDX-License-Identifier: GPL-2.0
/* Baseline programs of the per-event cost benchmark (tools/bench/run), one on every hook
 * tailtrace attaches to. Built as is, each does nothing ("e_" programs), so its
 * kernel-accounted run time is the fixed price of running any BPF program on that hook.
 * Built with -DTT_CLOCK ("c_" programs, clock.bpf.o), the hooks where tailtrace reads the
 * clock for every event of traced traffic (the send and receive calls, the per-packet
 * hooks, the TCP receive path, the switches and wakeups of the serving threads) read it
 * once a run and keep it in a per-CPU slot: the least a timing tracer does there. One list
 * for both, so they always cover the same hooks. Names are tailtrace's with "tt_"
 * replaced, so the programs line up by hook. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#ifdef TT_CLOCK
#define PROG(name) c_##name

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} last_ns SEC(".maps");

static __always_inline int keep_time(void)
{
	__u32 zero = 0;
	__u64 *slot = bpf_map_lookup_elem(&last_ns, &zero);

	if (slot)
		*slot = bpf_ktime_get_ns();
	return 0;
}
#else
#define PROG(name)  e_##name
#define keep_time() 0
#endif

/* timed: the clock build reads the clock on this hook */
#define BASELINE_TP(hook, name, timed)                                                             \
	SEC("tp_btf/" #hook)                                                                       \
	int PROG(name)(void *ctx)                                                                  \
	{                                                                                          \
		return (timed) ? keep_time() : 0;                                                  \
	}

BASELINE_TP(tcp_sendmsg_locked, tcp_sendmsg, 1)
BASELINE_TP(sock_send_length, sock_send_length, 0)
BASELINE_TP(net_dev_queue, net_dev_queue, 1)
BASELINE_TP(qdisc_enqueue, qdisc_enqueue, 1)
BASELINE_TP(qdisc_dequeue, qdisc_dequeue, 1)
BASELINE_TP(net_dev_start_xmit, net_dev_start_xmit, 1)
BASELINE_TP(net_dev_xmit, net_dev_xmit, 1)
BASELINE_TP(netif_receive_skb, netif_receive_skb, 1)
BASELINE_TP(tcp_probe, tcp_probe, 1)
BASELINE_TP(sk_data_ready, sk_data_ready, 1)
BASELINE_TP(sock_recv_length, sock_recv_length, 1)
BASELINE_TP(tcp_retransmit_skb, tcp_retransmit_skb, 0)
BASELINE_TP(kfree_skb, kfree_skb, 0)
BASELINE_TP(inet_sock_set_state, inet_sock_set_state, 0)
BASELINE_TP(sched_switch, sched_switch, 1)
BASELINE_TP(sched_wakeup, sched_wakeup, 1)
BASELINE_TP(sched_process_exit, sched_exit, 0)
/* the driver/softirq hooks (bpf/nic.bpf.h), named as tailtrace's programs are; not
 * napi:dql_stall_detected, which kernels before 6.10 lack (the object would not load) */
BASELINE_TP(netif_rx, netif_rx, 1)
BASELINE_TP(napi_gro_receive_entry, napi_gro_receive, 1)
BASELINE_TP(napi_gro_frags_entry, napi_gro_frags, 1)
BASELINE_TP(softirq_raise, softirq_raise, 1)
BASELINE_TP(softirq_entry, softirq_entry, 1)
BASELINE_TP(napi_poll, napi_poll, 0)
BASELINE_TP(consume_skb, consume_skb, 1)

/* the framing's packet hooks on the cgroup v2 root (tailtrace's tt_skb_egress/ingress) */
SEC("cgroup_skb/egress")
int PROG(skb_egress)(struct __sk_buff *skb)
{
	return 1;
}

SEC("cgroup_skb/ingress")
int PROG(skb_ingress)(struct __sk_buff *skb)
{
	return 1;
}

/* sockops runs once per callback of every socket in the cgroup, TX timestamping callbacks
 * included once tailtrace has enabled them on a socket */
SEC("sockops")
int PROG(sockops)(struct bpf_sock_ops *skops)
{
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
