/* SPDX-License-Identifier: GPL-2.0 */
/* cgroup v2 lookups: where the unified hierarchy is mounted and this process's cgroup. */
#ifndef TT_CGROUP_H
#define TT_CGROUP_H

#include <stddef.h>

/* Mount point of the cgroup2 hierarchy (e.g. /sys/fs/cgroup or /sys/fs/cgroup/unified). */
int cgroup2_mount(char *buf, size_t len);
/* Opens (O_RDONLY|O_DIRECTORY) the cgroup v2 directory this process belongs to. */
int cgroup_open_self(void);
/* Resolves a --cgroup argument: absolute directory, or a path relative to the cgroup2
 * mount. Opens it; returns fd or negative errno. */
int cgroup_open_path(const char *arg, char *resolved, size_t len);

#endif
