// SPDX-License-Identifier: GPL-2.0
/* The cause of an EPERM from /proc/self/status: pure text in, one line out. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include "lib/denial.h"
#include "lib/util.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static const struct {
	int cap;
	const char *name;
} cap_names[] = {
	{ CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH" },
	{ CAP_SETPCAP, "CAP_SETPCAP" },
	{ CAP_NET_ADMIN, "CAP_NET_ADMIN" },
	{ CAP_SYS_PTRACE, "CAP_SYS_PTRACE" },
	{ CAP_SYS_ADMIN, "CAP_SYS_ADMIN" },
	{ CAP_SYS_NICE, "CAP_SYS_NICE" },
	{ CAP_SYS_RESOURCE, "CAP_SYS_RESOURCE" },
	{ CAP_PERFMON, "CAP_PERFMON" },
	{ CAP_BPF, "CAP_BPF" },
};

const char *cap_name(int cap)
{
	for (size_t i = 0; i < ARRAY_SIZE(cap_names); i++)
		if (cap_names[i].cap == cap)
			return cap_names[i].name;
	return NULL;
}

/* The value of the line "key:\t..." in text, or NULL. */
static const char *field(const char *text, const char *key)
{
	size_t n = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, key, n) && l[n] == ':')
			return l + n + 1;
	return NULL;
}

static int int_field(const char *text, const char *key)
{
	const char *v = field(text, key);
	char *end;
	long x;

	if (!v)
		return -1;
	x = strtol(v, &end, 10);
	return end == v || x < 0 || x > 1000000 ? -1 : (int)x;
}

int proc_status_parse(const char *text, struct proc_status *st)
{
	const char *v = field(text, "CapEff");
	char *end;

	memset(st, 0, sizeof(*st));
	st->seccomp = int_field(text, "Seccomp");
	st->seccomp_filters = int_field(text, "Seccomp_filters");
	st->no_new_privs = int_field(text, "NoNewPrivs");
	if (!v)
		return -EINVAL;
	while (*v == ' ' || *v == '\t')
		v++;
	errno = 0;
	st->capeff = strtoull(v, &end, 16);
	if (end == v || errno || (*end && *end != '\n'))
		return -EINVAL;
	st->have_capeff = true;
	return 0;
}

int proc_status_self(struct proc_status *st, bool *foreign_userns)
{
	char text[4096], map[256];
	unsigned long inside, outside, count;
	FILE *f = fopen("/proc/self/status", "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = 0;
	*foreign_userns = false;
	f = fopen("/proc/self/uid_map", "re");
	if (f) {
		/* the initial namespace maps the whole range onto itself in one line */
		if (fgets(map, sizeof(map), f) &&
		    sscanf(map, "%lu %lu %lu", &inside, &outside, &count) == 3)
			*foreign_userns = !(inside == 0 && outside == 0 && count == 4294967295UL) ||
					  fgets(map, sizeof(map), f);
		fclose(f);
	}
	return proc_status_parse(text, st);
}

/* The capability a need is named by: its first one other than CAP_SYS_ADMIN. */
static const char *need_name(__u64 need)
{
	const char *admin = NULL;

	for (int cap = 0; cap < 64; cap++) {
		if (!(need & (1ULL << cap)))
			continue;
		if (cap != CAP_SYS_ADMIN)
			return cap_name(cap) ? cap_name(cap) : "a capability";
		admin = "CAP_SYS_ADMIN";
	}
	return admin ? admin : "a capability";
}

#define ADD(...)                                                                                   \
	do {                                                                                       \
		int w_ = snprintf(buf + (off < len ? off : len), off < len ? len - off : 0,        \
				  __VA_ARGS__);                                                    \
		off += w_ > 0 ? (size_t)w_ : 0;                                                    \
	} while (0)

int denial_cause(const struct proc_status *st, bool foreign_userns, const char *call,
		 const __u64 *needs, int nneeds, char *buf, size_t len)
{
	size_t off = 0;
	int nmiss = 0, last = -1;

	if (len)
		buf[0] = 0;
	if (!st->have_capeff)
		return 0;
	for (int i = 0; i < nneeds; i++)
		if (!(st->capeff & needs[i])) {
			nmiss++;
			last = i;
		}
	if (nmiss) {
		for (int i = 0, k = 0; i < nneeds; i++) {
			if (st->capeff & needs[i])
				continue;
			ADD("%s%s", k == 0 ? "" : i == last ? " and " : ", ", need_name(needs[i]));
			k++;
		}
		ADD(" %s missing (CapEff %016llx)", nmiss > 1 ? "are" : "is",
		    (unsigned long long)st->capeff);
		if (st->seccomp == 2)
			ADD("; a seccomp filter is in place too (Seccomp: 2), which must let bpf() "
			    "and perf_event_open() through");
		return (int)off;
	}
	if (!call)
		return 0;
	if (st->seccomp == 2) {
		ADD("%s is blocked by a seccomp filter (Seccomp: 2", call);
		if (st->seccomp_filters > 0)
			ADD(", %d filter%s", st->seccomp_filters,
			    st->seccomp_filters > 1 ? "s" : "");
		if (st->no_new_privs >= 0)
			ADD(", NoNewPrivs: %d", st->no_new_privs);
		ADD("; CapEff %016llx has the capabilities): run under a profile that allows "
		    "bpf and perf_event_open (dist/seccomp/tailtrace.json) or without one",
		    (unsigned long long)st->capeff);
	} else if (foreign_userns) {
		ADD("%s is refused in a user namespace: its capabilities (CapEff %016llx) do "
		    "not count for BPF, which wants them in the initial one (run as root on "
		    "the host, not in a rootless container)",
		    call, (unsigned long long)st->capeff);
	} else {
		ADD("%s was refused with the capabilities (CapEff %016llx) and no seccomp filter "
		    "(Seccomp: %d): a security module (AppArmor, SELinux) or kernel lockdown "
		    "refuses it",
		    call, (unsigned long long)st->capeff, st->seccomp);
	}
	return (int)off;
}
