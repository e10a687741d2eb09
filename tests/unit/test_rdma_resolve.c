// SPDX-License-Identifier: GPL-2.0
/* Unit tests of user/rdma/rdma_resolve.c: spec parsing, and ELF/maps lookups checked against
 * what the dynamic loader itself says (this binary's functions, dlvsym on the stand-in
 * provider), not against the code's own output. */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "rdma/rdma_resolve.h"
#include "lib/util.h"

static char err[256];

static void test_spec_symbol_role_inferred(void **state)
{
	struct rdma_probe_spec s;

	(void)state;
	assert_int_equal(rdma_spec_parse("libmlx5.so.1:mlx5_post_send", &s, err, sizeof(err)), 0);
	assert_string_equal(s.lib, "libmlx5.so.1");
	assert_string_equal(s.symbol, "mlx5_post_send");
	assert_int_equal(s.role, RDMA_FN_POST_SEND);
	assert_false(s.has_offset);
	assert_int_equal(rdma_spec_parse("/x/librxe.so:rxe_poll_cq", &s, err, sizeof(err)), 0);
	assert_int_equal(s.role, RDMA_FN_POLL_CQ);
	assert_int_equal(rdma_spec_parse("librxe.so:rxe_post_recv", &s, err, sizeof(err)), 0);
	assert_int_equal(s.role, RDMA_FN_POST_RECV);
}

static void test_spec_offset_needs_role(void **state)
{
	struct rdma_probe_spec s;

	(void)state;
	assert_int_equal(rdma_spec_parse("libmlx5.so.1:0x1a2b", &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "needs a role"));
	assert_int_equal(rdma_spec_parse("poll_cq=/opt/lib/libx.so:0x1A2b", &s, err, sizeof(err)),
			 0);
	assert_int_equal(s.role, RDMA_FN_POLL_CQ);
	assert_true(s.has_offset);
	assert_int_equal(s.offset, 0x1a2b);
	assert_string_equal(s.lib, "/opt/lib/libx.so");
}

static void test_spec_bad_input(void **state)
{
	static const char *const bad[] = {
		"nocolon",
		":sym",
		"lib:",
		"post_send=lib:0x",
		"post_send=lib:0xzz",
		"lib:some_function", /* role cannot be inferred */
		"lib:bad name",
		"lib:srq_post_recv_foo",
	};
	struct rdma_probe_spec s;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		err[0] = '\0';
		assert_int_equal(rdma_spec_parse(bad[i], &s, err, sizeof(err)), -EINVAL);
		assert_true(strlen(err) > 0);
		assert_null(strchr(err, '\n'));
	}
}

static void test_spec_equals_in_path(void **state)
{
	struct rdma_probe_spec s;

	(void)state;
	/* "a=b" is not a role: the whole thing is the library path */
	assert_int_equal(rdma_spec_parse("/tmp/a=b/lib.so:x_post_send", &s, err, sizeof(err)), 0);
	assert_string_equal(s.lib, "/tmp/a=b/lib.so");
	assert_int_equal(rdma_spec_parse("post_recv=/tmp/a=b/lib.so:0x10", &s, err, sizeof(err)),
			 0);
	assert_string_equal(s.lib, "/tmp/a=b/lib.so");
	assert_int_equal(s.role, RDMA_FN_POST_RECV);
}

static void test_fn_names(void **state)
{
	(void)state;
	for (int i = 0; i < RDMA_FN__MAX; i++)
		assert_int_equal(rdma_fn_parse(rdma_fn_name(i)), i);
	assert_int_equal(rdma_fn_parse("post"), -EINVAL);
	assert_int_equal(rdma_fn_from_symbol("mlx5_post_srq_recv"), -ENOENT);
}

static void test_maps_parse(void **state)
{
	struct proc_map m;

	(void)state;
	assert_int_equal(proc_map_parse("7f12a0000000-7f12a0021000 r-xp 00002000 fd:01 1234567"
					"    /usr/lib/x86_64-linux-gnu/libmlx5.so.1.24.44.0\n",
					&m),
			 0);
	assert_int_equal(m.start, 0x7f12a0000000ull);
	assert_int_equal(m.end, 0x7f12a0021000ull);
	assert_int_equal(m.pgoff, 0x2000);
	assert_int_equal(m.inode, 1234567);
	assert_string_equal(m.perms, "r-xp");
	assert_string_equal(m.path, "/usr/lib/x86_64-linux-gnu/libmlx5.so.1.24.44.0");
	assert_int_equal(proc_map_parse("7f00-7f10 rw-p 00000000 00:00 0 \n", &m), 0);
	assert_string_equal(m.path, "");
	assert_int_equal(proc_map_parse("1000-2000 r-xp 0 08:01 5 /a dir/lib x.so\n", &m), 0);
	assert_string_equal(m.path, "/a dir/lib x.so");
	assert_int_equal(proc_map_parse("garbage\n", &m), -EINVAL);
	assert_int_equal(proc_map_parse("2000-1000 r-xp 0 08:01 5 /x\n", &m), -EINVAL);
}

static void test_maps_find(void **state)
{
	static const char maps[] = "55d0c0000000-55d0c0001000 r--p 00000000 08:01 77 /usr/bin/app\n"
				   "55d0c0001000-55d0c0005000 r-xp 00001000 08:01 77 /usr/bin/app\n"
				   "7f0000000000-7f0000100000 rwxp 00000000 00:00 0 \n"
				   "7ffd0000000-7ffd0001000 r-xp 00000000 00:00 0 [vdso]\n";
	struct proc_map m;
	__u64 off = 0;
	FILE *f;

	(void)state;
	f = fmemopen((void *)maps, sizeof(maps) - 1, "r");
	assert_non_null(f);
	assert_int_equal(proc_maps_find(f, 0x55d0c0002345ull, &m, &off), 0);
	assert_int_equal(off, 0x2345);
	assert_string_equal(m.path, "/usr/bin/app");
	rewind(f);
	/* JIT code in anonymous memory cannot be uprobed */
	assert_int_equal(proc_maps_find(f, 0x7f0000000010ull, &m, &off), -ENOENT);
	rewind(f);
	assert_int_equal(proc_maps_find(f, 0x7ffd0000010ull, &m, &off), -ENOENT);
	rewind(f);
	assert_int_equal(proc_maps_find(f, 0x10, &m, &off), -ENOENT);
	fclose(f);
}

/* a static function: only .symtab knows it */
__attribute__((noinline)) static int resolve_target(int x)
{
	return x * 3 + 1;
}

static void test_self_symbol_matches_mapping(void **state)
{
	char exe[PATH_MAX];
	struct proc_map m;
	__u64 sym_off = 0, map_off = 0;
	bool from_symtab = false;
	ssize_t n;

	(void)state;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	assert_int_equal(resolve_target(1), 4);
	assert_int_equal(elf_find_function(exe, "resolve_target", &sym_off, &from_symtab), 0);
	assert_true(from_symtab);
	assert_int_equal(
		rdma_addr_to_file(getpid(), (__u64)(uintptr_t)&resolve_target, &m, &map_off), 0);
	assert_string_equal(m.path, exe);
	assert_int_equal(map_off, sym_off);
	assert_int_equal(elf_has_symtab(exe), 1);
	assert_int_equal(elf_find_function(exe, "no_such_function_here", &sym_off, NULL), -ENOENT);
}

static void test_not_elf_and_missing(void **state)
{
	char tmp[] = "/tmp/tt_resolve_XXXXXX";
	__u64 off;
	int fd;

	(void)state;
	fd = mkstemp(tmp);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello, not an ELF file\n", 23), 23);
	close(fd);
	assert_int_equal(elf_find_function(tmp, "x", &off, NULL), -ENOEXEC);
	unlink(tmp);
	assert_int_equal(elf_find_function("/nonexistent/lib.so", "x", &off, NULL), -ENOENT);
	assert_int_equal(rdma_find_library(0, "/nonexistent/lib.so", tmp, sizeof(tmp), &fd),
			 -ENOENT);
	assert_int_equal(rdma_find_library(0, "libtt-no-such-lib.so", tmp, sizeof(tmp), &fd),
			 -ENOENT);
	/* a FIFO named as a library is refused without blocking on its open */
	assert_int_equal(mkfifo("/tmp/tt_resolve_fifo", 0600), 0);
	assert_int_equal(rdma_find_library(0, "/tmp/tt_resolve_fifo", tmp, sizeof(tmp), &fd),
			 -ENOENT);
	assert_int_equal(elf_find_function("/tmp/tt_resolve_fifo", "x", &off, NULL), -ENOEXEC);
	unlink("/tmp/tt_resolve_fifo");
}

/* The stand-in provider ships ibv_open_device@@IBVERBS_1.1 and a compat
 * ibv_open_device@IBVERBS_1.0: lookup must agree with the loader's default binding. */
static void test_versioned_dynsym_against_loader(void **state)
{
	char exe[PATH_MAX], lib[PATH_MAX + 32], full[PATH_MAX + 32], mapped[PATH_MAX];
	__u64 off = 0, v11_off = 0, v10_off = 0;
	void *h, *v11, *v10;
	bool from_symtab = true;
	struct proc_map m;
	int fd;
	ssize_t n;

	(void)state;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	/* build/tests/unit/test_x -> build/rdma/ */
	snprintf(lib, sizeof(lib), "%s/../../rdma/libttstandin.so", dirname(exe));
	snprintf(full, sizeof(full), "%s/../../rdma/libttstandin.full.so", exe);
	if (access(lib, R_OK)) {
		skip();
		return;
	}
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	v11 = dlvsym(h, "ibv_open_device", "IBVERBS_1.1");
	v10 = dlvsym(h, "ibv_open_device", "IBVERBS_1.0");
	assert_non_null(v11);
	assert_non_null(v10);
	assert_ptr_not_equal(v11, v10);
	assert_int_equal(rdma_addr_to_file(getpid(), (__u64)(uintptr_t)v11, &m, &v11_off), 0);
	assert_int_equal(rdma_addr_to_file(getpid(), (__u64)(uintptr_t)v10, &m, &v10_off), 0);
	assert_int_equal(elf_find_function(lib, "ibv_open_device", &off, &from_symtab), 0);
	assert_false(from_symtab); /* stripped: answered by .dynsym */
	assert_int_equal(off, v11_off);
	assert_int_not_equal(off, v10_off);
	assert_int_equal(elf_has_symtab(lib), 0);
	if (!access(full, R_OK))
		assert_int_equal(elf_has_symtab(full), 1);
	/* the data-path functions are not exported */
	assert_int_equal(elf_find_function(lib, "si_post_send", &off, NULL), -ENOENT);
	/* the mapped library is found by name among this process's mappings */
	assert_int_equal(
		rdma_find_library(getpid(), "libttstandin.so", mapped, sizeof(mapped), &fd), 0);
	close(fd);
	assert_int_equal(
		rdma_find_exported(getpid(), "ttsi_plan", NULL, mapped, sizeof(mapped), &off, &fd),
		0);
	close(fd);
	assert_non_null(strstr(mapped, "libttstandin.so"));
	dlclose(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_symbol_role_inferred),
		cmocka_unit_test(test_spec_offset_needs_role),
		cmocka_unit_test(test_spec_bad_input),
		cmocka_unit_test(test_spec_equals_in_path),
		cmocka_unit_test(test_fn_names),
		cmocka_unit_test(test_maps_parse),
		cmocka_unit_test(test_maps_find),
		cmocka_unit_test(test_self_symbol_matches_mapping),
		cmocka_unit_test(test_not_elf_and_missing),
		cmocka_unit_test(test_versioned_dynsym_against_loader),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
