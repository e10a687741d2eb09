// SPDX-License-Identifier: GPL-2.0
/* Unit tests of lib/escape.c: what reaches a terminal from comm, paths and labels. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include "lib/escape.h"

static void test_plain_unchanged(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(tt_escape(out, sizeof(out), "/usr/lib/libmlx5.so.1 (ok)"), 26);
	assert_string_equal(out, "/usr/lib/libmlx5.so.1 (ok)");
	assert_string_equal(tt_esc("h\xc3\xa9llo"), "h\xc3\xa9llo"); /* UTF-8 passes */
}

static void test_controls_escaped(void **state)
{
	char out[128];

	(void)state;
	/* a terminal title change, a cursor move, a forged second line, DEL, a backslash */
	tt_escape(out, sizeof(out),
		  "a\x1b]0;pwned\x07"
		  "b\x1b[2Jc\nrdma: fake\rd\x7f\\");
	assert_string_equal(out, "a\\x1b]0;pwned\\x07b\\x1b[2Jc\\x0ardma: fake\\x0dd\\x7f\\x5c");
	assert_null(strpbrk(out, "\x1b\x07\n\r\x7f"));
}

static void test_cut_whole_escapes(void **state)
{
	char out[6];

	(void)state;
	/* "ab\x1b" needs 6 bytes + NUL: the escape is left out whole, not cut */
	assert_int_equal(tt_escape(out, sizeof(out), "ab\x1b"), 6);
	assert_string_equal(out, "ab");
	assert_int_equal(tt_escape(out, sizeof(out), "abcdefgh"), 8);
	assert_string_equal(out, "abcde");
	assert_int_equal(tt_escape(NULL, 0, "\t"), 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_unchanged),
		cmocka_unit_test(test_controls_escaped),
		cmocka_unit_test(test_cut_whole_escapes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
