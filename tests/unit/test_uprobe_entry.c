// SPDX-License-Identifier: GPL-2.0
/* Unit tests of where a function entry's uprobe goes: after a leading endbr64 on x86-64,
 * at the entry otherwise. */
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

/* A file with a function at 0x20 beginning with endbr64 and one at 0x40 without. */
static void test_entry_offset_in_file(void **state)
{
	char path[] = "/tmp/tt_uprobe_entry.XXXXXX";
	unsigned char img[0x60] = { 0 };
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	img[0x20] = 0xf3, img[0x21] = 0x0f, img[0x22] = 0x1e, img[0x23] = 0xfa;
	img[0x40] = 0x55, img[0x41] = 0x48;
	assert_int_equal(write(fd, img, sizeof(img)), sizeof(img));
	close(fd);
#if defined(__x86_64__)
	assert_int_equal(uprobe_entry_offset(path, 0x20), 0x24);
#else
	assert_int_equal(uprobe_entry_offset(path, 0x20), 0x20);
#endif
	assert_int_equal(uprobe_entry_offset(path, 0x40), 0x40);
	/* past the end, or no such file: the entry as given */
	assert_int_equal(uprobe_entry_offset(path, 0x5e), 0x5e);
	unlink(path);
	assert_int_equal(uprobe_entry_offset(path, 0x20), 0x20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endbr64_bytes),
		cmocka_unit_test(test_entry_offset_in_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
