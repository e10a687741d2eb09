// SPDX-License-Identifier: GPL-2.0
/* Unit tests of where a function entry's uprobe goes: on the first instruction x86
 * uprobes emulate, past single-stepped ones that change nothing the probe reads. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "lib/uprobe_entry.h"

static void test_endbr64_bytes(void **state)
{
	static const unsigned char endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55 };
	static const unsigned char endbr32[] = { 0xf3, 0x0f, 0x1e, 0xfb };
	static const unsigned char push_rbp[] = { 0x55, 0x48, 0x89, 0xe5 };

	(void)state;
	assert_true(insn_is_endbr64(endbr64, sizeof(endbr64)));
	assert_false(insn_is_endbr64(endbr64, 3)); /* too short to tell */
	assert_false(insn_is_endbr64(endbr32, sizeof(endbr32)));
	assert_false(insn_is_endbr64(push_rbp, sizeof(push_rbp)));
}

static size_t skip_of(const unsigned char *b, size_t n, unsigned flags)
{
	return uprobe_entry_skip(b, n, flags, NULL);
}
#define SKIP(flags, ...)                                                                           \
	({                                                                                         \
		static const unsigned char code_[] = { __VA_ARGS__ };                              \
		skip_of(code_, sizeof(code_), flags);                                              \
	})

/* Entries as compilers write them: where the probe lands, or 0 for the entry itself. */
static void test_skip_to_emulated(void **state)
{
	unsigned insns = 9;
	static const unsigned char cet_post[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x48,
						  0x85, 0xf6, 0x74, 0x10 };

	(void)state;
	/* push %rbp: emulated already */
	assert_int_equal(SKIP(UPROBE_READS_MEMORY | UPROBE_RETURN, 0x55, 0x48, 0x89, 0xe5), 0);
	/* endbr64; push %r15 */
	assert_int_equal(SKIP(UPROBE_RETURN, 0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x57), 4);
	/* endbr64; test %rsi,%rsi; je: flags only, onto the branch */
	assert_int_equal(uprobe_entry_skip(cet_post, sizeof(cet_post), UPROBE_READS_MEMORY, &insns),
			 7);
	assert_int_equal(insns, 2);
	/* testb $1,-0x10c(%rdi); je (ucp_request_check_status), a return probe too */
	assert_int_equal(SKIP(UPROBE_RETURN, 0xf6, 0x87, 0xf4, 0xfe, 0xff, 0xff, 0x01, 0x74, 0x0f),
			 7);
	/* mov %rdx,%r10; mov %rsp,%rbp (neither is an argument); push %r15 */
	assert_int_equal(SKIP(UPROBE_RETURN, 0x49, 0x89, 0xd2, 0x48, 0x89, 0xe5, 0x41, 0x57), 6);
	/* cmpb $0,0x1234(%rip); jne */
	assert_int_equal(SKIP(UPROBE_READS_MEMORY, 0x80, 0x3d, 0x34, 0x12, 0, 0, 0, 0x75, 0x02), 7);
	/* movzbl 0x8(%rdi),%eax; mov $1,%ah; xor %r11d,%r11d; nopl 0(%rax) */
	assert_int_equal(SKIP(UPROBE_READS_MEMORY, 0x0f, 0xb6, 0x47, 0x08, 0xb4, 0x01, 0x45, 0x31,
			      0xdb, 0x0f, 0x1f, 0x40, 0x00),
			 9);
	/* mov $0x10,%eax; call */
	assert_int_equal(SKIP(0, 0xb8, 0x10, 0, 0, 0, 0xe8, 0, 0, 0, 0), 5);
}

/* A memory write passes only when the programs read registers and no return probe
 * shares the site: the perftest callback (subl $1,0xc(%rdx); jmp). */
static void test_skip_memory_writes(void **state)
{
	(void)state;
	assert_int_equal(SKIP(0, 0x83, 0x6a, 0x0c, 0x01, 0xe9, 0, 0, 0, 0), 4);
	assert_int_equal(SKIP(UPROBE_READS_MEMORY, 0x83, 0x6a, 0x0c, 0x01, 0xe9, 0, 0, 0, 0), 0);
	assert_int_equal(SKIP(UPROBE_RETURN, 0x83, 0x6a, 0x0c, 0x01, 0xe9, 0, 0, 0, 0), 0);
	/* mov %eax,(%rsp,%rcx,4) (SIB); push */
	assert_int_equal(SKIP(0, 0x89, 0x04, 0x8c, 0x53), 3);
	/* cmp does not write its r/m: cmpl $3,0x10(%rdi); jg */
	assert_int_equal(SKIP(UPROBE_RETURN, 0x83, 0x7f, 0x10, 0x03, 0x7f, 0x05), 4);
}

/* What the probe's programs read stops it: an argument register or the stack pointer
 * written, an instruction not understood, too far. */
static void test_skip_stops(void **state)
{
	(void)state;
	assert_int_equal(SKIP(0, 0x48, 0x89, 0xc7, 0x53), 0);       /* mov %rax,%rdi */
	assert_int_equal(SKIP(0, 0x48, 0x83, 0xec, 0x08, 0x53), 0); /* sub $8,%rsp */
	assert_int_equal(SKIP(0, 0xb6, 0x01, 0x53), 0);             /* mov $1,%dh: part of rdx */
	assert_int_equal(SKIP(0, 0x40, 0xb6, 0x01, 0x53), 0);       /* mov $1,%sil */
	assert_int_equal(SKIP(0, 0x4d, 0x89, 0xc8, 0x53), 0);       /* mov %r9,%r8 */
	assert_int_equal(SKIP(0, 0x8d, 0x47, 0x01, 0xc3), 0);       /* lea; ret: no landing */
	assert_int_equal(SKIP(0, 0xf7, 0xe1, 0x53), 0);             /* mul %ecx writes rdx */
	assert_int_equal(SKIP(0, 0x41, 0x90, 0x53), 0);             /* xchg %eax,%r8d */
	/* five tests before the branch: past UPROBE_SKIP_MAX_INSNS */
	assert_int_equal(
		SKIP(0, 0x85, 0xc0, 0x85, 0xc0, 0x85, 0xc0, 0x85, 0xc0, 0x85, 0xc0, 0x74, 0x00), 0);
	assert_int_equal(SKIP(0, 0x85, 0xc0, 0x85, 0xc0, 0x85, 0xc0, 0x85, 0xc0, 0x74, 0x00), 8);
	/* cut short inside an instruction */
	assert_int_equal(SKIP(0, 0xf6, 0x87, 0xf4, 0xfe), 0);
	assert_int_equal(SKIP(0, 0x48, 0x85), 0);
}

/* Branches into the passed instructions, found by their encodings anywhere in a window. */
static void test_branches_into(void **state)
{
	unsigned char w[64] = { 0 };

	(void)state;
	/* entry at 16, skip 7: nothing branches */
	assert_false(code_branches_into(w, sizeof(w), 16, 7));
	/* jne rel8 at 40 back to 23 (the landing): into */
	w[40] = 0x75, w[41] = (unsigned char)(23 - 42);
	assert_true(code_branches_into(w, sizeof(w), 16, 7));
	/* back to the entry itself: the probe would have fired there too */
	w[41] = (unsigned char)(16 - 42);
	assert_false(code_branches_into(w, sizeof(w), 16, 7));
	w[40] = w[41] = 0;
	/* call rel32 at 2 to 20 */
	w[2] = 0xe8, w[3] = 20 - 7;
	assert_true(code_branches_into(w, sizeof(w), 16, 7));
	w[2] = w[3] = 0;
	/* jcc rel32 at 50 to 18 */
	w[50] = 0x0f, w[51] = 0x84;
	w[52] = (unsigned char)(18 - 56), w[53] = w[54] = w[55] = 0xff;
	assert_true(code_branches_into(w, sizeof(w), 16, 7));
}

static void write_image(const char *path, const unsigned char *img, size_t n)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(img, 1, n, f), n);
	fclose(f);
}

/* A file with a function at 0x20 beginning with endbr64 and one at 0x40 without. */
static void test_entry_offset_in_file(void **state)
{
	char path[] = "/tmp/tt_uprobe_entry.XXXXXX";
	unsigned char img[0x60] = { 0 };
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	img[0x20] = 0xf3, img[0x21] = 0x0f, img[0x22] = 0x1e, img[0x23] = 0xfa;
	img[0x24] = 0x41, img[0x25] = 0x57; /* push %r15 */
	img[0x40] = 0x55, img[0x41] = 0x48;
	write_image(path, img, sizeof(img));
#if defined(__x86_64__)
	assert_int_equal(uprobe_entry_offset(path, 0x20, UPROBE_RETURN), 0x24);
	/* a jmp elsewhere to the push: the probe stays on the entry */
	img[0x50] = 0xeb, img[0x51] = (unsigned char)(0x24 - 0x52);
	write_image(path, img, sizeof(img));
	assert_int_equal(uprobe_entry_offset(path, 0x20, UPROBE_RETURN), 0x20);
#else
	assert_int_equal(uprobe_entry_offset(path, 0x20, UPROBE_RETURN), 0x20);
#endif
	assert_int_equal(uprobe_entry_offset(path, 0x40, 0), 0x40);
	/* past the end, or no such file: the entry as given */
	assert_int_equal(uprobe_entry_offset(path, 0x5e, 0), 0x5e);
	assert_int_equal(uprobe_entry_offset(path, 0x100, 0), 0x100);
	unlink(path);
	assert_int_equal(uprobe_entry_offset(path, 0x20, 0), 0x20);
}

static void test_moved_note(void **state)
{
	char b[80] = "x";

	(void)state;
	uprobe_moved_note(b, sizeof(b), 0x1a20, 0x1a27);
	assert_string_equal(b, ", probed at +7 past single-stepped instructions");
	uprobe_moved_note(b, sizeof(b), 0x1a20, 0x1a20);
	assert_string_equal(b, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endbr64_bytes),
		cmocka_unit_test(test_skip_to_emulated),
		cmocka_unit_test(test_skip_memory_writes),
		cmocka_unit_test(test_skip_stops),
		cmocka_unit_test(test_branches_into),
		cmocka_unit_test(test_entry_offset_in_file),
		cmocka_unit_test(test_moved_note),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
