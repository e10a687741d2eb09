// SPDX-License-Identifier: GPL-2.0
/* Unit tests of user/rdma/rdma_debuginfo.c on copies of this very binary made the way
 * distributions make them (strip, objcopy --only-keep-debug, MiniDebugInfo with xz): a
 * static function's file offset is checked against where the dynamic loader put it
 * (dl_iterate_phdr), the build-id against the note the loader mapped; hostile debug files
 * (another build-id, a FIFO, an xz bomb, garbage) are refused without blocking. */
#include <errno.h>
#include <link.h>
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
#include "rdma/rdma_debuginfo.h"

static char tmp[64], exe[4096];

/* static, so only .symtab (and the debug copies) name it */
__attribute__((noinline, used)) static int dbg_marker_poll_cq(int x)
{
	return x * 3 + 1;
}

struct truth {
	uintptr_t addr;
	__u64 off;
	unsigned char id[RDMA_BUILD_ID_MAX];
	int idlen;
};

/* The main program (first object): the marker's file offset and the build-id note. */
static int main_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct truth *t = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t v = t->addr - info->dlpi_addr;

		if (ph->p_type == PT_LOAD && v >= ph->p_vaddr && v < ph->p_vaddr + ph->p_filesz)
			t->off = v - ph->p_vaddr + ph->p_offset;
		if (ph->p_type == PT_NOTE) {
			const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
			const char *end = p + ph->p_memsz;

			while (p + sizeof(ElfW(Nhdr)) <= end) {
				const ElfW(Nhdr) *n = (const void *)p;
				const char *name = p + sizeof(*n);
				const char *desc = name + ((n->n_namesz + 3) & ~3u);

				if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
				    !memcmp(name, "GNU", 4) && n->n_descsz <= RDMA_BUILD_ID_MAX) {
					memcpy(t->id, desc, n->n_descsz);
					t->idlen = (int)n->n_descsz;
				}
				p = desc + ((n->n_descsz + 3) & ~3u);
			}
		}
	}
	return 1; /* the first object is the program */
}

static struct truth truth_of_marker(void)
{
	struct truth t = { .addr = (uintptr_t)dbg_marker_poll_cq };

	dl_iterate_phdr(main_object, &t);
	return t;
}

static void sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

/* the debug root's file for this binary's build-id */
static void debug_path(const char *root, char *out, size_t len)
{
	struct truth t = truth_of_marker();

	rdma_build_id_path(t.id, (size_t)t.idlen, root, out, len);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/tt_dbginfo.XXXXXX");
	if (!mkdtemp(tmp) || readlink("/proc/self/exe", exe, sizeof(exe) - 1) < 0)
		return -1;
	sh("strip --strip-all -o %s/stripped %s", tmp, exe);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	return system(cmd) ? -1 : 0;
}

static void test_build_id_path(void **state)
{
	static const unsigned char id[] = { 0xe1, 0xc7, 0xd0, 0x22, 0x0a };
	char p[256];

	(void)state;
	rdma_build_id_path(id, sizeof(id), "/usr/lib/debug", p, sizeof(p));
	assert_string_equal(p, "/usr/lib/debug/.build-id/e1/c7d0220a.debug");
}

static void test_build_id_is_the_loaded_note(void **state)
{
	struct truth t = truth_of_marker();
	unsigned char id[RDMA_BUILD_ID_MAX];
	char p[4200];

	(void)state;
	assert_true(t.idlen > 0);
	assert_int_equal(elf_build_id(exe, id, sizeof(id)), t.idlen);
	assert_memory_equal(id, t.id, (size_t)t.idlen);
	/* strip keeps the note: the stripped copy names the same debug file */
	snprintf(p, sizeof(p), "%s/stripped", tmp);
	assert_int_equal(elf_build_id(p, id, sizeof(id)), t.idlen);
	assert_memory_equal(id, t.id, (size_t)t.idlen);
	assert_int_equal(elf_build_id("/proc/self/status", id, sizeof(id)), -ENOEXEC);
}

static void test_debug_file_by_build_id(void **state)
{
	struct truth t = truth_of_marker();
	struct rdma_debug_syms *d;
	char root[128], dbg[4200], lib[128];
	__u64 off = 0;

	(void)state;
	snprintf(root, sizeof(root), "%s/debug", tmp);
	snprintf(lib, sizeof(lib), "%s/stripped", tmp);
	debug_path(root, dbg, sizeof(dbg));
	sh("mkdir -p $(dirname %s) && objcopy --only-keep-debug %s %s", dbg, exe, dbg);
	assert_int_equal(rdma_debug_open(lib, 0, root, 0, &d), 0);
	assert_string_equal(rdma_debug_how(d), "debug-file");
	assert_string_equal(rdma_debug_source(d), dbg);
	assert_int_equal(rdma_debug_find(d, "dbg_marker_poll_cq", &off), 0);
	assert_int_equal(off, t.off);
	assert_int_equal(rdma_debug_find(d, "no_such_function_here", &off), -ENOENT);
	rdma_debug_close(d);
	/* the process's root first: this process's root is /, so the same file is found */
	assert_int_equal(rdma_debug_open(lib, getpid(), root, 1, &d), 0);
	assert_non_null(strstr(rdma_debug_source(d), "/root/"));
	rdma_debug_close(d);
	sh("rm -rf %s", root);
}

static void test_debug_file_refused(void **state)
{
	struct rdma_debug_syms *d = NULL;
	char root[128], dbg[4200], lib[128];

	(void)state;
	snprintf(root, sizeof(root), "%s/bad", tmp);
	snprintf(lib, sizeof(lib), "%s/stripped", tmp);
	debug_path(root, dbg, sizeof(dbg));
	/* another binary's debug file at this build-id's name */
	sh("mkdir -p $(dirname %s) && objcopy --only-keep-debug /bin/sh %s", dbg, dbg);
	assert_int_equal(rdma_debug_open(lib, 0, root, 0, &d), -ENOENT);
	assert_null(d);
	/* a FIFO must not block the open */
	sh("rm -f %s && mkfifo %s", dbg, dbg);
	alarm(10);
	assert_int_equal(rdma_debug_open(lib, 0, root, 0, &d), -ENOENT);
	alarm(0);
	sh("rm -rf %s", root);
}

static void test_gnu_debugdata(void **state)
{
	struct truth t = truth_of_marker();
	struct rdma_debug_syms *d;
	char lib[128];
	__u64 off = 0;

	(void)state;
	snprintf(lib, sizeof(lib), "%s/mini", tmp);
	/* as gdb's manual ("MiniDebugInfo") and Fedora's find-debuginfo make it */
	sh("cd %s && nm -D --defined-only --format=posix %s | cut -d' ' -f1 | sort >dyn && "
	   "nm --defined-only --format=posix %s | awk '$2 ~ /^[Tt]$/ {print $1}' | sort >fn && "
	   "comm -13 dyn fn >keep && objcopy --only-keep-debug %s m && "
	   "objcopy -S --remove-section .gdb_index --remove-section .comment "
	   "--keep-symbols=keep m && xz -kf m && "
	   "objcopy --add-section .gnu_debugdata=m.xz stripped mini",
	   tmp, exe, exe, exe);
	assert_int_equal(rdma_debug_open(lib, 0, "/nonexistent", 0, &d), 0);
	assert_string_equal(rdma_debug_how(d), "gnu-debugdata");
	assert_int_equal(rdma_debug_find(d, "dbg_marker_poll_cq", &off), 0);
	assert_int_equal(off, t.off);
	rdma_debug_close(d);
}

static void test_gnu_debugdata_refused(void **state)
{
	struct rdma_debug_syms *d = NULL;
	char lib[128];

	(void)state;
	snprintf(lib, sizeof(lib), "%s/bomb", tmp);
	/* the MiniDebugInfo ELF of test_gnu_debugdata, which is taken, followed by 100 MiB
	 * of zeros (~15 KB compressed): refused for its size alone */
	sh("cd %s && (cat m; head -c 100M /dev/zero) | xz -1 >bomb.xz && "
	   "objcopy --add-section .gnu_debugdata=bomb.xz stripped bomb",
	   tmp);
	assert_int_equal(rdma_debug_open(lib, 0, "/nonexistent", 0, &d), -ENOENT);
	assert_null(d);
	/* not xz, and xz of something that is not ELF */
	snprintf(lib, sizeof(lib), "%s/junk", tmp);
	sh("cd %s && head -c 4096 /dev/urandom >junk.bin && "
	   "objcopy --add-section .gnu_debugdata=junk.bin stripped junk",
	   tmp);
	assert_int_equal(rdma_debug_open(lib, 0, "/nonexistent", 0, &d), -ENOENT);
	snprintf(lib, sizeof(lib), "%s/notelf", tmp);
	sh("cd %s && echo hello | xz >notelf.xz && "
	   "objcopy --add-section .gnu_debugdata=notelf.xz stripped notelf",
	   tmp);
	assert_int_equal(rdma_debug_open(lib, 0, "/nonexistent", 0, &d), -ENOENT);
	/* neither a debug file nor a section */
	snprintf(lib, sizeof(lib), "%s/stripped", tmp);
	assert_int_equal(rdma_debug_open(lib, 0, "/nonexistent", 0, &d), -ENOENT);
	assert_int_equal(dbg_marker_poll_cq(1), 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_id_path),
		cmocka_unit_test(test_build_id_is_the_loaded_note),
		cmocka_unit_test(test_debug_file_by_build_id),
		cmocka_unit_test(test_debug_file_refused),
		cmocka_unit_test(test_gnu_debugdata),
		cmocka_unit_test(test_gnu_debugdata_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
