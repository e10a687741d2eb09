// SPDX-License-Identifier: GPL-2.0
/* Kubernetes pod and container of a cgroup from its path, and a cgroup's path from its id:
 * what `--by pod` needs without asking the kube API. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collect/k8s.h"
#include "lib/util.h"

/* 8-4-4-4-12 hex digits; the systemd driver writes '_' for '-' (a '-' in a slice name
 * means nesting), so both are taken and '-' is written. */
static bool take_uid(const char *s, size_t n, char out[37])
{
	if (n != 36)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? (s[i] != '-' && s[i] != '_') : !isxdigit((unsigned char)s[i]))
			return false;
		out[i] = dash ? '-' : (char)tolower((unsigned char)s[i]);
	}
	out[36] = '\0';
	return true;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !memcmp(s + n - k, suffix, k);
}

/* A pod's cgroup: "...-pod<UID>.slice" (systemd driver) or "pod<UID>" (cgroupfs). */
static bool pod_component(const char *c, size_t n, char uid[37])
{
	if (ends_with(c, n, ".slice"))
		return n >= 6 + 36 + 4 && !memcmp(c + n - 46, "-pod", 4) &&
		       take_uid(c + n - 42, 36, uid);
	return n > 3 && !memcmp(c, "pod", 3) && take_uid(c + 3, n - 3, uid);
}

/* A container's cgroup: "<runtime prefix><ID>.scope" (systemd driver) or "<ID>". */
static bool container_component(const char *c, size_t n, struct k8s_ident *id)
{
	static const struct {
		const char *prefix, *runtime;
	} rt[] = { { "cri-containerd-", "containerd" },
		   { "crio-conmon-", "crio-conmon" },
		   { "crio-", "crio" },
		   { "docker-", "docker" } };
	const char *runtime = "";

	if (ends_with(c, n, ".scope"))
		n -= 6;
	for (size_t i = 0; i < ARRAY_SIZE(rt); i++) {
		size_t k = strlen(rt[i].prefix);

		if (n > k && !memcmp(c, rt[i].prefix, k)) {
			c += k;
			n -= k;
			runtime = rt[i].runtime;
			break;
		}
	}
	if (n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)c[i]))
			return false;
	memcpy(id->container_id, c, 64);
	id->container_id[64] = '\0';
	snprintf(id->runtime, sizeof(id->runtime), "%s", runtime);
	return true;
}

int k8s_ident_from_cgroup(const char *path, struct k8s_ident *id)
{
	bool kube = false, pod = false;
	const char *c = path, *end;

	memset(id, 0, sizeof(*id));
	for (; *c; c = *end ? end + 1 : end) {
		size_t n;

		end = strchrnul(c, '/');
		n = (size_t)(end - c);
		if (!n)
			continue;
		if (pod) {
			container_component(c, n, id);
			break;
		}
		if (memmem(c, n, "kubepods", 8))
			kube = true;
		if (!kube)
			continue;
		if (memmem(c, n, "burstable", 9))
			snprintf(id->qos, sizeof(id->qos), "burstable");
		else if (memmem(c, n, "besteffort", 10))
			snprintf(id->qos, sizeof(id->qos), "besteffort");
		pod = pod_component(c, n, id->pod_uid);
	}
	if (!pod) {
		memset(id, 0, sizeof(*id));
		return -ENOENT;
	}
	if (!id->qos[0])
		snprintf(id->qos, sizeof(id->qos), "guaranteed");
	return 0;
}

void k8s_ident_label(const struct k8s_ident *id, char *buf, size_t len)
{
	if (id->container_id[0])
		snprintf(buf, len, "pod %s container %.12s", id->pod_uid, id->container_id);
	else
		snprintf(buf, len, "pod %s", id->pod_uid);
}

/* Depth-first search of dfd's subdirectories for inode id; path[0..plen) names dfd. */
static int walk(int dfd, __u64 id, char *path, size_t plen, size_t len, int depth)
{
	DIR *d;
	struct dirent *e;
	int err = -ENOENT, fd = dup(dfd);

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while (err == -ENOENT && (e = readdir(d))) {
		struct stat st;
		int n, child;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) ||
		    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
			continue;
		n = snprintf(path + plen, len - plen, "/%s", e->d_name);
		if (n < 0 || (size_t)n >= len - plen)
			continue;
		if ((__u64)st.st_ino == id)
			err = 0;
		else if (depth > 1 && (child = openat(dfd, e->d_name,
						      O_RDONLY | O_DIRECTORY | O_NOFOLLOW)) >= 0) {
			err = walk(child, id, path, plen + (size_t)n, len, depth - 1);
			close(child);
		}
	}
	closedir(d);
	if (err)
		path[plen] = '\0';
	return err;
}

int cgroup_path_by_id(const char *root, __u64 id, char *out, size_t len, int depth)
{
	struct stat st;
	int fd, err;

	if (len < 2)
		return -ENAMETOOLONG;
	fd = open(root, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return -errno;
	out[0] = '\0';
	if (!fstat(fd, &st) && (__u64)st.st_ino == id)
		err = 0;
	else
		err = walk(fd, id, out, 0, len, depth);
	close(fd);
	if (!err && !out[0])
		snprintf(out, len, "/");
	return err;
}

#define LABEL_CACHE 256

static struct {
	__u64 id;
	char label[96];
} label_cache[LABEL_CACHE];
static char labels_root[512];

void k8s_labels_root(const char *root)
{
	snprintf(labels_root, sizeof(labels_root), "%s", root ? root : "");
	memset(label_cache, 0, sizeof(label_cache));
}

/* Not thread-safe: the live commands label groups from their one main loop. */
const char *k8s_cgroup_label(__u64 cgroup_id)
{
	typeof(label_cache[0]) *e = &label_cache[cgroup_id % LABEL_CACHE];
	char path[4096], full[sizeof(labels_root) + sizeof(path)];
	struct k8s_ident id;

	if (e->id == cgroup_id && e->label[0])
		return e->label;
	snprintf(e->label, sizeof(e->label), "cgroup %llu", (unsigned long long)cgroup_id);
	e->id = labels_root[0] ? cgroup_id : 0; /* unresolved: a later lookup with a root may */
	if (!labels_root[0] || cgroup_path_by_id(labels_root, cgroup_id, path, sizeof(path), 16))
		return e->label;
	/* parsed with the root's own path in front: a root at or below the kubelet's tree
	 * (--cgroup /sys/fs/cgroup/kubepods) leaves "kubepods" out of the relative path */
	snprintf(full, sizeof(full), "%s%s", labels_root, path);
	if (!k8s_ident_from_cgroup(full, &id))
		k8s_ident_label(&id, e->label, sizeof(e->label));
	return e->label;
}
