// SPDX-License-Identifier: GPL-2.0
/* Unit tests of lib/denial.c: /proc/PID/status texts as the kernel writes them (one from
 * a podman container under its default seccomp profile, one from root on the host) in,
 * the one line naming why bpf() or perf_event_open() said EPERM out. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>
#include "lib/denial.h"

#define BIT(cap)       (1ULL << (cap))
#define CAP_NET_ADMIN_ 12
#define CAP_SYS_ADMIN_ 21
#define CAP_PERFMON_   38
#define CAP_BPF_       39

static const __u64 load_needs[] = { BIT(CAP_BPF_) | BIT(CAP_SYS_ADMIN_),
				    BIT(CAP_PERFMON_) | BIT(CAP_SYS_ADMIN_), BIT(CAP_NET_ADMIN_) };

/* the manifest's capabilities (BPF, PERFMON, NET_ADMIN, SYS_NICE, SYS_PTRACE,
 * DAC_READ_SEARCH) under a runtime's default seccomp profile */
static const char container[] = "Name:\ttailtrace\n"
				"Umask:\t0022\n"
				"State:\tR (running)\n"
				"CapInh:\t0000000000000000\n"
				"CapPrm:\t000000c000881004\n"
				"CapEff:\t000000c000881004\n"
				"CapBnd:\t000000c000881004\n"
				"CapAmb:\t0000000000000000\n"
				"NoNewPrivs:\t1\n"
				"Seccomp:\t2\n"
				"Seccomp_filters:\t1\n"
				"Speculation_Store_Bypass:\tthread force mitigated\n";

static const char host_root[] = "Name:\tbash\n"
				"CapEff:\t000001ffffffffff\n"
				"NoNewPrivs:\t0\n"
				"Seccomp:\t0\n"
				"Seccomp_filters:\t0\n";

static void test_parse_container(void **state)
{
	struct proc_status st;

	(void)state;
	assert_int_equal(proc_status_parse(container, &st), 0);
	assert_true(st.have_capeff);
	assert_true(st.capeff == 0xc000881004ULL);
	assert_int_equal(st.seccomp, 2);
	assert_int_equal(st.seccomp_filters, 1);
	assert_int_equal(st.no_new_privs, 1);
}

static void test_parse_missing_and_bad(void **state)
{
	struct proc_status st;

	(void)state;
	/* an old kernel shows no Seccomp_filters; the fields stay unknown, not 0 */
	assert_int_equal(proc_status_parse("CapEff:\t0000000000000000\nSeccomp:\t0\n", &st), 0);
	assert_true(st.have_capeff && st.capeff == 0);
	assert_int_equal(st.seccomp_filters, -1);
	assert_int_equal(st.no_new_privs, -1);
	/* no CapEff, a garbled one, or a key that only starts like it */
	assert_int_equal(proc_status_parse("Seccomp:\t2\n", &st), -EINVAL);
	assert_false(st.have_capeff);
	assert_int_equal(proc_status_parse("CapEff:\tzz\n", &st), -EINVAL);
	assert_int_equal(proc_status_parse("CapEff:\t00ff junk\n", &st), -EINVAL);
	assert_int_equal(proc_status_parse("CapEffX:\t00ff\n", &st), -EINVAL);
	assert_int_equal(proc_status_parse("", &st), -EINVAL);
}

static void test_seccomp_named(void **state)
{
	struct proc_status st;
	char buf[400];

	(void)state;
	proc_status_parse(container, &st);
	assert_true(denial_cause(&st, false, "bpf()", load_needs, 3, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf,
			       "bpf() is blocked by a seccomp filter (Seccomp: 2, 1 filter, "
			       "NoNewPrivs: 1; CapEff 000000c000881004 has the capabilities)"));
	assert_null(strstr(buf, "MEMLOCK"));
	assert_null(strchr(buf, '\n'));
	denial_cause(&st, false, "perf_event_open()", load_needs, 1, buf, sizeof(buf));
	assert_true(strncmp(buf, "perf_event_open() is blocked by a seccomp filter", 48) == 0);
}

static void test_capability_first(void **state)
{
	struct proc_status st;
	char buf[400];

	(void)state;
	/* the container without CAP_BPF: the capability is the cause, the filter said too */
	proc_status_parse(container, &st);
	st.capeff &= ~BIT(CAP_BPF_);
	denial_cause(&st, false, "bpf()", load_needs, 3, buf, sizeof(buf));
	assert_string_equal(buf,
			    "CAP_BPF is missing (CapEff 0000004000881004); a seccomp filter is "
			    "in place too (Seccomp: 2), which must let bpf() and "
			    "perf_event_open() through");
	/* no seccomp, two missing: both named, CAP_SYS_ADMIN never asked for by name */
	proc_status_parse(host_root, &st);
	st.capeff &= ~(BIT(CAP_PERFMON_) | BIT(CAP_NET_ADMIN_) | BIT(CAP_SYS_ADMIN_));
	denial_cause(&st, false, NULL, load_needs, 3, buf, sizeof(buf));
	assert_string_equal(buf,
			    "CAP_PERFMON and CAP_NET_ADMIN are missing (CapEff 000001bfffdfefff)");
	st.capeff = 0;
	denial_cause(&st, false, NULL, load_needs, 3, buf, sizeof(buf));
	assert_string_equal(buf, "CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN are missing (CapEff "
				 "0000000000000000)");
	/* CAP_SYS_ADMIN alone stands in for CAP_BPF and CAP_PERFMON (kernels before 5.8) */
	st.capeff = BIT(CAP_SYS_ADMIN_) | BIT(CAP_NET_ADMIN_);
	assert_int_equal(denial_cause(&st, false, NULL, load_needs, 3, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
}

static void test_other_causes(void **state)
{
	struct proc_status st;
	char buf[400];

	(void)state;
	proc_status_parse(host_root, &st);
	/* everything held, no filter: before any call nothing to say */
	assert_int_equal(denial_cause(&st, false, NULL, load_needs, 3, buf, sizeof(buf)), 0);
	/* a call refused all the same: not seccomp, not a capability */
	denial_cause(&st, false, "bpf()", load_needs, 3, buf, sizeof(buf));
	assert_non_null(strstr(buf, "no seccomp filter (Seccomp: 0)"));
	assert_non_null(strstr(buf, "AppArmor"));
	/* a rootless container: full CapEff in a user namespace */
	denial_cause(&st, true, "bpf()", load_needs, 3, buf, sizeof(buf));
	assert_non_null(strstr(buf, "bpf() is refused in a user namespace"));
	/* without CapEff nothing is guessed: the caller keeps strerror */
	st.have_capeff = false;
	assert_int_equal(denial_cause(&st, false, "bpf()", load_needs, 3, buf, sizeof(buf)), 0);
}

static void test_cut_short(void **state)
{
	struct proc_status st;
	char buf[16], full[400];
	int n;

	(void)state;
	proc_status_parse(container, &st);
	n = denial_cause(&st, false, "bpf()", load_needs, 3, buf, sizeof(buf));
	assert_int_equal(n, denial_cause(&st, false, "bpf()", load_needs, 3, full, sizeof(full)));
	assert_int_equal((int)strlen(full), n);
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
	assert_true(strncmp(buf, full, sizeof(buf) - 1) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_container),
		cmocka_unit_test(test_parse_missing_and_bad),
		cmocka_unit_test(test_seccomp_named),
		cmocka_unit_test(test_capability_first),
		cmocka_unit_test(test_other_causes),
		cmocka_unit_test(test_cut_short),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
