// SPDX-License-Identifier: GPL-2.0
/* The thin layer between bpf/rdma.bpf.c and the rest: opens and loads the RDMA programs,
 * runs the poll-side sampling window and closes everything. Finding and attaching the data
 * path is in rdma_attach.c, reading the maps in rdma_read.c. */
#include <errno.h>
#include <linux/capability.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <infiniband/verbs.h>
#include "rdma/rdma_tracer_int.h"
#include "rdma.skel.h"
#include "rdma/rdma_resolve.h"
#include "rdma/rdma_debuginfo.h"
#include "rdma/rdma_scan.h"
#include "lib/clock.h"
#include "lib/log.h"

void rdma_note(struct rdma_tracer *t, const char *fmt, ...)
{
	va_list ap;

	if (!t->notes)
		return;
	va_start(ap, fmt);
	fputs("tailtrace: rdma: ", t->notes);
	vfprintf(t->notes, fmt, ap);
	fputc('\n', t->notes);
	fflush(t->notes);
	va_end(ap);
}

static void fill_layout(struct rdma_layout *l)
{
	l->ctx_fn[RDMA_FN_POST_SEND] = offsetof(struct ibv_context, ops.post_send);
	l->ctx_fn[RDMA_FN_POST_RECV] = offsetof(struct ibv_context, ops.post_recv);
	l->ctx_fn[RDMA_FN_POLL_CQ] = offsetof(struct ibv_context, ops.poll_cq);
	l->qp_context = offsetof(struct ibv_qp, context);
	l->qp_qp_num = offsetof(struct ibv_qp, qp_num);
	l->qp_qp_type = offsetof(struct ibv_qp, qp_type);
	l->cq_context = offsetof(struct ibv_cq, context);
	l->cq_handle = offsetof(struct ibv_cq, handle);
	l->chan_context = offsetof(struct ibv_comp_channel, context);
	l->swr_wr_id = offsetof(struct ibv_send_wr, wr_id);
	l->swr_next = offsetof(struct ibv_send_wr, next);
	l->swr_opcode = offsetof(struct ibv_send_wr, opcode);
	l->swr_send_flags = offsetof(struct ibv_send_wr, send_flags);
	l->swr_ud_remote_qpn = offsetof(struct ibv_send_wr, wr.ud.remote_qpn);
	l->rwr_wr_id = offsetof(struct ibv_recv_wr, wr_id);
	l->rwr_next = offsetof(struct ibv_recv_wr, next);
	l->wc_wr_id = offsetof(struct ibv_wc, wr_id);
	l->wc_status = offsetof(struct ibv_wc, status);
	l->wc_opcode = offsetof(struct ibv_wc, opcode);
	l->wc_qp_num = offsetof(struct ibv_wc, qp_num);
	l->wc_size = sizeof(struct ibv_wc);
	l->qia_sq_sig_all = offsetof(struct ibv_qp_init_attr, sq_sig_all);
	l->qia_max_send_wr = offsetof(struct ibv_qp_init_attr, cap.max_send_wr);
	l->qia_max_recv_wr = offsetof(struct ibv_qp_init_attr, cap.max_recv_wr);
	l->qa_dest_qp_num = offsetof(struct ibv_qp_attr, dest_qp_num);
	l->qa_ah_is_global = offsetof(struct ibv_qp_attr, ah_attr.is_global);
	l->qa_ah_dgid = offsetof(struct ibv_qp_attr, ah_attr.grh.dgid);
	l->send_signaled = IBV_SEND_SIGNALED;
	l->qpt_ud = IBV_QPT_UD;
	l->wc_recv = IBV_WC_RECV;
	l->mask_dest_qpn = IBV_QP_DEST_QPN;
	l->mask_av = IBV_QP_AV;
}

static bool pid_alive(int pid)
{
	char p[64], buf[256], *rp;
	FILE *f;
	bool alive;

	snprintf(p, sizeof(p), "/proc/%d/stat", pid);
	f = fopen(p, "re");
	if (!f)
		return false;
	alive = fgets(buf, sizeof(buf), f) && (rp = strrchr(buf, ')')) && rp[1] == ' ' &&
		rp[2] != 'Z' && rp[2] != 'X';
	fclose(f);
	return alive;
}

bool rdma_tracer__target_alive(const struct rdma_tracer *t)
{
	return !t->pid || pid_alive(t->pid);
}

int rdma_tracer__open(const struct tt_opts *o, FILE *notes, struct rdma_tracer **out, char *err,
		      size_t errlen)
{
	struct rdma_scan_layout scan_layout = {
		.fn_off = { offsetof(struct ibv_context, ops.post_send),
			    offsetof(struct ibv_context, ops.post_recv),
			    offsetof(struct ibv_context, ops.poll_cq) },
		.device_off = offsetof(struct ibv_context, device),
		.dev_size = sizeof(struct ibv_device),
		.dev_node_type_off = offsetof(struct ibv_device, node_type),
		.dev_transport_off = offsetof(struct ibv_device, transport_type),
		.dev_name_off = offsetof(struct ibv_device, name),
		.dev_dev_name_off = offsetof(struct ibv_device, dev_name),
		.dev_name_len = sizeof(((struct ibv_device *)0)->name),
	};
	struct rdma_tracer *t;
	int r, ucx;

	*out = NULL;
	/* spec syntax first: a usage error should not wait for BPF loading */
	for (int i = 0; i < o->nrdma_probes; i++) {
		struct rdma_probe_spec s;

		if (rdma_spec_parse(o->rdma_probes[i], &s, err, errlen))
			return -EINVAL;
	}
	if (o->debug_dir) {
		struct stat st;

		if (stat(o->debug_dir, &st) || !S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "--debug-dir %s: not a directory", o->debug_dir);
			return -EINVAL;
		}
	}
	if (o->pid && !pid_alive((int)o->pid)) {
		snprintf(err, errlen, "pid %u: no such process", o->pid);
		return -ESRCH;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->notes = notes;
	t->pid = (int)o->pid;
	t->debug_dir = o->debug_dir ? o->debug_dir : RDMA_DEBUG_ROOT;
	t->debug_dir_given = o->debug_dir;
	t->full = o->rdma_full;
	t->host_wide = o->rdma_host_wide;
	t->t0_ns = mono_ns();
	t->window_open = true; /* the first window opens at start */
	t->ncpus = libbpf_num_possible_cpus();
	/* uprobe events a killed tailtrace left in tracefs (lib/uprobe_attach.h) */
	uprobe_tracefs_sweep();
	t->skel = rdma_bpf__open();
	if (!t->skel) {
		snprintf(err, errlen, "cannot open the RDMA BPF object: %s", strerror(errno));
		r = -ENOMEM;
		goto fail;
	}
	fill_layout((struct rdma_layout *)&t->skel->rodata->targ_layout);
	r = rdma_bpf__load(t->skel);
	if (r) {
		snprintf(err, errlen,
			 "cannot load the RDMA BPF programs: %s (needs root: "
			 "CAP_BPF and CAP_PERFMON)",
			 strerror(-r));
		goto fail;
	}
	t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.ctx_events), rdma_on_ctx_event, t, NULL);
	if (!t->rb) {
		r = -errno;
		snprintf(err, errlen, "cannot set up the discovery ring buffer: %s", strerror(-r));
		goto fail;
	}
	if (ring_buffer__add(t->rb, bpf_map__fd(t->skel->maps.ucx_events), rdma_on_ucx_event, t)) {
		r = -errno;
		snprintf(err, errlen, "cannot set up the UCX ring buffer: %s", strerror(-r));
		goto fail;
	}
	r = rdma_attach_explicit(t, o, err, errlen);
	if (r)
		goto fail;
	rdma_resolve_by_debuginfo(t);
	rdma_resolve_by_symbol(t);
	rdma_resolve_live(t, &scan_layout);
	ucx = rdma_ucx_attach(t);
	r = rdma_attach_control(t, err, errlen);
	if (r) {
		/* explicit probes or UCX alone are enough to trace */
		if ((o->nrdma_probes || !ucx) && r == -ENOENT) {
			rdma_note(t, "%s", err);
			r = 0;
		} else {
			goto fail;
		}
	}
	*out = t;
	return 0;
fail:
	rdma_tracer__close(t);
	return r;
}

int rdma_tracer__poll(struct rdma_tracer *t, int timeout_ms)
{
	int r;

	if (!t->full) {
		__u64 ms = (mono_ns() - t->t0_ns) / 1000000ull;
		__u64 phase = ms % RDMA_POLL_PERIOD_MS;

		rdma_set_window(t, phase < RDMA_POLL_WINDOW_MS);
		/* never sleep across a window edge */
		__u64 to_edge = phase < RDMA_POLL_WINDOW_MS ? RDMA_POLL_WINDOW_MS - phase
							    : RDMA_POLL_PERIOD_MS - phase;
		if ((__u64)timeout_ms > to_edge)
			timeout_ms = (int)to_edge;
	}
	r = ring_buffer__poll(t->rb, timeout_ms);
	return r < 0 && r != -EINTR ? r : 0;
}

double rdma_tracer__poll_duty(const struct rdma_tracer *t)
{
	return t->full ? 1.0 : (double)RDMA_POLL_WINDOW_MS / RDMA_POLL_PERIOD_MS;
}

const struct rdma_target *rdma_tracer__targets(const struct rdma_tracer *t, size_t *n)
{
	*n = t->ntgt;
	return t->tgt;
}

void rdma_tracer__close(struct rdma_tracer *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < RDMA_TARGETS_MAX; i++) {
		uprobe_attacher__detach(&t->up, t->ret[i]);
		uprobe_attacher__detach(&t->up, t->entry[i]);
	}
	for (size_t i = 0; i < t->ntgt; i++)
		close(t->tgt[i].fd);
	if (t->ctl_fd > 0)
		close(t->ctl_fd);
	for (int h = 0; h < CTL__MAX; h++)
		uprobe_attacher__detach(&t->up, t->ctl[h]);
	bpf_link__destroy(t->waking);
	for (int i = 0; i < t->nucx_links; i++)
		uprobe_attacher__detach(&t->up, t->ucx_links[i]);
	uprobe_attacher__free(&t->up);
	ring_buffer__free(t->rb);
	rdma_bpf__destroy(t->skel);
	free(t->for_read.v);
	free(t->for_collect.v);
	free(t);
}

__u64 rdma_privs_keep(__u32 pid, int paranoid)
{
	__u64 keep = 1ull << CAP_PERFMON | 1ull << CAP_BPF | 1ull << CAP_SYS_PTRACE;

	/* no CAP_SYS_ADMIN: where the kernel asks it of the uprobe PMU, later uprobes are made
	 * through tracefs (lib/uprobe_attach.h); but Debian's paranoid level 3 refuses every
	 * perf_event_open without it */
	if (!pid)
		keep |= 1ull << CAP_DAC_READ_SEARCH;
	if (paranoid > 2)
		keep |= 1ull << CAP_SYS_ADMIN;
	return keep;
}

static int perf_event_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int v = -ENOENT;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -EINVAL;
		fclose(f);
	}
	return v;
}

__u64 rdma_privs_after_attach(const struct rdma_tracer *t)
{
	int paranoid = perf_event_paranoid();

	if (paranoid > 2)
		tt_warn("kernel.perf_event_paranoid is %d: CAP_SYS_ADMIN is kept to attach to RDMA "
			"processes that start later (at 2, the upstream default, it is dropped)",
			paranoid);
	return rdma_privs_keep(t->pid, paranoid);
}
