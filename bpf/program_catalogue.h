/* SPDX-License-Identifier: GPL-2.0 */
/* The program catalogue: one row per program of tailtrace.bpf.c, the only place that says
 * which kernel event a program feeds and through which hook. The stage catalogue
 * (stage_catalogue.h) names the events each stage needs; userspace picks, per event, the
 * cheapest feed this kernel offers and loads only its programs (user/collect/feeds.c).
 *
 * X(program, event, alt, kind, target, nargs, flags)
 *   event   what the program observes, named after the tracepoint that shows it where one
 *           exists ("system:name"): the names the stage catalogue uses
 *   alt     the feeds of one event in order of preference, cheapest first; rows of one
 *           event with the same alt are loaded together (a kretprobe and the kprobe that
 *           keeps its arguments)
 *   kind    FEED_*, below
 *   target  the tracepoint ("system:name") or the kernel function the program attaches to
 *   nargs   tracepoints: arguments the program reads (the kernel may have more); functions:
 *           the parameters the kernel's prototype must have (0: any)
 *   flags   PF_*, below
 *
 * To feed an event on older kernels: a program in bpf/ whose body calls the same
 * static __always_inline handle_*() as the others of its event, and a row here.
 * tests/unit/test_program_catalogue.c checks rows against the object's programs and their
 * sections. A new event: docs/contributing.md.
 */
#ifndef TT_PROGRAM_CATALOGUE_H
#define TT_PROGRAM_CATALOGUE_H

enum feed_kind {
	FEED_TP_BTF,
	FEED_FENTRY,
	FEED_FEXIT,
	FEED_KPROBE,
	FEED_KRETPROBE,
	FEED_SOCKOPS,        /* cgroup sockops */
	FEED_SOCKOPS_TSTAMP, /* ... with the TX timestamping callbacks (6.15+, probed) */
	FEED_CGROUP_SKB,     /* cgroup_skb ingress/egress on the cgroup v2 root */
	FEED_UPROBE,
	FEED_RUN, /* not attached: run by userspace (BPF_PROG_TEST_RUN) */
	FEED__MAX,
};

/* program flags */
#define PF_REQUESTS 0x01 /* loaded only for the request commands (thread state) */
#define PF_NIC      0x02 /* driver/softirq programs: only when selected (SF_NIC stages) */
#define PF_CUDA     0x04 /* --cuda: attached to libcuda by the collector */
#define PF_FOR_EACH 0x08 /* needs bpf_for_each_map_elem() (5.13+) */
/* feeds qdisc:qdisc_enqueue from net:net_dev_queue (targ_qdisc_at_dev_queue) */
#define PF_QDISC_AT_DEVQ 0x10
#define PF_TLS           0x20 /* --tls-uprobes: attached to libssl by the collector */
/* the deep tier: per-packet and scheduler programs, attached while a deep look is wanted
 * (always for hist and explain; a duty cycle and a tail trigger for record and top,
 * user/collect/collector_deep.c). The socket-level rest times every request. */
#define PF_DEEP 0x40

/* clang-format off */
#define TT_PROGRAM_CATALOGUE(X)                                                                    \
X(tt_tcp_sendmsg, "tcp:tcp_sendmsg_locked", 0, FEED_TP_BTF, "tcp:tcp_sendmsg_locked", 4, 0)       \
X(tt_tcp_sendmsg_fentry, "tcp:tcp_sendmsg_locked", 1, FEED_FENTRY, "tcp_sendmsg_locked", 3, 0)    \
X(tt_tcp_sendmsg_kprobe, "tcp:tcp_sendmsg_locked", 2, FEED_KPROBE, "tcp_sendmsg_locked", 0, 0)    \
X(tt_sock_send_length, "sock:sock_send_length", 0, FEED_TP_BTF, "sock:sock_send_length", 3, 0)    \
X(tt_tcp_sendmsg_fexit, "sock:sock_send_length", 1, FEED_FEXIT, "tcp_sendmsg_locked", 3, 0)       \
X(tt_tcp_sendmsg_stash, "sock:sock_send_length", 2, FEED_KPROBE, "tcp_sendmsg_locked", 0, 0)      \
X(tt_tcp_sendmsg_kretprobe, "sock:sock_send_length", 2, FEED_KRETPROBE, "tcp_sendmsg_locked", 0, 0) \
X(tt_net_dev_queue, "net:net_dev_queue", 0, FEED_TP_BTF, "net:net_dev_queue", 1, PF_DEEP)               \
X(tt_qdisc_enqueue, "qdisc:qdisc_enqueue", 0, FEED_TP_BTF, "qdisc:qdisc_enqueue", 3, PF_DEEP)           \
X(tt_net_dev_queue, "qdisc:qdisc_enqueue", 1, FEED_TP_BTF, "net:net_dev_queue", 1, PF_QDISC_AT_DEVQ | PF_DEEP) \
X(tt_qdisc_dequeue, "qdisc:qdisc_dequeue", 0, FEED_TP_BTF, "qdisc:qdisc_dequeue", 4, PF_DEEP)           \
X(tt_net_dev_start_xmit, "net:net_dev_start_xmit", 0, FEED_TP_BTF, "net:net_dev_start_xmit", 2, PF_DEEP) \
X(tt_net_dev_xmit, "net:net_dev_xmit", 0, FEED_TP_BTF, "net:net_dev_xmit", 4, PF_DEEP)                  \
X(tt_netif_receive_skb, "net:netif_receive_skb", 0, FEED_TP_BTF, "net:netif_receive_skb", 1, PF_DEEP)   \
X(tt_tcp_probe, "tcp:tcp_probe", 0, FEED_TP_BTF, "tcp:tcp_probe", 2, PF_DEEP)                           \
X(tt_sk_data_ready, "sock:sk_data_ready", 0, FEED_TP_BTF, "sock:sk_data_ready", 1, 0)             \
X(tt_tcp_data_ready_fentry, "sock:sk_data_ready", 1, FEED_FENTRY, "tcp_data_ready", 1, 0)         \
X(tt_tcp_data_ready_kprobe, "sock:sk_data_ready", 2, FEED_KPROBE, "tcp_data_ready", 0, 0)         \
X(tt_sock_recv_length, "sock:sock_recv_length", 0, FEED_TP_BTF, "sock:sock_recv_length", 3, 0)    \
X(tt_tcp_recvmsg_fexit, "sock:sock_recv_length", 1, FEED_FEXIT, "tcp_recvmsg", 5, 0)              \
X(tt_tcp_recvmsg_fexit_nb, "sock:sock_recv_length", 2, FEED_FEXIT, "tcp_recvmsg", 6, 0)           \
X(tt_tcp_recvmsg_stash, "sock:sock_recv_length", 3, FEED_KPROBE, "tcp_recvmsg", 0, 0)             \
X(tt_tcp_recvmsg_kretprobe, "sock:sock_recv_length", 3, FEED_KRETPROBE, "tcp_recvmsg", 0, 0)      \
X(tt_tcp_retransmit_skb, "tcp:tcp_retransmit_skb", 0, FEED_TP_BTF, "tcp:tcp_retransmit_skb", 3, 0) \
X(tt_tcp_retransmit_skb_sent, "tcp:tcp_retransmit_skb", 1, FEED_TP_BTF, "tcp:tcp_retransmit_skb", 2, 0) \
X(tt_tcp_retransmit_synack, "tcp:tcp_retransmit_synack", 0, FEED_TP_BTF, "tcp:tcp_retransmit_synack", 2, 0) \
X(tt_kfree_skb, "skb:kfree_skb", 0, FEED_TP_BTF, "skb:kfree_skb", 4, 0)                           \
X(tt_kfree_skb_reason, "skb:kfree_skb", 1, FEED_TP_BTF, "skb:kfree_skb", 3, 0)                    \
X(tt_kfree_skb_noreason, "skb:kfree_skb", 2, FEED_TP_BTF, "skb:kfree_skb", 2, 0)                  \
X(tt_inet_sock_set_state, "sock:inet_sock_set_state", 0, FEED_TP_BTF, "sock:inet_sock_set_state", 3, 0) \
X(tt_tcp_destroy_sock, "tcp:tcp_destroy_sock", 0, FEED_TP_BTF, "tcp:tcp_destroy_sock", 1, 0)      \
X(tt_sockops_tstamp, "cgroup:sockops", 0, FEED_SOCKOPS_TSTAMP, "cgroup v2 root", 0, 0)            \
X(tt_sockops, "cgroup:sockops", 1, FEED_SOCKOPS, "cgroup v2 root", 0, 0)                          \
X(tt_skb_egress, "cgroup_skb:egress", 0, FEED_CGROUP_SKB, "cgroup v2 root", 0, PF_REQUESTS)    \
X(tt_skb_ingress, "cgroup_skb:ingress", 0, FEED_CGROUP_SKB, "cgroup v2 root", 0, PF_REQUESTS)  \
X(tt_flow_sweep, "flow sweep", 0, FEED_RUN, "bpf_for_each_map_elem", 0, PF_FOR_EACH)              \
X(tt_flow_sweep_keys, "flow sweep", 1, FEED_RUN, "keys from userspace", 0, 0)                     \
X(tt_sched_switch, "sched:sched_switch", 0, FEED_TP_BTF, "sched:sched_switch", 4, PF_REQUESTS | PF_DEEP)    \
X(tt_sched_switch_nostate, "sched:sched_switch", 1, FEED_TP_BTF, "sched:sched_switch", 3, PF_REQUESTS | PF_DEEP) \
X(tt_sched_wakeup, "sched:sched_wakeup", 0, FEED_TP_BTF, "sched:sched_wakeup", 1, PF_REQUESTS | PF_DEEP)    \
X(tt_sched_exit, "sched:sched_process_exit", 0, FEED_TP_BTF, "sched:sched_process_exit", 1, PF_REQUESTS) \
X(tt_cuda_sync_enter, "libcuda sync", 0, FEED_UPROBE, "libcuda cu*Synchronize", 0, PF_CUDA)      \
X(tt_cuda_sync_exit, "libcuda sync", 0, FEED_UPROBE, "libcuda cu*Synchronize", 0, PF_CUDA)       \
X(tt_tls_write_enter, "libssl SSL_write", 0, FEED_UPROBE, "libssl SSL_write", 0, PF_TLS)          \
X(tt_tls_write_ex_enter, "libssl SSL_write", 0, FEED_UPROBE, "libssl SSL_write_ex", 0, PF_TLS)    \
X(tt_tls_read_enter, "libssl SSL_read", 0, FEED_UPROBE, "libssl SSL_read", 0, PF_TLS)             \
X(tt_tls_read_ex_enter, "libssl SSL_read", 0, FEED_UPROBE, "libssl SSL_read_ex", 0, PF_TLS)       \
X(tt_tls_exit, "libssl SSL_read", 0, FEED_UPROBE, "libssl SSL_write/SSL_read return", 0, PF_TLS)  \
X(tt_netif_rx, "net:netif_rx", 0, FEED_TP_BTF, "net:netif_rx", 1, PF_NIC | PF_DEEP)                         \
X(tt_napi_gro_receive, "net:napi_gro_receive_entry", 0, FEED_TP_BTF, "net:napi_gro_receive_entry", 1, PF_NIC | PF_DEEP) \
X(tt_napi_gro_frags, "net:napi_gro_frags_entry", 0, FEED_TP_BTF, "net:napi_gro_frags_entry", 1, PF_NIC | PF_DEEP) \
X(tt_softirq_raise, "irq:softirq_raise", 0, FEED_TP_BTF, "irq:softirq_raise", 1, PF_NIC | PF_DEEP)          \
X(tt_softirq_entry, "irq:softirq_entry", 0, FEED_TP_BTF, "irq:softirq_entry", 1, PF_NIC | PF_DEEP)          \
X(tt_napi_poll, "napi:napi_poll", 0, FEED_TP_BTF, "napi:napi_poll", 3, PF_NIC | PF_DEEP)                    \
X(tt_dql_stall, "napi:dql_stall_detected", 0, FEED_TP_BTF, "napi:dql_stall_detected", 2, PF_NIC | PF_DEEP)  \
X(tt_consume_skb, "skb:consume_skb", 0, FEED_TP_BTF, "skb:consume_skb", 1, PF_NIC | PF_DEEP)
/* clang-format on */

#endif
