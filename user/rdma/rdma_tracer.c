// SPDX-License-Identifier: GPL-2.0
/* The thin layer between bpf/rdma.bpf.c and the rest: resolves where the verbs data path
 * lives (symbol, live ops table, --rdma-probe), owns every uprobe as a bpf_link, runs the
 * poll-side sampling window and turns the per-CPU maps into interval histograms. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <infiniband/verbs.h>
#include "rdma/rdma_tracer.h" /* brings bpf/rdma_types.h: before the skeleton */
#include "rdma.skel.h"
#include "rdma/rdma_resolve.h"
#include "core/histogram.h"
#include "lib/json.h"
#include "lib/clock.h"

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

static const struct {
	const char *sym;
	bool ret;
} ctl_hooks[CTL__MAX] = {
    [CTL_OPEN_DEVICE] = {"ibv_open_device", true},
    [CTL_CREATE_CQ] = {"ibv_create_cq", true},
    [CTL_CREATE_QP_ENTER] = {"ibv_create_qp", false},
    [CTL_CREATE_QP_RET] = {"ibv_create_qp", true},
    [CTL_MODIFY_QP] = {"ibv_modify_qp", false},
    [CTL_CQ_EVENT_ENTER] = {"ibv_get_cq_event", false},
    [CTL_CQ_EVENT_EXIT] = {"ibv_get_cq_event", true},
    [CTL_ACK_CQ] = {"ibv_ack_cq_events", false},
};

struct rdma_tracer {
	struct rdma_bpf *skel;
	struct ring_buffer *rb;
	FILE *notes;
	int pid; /* 0: every process */
	bool full;
	bool explicit_fn[RDMA_FN__MAX]; /* --rdma-probe given for this function */
	struct rdma_target tgt[RDMA_TARGETS_MAX];
	struct bpf_link *entry[RDMA_TARGETS_MAX], *ret[RDMA_TARGETS_MAX];
	size_t ntgt;
	struct bpf_link *ctl[CTL__MAX];
	struct bpf_link *waking;
	__u64 t0_ns;
	bool window_open;
	int ncpus;
	struct prev_set for_read, for_collect;
	__u64 aged;
	int attach_errors;
};

static void note(struct rdma_tracer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct rdma_tracer *t, const char *fmt, ...)
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
	l->qa_dest_qp_num = offsetof(struct ibv_qp_attr, dest_qp_num);
	l->qa_ah_is_global = offsetof(struct ibv_qp_attr, ah_attr.is_global);
	l->qa_ah_dgid = offsetof(struct ibv_qp_attr, ah_attr.grh.dgid);
	l->send_signaled = IBV_SEND_SIGNALED;
	l->qpt_ud = IBV_QPT_UD;
	l->wc_recv = IBV_WC_RECV;
	l->mask_dest_qpn = IBV_QP_DEST_QPN;
	l->mask_av = IBV_QP_AV;
}

static struct bpf_program *fn_prog(struct rdma_tracer *t, int fn, bool ret)
{
	switch (fn) {
	case RDMA_FN_POST_SEND:
		return ret ? NULL : t->skel->progs.rdma_post_send;
	case RDMA_FN_POST_RECV:
		return ret ? NULL : t->skel->progs.rdma_post_recv;
	default:
		return ret ? t->skel->progs.rdma_poll_exit : t->skel->progs.rdma_poll_enter;
	}
}

static struct bpf_link *attach_at(struct rdma_tracer *t, struct bpf_program *p, const char *path,
				  __u64 off, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = ret);

	return bpf_program__attach_uprobe_opts(p, t->pid ? t->pid : -1, path, (size_t)off, &uo);
}

static int poll_links(struct rdma_tracer *t, size_t i, bool on)
{
	struct rdma_target *g = &t->tgt[i];
	int err;

	if (on == g->attached)
		return 0;
	if (!on) {
		/* exit first: a return probe without its entry only finds no state */
		bpf_link__destroy(t->ret[i]);
		bpf_link__destroy(t->entry[i]);
		t->ret[i] = t->entry[i] = NULL;
		g->attached = false;
		return 0;
	}
	t->ret[i] = attach_at(t, fn_prog(t, RDMA_FN_POLL_CQ, true), g->path, g->offset, true);
	if (!t->ret[i])
		return -errno;
	t->entry[i] = attach_at(t, fn_prog(t, RDMA_FN_POLL_CQ, false), g->path, g->offset, false);
	if (!t->entry[i]) {
		err = -errno;
		bpf_link__destroy(t->ret[i]);
		t->ret[i] = NULL;
		return err;
	}
	g->attached = true;
	return 0;
}

/* Adds and attaches a data-path target unless the same function is already traced. */
static int add_target(struct rdma_tracer *t, int fn, const char *path, __u64 off, const char *how)
{
	struct rdma_target *g;
	struct stat st;
	size_t i;
	int err = 0;

	if (stat(path, &st))
		return -errno;
	for (i = 0; i < t->ntgt; i++)
		if (t->tgt[i].inode == st.st_ino && t->tgt[i].offset == off)
			return 0;
	if (t->ntgt == RDMA_TARGETS_MAX)
		return -E2BIG;
	i = t->ntgt;
	g = &t->tgt[i];
	memset(g, 0, sizeof(*g));
	g->fn = fn;
	snprintf(g->path, sizeof(g->path), "%s", path);
	g->offset = off;
	g->inode = st.st_ino;
	g->how = how;
	if (fn == RDMA_FN_POLL_CQ) {
		if (t->full || t->window_open)
			err = poll_links(t, i, true);
	} else {
		t->entry[i] = attach_at(t, fn_prog(t, fn, false), path, off, false);
		if (!t->entry[i])
			err = -errno;
		else
			g->attached = true;
	}
	if (err) {
		t->attach_errors++;
		return err;
	}
	t->ntgt++;
	note(t, "%s at %s:0x%llx (%s)%s", rdma_fn_name(fn), path, (unsigned long long)off, how,
	     fn == RDMA_FN_POLL_CQ && !t->full ? ", sampled" : "");
	return 0;
}

static int on_ctx_event(void *ctx, void *data, size_t len)
{
	static const char *const src[RDMA_SRC__MAX] = {"ibv_open_device", "ibv_create_cq",
						       "ibv_create_qp", "ibv_get_cq_event",
						       "ibv_ack_cq_events"};
	const struct rdma_ctx_event *e = data;
	struct rdma_tracer *t = ctx;

	if (len < sizeof(*e))
		return 0;
	note(t, "context 0x%llx of pid %u seen at %s", (unsigned long long)e->ctx, e->tgid,
	     e->source < RDMA_SRC__MAX ? src[e->source] : "?");
	for (int fn = 0; fn < RDMA_FN__MAX; fn++) {
		char path[PATH_MAX];
		__u64 off;
		int err;

		if (t->explicit_fn[fn] || !e->fn[fn])
			continue;
		err = rdma_addr_to_file((int)e->tgid, e->fn[fn], path, sizeof(path), &off);
		if (err) {
			note(t, "ops.%s = 0x%llx of pid %u is not in a mapped file: %s",
			     rdma_fn_name(fn), (unsigned long long)e->fn[fn], e->tgid,
			     strerror(-err));
			continue;
		}
		err = add_target(t, fn, path, off, "ops-table");
		if (err)
			note(t, "cannot attach %s at %s:0x%llx: %s", rdma_fn_name(fn), path,
			     (unsigned long long)off, strerror(-err));
	}
	return 0;
}

/* Provider symbol names (static functions, visible only in .symtab/debug builds). */
static const char *const provider_prefixes[] = {"mlx5", "mlx4",	      "rxe",   "siw", "bnxt_re",
						"efa",	"hns_roce_u", "erdma", "si"};

static bool provider_like(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return strstr(b, "-rdmav") || !strncmp(b, "libmlx", 6) || !strncmp(b, "libefa", 6) ||
	       !strncmp(b, "libttstandin", 12);
}

/* Path (1): providers built with .symtab, among the files pid maps. */
static void resolve_by_symbol(struct rdma_tracer *t)
{
	char mp[64], line[PATH_MAX + 128], last[PATH_MAX] = "", path[PATH_MAX];
	struct proc_map m;
	FILE *f;

	if (!t->pid)
		return;
	snprintf(mp, sizeof(mp), "/proc/%d/maps", t->pid);
	f = fopen(mp, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (proc_map_parse(line, &m) || !m.inode || m.path[0] != '/' ||
		    !strcmp(m.path, last) || !provider_like(m.path))
			continue;
		snprintf(last, sizeof(last), "%s", m.path);
		if (rdma_find_library(t->pid, m.path, path, sizeof(path)) ||
		    elf_has_symtab(path) != 1)
			continue;
		for (size_t p = 0; p < sizeof(provider_prefixes) / sizeof(provider_prefixes[0]);
		     p++) {
			for (int fn = 0; fn < RDMA_FN__MAX; fn++) {
				char sym[64];
				bool symtab = false;
				__u64 off;

				if (t->explicit_fn[fn])
					continue;
				snprintf(sym, sizeof(sym), "%s_%s", provider_prefixes[p],
					 rdma_fn_name(fn));
				if (!elf_find_function(path, sym, &off, &symtab) && symtab)
					add_target(t, fn, path, off, "symbol");
			}
		}
	}
	fclose(f);
}

static int attach_explicit(struct rdma_tracer *t, const struct tt_opts *o, char *err, size_t errlen)
{
	for (int i = 0; i < o->nrdma_probes; i++) {
		struct rdma_probe_spec s;
		char path[PATH_MAX];
		__u64 off;
		int r;

		if (rdma_spec_parse(o->rdma_probes[i], &s, err, errlen))
			return -EINVAL;
		if (rdma_find_library(t->pid, s.lib, path, sizeof(path))) {
			snprintf(err, errlen, "--rdma-probe %s: library '%s' not found%s",
				 o->rdma_probes[i], s.lib,
				 t->pid ? " (neither mapped by the process nor in the library "
					  "directories)"
					: "");
			return -EINVAL;
		}
		off = s.offset;
		if (!s.has_offset) {
			r = elf_find_function(path, s.symbol, &off, NULL);
			if (r) {
				snprintf(err, errlen, "--rdma-probe %s: %s in %s",
					 o->rdma_probes[i],
					 r == -ENOENT	  ? "no such function (stripped library? "
							    "give LIB:0xOFFSET)"
					 : r == -ENOTUNIQ ? "ambiguous symbol"
							  : "not an ELF file",
					 path);
				return -EINVAL;
			}
		}
		t->explicit_fn[s.role] = true;
		r = add_target(t, s.role, path, off, "--rdma-probe");
		if (r) {
			snprintf(err, errlen, "--rdma-probe %s: cannot attach at %s:0x%llx: %s",
				 o->rdma_probes[i], path, (unsigned long long)off, strerror(-r));
			return r;
		}
	}
	return 0;
}

/* Control-path hooks on the exported verbs entry points: discovery and per-QP facts. */
static int attach_control(struct rdma_tracer *t, char *err, size_t errlen)
{
	struct bpf_program *progs[CTL__MAX] = {
	    [CTL_OPEN_DEVICE] = t->skel->progs.rdma_open_device_ret,
	    [CTL_CREATE_CQ] = t->skel->progs.rdma_create_cq_ret,
	    [CTL_CREATE_QP_ENTER] = t->skel->progs.rdma_create_qp_enter,
	    [CTL_CREATE_QP_RET] = t->skel->progs.rdma_create_qp_ret,
	    [CTL_MODIFY_QP] = t->skel->progs.rdma_modify_qp,
	    [CTL_CQ_EVENT_ENTER] = t->skel->progs.rdma_cq_event_enter,
	    [CTL_CQ_EVENT_EXIT] = t->skel->progs.rdma_cq_event_exit,
	    [CTL_ACK_CQ] = t->skel->progs.rdma_ack_cq,
	};
	char lib[PATH_MAX];
	__u64 off;
	int n = 0;

	if (rdma_find_exported(t->pid, "ibv_open_device", "libibverbs.so.1", lib, sizeof(lib),
			       &off)) {
		snprintf(err, errlen,
			 t->pid ? "pid %d maps no verbs library (nothing exports ibv_open_device);"
				  " give --rdma-probe LIB:SYMBOL|ROLE=LIB:0xOFFSET"
				: "libibverbs.so.1 not found%.0d; give -p PID or --rdma-probe",
			 t->pid);
		return -ENOENT;
	}
	for (int h = 0; h < CTL__MAX; h++) {
		if (elf_find_function(lib, ctl_hooks[h].sym, &off, NULL))
			continue;
		t->ctl[h] = attach_at(t, progs[h], lib, off, ctl_hooks[h].ret);
		if (t->ctl[h])
			n++;
	}
	if (!t->ctl[CTL_OPEN_DEVICE] && !t->ctl[CTL_CREATE_QP_RET]) {
		snprintf(err, errlen, "cannot attach uprobes to %s: %s", lib, strerror(errno));
		return -errno ? -errno : -EPERM;
	}
	/* the wake-up side of rdma.cq_event: only worth its cost with the call hooked */
	if (t->ctl[CTL_CQ_EVENT_ENTER] && t->ctl[CTL_CQ_EVENT_EXIT]) {
		t->waking = bpf_program__attach(t->skel->progs.rdma_waking);
		if (!t->waking)
			note(t, "sched_waking not attachable (%s): no rdma.cq_event",
			     strerror(errno));
	}
	note(t, "watching %s in %s (%d hooks) for verbs contexts", t->pid ? "pid" : "every process",
	     lib, n);
	return 0;
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
	struct rdma_tracer *t;
	int r;

	*out = NULL;
	/* spec syntax first: a usage error should not wait for BPF loading */
	for (int i = 0; i < o->nrdma_probes; i++) {
		struct rdma_probe_spec s;

		if (rdma_spec_parse(o->rdma_probes[i], &s, err, errlen))
			return -EINVAL;
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
	t->full = o->rdma_full;
	t->t0_ns = mono_ns();
	t->window_open = true; /* the first window opens at start */
	t->ncpus = libbpf_num_possible_cpus();
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
	t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.ctx_events), on_ctx_event, t, NULL);
	if (!t->rb) {
		r = -errno;
		snprintf(err, errlen, "cannot set up the discovery ring buffer: %s", strerror(-r));
		goto fail;
	}
	r = attach_explicit(t, o, err, errlen);
	if (r)
		goto fail;
	resolve_by_symbol(t);
	r = attach_control(t, err, errlen);
	if (r) {
		/* explicit probes alone are enough to trace */
		if (o->nrdma_probes && r == -ENOENT) {
			note(t, "%s", err);
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

static void set_window(struct rdma_tracer *t, bool open)
{
	if (open == t->window_open)
		return;
	t->window_open = open;
	for (size_t i = 0; i < t->ntgt; i++)
		if (t->tgt[i].fn == RDMA_FN_POLL_CQ && poll_links(t, i, open))
			t->attach_errors++;
}

int rdma_tracer__poll(struct rdma_tracer *t, int timeout_ms)
{
	int r;

	if (!t->full) {
		__u64 ms = (mono_ns() - t->t0_ns) / 1000000ull;
		__u64 phase = ms % RDMA_POLL_PERIOD_MS;

		set_window(t, phase < RDMA_POLL_WINDOW_MS);
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
		bpf_link__destroy(t->ret[i]);
		bpf_link__destroy(t->entry[i]);
	}
	for (int h = 0; h < CTL__MAX; h++)
		bpf_link__destroy(t->ctl[h]);
	bpf_link__destroy(t->waking);
	ring_buffer__free(t->rb);
	rdma_bpf__destroy(t->skel);
	free(t->for_read.v);
	free(t->for_collect.v);
	free(t);
}

/* ---- reading ---- */

/* dst = cur - prev (both cumulative). max is exact when it moved, else bounded by the
 * highest bucket that gained values. */
static void hist_delta(struct hist *dst, const struct hist *cur, const struct hist *prev)
{
	int top = -1;

	memset(dst, 0, sizeof(*dst));
	for (int i = 0; i < (int)HIST_SLOTS; i++) {
		dst->slots[i] = cur->slots[i] - (prev ? prev->slots[i] : 0);
		if (dst->slots[i])
			top = i;
	}
	dst->count = cur->count - (prev ? prev->count : 0);
	dst->sum_ns = cur->sum_ns - (prev ? prev->sum_ns : 0);
	if (!prev || cur->max_ns != prev->max_ns) {
		dst->max_ns = cur->max_ns;
	} else if (top >= 0) {
		__u64 hi = hist_slot_hi((__u32)top) - 1;

		dst->max_ns = hi < cur->max_ns ? hi : cur->max_ns;
	}
}

static struct prev_hist *prev_find(struct prev_set *p, const struct rdma_hist_key *k)
{
	for (size_t i = 0; i < p->n; i++)
		if (!memcmp(&p->v[i].key, k, sizeof(*k)))
			return &p->v[i];
	return NULL;
}

static int prev_put(struct prev_set *p, const struct rdma_hist_key *k, const struct hist *h)
{
	struct prev_hist *e = prev_find(p, k);

	if (!e) {
		if (p->n == p->cap) {
			size_t ncap = p->cap ? p->cap * 2 : 32;
			struct prev_hist *n = realloc(p->v, ncap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			p->v = n;
			p->cap = ncap;
		}
		e = &p->v[p->n++];
		e->key = *k;
	}
	e->h = *h;
	return 0;
}

typedef int (*row_fn)(void *arg, const struct rdma_hist_key *k, const struct hist *win,
		      const struct hist *total);

static int walk_hists(struct rdma_tracer *t, struct prev_set *p, row_fn fn, void *arg, __u64 *live)
{
	int fd = bpf_map__fd(t->skel->maps.hists);
	struct rdma_hist_key k, next;
	struct hist total, win;
	void *key = NULL;
	int err = 0;

	*live = 0;
	while (!bpf_map_get_next_key(fd, key, &next)) {
		k = next;
		key = &k;
		if (bpf_map_lookup_elem(fd, &k, &total))
			continue;
		(*live)++;
		{
			struct prev_hist *ph = prev_find(p, &k);

			hist_delta(&win, &total, ph ? &ph->h : NULL);
		}
		if ((err = prev_put(p, &k, &total)))
			break;
		if ((err = fn(arg, &k, &win, &total)))
			break;
	}
	return err;
}

static void read_counters(struct rdma_tracer *t, __u64 *out)
{
	int fd = bpf_map__fd(t->skel->maps.counters);
	__u64 *v = calloc((size_t)t->ncpus, sizeof(__u64));

	memset(out, 0, sizeof(__u64) * RC__MAX);
	if (!v)
		return;
	for (__u32 i = 0; i < RC__MAX; i++) {
		if (bpf_map_lookup_elem(fd, &i, v))
			continue;
		for (int c = 0; c < t->ncpus; c++)
			out[i] += v[c];
	}
	free(v);
}

/* Counts live in-flight entries and removes those older than RDMA_STALE_NS. */
static __u64 sweep_inflight(struct rdma_tracer *t)
{
	int fd = bpf_map__fd(t->skel->maps.inflight);
	struct rdma_wr_key k, next, *key = NULL;
	__u64 now = mono_ns(), live = 0;
	struct rdma_wr_val v;
	bool have_stale = false;
	struct rdma_wr_key stale;

	while (!bpf_map_get_next_key(fd, key, &next)) {
		/* delete the previous stale key only after stepping past it */
		if (have_stale && !bpf_map_delete_elem(fd, &stale))
			t->aged++;
		have_stale = false;
		k = next;
		key = &k;
		if (bpf_map_lookup_elem(fd, &k, &v))
			continue;
		if (now > v.post_ns && now - v.post_ns > RDMA_STALE_NS) {
			stale = k;
			have_stale = true;
		} else {
			live++;
		}
	}
	if (have_stale && !bpf_map_delete_elem(fd, &stale))
		t->aged++;
	return live;
}

struct read_ctx {
	struct rdma_tracer *t;
	struct rdma_read *r;
	size_t cap;
};

static int add_row(void *arg, const struct rdma_hist_key *k, const struct hist *win,
		   const struct hist *total)
{
	struct read_ctx *c = arg;
	struct rdma_qp_key qk = {0};
	struct rdma_row *row;

	if (c->r->nrows == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 16;
		struct rdma_row *n = realloc(c->r->rows, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		c->r->rows = n;
		c->cap = ncap;
	}
	row = &c->r->rows[c->r->nrows++];
	memset(row, 0, sizeof(*row));
	row->key = *k;
	row->win = *win;
	row->total = *total;
	if (k->stage == STAGE_RDMA_WR) {
		/* the QP map is keyed by context too: scan for tgid + qpn */
		int fd = bpf_map__fd(c->t->skel->maps.qps);
		struct rdma_qp_key *kp = NULL, nk;

		while (!bpf_map_get_next_key(fd, kp, &nk)) {
			qk = nk;
			kp = &qk;
			if (nk.tgid == k->tgid && nk.qpn == k->qpn &&
			    !bpf_map_lookup_elem(fd, &nk, &row->qp)) {
				row->qp_known = true;
				break;
			}
		}
	}
	return 0;
}

int rdma_tracer__read(struct rdma_tracer *t, struct rdma_read *r)
{
	struct read_ctx c = {t, r, 0};
	__u64 cnt[RC__MAX];
	int err;

	free(r->rows);
	memset(r, 0, sizeof(*r));
	err = walk_hists(t, &t->for_read, add_row, &c, &r->hist_live);
	if (err)
		return err;
	read_counters(t, cnt);
	for (int i = 0; i < RC__MAX; i++) {
		r->cnt[i] = cnt[i];
		r->cnt_win[i] = cnt[i] - t->for_read.cnt[i];
		t->for_read.cnt[i] = cnt[i];
	}
	r->inflight_live = sweep_inflight(t);
	r->inflight_aged = t->aged;
	{
		__u64 gone = cnt[RC_INFLIGHT_DELETES] + t->aged + r->inflight_live;

		r->inflight_evicted =
		    cnt[RC_INFLIGHT_INSERTS] > gone ? cnt[RC_INFLIGHT_INSERTS] - gone : 0;
	}
	return 0;
}

void rdma_read__free(struct rdma_read *r)
{
	free(r->rows);
	memset(r, 0, sizeof(*r));
}

static int snap_row(void *arg, const struct rdma_hist_key *k, const struct hist *win,
		    const struct hist *total)
{
	struct snapshot *s = arg;
	struct hist_key hk;

	(void)total;
	if (!win->count)
		return 0;
	memset(&hk, 0, sizeof(hk));
	hk.stage = k->stage;
	hk.by = GROUP_NONE;
	hk.tgid = k->tgid;
	hk.id = RDMA_SNAP_ID(k->qpn, k->opcode, k->status, k->peer_qpn);
	return snapshot__add_hist(s, &hk, win);
}

int rdma_tracer__collect(struct rdma_tracer *t, struct snapshot *s)
{
	__u64 live, cnt[RC__MAX];
	int err = walk_hists(t, &t->for_collect, snap_row, s, &live);

	if (err)
		return err;
	read_counters(t, cnt);
	/* what the RDMA maps failed to keep this interval */
	s->hist_evicted += (cnt[RC_HIST_FAIL] - t->for_collect.cnt[RC_HIST_FAIL]) +
			   (cnt[RC_INFLIGHT_FAIL] - t->for_collect.cnt[RC_INFLIGHT_FAIL]);
	memcpy(t->for_collect.cnt, cnt, sizeof(cnt));
	return 0;
}

/* ---- names ---- */

const char *rdma_opcode_name(__u8 op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
		return "RDMA_WRITE";
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return "RDMA_WRITE_IMM";
	case IBV_WR_SEND:
		return "SEND";
	case IBV_WR_SEND_WITH_IMM:
		return "SEND_IMM";
	case IBV_WR_RDMA_READ:
		return "RDMA_READ";
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return "ATOMIC_CAS";
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return "ATOMIC_FAA";
	case IBV_WR_LOCAL_INV:
		return "LOCAL_INV";
	case IBV_WR_BIND_MW:
		return "BIND_MW";
	case IBV_WR_SEND_WITH_INV:
		return "SEND_INV";
	case IBV_WR_TSO:
		return "TSO";
	case RDMA_OP_RECV:
		return "RECV";
	case RDMA_OP_UNKNOWN:
		return "UNKNOWN";
	default:
		return "OTHER";
	}
}

const char *rdma_status_name(__u8 status)
{
	/* libibverbs' ibv_wc_status_str() would need linking libibverbs: names kept here */
	static const char *const names[] = {
	    "SUCCESS",
	    "LOC_LEN_ERR",
	    "LOC_QP_OP_ERR",
	    "LOC_EEC_OP_ERR",
	    "LOC_PROT_ERR",
	    "WR_FLUSH_ERR",
	    "MW_BIND_ERR",
	    "BAD_RESP_ERR",
	    "LOC_ACCESS_ERR",
	    "REM_INV_REQ_ERR",
	    "REM_ACCESS_ERR",
	    "REM_OP_ERR",
	    "RETRY_EXC_ERR",
	    "RNR_RETRY_EXC_ERR",
	    "LOC_RDD_VIOL_ERR",
	    "REM_INV_RD_REQ_ERR",
	    "REM_ABORT_ERR",
	    "INV_EECN_ERR",
	    "INV_EEC_STATE_ERR",
	    "FATAL_ERR",
	    "RESP_TIMEOUT_ERR",
	    "GENERAL_ERR",
	    "TM_ERR",
	    "TM_RNDV_INCOMPLETE",
	};

	return status < sizeof(names) / sizeof(names[0]) ? names[status] : "UNKNOWN_STATUS";
}

/* ---- host support report ---- */

void rdma_support_probe(const char *root, struct rdma_support *s)
{
	static const char *const prov_dirs[] = {"/usr/lib/x86_64-linux-gnu/libibverbs",
						"/usr/lib/aarch64-linux-gnu/libibverbs",
						"/usr/lib64/libibverbs", "/usr/lib/libibverbs"};
	char path[PATH_MAX * 2];
	struct stat st;
	struct dirent *de;
	__u64 off;
	DIR *d;

	memset(s, 0, sizeof(*s));
	s->verbs_header = true;
	if (!rdma_find_library(0, "libibverbs.so.1", s->libibverbs_path,
			       sizeof(s->libibverbs_path))) {
		s->libibverbs = true;
		s->libibverbs_exports =
		    !elf_find_function(s->libibverbs_path, "ibv_open_device", &off, NULL);
	}
	for (size_t i = 0; i < sizeof(prov_dirs) / sizeof(prov_dirs[0]); i++) {
		d = opendir(prov_dirs[i]);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			if (!strstr(de->d_name, ".so"))
				continue;
			snprintf(path, sizeof(path), "%s/%s", prov_dirs[i], de->d_name);
			if (s->nproviders < 8)
				snprintf(s->providers[s->nproviders], sizeof(s->providers[0]),
					 "%.63s", de->d_name);
			s->nproviders++;
			if (elf_has_symtab(path) == 1)
				s->nproviders_symtab++;
		}
		closedir(d);
		break; /* one multiarch directory is the system's */
	}
	snprintf(path, sizeof(path), "%s/sys/class/infiniband",
		 root && strcmp(root, "/") ? root : "");
	d = opendir(path);
	if (d) {
		while ((de = readdir(d)))
			if (de->d_name[0] != '.')
				s->ndevices++;
		closedir(d);
	}
	s->uprobe = !stat("/sys/bus/event_source/devices/uprobe/type", &st);
}

void rdma_support__print(const struct rdma_support *s, FILE *f)
{
	fprintf(f, "rdma:\n");
	fprintf(f, "  libibverbs        %s\n", s->libibverbs ? s->libibverbs_path : "not found");
	fprintf(f, "  ops-table path    %s\n",
		s->libibverbs_exports ? "yes (ibv_open_device/ibv_create_qp hooks)"
				      : "no (libibverbs missing or exports nothing)");
	fprintf(f, "  providers         %d (%d with .symtab: symbol path)", s->nproviders,
		s->nproviders_symtab);
	for (int i = 0; i < s->nproviders && i < 8; i++)
		fprintf(f, "%s%s", i ? ", " : ": ", s->providers[i]);
	fprintf(f, "\n  devices           %d under /sys/class/infiniband%s\n", s->ndevices,
		s->ndevices ? "" : " (counters unavailable)");
	fprintf(f, "  uprobes           %s\n", s->uprobe ? "yes" : "no");
}

void rdma_support__json(const struct rdma_support *s, struct json_writer *w)
{
	jw_object_begin(w, "rdma");
	jw_bool(w, "libibverbs", s->libibverbs);
	if (s->libibverbs)
		jw_string(w, "libibverbs_path", s->libibverbs_path);
	jw_bool(w, "ops_table_discovery", s->libibverbs_exports);
	jw_int(w, "providers", s->nproviders);
	jw_int(w, "providers_with_symtab", s->nproviders_symtab);
	jw_array_begin(w, "provider_libs");
	for (int i = 0; i < s->nproviders && i < 8; i++)
		jw_string(w, NULL, s->providers[i]);
	jw_array_end(w);
	jw_int(w, "devices", s->ndevices);
	jw_bool(w, "uprobe", s->uprobe);
	jw_object_end(w);
}
