// SPDX-License-Identifier: GPL-2.0
/* Resolves --dev names, entering named network namespaces briefly to look them up. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collect/netdev.h"

static __u32 netns_inode_of_fd(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : (__u32)st.st_ino;
}

/* Looks the name up inside the namespace open at nsfd (or the current one if -1). */
static int lookup_in(int nsfd, int selffd, const char *ifname, struct netdev_ref *out)
{
	unsigned int idx;

	if (nsfd >= 0 && setns(nsfd, CLONE_NEWNET))
		return -errno;
	idx = if_nametoindex(ifname);
	if (nsfd >= 0 && setns(selffd, CLONE_NEWNET))
		return -errno; /* cannot happen for root; callers treat it as fatal */
	if (!idx)
		return -ENODEV;
	out->ifindex = idx;
	out->netns = netns_inode_of_fd(nsfd >= 0 ? nsfd : selffd);
	return 0;
}

int netdev_resolve(const char *spec, struct netdev_ref *out)
{
	const char *slash = strchr(spec, '/');
	char path[300], ifname[IF_NAMESIZE + 1];
	int selffd, nsfd, err, found = 0;
	struct netdev_ref cand;
	struct dirent *de;
	DIR *d;

	memset(out, 0, sizeof(*out));
	selffd = open("/proc/self/ns/net", O_RDONLY);
	if (selffd < 0)
		return -errno;
	if (slash) {
		if ((size_t)(slash - spec) >= sizeof(out->nsname) ||
		    strlen(slash + 1) > IF_NAMESIZE) {
			close(selffd);
			return -ENODEV;
		}
		snprintf(path, sizeof(path), "/run/netns/%.*s", (int)(slash - spec), spec);
		nsfd = open(path, O_RDONLY);
		if (nsfd < 0) {
			close(selffd);
			return -ENODEV;
		}
		err = lookup_in(nsfd, selffd, slash + 1, out);
		snprintf(out->nsname, sizeof(out->nsname), "%.*s", (int)(slash - spec), spec);
		close(nsfd);
		close(selffd);
		return err;
	}
	if (strlen(spec) > IF_NAMESIZE) {
		close(selffd);
		return -ENODEV;
	}
	snprintf(ifname, sizeof(ifname), "%s", spec);
	if (!lookup_in(-1, selffd, ifname, out)) {
		close(selffd);
		return 0;
	}
	d = opendir("/run/netns");
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/run/netns/%s", de->d_name);
		nsfd = open(path, O_RDONLY);
		if (nsfd < 0)
			continue;
		if (!lookup_in(nsfd, selffd, ifname, &cand)) {
			snprintf(cand.nsname, sizeof(cand.nsname), "%.63s", de->d_name);
			if (!found++)
				*out = cand;
		}
		close(nsfd);
	}
	if (d)
		closedir(d);
	close(selffd);
	if (!found)
		return -ENODEV;
	return found > 1 ? -EEXIST : 0;
}

bool netdev_tx_completes(const char *sysfs_root, const char *name, char *driver, size_t len)
{
	char path[512], target[512];
	const char *base;
	ssize_t n;

	snprintf(driver, len, "virtual");
	/* a name from readdir of class/net: no '/', no "..", nothing to walk out with */
	if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	snprintf(path, sizeof(path), "%s/class/net/%s/device/driver", sysfs_root, name);
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return false; /* no bus device under it: a virtual device */
	target[n] = '\0';
	base = strrchr(target, '/');
	snprintf(driver, len, "%s", base ? base + 1 : target);
	return true;
}
