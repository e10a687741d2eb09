// SPDX-License-Identifier: GPL-2.0
/* The histogram slot function compiled for BPF and run by the kernel (BPF_PROG_TEST_RUN
 * with ctx_in) must agree with the userspace build of the same header on every value. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "hist.h"
#include "selftest.skel.h"

#define N 64

static __u64 rnd(__u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

int main(void)
{
	struct selftest_bpf *skel = selftest_bpf__open_and_load();
	__u64 seed = 0x9e3779b97f4a7c15ULL, checked = 0, bad = 0;
	int t = 0;

	if (!skel && geteuid() != 0 && !(getenv("CI") && !strcmp(getenv("CI"), "true"))) {
		printf("ok 1 - test_bpf_hist # SKIP needs root\n");
		return 0;
	}
	if (!skel) {
		printf("not ok 1 - load selftest.bpf.o (run as root)\n");
		return 1;
	}
	printf("ok %d - raw_tp selftest program loaded\n", ++t);
	for (int round = 0; round < 64; round++) {
		__u64 args[1] = { N };
		LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = args, .ctx_size_in = sizeof(args));

		for (int i = 0; i < N; i++) {
			__u64 v;

			if (round ==
			    0) /* edges: small values, powers of two and their neighbours */
				v = i < 20 ? (__u64)i : (1ULL << (i - 20 + 4)) - 1 + (i & 1) * 2;
			else
				v = rnd(&seed) >> (rnd(&seed) % 64);
			skel->bss->values[i] = v;
		}
		if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.selftest_slots), &opts)) {
			printf("not ok %d - BPF_PROG_TEST_RUN failed\n", ++t);
			selftest_bpf__destroy(skel);
			return 1;
		}
		for (int i = 0; i < N; i++, checked++) {
			__u64 v = skel->bss->values[i];

			if (skel->bss->slots[i] != hist_slot(v)) {
				if (bad++ < 5)
					printf("# value %llu: kernel slot %u, userspace %u\n",
					       (unsigned long long)v, skel->bss->slots[i],
					       hist_slot(v));
			}
		}
	}
	printf("%s %d - kernel and userspace slots agree on %llu values (%llu differ)\n",
	       bad ? "not ok" : "ok", ++t, (unsigned long long)checked, (unsigned long long)bad);
	selftest_bpf__destroy(skel);
	return bad ? 1 : 0;
}
