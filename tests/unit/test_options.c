// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the command-line parser: every option where it applies and where it
 * doesn't, the value checks, sizes, positional arguments and one-line error strings. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/options.h"
#include "core/stages.h"
#include "record/record_format.h"
#include "lib/util.h"

#define MAXARGS 80

static struct tt_opts o;
static char err[256];

/* Parses a NULL-terminated list of words (copied: getopt permutes argv). The copy lives
 * until the next call so o.args stays valid. */
static char *argv_buf[MAXARGS + 1];

static int parse(__u64 allowed, ...)
{
	va_list ap;
	int argc = 0;
	const char *a;

	for (int i = 0; i < MAXARGS && argv_buf[i]; i++) {
		free(argv_buf[i]);
		argv_buf[i] = NULL;
	}
	va_start(ap, allowed);
	while ((a = va_arg(ap, const char *)) && argc < MAXARGS)
		argv_buf[argc++] = strdup(a);
	va_end(ap);
	argv_buf[argc] = NULL;
	memset(err, 0, sizeof(err));
	return opts_parse(&o, argc, argv_buf, allowed, err, sizeof(err));
}

/* An error is one non-empty line. */
static void assert_one_line_error(int r)
{
	assert_int_equal(r, -EINVAL);
	assert_true(err[0] != 0);
	assert_null(strchr(err, '\n'));
}

static void assert_rejected(int r, const char *needle)
{
	assert_one_line_error(r);
	if (needle && !strstr(err, needle))
		fail_msg("error \"%s\" does not mention \"%s\"", err, needle);
}

#define ALL (~0ULL)

/* Each option with a valid value, and the bit it needs. */
static const struct {
	const char *opt, *val;
	__u64 bit;
} every[] = {
	{ "-p", "1234", OPT_PID },
	{ "--pid", "1", OPT_PID },
	{ "--comm", "python3", OPT_COMM },
	{ "--cgroup", "/sys/fs/cgroup/x", OPT_CGROUP },
	{ "--port", "7000", OPT_PORT },
	{ "--dev", "eth0", OPT_DEV },
	{ "-d", "5", OPT_DURATION },
	{ "--duration", "0.5", OPT_DURATION },
	{ "-i", "1", OPT_INTERVAL },
	{ "--interval", "2.5", OPT_INTERVAL },
	{ "--count", "3", OPT_COUNT },
	{ "--align", NULL, OPT_ALIGN },
	{ "-j", NULL, OPT_JSON },
	{ "--json", NULL, OPT_JSON },
	{ "--stage", "tx.qdisc", OPT_STAGE },
	{ "--by", "port", OPT_BY },
	{ "--role", "server", OPT_ROLE },
	{ "--cuda", NULL, OPT_CUDA },
	{ "--tls-uprobes", NULL, OPT_TLS },
	{ "-o", "out.ttr", OPT_OUTPUT },
	{ "--output", "out.ttr", OPT_OUTPUT },
	{ "--max-size", "64M", OPT_MAX_SIZE },
	{ "--listen", "127.0.0.1:9100", OPT_LISTEN },
	{ "--host", "node-7.rack3", OPT_HOST },
	{ "--from", "10:00", OPT_FROM },
	{ "--to", "11:00", OPT_TO },
	{ "--format", "folded", OPT_FORMAT },
	{ "--rdma-probe", "libmlx5.so:0x1234", OPT_RDMA_PROBE },
	{ "--sysfs-root", "/tmp/sys", OPT_SYSFS_ROOT },
	{ "--rdma-full", NULL, OPT_RDMA_FULL },
	{ "--rdma-host-wide", NULL, OPT_RDMA_HOST_WIDE },
	{ "--debug-dir", "/usr/lib/debug", OPT_DEBUG_DIR },
	{ "--rdma", NULL, OPT_RDMA_ON },
	{ "--budget", "5", OPT_BUDGET },
	{ "--deep", "25%", OPT_DEEP },
	{ "--deep", "always", OPT_DEEP },
	{ "--deep", "off", OPT_DEEP },
};

/* Every option of the table is in every[] (so its parser case is tested) by its long name. */
static void test_every_covers_the_table(void **state)
{
	static const char *const names[] = {
#define X(id, name, letter, value, cmds, help) name,
		TT_OPTIONS(X)
#undef X
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		size_t j;

		if (!strcmp(names[i], "help") || !strcmp(names[i], "verbose"))
			continue; /* always accepted: test_help */
		for (j = 0; j < ARRAY_SIZE(every); j++)
			if (!strncmp(every[j].opt, "--", 2) && !strcmp(every[j].opt + 2, names[i]))
				break;
		if (j == ARRAY_SIZE(every))
			fail_msg("--%s is not in every[]", names[i]);
	}
}

static void test_every_option_accepted_where_allowed(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(every); i++) {
		int r = every[i].val ? parse(every[i].bit, "cmd", every[i].opt, every[i].val, NULL)
				     : parse(every[i].bit, "cmd", every[i].opt, NULL);

		if (r != 0)
			fail_msg("%s %s rejected with only its bit allowed: %s", every[i].opt,
				 every[i].val ? every[i].val : "", err);
		assert_int_equal(o.seen, every[i].bit);
		assert_int_equal(o.nargs, 0);
	}
}

static void test_every_option_rejected_elsewhere(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(every); i++) {
		char want[64];
		int r = every[i].val ? parse(ALL & ~every[i].bit, "hist", every[i].opt,
					     every[i].val, NULL)
				     : parse(ALL & ~every[i].bit, "hist", every[i].opt, NULL);

		assert_rejected(r, "does not apply to 'hist'");
		/* the message names the option, not its value */
		snprintf(want, sizeof(want), "'%s'", every[i].opt);
		if (!strstr(err, want))
			fail_msg("error \"%s\" does not name the option %s", err, every[i].opt);
	}
}

/* --host names a host in segment headers and labels: 1-255 bytes, nothing blank. --by host
 * (report's comparison) is not --by KEY, which groups traffic. */
static void test_host_options(void **state)
{
	char longname[300];

	(void)state;
	assert_int_equal(parse(OPT_HOST, "record", "--host", "node-7", NULL), 0);
	assert_string_equal(o.host, "node-7");
	assert_rejected(parse(OPT_HOST, "record", "--host", "", NULL), "invalid --host");
	assert_rejected(parse(OPT_HOST, "record", "--host", "a b", NULL), "no spaces");
	assert_rejected(parse(OPT_HOST, "record", "--host", "a\tb", NULL), "no spaces");
	memset(longname, 'x', 256);
	longname[256] = '\0';
	assert_rejected(parse(OPT_HOST, "record", "--host", longname, NULL), "1 to 255");
	longname[255] = '\0';
	assert_int_equal(parse(OPT_HOST, "record", "--host", longname, NULL), 0);

	assert_int_equal(parse(OPT_BY_HOST, "report", "--by", "host", NULL), 0);
	assert_true(o.by_host);
	assert_int_equal(o.seen, OPT_BY_HOST);
	assert_rejected(parse(OPT_BY, "record", "--by", "host", NULL),
			"does not apply to 'record'");
	assert_rejected(parse(OPT_BY_HOST, "report", "--by", "port", NULL),
			"does not apply to 'report'");
}

static void test_values_stored(void **state)
{
	(void)state;
	assert_int_equal(parse(ALL, "record", "-p", "42", "--comm", "vllm", "--port", "7000",
			       "--port=7001", "--dev", "eth0", "--dev", "ib0", "-d", "2.5", "-i",
			       "0.25", "--count", "4", "-j", "-v", "-v", "--stage", "tx.qdisc",
			       "--stage", "tcp.rtt", "--by", "raddr", "--role", "client", "--cuda",
			       "--tls-uprobes", "-o", "x.ttr", "--max-size", "1G", "--listen",
			       ":9100", "--from", "a", "--to", "b", "--format", "json",
			       "--rdma-probe", "l:s", "--sysfs-root", "/s", "--rdma-full",
			       "--cgroup", "/cg", NULL),
			 0);
	assert_int_equal(o.pid, 42);
	assert_string_equal(o.comm, "vllm");
	assert_int_equal(o.nports, 2);
	assert_int_equal(o.ports[0], 7000);
	assert_int_equal(o.ports[1], 7001);
	assert_int_equal(o.ndevs, 2);
	assert_string_equal(o.devs[1], "ib0");
	assert_true(o.duration_s == 2.5);
	assert_true(o.interval_s == 0.25);
	assert_int_equal(o.count, 4);
	assert_true(o.json);
	assert_int_equal(o.verbose, 2);
	assert_int_equal(o.nstages, 2);
	assert_int_equal(o.stages[0], STAGE_TX_QDISC);
	assert_int_equal(o.stages[1], STAGE_TCP_RTT);
	assert_int_equal(o.by, GROUP_RADDR);
	assert_int_equal(o.role, ROLE_CLIENT);
	assert_true(o.cuda);
	assert_true(o.tls_uprobes);
	assert_string_equal(o.output, "x.ttr");
	assert_int_equal(o.max_size, 1ULL << 30);
	assert_string_equal(o.listen, ":9100");
	assert_string_equal(o.from, "a");
	assert_string_equal(o.to, "b");
	assert_string_equal(o.format, "json");
	assert_int_equal(o.nrdma_probes, 1);
	assert_string_equal(o.sysfs_root, "/s");
	assert_true(o.rdma_full);
	assert_string_equal(o.cgroup_path, "/cg");
	assert_int_equal(o.nargs, 0);
}

static void test_defaults(void **state)
{
	(void)state;
	o.pid = 99;
	assert_int_equal(parse(ALL, "hist", NULL), 0);
	assert_int_equal(o.pid, 0);
	assert_int_equal(o.seen, 0);
	assert_int_equal(o.by, GROUP_NONE);
	assert_int_equal(o.role, ROLE_AUTO);
	assert_true(o.duration_s == 0);
	assert_int_equal(o.nports, 0);
	assert_false(o.json);
}

static void test_port(void **state)
{
	(void)state;
	assert_int_equal(parse(OPT_PORT, "hist", "--port", "1", "--port", "65535", NULL), 0);
	assert_int_equal(o.ports[0], 1);
	assert_int_equal(o.ports[1], 65535);
	assert_rejected(parse(OPT_PORT, "hist", "--port", "0", NULL), "invalid port '0'");
	assert_rejected(parse(OPT_PORT, "hist", "--port", "65536", NULL), "invalid port");
	assert_rejected(parse(OPT_PORT, "hist", "--port", "70000", NULL), "invalid port '70000'");
	assert_rejected(parse(OPT_PORT, "hist", "--port", "-1", NULL), "invalid port '-1'");
	assert_rejected(parse(OPT_PORT, "hist", "--port", "abc", NULL), "invalid port 'abc'");
	assert_rejected(parse(OPT_PORT, "hist", "--port", "", NULL), "invalid port");
	assert_rejected(parse(OPT_PORT, "hist", "--port", "80x", NULL), "invalid port");
	assert_rejected(parse(OPT_PORT, "hist", "--port", "18446744073709551617", NULL),
			"invalid port");
	/* TT_MAX_PORTS accepted, one more refused */
	assert_int_equal(parse(OPT_PORT, "hist", "--port", "1", "--port", "2", "--port", "3",
			       "--port", "4", "--port", "5", "--port", "6", "--port", "7", "--port",
			       "8", NULL),
			 0);
	assert_int_equal(o.nports, TT_MAX_PORTS);
	assert_int_equal(o.ports[7], 8);
	assert_rejected(parse(OPT_PORT, "hist", "--port", "1", "--port", "2", "--port", "3",
			      "--port", "4", "--port", "5", "--port", "6", "--port", "7", "--port",
			      "8", "--port", "9", NULL),
			"at most 8");
}

static void test_pid(void **state)
{
	(void)state;
	assert_rejected(parse(OPT_PID, "hist", "-p", "0", NULL), "invalid pid");
	assert_rejected(parse(OPT_PID, "hist", "-p", "-5", NULL), "invalid pid");
	assert_rejected(parse(OPT_PID, "hist", "-p", "x1", NULL), "invalid pid");
	assert_rejected(parse(OPT_PID, "hist", "-p", "4194305", NULL), "invalid pid");
	assert_int_equal(parse(OPT_PID, "hist", "-p", "4194304", NULL), 0);
	assert_int_equal(o.pid, 4194304);
	assert_int_equal(parse(OPT_PID, "hist", "-p77", NULL), 0);
	assert_int_equal(o.pid, 77);
}

static void test_duration_interval(void **state)
{
	(void)state;
	assert_rejected(parse(OPT_DURATION, "hist", "-d", "-1", NULL), "invalid duration '-1'");
	assert_rejected(parse(OPT_DURATION, "hist", "-d", "0", NULL), "invalid duration '0'");
	assert_rejected(parse(OPT_DURATION, "hist", "-d", "abc", NULL), "invalid duration");
	assert_rejected(parse(OPT_DURATION, "hist", "-d", "1e99", NULL), "invalid duration");
	assert_rejected(parse(OPT_DURATION, "hist", "-d", "nan", NULL), "invalid duration");
	assert_rejected(parse(OPT_DURATION, "hist", "-d", "inf", NULL), "invalid duration");
	assert_rejected(parse(OPT_DURATION, "hist", "-d", "5s", NULL), "invalid duration");
	assert_rejected(parse(OPT_DURATION, "hist", "-d", "", NULL), "invalid duration");
	assert_int_equal(parse(OPT_DURATION, "hist", "-d", "0.001", NULL), 0);
	assert_true(o.duration_s == 0.001);
	assert_int_equal(parse(OPT_DURATION, "hist", "--duration=30", NULL), 0);
	assert_true(o.duration_s == 30);
	assert_rejected(parse(OPT_INTERVAL, "hist", "-i", "0", NULL), "invalid interval");
	assert_rejected(parse(OPT_INTERVAL, "hist", "-i", "-0.5", NULL), "invalid interval");
	assert_rejected(parse(OPT_INTERVAL, "hist", "-i", "x", NULL), "invalid interval");
	assert_int_equal(parse(OPT_INTERVAL, "hist", "-i", "0.1", NULL), 0);
	assert_true(o.interval_s == 0.1);
}

static void test_parse_seconds(void **state)
{
	static const char *const bad[] = { "1e-300", "0.0009", "1e-4", "0",     "nan",
					   "NaN",    "inf",    "-1",   "+1",    " 1",
					   "-nan",   "0x10",   ".",    "1e400", "-0" };
	double d = -1;

	(void)state;
	assert_int_equal(parse_seconds("1.5", &d), 0);
	assert_true(d == 1.5);
	assert_int_equal(parse_seconds("1e7", &d), 0);
	assert_int_equal(parse_seconds("1.0000001e7", &d), -EINVAL);
	assert_int_equal(parse_seconds("1e-320", &d), -EINVAL); /* underflow: ERANGE */
	assert_int_equal(parse_seconds(NULL, &d), -EINVAL);
	assert_int_equal(parse_seconds("", &d), -EINVAL);
	assert_int_equal(parse_seconds("1 ", &d), -EINVAL);
	assert_int_equal(parse_seconds(".5", &d), 0);
	assert_true(d == 0.5);
	assert_int_equal(parse_seconds("0.001", &d), 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		d = -1;
		if (parse_seconds(bad[i], &d) != -EINVAL)
			fail_msg("parse_seconds(\"%s\") accepted as %g", bad[i], d);
		assert_true(d == -1);
	}
	assert_rejected(parse(OPT_INTERVAL, "hist", "-i", "1e-300", NULL), "invalid interval");
	assert_rejected(parse(OPT_DURATION, "hist", "-d", "nan", NULL), "invalid duration");
}

/* Numbers with a sign or white space in front: strtoul would take both. */
static void test_signed_and_spaced_numbers(void **state)
{
	(void)state;
	assert_rejected(parse(OPT_PORT, "hist", "--port", " -5", NULL), "invalid port");
	assert_rejected(parse(OPT_PORT, "hist", "--port", " 80", NULL), "invalid port");
	assert_rejected(parse(OPT_COUNT, "hist", "--count", " -1", NULL), "invalid count");
	assert_rejected(parse(OPT_PID, "hist", "-p", "\t1", NULL), "invalid pid");
	assert_rejected(parse(OPT_MAX_SIZE, "record", "--max-size", " -5", NULL), "invalid size");
}

/* --from/--to (parsed by report through rec_parse_time): every value that would reach an
 * integer cast out of range (NaN, infinities, past the year 2554) is an error. */
static void test_report_times(void **state)
{
	static const char *const bad[] = {
		"-nan",
		"-NaN",
		"-inf",
		"-infm",
		"-0x10m",
		"- 5m",
		"--5m",
		"-1e300d",
		"-1e30",
		"-",
		"2555-01-01T00:00:00Z",
		"9999-12-31 23:59",
		"9999-12-31T23:59:59+14:00",
		"@18000000001",
		"18446744074",
		" 1714564800",
		"nan",
	};
	const __u64 now = 1714564800ULL * 1000000000ULL;
	__u64 t;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		t = 7;
		if (rec_parse_time(bad[i], now, &t) != -EINVAL)
			fail_msg("rec_parse_time(\"%s\") accepted as %llu", bad[i],
				 (unsigned long long)t);
		assert_true(t == 7);
	}
	assert_int_equal(rec_parse_time("2540-01-01T00:00:00Z", now, &t), 0);
	assert_true(t == 17987443200ULL * 1000000000ULL);
	assert_int_equal(rec_parse_time("-.5s", now, &t), 0);
	assert_true(t == now - 500000000ULL);
	assert_int_equal(rec_parse_time("-1714564800s", now, &t), 0);
	assert_true(t == 0);
	assert_int_equal(rec_parse_time("-1714564801s", now, &t), -EINVAL);
}

static void test_count(void **state)
{
	(void)state;
	assert_int_equal(parse(OPT_COUNT, "hist", "--count", "10", NULL), 0);
	assert_int_equal(o.count, 10);
	assert_false(o.align);
	assert_int_equal(parse(OPT_INTERVAL | OPT_ALIGN, "hist", "-i", "2", "--align", NULL), 0);
	assert_true(o.align);
	assert_rejected(parse(OPT_COUNT, "hist", "--count", "0", NULL), "invalid count '0'");
	assert_rejected(parse(OPT_COUNT, "hist", "--count", "-3", NULL), "invalid count");
	assert_rejected(parse(OPT_COUNT, "hist", "--count", "two", NULL), "invalid count");
	assert_rejected(parse(OPT_COUNT, "hist", "--count", "1.5", NULL), "invalid count");
	assert_rejected(parse(OPT_COUNT, "hist", "--count", "99999999999999999999", NULL),
			"invalid count");
}

static void test_comm_and_dev(void **state)
{
	(void)state;
	assert_int_equal(parse(OPT_COMM, "hist", "--comm", "123456789012345", NULL), 0);
	assert_string_equal(o.comm, "123456789012345");
	assert_rejected(parse(OPT_COMM, "hist", "--comm", "1234567890123456", NULL),
			"1 to 15 characters");
	assert_rejected(parse(OPT_COMM, "hist", "--comm", "", NULL), "invalid comm");
	assert_int_equal(parse(OPT_DEV, "hist", "--dev", "enp65s0f0np0", NULL), 0);
	assert_rejected(parse(OPT_DEV, "hist", "--dev", "abcdefghijklmnop", NULL),
			"invalid device name");
	/* NETNS/IFNAME: only the interface name is held to 15 characters */
	assert_int_equal(parse(OPT_DEV, "hist", "--dev", "tt-rel-ls-c/rel-ls-c", NULL), 0);
	assert_rejected(parse(OPT_DEV, "hist", "--dev", "ns/abcdefghijklmnop", NULL),
			"invalid device name");
	assert_rejected(parse(OPT_DEV, "hist", "--dev", "", NULL), "invalid device name");
	assert_rejected(parse(OPT_DEV, "hist", "--dev", "a", "--dev", "b", "--dev", "c", "--dev",
			      "d", "--dev", "e", "--dev", "f", "--dev", "g", "--dev", "h", "--dev",
			      "i", NULL),
			"at most 8 --dev");
	assert_rejected(parse(OPT_CGROUP, "hist", "--cgroup", "", NULL), "invalid cgroup");
}

static void test_by_values(void **state)
{
	static const struct {
		const char *s;
		int by;
	} ok[] = {
		{ "none", GROUP_NONE }, { "port", GROUP_PORT },     { "raddr", GROUP_RADDR },
		{ "comm", GROUP_COMM }, { "cgroup", GROUP_CGROUP },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		assert_int_equal(parse(OPT_BY, "hist", "--by", ok[i].s, NULL), 0);
		assert_int_equal(o.by, ok[i].by);
	}
	assert_rejected(parse(OPT_BY, "hist", "--by", "pid", NULL), "invalid --by 'pid'");
	assert_rejected(parse(OPT_BY, "hist", "--by", "PORT", NULL), "invalid --by");
	assert_rejected(parse(OPT_BY, "hist", "--by", "", NULL), "invalid --by");
}

static void test_stage_values(void **state)
{
	(void)state;
	for (int s = 0; s < STAGE__MAX; s++) {
		assert_int_equal(parse(OPT_STAGE, "hist", "--stage", stage_info(s)->name, NULL), 0);
		assert_int_equal(o.nstages, 1);
		assert_int_equal(o.stages[0], s);
	}
	assert_rejected(parse(OPT_STAGE, "hist", "--stage", "tx.qdsic", NULL),
			"unknown stage 'tx.qdsic'");
	assert_rejected(parse(OPT_STAGE, "hist", "--stage", "", NULL), "unknown stage");
	assert_rejected(parse(OPT_STAGE, "hist", "--stage", "TX.QDISC", NULL), "unknown stage");
}

static void test_too_many_stages(void **state)
{
	char *argv[2 + 2 * (TT_MAX_STAGES_SEL + 1) + 1];
	int argc = 0, r;

	(void)state;
	argv[argc++] = "hist";
	for (int i = 0; i < TT_MAX_STAGES_SEL + 1; i++) {
		argv[argc++] = "--stage";
		argv[argc++] = "tx.qdisc";
	}
	argv[argc] = NULL;
	r = opts_parse(&o, argc, argv, OPT_STAGE, err, sizeof(err));
	assert_rejected(r, "too many --stage");
	r = opts_parse(&o, argc - 2, argv, OPT_STAGE, err, sizeof(err));
	assert_int_equal(r, 0);
	assert_int_equal(o.nstages, TT_MAX_STAGES_SEL);
}

static void test_role_values(void **state)
{
	(void)state;
	assert_int_equal(parse(OPT_ROLE, "hist", "--role", "server", NULL), 0);
	assert_int_equal(o.role, ROLE_SERVER);
	assert_int_equal(parse(OPT_ROLE, "hist", "--role", "client", NULL), 0);
	assert_int_equal(o.role, ROLE_CLIENT);
	assert_int_equal(parse(OPT_ROLE, "hist", "--role", "auto", NULL), 0);
	assert_int_equal(o.role, ROLE_AUTO);
	assert_rejected(parse(OPT_ROLE, "hist", "--role", "both", NULL), "invalid --role 'both'");
}

static void test_parse_size(void **state)
{
	static const struct {
		const char *s;
		__u64 v;
	} ok[] = {
		{ "64M", 64ULL << 20 },
		{ "1G", 1ULL << 30 },
		{ "512k", 512ULL << 10 },
		{ "512K", 512ULL << 10 },
		{ "2g", 2ULL << 30 },
		{ "4096", 4096 },
		{ "1KiB", 1024 },
		{ "3MB", 3ULL << 20 },
		{ "1", 1 },
		{ "17179869183G", 17179869183ULL << 30 }, /* largest G that fits */
		{ "18446744073709551615", ~0ULL },
	};
	static const char *const bad[] = {
		"0",
		"0M",
		"-1",
		"-1M",
		"+5",
		"1X",
		"1T",
		"M",
		"",
		" ",
		"1.5G",
		"1MM",
		"1GiBx",
		"17179869184G",         /* 2^64: shifted out */
		"18446744073709551616", /* 2^64: strtoull overflow */
		"99999999999999999999999k",
		" -5", /* strtoull skips the space and wraps the sign: 2^64 - 5 */
		"\t-5",
		" 5",
		"-0",
	};
	__u64 v;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		v = 0;
		if (parse_size(ok[i].s, &v) || v != ok[i].v)
			fail_msg("parse_size(\"%s\") = %llu, want %llu", ok[i].s,
				 (unsigned long long)v, (unsigned long long)ok[i].v);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		v = 12345;
		if (parse_size(bad[i], &v) != -EINVAL)
			fail_msg("parse_size(\"%s\") accepted as %llu", bad[i],
				 (unsigned long long)v);
		assert_int_equal(v, 12345); /* untouched on error */
	}
	assert_int_equal(parse_size(NULL, &v), -EINVAL);
	assert_rejected(parse(OPT_MAX_SIZE, "record", "--max-size", "1X", NULL),
			"invalid size '1X'");
}

static void test_unknown_and_missing(void **state)
{
	(void)state;
	assert_rejected(parse(ALL, "hist", "--frobnicate", NULL), "unknown option '--frobnicate'");
	assert_rejected(parse(ALL, "hist", "-x", NULL), "unknown option '-x'");
	assert_rejected(parse(ALL, "hist", "-jx", NULL), "unknown option '-x'");
	assert_rejected(parse(ALL, "hist", "--port=1", "-xj", NULL), "unknown option '-x'");
	assert_rejected(parse(ALL, "hist", "--port", "1", "-x", NULL), "unknown option '-x'");
	assert_rejected(parse(ALL, "hist", "--port", NULL), "option '--port' needs a value");
	assert_rejected(parse(ALL, "hist", "-d", NULL), "option '-d' needs a value");
	assert_rejected(parse(ALL, "hist", "-j", "--stage", NULL), "'--stage' needs a value");
	/* a flag given a value is refused, not silently ignored, and the message names what
	 * the user typed in printable characters (getopt reports the option's internal code) */
	assert_rejected(parse(ALL, "hist", "--json=yes", NULL), "'--json=yes'");
	assert_rejected(parse(ALL, "hist", "--cuda=1", NULL), "'--cuda=1'");
	assert_rejected(parse(ALL, "explain", "--tls-uprobes=1", NULL), "'--tls-uprobes=1'");
	assert_rejected(parse(ALL, "hist", "--rdma-full=1", NULL), "'--rdma-full=1'");
	for (const char *p = err; *p; p++)
		assert_true(*p >= 0x20 && *p < 0x7f);
}

static void test_positional_args(void **state)
{
	(void)state;
	assert_int_equal(parse(OPT_JSON | OPT_DURATION, "report", "a.ttr", "-j", "b.ttr", "-d", "3",
			       "c", NULL),
			 0);
	assert_true(o.json);
	assert_int_equal(o.nargs, 3);
	assert_string_equal(o.args[0], "a.ttr");
	assert_string_equal(o.args[1], "b.ttr");
	assert_string_equal(o.args[2], "c");
	/* after "--" everything is positional */
	assert_int_equal(parse(OPT_JSON, "report", "--", "-j", "x", NULL), 0);
	assert_false(o.json);
	assert_int_equal(o.nargs, 2);
	assert_string_equal(o.args[0], "-j");
	/* "-" alone is an argument (stdin) */
	assert_int_equal(parse(OPT_JSON, "report", "-", NULL), 0);
	assert_int_equal(o.nargs, 1);
	assert_string_equal(o.args[0], "-");
}

static void test_help(void **state)
{
	(void)state;
	assert_int_equal(parse(0, "hist", "-h", NULL), 1);
	assert_int_equal(parse(0, "hist", "--help", NULL), 1);
	assert_int_equal(parse(OPT_JSON, "hist", "-j", "--help", "--port", "x", NULL), 1);
	/* -v is accepted by every command */
	assert_int_equal(parse(0, "hist", "-v", "--verbose", NULL), 0);
	assert_int_equal(o.verbose, 2);
}

/* The parser can be run again (optind reset): the second parse sees all its options. */
static void test_reparse(void **state)
{
	(void)state;
	assert_int_equal(parse(ALL, "hist", "-j", "-p", "5", NULL), 0);
	assert_int_equal(parse(ALL, "hist", "-p", "6", "-j", NULL), 0);
	assert_int_equal(o.pid, 6);
	assert_true(o.json);
}

static void test_error_truncated_safely(void **state)
{
	char small[12];
	char *argv[] = { "hist", "--port", "77777777777777777777777777777777777", NULL };

	(void)state;
	memset(small, 'Z', sizeof(small));
	assert_int_equal(opts_parse(&o, 3, argv, OPT_PORT, small, sizeof(small)), -EINVAL);
	assert_int_equal(strlen(small), sizeof(small) - 1);
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < MAXARGS && argv_buf[i]; i++) {
		free(argv_buf[i]);
		argv_buf[i] = NULL;
	}
	return 0;
}

/* --deep: the duty in percent, always or off; anything else is one clear error line. */
static void test_deep(void **state)
{
	(void)state;
	assert_int_equal(parse(OPT_DEEP, "record", "--deep", "25%", NULL), 0);
	assert_true(o.deep_duty == 0.25);
	assert_int_equal(parse(OPT_DEEP, "record", "--deep", "5", NULL), 0);
	assert_true(o.deep_duty == 0.05);
	assert_int_equal(parse(OPT_DEEP, "record", "--deep", "always", NULL), 0);
	assert_true(o.deep_duty == 1);
	assert_int_equal(parse(OPT_DEEP, "record", "--deep", "off", NULL), 0);
	assert_true(o.deep_duty == 0);
	assert_int_equal(parse(OPT_DEEP, "record", NULL), 0);
	assert_true(o.deep_duty < 0); /* unset: the command's default */
	assert_rejected(parse(OPT_DEEP, "record", "--deep", "0%", NULL), "invalid --deep");
	assert_rejected(parse(OPT_DEEP, "record", "--deep", "150%", NULL), "invalid --deep");
	assert_rejected(parse(OPT_DEEP, "record", "--deep", "10%%", NULL), "invalid --deep");
	assert_rejected(parse(OPT_DEEP, "record", "--deep", "sometimes", NULL), "invalid --deep");
	assert_rejected(parse(OPT_BUDGET, "hist", "--deep", "10%", NULL), "does not apply");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deep),
		cmocka_unit_test(test_every_covers_the_table),
		cmocka_unit_test(test_every_option_accepted_where_allowed),
		cmocka_unit_test(test_every_option_rejected_elsewhere),
		cmocka_unit_test(test_host_options),
		cmocka_unit_test(test_values_stored),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_port),
		cmocka_unit_test(test_pid),
		cmocka_unit_test(test_duration_interval),
		cmocka_unit_test(test_parse_seconds),
		cmocka_unit_test(test_signed_and_spaced_numbers),
		cmocka_unit_test(test_report_times),
		cmocka_unit_test(test_count),
		cmocka_unit_test(test_comm_and_dev),
		cmocka_unit_test(test_by_values),
		cmocka_unit_test(test_stage_values),
		cmocka_unit_test(test_too_many_stages),
		cmocka_unit_test(test_role_values),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_unknown_and_missing),
		cmocka_unit_test(test_positional_args),
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_reparse),
		cmocka_unit_test(test_error_truncated_safely),
	};

	return cmocka_run_group_tests(tests, NULL, teardown);
}
