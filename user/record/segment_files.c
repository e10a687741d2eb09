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

int rec_read_file(const char *path, rec_snapshot_fn fn, void *ctx, struct rec_diag *d)
{
	struct stat st;
	__u8 *buf = NULL;
	size_t got = 0;
	int fd, err;

	memset(d, 0, sizeof(*d));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		return rec_diag_set(d, err, 0, "%s: %s", path, strerror(-err));
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return rec_diag_set(d, -EINVAL, 0, "%s: not a regular file", path);
	}
	/* segments are bounded by --max-size / 8; reading whole keeps the decoder pure */
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return rec_diag_set(d, -ENOMEM, 0, "%s: out of memory", path);
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
	err = rec_decode(buf, got, path, NULL, fn, ctx, d);
	free(buf);
	return err;
}

long long rec_segment_seq(const char *name)
{
	size_t n = strlen(name), sl = strlen(REC_SUFFIX);
	long long seq = 0;
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
		seq = seq * 16 + v;
		if (seq < 0)
			return -EINVAL;
	}
	return seq;
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

int rec_list_segments(const char *dir, char ***names, size_t *n)
{
	char **v = NULL;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	DIR *dp;

	*names = NULL;
	*n = 0;
	dp = opendir(dir);
	if (!dp)
		return -errno;
	while ((de = readdir(dp))) {
		if (rec_segment_seq(de->d_name) < 0)
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

int rec_read_path(const char *path, rec_snapshot_fn fn, void *ctx, struct rec_diag *d)
{
	struct rec_diag fd;
	unsigned long frames = 0, snaps = 0;
	bool torn = false;
	struct stat st;
	char **names;
	size_t n;
	int err;

	memset(d, 0, sizeof(*d));
	if (stat(path, &st)) {
		err = -errno;
		return rec_diag_set(d, err, 0, "%s: %s", path, strerror(-err));
	}
	if (!S_ISDIR(st.st_mode)) {
		err = rec_read_file(path, fn, ctx, d);
		if (!err && d->torn)
			tt_warn("warning: %s", d->msg);
		return err;
	}
	err = rec_list_segments(path, &names, &n);
	if (err)
		return rec_diag_set(d, err, 0, "%s: %s", path, strerror(-err));
	for (size_t i = 0; i < n; i++) {
		char full[4096];

		snprintf(full, sizeof(full), "%s/%s", path, names[i]);
		err = rec_read_file(full, fn, ctx, &fd);
		frames += fd.frames;
		snaps += fd.snapshots;
		if (err) {
			*d = fd;
			break;
		}
		if (fd.torn) {
			/* only the segment being written when record died can be torn */
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
