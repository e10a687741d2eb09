// SPDX-License-Identifier: GPL-2.0
/* Uprobes through the PMU or, where the kernel asks CAP_SYS_ADMIN for that, through tracefs's
 * uprobe_events (uprobe_attach.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include "lib/uprobe_attach.h"
#include "lib/log.h"
#include "lib/util.h"

#define EVENT_GROUP "tailtrace_"

static const char *tracefs_dir(void)
{
	static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char p[64];

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		snprintf(p, sizeof(p), "%s/uprobe_events", dirs[i]);
		if (!access(p, F_OK))
			return dirs[i];
	}
	return NULL;
}

/* One command to uprobe_events: 0 or -errno. */
static int uprobe_events_write(const char *dir, const char *cmd)
{
	char p[64];
	size_t len = strlen(cmd);
	ssize_t n;
	int fd, err = 0;

	snprintf(p, sizeof(p), "%s/uprobe_events", dir);
	fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, cmd, len);
	if (n != (ssize_t)len)
		err = n < 0 ? -errno : -EIO;
	close(fd);
	return err;
}

static void event_delete(const char *dir, int pid, unsigned int seq)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "-:" EVENT_GROUP "%d/u%u\n", pid, seq);
	if (uprobe_events_write(dir, cmd) && log_verbose())
		fprintf(stderr, "cannot delete uprobe event %s", cmd + 2);
}

static int event_id(const char *dir, unsigned int seq)
{
	char p[128];
	FILE *f;
	int id = -1;

	snprintf(p, sizeof(p), "%s/events/" EVENT_GROUP "%d/u%u/id", dir, getpid(), seq);
	f = fopen(p, "re");
	if (!f)
		return -errno;
	if (fscanf(f, "%d", &id) != 1 || id < 0)
		id = -EINVAL;
	fclose(f);
	return id;
}

static struct bpf_link *attach_tracefs(struct uprobe_attacher *a, struct bpf_program *p, int pid,
				       const char *path, size_t off, bool ret)
{
	struct perf_event_attr attr = { .type = PERF_TYPE_TRACEPOINT, .size = sizeof(attr) };
	const char *dir = tracefs_dir();
	unsigned int seq = a->seq;
	struct bpf_link *l;
	char cmd[PATH_MAX + 96];
	struct stat st;
	int id, pfd, err;

	if (!dir)
		return errno = EACCES, NULL; /* the PMU's answer stands: no tracefs to try */
	/* the command is split at blanks; only a regular file is probed */
	if (strpbrk(path, " \t\n:") || stat(path, &st))
		return errno = errno ? errno : EINVAL, NULL;
	if (!S_ISREG(st.st_mode))
		return errno = EINVAL, NULL;
	if (ARRAY_RESERVE(a->ev, a->cap, a->nev + 1))
		return errno = ENOMEM, NULL;
	snprintf(cmd, sizeof(cmd), "%c:" EVENT_GROUP "%d/u%u %s:0x%zx\n", ret ? 'r' : 'p', getpid(),
		 seq, path, off);
	err = uprobe_events_write(dir, cmd);
	if (err)
		return errno = -err, NULL;
	a->seq++;
	id = event_id(dir, seq);
	if (id < 0) {
		err = id;
		goto fail;
	}
	attr.config = (__u64)id;
	attr.sample_period = 1;
	attr.wakeup_events = 1;
	/* pid -1: every process, then bound to a CPU as the PMU path is (the program runs
	 * wherever the probe fires) */
	pfd = (int)syscall(SYS_perf_event_open, &attr, pid < 0 ? -1 : pid, pid < 0 ? 0 : -1, -1,
			   PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0) {
		err = -errno;
		goto fail;
	}
	l = bpf_program__attach_perf_event(p, pfd);
	if (!l) {
		err = -errno;
		close(pfd);
		goto fail;
	}
	a->ev[a->nev++] = (struct uprobe_tracefs_event){ .link = l, .seq = seq };
	return l;
fail:
	event_delete(dir, getpid(), seq);
	errno = -err;
	return NULL;
}

struct bpf_link *uprobe_attacher__attach(struct uprobe_attacher *a, struct bpf_program *p, int pid,
					 const char *path, size_t off, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = ret);
	struct bpf_link *l;

	if (!a->pmu_refused) {
		l = bpf_program__attach_uprobe_opts(p, pid, path, off, &uo);
		if (l || (errno != EACCES && errno != EPERM))
			return l;
		a->pmu_refused = true;
		if (log_verbose())
			fprintf(stderr, "uprobe PMU refused (%s): uprobes through tracefs\n",
				strerror(errno));
	}
	return attach_tracefs(a, p, pid, path, off, ret);
}

void uprobe_attacher__detach(struct uprobe_attacher *a, struct bpf_link *l)
{
	const char *dir;

	if (!l)
		return;
	/* the perf event goes with the link; only then can its tracefs event be deleted */
	bpf_link__destroy(l);
	for (size_t i = 0; i < a->nev; i++) {
		if (a->ev[i].link != l)
			continue;
		dir = tracefs_dir();
		if (dir)
			event_delete(dir, getpid(), a->ev[i].seq);
		a->ev[i] = a->ev[--a->nev];
		return;
	}
}

void uprobe_attacher__free(struct uprobe_attacher *a)
{
	while (a->nev)
		uprobe_attacher__detach(a, a->ev[0].link);
	free(a->ev);
	a->ev = NULL;
	a->cap = 0;
}

int uprobe_tracefs_sweep(void)
{
	const char *dir = tracefs_dir();
	char p[64], *line = NULL;
	size_t cap = 0;
	int n = 0;
	FILE *f;

	if (!dir)
		return 0;
	snprintf(p, sizeof(p), "%s/uprobe_events", dir);
	f = fopen(p, "re");
	if (!f)
		return 0;
	while (getline(&line, &cap, f) > 0) {
		unsigned int seq;
		int pid;

		/* "p:tailtrace_PID/uN PATH:0xOFF" */
		if (sscanf(line, "%*c:" EVENT_GROUP "%d/u%u ", &pid, &seq) != 2 || pid <= 0 ||
		    pid == getpid() || !kill(pid, 0) || errno != ESRCH)
			continue;
		event_delete(dir, pid, seq);
		n++;
	}
	free(line);
	fclose(f);
	return n;
}
