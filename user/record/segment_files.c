// SPDX-License-Identifier: GPL-2.0
/* Segment files on disk: reading one file or a directory of them in sequence order, and
 * the names and sequence numbers that order them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "record/segment_int.h"
#include "lib/log.h"

/* Reads and decodes the file open at fd (closed here). Anything but a regular file is
 * refused without reading: a FIFO would block, a device never end. */
static int read_fd(int fd, const char *name, rec_snapshot_fn fn, void *ctx, struct rec_diag *d)
{
	struct stat st;
	__u8 *buf = NULL;
	size_t got = 0;
	int err;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return rec_diag_set(d, -EINVAL, 0, "%s: not a regular file", name);
	}
	/* read whole, so bounded first: a sparse file of any size costs nothing to make */
	if (st.st_size > REC_SEGMENT_READ_MAX) {
		close(fd);
		return rec_diag_set(
			d, -EFBIG, 0,
			"%s: %lld bytes, larger than any segment record writes (%lld MiB)", name,
			(long long)st.st_size, REC_SEGMENT_READ_MAX >> 20);
	}
	/* segments are bounded by --max-size / 8; reading whole keeps the decoder pure */
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return rec_diag_set(d, -ENOMEM, 0, "%s: out of memory", name);
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	err = rec_decode(buf, got, name, NULL, fn, ctx, d);
	free(buf);
	return err;
}

/* O_NONBLOCK: opening a FIFO must not wait for a writer; read_fd() refuses it. */
#define SEG_OPEN_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC)

int rec_read_file(const char *path, rec_snapshot_fn fn, void *ctx, struct rec_diag *d)
{
	int fd, err;

	memset(d, 0, sizeof(*d));
	fd = open(path, SEG_OPEN_FLAGS);
	if (fd < 0) {
		err = -errno;
		return rec_diag_set(d, err, 0, "%s: %s", path, strerror(-err));
	}
	return read_fd(fd, path, fn, ctx, d);
}

long long rec_segment_seq(const char *name)
{
	size_t n = strlen(name), sl = strlen(REC_SUFFIX);
	__u64 seq = 0;
	const char *p;

	/* seg-<16 hex digits>-<anything>.ttrec */
	if (n < 4 + 16 + sl || strncmp(name, "seg-", 4) || strcmp(name + n - sl, REC_SUFFIX))
		return -EINVAL;
	for (p = name + 4; p < name + 20; p++) {
		int v = (*p >= '0' && *p <= '9')   ? *p - '0'
			: (*p >= 'a' && *p <= 'f') ? *p - 'a' + 10
						   : -1;

		if (v < 0)
			return -EINVAL;
		seq = seq * 16 + (__u64)v; /* 16 digits: cannot wrap */
	}
	/* record never writes one this high: a name beyond it was put there by someone else,
	 * and continuing after it would run the sequence out */
	return seq <= REC_SEQ_MAX ? (long long)seq : -ERANGE;
}

static int cmp_seq(const void *a, const void *b)
{
	long long x = rec_segment_seq(*(char *const *)a), y = rec_segment_seq(*(char *const *)b);

	return x < y ? -1 : x > y;
}

void rec_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* One directory entry named like a segment: 0 when it is a regular file, else a warning
 * (once per name) and -EINVAL: a FIFO would block a reader, a symlink lead elsewhere. */
static int entry_is_regular(int dirfd, const char *dir, const char *name)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return -errno; /* removed meanwhile: nothing to say */
	if (S_ISREG(st.st_mode))
		return 0;
	tt_warn("warning: %s/%s is not a regular file (%s), skipped", dir, name,
		S_ISLNK(st.st_mode)    ? "a symbolic link"
		: S_ISFIFO(st.st_mode) ? "a FIFO"
		: S_ISDIR(st.st_mode)  ? "a directory"
				       : "a device or socket");
	return -EINVAL;
}

int rec_list_segments_at(int dirfd, const char *dir, char ***names, size_t *n)
{
	char **v = NULL;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	int fd = dup(dirfd);
	DIR *dp;

	*names = NULL;
	*n = 0;
	dp = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dp) {
		int e = -errno;

		if (fd >= 0)
			close(fd);
		return e;
	}
	rewinddir(dp); /* the dup shares dirfd's position */
	while ((de = readdir(dp))) {
		if (rec_segment_seq(de->d_name) < 0 || entry_is_regular(dirfd, dir, de->d_name))
			continue;
		if (rec_grow_array((void **)&v, &cap, cnt + 1, sizeof(*v)) ||
		    !(v[cnt] = strdup(de->d_name))) {
			closedir(dp);
			rec_names_free(v, cnt);
			return -ENOMEM;
		}
		cnt++;
	}
	closedir(dp);
	if (cnt)
		qsort(v, cnt, sizeof(*v), cmp_seq);
	*names = v;
	*n = cnt;
	return 0;
}

int rec_list_segments(const char *dir, char ***names, size_t *n)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = rec_list_segments_at(fd, dir, names, n);
	close(fd);
	return err;
}

/* Every segment of the directory open at dirfd, in sequence order. */
static int read_dir(int dirfd, const char *path, rec_snapshot_fn fn, void *ctx, struct rec_diag *d)
{
	struct rec_diag fd;
	unsigned long frames = 0, snaps = 0;
	bool torn = false;
	char **names;
	size_t n;
	int err;

	err = rec_list_segments_at(dirfd, path, &names, &n);
	if (err)
		return rec_diag_set(d, err, 0, "%s: %s", path, strerror(-err));
	for (size_t i = 0; i < n; i++) {
		char full[4096];
		int sfd;

		snprintf(full, sizeof(full), "%s/%s", path, names[i]);
		memset(&fd, 0, sizeof(fd));
		/* O_NOFOLLOW: listed as a regular file, it must still be one when opened */
		sfd = openat(dirfd, names[i], SEG_OPEN_FLAGS | O_NOFOLLOW);
		if (sfd < 0 && errno == ENOENT)
			continue; /* rotated away by a running record */
		err = sfd < 0 ? rec_diag_set(&fd, -errno, 0, "%s: %s", full, strerror(errno))
			      : read_fd(sfd, full, fn, ctx, &fd);
		frames += fd.frames;
		snaps += fd.snapshots;
		if (err) {
			*d = fd;
			break;
		}
		if (fd.torn) {
			/* the segment being written when record died, or one whose cut after a
			 * failed write failed too */
			tt_warn("warning: %s", fd.msg);
			torn = true;
		}
	}
	rec_names_free(names, n);
	if (!err)
		d->torn = torn;
	d->frames = frames;
	d->snapshots = snaps;
	return err;
}

int rec_read_path(const char *path, rec_snapshot_fn fn, void *ctx, struct rec_diag *d)
{
	struct stat st;
	int fd, err;

	memset(d, 0, sizeof(*d));
	fd = open(path, SEG_OPEN_FLAGS);
	if (fd < 0 || fstat(fd, &st)) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		return rec_diag_set(d, err, 0, "%s: %s", path, strerror(-err));
	}
	if (!S_ISDIR(st.st_mode)) {
		err = read_fd(fd, path, fn, ctx, d);
		if (!err && d->torn)
			tt_warn("warning: %s", d->msg);
		return err;
	}
	err = read_dir(fd, path, fn, ctx, d);
	close(fd);
	return err;
}
