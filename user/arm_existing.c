// SPDX-License-Identifier: GPL-2.0
/* TX timestamping on connections that predate tailtrace. The sockops program arms it when a
 * connection is established; one established earlier (a model server's persistent
 * connections from its load balancer) would never get tx.sendq or tx.ack. The iter/tcp
 * program arms those, and a TCP iterator only walks the network namespace of the task that
 * opens it, so a helper thread enters every namespace it can find in turn. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "arm_existing.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct netns_ref {
	dev_t dev;
	ino_t ino;
	char path[64];
};

struct netns_set {
	struct netns_ref *v;
	size_t n, cap;
};

static void netns_add(struct netns_set *s, const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return; /* the process exited meanwhile */
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].dev == st.st_dev && s->v[i].ino == st.st_ino)
			return;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 32;
		struct netns_ref *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n].dev = st.st_dev;
	s->v[s->n].ino = st.st_ino;
	snprintf(s->v[s->n].path, sizeof(s->v[s->n].path), "%s", path);
	s->n++;
}

/* Namespaces of running processes, and named ones (`ip netns`) that may hold none. */
static void netns_collect(struct netns_set *s)
{
	char path[64];
	struct dirent *e;
	DIR *d;

	netns_add(s, "/proc/self/ns/net");
	d = opendir("/proc");
	if (d) {
		while ((e = readdir(d))) {
			if (e->d_name[0] < '1' || e->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "/proc/%.20s/ns/net", e->d_name);
			netns_add(s, path);
		}
		closedir(d);
	}
	d = opendir("/run/netns");
	if (d) {
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/run/netns/%.40s", e->d_name);
			netns_add(s, path);
		}
		closedir(d);
	}
}

/* One pass of the iterator in the calling thread's namespace: reading runs the program. */
static int iterate_once(int link_fd)
{
	char buf[64];
	ssize_t n;
	int fd = bpf_iter_create(link_fd);

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	close(fd);
	return n < 0 ? -errno : 0;
}

struct walk {
	int link_fd;
	struct netns_set set;
	struct arm_existing_result res;
};

static void *walk_namespaces(void *arg)
{
	struct walk *w = arg;

	for (size_t i = 0; i < w->set.n; i++) {
		const struct netns_ref *ns = &w->set.v[i];
		struct stat st;
		int fd = open(ns->path, O_RDONLY | O_CLOEXEC);

		/* a /proc/PID path may name another process by now: check it is the same one */
		if (fd < 0 || fstat(fd, &st) || st.st_dev != ns->dev || st.st_ino != ns->ino) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		/* only this thread moves: the rest of tailtrace stays where it was */
		if (setns(fd, CLONE_NEWNET) || iterate_once(w->link_fd))
			w->res.netns_failed++;
		else
			w->res.netns_walked++;
		close(fd);
	}
	return NULL;
}

int arm_existing_connections(struct bpf_program *iter_prog, struct arm_existing_result *res)
{
	struct walk w = { 0 };
	struct bpf_link *link;
	pthread_t th;
	int err;

	memset(res, 0, sizeof(*res));
	link = bpf_program__attach_iter(iter_prog, NULL);
	if (!link)
		return -errno;
	w.link_fd = bpf_link__fd(link);
	netns_collect(&w.set);
	err = pthread_create(&th, NULL, walk_namespaces, &w);
	if (!err)
		pthread_join(th, NULL);
	bpf_link__destroy(link);
	free(w.set.v);
	*res = w.res;
	return -err;
}
