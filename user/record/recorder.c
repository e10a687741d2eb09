// SPDX-License-Identifier: GPL-2.0
/* The writing side of `record`: segment files with rotation and a size bound, written so
 * that a kill at any moment leaves every segment readable. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "record/record_format.h"
#include "lib/clock.h"

struct seg {
	char *name;
	__u64 size;
};

struct recorder {
	char *dir;
	char host[REC_HOST_MAX + 1]; /* written in every segment header */
	int dirfd;
	__u64 max_size, seg_max;
	/* closed segments, oldest first; the current one is tracked apart */
	struct seg *old;
	size_t nold, old_cap;
	__u64 old_bytes;
	int fd;
	char cur_name[64];
	char cur_path[4096];
	__u64 cur_size;
	__u64 next_seq;
	unsigned remade; /* directory made again, not yet taken by the caller */
};

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

static int push_old(struct recorder *r, const char *name, __u64 size)
{
	struct seg *n;

	if (r->nold == r->old_cap) {
		size_t cap = r->old_cap ? r->old_cap * 2 : 16;

		n = realloc(r->old, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		r->old = n;
		r->old_cap = cap;
	}
	if (!(r->old[r->nold].name = strdup(name)))
		return -ENOMEM;
	r->old[r->nold++].size = size;
	r->old_bytes += size;
	return 0;
}

/* Creates the next segment and writes its header: fsync of file and directory so the
 * segment's name and header survive a crash before its first frame. */
static int open_segment(struct recorder *r)
{
	struct rec_header h;
	struct rec_buf b = { 0 };
	char stamp[32];
	struct tm tm;
	__u64 now = realtime_ns();
	time_t t = (time_t)(now / 1000000000ULL);
	int fd, err;

	memset(&h, 0, sizeof(h));
	h.version = REC_VERSION;
	h.flags = REC_FLAG_ZLIB;
	h.created_ns = now;
	h.seq = r->next_seq;
	h.hist_sub_bits = HIST_SUB_BITS;
	h.hist_max_log2 = HIST_MAX_LOG2;
	memcpy(h.host, r->host, sizeof(h.host));
	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(r->cur_name, sizeof(r->cur_name), "seg-%016llx-%s%s",
		 (unsigned long long)r->next_seq, stamp, REC_SUFFIX);
	snprintf(r->cur_path, sizeof(r->cur_path), "%s/%s", r->dir, r->cur_name);
	fd = openat(r->dirfd, r->cur_name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = rec_header_encode(&b, &h);
	if (!err)
		err = write_all(fd, b.p, b.len);
	if (!err && fsync(fd))
		err = -errno;
	if (!err)
		fsync(r->dirfd);
	if (err) {
		close(fd);
		unlinkat(r->dirfd, r->cur_name, 0);
		rec_buf__free(&b);
		return err;
	}
	r->fd = fd;
	r->cur_size = b.len;
	r->next_seq++;
	rec_buf__free(&b);
	return 0;
}

static int close_segment(struct recorder *r)
{
	int err = 0;

	if (r->fd < 0)
		return 0;
	if (fsync(r->fd))
		err = -errno;
	close(r->fd);
	r->fd = -1;
	/* counted either way: it is in the directory, and --max-size must see it */
	if (push_old(r, r->cur_name, r->cur_size))
		err = -ENOMEM;
	r->cur_size = 0;
	return err;
}

/* Deletes the oldest closed segments until `incoming` more bytes fit under max_size. */
static void enforce_max_size(struct recorder *r, __u64 incoming)
{
	size_t drop = 0;

	while (drop < r->nold && r->old_bytes + r->cur_size + incoming > r->max_size) {
		if (unlinkat(r->dirfd, r->old[drop].name, 0) && errno != ENOENT)
			break;
		r->old_bytes -= r->old[drop].size;
		free(r->old[drop].name);
		drop++;
	}
	if (!drop)
		return;
	memmove(r->old, r->old + drop, (r->nold - drop) * sizeof(*r->old));
	r->nold -= drop;
	fsync(r->dirfd);
}

static void errf(char *err, size_t errlen, const char *fmt, const char *a, int e)
{
	if (err && errlen)
		snprintf(err, errlen, fmt, a, strerror(e));
}

/* Opens record's directory, made 0700 when missing: never through a symlink, and only one
 * owned by this user that group and others cannot write, since whoever can write it can
 * remove segments or plant files named like them. The fd is what every later step uses,
 * so renaming the path away cannot redirect the segments. fd or -errno, why in err. */
static int dir_open_checked(const char *dir, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if (mkdir(dir, 0700) && errno != EEXIST) {
		errf(err, errlen, "cannot record into %s: %s", dir, errno);
		return -errno;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		/* O_DIRECTORY | O_NOFOLLOW on a symlink fails with ENOTDIR or ELOOP */
		if (!lstat(dir, &st) && S_ISLNK(st.st_mode) && err)
			snprintf(err, errlen, "cannot record into %s: it is a symbolic link", dir);
		else
			errf(err, errlen, "cannot record into %s: %s", dir, e);
		return -e;
	}
	if (fstat(fd, &st)) {
		errf(err, errlen, "cannot record into %s: %s", dir, errno);
		close(fd);
		return -EIO;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		if (err)
			snprintf(err, errlen,
				 "cannot record into %s: %s (uid %u, mode %04o); use a directory "
				 "owned by uid %u that only its owner can write",
				 dir,
				 st.st_uid != geteuid() ? "owned by another user"
							: "group or others can write it",
				 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
				 (unsigned)geteuid());
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* Takes the segments already in the directory as the oldest closed ones, and continues
 * their sequence. 0 or -errno. */
static int adopt_segments(struct recorder *r, char *err, size_t errlen)
{
	char **names;
	size_t n;
	int e;

	e = -rec_list_segments_at(r->dirfd, r->dir, &names, &n);
	for (size_t i = 0; i < n && !e; i++) {
		struct stat st;

		if (fstatat(r->dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		e = -push_old(r, names[i], (__u64)st.st_size);
		if ((__u64)rec_segment_seq(names[i]) >= r->next_seq)
			r->next_seq = (__u64)rec_segment_seq(names[i]) + 1;
	}
	if (e) {
		errf(err, errlen, "cannot record into %s: %s", r->dir, e);
	} else if (n && r->next_seq > REC_SEQ_MAX) {
		/* only a planted name gets there (names above it are ignored): no wrapping */
		e = ERANGE;
		if (err)
			snprintf(
				err, errlen,
				"cannot record into %s: segment %s leaves no sequence number after "
				"it",
				r->dir, names[n - 1]);
	}
	rec_names_free(names, n);
	return -e;
}

struct recorder *recorder__open(const char *dir, __u64 max_size, const char *host, char *err,
				size_t errlen)
{
	struct recorder *r;
	int e;

	r = calloc(1, sizeof(*r));
	if (!r || !(r->dir = strdup(dir))) {
		free(r);
		errf(err, errlen, "%s: %s", dir, ENOMEM);
		return NULL;
	}
	if (host)
		snprintf(r->host, sizeof(r->host), "%s", host);
	else if (gethostname(r->host, sizeof(r->host) - 1))
		strcpy(r->host, "unknown");
	r->fd = -1;
	r->max_size = max_size ? max_size : REC_DEFAULT_MAX_SIZE;
	r->seg_max = r->max_size / 8 > REC_MIN_SEGMENT ? r->max_size / 8 : REC_MIN_SEGMENT;
	if (r->seg_max > REC_SEGMENT_MAX)
		r->seg_max = REC_SEGMENT_MAX; /* what a reader reads whole */
	/* recordings hold request metadata: only the owner may list or read them */
	r->dirfd = dir_open_checked(dir, err, errlen);
	if (r->dirfd < 0 || adopt_segments(r, err, errlen))
		goto fail;
	e = -open_segment(r);
	if (e) {
		errf(err, errlen, "cannot record into %s: %s", dir, e);
		goto fail;
	}
	enforce_max_size(r, 0);
	return r;
fail:
	recorder__close(r);
	return NULL;
}

/* True when the file open at fd has no name left (removed underneath). */
static bool removed(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && st.st_nlink == 0;
}

/* A directory and a segment to write to. When the directory was removed it is made again
 * at its path, with the checks of recorder__open (the segments went with it); when only
 * the current segment was removed, the next one starts. 0 or -errno: nothing to write to
 * yet, the next interval tries again. */
static int ensure_target(struct recorder *r)
{
	if (r->dirfd < 0 || removed(r->dirfd)) {
		int fd = dir_open_checked(r->dir, NULL, 0);

		if (fd < 0)
			return fd;
		if (r->dirfd >= 0)
			close(r->dirfd);
		r->dirfd = fd;
		for (size_t i = 0; i < r->nold; i++)
			free(r->old[i].name);
		r->nold = 0;
		r->old_bytes = 0;
		if (r->fd >= 0)
			close(r->fd);
		r->fd = -1;
		r->cur_size = 0;
		adopt_segments(r, NULL, 0);
		r->remade++;
	}
	if (r->fd >= 0 && removed(r->fd)) {
		close(r->fd);
		r->fd = -1;
		r->cur_size = 0;
	}
	return 0;
}

int recorder__append(struct recorder *r, const struct snapshot *s)
{
	struct rec_buf b = { 0 };
	int err;

	err = rec_interval_encode(&b, s);
	if (!err)
		err = ensure_target(r);
	if (err)
		goto out;
	if (r->fd < 0 || r->cur_size + b.len > r->seg_max) {
		close_segment(r); /* a failed fsync of the old one must not stop the new one */
		err = open_segment(r);
		if (err)
			goto out;
	}
	enforce_max_size(r, b.len);
	err = write_all(r->fd, b.p, b.len);
	if (err) {
		/* ENOSPC and friends: cut the partial frame so the segment stays clean. The
		 * next interval starts a new segment, which needs a free block: on a full disk
		 * the last block of this one could still take a small interval but not the
		 * next, and writing would come and go. Should the cut fail, the torn end is
		 * what readers skip after a kill. */
		(void)!ftruncate(r->fd, (off_t)r->cur_size);
		close_segment(r);
		goto out;
	}
	/* data only: the size change is metadata fdatasync covers, the mtime is not needed */
	if (fdatasync(r->fd))
		err = -errno;
	r->cur_size += b.len;
out:
	rec_buf__free(&b);
	return err;
}

int recorder__flush(struct recorder *r)
{
	int err = 0;

	if (r->fd >= 0 && fsync(r->fd))
		err = -errno;
	if (r->dirfd >= 0)
		fsync(r->dirfd);
	return err;
}

__u64 recorder__usage(const struct recorder *r)
{
	return r->old_bytes + r->cur_size;
}

const char *recorder__current_path(const struct recorder *r)
{
	return r->fd >= 0 ? r->cur_path : NULL;
}

unsigned recorder__take_remade(struct recorder *r)
{
	unsigned n = r->remade;

	r->remade = 0;
	return n;
}

void recorder__close(struct recorder *r)
{
	if (!r)
		return;
	if (r->fd >= 0) {
		fsync(r->fd);
		close(r->fd);
	}
	if (r->dirfd >= 0) {
		fsync(r->dirfd);
		close(r->dirfd);
	}
	for (size_t i = 0; i < r->nold; i++)
		free(r->old[i].name);
	free(r->old);
	free(r->dir);
	free(r);
}
