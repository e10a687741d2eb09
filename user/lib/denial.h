/* SPDX-License-Identifier: GPL-2.0 */
/* Why the kernel said EPERM: the process's own capabilities, seccomp mode and no-new-privs
 * (the lines of /proc/self/status), turned into one line naming the cause, so a container
 * that filters bpf() is not mistaken for a locked-memory limit or a kernel option. */
#ifndef TT_DENIAL_H
#define TT_DENIAL_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct proc_status {
	bool have_capeff;
	__u64 capeff;        /* CapEff: the effective capabilities, bit CAP_* */
	int seccomp;         /* Seccomp: 0 none, 1 strict, 2 filter; -1 when not shown */
	int seccomp_filters; /* Seccomp_filters: how many filters; -1 when not shown */
	int no_new_privs;    /* NoNewPrivs: 0 or 1; -1 when not shown */
};

/* Reads the fields above from the text of /proc/PID/status. Returns 0, or -EINVAL when the
 * text has no CapEff line (then nothing can be told). */
int proc_status_parse(const char *text, struct proc_status *st);
/* Reads /proc/self/status into st; 0 or -errno. foreign_userns tells whether the process
 * is in a user namespace other than the initial one (its capabilities do not count for
 * BPF there): /proc/self/uid_map is not the whole range mapped onto itself. */
int proc_status_self(struct proc_status *st, bool *foreign_userns);
/* The capability CAP_* by its kernel name ("CAP_BPF"), or NULL for one tailtrace never
 * asks for. */
const char *cap_name(int cap);
/* The cause of an EPERM from `call` (a system call's name, "bpf()" or "perf_event_open()";
 * NULL before any call is made), written into buf as one line without a newline. Each of
 * the nneeds needs is a set of capabilities (1ULL << CAP_*, ORed), any one of which will do
 * (CAP_SYS_ADMIN stands in for CAP_BPF and CAP_PERFMON). Missing capabilities come first
 * (the kernel checks them whatever seccomp lets through), then, for a call, a seccomp
 * filter, a user namespace, and last what is left (an LSM, lockdown). Returns the length
 * written, like snprintf; 0 when no cause can be named (no CapEff, or nothing missing and
 * no call). */
int denial_cause(const struct proc_status *st, bool foreign_userns, const char *call,
		 const __u64 *needs, int nneeds, char *buf, size_t len);

#endif
