// SPDX-License-Identifier: GPL-2.0
/* Capability check and drop through capget(2)/capset(2)/prctl(2): no libcap dependency. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include "collect/privs.h"
#include "lib/denial.h"
#include "lib/log.h"
#include "lib/util.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static bool has_cap(const struct __user_cap_data_struct *d, int cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

/* Returns 0 when the process has CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN); otherwise
 * -EPERM with the missing capabilities named in `missing`. */
static int privs_check(char *missing, unsigned long len)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };
	bool admin, bpf, perfmon, net;

	missing[0] = 0;
	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	admin = has_cap(data, CAP_SYS_ADMIN);
	bpf = has_cap(data, CAP_BPF) || admin;
	perfmon = has_cap(data, CAP_PERFMON) || admin;
	net = has_cap(data, CAP_NET_ADMIN);
	snprintf(missing, len, "%s%s%s", bpf ? "" : "CAP_BPF ", perfmon ? "" : "CAP_PERFMON ",
		 net ? "" : "CAP_NET_ADMIN ");
	if (missing[0])
		missing[strlen(missing) - 1] = 0;
	return missing[0] ? -EPERM : 0;
}

bool privs_have(int cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };

	return cap >= 0 && cap < 64 && !syscall(SYS_capget, &hdr, data) && has_cap(data, cap);
}

bool privs_require(void)
{
	/* CAP_SYS_ADMIN stands in for CAP_BPF and CAP_PERFMON (kernels before 5.8) */
	const __u64 needs[] = { PRIV_BIT(CAP_BPF) | PRIV_BIT(CAP_SYS_ADMIN),
				PRIV_BIT(CAP_PERFMON) | PRIV_BIT(CAP_SYS_ADMIN),
				PRIV_BIT(CAP_NET_ADMIN) };
	struct proc_status st;
	char missing[64], cause[400];
	bool userns;
	int err = privs_check(missing, sizeof(missing));

	if (!err)
		return true;
	/* the line names CapEff and seccomp as /proc/self/status has them; capget's answer
	 * when that cannot be read */
	if (err == -EPERM && !proc_status_self(&st, &userns) &&
	    denial_cause(&st, userns, NULL, needs, ARRAY_SIZE(needs), cause, sizeof(cause)) > 0)
		tt_error("%s: run as root, or grant the capabilities (setcap, capsh, a "
			 "container's securityContext)",
			 cause);
	else if (err == -EPERM)
		tt_error("missing %s: run as root (or grant them with setcap/capsh)", missing);
	else
		tt_error("cannot read capabilities: %s", strerror(-err));
	return false;
}

/* Lets this process come back from SCHED_IDLE to its nice value without CAP_SYS_NICE
 * (self_prio.c): the kernel allows it when RLIMIT_NICE reaches 20 - nice. Raising the
 * hard limit needs CAP_SYS_RESOURCE, so this is done before the drop. Returns true when
 * the limit allows it now. */
static bool allow_nice_return(void)
{
	struct rlimit rl;
	int nice;

	errno = 0;
	nice = getpriority(PRIO_PROCESS, 0);
	if (errno || nice < 0 || getrlimit(RLIMIT_NICE, &rl))
		return false;
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= (rlim_t)(20 - nice))
		return true;
	rl.rlim_cur = (rlim_t)(20 - nice);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < rl.rlim_cur)
		rl.rlim_max = rl.rlim_cur;
	return !setrlimit(RLIMIT_NICE, &rl);
}

static int last_cap(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	int last = 63;

	if (f) {
		if (fscanf(f, "%d", &last) != 1 || last < 0 || last > 63)
			last = 63;
		fclose(f);
	}
	return last;
}

int privs_drop(__u64 keep)
{
	/* without CAP_SYS_RESOURCE (some containers) the limit stays: then CAP_SYS_NICE is
	 * the one capability kept, or the watchdog could not restore the priority */
	if (!(keep & PRIV_BIT(CAP_SYS_NICE)) && !allow_nice_return() && privs_have(CAP_SYS_NICE))
		keep |= PRIV_BIT(CAP_SYS_NICE);
	return privs_drop_to(keep);
}

int privs_drop_to(__u64 keep)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };
	int last = last_cap();

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
		return -errno;
	/* the bounding set first: dropping from it needs CAP_SETPCAP, dropped below. Without
	 * it (a binary given only the tracing capabilities by setcap) the bounding set stays:
	 * with no-new-privs and nothing permitted, no execve() could use it anyway */
	for (int cap = 0; cap <= last; cap++)
		if (!(keep & PRIV_BIT(cap)) && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1 &&
		    prctl(PR_CAPBSET_DROP, cap, 0, 0, 0))
			break;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	for (int i = 0; i < 2; i++) {
		__u32 k = (__u32)(keep >> (32 * i));

		data[i].permitted &= k;
		data[i].effective = data[i].permitted;
		data[i].inheritable = 0;
	}
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

/* Whether `probe` succeeds with the capabilities in `caps` out of the effective set: they
 * stay permitted, and come back into the effective set before returning. */
bool privs_enough_without(__u64 caps, int (*probe)(void *ctx), void *ctx)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 }, saved[2];
	bool ok;

	if (syscall(SYS_capget, &hdr, data))
		return false;
	memcpy(saved, data, sizeof(saved));
	for (int i = 0; i < 2; i++)
		data[i].effective &= ~(__u32)(caps >> (32 * i));
	if (syscall(SYS_capset, &hdr, data))
		return false;
	ok = probe(ctx) == 0;
	hdr.pid = 0;
	if (syscall(SYS_capset, &hdr, saved))
		tt_warn("cannot restore capabilities: %s", strerror(errno));
	return ok;
}
