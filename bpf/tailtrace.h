/* SPDX-License-Identifier: GPL-2.0 */
/* Types and constants that the BPF programs and userspace share: stage ids, map keys,
 * counters and the per-request event. UAPI-style fixed-width types only. */
#ifndef TT_TAILTRACE_H
#define TT_TAILTRACE_H

#include "hist.h"
#include "stage_catalogue.h"
#ifndef __VMLINUX_H__
#include <stdbool.h>
#endif

/* Widths both sides must agree on. */
#define TT_COMM_LEN   16 /* a task's comm, as the kernel's TASK_COMM_LEN */
#define TT_IFNAME_LEN 16 /* a device name, as IFNAMSIZ */
#define TT_ADDR_LEN   16 /* an IPv6 address; IPv4 uses the first 4 bytes */
#define TT_MAX_DEVS   8  /* --dev options, and the kernel's device filter */

/* Stage ids, from the catalogue (bpf/stage_catalogue.h). The names ("tx.qdisc", ...) and
 * classes are a stable contract documented in docs/stages.md; ids are internal and may be
 * renumbered. */
enum tt_stage {
	TT_STAGE_CATALOGUE(TT_STAGE_ENUM_ROW) STAGE__MAX,
};

/* What a histogram is grouped by (`--by`). */
enum tt_group_by {
	GROUP_NONE,
	GROUP_PORT,   /* local port of the traced socket */
	GROUP_RADDR,  /* remote address */
	GROUP_COMM,   /* owning process (tgid + comm) */
	GROUP_CGROUP, /* cgroup v2 id */
	GROUP_POD,    /* cgroup v2 id too; user space labels it with the Kubernetes pod and
		       * container its path names (user/collect/k8s.c) */
	GROUP__MAX,
};

/* Key of the per-CPU histogram map. The place (device, qdisc handle) is always part of
 * the key for stages that have one, whatever the grouping, so `explain` can say where. */
struct hist_key {
	__u16 stage;            /* enum tt_stage */
	__u8 by;                /* enum tt_group_by */
	__u8 family;            /* AF_INET or AF_INET6 when addr is set */
	__u32 ifindex;          /* place: device, 0 if none */
	__u32 qdisc_handle;     /* place: qdisc handle (major:minor), 0 if none */
	__u32 netns;            /* place: network namespace inode of the device */
	__u32 tgid;             /* GROUP_COMM */
	__u16 cpu;              /* place: CPU + 1, 0 if none (rx.backlog, rx.softirq, tx.ring) */
	__u16 queue;            /* place: queue + 1 (rx.backlog, tx.ring), or the softirq's
				 * context (rx.softirq: SOFTIRQ_CTX_*); 0 if none */
	__u64 id;               /* GROUP_PORT: port; GROUP_CGROUP: cgroup id */
	__u8 addr[TT_ADDR_LEN]; /* GROUP_RADDR: remote address (v4 in the first 4 bytes) */
	char comm[TT_COMM_LEN]; /* GROUP_COMM */
};

/* rx.softirq places: where the NET_RX softirq ran (hist_key.queue) */
#define SOFTIRQ_CTX_IRQ       1 /* on the way out of an interrupt, or a bh enable */
#define SOFTIRQ_CTX_KSOFTIRQD 2 /* in the CPU's ksoftirqd thread */

/* napi_counts key: one NAPI instance (a device's queue, or a CPU's backlog when ifindex is
 * 0 and napi_id is the CPU) */
struct napi_key {
	__u32 netns;
	__u32 ifindex;
	__u32 napi_id;
	__u32 pad;
};

/* napi_counts value, per CPU, cumulative (userspace reads and deletes it each snapshot) */
struct napi_count {
	__u64 polls;
	__u64 exhausted; /* polls that used the whole budget: the driver had more */
	__u64 work;      /* packets handled */
};

/* place_slots value of a place seen by the kernel that userspace has not given a
 * place_hists slot yet. */
#define PLACE_PENDING 0xffffffffu

/* Per-CPU entry of the stage_hists array (ungrouped stages without a place): cumulative
 * counts; max_ns is the largest sample since the epoch max_epoch began (userspace bumps the
 * epoch at each snapshot, so the maximum is per interval). */
struct stage_hist {
	struct hist h;
	__u64 max_epoch;
};

/* Global counters, a per-CPU array indexed by enum tt_counter; userspace sums CPUs. Every
 * bounded map and ring buffer has a counter for what it failed to store. This table is the
 * only place a counter is named:
 *
 * X(ID, record name, JSON key): the enum is CNT_<ID>
 *   record name  the counter's name in record files (docs/record-format.md) and the
 *                OpenMetrics export: stable, never reused or renamed
 *   JSON key     its key under `counters` in `hist -j` and `report -j` (docs/stages.md), or
 *                NULL where it is shown only inside a sum (failed_updates) or a derived
 *                figure (evicted = inserts - deletes - live)
 *
 * Ids are internal (a record stores names); where a counter's JSON key and text go among
 * the others is user/cmd/stage_report.c's. */
/* clang-format off */
#define TT_COUNTERS(X)                                                                             \
	X(RETRANS, "retrans", "retransmits") /* retransmitted segments on traced flows */          \
	X(RETRANS_RTO, "retrans_rto", "retransmits_timeout") /* ... in the Loss state (timeout) */ \
	X(RETRANS_FAST, "retrans_fast", "retransmits_fast") /* ... Recovery (fast retransmit) */   \
	X(RETRANS_TLP, "retrans_tlp", "retransmits_tlp") /* ... tail-loss probes */                \
	X(RETRANS_OTHER, "retrans_other", "retransmits_other")                                     \
	/* retransmissions whose original send was not in the ring */                              \
	X(RETRANS_UNTIMED, "retrans_untimed", "retransmits_untimed")                               \
	/* SYN-ACK retransmissions of selected listeners */                                        \
	X(RETRANS_SYNACK, "retrans_synack", "retransmits_synack")                                  \
	X(DROPS, "drops", "drops") /* kfree_skb with a drop reason on traced flows */              \
	X(ECN_CE, "ecn_ce", "ecn_ce") /* CE marks seen on traced flows */                          \
	X(QDISC_PKTS, "qdisc_pkts", "qdisc_packets") /* dequeued from a qdisc (traced devices) */  \
	X(QDISC_DROPS, "qdisc_drops", "qdisc_drops") /* dropped by a qdisc on traced devices */    \
	/* new histogram keys created (evicted = inserts - live) */                                \
	X(HIST_INSERTS, "hist_inserts", NULL)                                                      \
	X(HIST_UPDATE_FAIL, "hist_update_fail", NULL) /* histogram key could not be created */     \
	X(FLOW_UPDATE_FAIL, "flow_update_fail", NULL) /* per-socket state could not be created */  \
	/* per-packet/per-send timestamp entries created */                                        \
	X(PKT_INSERTS, "pkt_inserts", NULL)                                                        \
	X(PKT_UPDATE_FAIL, "pkt_update_fail", NULL) /* ... that could not be created */            \
	X(PKT_DELETES, "pkt_deletes", NULL) /* ... consumed and deleted */                         \
	X(EVENTS_LOST, "events_lost", NULL) /* ring buffer reservations that failed */             \
	X(SCHED_UPDATE_FAIL, "sched_update_fail", NULL) /* per-thread state could not be stored */ \
	/* threads tracked (evicted = inserts - deletes - live) */                                 \
	X(THREAD_INSERTS, "thread_inserts", NULL)                                                  \
	X(THREAD_DELETES, "thread_deletes", NULL) /* ... forgotten at thread exit */               \
	/* sends acknowledged with no tx.sendq/tx.ack sample */                                    \
	X(SENDS_UNTIMED, "sends_untimed", "sends_untimed")                                         \
	/* retransmissions no event reported, from total_retrans */                                \
	X(RETRANS_UNSEEN, "retrans_unseen", "retransmits_unseen")                                  \
	/* flows of closed sockets found by the sweep, not a close event */                        \
	X(CLOSES_UNSEEN, "closes_unseen", "closes_unseen")                                         \
	/* napi:dql_stall_detected: a TX queue's completions stalled */                            \
	X(BQL_STALLS, "bql_stalls", "bql_stalls")                                                  \
	/* client responses first seen at the read, not at arrival */                              \
	X(RESP_UNSEEN, "responses_unseen", "responses_unseen")                                     \
	/* HTTP/2 streams tracked (evicted = inserts - live) */                                    \
	X(STREAM_INSERTS, "stream_inserts", NULL)                                                  \
	X(STREAM_UPDATE_FAIL, "stream_update_fail", NULL) /* ... that could not be stored */       \
	X(STREAM_DELETES, "stream_deletes", NULL) /* ... ended */                                  \
	/* HTTP/2 frame headers lost track of (bytes missed), found again */                       \
	X(FRAMING_LOST, "framing_lost", "framing_lost")
/* clang-format on */

#define TT_COUNTER_ENUM_ROW(id, ...) CNT_##id,
enum tt_counter {
	TT_COUNTERS(TT_COUNTER_ENUM_ROW) CNT__MAX,
};

/* Maximum drop reasons tracked individually (SKB_DROP_REASON_* values); the rest are
 * summed in the last slot. */
#define TT_DROP_REASONS 128

/* Filters the user set; written into .rodata before load (`const volatile targ_*`). */
#define TT_MAX_PORTS 8
/* flows one run of the key-walking flow sweep takes (a raw_tp run gets at most 12 arguments) */
#define TT_SWEEP_KEYS 12

/* Roles of a socket for request segmentation. */
enum tt_role {
	ROLE_AUTO,
	ROLE_SERVER, /* inbound data then outbound data is one exchange */
	ROLE_CLIENT, /* outbound then inbound */
};

/* The application protocol of a connection, read from the first bytes of its data (never
 * kept): where it has framing, requests follow it (bpf/framing.bpf.h). */
enum tt_proto {
	PROTO_UNKNOWN, /* not told yet */
	PROTO_OPAQUE,  /* no framing known: an exchange is inbound then outbound data */
	PROTO_HTTP1,   /* HTTP/1.x: a response's header block alone is no token */
	PROTO_HTTP2,   /* HTTP/2 (h2c, gRPC): one request per stream */
	PROTO_TLS,     /* TLS hides the framing: exchanges */
	PROTO__MAX,
};

/* Per-request record, streamed through a ring buffer once a request completes: individual
 * slow requests are the answer for attribution and the flight recorder. */
#define TT_REQ_STAGES STAGE_RDMA_WR /* stages that can accumulate inside a request */
/* req_event.flags */
#define REQ_F_LOSS_RECOVERY 1 /* a send of the request met TCP in loss recovery */
/* requests overlapped on this connection (pipelining), at this request or before it: its
 * bounds come from the byte stream's direction, which several requests in flight blur */
#define REQ_F_OVERLAP 2
/* a streamed response: its header block went alone, tokens followed (HTTP/1.1 SSE), or an
 * HTTP/2 stream; first_resp_ns is its first token */
#define REQ_F_STREAM 4
/* the deep tier (per-packet and scheduler programs, record's duty cycle) was off for some
 * or all of the request: it is timed, but its stages are incomplete and it is not split */
#define REQ_F_PARTIAL 8

struct req_event {
	__u64 sk_cookie;
	__u64 start_ns;                /* request start (CLOCK_MONOTONIC, bpf_ktime_get_ns) */
	__u64 first_resp_ns;           /* first response byte (0 if none) */
	__u64 end_ns;                  /* request end */
	__u64 stage_ns[TT_REQ_STAGES]; /* time spent per stage inside this request */
	__u64 max_gap_ns;              /* largest gap between response chunks */
	__u64 srtt_ns;                 /* flow smoothed RTT at the end of the request */
	__u64 min_rtt_ns;              /* flow minimum RTT (path base) */
	__u64 cgroup_id;
	__u32 tgid;
	__u32 tid;     /* serving thread */
	__u32 chunks;  /* response sends (streaming: tokens) */
	__u32 retrans; /* retransmissions inside the request */
	__u32 retrans_rto;
	__u32 drops; /* drops seen on the flow inside the request */
	__u32 ecn_ce;
	__u32 ifindex;      /* device the flow last left by */
	__u32 qdisc_handle; /* qdisc the flow last queued in */
	__u32 netns;        /* network namespace inode of ifindex */
	__u32 cpu;          /* CPU the serving thread last ran on */
	__u32 bytes_in;
	__u32 bytes_out;
	__u16 lport;
	__u16 rport;
	__u8 family;
	__u8 role;       /* enum tt_role */
	__u8 flags;      /* REQ_F_* */
	__u8 proto;      /* enum tt_proto */
	__u32 stream_id; /* HTTP/2 stream (0: none) */
	__u8 raddr[TT_ADDR_LEN];
	char comm[TT_COMM_LEN];
};

/* A request event's bytes in its ring: the record and the ring's 8-byte record header
 * (BPF_RINGBUF_HDR_SZ), rounded up to 8. */
#define REQ_RECORD_BYTES ((sizeof(struct req_event) + 8 + 7) / 8 * 8)

/* A request ring's reader is woken by the event that takes the unread bytes to or past a
 * multiple of `step` (a quarter of the ring): a few wakeups per fill, not one per event
 * once the ring is past its first quarter. step is a power of two (ring sizes are), so
 * a multiple is crossed exactly when a bit at or above it changes: no division on the hot
 * path. step 0: never. */
static __always_inline bool ring_wake_due(__u64 unread, __u64 len, __u64 step)
{
	return step && (unread ^ (unread + len)) >= step;
}

/* Device names as seen by the hooks, so places survive devices that go away. */
struct dev_key {
	__u32 netns;
	__u32 ifindex;
};

struct dev_name {
	char name[TT_IFNAME_LEN];
};

/* Per-packet stamps: direct-mapped arrays of two-way buckets (see bpf/packet.bpf.h);
 * userspace maps them read-only to count the live entries. */
#define STAMP_BUCKET_BITS 13
#define STAMP_BUCKETS     (1u << STAMP_BUCKET_BITS)

/* One packet (skb address): when it entered the qdisc / was received by the driver. */
struct pkt_stamp {
	__u64 skb; /* 0: free */
	__u64 ts;
	__u32 len; /* payload bytes */
	__u32 seq; /* TCP sequence (receive side): tells a reused skb address apart */
	__u8 ce;   /* received with ECN CE */
	__u8 pad[3];
	__u32 backlog_ns; /* receive side: time in the backlog/GRO before the driver stamp */
};

struct stamp_bucket {
	struct pkt_stamp e[2];
};

#endif /* TT_TAILTRACE_H */
