// SPDX-License-Identifier: GPL-2.0
/* The files record and report touch, where others may have put something first: report -o
 * never writes through a symlink or a hard link and leaves 0600; record's directory must
 * be ours and private; names and files planted in it neither overflow the sequence nor
 * block a reader; a write that fails (file size limit standing in for a full disk) or a
 * directory removed underneath loses nothing already written and recording resumes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include "cmd/commands.h"
#include "core/histogram.h"
#include "core/stages.h"
#include "record/record_format.h"

static char tmp[64];

/* main.c's, which the library leaves out; report -h is not exercised here */
void cmd_print_help(enum tt_cmd_id name)
{
	(void)name;
}

static int setup(void **state)
{
	(void)state;
	strcpy(tmp, "/tmp/tt-files-XXXXXX");
	return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	snprintf(cmd, sizeof(cmd), "chmod -R u+w %s; rm -rf %s", tmp, tmp);
	return system(cmd) == 0 ? 0 : -1;
}

static void interval(struct snapshot *s, unsigned i)
{
	struct hist_key k;
	struct hist h;

	snapshot__init(s);
	s->start_ns = 1714564800000000000ULL + i * 10000000000ULL;
	s->end_ns = s->start_ns + 10000000000ULL;
	memset(&k, 0, sizeof(k));
	memset(&h, 0, sizeof(h));
	k.stage = STAGE_TX_QDISC;
	hist_record(&h, 1000 + i);
	assert_int_equal(snapshot__add_hist(s, &k, &h), 0);
}

static void append(struct recorder *r, unsigned i, int want)
{
	struct snapshot s;

	interval(&s, i);
	assert_int_equal(recorder__append(r, &s), want);
	snapshot__free(&s);
}

static int note_start(const struct snapshot *s, void *ctx)
{
	__u64 *v = ctx;

	v[++v[0]] = s->start_ns;
	return v[0] == 63 ? -E2BIG : 0;
}

/* The intervals a directory reads back as, by index (start times). */
static int read_back(const char *dir, unsigned *idx, int max)
{
	__u64 v[64] = { 0 };
	struct rec_diag d;

	assert_int_equal(rec_read_path(dir, note_start, v, &d), 0);
	for (int i = 0; i < (int)v[0] && i < max; i++)
		idx[i] = (unsigned)((v[i + 1] - 1714564800000000000ULL) / 10000000000ULL);
	return (int)v[0];
}

static void make_recording(const char *dir)
{
	char err[256];
	struct recorder *r = recorder__open(dir, 0, NULL, err, sizeof(err));

	assert_non_null(r);
	append(r, 0, 0);
	append(r, 1, 0);
	recorder__close(r);
}

static int report_to(const char *rec, const char *out)
{
	char *argv[] = { "report", (char *)rec, "--format", "folded", "-o", (char *)out, NULL };

	return cmd_report(6, argv);
}

static void test_report_output_file(void **state)
{
	char rec[128], out[128], target[128], link2[128], buf[64] = "";
	struct stat st;
	int fd;

	(void)state;
	snprintf(rec, sizeof(rec), "%s/rec", tmp);
	make_recording(rec);
	/* created 0600 whatever the umask */
	snprintf(out, sizeof(out), "%s/new.folded", tmp);
	umask(022);
	assert_int_equal(report_to(rec, out), 0);
	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_true(st.st_size > 0);
	/* an existing 0644 file is replaced and made 0600, not left readable */
	snprintf(out, sizeof(out), "%s/old.folded", tmp);
	fd = open(out, O_WRONLY | O_CREAT, 0644);
	assert_int_equal(write(fd, "old old old old old old old old old old old old\n", 48), 48);
	fchmod(fd, 0644);
	close(fd);
	assert_int_equal(report_to(rec, out), 0);
	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	fd = open(out, O_RDONLY);
	assert_true(read(fd, buf, sizeof(buf) - 1) > 0);
	close(fd);
	assert_null(strstr(buf, "old old"));
	/* a symlink is refused and its target left alone */
	snprintf(target, sizeof(target), "%s/target", tmp);
	fd = open(target, O_WRONLY | O_CREAT, 0644);
	assert_int_equal(write(fd, "keep\n", 5), 5);
	close(fd);
	snprintf(out, sizeof(out), "%s/link.folded", tmp);
	assert_int_equal(symlink(target, out), 0);
	assert_int_equal(report_to(rec, out), 1);
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_size, 5);
	assert_int_equal(st.st_mode & 07777, 0644);
	/* a dangling symlink creates nothing at its target */
	snprintf(out, sizeof(out), "%s/dangling.folded", tmp);
	snprintf(link2, sizeof(link2), "%s/nowhere", tmp);
	assert_int_equal(symlink(link2, out), 0);
	assert_int_equal(report_to(rec, out), 1);
	assert_int_not_equal(access(link2, F_OK), 0);
	/* a file with another hard link is not written through */
	snprintf(out, sizeof(out), "%s/hard.folded", tmp);
	assert_int_equal(link(target, out), 0);
	assert_int_equal(report_to(rec, out), 1);
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_size, 5);
	/* a FIFO is refused at once, without waiting for a reader */
	snprintf(out, sizeof(out), "%s/fifo.folded", tmp);
	assert_int_equal(mkfifo(out, 0600), 0);
	assert_int_equal(report_to(rec, out), 1);
	/* another user's file is not written (only root can make one to try) */
	if (geteuid() == 0) {
		snprintf(out, sizeof(out), "%s/theirs.folded", tmp);
		fd = open(out, O_WRONLY | O_CREAT, 0600);
		assert_int_equal(write(fd, "theirs\n", 7), 7);
		assert_int_equal(fchown(fd, 65534, 65534), 0);
		close(fd);
		assert_int_equal(report_to(rec, out), 1);
		assert_int_equal(stat(out, &st), 0);
		assert_int_equal(st.st_size, 7);
	}
}

/* A file larger than any segment is refused before it is read: a sparse one costs nothing
 * to make and would otherwise be read whole into memory. */
static void test_oversized_segment(void **state)
{
	char p[128];
	struct rec_diag d;
	int fd;

	(void)state;
	snprintf(p, sizeof(p), "%s/huge" REC_SUFFIX, tmp);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, REC_SEGMENT_READ_MAX + 1), 0);
	close(fd);
	assert_int_equal(rec_read_file(p, NULL, NULL, &d), -EFBIG);
	assert_non_null(strstr(d.msg, "larger than any segment"));
	unlink(p);
}

static void test_record_dir_checks(void **state)
{
	char dir[128], link[128], err[512] = "";

	(void)state;
	/* a symlink to a directory is refused */
	snprintf(dir, sizeof(dir), "%s/real", tmp);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(link, sizeof(link), "%s/link", tmp);
	assert_int_equal(symlink(dir, link), 0);
	assert_null(recorder__open(link, 0, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "symbolic link"));
	/* one that group or others can write is refused */
	chmod(dir, 0770);
	assert_null(recorder__open(dir, 0, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "group or others can write it"));
	chmod(dir, 0707);
	assert_null(recorder__open(dir, 0, NULL, err, sizeof(err)));
	chmod(dir, 0700);
	/* one owned by another user is refused (root can make one here) */
	if (geteuid() == 0) {
		assert_int_equal(chown(dir, 65534, 65534), 0);
		assert_null(recorder__open(dir, 0, NULL, err, sizeof(err)));
		assert_non_null(strstr(err, "owned by another user"));
		assert_int_equal(chown(dir, 0, 0), 0);
	} else {
		print_message("not root: the other-owner case needs chown\n");
	}
	/* a private directory of ours is fine, and one made by record is 0700 */
	recorder__close(recorder__open(dir, 0, NULL, err, sizeof(err)));
	snprintf(dir, sizeof(dir), "%s/made", tmp);
	umask(0);
	recorder__close(recorder__open(dir, 0, NULL, err, sizeof(err)));
	umask(022);
	{
		struct stat st;

		assert_int_equal(stat(dir, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0700);
	}
}

static void plant(const char *dir, const char *name)
{
	char p[256];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	close(fd);
}

static void test_planted_names(void **state)
{
	char dir[128], err[512] = "", **names;
	struct recorder *r;
	size_t n;

	(void)state;
	assert_int_equal(rec_segment_seq("seg-ffffffffffffffff-x.ttrec"), -ERANGE);
	assert_int_equal(rec_segment_seq("seg-4000000000000000-x.ttrec"), -ERANGE);
	assert_int_equal(rec_segment_seq("seg-3fffffffffffffff-x.ttrec"), (long long)REC_SEQ_MAX);
	assert_int_equal(rec_segment_seq("seg-000000000000002a-x.ttrec"), 42);
	/* a name beyond the sequence's range is not a segment: record continues its own */
	snprintf(dir, sizeof(dir), "%s/planted", tmp);
	make_recording(dir);
	plant(dir, "seg-ffffffffffffffff-20240501T120000Z.ttrec");
	r = recorder__open(dir, 0, NULL, err, sizeof(err));
	assert_non_null(r);
	assert_non_null(strstr(recorder__current_path(r), "seg-0000000000000001-"));
	recorder__close(r);
	/* one at the end of the range leaves no room: refused, not wrapped to 0 */
	plant(dir, "seg-3fffffffffffffff-20240501T120000Z.ttrec");
	assert_null(recorder__open(dir, 0, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "leaves no sequence number"));
	assert_int_equal(rec_list_segments(dir, &names, &n), 0);
	assert_int_equal(n, 3); /* record's 0 and 1, and the planted one in range */
	rec_names_free(names, n);
}

static void on_alarm(int sig)
{
	(void)sig;
	fail_msg("a FIFO named like a segment blocked");
}

static void test_fifo_and_symlink_segments(void **state)
{
	char dir[128], p[256], other[128], err[512] = "";
	unsigned idx[8];
	struct recorder *r;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/fifo", tmp);
	make_recording(dir);
	snprintf(p, sizeof(p), "%s/seg-0000000000000005-20240501T120000Z.ttrec", dir);
	assert_int_equal(mkfifo(p, 0600), 0);
	snprintf(other, sizeof(other), "%s/other", tmp);
	make_recording(other);
	snprintf(p, sizeof(p), "%s/seg-0000000000000006-20240501T120000Z.ttrec", dir);
	snprintf(err, sizeof(err), "%s/seg-0000000000000000-x.ttrec", other);
	{
		char **names;
		size_t n;

		assert_int_equal(rec_list_segments(other, &names, &n), 0);
		assert_int_equal(n, 1);
		snprintf(err, sizeof(err), "%s/%s", other, names[0]);
		rec_names_free(names, n);
	}
	assert_int_equal(symlink(err, p), 0);
	signal(SIGALRM, on_alarm);
	alarm(20);
	/* report reads the one real segment, skipping the FIFO and the symlink */
	assert_int_equal(read_back(dir, idx, 8), 2);
	/* the FIFO itself, named as a file, is refused, not waited on */
	snprintf(p, sizeof(p), "%s/seg-0000000000000005-20240501T120000Z.ttrec", dir);
	{
		struct rec_diag d;

		assert_int_equal(rec_read_path(p, NULL, NULL, &d), -EINVAL);
		assert_non_null(strstr(d.msg, "not a regular file"));
	}
	/* record starts in it too, after the highest regular segment */
	r = recorder__open(dir, 0, NULL, err, sizeof(err));
	assert_non_null(r);
	assert_non_null(strstr(recorder__current_path(r), "seg-0000000000000001-"));
	recorder__close(r);
	alarm(0);
}

static void test_write_failure_resumes(void **state)
{
	char dir[128], err[512] = "";
	struct rlimit lim, small;
	unsigned idx[16];
	struct recorder *r;
	int n;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/full", tmp);
	r = recorder__open(dir, 0, NULL, err, sizeof(err));
	assert_non_null(r);
	append(r, 0, 0);
	append(r, 1, 0);
	/* writes past the file size limit fail (EFBIG), as they do on a full disk */
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &lim);
	small = lim;
	small.rlim_cur = 1;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
	append(r, 2, -EFBIG);
	append(r, 3, -EFBIG);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	/* room again: the next interval is written after the ones before, no hole between */
	append(r, 4, 0);
	recorder__close(r);
	n = read_back(dir, idx, 16);
	assert_int_equal(n, 3);
	assert_int_equal(idx[0], 0);
	assert_int_equal(idx[1], 1);
	assert_int_equal(idx[2], 4);
}

static void test_directory_removed_underneath(void **state)
{
	char dir[128], cmd[256], err[512] = "";
	unsigned idx[16];
	struct recorder *r;
	struct stat st;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/gone", tmp);
	r = recorder__open(dir, 0, NULL, err, sizeof(err));
	assert_non_null(r);
	append(r, 0, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	/* the directory is made again and recording goes on in it */
	append(r, 1, 0);
	append(r, 2, 0);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	recorder__close(r);
	assert_int_equal(read_back(dir, idx, 16), 2);
	assert_int_equal(idx[0], 1);
	assert_int_equal(idx[1], 2);
	/* when it cannot be made again (its parent is gone too), the interval fails and a
	 * later one succeeds once it can */
	snprintf(dir, sizeof(dir), "%s/parent/gone", tmp);
	snprintf(cmd, sizeof(cmd), "mkdir -m 700 %s/parent", tmp);
	assert_int_equal(system(cmd), 0);
	r = recorder__open(dir, 0, NULL, err, sizeof(err));
	assert_non_null(r);
	snprintf(cmd, sizeof(cmd), "rm -rf %s/parent", tmp);
	assert_int_equal(system(cmd), 0);
	append(r, 5, -ENOENT);
	snprintf(cmd, sizeof(cmd), "mkdir -m 700 %s/parent", tmp);
	assert_int_equal(system(cmd), 0);
	append(r, 6, 0);
	recorder__close(r);
	assert_int_equal(read_back(dir, idx, 16), 1);
	assert_int_equal(idx[0], 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_output_file),
		cmocka_unit_test(test_record_dir_checks),
		cmocka_unit_test(test_planted_names),
		cmocka_unit_test(test_fifo_and_symlink_segments),
		cmocka_unit_test(test_write_failure_resumes),
		cmocka_unit_test(test_directory_removed_underneath),
		cmocka_unit_test(test_oversized_segment),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
