/* SPDX-License-Identifier: GPL-2.0 */
/* Types shared by the RDMA verbs uprobes (bpf/rdma.bpf.c) and their loader
 * (user/rdma/rdma_tracer.c): work-request correlation keys, the per-QP histogram key, loss counters
 * and the discovery event that carries a live ibv_context's ops table to userspace. */
#ifndef TT_RDMA_H
#define TT_RDMA_H

#include "hist.h"

/* Bounds of every map and loop; whatever does not fit is counted (enum rdma_loss_counter). */
#define RDMA_INFLIGHT_MAX    65536 /* outstanding (queue, wr_id, occurrence) -> post time, LRU */
#define RDMA_WRSEQ_MAX       65536 /* (queue, wr_id) -> its occurrences posted and completed, LRU */
#define RDMA_HIST_MAX        1024  /* histograms (QP x peer x opcode x status), shared */
#define RDMA_QP_MAX          4096  /* per-QP facts learnt from create/modify (peer, sq_sig_all) */
#define RDMA_THREADS_MAX     16384 /* per-thread state between a uprobe and its uretprobe */
#define RDMA_CTX_MAX         1024  /* contexts already reported to userspace */
#define RDMA_MAX_WR_PER_POST 16    /* WR chain entries followed per post call */
#define RDMA_MAX_WC_PER_POLL 32    /* completions read per poll call */
/* Unmatched completions reaped this soon after the post side attached are counted as
 * work requests posted before tailtrace (RC_PRE_ATTACH). */
#define RDMA_PRE_ATTACH_NS (10ull * 1000000000ull)

/* Opcode stored in keys: the ibv_wr_opcode of a send-queue WR, or RDMA_OP_RECV for a
 * receive-queue WR (ibv_wr_opcode values are small, this one cannot collide). */
#define RDMA_OP_RECV    0x80
#define RDMA_OP_UNKNOWN 0xff /* error completion whose WR was posted before tracing */

/* A (queue, wr_id): the context pointer keeps QP numbers of two devices apart; bit 31 of
 * qpn_dir marks the receive queue (QP numbers are 24 bits). */
#define RDMA_DIR_RECV (1u << 31)
struct rdma_wrid_key {
	__u64 ctx;
	__u64 wr_id;
	__u32 tgid;
	__u32 qpn_dir;
};

/* The occurrences of one (queue, wr_id). Applications reuse wr_ids (perftest posts every WR
 * with the same one); a queue completes its signaled WRs in the order they were posted, so
 * the n-th completion of a (queue, wr_id) is its n-th post. head..tail-1 are the occurrences
 * not yet matched. While the poll side is not watched (between sampling windows, before it
 * attached) completions go unseen and head falls behind: a completion seen in a later
 * window is then only known to be one of head..head+amb, and is timed once the bounds
 * (below) leave one candidate. */
struct rdma_wr_seq {
	__u32 head;      /* oldest occurrence not known to be complete */
	__u32 tail;      /* next occurrence number */
	__u32 amb;       /* the next completion is one of head..head+amb */
	__u32 sync_gen;  /* poll generation in which head..head+amb was last established */
	__u32 post_gen;  /* poll generation of the newest post */
	__u32 gen_start; /* first occurrence posted in post_gen */
};

/* Outstanding work request: one occurrence of a (queue, wr_id). */
struct rdma_wr_key {
	struct rdma_wrid_key id;
	__u32 seq;
	__u32 reserved;
};

struct rdma_wr_val {
	__u64 post_ns;  /* bpf_ktime_get_ns at the post uprobe */
	__u32 peer_qpn; /* UD: the WR's remote QPN; else from ibv_modify_qp */
	__u8 opcode;
	__u8 reserved[3];
};

/* Histogram key. stage is STAGE_RDMA_WR (qpn = QP number) or STAGE_RDMA_CQ_EVENT (qpn =
 * the CQ's handle, opcode/peer 0). status is the ibv_wc_status (0 = success). */
struct rdma_hist_key {
	__u32 tgid;
	__u32 qpn;
	__u32 peer_qpn;
	__u16 stage;
	__u8 opcode;
	__u8 status;
};

/* What create_qp/modify_qp taught us about a QP. */
struct rdma_qp_key {
	__u64 ctx;
	__u32 tgid;
	__u32 qpn;
};

struct rdma_qp_info {
	__u32 dest_qpn;  /* IBV_QP_DEST_QPN of the last modify, 0 if unknown */
	__u8 sq_sig_all; /* every send WR completes, whatever its send_flags */
	__u8 gid_set;    /* dgid holds the peer's GID (IBV_QP_AV with a GRH) */
	__u8 reserved[2];
	__u8 dgid[16];
	/* the queues' capacities as the provider granted them (ibv_qp_init_attr.cap after
	 * ibv_create_qp): no more WRs than that are outstanding; 0 unknown */
	__u32 max_send_wr;
	__u32 max_recv_wr;
};

/* Loss and activity counters (per-CPU array). evicted in-flight entries =
 * INFLIGHT_INSERTS - INFLIGHT_DELETES - entries aged out by userspace - live entries. */
enum rdma_loss_counter {
	RC_POST_CALLS, /* post_send/post_recv calls seen */
	RC_POST_WRS,   /* work requests read from the chains */
	RC_POST_TRUNC, /* chains longer than RDMA_MAX_WR_PER_POST: the rest untraced */
	RC_UNSIGNALED, /* send WRs without IBV_SEND_SIGNALED on !sq_sig_all QPs */
	RC_INFLIGHT_INSERTS,
	RC_INFLIGHT_DUP,     /* wr_id reused while an earlier WR with it was outstanding */
	RC_INFLIGHT_FAIL,    /* in-flight entry could not be stored */
	RC_INFLIGHT_DELETES, /* matched by a completion: timed */
	RC_POLL_CALLS,       /* poll_cq returns seen (inside sampling windows) */
	RC_POLL_WCS,         /* completions read */
	RC_POLL_TRUNC,       /* completions beyond RDMA_MAX_WC_PER_POLL in one return */
	RC_UNMATCHED,        /* completions with no post on record */
	RC_ERRORS,           /* completions with status != IBV_WC_SUCCESS */
	RC_HIST_INSERTS,
	RC_HIST_FAIL,         /* histogram key could not be created */
	RC_THREAD_FAIL,       /* per-thread uprobe->uretprobe state could not be stored */
	RC_QP_FAIL,           /* per-QP facts could not be stored */
	RC_CTX_EVENTS,        /* discovery events sent to userspace */
	RC_CTX_LOST,          /* ... lost (ring buffer full) or not stored (ctx map full) */
	RC_CQEV_CALLS,        /* ibv_get_cq_event returns */
	RC_CQEV_IMMEDIATE,    /* ... that returned without sleeping (event already queued) */
	RC_PRE_ATTACH,        /* unmatched completions of WRs posted before the probes attached */
	RC_UCX_OPS,           /* UCP operations started (ucp_*_nbx returns seen) */
	RC_UCX_IMMEDIATE,     /* ... completed inside the call (UCS_OK) */
	RC_UCX_ERRORS,        /* ... failed, at the call or at completion */
	RC_UCX_COMPLETED,     /* requests completed (callback or check_status) */
	RC_UCX_REPLACED,      /* request address reused before we saw its completion */
	RC_UCX_INFLIGHT_FAIL, /* request could not be stored */
	RC_UCX_CB_LOST,       /* callback discovery events lost (ring buffer full) */
	RC_UNSEEN,            /* WRs completed while the poll side was not watched (bounds) */
	RC_AMBIGUOUS,         /* completions seen but not timed: their post is not certain */
	RC_INFLIGHT_RETIRED,  /* in-flight entries deleted untimed (ambiguous or unseen) */
	RC_WRSEQ_FAIL,        /* (queue, wr_id) state could not be stored: WR untimed */
	RC_UCX_RECVS,         /* receives completed (in the call, callback or request test) */
	RC_UCX_RTT_STALE,     /* rounds open UCX_RTT_STALE_NS without a receive, restarted */
	RC__MAX,
};

/* Code-pointer slots of struct ibv_context_ops that the data path jumps through. */
enum rdma_fn {
	RDMA_FN_POST_SEND,
	RDMA_FN_POST_RECV,
	RDMA_FN_POLL_CQ,
	RDMA_FN__MAX,
};

/* Which exported call revealed a context. */
enum rdma_ctx_source {
	RDMA_SRC_OPEN_DEVICE, /* ibv_open_device return value */
	RDMA_SRC_CREATE_CQ,   /* ibv_create_cq return ->context */
	RDMA_SRC_CREATE_QP,   /* ibv_create_qp return ->context */
	RDMA_SRC_CQ_EVENT,    /* ibv_get_cq_event channel->context */
	RDMA_SRC_ACK_CQ,      /* ibv_ack_cq_events cq->context */
	RDMA_SRC__MAX,
};

/* A newly seen ibv_context and its ops function pointers (runtime addresses). */
struct rdma_ctx_event {
	__u64 ctx;
	__u64 fn[RDMA_FN__MAX];
	__u32 tgid;
	__u32 source; /* enum rdma_ctx_source */
};

/* Field offsets and constants of infiniband/verbs.h, filled in by userspace (which
 * compiles against the real header) so the BPF side carries no copy of the ABI. */
struct rdma_layout {
	__u32 ctx_fn[RDMA_FN__MAX]; /* offsetof(struct ibv_context, ops.<fn>) */
	__u32 qp_context, qp_qp_num, qp_qp_type;
	__u32 cq_context, cq_handle;
	__u32 chan_context;
	__u32 swr_wr_id, swr_next, swr_opcode, swr_send_flags, swr_ud_remote_qpn;
	__u32 rwr_wr_id, rwr_next;
	__u32 wc_wr_id, wc_status, wc_opcode, wc_qp_num, wc_size;
	__u32 qia_sq_sig_all, qia_max_send_wr, qia_max_recv_wr; /* struct ibv_qp_init_attr */
	__u32 qa_dest_qp_num, qa_ah_is_global, qa_ah_dgid;      /* struct ibv_qp_attr */
	__u32 send_signaled;                                    /* IBV_SEND_SIGNALED */
	__u32 qpt_ud;                                           /* IBV_QPT_UD */
	__u32 wc_recv;                /* IBV_WC_RECV: receive-side wc opcodes have it */
	__u32 mask_dest_qpn, mask_av; /* IBV_QP_DEST_QPN, IBV_QP_AV */
};

/* ---- UCX (bpf/ucx.bpf.h) ---- */

#define UCX_INFLIGHT_MAX 65536 /* outstanding UCP requests, LRU */
#define UCX_CB_MAX       256   /* completion callbacks already reported */
/* A round (rdma.ucx_rtt) still waiting for a receive after this long is taken for a
 * one-way sender's and restarted at the next send. */
#define UCX_RTT_STALE_NS (10ull * 1000000000ull)

/* Public ABI of ucp.h (ucp_request_param_t, ucp_op_attr_t, ucs_status_t), stable since
 * UCX 1.9 when the *_nbx calls appeared. */
#define UCX_PARAM_MASK_OFF      0  /* uint32_t op_attr_mask */
#define UCX_PARAM_CB_OFF        16 /* union cb, after flags and request */
#define UCX_ATTR_FIELD_CALLBACK (1u << 1)
#define UCX_INPROGRESS          1
#define UCX_ERR_LAST            (-100)

/* Operation stored in rdma_hist_key.opcode for STAGE_RDMA_UCX (the operation timed) and
 * STAGE_RDMA_UCX_RTT (the send that opened the round). Receives are never a row of
 * rdma.ucx_op: their completion ends a round. */
enum ucx_op {
	UCX_OP_PUT = 1,
	UCX_OP_GET,
	UCX_OP_TAG_SEND,
	UCX_OP_AM_SEND,
	UCX_OP_STREAM_SEND,
	UCX_OP_TAG_RECV,
	UCX_OP_STREAM_RECV,
	UCX_OP__MAX,
};

struct ucx_req_key {
	__u64 req;
	__u32 tgid;
	__u32 reserved;
};

/* A completion callback seen in a request's parameters (runtime address in tgid). */
struct ucx_cb_event {
	__u64 cb;
	__u32 tgid;
	__u32 reserved;
};

#endif /* TT_RDMA_H */
