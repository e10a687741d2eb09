// SPDX-License-Identifier: GPL-2.0
/* The least a timing tracer does on tailtrace's hooks: one clock read per run, kept in a
 * per-CPU slot so the compiler cannot drop it, on the hooks where tailtrace reads the
 * clock for every event of traced traffic (the send and receive calls, the per-packet
 * hooks, the TCP receive path, the switches and wakeups of the serving threads); the
 * rarer hooks stay empty. Beside the empty programs (empty.bpf.c) it shows what the
 * timestamps alone cost the traffic on this machine (tools/bench/run, condition clock). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

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

#define CLOCK_TP(hook, name)                                                                \
	SEC("tp_btf/" #hook)                                                                \
	int name(void *ctx)                                                                 \
	{                                                                                   \
		return keep_time();                                                         \
	}

#define EMPTY_TP(hook, name)                                                                \
	SEC("tp_btf/" #hook)                                                                \
	int name(void *ctx)                                                                 \
	{                                                                                   \
		return 0;                                                                   \
	}

CLOCK_TP(tcp_sendmsg_locked, c_tcp_sendmsg)
EMPTY_TP(sock_send_length, c_sock_send_length)
CLOCK_TP(net_dev_queue, c_net_dev_queue)
CLOCK_TP(qdisc_enqueue, c_qdisc_enqueue)
CLOCK_TP(qdisc_dequeue, c_qdisc_dequeue)
CLOCK_TP(net_dev_start_xmit, c_net_dev_start_xmit)
CLOCK_TP(net_dev_xmit, c_net_dev_xmit)
CLOCK_TP(netif_receive_skb, c_netif_receive_skb)
CLOCK_TP(tcp_probe, c_tcp_probe)
CLOCK_TP(sk_data_ready, c_sk_data_ready)
CLOCK_TP(sock_recv_length, c_sock_recv_length)
EMPTY_TP(tcp_retransmit_skb, c_tcp_retransmit_skb)
EMPTY_TP(kfree_skb, c_kfree_skb)
EMPTY_TP(inet_sock_set_state, c_inet_sock_set_state)
CLOCK_TP(sched_switch, c_sched_switch)
CLOCK_TP(sched_wakeup, c_sched_wakeup)
EMPTY_TP(sched_process_exit, c_sched_exit)

SEC("sockops")
int c_sockops(struct bpf_sock_ops *skops)
{
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
