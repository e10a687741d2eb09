// SPDX-License-Identifier: GPL-2.0
/* Empty programs on every hook tailtrace attaches to: the baseline of the per-event cost
 * benchmark (tools/bench/run). Each does nothing, so its kernel-accounted run time is the
 * fixed price of running any BPF program on that hook. Names are tailtrace's with the
 * "tt_" prefix replaced by "e_", so the two line up by hook. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#define EMPTY_TP(hook, name)                                                                \
	SEC("tp_btf/" #hook)                                                                \
	int name(void *ctx)                                                                 \
	{                                                                                   \
		return 0;                                                                   \
	}

EMPTY_TP(tcp_sendmsg_locked, e_tcp_sendmsg)
EMPTY_TP(sock_send_length, e_sock_send_length)
EMPTY_TP(net_dev_queue, e_net_dev_queue)
EMPTY_TP(qdisc_enqueue, e_qdisc_enqueue)
EMPTY_TP(qdisc_dequeue, e_qdisc_dequeue)
EMPTY_TP(net_dev_start_xmit, e_net_dev_start_xmit)
EMPTY_TP(net_dev_xmit, e_net_dev_xmit)
EMPTY_TP(netif_receive_skb, e_netif_receive_skb)
EMPTY_TP(tcp_probe, e_tcp_probe)
EMPTY_TP(sk_data_ready, e_sk_data_ready)
EMPTY_TP(sock_recv_length, e_sock_recv_length)
EMPTY_TP(tcp_retransmit_skb, e_tcp_retransmit_skb)
EMPTY_TP(kfree_skb, e_kfree_skb)
EMPTY_TP(inet_sock_set_state, e_inet_sock_set_state)
EMPTY_TP(sched_switch, e_sched_switch)
EMPTY_TP(sched_wakeup, e_sched_wakeup)
EMPTY_TP(sched_process_exit, e_sched_exit)

/* sockops runs once per callback of every socket in the cgroup, TX timestamping callbacks
 * included once tailtrace has enabled them on a socket */
SEC("sockops")
int e_sockops(struct bpf_sock_ops *skops)
{
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
