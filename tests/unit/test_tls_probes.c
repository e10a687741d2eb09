// SPDX-License-Identifier: GPL-2.0
/* Unit tests of collect/tls_probes.c: which mapped files are libssl, and finding the four
 * functions in a library from its own symbol table (this host's libssl when it has one). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "collect/tls_probes.h"

static void test_is_libssl(void **state)
{
	(void)state;
	assert_true(tls_is_libssl("/usr/lib/x86_64-linux-gnu/libssl.so.3"));
	assert_true(tls_is_libssl("/usr/lib64/libssl.so.1.1"));
	assert_true(tls_is_libssl("libssl.so"));
	assert_false(tls_is_libssl("/usr/lib/x86_64-linux-gnu/libcrypto.so.3"));
	assert_false(tls_is_libssl("/opt/app/libssl.so3"));        /* not a version suffix */
	assert_false(tls_is_libssl("/opt/libssl.so.3/libfoo.so")); /* a directory's name */
	assert_false(tls_is_libssl("/usr/lib/libssl3.so"));        /* NSS's, not OpenSSL's */
}

static void test_missing_library_is_one_line(void **state)
{
	struct tls_lib lib;
	char err[256];

	(void)state;
	setenv("TAILTRACE_LIBSSL", "/nonexistent/libssl.so.3", 1);
	assert_int_equal(tls_lib_open(0, &lib, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "--tls-uprobes: libssl not found"));
	assert_null(strchr(err, '\n'));
	unsetenv("TAILTRACE_LIBSSL");
}

/* A library without the functions (libc) is refused by name. */
static void test_not_openssl_refused(void **state)
{
	static const char *const libc[] = { "/usr/lib/x86_64-linux-gnu/libc.so.6",
					    "/usr/lib/aarch64-linux-gnu/libc.so.6",
					    "/usr/lib64/libc.so.6" };
	struct tls_lib lib;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(libc) / sizeof(libc[0]); i++) {
		if (access(libc[i], R_OK))
			continue;
		setenv("TAILTRACE_LIBSSL", libc[i], 1);
		assert_int_equal(tls_lib_open(0, &lib, err, sizeof(err)), -ENOENT);
		assert_non_null(strstr(err, "SSL_write not found"));
		unsetenv("TAILTRACE_LIBSSL");
		return;
	}
	fail_msg("no libc.so.6 found to try");
}

/* The host's libssl, where it has one (a host without one gets the one-line refusal):
 * the functions at distinct offsets. */
static void test_host_libssl(void **state)
{
	struct tls_lib lib;
	char err[256];
	int r;

	(void)state;
	r = tls_lib_open(0, &lib, err, sizeof(err));
	if (r == -ENOENT) {
		assert_non_null(strstr(err, "--tls-uprobes: libssl not found"));
		return;
	}
	assert_int_equal(r, 0);
	assert_true(lib.fd >= 0);
	assert_true(lib.off[TLS_FN_WRITE] && lib.off[TLS_FN_READ]);
	assert_true(lib.off[TLS_FN_WRITE] != lib.off[TLS_FN_READ]);
	if (lib.off[TLS_FN_WRITE_EX])
		assert_true(lib.off[TLS_FN_WRITE_EX] != lib.off[TLS_FN_WRITE]);
	assert_non_null(strstr(lib.shown, "libssl.so"));
	tls_lib_close(&lib);
	assert_int_equal(lib.fd, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_is_libssl),
		cmocka_unit_test(test_missing_library_is_one_line),
		cmocka_unit_test(test_not_openssl_refused),
		cmocka_unit_test(test_host_libssl),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
