// SPDX-License-Identifier: GPL-2.0
/* Unit tests of user/collect/k8s.c: pod and container from fabricated cgroup paths of
 * both cgroup drivers and three runtimes (the formats the kubelet, containerd, CRI-O and
 * dockershim/cri-dockerd write), non-pod paths refused, and a cgroup's path found by its
 * id (inode) in a fabricated tree of those paths. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collect/k8s.h"
#include "lib/util.h"

#define UID    "5b3f0c1e-8d2a-4c61-9f7e-0a1b2c3d4e5f"
#define UID_SD "5b3f0c1e_8d2a_4c61_9f7e_0a1b2c3d4e5f" /* the systemd driver's spelling */
#define CID    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

struct path_case {
	const char *path, *qos, *runtime, *cid;
};

static const struct path_case pods[] = {
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_SD
	  ".slice/cri-containerd-" CID ".scope",
	  "burstable", "containerd", CID },
	{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_SD
	  ".slice/crio-" CID ".scope",
	  "besteffort", "crio", CID },
	{ "/kubepods.slice/kubepods-pod" UID_SD ".slice/crio-conmon-" CID ".scope", "guaranteed",
	  "crio-conmon", CID },
	{ "/kubepods.slice/kubepods-pod" UID_SD ".slice/docker-" CID ".scope", "guaranteed",
	  "docker", CID },
	{ "/kubepods/burstable/pod" UID "/" CID, "burstable", "", CID },
	{ "/kubepods/pod" UID "/" CID, "guaranteed", "", CID },
	{ "/kubepods/besteffort/pod" UID, "besteffort", "", "" },
	/* kind: the node's own cgroups nest the kubelet's */
	{ "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
	  "kubelet-kubepods-besteffort-pod" UID_SD ".slice/cri-containerd-" CID ".scope",
	  "besteffort", "containerd", CID },
	/* a process in a nested cgroup inside the container is still the container's */
	{ "/kubepods/pod" UID "/" CID "/worker", "guaranteed", "", CID },
};

static void test_pod_paths(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(pods); i++) {
		struct k8s_ident id;

		assert_int_equal(k8s_ident_from_cgroup(pods[i].path, &id), 0);
		assert_string_equal(id.pod_uid, UID);
		assert_string_equal(id.qos, pods[i].qos);
		assert_string_equal(id.runtime, pods[i].runtime);
		assert_string_equal(id.container_id, pods[i].cid);
	}
}

static void test_not_pods(void **state)
{
	static const char *const paths[] = {
		"/",
		"",
		"/system.slice/containerd.service",
		"/user.slice/user-1000.slice",
		"/kubepods.slice",
		"/kubepods/burstable",
		/* a pod-like name outside kubepods is not a pod */
		"/system.slice/foo-pod" UID_SD ".slice",
		/* malformed UIDs: short, non-hex, dash misplaced */
		"/kubepods/pod5b3f0c1e-8d2a-4c61-9f7e-0a1b2c3d4e5",
		"/kubepods/pod5b3f0c1e-8d2a-4c61-9f7e-0a1b2c3d4e5g",
		"/kubepods/pod5b3f0c1e8-d2a-4c61-9f7e-0a1b2c3d4e5f",
	};
	struct k8s_ident id;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		assert_int_equal(k8s_ident_from_cgroup(paths[i], &id), -ENOENT);
		assert_string_equal(id.pod_uid, "");
	}
}

static void test_bad_container_is_pod_only(void **state)
{
	struct k8s_ident id;

	(void)state;
	/* a sandbox-less or unknown child: the pod is still known, the container not */
	assert_int_equal(k8s_ident_from_cgroup("/kubepods/pod" UID "/not-a-container", &id), 0);
	assert_string_equal(id.pod_uid, UID);
	assert_string_equal(id.container_id, "");
	assert_int_equal(k8s_ident_from_cgroup("/kubepods.slice/kubepods-pod" UID_SD
					       ".slice/cri-containerd-abc.scope",
					       &id),
			 0);
	assert_string_equal(id.container_id, "");
}

static void test_label(void **state)
{
	struct k8s_ident id;
	char buf[128];

	(void)state;
	assert_int_equal(k8s_ident_from_cgroup(pods[0].path, &id), 0);
	k8s_ident_label(&id, buf, sizeof(buf));
	assert_string_equal(buf, "pod " UID " container 0123456789ab");
	assert_int_equal(k8s_ident_from_cgroup("/kubepods/besteffort/pod" UID, &id), 0);
	k8s_ident_label(&id, buf, sizeof(buf));
	assert_string_equal(buf, "pod " UID);
}

static int mkdir_p(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(path, 0700) && errno != EEXIST ? -errno : 0;
}

/* A fabricated cgroup tree of every pod path: each directory's inode plays the cgroup id,
 * as it does on cgroup2, and is found back by cgroup_path_by_id(). */
static void test_path_by_id(void **state)
{
	char root[] = "/tmp/tt-k8s-XXXXXX", full[4096], found[4096];
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(root));
	for (size_t i = 0; i < ARRAY_SIZE(pods); i++) {
		snprintf(full, sizeof(full), "%s%s", root, pods[i].path);
		assert_int_equal(mkdir_p(full), 0);
	}
	for (size_t i = 0; i < ARRAY_SIZE(pods); i++) {
		struct k8s_ident id;

		snprintf(full, sizeof(full), "%s%s", root, pods[i].path);
		assert_int_equal(stat(full, &st), 0);
		assert_int_equal(cgroup_path_by_id(root, st.st_ino, found, sizeof(found), 16), 0);
		assert_string_equal(found, pods[i].path);
		assert_int_equal(k8s_ident_from_cgroup(found, &id), 0);
		assert_string_equal(id.container_id, pods[i].cid);
	}
	assert_int_equal(stat(root, &st), 0);
	assert_int_equal(cgroup_path_by_id(root, st.st_ino, found, sizeof(found), 16), 0);
	assert_string_equal(found, "/");
	/* an id that is no directory of the tree, and a depth bound that stops short */
	assert_int_equal(cgroup_path_by_id(root, 1, found, sizeof(found), 16), -ENOENT);
	snprintf(full, sizeof(full), "%s%s", root, pods[0].path);
	assert_int_equal(stat(full, &st), 0);
	assert_int_equal(cgroup_path_by_id(root, st.st_ino, found, sizeof(found), 2), -ENOENT);
	snprintf(full, sizeof(full), "rm -rf '%s'", root);
	assert_int_equal(system(full), 0);
}

/* The --by pod label: resolved in the tree given, "cgroup <id>" without one or outside a
 * pod; what it resolved before stays (ids are never reused). */
static void test_group_label(void **state)
{
	char root[] = "/tmp/tt-k8s-XXXXXX", full[4096], want[64];
	struct stat pod_st, other_st;

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(full, sizeof(full), "%s%s", root, pods[0].path);
	assert_int_equal(mkdir_p(full), 0);
	assert_int_equal(stat(full, &pod_st), 0);
	snprintf(full, sizeof(full), "%s/system.slice/sshd.service", root);
	assert_int_equal(mkdir_p(full), 0);
	assert_int_equal(stat(full, &other_st), 0);

	k8s_labels_root(NULL);
	snprintf(want, sizeof(want), "cgroup %llu", (unsigned long long)pod_st.st_ino);
	assert_string_equal(k8s_cgroup_label(pod_st.st_ino), want);
	k8s_labels_root(root);
	assert_string_equal(k8s_cgroup_label(pod_st.st_ino), "pod " UID " container 0123456789ab");
	snprintf(want, sizeof(want), "cgroup %llu", (unsigned long long)other_st.st_ino);
	assert_string_equal(k8s_cgroup_label(other_st.st_ino), want);
	snprintf(full, sizeof(full), "rm -rf '%s'", root);
	assert_int_equal(system(full), 0);
	assert_string_equal(k8s_cgroup_label(pod_st.st_ino), "pod " UID " container 0123456789ab");
	k8s_labels_root(NULL);
}

/* A root inside the kubelet's tree (--cgroup .../kubepods, the cgroupfs driver): the path
 * below it lacks "kubepods", the root's own path has it. */
static void test_group_label_below_kubepods(void **state)
{
	char root[] = "/tmp/tt-k8s-XXXXXX", full[4096], tree[4096];
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(full, sizeof(full), "%s/kubepods/besteffort/pod" UID "/" CID, root);
	assert_int_equal(mkdir_p(full), 0);
	assert_int_equal(stat(full, &st), 0);
	snprintf(tree, sizeof(tree), "%s/kubepods", root);
	k8s_labels_root(tree);
	assert_string_equal(k8s_cgroup_label(st.st_ino), "pod " UID " container 0123456789ab");
	snprintf(full, sizeof(full), "rm -rf '%s'", root);
	assert_int_equal(system(full), 0);
	k8s_labels_root(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pod_paths),
		cmocka_unit_test(test_not_pods),
		cmocka_unit_test(test_bad_container_is_pod_only),
		cmocka_unit_test(test_label),
		cmocka_unit_test(test_path_by_id),
		cmocka_unit_test(test_group_label),
		cmocka_unit_test(test_group_label_below_kubepods),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
