// SPDX-License-Identifier: GPL-2.0
/* Capability check through capget(2): no libcap dependency. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include "collect/privs.h"
#include "lib/log.h"

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
	char missing[64];
	int err = privs_check(missing, sizeof(missing));

	if (!err)
		return true;
	if (err == -EPERM)
		tt_error("missing %s: run as root (or grant them with setcap/capsh)", missing);
	else
		tt_error("cannot read capabilities: %s", strerror(-err));
	return false;
}
