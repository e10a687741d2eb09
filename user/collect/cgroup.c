// SPDX-License-Identifier: GPL-2.0
/* cgroup v2 path handling for the sockops attachment and the --cgroup filter. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "collect/cgroup.h"

int cgroup2_mount(char *buf, size_t len)
{
	char dev[256], dir[512], type[64];
	FILE *f = fopen("/proc/self/mounts", "r");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fscanf(f, "%255s %511s %63s %*[^\n]\n", dev, dir, type) == 3) {
		if (!strcmp(type, "cgroup2")) {
			snprintf(buf, len, "%s", dir);
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

int cgroup_open_self(void)
{
	char mnt[512], line[1024], path[2048];
	FILE *f;
	int err, fd;

	err = cgroup2_mount(mnt, sizeof(mnt));
	if (err)
		return err;
	f = fopen("/proc/self/cgroup", "r");
	if (!f)
		return -errno;
	path[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(path, sizeof(path), "%s%s", mnt, line + 3);
			break;
		}
	}
	fclose(f);
	if (!path[0])
		snprintf(path, sizeof(path), "%s", mnt);
	fd = open(path, O_RDONLY | O_DIRECTORY);
	if (fd < 0) /* e.g. a namespace view that hides our path: fall back to the root */
		fd = open(mnt, O_RDONLY | O_DIRECTORY);
	return fd < 0 ? -errno : fd;
}

int cgroup_open_path(const char *arg, char *resolved, size_t len)
{
	char mnt[512];
	int fd;

	if (arg[0] == '/') {
		snprintf(resolved, len, "%s", arg);
		fd = open(resolved, O_RDONLY | O_DIRECTORY);
		if (fd >= 0)
			return fd;
	}
	if (cgroup2_mount(mnt, sizeof(mnt)))
		return -ENOENT;
	snprintf(resolved, len, "%s/%s", mnt, arg[0] == '/' ? arg + 1 : arg);
	fd = open(resolved, O_RDONLY | O_DIRECTORY);
	return fd < 0 ? -errno : fd;
}
