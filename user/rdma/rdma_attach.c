// SPDX-License-Identifier: GPL-2.0
/* Where the RDMA data path is and its uprobes: explicit --rdma-probe targets, debug
 * symbols (by build-id, .gnu_debugdata), provider symbols (.symtab), and the live ops table the
 * control hooks on the exported verbs report (discovery events); the poll side's links come and go
 * with the sampling window. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "rdma/rdma_tracer_int.h"
#include "rdma.skel.h"
#include "rdma/rdma_resolve.h"
#include "rdma/rdma_debuginfo.h"
#include "rdma/rdma_scan.h"
#include "lib/clock.h"
#include "lib/uprobe_entry.h"
#include "lib/util.h"

static const struct {
	const char *sym;
	bool ret;
} ctl_hooks[CTL__MAX] = {
	[CTL_OPEN_DEVICE] = { "ibv_open_device", true },
	[CTL_CREATE_CQ] = { "ibv_create_cq", true },
	[CTL_CREATE_QP_ENTER] = { "ibv_create_qp", false },
	[CTL_CREATE_QP_RET] = { "ibv_create_qp", true },
	[CTL_MODIFY_QP] = { "ibv_modify_qp", false },
	[CTL_CQ_EVENT_ENTER] = { "ibv_get_cq_event", false },
	[CTL_CQ_EVENT_EXIT] = { "ibv_get_cq_event", true },
	[CTL_ACK_CQ] = { "ibv_ack_cq_events", false },
};

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
	t->ret[i] = attach_at(t, fn_prog(t, RDMA_FN_POLL_CQ, true), g->path, g->probe_offset, true);
	if (!t->ret[i])
		return -errno;
	t->entry[i] =
		attach_at(t, fn_prog(t, RDMA_FN_POLL_CQ, false), g->path, g->probe_offset, false);
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
	char moved[80];
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
	/* read once: poll targets attach again every sampling window; the post programs
	 * read the work requests, the poll programs the completions after a return */
	g->probe_offset = uprobe_entry_offset(
		path, off,
		fn == RDMA_FN_POLL_CQ ? UPROBE_READS_MEMORY | UPROBE_RETURN : UPROBE_READS_MEMORY);
	g->inode = st.st_ino;
	g->how = how;
	if (fn == RDMA_FN_POLL_CQ) {
		if (t->full || t->window_open)
			err = poll_links(t, i, true);
	} else {
		t->entry[i] = attach_at(t, fn_prog(t, fn, false), path, g->probe_offset, false);
		if (!t->entry[i])
			err = -errno;
		else
			g->attached = true;
		/* from now on, a completion without a post was posted before we looked */
		if (g->attached && !t->skel->bss->post_attached_ns)
			t->skel->bss->post_attached_ns = mono_ns();
	}
	if (err) {
		t->attach_errors++;
		return err;
	}
	t->ntgt++;
	uprobe_moved_note(moved, sizeof(moved), off, g->probe_offset);
	rdma_note(t, "%s at %s:0x%llx (%s)%s%s", rdma_fn_name(fn), path, (unsigned long long)off,
		  how, fn == RDMA_FN_POLL_CQ && !t->full ? ", sampled" : "", moved);
	return 0;
}

/* Attaches the data-path functions a context's ops table points at (runtime addresses
 * of process tgid), unless an explicit probe covers the role. */
static void attach_ctx_fns(struct rdma_tracer *t, __u32 tgid, const __u64 *fns, const char *how)
{
	for (int fn = 0; fn < RDMA_FN__MAX; fn++) {
		char path[PATH_MAX];
		__u64 off;
		int err;

		if (t->explicit_fn[fn] || !fns[fn])
			continue;
		err = rdma_addr_to_file((int)tgid, fns[fn], path, sizeof(path), &off);
		if (err) {
			rdma_note(t, "ops.%s = 0x%llx of pid %u is not in a mapped file: %s",
				  rdma_fn_name(fn), (unsigned long long)fns[fn], tgid,
				  strerror(-err));
			continue;
		}
		err = add_target(t, fn, path, off, how);
		if (err)
			rdma_note(t, "cannot attach %s at %s:0x%llx: %s", rdma_fn_name(fn), path,
				  (unsigned long long)off, strerror(-err));
	}
}

int rdma_on_ctx_event(void *ctx, void *data, size_t len)
{
	static const char *const src[RDMA_SRC__MAX] = { "ibv_open_device", "ibv_create_cq",
							"ibv_create_qp", "ibv_get_cq_event",
							"ibv_ack_cq_events" };
	const struct rdma_ctx_event *e = data;
	struct rdma_tracer *t = ctx;

	if (len < sizeof(*e))
		return 0;
	rdma_note(t, "context 0x%llx of pid %u seen at %s", (unsigned long long)e->ctx, e->tgid,
		  e->source < RDMA_SRC__MAX ? src[e->source] : "?");
	attach_ctx_fns(t, e->tgid, e->fn, "ops-table");
	return 0;
}

/* Path (3): contexts the process set up before tailtrace started, found in its memory. */
void rdma_resolve_live(struct rdma_tracer *t, const struct rdma_scan_layout *l)
{
	struct rdma_scan_hit hits[RDMA_SCAN_MAX_HITS];
	struct rdma_scan_stats st;
	int n;

	if (!t->pid)
		return;
	n = rdma_scan_process(t->pid, l, hits, RDMA_SCAN_MAX_HITS, &st);
	if (n < 0) {
		rdma_note(t, "cannot read the memory of pid %d: %s", t->pid, strerror(-n));
		return;
	}
	rdma_note(t,
		  "scanned %llu KiB of pid %d in %.1f ms (%llu KiB skipped): %d live context%s "
		  "(%llu look-alikes without a device rejected)",
		  (unsigned long long)(st.bytes_read >> 10), t->pid, st.elapsed_ns / 1e6,
		  (unsigned long long)(st.bytes_skipped >> 10), n, n == 1 ? "" : "s",
		  (unsigned long long)st.rejected);
	for (int i = 0; i < n; i++) {
		rdma_note(t, "context 0x%llx of pid %d found in its memory",
			  (unsigned long long)hits[i].ctx, t->pid);
		attach_ctx_fns(t, (__u32)t->pid, hits[i].fn, "live-context");
	}
}

/* Provider symbol names (static functions, visible only in .symtab/debug builds). */
static const char *const provider_prefixes[] = { "mlx5", "mlx4",       "rxe",   "siw", "bnxt_re",
						 "efa",  "hns_roce_u", "erdma", "si" };

static bool provider_like(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return strstr(b, "-rdmav") || !strncmp(b, "libmlx", 6) || !strncmp(b, "libefa", 6) ||
	       !strncmp(b, "libttstandin", 12);
}

/* Calls fn on every provider-like library pid maps, once each, as a path this process
 * can open. */
static void for_each_provider(struct rdma_tracer *t, void (*fn)(struct rdma_tracer *, const char *))
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
		/* through /proc/PID/root when the process is in a container */
		if (!rdma_map_path(t->pid, &m, path, sizeof(path)))
			fn(t, path);
	}
	fclose(f);
}

/* Path (0): a stripped provider's debug file found by build-id, or its .gnu_debugdata. */
static void by_debuginfo(struct rdma_tracer *t, const char *path)
{
	struct rdma_debug_syms *d;
	int found = 0;

	/* a --debug-dir given is a directory of this machine; the default one is looked
	 * for inside the process's root first (a container's own debug files) */
	if (rdma_debug_open(path, t->pid, t->debug_dir, !t->debug_dir_given, &d))
		return;
	for (size_t p = 0; p < ARRAY_SIZE(provider_prefixes); p++) {
		for (int fn = 0; fn < RDMA_FN__MAX; fn++) {
			char sym[64];
			__u64 off;

			if (t->explicit_fn[fn])
				continue;
			snprintf(sym, sizeof(sym), "%s_%s", provider_prefixes[p], rdma_fn_name(fn));
			if (!rdma_debug_find(d, sym, &off) &&
			    !add_target(t, fn, path, off, rdma_debug_how(d)))
				found++;
		}
	}
	rdma_note(t, "symbols of %s from %s: %d data-path function%s", path, rdma_debug_source(d),
		  found, found == 1 ? "" : "s");
	rdma_debug_close(d);
}

void rdma_resolve_by_debuginfo(struct rdma_tracer *t)
{
	for_each_provider(t, by_debuginfo);
}

/* Path (1): providers built with .symtab. */
static void by_symbol(struct rdma_tracer *t, const char *path)
{
	if (elf_has_symtab(path) != 1)
		return;
	for (size_t p = 0; p < ARRAY_SIZE(provider_prefixes); p++) {
		for (int fn = 0; fn < RDMA_FN__MAX; fn++) {
			char sym[64];
			bool symtab = false;
			__u64 off;

			if (t->explicit_fn[fn])
				continue;
			snprintf(sym, sizeof(sym), "%s_%s", provider_prefixes[p], rdma_fn_name(fn));
			if (!elf_find_function(path, sym, &off, &symtab) && symtab)
				add_target(t, fn, path, off, "symbol");
		}
	}
}

void rdma_resolve_by_symbol(struct rdma_tracer *t)
{
	for_each_provider(t, by_symbol);
}

int rdma_attach_explicit(struct rdma_tracer *t, const struct tt_opts *o, char *err, size_t errlen)
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
					 r == -ENOENT     ? "no such function (stripped library? "
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
int rdma_attach_control(struct rdma_tracer *t, char *err, size_t errlen)
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
		/* one site for a function's entry and return programs */
		t->ctl[h] = attach_at(
			t, progs[h], lib,
			uprobe_entry_offset(lib, off, UPROBE_READS_MEMORY | UPROBE_RETURN),
			ctl_hooks[h].ret);
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
			rdma_note(t, "sched_waking not attachable (%s): no rdma.cq_event",
				  strerror(errno));
	}
	rdma_note(t, "watching %s in %s (%d hooks) for verbs contexts",
		  t->pid ? "pid" : "every process", lib, n);
	return 0;
}

void rdma_set_window(struct rdma_tracer *t, bool open)
{
	if (open == t->window_open)
		return;
	t->window_open = open;
	for (size_t i = 0; i < t->ntgt; i++)
		if (t->tgt[i].fn == RDMA_FN_POLL_CQ && poll_links(t, i, open))
			t->attach_errors++;
}
