// SPDX-License-Identifier: GPL-2.0
/* Where the RDMA data path is and its uprobes: explicit --rdma-probe targets, debug
 * symbols (by build-id, .gnu_debugdata), provider symbols (.symtab), and the live ops table the
 * control hooks on the exported verbs report (discovery events); the poll side's links come and go
 * with the sampling window. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "rdma/rdma_tracer_int.h"
#include "rdma.skel.h"
#include "rdma/rdma_resolve.h"
#include "rdma/rdma_debuginfo.h"
#include "rdma/rdma_proof.h"
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

/* pid: the one process the probe fires in (its breakpoint is written into no other), -1
 * for every process mapping the file */
static struct bpf_link *attach_at(struct rdma_tracer *t, struct bpf_program *p, int pid,
				  const char *path, __u64 off, bool ret)
{
	return uprobe_attacher__attach(&t->up, p, pid, path, (size_t)off, ret);
}

static int poll_links(struct rdma_tracer *t, size_t i, bool on)
{
	struct rdma_target *g = &t->tgt[i];
	int err;

	char fdp[32];

	if (on == g->attached || g->gone)
		return 0;
	if (!on) {
		/* exit first: a return probe without its entry only finds no state */
		uprobe_attacher__detach(&t->up, t->ret[i]);
		uprobe_attacher__detach(&t->up, t->entry[i]);
		t->ret[i] = t->entry[i] = NULL;
		g->attached = false;
		return 0;
	}
	rdma_fd_path(g->fd, fdp, sizeof(fdp));
	if (!g->attach_begin_ns)
		g->attach_begin_ns = mono_ns();
	t->ret[i] =
		attach_at(t, fn_prog(t, RDMA_FN_POLL_CQ, true), g->pid, fdp, g->probe_offset, true);
	if (!t->ret[i]) {
		/* the process exited: its target stays, detached */
		if (errno == ESRCH) {
			g->gone = true;
			return 0;
		}
		return -errno;
	}
	t->entry[i] = attach_at(t, fn_prog(t, RDMA_FN_POLL_CQ, false), g->pid, fdp, g->probe_offset,
				false);
	if (!t->entry[i]) {
		err = -errno;
		uprobe_attacher__detach(&t->up, t->ret[i]);
		t->ret[i] = NULL;
		return err;
	}
	g->attached = true;
	if (!g->attach_end_ns)
		g->attach_end_ns = mono_ns();
	/* completions of the WRs posted so far may have gone unseen: the BPF side treats
	 * their matches as uncertain from here on */
	__sync_fetch_and_add(&t->skel->bss->poll_gen, 1);
	return 0;
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

/* Where a data-path probe fires: the traced process only, unless --rdma-host-wide. */
static int attach_pid(const struct rdma_tracer *t, int tgid)
{
	return t->host_wide ? -1 : tgid;
}

/* The name to show for a file of pid: through /proc/PID/root when it lives in another
 * mount namespace (a container), where the bare path would name another file here. */
static const char *rdma_shown_path(int pid, const char *path, char *out, size_t len)
{
	struct stat sa, sb;
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/ns/mnt", pid);
	if (pid > 0 && !stat(p, &sa) && !stat("/proc/self/ns/mnt", &sb) && sa.st_ino != sb.st_ino)
		snprintf(out, len, "/proc/%d/root%s", pid, path);
	else
		snprintf(out, len, "%s", path);
	return out;
}

const char *rdma_open_why(int err)
{
	switch (err) {
	case -EPERM:
		return "not a regular file";
	case -ESTALE:
		return "not the file the process mapped (another inode)";
	case -EFBIG:
		return "larger than the 256 MiB tailtrace reads";
	default:
		return strerror(-err);
	}
}

/* Adds and attaches a data-path target unless the same function is already traced in the
 * same process. fd is the file as tailtrace opened it (kept for the poll side's windows);
 * path only names it. */
static int add_target(struct rdma_tracer *t, int fn, int fd, const char *path, __u64 off,
		      const char *how, int pid)
{
	char moved[80], fdp[32];
	struct rdma_target *g;
	struct stat st;
	size_t i;
	int err = 0;

	if (fstat(fd, &st))
		return -errno;
	for (i = 0; i < t->ntgt; i++)
		if (t->tgt[i].inode == st.st_ino && t->tgt[i].offset == off &&
		    (t->tgt[i].pid == pid || t->tgt[i].pid == -1))
			return 0;
	if (t->ntgt == RDMA_TARGETS_MAX)
		return -E2BIG;
	i = t->ntgt;
	g = &t->tgt[i];
	memset(g, 0, sizeof(*g));
	g->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (g->fd < 0)
		return -errno;
	g->fn = fn;
	g->pid = pid;
	snprintf(g->path, sizeof(g->path), "%s", path);
	g->offset = off;
	rdma_fd_path(g->fd, fdp, sizeof(fdp));
	/* read once: poll targets attach again every sampling window; the post programs
	 * read the work requests, the poll programs the completions after a return */
	g->probe_offset = uprobe_entry_offset(
		fdp, off,
		fn == RDMA_FN_POLL_CQ ? UPROBE_READS_MEMORY | UPROBE_RETURN : UPROBE_READS_MEMORY);
	g->inode = st.st_ino;
	g->how = how;
	if (fn == RDMA_FN_POLL_CQ) {
		if (t->full || t->window_open)
			err = poll_links(t, i, true);
	} else {
		g->attach_begin_ns = mono_ns();
		t->entry[i] = attach_at(t, fn_prog(t, fn, false), pid, fdp, g->probe_offset, false);
		g->attach_end_ns = mono_ns();
		if (!t->entry[i])
			err = -errno;
		else
			g->attached = true;
		/* from now on, a completion without a post was posted before we looked */
		if (g->attached && !t->skel->bss->post_attached_ns)
			t->skel->bss->post_attached_ns = mono_ns();
	}
	if (err) {
		close(g->fd);
		t->attach_errors++;
		return err;
	}
	t->ntgt++;
	uprobe_moved_note(moved, sizeof(moved), off, g->probe_offset);
	rdma_note(t, "%s at %s:0x%llx (%s)%s%s%s", rdma_fn_name(fn), rdma_esc(path),
		  (unsigned long long)off, how,
		  fn == RDMA_FN_POLL_CQ && !t->full ? ", sampled" : "",
		  pid == -1 ? ", every process" : "", moved);
	return 0;
}

int rdma_prove_hint(int tgid, __u64 addr, bool provider_only, int *fd, char *path, size_t pathlen,
		    __u64 *off, char *why, size_t whylen)
{
	unsigned char id[RDMA_BUILD_ID_MAX];
	struct func_starts fs = { 0 };
	char fdp[32], idhex[2 * 20 + 1] = "";
	struct proc_map m;
	int err, n;

	*fd = -1;
	err = rdma_addr_to_file(tgid, addr, &m, off);
	if (err) {
		snprintf(why, whylen, "not in a file the process maps");
		return err;
	}
	snprintf(path, pathlen, "%s", m.path);
	if (provider_only && !provider_like(m.path)) {
		snprintf(why, whylen, "in %s, not a verbs provider library", rdma_esc(m.path));
		return -EPERM;
	}
	err = rdma_map_open(tgid, &m);
	if (err < 0) {
		snprintf(why, whylen, "in %s: %s", rdma_esc(m.path), rdma_open_why(err));
		return err;
	}
	*fd = err;
	rdma_shown_path(tgid, m.path, path, pathlen);
	rdma_fd_path(*fd, fdp, sizeof(fdp));
	n = elf_build_id(fdp, id, sizeof(id));
	for (int i = 0; i < n && i < 20; i++)
		snprintf(idhex + 2 * i, 3, "%02x", id[i]);
	if (n <= 0) {
		snprintf(why, whylen, "in %s, which has no build id", rdma_esc(m.path));
		err = -ENOEXEC;
	} else if ((err = elf_function_starts(fdp, &fs))) {
		snprintf(why, whylen, "in %s: %s", rdma_esc(m.path), strerror(-err));
	} else if (!func_starts_has(&fs, *off)) {
		snprintf(why, whylen,
			 "%s:0x%llx (build id %s) is not where a function of it starts",
			 rdma_esc(m.path), (unsigned long long)*off, idhex);
		err = -EPERM;
	}
	func_starts_free(&fs);
	if (err) {
		close(*fd);
		*fd = -1;
	}
	return err;
}

/* Attaches the data-path functions a context's ops table points at (runtime addresses
 * of process tgid), unless an explicit probe covers the role. The addresses are the
 * process's word only: each is attached to only where it is the start of a function of a
 * provider library, proven from the file itself. */
static void attach_ctx_fns(struct rdma_tracer *t, __u32 tgid, const __u64 *fns, const char *how)
{
	for (int fn = 0; fn < RDMA_FN__MAX; fn++) {
		char path[PATH_MAX], why[PATH_MAX + 128];
		__u64 off;
		int err, fd;

		if (t->explicit_fn[fn] || !fns[fn])
			continue;
		err = rdma_prove_hint((int)tgid, fns[fn], true, &fd, path, sizeof(path), &off, why,
				      sizeof(why));
		if (err) {
			rdma_note(t, "not attaching ops.%s = 0x%llx of pid %u: %s",
				  rdma_fn_name(fn), (unsigned long long)fns[fn], tgid, why);
			continue;
		}
		err = add_target(t, fn, fd, path, off, how, attach_pid(t, (int)tgid));
		close(fd);
		if (err)
			rdma_note(t, "cannot attach %s at %s:0x%llx: %s", rdma_fn_name(fn),
				  rdma_esc(path), (unsigned long long)off, strerror(-err));
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

/* Calls fn on every provider-like library pid maps, once each, opened through the
 * process's root (fd, and the name to show). */
static void for_each_provider(struct rdma_tracer *t,
			      void (*fn)(struct rdma_tracer *, int, const char *))
{
	char last[PATH_MAX] = "", shown[PATH_MAX + 32];
	struct proc_map m;
	char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int fd;

	if (!t->pid)
		return;
	f = proc_maps_open(t->pid);
	if (!f)
		return;
	while (!proc_maps_next(f, &line, &cap, &m)) {
		if (!m.inode || m.path[0] != '/' || !strcmp(m.path, last) || !provider_like(m.path))
			continue;
		snprintf(last, sizeof(last), "%s", m.path);
		fd = rdma_map_open(t->pid, &m);
		if (fd < 0) {
			rdma_note(t, "not reading %s: %s", rdma_esc(m.path), rdma_open_why(fd));
			continue;
		}
		fn(t, fd, rdma_shown_path(t->pid, m.path, shown, sizeof(shown)));
		close(fd);
	}
	free(line);
	fclose(f);
}

/* Path (0): a stripped provider's debug file found by build-id, or its .gnu_debugdata. */
static void by_debuginfo(struct rdma_tracer *t, int fd, const char *path)
{
	struct rdma_debug_syms *d;
	char fdp[32];
	int found = 0;

	/* a --debug-dir given is a directory of this machine; the default one is looked
	 * for inside the process's root first (a container's own debug files) */
	rdma_fd_path(fd, fdp, sizeof(fdp));
	if (rdma_debug_open(fdp, t->pid, t->debug_dir, !t->debug_dir_given, &d))
		return;
	for (size_t p = 0; p < ARRAY_SIZE(provider_prefixes); p++) {
		for (int fn = 0; fn < RDMA_FN__MAX; fn++) {
			char sym[64];
			__u64 off;

			if (t->explicit_fn[fn])
				continue;
			snprintf(sym, sizeof(sym), "%s_%s", provider_prefixes[p], rdma_fn_name(fn));
			if (!rdma_debug_find(d, sym, &off) &&
			    !add_target(t, fn, fd, path, off, rdma_debug_how(d),
					attach_pid(t, t->pid)))
				found++;
		}
	}
	rdma_note(t, "symbols of %s from %s: %d data-path function%s", rdma_esc(path),
		  rdma_debug_source(d), found, found == 1 ? "" : "s");
	rdma_debug_close(d);
}

void rdma_resolve_by_debuginfo(struct rdma_tracer *t)
{
	for_each_provider(t, by_debuginfo);
}

/* Path (1): providers built with .symtab. */
static void by_symbol(struct rdma_tracer *t, int fd, const char *path)
{
	char fdp[32];

	rdma_fd_path(fd, fdp, sizeof(fdp));
	if (elf_has_symtab(fdp) != 1)
		return;
	for (size_t p = 0; p < ARRAY_SIZE(provider_prefixes); p++) {
		for (int fn = 0; fn < RDMA_FN__MAX; fn++) {
			char sym[64];
			bool symtab = false;
			__u64 off;

			if (t->explicit_fn[fn])
				continue;
			snprintf(sym, sizeof(sym), "%s_%s", provider_prefixes[p], rdma_fn_name(fn));
			if (!elf_find_function(fdp, sym, &off, &symtab) && symtab)
				add_target(t, fn, fd, path, off, "symbol", attach_pid(t, t->pid));
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
		char path[PATH_MAX], fdp[32];
		__u64 off;
		int r, fd;

		if (rdma_spec_parse(o->rdma_probes[i], &s, err, errlen))
			return -EINVAL;
		if (rdma_find_library(t->pid, s.lib, path, sizeof(path), &fd)) {
			snprintf(err, errlen, "--rdma-probe %s: library '%s' not found%s",
				 o->rdma_probes[i], s.lib,
				 t->pid ? " (neither mapped by the process nor in the library "
					  "directories)"
					: "");
			return -EINVAL;
		}
		off = s.offset;
		rdma_fd_path(fd, fdp, sizeof(fdp));
		if (!s.has_offset) {
			r = elf_find_function(fdp, s.symbol, &off, NULL);
			if (r) {
				close(fd);
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
		/* the user's own choice of file and offset: host-wide without -p */
		r = add_target(t, s.role, fd, path, off, "--rdma-probe", t->pid ? t->pid : -1);
		close(fd);
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
	char lib[PATH_MAX], fdp[32];
	__u64 off;
	int n = 0, fd;

	if (rdma_find_exported(t->pid, "ibv_open_device", "libibverbs.so.1", lib, sizeof(lib), &off,
			       &fd)) {
		snprintf(err, errlen,
			 t->pid ? "pid %d maps no verbs library (nothing exports ibv_open_device);"
				  " give --rdma-probe LIB:SYMBOL|ROLE=LIB:0xOFFSET"
				: "libibverbs.so.1 not found%.0d; give -p PID or --rdma-probe",
			 t->pid);
		return -ENOENT;
	}
	rdma_fd_path(fd, fdp, sizeof(fdp));
	/* exported entry points found by their symbols: without -p they are hooked in every
	 * process, the discovery of processes that start later; they only read memory */
	for (int h = 0; h < CTL__MAX; h++) {
		if (elf_find_function(fdp, ctl_hooks[h].sym, &off, NULL))
			continue;
		/* one site for a function's entry and return programs */
		t->ctl[h] = attach_at(
			t, progs[h], t->pid ? t->pid : -1, fdp,
			uprobe_entry_offset(fdp, off, UPROBE_READS_MEMORY | UPROBE_RETURN),
			ctl_hooks[h].ret);
		if (t->ctl[h])
			n++;
	}
	if (!t->ctl[CTL_OPEN_DEVICE] && !t->ctl[CTL_CREATE_QP_RET]) {
		int e = errno;

		close(fd);
		snprintf(err, errlen, "cannot attach uprobes to %s: %s", rdma_esc(lib),
			 strerror(e));
		return e ? -e : -EPERM;
	}
	t->ctl_fd = fd;
	/* the wake-up side of rdma.cq_event: only worth its cost with the call hooked */
	if (t->ctl[CTL_CQ_EVENT_ENTER] && t->ctl[CTL_CQ_EVENT_EXIT]) {
		t->waking = bpf_program__attach(t->skel->progs.rdma_waking);
		if (!t->waking)
			rdma_note(t, "sched_waking not attachable (%s): no rdma.cq_event",
				  strerror(errno));
	}
	rdma_note(t, "watching %s in %s (%d hooks) for verbs contexts",
		  t->pid ? "pid" : "every process", rdma_esc(lib), n);
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
