// SPDX-License-Identifier: GPL-2.0
/* Unit tests of rdma_privs_keep(): what the RDMA tracer keeps once attached. CAP_SYS_ADMIN
 * only where kernel.perf_event_paranoid is above 2 (Debian's default 3 refuses every
 * perf_event_open without it), CAP_DAC_READ_SEARCH only without -p. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <linux/capability.h>
#include "rdma/rdma_tracer.h"

#define CAP(c) (1ull << (c))

static void test_keep(void **state)
{
	const __u64 base = CAP(CAP_PERFMON) | CAP(CAP_BPF) | CAP(CAP_SYS_PTRACE);

	(void)state;
	assert_true(rdma_privs_keep(1234, 2) == base);
	assert_true(rdma_privs_keep(0, 2) == (base | CAP(CAP_DAC_READ_SEARCH)));
	assert_true(rdma_privs_keep(1234, 1) == base);
	assert_true(rdma_privs_keep(1234, -1) == base);
	assert_true(rdma_privs_keep(1234, -2) == base); /* unreadable: upstream's rule */
	assert_true(rdma_privs_keep(1234, 3) == (base | CAP(CAP_SYS_ADMIN)));
	assert_true(rdma_privs_keep(0, 4) ==
		    (base | CAP(CAP_DAC_READ_SEARCH) | CAP(CAP_SYS_ADMIN)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
