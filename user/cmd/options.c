// SPDX-License-Identifier: GPL-2.0
/* One validating parser for all commands; pure, so the error paths are unit-tested. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/options.h"
#include "core/stages.h"

/* getopt_long's code of a long-only option: past every character */
#define LONG_ONLY 256

static const struct option long_opts[] = {
#define X(id, name, letter, value, cmds, help)                                                     \
	{ name, value ? required_argument : no_argument, NULL,                                     \
	  letter ? letter : LONG_ONLY + OI_##id },
	TT_OPTIONS(X)
#undef X
		{ 0 },
};

/* ':' first (a missing value is ':', not '?'), then each short letter, with ':' when it
 * takes a value */
static char shortopts[2 + 2 * TT_NOPTIONS];

static void shortopts_fill(void)
{
	char *p = shortopts;

	*p++ = ':';
	for (int i = 0; i < TT_NOPTIONS; i++) {
		if (long_opts[i].val >= LONG_ONLY)
			continue;
		*p++ = (char)long_opts[i].val;
		if (long_opts[i].has_arg == required_argument)
			*p++ = ':';
	}
	*p = '\0';
}

/* The table row of what getopt_long returned: idx for a long option, else the letter's. */
static int opt_index(int c, int idx)
{
	if (idx >= 0)
		return idx;
	for (int i = 0; i < TT_NOPTIONS; i++)
		if (long_opts[i].val == c)
			return i;
	return -1;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* strto* skip leading white space and take a sign ("-5" wraps to 2^64 - 5 in strtoull):
 * numbers here start with a digit, nothing else. */
static bool starts_with_digit(const char *s)
{
	return s && *s >= '0' && *s <= '9';
}

static int parse_ulong(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!starts_with_digit(s))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	/* a digit or '.' first and decimal throughout: no sign, white space, "nan", "inf" or
	 * hexadecimal */
	if (!s || !(starts_with_digit(s) || (s[0] == '.' && starts_with_digit(s + 1))) ||
	    s[strspn(s, "0123456789.eE+-")])
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < TT_SECONDS_MIN || v > TT_SECONDS_MAX)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_size(const char *s, __u64 *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	if (!starts_with_digit(s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	default:
		return -EINVAL;
	}
	if (*end == 'i')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v == 0 || v > (~0ULL >> shift))
		return -EINVAL;
	*out = (__u64)v << shift;
	return 0;
}

/* getopt_long's complaints ('?' and ':') as one line each; 0 for a real option. */
static int getopt_error(int c, char **argv, char *err, size_t errlen)
{
	/* long options always advance optind, so argv[optind - 1] is the word typed */
	if (c == '?' && !optopt)
		return fail(err, errlen, "unknown option '%s'", argv[optind - 1]);
	/* a known option's code: a long option given a value it takes none of */
	if (c == '?' && (optopt > 0xff || (optopt != ':' && strchr(shortopts, optopt))))
		return fail(err, errlen, "option '%s' takes no value", argv[optind - 1]);
	if (c == '?')
		return fail(err, errlen, "unknown option '-%c'", optopt);
	if (c == ':')
		return fail(err, errlen, "option '%s' needs a value", argv[optind - 1]);
	return 0;
}

/* What to trace: -p, --comm, --cgroup, --port, --dev. */
static int set_filter_opt(struct tt_opts *o, int id, const char *arg, char *err, size_t errlen)
{
	unsigned long ul;

	switch (id) {
	case OI_PID:
		if (parse_ulong(arg, 4194304, &ul) || !ul)
			return fail(err, errlen, "invalid pid '%s'", arg);
		o->pid = (__u32)ul;
		break;
	case OI_COMM:
		if (!*arg || strlen(arg) > 15)
			return fail(err, errlen, "invalid comm '%s' (1 to 15 characters)", arg);
		strcpy(o->comm, arg);
		break;
	case OI_CGROUP:
		if (!*arg || strlen(arg) >= sizeof(o->cgroup_path))
			return fail(err, errlen, "invalid cgroup path");
		strcpy(o->cgroup_path, arg);
		break;
	case OI_PORT:
		if (parse_ulong(arg, 65535, &ul) || !ul)
			return fail(err, errlen, "invalid port '%s' (1-65535)", arg);
		if (o->nports == TT_MAX_PORTS)
			return fail(err, errlen, "at most %d --port options", TT_MAX_PORTS);
		o->ports[o->nports++] = (__u16)ul;
		break;
	case OI_DEV:
		/* IFNAME (15 characters at most) or NETNS/IFNAME */
		if (!*arg || strlen(arg) >= sizeof(o->devs[0]) ||
		    strlen(strrchr(arg, '/') ? strrchr(arg, '/') + 1 : arg) > 15)
			return fail(err, errlen, "invalid device name '%s'", arg);
		if (o->ndevs == TT_MAX_DEVS)
			return fail(err, errlen, "at most %d --dev options", TT_MAX_DEVS);
		strcpy(o->devs[o->ndevs++], arg);
		break;
	}
	return 0;
}

/* How long and what to show: -d, -i, --count, --stage, --by, --role. */
static int set_view_opt(struct tt_opts *o, int id, const char *arg, char *err, size_t errlen)
{
	unsigned long ul;
	int r;

	switch (id) {
	case OI_DURATION:
		if (parse_seconds(arg, &o->duration_s))
			return fail(err, errlen, "invalid duration '%s' (seconds, 0.001 to 1e7)",
				    arg);
		break;
	case OI_INTERVAL:
		if (parse_seconds(arg, &o->interval_s))
			return fail(err, errlen, "invalid interval '%s' (seconds, 0.001 to 1e7)",
				    arg);
		break;
	case OI_COUNT:
		if (parse_ulong(arg, 1000000000, &ul) || !ul)
			return fail(err, errlen, "invalid count '%s'", arg);
		o->count = (long)ul;
		break;
	case OI_STAGE:
		r = stage_by_name(arg);
		if (r < 0)
			return fail(err, errlen, "unknown stage '%s' (see docs/stages.md)", arg);
		if (o->nstages == TT_MAX_STAGES_SEL)
			return fail(err, errlen, "too many --stage options");
		o->stages[o->nstages++] = r;
		break;
	case OI_BY:
		if (!strcmp(arg, "host")) {
			o->by_host = true;
			break;
		}
		r = group_by_parse(arg);
		if (r < 0)
			return fail(err, errlen,
				    "invalid --by '%s' (port, raddr, comm, cgroup, pod, none)",
				    arg);
		o->by = r;
		break;
	case OI_ROLE:
		if (!strcmp(arg, "server"))
			o->role = ROLE_SERVER;
		else if (!strcmp(arg, "client"))
			o->role = ROLE_CLIENT;
		else if (!strcmp(arg, "auto"))
			o->role = ROLE_AUTO;
		else
			return fail(err, errlen, "invalid --role '%s' (server, client, auto)", arg);
		break;
	}
	return 0;
}

/* Where results go and where they come from: -o, --max-size, --listen, --from, --to,
 * --format, --rdma-probe, --sysfs-root, --debug-dir. */
static int set_io_opt(struct tt_opts *o, int id, char *arg, char *err, size_t errlen)
{
	switch (id) {
	case OI_OUTPUT:
		if (!*arg)
			return fail(err, errlen, "empty output path");
		o->output = arg;
		break;
	case OI_MAX_SIZE:
		if (parse_size(arg, &o->max_size))
			return fail(err, errlen, "invalid size '%s' (e.g. 64M, 1G)", arg);
		break;
	case OI_LISTEN:
		o->listen = arg;
		break;
	case OI_FROM:
		o->from = arg;
		break;
	case OI_TO:
		o->to = arg;
		break;
	case OI_FORMAT:
		o->format = arg;
		break;
	case OI_RDMA_PROBE:
		if (o->nrdma_probes == 8)
			return fail(err, errlen, "at most 8 --rdma-probe options");
		o->rdma_probes[o->nrdma_probes++] = arg;
		break;
	case OI_SYSFS_ROOT:
		o->sysfs_root = arg;
		break;
	case OI_HOST:
		if (!*arg || strlen(arg) > TT_HOST_NAME_MAX)
			return fail(err, errlen, "invalid --host: 1 to %d characters",
				    TT_HOST_NAME_MAX);
		for (const char *c = arg; *c; c++)
			if ((unsigned char)*c <= ' ' || *c == 0x7f)
				return fail(err, errlen,
					    "invalid --host '%s' (no spaces or control characters)",
					    arg);
		o->host = arg;
		break;
	case OI_DEBUG_DIR:
		if (!*arg)
			return fail(err, errlen, "empty --debug-dir");
		o->debug_dir = arg;
		break;
	default:
		/* a row of the option table without its case here */
		return fail(err, errlen, "option '%s' is not handled", long_opts[id].name);
	}
	return 0;
}

/* --budget PCT: percent of one CPU (0 or "off": none). */
static int set_budget(struct tt_opts *o, const char *arg, char *err, size_t errlen)
{
	char *end;
	double v;

	if (!strcmp(arg, "off")) {
		o->budget_pct = 0;
		return 0;
	}
	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= 0 && v <= 1000))
		return fail(err, errlen,
			    "invalid --budget '%s' (percent of one CPU, 0-1000, or off)", arg);
	o->budget_pct = v;
	return 0;
}

/* --deep always|off|PCT%: the share of the time the deep tier runs. */
static int set_deep(struct tt_opts *o, const char *arg, char *err, size_t errlen)
{
	char *end;
	double v;

	if (!strcmp(arg, "always")) {
		o->deep_duty = 1;
		return 0;
	}
	if (!strcmp(arg, "off")) {
		o->deep_duty = 0;
		return 0;
	}
	errno = 0;
	v = strtod(arg, &end);
	if (*end == '%')
		end++;
	if (errno || end == arg || *end || !(v > 0 && v <= 100))
		return fail(err, errlen,
			    "invalid --deep '%s' (always, off, or the percent of the time, e.g. "
			    "10%%)",
			    arg);
	o->deep_duty = v / 100;
	return 0;
}

/* One option into o: 1 for -h, 0 when taken, or -EINVAL with err set. */
static int set_opt(struct tt_opts *o, int id, char *arg, char *err, size_t errlen)
{
	switch (id) {
	case OI_HELP:
		return 1;
	case OI_VERBOSE:
		o->verbose++;
		return 0;
	case OI_JSON:
		o->json = true;
		return 0;
	case OI_TLS:
		o->tls_uprobes = true;
		return 0;
	case OI_CUDA:
		o->cuda = true;
		return 0;
	case OI_RDMA_FULL:
		o->rdma_full = true;
		return 0;
	case OI_RDMA_HOST_WIDE:
		o->rdma_host_wide = true;
		return 0;
	case OI_RDMA_ON:
		o->rdma = true;
		return 0;
	case OI_ALIGN:
		o->align = true;
		return 0;
	case OI_PID:
	case OI_COMM:
	case OI_CGROUP:
	case OI_PORT:
	case OI_DEV:
		return set_filter_opt(o, id, arg, err, errlen);
	case OI_DURATION:
	case OI_INTERVAL:
	case OI_COUNT:
	case OI_STAGE:
	case OI_BY:
	case OI_ROLE:
		return set_view_opt(o, id, arg, err, errlen);
	case OI_BUDGET:
		return set_budget(o, arg, err, errlen);
	case OI_DEEP:
		return set_deep(o, arg, err, errlen);
	default:
		return set_io_opt(o, id, arg, err, errlen);
	}
}

int opts_parse(struct tt_opts *o, int argc, char **argv, __u64 allowed, char *err, size_t errlen)
{
	int c, r, idx;
	char name[32];

	memset(o, 0, sizeof(*o));
	o->by = GROUP_NONE;
	o->budget_pct = -1;
	o->deep_duty = -1;
	/* 0, not 1: glibc then also forgets the previous argv (permutation, cluster position) */
	optind = 0;
	opterr = 0;
	if (!shortopts[0])
		shortopts_fill();
	allowed |= OPT_ALWAYS;
	while ((idx = -1, c = getopt_long(argc, argv, shortopts, long_opts, &idx)) != -1) {
		__u64 bit;
		int id;

		r = getopt_error(c, argv, err, errlen);
		if (r)
			return r;
		id = opt_index(c, idx);
		if (id < 0)
			return fail(err, errlen, "unknown option '%s'", argv[optind - 1]);
		bit = 1ULL << id;
		/* --by host compares the hosts of a report; the other keys group traffic */
		if (id == OI_BY && optarg && !strcmp(optarg, "host"))
			bit = OPT_BY_HOST;
		/* argv[optind - 1] would be the value of an option given as two words */
		if (idx >= 0)
			snprintf(name, sizeof(name), "--%s", long_opts[idx].name);
		else
			snprintf(name, sizeof(name), "-%c", c);
		if (bit == OPT_BY_HOST && !(allowed & bit))
			return fail(err, errlen,
				    "--by host does not apply to '%s' (report compares recorded "
				    "hosts with it)",
				    argv[0]);
		if (!(allowed & bit))
			return fail(err, errlen, "option '%s' does not apply to '%s'", name,
				    argv[0]);
		o->seen |= bit & ~OPT_ALWAYS;
		r = set_opt(o, id, optarg, err, errlen);
		if (r)
			return r;
	}
	o->args = argv + optind;
	o->nargs = argc - optind;
	return 0;
}
