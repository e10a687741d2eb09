// SPDX-License-Identifier: GPL-2.0
/* Benchmark helper: loads every program of a BPF object (tools/bench/empty.bpf.c), attaches
 * tracing programs to their tp_btf hook and sockops to the cgroup v2 root, optionally
 * turns on the kernel's run-time accounting (BPF_ENABLE_STATS, the same switch as
 * kernel.bpf_stats_enabled, held only while this process lives), prints "ready" and waits
 * for SIGINT/SIGTERM. Everything is a bpf_link or fd of this process, so it all goes away
 * with it.
 *
 *   empty_attach [-s] [-t] [OBJ]   -s: keep run-time stats on; -t: only the hooks of the
 *                                  always-on tier (tracepoints whose programs in
 *                                  bpf/program_catalogue.h are not PF_DEEP); without OBJ:
 *                                  stats only */
#include <errno.h>
#include <fcntl.h>
#include <mntent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "../../bpf/program_catalogue.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* The catalogue's tracepoint rows: which hooks the deep tier holds. */
struct hook_row {
	const char *target; /* "group:event" */
	int feed;
	unsigned int flags;
};

#define HOOK_ROW(prog, event, rank, feed, target, nargs, flags) { target, feed, flags },
static const struct hook_row hook_rows[] = { TT_PROGRAM_CATALOGUE(HOOK_ROW) };

/* A tp_btf program's section names its tracepoint's event: deep when a catalogue program on
 * that tracepoint is. */
static bool hook_is_deep(const struct bpf_program *p)
{
	const char *sec = bpf_program__section_name(p), *ev;

	if (strncmp(sec, "tp_btf/", 7))
		return false;
	for (size_t i = 0; i < sizeof(hook_rows) / sizeof(hook_rows[0]); i++) {
		ev = strchr(hook_rows[i].target, ':');
		if (hook_rows[i].feed == FEED_TP_BTF && ev && !strcmp(ev + 1, sec + 7) &&
		    (hook_rows[i].flags & PF_DEEP))
			return true;
	}
	return false;
}

static int cgroup2_root_fd(void)
{
	struct mntent *m;
	FILE *f = setmntent("/proc/self/mounts", "r");
	int fd = -ENOENT;

	if (!f)
		return -errno;
	while ((m = getmntent(f))) {
		if (!strcmp(m->mnt_type, "cgroup2")) {
			fd = open(m->mnt_dir, O_RDONLY | O_DIRECTORY);
			if (fd < 0)
				fd = -errno;
			break;
		}
	}
	endmntent(f);
	return fd;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj = NULL;
	struct bpf_program *p;
	int stats_fd = -1, cg_fd = -1, nattached = 0, ret = 1, argi = 1;
	const char *path = NULL;
	bool tier_only = false;

	if (argi < argc && !strcmp(argv[argi], "-s")) {
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (stats_fd < 0) {
			fprintf(stderr, "empty_attach: BPF_ENABLE_STATS: %s\n",
				strerror(-stats_fd));
			return 1;
		}
		argi++;
	}
	if (argi < argc && !strcmp(argv[argi], "-t")) {
		tier_only = true;
		argi++;
	}
	if (argi < argc)
		path = argv[argi];
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (path) {
		obj = bpf_object__open_file(path, NULL);
		if (!obj) {
			fprintf(stderr, "empty_attach: open %s: %s\n", path, strerror(errno));
			goto cleanup;
		}
		if (bpf_object__load(obj)) {
			fprintf(stderr, "empty_attach: load %s: %s\n", path, strerror(errno));
			goto cleanup;
		}
		bpf_object__for_each_program (p, obj) {
			enum bpf_prog_type t = bpf_program__type(p);
			struct bpf_link *l;

			if (tier_only && hook_is_deep(p))
				continue;
			if (t == BPF_PROG_TYPE_SOCK_OPS || t == BPF_PROG_TYPE_CGROUP_SKB) {
				if (cg_fd < 0)
					cg_fd = cgroup2_root_fd();
				l = cg_fd >= 0 ? bpf_program__attach_cgroup(p, cg_fd) : NULL;
			} else {
				l = bpf_program__attach(p);
			}
			/* links are freed with the process; a hook this kernel lacks is skipped */
			if (!l)
				fprintf(stderr, "empty_attach: %s not attached: %s\n",
					bpf_program__name(p), strerror(errno));
			else
				nattached++;
		}
	}
	printf("ready %d\n", nattached);
	fflush(stdout);
	while (!stop)
		pause();
	ret = 0;
cleanup:
	bpf_object__close(obj);
	if (cg_fd >= 0)
		close(cg_fd);
	if (stats_fd >= 0)
		close(stats_fd);
	return ret;
}
