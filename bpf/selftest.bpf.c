// SPDX-License-Identifier: GPL-2.0
/* Test-only program: runs the shared histogram slot function inside the kernel through
 * BPF_PROG_TEST_RUN, so tests/bpf/test_bpf_hist.c can compare the BPF-compiled math with
 * the userspace one value by value. Not loaded by tailtrace. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "hist.h"

#define SELFTEST_VALUES 64

__u64 values[SELFTEST_VALUES];
__u32 slots[SELFTEST_VALUES];

/* raw_tp programs take their arguments from ctx_in: args[0] is the number of values. */
SEC("raw_tp")
int selftest_slots(__u64 *ctx)
{
	__u64 n = ctx[0];

	for (int i = 0; i < SELFTEST_VALUES; i++) {
		if (i >= n)
			break;
		slots[i] = hist_slot(values[i]);
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
