// SPDX-License-Identifier: GPL-2.0
/* The uprobes the collector puts into user libraries on request: libcuda's synchronising
 * calls (--cuda) and OpenSSL's reads and writes (--tls-uprobes). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "collect/collector_int.h"
#include "collect/tls_probes.h"
#include "lib/log.h"
#include "lib/uprobe_entry.h"
#include "lib/util.h"
#include "tailtrace.skel.h"

static const char *const cuda_syncs[] = { "cuStreamSynchronize", "cuEventSynchronize",
					  "cuCtxSynchronize" };

static const char *find_libcuda(void)
{
	static const char *const paths[] = { "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
					     "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
					     "/usr/lib64/libcuda.so.1",
					     "/usr/local/cuda/lib64/libcuda.so.1",
					     "/usr/lib/wsl/lib/libcuda.so.1" };
	const char *env = getenv("TAILTRACE_LIBCUDA");

	if (env && *env)
		return access(env, R_OK) ? NULL : env;
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++)
		if (!access(paths[i], R_OK))
			return paths[i];
	return NULL;
}

/* --cuda: entry and return uprobes on libcuda's synchronising calls. */
int collector_attach_cuda(struct collector *c, const struct collector_config *o, char *err,
			  size_t errlen, bool *usage)
{
	const char *lib = find_libcuda();
	int r;

	if (!lib) {
		*usage = true;
		return collector_fail(
			err, errlen, -ENOENT,
			"--cuda: libcuda.so.1 not found (set TAILTRACE_LIBCUDA=PATH)");
	}
	for (size_t i = 0; i < ARRAY_SIZE(cuda_syncs); i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = cuda_syncs[i]);
		pid_t pid = o->pid ? (pid_t)o->pid : -1;

		uo.retprobe = false;
		r = collector_add_link(
			c, bpf_program__attach_uprobe_opts(c->skel->progs.tt_cuda_sync_enter, pid,
							   lib, 0, &uo));
		if (!r) {
			uo.retprobe = true;
			r = collector_add_link(
				c, bpf_program__attach_uprobe_opts(c->skel->progs.tt_cuda_sync_exit,
								   pid, lib, 0, &uo));
		}
		if (r)
			return collector_fail(err, errlen, r,
					      "--cuda: attaching to %s in %s failed: %s",
					      cuda_syncs[i], lib, strerror(-r));
	}
	return 0;
}

/* --tls-uprobes: entry probes on libssl's SSL_write, SSL_write_ex, SSL_read and
 * SSL_read_ex, and a return probe on each, in the -p process only (its breakpoints are
 * written into no other process), else in every process mapping the host's libssl. */
int collector_attach_tls(struct collector *c, const struct collector_config *o, char *err,
			 size_t errlen, bool *usage)
{
	struct bpf_program *enter[TLS_FN__MAX] = {
		[TLS_FN_WRITE] = c->skel->progs.tt_tls_write_enter,
		[TLS_FN_WRITE_EX] = c->skel->progs.tt_tls_write_ex_enter,
		[TLS_FN_READ] = c->skel->progs.tt_tls_read_enter,
		[TLS_FN_READ_EX] = c->skel->progs.tt_tls_read_ex_enter,
	};
	int pid = o->pid ? (int)o->pid : -1, r = 0;
	struct tls_lib lib;

	r = tls_lib_open(o->pid ? (int)o->pid : 0, &lib, err, errlen);
	if (r) {
		*usage = r == -ENOENT;
		return r;
	}
	for (int i = 0; i < TLS_FN__MAX && !r; i++) {
		/* past an endbr64 when it opens the function (uprobe_entry.h): the entry
		 * program reads only argument registers, the return probe shares the site */
		__u64 off =
			lib.off[i] ? uprobe_entry_offset(lib.path, lib.off[i], UPROBE_RETURN) : 0;
		char moved[96];

		uprobe_moved_note(moved, sizeof(moved), lib.off[i], off);
		if (off && log_verbose())
			fprintf(stderr, "--tls-uprobes: %s at 0x%llx%s\n", tls_fn_name(i),
				(unsigned long long)lib.off[i], moved);
		for (int ret = 0; ret < 2 && !r; ret++) {
			struct bpf_program *p = ret ? c->skel->progs.tt_tls_exit : enter[i];
			struct bpf_link *l;

			if (!off)
				continue;
			l = uprobe_attacher__attach(&c->up, p, pid, lib.path, off, ret);
			if (!l) {
				r = -errno;
				collector_fail(err, errlen, r,
					       "--tls-uprobes: attaching to %s in %s failed: %s",
					       tls_fn_name(i), lib.shown, strerror(-r));
				break;
			}
			c->tls_links[c->ntls_links++] = l;
		}
	}
	if (!r && log_verbose())
		fprintf(stderr, "--tls-uprobes: %d uprobes in %s%s\n", c->ntls_links, lib.shown,
			o->pid ? "" : " (every process)");
	tls_lib_close(&lib);
	return r;
}
