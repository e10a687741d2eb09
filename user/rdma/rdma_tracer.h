/* SPDX-License-Identifier: GPL-2.0 */
/* RDMA verbs tracer: finds the provider's data-path functions (symbol, live ops table,
 * or --rdma-probe), attaches the uprobes of bpf/rdma.bpf.c, duty-cycles the poll side,
 * and reads per-QP histograms and loss counters. Also the host capability report that
 * `tailtrace probe` shows. */
#ifndef TT_USER_RDMA_H
#define TT_USER_RDMA_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>
#include "rdma_types.h"
#include "core/options.h"
#include "core/snapshot.h"

struct json_writer;
struct rdma_tracer;

/* Poll-side sampling when --rdma-full is not given: the poll uprobes are attached for
 * RDMA_POLL_WINDOW_MS out of every RDMA_POLL_PERIOD_MS (docs/rdma.md explains the bias). */
#define RDMA_POLL_WINDOW_MS 200
#define RDMA_POLL_PERIOD_MS 1000
/* In-flight entries older than this are swept (and counted as aged): WRs whose
 * completion fell outside a sampling window, or never came. */
#define RDMA_STALE_NS    (10ull * 1000000000ull)
#define RDMA_TARGETS_MAX 64

/* hist_key encoding of RDMA histograms in a struct snapshot (stage STAGE_RDMA_WR or
 * STAGE_RDMA_CQ_EVENT, by GROUP_NONE, tgid set): id packs the QP number (CQ handle for
 * cq_event), opcode, completion status and peer QP number; addr holds the peer GID with
 * family AF_INET6 when it is known. */
#define RDMA_SNAP_ID(qpn, op, status, peer)                                                        \
	(((__u64)(qpn)&0xffffff) | ((__u64)(op)&0xff) << 24 | ((__u64)(status)&0xff) << 32 |       \
	 ((__u64)(peer)&0xffffff) << 40)
#define RDMA_SNAP_QPN(id)    ((__u32)((id)&0xffffff))
#define RDMA_SNAP_OPCODE(id) ((__u8)(((id) >> 24) & 0xff))
#define RDMA_SNAP_STATUS(id) ((__u8)(((id) >> 32) & 0xff))
#define RDMA_SNAP_PEER(id)   ((__u32)(((id) >> 40) & 0xffffff))

/* Where a data-path uprobe sits and how it was found. */
struct rdma_target {
	int fn; /* enum rdma_fn */
	char path[PATH_MAX];
	__u64 offset;       /* file offset */
	__u64 probe_offset; /* where the uprobe goes: past single-stepped openers
			       (lib/uprobe_entry.h) */
	__u64 inode;
	const char *how; /* "symbol", "ops-table", "--rdma-probe" */
	bool attached;   /* poll targets: attached right now (sampling) */
	bool gone;       /* its process exited: no more windows */
	int pid;         /* the process it fires in; -1: every process (--rdma-host-wide) */
	int fd;          /* the file as tailtrace opened and checked it */
	/* CLOCK_MONOTONIC around its first attachment: the probe started firing in between */
	__u64 attach_begin_ns, attach_end_ns;
};

/* UCX hooks (rdma.ucx_op, rdma.ucx_rtt): the libucp traced, the transports the process
 * configured, and the completion callbacks found so far. */
#define RDMA_UCX_CB_MAX 16
struct rdma_ucx_cb {
	char path[PATH_MAX];
	__u64 offset;
	int pid; /* the process whose callback it is: its probe fires there only */
};

struct rdma_ucx_info {
	char lib[PATH_MAX];
	char tls[128]; /* UCX_TLS of the process, or a note saying why none */
	int ops;       /* UCP operations hooked */
	int ncb;
	struct rdma_ucx_cb cb[RDMA_UCX_CB_MAX];
};

/* One histogram row as read: the interval's part and the run's total. */
struct rdma_row {
	struct rdma_hist_key key;
	struct hist win;        /* since the previous rdma_tracer__read */
	struct hist total;      /* since the start */
	struct rdma_qp_info qp; /* peer facts, when create/modify_qp were seen */
	bool qp_known;
};

struct rdma_read {
	struct rdma_row *rows;
	size_t nrows;
	__u64 cnt[RC__MAX];     /* totals since the start */
	__u64 cnt_win[RC__MAX]; /* this interval */
	__u64 inflight_live;
	__u64 inflight_aged;    /* total swept by userspace */
	__u64 inflight_evicted; /* inserts - deletes - aged - live */
	__u64 hist_live;
	__u64 post_attached_ns; /* CLOCK_MONOTONIC when the post side attached, 0 before */
};

/* Opens the tracer for o->pid (0: every process), o->rdma_probes, o->rdma_full. notes
 * (may be NULL) receives one line per attachment ("rdma: post_send at lib:0x... (how)").
 * Returns 0; -EINVAL for bad input (bad spec, missing library or symbol: exit 2); other
 * negative errno for runtime failures (pid gone, BPF load/attach). err gets one line. */
int rdma_tracer__open(const struct tt_opts *o, FILE *notes, struct rdma_tracer **out, char *err,
		      size_t errlen);
/* Waits up to timeout_ms for discovery events, attaches what they reveal and opens or
 * closes the poll sampling window. Call it often (every few ms to 100 ms). */
int rdma_tracer__poll(struct rdma_tracer *t, int timeout_ms);
/* Reads everything since the previous read; r is reused between calls (free with
 * rdma_read__free). */
int rdma_tracer__read(struct rdma_tracer *t, struct rdma_read *r);
void rdma_read__free(struct rdma_read *r);
/* Adds this interval's RDMA histograms to s (encoding above) and RDMA losses to its
 * hist_evicted. Independent of rdma_tracer__read's interval bookkeeping. */
int rdma_tracer__collect(struct rdma_tracer *t, struct snapshot *s);
/* Data-path targets found so far. */
const struct rdma_target *rdma_tracer__targets(const struct rdma_tracer *t, size_t *n);
/* UCX hooks, or NULL when the process maps no libucp. */
const struct rdma_ucx_info *rdma_tracer__ucx(const struct rdma_tracer *t);
/* Share of time the poll side is traced (1.0 with --rdma-full). */
double rdma_tracer__poll_duty(const struct rdma_tracer *t);
/* false once the traced process is gone (always true without -p). */
bool rdma_tracer__target_alive(const struct rdma_tracer *t);
/* The capabilities (PRIV_BIT(CAP_*) ORed) a tracer still needs once attached, to attach to
 * what appears later: perf_event_open of a uprobe (CAP_PERFMON), bpf() for every map read
 * and link (CAP_BPF), another process's maps, memory and root (CAP_SYS_PTRACE) and, without
 * -p, the libraries of processes of any user (CAP_DAC_READ_SEARCH). CAP_SYS_ADMIN only
 * where kernel.perf_event_paranoid is above 2 (Debian's kernels default to 3, where their
 * patch refuses every perf_event_open without it, the tracefs way included; one line on
 * stderr says so); elsewhere, where the kernel asks it of the uprobe PMU (6.16 on), the
 * uprobe is made through tracefs (lib/uprobe_attach.h). */
__u64 rdma_privs_after_attach(const struct rdma_tracer *t);
/* The same as a rule: pid the -p process (0: every process), paranoid the sysctl's value
 * (a negative errno when unreadable: taken as the upstream kernel's rule). */
__u64 rdma_privs_keep(__u32 pid, int paranoid);
/* Detaches everything. */
void rdma_tracer__close(struct rdma_tracer *t);

const char *rdma_opcode_name(__u8 op);
const char *rdma_status_name(__u8 status);
/* "PUT", "GET", "TAG_SEND", ... for enum ucx_op. */
const char *rdma_ucx_op_name(__u8 op);

/* What RDMA tracing this host supports, for `tailtrace probe`. */
struct rdma_support {
	bool libibverbs; /* libibverbs.so.1 found */
	char libibverbs_path[PATH_MAX];
	bool libibverbs_exports; /* it exports ibv_open_device (ops-table discovery) */
	int nproviders;          /* provider libraries found (lib*-rdmav*.so, libmlx5...) */
	int nproviders_symtab;   /* ... of which carry .symtab (symbol path usable) */
	char providers[8][64];
	int ndevices;      /* entries of /sys/class/infiniband */
	bool uprobe;       /* uprobe PMU present (/sys/bus/event_source/.../uprobe) */
	bool verbs_header; /* built against infiniband/verbs.h (always true) */
};

/* Fills s from the live system (root NULL) or a fabricated tree. Never fails. */
void rdma_support_probe(const char *root, struct rdma_support *s);
void rdma_support__print(const struct rdma_support *s, FILE *f);
void rdma_support__json(const struct rdma_support *s, struct json_writer *w);

#endif
