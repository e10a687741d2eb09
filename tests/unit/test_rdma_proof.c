// SPDX-License-Identifier: GPL-2.0
/* Unit tests of rdma_proof.c and the maps reader: function starts from symbols and the
 * unwind table, a forged maps line inside a long path, FIFOs and oversized files. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "rdma/rdma_proof.h"
#include "rdma/rdma_resolve.h"

__attribute__((noinline)) int proof_target(int x);
__attribute__((noinline)) int proof_target(int x)
{
	return x * 3 + 1;
}

static void test_size_cap(void **state)
{
	(void)state;
	assert_int_equal(rdma_size_ok(4096, RDMA_ELF_MAX), 0);
	assert_int_equal(rdma_size_ok((long long)RDMA_ELF_MAX, RDMA_ELF_MAX), 0);
	assert_int_equal(rdma_size_ok(20ll << 30, RDMA_ELF_MAX), -EFBIG); /* a sparse 20 GB file */
	assert_int_equal(rdma_size_ok(-1, RDMA_ELF_MAX), -EFBIG);
}

/* A path whose bytes 4150 on read, cut by a 4224-byte line buffer, as a maps line of its
 * own ("10000000-10001000 r-xp ... /tmp/fifo"): read whole, it names nothing. */
static void test_long_line_forges_nothing(void **state)
{
	char *buf = malloc(16384), *p;
	struct proc_map m;
	__u64 off;
	FILE *f;

	(void)state;
	p = buf + sprintf(buf, "7f0000000000-7f0000001000 r-xp 00000000 08:01 1234");
	p += sprintf(p, "%*s/", 73 - (int)(p - buf), "");
	while (p - buf < 4223)
		*p++ = 'a';
	p += sprintf(p, "10000000-10001000 r-xp 00000000 00:00 42 /tmp/fifo\n");
	p += sprintf(p, "7f0000002000-7f0000003000 r-xp 00000000 08:01 77 /usr/lib/libok.so\n");
	f = fmemopen(buf, (size_t)(p - buf), "r");
	assert_non_null(f);
	assert_int_equal(proc_maps_find(f, 0x10000800, &m, &off), -ENOENT);
	rewind(f);
	/* the overlong path itself is not taken either: cut, it would name another file */
	assert_int_equal(proc_maps_find(f, 0x7f0000000010, &m, &off), -ENOENT);
	rewind(f);
	assert_int_equal(proc_maps_find(f, 0x7f0000002010, &m, &off), 0);
	assert_string_equal(m.path, "/usr/lib/libok.so");
	assert_int_equal(off, 0x10);
	fclose(f);
	free(buf);
}

static void test_parse_rejects_long_path(void **state)
{
	char *line = malloc(PATH_MAX + 200);
	struct proc_map m;
	int n;

	(void)state;
	n = sprintf(line, "1000-2000 r-xp 00000000 08:01 5 /");
	memset(line + n, 'b', PATH_MAX);
	line[n + PATH_MAX] = '\0';
	assert_int_equal(proc_map_parse(line, &m), -ENAMETOOLONG);
	assert_int_equal(proc_map_parse("1000-2000 r-xp 00000000 08:01 5 /lib/x.so\n", &m), 0);
	assert_string_equal(m.path, "/lib/x.so");
	free(line);
}

static void put32(unsigned char *p, __u32 v)
{
	memcpy(p, &v, 4);
}

static void test_eh_frame_hdr(void **state)
{
	unsigned char b[4 + 4 + 4 + 16] = { 1, 0x1b, 0x03, 0x3b };
	struct func_starts s = { 0 };

	(void)state;
	put32(b + 4, 0x100);
	put32(b + 8, 2);
	put32(b + 12, (__u32)-0x100); /* initial locations, relative to the header */
	put32(b + 16, 0x200);
	put32(b + 20, 0x20);
	put32(b + 24, 0x240);
	assert_int_equal(eh_frame_hdr_starts(b, sizeof(b), 0x2000, &s), 0);
	func_starts_sort(&s);
	assert_int_equal(s.n, 2);
	assert_true(func_starts_has(&s, 0x1f00));
	assert_true(func_starts_has(&s, 0x2020));
	assert_false(func_starts_has(&s, 0x2021));
	/* a count the table cannot hold, another version, another encoding */
	put32(b + 8, 3);
	assert_int_equal(eh_frame_hdr_starts(b, sizeof(b), 0x2000, &s), -EINVAL);
	b[0] = 2;
	assert_int_equal(eh_frame_hdr_starts(b, sizeof(b), 0x2000, &s), -EINVAL);
	b[0] = 1;
	b[3] = 0x1b;
	assert_int_equal(eh_frame_hdr_starts(b, sizeof(b), 0x2000, &s), -ENOTSUP);
	func_starts_free(&s);
}

static void test_starts_sorted_unique(void **state)
{
	struct func_starts s = { 0 };
	const __u64 v[] = { 50, 10, 30, 10, 50, 20 };

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		assert_int_equal(func_starts_add(&s, v[i]), 0);
	func_starts_sort(&s);
	assert_int_equal(s.n, 4);
	assert_true(func_starts_has(&s, 10) && func_starts_has(&s, 50));
	assert_false(func_starts_has(&s, 0) || func_starts_has(&s, 40) || func_starts_has(&s, 60));
	func_starts_free(&s);
}

/* Ground truth: this binary's own function, as the loader mapped it. */
static void test_self_function_start(void **state)
{
	struct func_starts s = { 0 };
	struct proc_map m;
	char fdp[32];
	__u64 off;
	int fd;

	(void)state;
	assert_int_equal(proof_target(2), 7);
	assert_int_equal(rdma_addr_to_file(getpid(), (__u64)(uintptr_t)&proof_target, &m, &off), 0);
	fd = rdma_map_open(getpid(), &m);
	assert_true(fd >= 0);
	rdma_fd_path(fd, fdp, sizeof(fdp));
	assert_int_equal(elf_function_starts(fdp, &s), 0);
	assert_true(func_starts_has(&s, off));
	assert_false(func_starts_has(&s, off + 1)); /* mid-instruction */
	func_starts_free(&s);
	close(fd);
}

/* The stripped stand-in provider: its static data-path functions are in no symbol table,
 * only in the unwind table; the unstripped build says where they are. */
static void test_stripped_provider_starts(void **state)
{
	char exe[PATH_MAX], lib[PATH_MAX + 32], full[PATH_MAX + 32];
	struct func_starts s = { 0 };
	__u64 off;
	ssize_t n;

	(void)state;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	dirname(exe);
	snprintf(lib, sizeof(lib), "%s/../../rdma/libttstandin.so", exe);
	snprintf(full, sizeof(full), "%s/../../rdma/libttstandin.full.so", exe);
	if (access(lib, R_OK) || access(full, R_OK)) {
		skip();
		return;
	}
	assert_int_equal(elf_find_function(lib, "si_post_send", &off, NULL), -ENOENT);
	assert_int_equal(elf_find_function(full, "si_post_send", &off, NULL), 0);
	assert_int_equal(elf_function_starts(lib, &s), 0);
	assert_true(func_starts_has(&s, off));
	assert_false(func_starts_has(&s, off + 4));
	func_starts_free(&s);
}

static void test_fifo_not_opened(void **state)
{
	const char *fifo = "/tmp/tt_proof_fifo";
	struct proc_map m = { 0 };
	struct stat st;

	(void)state;
	unlink(fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(stat(fifo, &st), 0);
	m.inode = st.st_ino;
	strcpy(m.path, fifo);
	/* would block forever without O_NONBLOCK; refused as not a regular file */
	assert_int_equal(rdma_map_open(0, &m), -EPERM);
	assert_int_equal(rdma_map_open(getpid(), &m), -EPERM);
	unlink(fifo);
}

static void test_sparse_file_refused(void **state)
{
	char tmp[] = "/tmp/tt_proof_big_XXXXXX";
	struct proc_map m = { 0 };
	struct stat st;
	int fd;

	(void)state;
	fd = mkstemp(tmp);
	assert_true(fd >= 0);
	if (ftruncate(fd, 20ll << 30)) { /* a filesystem without sparse files */
		close(fd);
		unlink(tmp);
		skip();
		return;
	}
	close(fd);
	assert_int_equal(stat(tmp, &st), 0);
	m.inode = st.st_ino;
	strcpy(m.path, tmp);
	assert_int_equal(rdma_map_open(0, &m), -EFBIG);
	__u64 off;
	assert_int_equal(elf_find_function(tmp, "x", &off, NULL), -EFBIG);
	unlink(tmp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size_cap),
		cmocka_unit_test(test_long_line_forges_nothing),
		cmocka_unit_test(test_parse_rejects_long_path),
		cmocka_unit_test(test_eh_frame_hdr),
		cmocka_unit_test(test_starts_sorted_unique),
		cmocka_unit_test(test_self_function_start),
		cmocka_unit_test(test_stripped_provider_starts),
		cmocka_unit_test(test_fifo_not_opened),
		cmocka_unit_test(test_sparse_file_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
