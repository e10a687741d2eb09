/* SPDX-License-Identifier: GPL-2.0 */
/* Kubernetes pod and container of a cgroup, from its cgroup v2 path alone (no kube API):
 * the kubelet names pod cgroups after the pod UID and the runtimes name container cgroups
 * after the container ID, under either cgroup driver. */
#ifndef TT_K8S_H
#define TT_K8S_H

#include <stddef.h>
#include <linux/types.h>

struct k8s_ident {
	char pod_uid[37];      /* 8-4-4-4-12, as `kubectl get pod -o jsonpath={.metadata.uid}` */
	char qos[11];          /* guaranteed, burstable or besteffort */
	char runtime[12];      /* containerd, crio, crio-conmon, docker; "" when not named */
	char container_id[65]; /* 64 hex digits; "" for the pod's own cgroup */
};

/* Parses a cgroup path such as
 *   /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<UID>.slice/
 *	cri-containerd-<ID>.scope                         (systemd driver; crio-, docker-)
 *   /kubepods/besteffort/pod<UID>/<ID>                  (cgroupfs driver)
 * at any depth (kind and nested nodes prefix it). 0 when the path is in a pod (id filled),
 * -ENOENT when it is not. */
int k8s_ident_from_cgroup(const char *path, struct k8s_ident *id);

/* "pod <UID>" or "pod <UID> container <first 12 hex digits>" (the short ID crictl and
 * docker show). */
void k8s_ident_label(const struct k8s_ident *id, char *buf, size_t len);

/* The label of a --by pod group: "pod <UID> container <ID>" (or "pod <UID>") when the
 * cgroup with this id is in a pod, "cgroup <id>" otherwise. Resolved on this host's
 * cgroup2 tree only after k8s_labels_root(its mount) (the live commands do it); a
 * recording read on another host or after the pod is gone would name the wrong cgroup or
 * none, so `report` leaves it off. Results are cached (cgroup ids are never reused). */
const char *k8s_cgroup_label(__u64 cgroup_id);
/* The cgroup tree k8s_cgroup_label() resolves ids in; NULL: none (labels "cgroup <id>"). */
void k8s_labels_root(const char *root);

/* Finds the directory of cgroup id (its inode number on cgroup2, what
 * bpf_get_current_cgroup_id() returns) under root, which is the cgroup2 mount or any
 * directory tree; writes its path relative to root ("/" for root itself). 0, -ENOENT or
 * a negative errno. Walks at most depth levels. */
int cgroup_path_by_id(const char *root, __u64 id, char *out, size_t len, int depth);

#endif
