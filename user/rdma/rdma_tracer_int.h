/* SPDX-License-Identifier: GPL-2.0 */
/* The RDMA tracer's insides, shared by rdma_tracer.c (open, sampling window, close),
 * rdma_attach.c (finding and attaching the data path and control hooks) and rdma_read.c
 * (maps into rows and snapshots). Other modules use rdma/rdma_tracer.h. */
#ifndef TT_RDMA_TRACER_INT_H
#define TT_RDMA_TRACER_INT_H

#include "lib/uprobe_attach.h"
#include "rdma/rdma_tracer.h" /* brings bpf/rdma_types.h: before the skeleton */
#include "lib/escape.h"

/* cumulative histogram per key at the previous read, to hand out interval deltas */
struct prev_hist {
	struct rdma_hist_key key;
	struct hist h;
};

struct prev_set {
	struct prev_hist *v;
	size_t n, cap;
	__u64 cnt[RC__MAX];
};

enum ctl_hook {
	CTL_OPEN_DEVICE,
	CTL_CREATE_CQ,
	CTL_CREATE_QP_ENTER,
	CTL_CREATE_QP_RET,
	CTL_MODIFY_QP,
	CTL_CQ_EVENT_ENTER,
	CTL_CQ_EVENT_EXIT,
	CTL_ACK_CQ,
	CTL__MAX,
};

#define RDMA_UCX_LINKS_MAX (20 + RDMA_UCX_CB_MAX)

struct rdma_tracer {
	struct rdma_bpf *skel;
	struct ring_buffer *rb;
	FILE *notes;
	int pid;               /* 0: every process */
	const char *debug_dir; /* --debug-dir, or the default debug root */
	bool debug_dir_given;
	bool full;
	bool host_wide;                 /* --rdma-host-wide: data-path probes in every process */
	bool explicit_fn[RDMA_FN__MAX]; /* --rdma-probe given for this function */
	struct rdma_target tgt[RDMA_TARGETS_MAX];
	struct bpf_link *entry[RDMA_TARGETS_MAX], *ret[RDMA_TARGETS_MAX];
	size_t ntgt;
	struct bpf_link *ctl[CTL__MAX];
	int ctl_fd; /* the verbs library the control hooks are in, as opened and checked */
	struct bpf_link *waking;
	__u64 t0_ns;
	bool window_open;
	int ncpus;
	struct prev_set for_read, for_collect;
	__u64 aged;
	__u64 retired; /* in-flight entries of WRs known complete, deleted by the sweep */
	int attach_errors;
	struct rdma_ucx_info ucx;
	struct bpf_link *ucx_links[RDMA_UCX_LINKS_MAX];
	int nucx_links;
	struct uprobe_attacher up; /* every uprobe link above is made and destroyed here */
};

/* rdma_tracer.c: one line on the notes stream, when there is one */
void rdma_note(struct rdma_tracer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* rdma_attach.c */
/* Proves that addr, read from process tgid, is where a function of the file it maps there
 * starts (of a verbs provider library with provider_only): 0 with that file open in *fd,
 * its name in path and the file offset; else a negative errno and one line in why. */
int rdma_prove_hint(int tgid, __u64 addr, bool provider_only, int *fd, char *path, size_t pathlen,
		    __u64 *off, char *why, size_t whylen);
const char *rdma_open_why(int err);
#define rdma_esc(s) tt_esc(s)
int rdma_on_ctx_event(void *ctx, void *data, size_t len);
void rdma_resolve_by_debuginfo(struct rdma_tracer *t);
void rdma_resolve_by_symbol(struct rdma_tracer *t);
struct rdma_scan_layout;
void rdma_resolve_live(struct rdma_tracer *t, const struct rdma_scan_layout *l);
int rdma_attach_explicit(struct rdma_tracer *t, const struct tt_opts *o, char *err, size_t errlen);
int rdma_attach_control(struct rdma_tracer *t, char *err, size_t errlen);
void rdma_set_window(struct rdma_tracer *t, bool open);

/* rdma_ucx.c: -ENOENT when no libucp is mapped */
int rdma_ucx_attach(struct rdma_tracer *t);
int rdma_on_ucx_event(void *ctx, void *data, size_t len);

#endif
