// SPDX-License-Identifier: GPL-2.0
/* rdma.ucx_op and rdma.ucx_rtt: the UCP request API of libucp (bpf/ucx.bpf.h). UCX's
 * accelerated transports write work requests to the NIC themselves and never call the
 * verbs provider's post_send, so transfers made through UCX (NIXL's KV-cache moves) are
 * timed one level up: from ucp_*_nbx to the request's completion, and from a send to the
 * completion of the receive that answers it. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "rdma/rdma_tracer_int.h"
#include "rdma.skel.h"
#include "rdma/rdma_resolve.h"
#include "rdma/rdma_proof.h"
#include "lib/uprobe_entry.h"
#include "lib/util.h"

/* Attaches at probe offset off (uprobe_entry_offset: the same for a function's entry and
 * return programs). */
static struct bpf_link *ucx_attach(struct rdma_tracer *t, struct bpf_program *p, int pid,
				   const char *path, __u64 off, bool ret)
{
	struct bpf_link *l;

	if (t->nucx_links == RDMA_UCX_LINKS_MAX)
		return NULL;
	l = uprobe_attacher__attach(&t->up, p, pid, path, (size_t)off, ret);
	if (l)
		t->ucx_links[t->nucx_links++] = l;
	return l;
}

/* The transports the process asked UCX for (UCX_TLS in its environment); which one UCX
 * picked per endpoint lives in private structures and is not read. */
static void read_tls(int pid, char *out, size_t len)
{
	char p[64], env[16384];
	ssize_t n;
	int fd;

	snprintf(out, len, "%s", pid ? "default (UCX_TLS not set)" : "unknown (no -p)");
	if (!pid)
		return;
	snprintf(p, sizeof(p), "/proc/%d/environ", pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, env, sizeof(env) - 1);
	close(fd);
	if (n <= 0)
		return;
	env[n] = '\0';
	for (char *e = env; e < env + n; e += strlen(e) + 1)
		if (!strncmp(e, "UCX_TLS=", 8))
			snprintf(out, len, "%s", e + 8);
}

int rdma_ucx_attach(struct rdma_tracer *t)
{
	const struct {
		const char *sym;
		struct bpf_program *enter;
	} ops[] = {
		{ "ucp_put_nbx", t->skel->progs.ucx_put_enter },
		{ "ucp_get_nbx", t->skel->progs.ucx_get_enter },
		{ "ucp_tag_send_nbx", t->skel->progs.ucx_tag_send_enter },
		{ "ucp_am_send_nbx", t->skel->progs.ucx_am_send_enter },
		{ "ucp_stream_send_nbx", t->skel->progs.ucx_stream_send_enter },
		{ "ucp_tag_recv_nbx", t->skel->progs.ucx_tag_recv_enter },
		{ "ucp_stream_recv_nbx", t->skel->progs.ucx_stream_recv_enter },
	};
	/* request tests: the request first, its status returned */
	static const char *const tests[] = { "ucp_request_check_status",
					     "ucp_tag_recv_request_test",
					     "ucp_stream_recv_request_test" };
	char lib[PATH_MAX], fdp[32];
	int n = 0, fd, pid = t->pid ? t->pid : -1, e;
	__u64 off;

	if (rdma_find_exported(t->pid, "ucp_put_nbx", "libucp.so.0", lib, sizeof(lib), &off, &fd))
		return -ENOENT;
	/* libucp's exported functions, found by their symbols in the file opened here */
	rdma_fd_path(fd, fdp, sizeof(fdp));
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
		if (elf_find_function(fdp, ops[i].sym, &off, NULL))
			continue;
		/* the entry program reads the request parameters */
		off = uprobe_entry_offset(fdp, off, UPROBE_READS_MEMORY | UPROBE_RETURN);
		/* the return probe first: an entry without it would leave per-thread state */
		if (ucx_attach(t, t->skel->progs.ucx_op_exit, pid, fdp, off, true) &&
		    ucx_attach(t, ops[i].enter, pid, fdp, off, false))
			n++;
	}
	for (size_t i = 0; i < ARRAY_SIZE(tests); i++) {
		if (elf_find_function(fdp, tests[i], &off, NULL))
			continue;
		off = uprobe_entry_offset(fdp, off, UPROBE_RETURN); /* reads the request pointer */
		if (ucx_attach(t, t->skel->progs.ucx_check_exit, pid, fdp, off, true))
			ucx_attach(t, t->skel->progs.ucx_check_enter, pid, fdp, off, false);
	}
	e = errno;
	close(fd);
	if (!n)
		return e ? -e : -EPERM;
	snprintf(t->ucx.lib, sizeof(t->ucx.lib), "%s", lib);
	read_tls(t->pid, t->ucx.tls, sizeof(t->ucx.tls));
	t->ucx.ops = n;
	rdma_note(t, "ucx: %d UCP operations hooked in %s (UCX_TLS: %s)", n, rdma_esc(lib),
		  rdma_esc(t->ucx.tls));
	return 0;
}

/* A function of UCX's own libraries: a callback there (ucs_empty_function, which
 * ucp_stream_recv_nb passes) is a no-op UCX's internals call all the time, so a probe
 * on it would trap on every one of those calls and time nothing of the application's. */
static bool ucx_own_file(const char *path)
{
	static const char *const libs[] = { "libucs.so", "libucp.so", "libuct.so", "libucm.so" };
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (size_t i = 0; i < ARRAY_SIZE(libs); i++)
		if (!strncmp(base, libs[i], strlen(libs[i])))
			return true;
	return false;
}

/* A completion callback named in a request's parameters: where the request completes. */
int rdma_on_ucx_event(void *ctx, void *data, size_t len)
{
	const struct ucx_cb_event *e = data;
	struct rdma_tracer *t = ctx;
	struct rdma_ucx_cb *cb;
	char path[PATH_MAX], moved[80], fdp[32], why[PATH_MAX + 128];
	__u64 off, probe;
	int err, fd;

	if (len < sizeof(*e))
		return 0;
	/* the callback pointer is the process's word: attached to only at a function start
	 * of the file it lands in, proven from that file, and in that process only (the
	 * application's own code: it cannot reach another process) */
	err = rdma_prove_hint((int)e->tgid, e->cb, false, &fd, path, sizeof(path), &off, why,
			      sizeof(why));
	if (err) {
		rdma_note(t, "ucx: not attaching the callback 0x%llx of pid %u: %s",
			  (unsigned long long)e->cb, e->tgid, why);
		return 0;
	}
	if (ucx_own_file(path)) {
		rdma_note(t,
			  "ucx: callback at %s:0x%llx is UCX's own (its internals call it too): "
			  "not attached, its requests complete at their request test",
			  rdma_esc(path), (unsigned long long)off);
		close(fd);
		return 0;
	}
	for (int i = 0; i < t->ucx.ncb; i++)
		if (t->ucx.cb[i].offset == off && !strcmp(t->ucx.cb[i].path, path) &&
		    t->ucx.cb[i].pid == (int)e->tgid) {
			close(fd);
			return 0;
		}
	rdma_fd_path(fd, fdp, sizeof(fdp));
	/* its program reads two argument registers only */
	probe = uprobe_entry_offset(fdp, off, 0);
	if (t->ucx.ncb == RDMA_UCX_CB_MAX ||
	    !ucx_attach(t, t->skel->progs.ucx_complete, (int)e->tgid, fdp, probe, false)) {
		rdma_note(t, "ucx: cannot attach the completion callback at %s:0x%llx: %s",
			  rdma_esc(path), (unsigned long long)off, strerror(errno));
		close(fd);
		return 0;
	}
	close(fd);
	cb = &t->ucx.cb[t->ucx.ncb++];
	snprintf(cb->path, sizeof(cb->path), "%s", path);
	cb->offset = off;
	cb->pid = (int)e->tgid;
	uprobe_moved_note(moved, sizeof(moved), off, probe);
	rdma_note(t, "ucx: completion callback at %s:0x%llx%s", rdma_esc(path),
		  (unsigned long long)off, moved);
	return 0;
}

const struct rdma_ucx_info *rdma_tracer__ucx(const struct rdma_tracer *t)
{
	return t->ucx.ops ? &t->ucx : NULL;
}
