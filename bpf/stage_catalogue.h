/* SPDX-License-Identifier: GPL-2.0 */
/* The stage catalogue: one row per stage, the only place a stage is defined. The kernel
 * side takes the enum from it (bpf/tailtrace.h); userspace takes names, classes, hooks, the
 * events each stage needs and the flags the commands pick stage sets by (user/core/stages.c;
 * user/collect/feeds.c turns the events into programs). tests/unit/test_stages.c checks
 * docs/stages.md and the test files against it, tests/unit/test_program_catalogue.c the
 * programs of the BPF object, tests/ns/test_dist.sh the bash completion. Rows before RDMA_WR
 * can accumulate inside a request (each costs a request event 8 bytes); rows after the RDMA
 * ones cannot. How to add a stage, step by step: docs/contributing.md.
 *
 * X(ID, name, class, flags, probe kind, tracepoints, hook, description, test); the enum
 * is STAGE_<ID>
 *   class       CLASS_* of user/core/stages.h: what its time counts towards
 *   flags       SF_*, below
 *   probe kind  PK_* (bpf/probe.bpf.h) a stage needs beyond tracepoints, or -1
 *   tracepoints every kernel event it needs, named after its tracepoint ("system:name");
 *               program_catalogue.h says what feeds each on kernels without it
 *   test        the test that compares the stage with a truth tailtrace did not produce,
 *               NULL where none does yet
 */
#ifndef TT_STAGE_CATALOGUE_H
#define TT_STAGE_CATALOGUE_H

/* stage flags */
#define SF_DEFAULT   0x01 /* shown by `hist` and `report` without --stage */
#define SF_REQUESTS  0x02 /* fed by the request programs (hist turns them on) */
#define SF_SCHED     0x04 /* needs the per-thread scheduler histograms */
#define SF_RDMA      0x08 /* fed by the RDMA object (bpf/rdma.bpf.c), not the collector */
#define SF_PLACE_DEV 0x10 /* samples carry a place: device (and qdisc) */
#define SF_NIC                                                                                     \
	0x20 /* fed by the driver/softirq programs (bpf/nic.bpf.h): attached only                  \
	      * when --dev, a port or process filter of a request command or --stage selects       \
	      * them */

/* clang-format off */
#define TT_TPS(...) { __VA_ARGS__ }

#define TT_STAGE_CATALOGUE(X)                                                              \
X(TX_SENDQ, "tx.sendq", CONGESTION, SF_DEFAULT, -1,                           \
  TT_TPS("tcp:tcp_sendmsg_locked", "sock:sock_send_length", "net:net_dev_queue"),        \
  "tp_btf tcp:tcp_sendmsg_locked -> net:net_dev_queue of the send's last byte",          \
  "application send -> data leaves TCP for IP/qdisc", "tests/ns/test_tcp_stages.sh")      \
X(TX_QDISC, "tx.qdisc", CONGESTION, SF_DEFAULT | SF_PLACE_DEV, -1,            \
  TT_TPS("qdisc:qdisc_enqueue", "qdisc:qdisc_dequeue"),                                  \
  "tp_btf qdisc:qdisc_enqueue -> qdisc:qdisc_dequeue",                                   \
  "qdisc enqueue -> dequeue", "tests/ns/test_tcp_stages.sh")                              \
X(TX_NIC, "tx.nic", TRANSPORT, SF_DEFAULT | SF_PLACE_DEV, -1,                           \
  TT_TPS("net:net_dev_start_xmit", "net:net_dev_xmit"),                                  \
  "tp_btf net:net_dev_start_xmit -> net:net_dev_xmit",                                   \
  "handed to the driver -> software TX timestamp", NULL)                                 \
X(TX_ACK, "tx.ack", SPLIT, SF_DEFAULT, -1,                                              \
  TT_TPS("tcp:tcp_sendmsg_locked", "net:net_dev_queue", "net:net_dev_start_xmit",        \
	 "tcp:tcp_probe"),                                                                \
  "tp_btf net:net_dev_start_xmit of the send's last byte -> tcp:tcp_probe of its ACK",   \
  "data sent -> cumulatively acknowledged", "tests/ns/test_tcp_stages.sh")                \
X(RX_STACK, "rx.stack", TRANSPORT, SF_DEFAULT, -1,                                      \
  TT_TPS("net:netif_receive_skb", "tcp:tcp_probe"),                                      \
  "tp_btf net:netif_receive_skb -> tcp:tcp_probe",                                       \
  "driver receive -> queued on the socket", "tests/ns/test_tcp_stages.sh")                \
X(RX_SOCKQ, "rx.sockq", COMPUTE, SF_DEFAULT, -1,                               \
  TT_TPS("sock:sk_data_ready", "sock:sock_recv_length"),                                 \
  "tp_btf sock:sk_data_ready -> sock:sock_recv_length",                                  \
  "queued on the socket -> read by the application", "tests/ns/test_tcp_stages.sh")       \
X(TCP_RTT, "tcp.rtt", SPLIT, SF_DEFAULT, -1, TT_TPS("tcp:tcp_probe"),           \
  "tp_btf tcp:tcp_probe (srtt, min RTT)", "smoothed RTT samples",                        \
  "tests/ns/test_tcp_stages.sh")                                                          \
X(TCP_RETRANS, "tcp.retrans", TRANSPORT, SF_DEFAULT, -1,                                \
  TT_TPS("net:net_dev_queue", "tcp:tcp_retransmit_skb"),                                 \
  "tp_btf net:net_dev_queue (first send) -> tcp:tcp_retransmit_skb",                     \
  "original transmission -> retransmission", "tests/ns/test_tcp_stages.sh")               \
X(SCHED_RUNQ, "sched.runq", COMPUTE, SF_REQUESTS | SF_SCHED, -1,                        \
  TT_TPS("sched:sched_switch", "sched:sched_wakeup"),                                    \
  "tp_btf sched:sched_wakeup -> sched:sched_switch",                                     \
  "serving thread runnable, waiting for a CPU", "tests/ns/test_explain.sh")               \
X(SCHED_ONCPU, "sched.oncpu", COMPUTE, SF_REQUESTS | SF_SCHED, -1,                      \
  TT_TPS("sched:sched_switch"), "tp_btf sched:sched_switch",                             \
  "serving thread on CPU inside a request", NULL)                                        \
X(SCHED_OFFCPU, "sched.offcpu", COMPUTE, SF_REQUESTS | SF_SCHED, -1,                    \
  TT_TPS("sched:sched_switch", "sched:sched_wakeup"),                                    \
  "tp_btf sched:sched_switch -> sched:sched_wakeup",                                     \
  "serving thread blocked inside a request", "tests/bpf/test_cuda.sh")                    \
X(GPU_WAIT, "gpu.wait", COMPUTE, SF_REQUESTS | SF_SCHED, PK_UPROBE,                          \
  TT_TPS("sched:sched_switch", "sched:sched_wakeup"),                                    \
  "uprobes on libcuda cu*Synchronize + sched tracepoints (--cuda)",                      \
  "blocked inside a CUDA synchronisation call", "tests/bpf/test_cuda.sh")                 \
X(REQ_LATENCY, "req.latency", REQUEST, SF_REQUESTS, -1,                                 \
  TT_TPS("tcp:tcp_sendmsg_locked", "tcp:tcp_probe", "sock:sock_recv_length"),            \
  "request segmentation on tcp_sendmsg_locked / tcp_probe / sock_recv_length",           \
  "request start -> end on the socket", "tests/ns/test_explain.sh")                       \
X(REQ_TTFT, "req.ttft", REQUEST, SF_REQUESTS, -1,                                       \
  TT_TPS("tcp:tcp_sendmsg_locked", "tcp:tcp_probe"),                                     \
  "request segmentation (first response byte)",                                          \
  "request start -> first response byte", "tests/ns/test_explain.sh")                     \
X(REQ_GAP, "req.gap", REQUEST, SF_REQUESTS, -1, TT_TPS("tcp:tcp_sendmsg_locked"),        \
  "request segmentation (chunk gaps)", "gap between response chunks", NULL)              \
X(RX_BACKLOG, "rx.backlog", COMPUTE, SF_DEFAULT | SF_NIC | SF_PLACE_DEV, -1,              \
  TT_TPS("net:netif_rx", "net:napi_gro_receive_entry", "net:netif_receive_skb"),         \
  "tp_btf net:netif_rx / net:napi_gro_receive_entry (+ napi_gro_frags_entry) -> net:netif_receive_skb", \
  "entering the stack -> leaving the per-CPU backlog or GRO", "tests/ns/test_nic_stages.sh") \
X(RDMA_WR, "rdma.wr", TRANSPORT, SF_DEFAULT | SF_RDMA, PK_UPROBE, TT_TPS(0),                  \
  "uprobes on the verbs provider's post/poll functions",                                 \
  "RDMA work request post -> completion", "tests/bpf/test_rdma.sh")                       \
X(RDMA_CQ_EVENT, "rdma.cq_event", COMPUTE, SF_DEFAULT | SF_RDMA, PK_UPROBE, TT_TPS(0),       \
  "uprobe/uretprobe on ibv_get_cq_event", "completion event -> waiter woken",            \
  "tests/bpf/test_rdma.sh")                                                              \
X(RDMA_UCX, "rdma.ucx_op", TRANSPORT, SF_DEFAULT | SF_RDMA, PK_UPROBE, TT_TPS(0),         \
  "uprobes on libucp's ucp_*_nbx, their completion callbacks, ucp_request_check_status", \
  "UCP operation issue -> its request completes (a send: locally)",                     \
  "tests/bpf/test_rdma.sh")                                                              \
X(RDMA_UCX_RTT, "rdma.ucx_rtt", TRANSPORT, SF_DEFAULT | SF_RDMA, PK_UPROBE, TT_TPS(0),     \
  "uprobes on libucp's sends, ucp_*_recv_nbx, receive callbacks and request tests",      \
  "a thread's first send -> its next receive completes (the round trip)",               \
  "tests/bpf/test_rdma.sh")                                                              \
X(RX_SOFTIRQ, "rx.softirq", COMPUTE, SF_DEFAULT | SF_NIC, -1,                            \
  TT_TPS("irq:softirq_raise", "irq:softirq_entry", "napi:napi_poll"),                    \
  "tp_btf irq:softirq_raise(NET_RX) -> irq:softirq_entry(NET_RX) on that CPU",           \
  "NET_RX softirq raised -> running (per CPU, irq exit or ksoftirqd)",                   \
  "tests/ns/test_nic_stages.sh")                                                          \
X(TX_RING, "tx.ring", TRANSPORT, SF_DEFAULT | SF_NIC | SF_PLACE_DEV, -1,                  \
  TT_TPS("net:net_dev_start_xmit", "net:net_dev_xmit", "skb:consume_skb"),               \
  "tp_btf net:net_dev_xmit -> skb:consume_skb of the same skb (TX completion)",          \
  "driver took the packet -> its completion freed it", NULL)
/* clang-format on */

#define TT_STAGE_ENUM_ROW(id, ...) STAGE_##id,

#endif
