// SPDX-License-Identifier: GPL-2.0
/* One place decides how errors look, so no command prints raw libbpf dumps by accident. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <linux/capability.h>
#include <bpf/libbpf.h>
#include "lib/denial.h"
#include "lib/log.h"
#include "lib/json.h"

#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static bool json_mode;
static int verbosity;
static char *failed_prog; /* log_catch_failed_prog: where the name goes, NULL when off */
static size_t failed_prog_len;

/* libbpf names a program that failed to relocate or load in a warning whose format
 * starts "prog '%s'": the first such name is the culprit. */
static void catch_failed_prog(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	static const char prefix[] = "libbpf: prog '%s'";
	va_list aq;

	if (!failed_prog || failed_prog[0] || level != LIBBPF_WARN)
		return;
	if (strncmp(fmt, prefix, sizeof(prefix) - 1) &&
	    strncmp(fmt, prefix + 8, sizeof(prefix) - 9))
		return;
	va_copy(aq, ap);
	snprintf(failed_prog, failed_prog_len, "%s", va_arg(aq, const char *));
	va_end(aq);
}

void log_catch_failed_prog(char *name, size_t len)
{
	failed_prog = len ? name : NULL;
	failed_prog_len = len;
	if (failed_prog)
		failed_prog[0] = 0;
}

/* libbpf's guess when its trivial program is refused (a kernel without BPF, or
 * RLIMIT_MEMLOCK) is wrong whenever the EPERM has a cause /proc/self/status names (a
 * seccomp filter, a capability): that cause instead, once, as it repeats at every probe. */
static int memlock_guess(const char *fmt, va_list ap)
{
	const __u64 needs[] = { (1ULL << CAP_BPF) | (1ULL << CAP_SYS_ADMIN) };
	static bool said;
	struct proc_status st;
	char line[512], cause[400];
	bool userns;

	vsnprintf(line, sizeof(line), fmt, ap);
	if (!strstr(line, "(1).") || proc_status_self(&st, &userns) ||
	    denial_cause(&st, userns, "bpf()", needs, 1, cause, sizeof(cause)) <= 0)
		return fputs(line, stderr);
	if (said)
		return 0;
	said = true;
	return fprintf(stderr, "libbpf: a trivial BPF program was refused: %s\n", cause);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	catch_failed_prog(level, fmt, ap);
	if (verbosity == 0 || (level == LIBBPF_DEBUG && verbosity < 2))
		return 0;
	if (strstr(fmt, "RLIMIT_MEMLOCK is set to big enough value"))
		return memlock_guess(fmt, ap);
	return vfprintf(stderr, fmt, ap);
}

void log_setup(bool json, int verbose)
{
	json_mode = json;
	verbosity = verbose;
	libbpf_set_print(libbpf_print);
}

bool log_verbose(void)
{
	return verbosity > 0;
}

void tt_error(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (json_mode) {
		/* errors go to stdout in JSON mode so a consumer parsing stdout sees them */
		printf("{\"error\": ");
		json_print_string(stdout, msg);
		printf("}\n");
		fflush(stdout);
	}
	fprintf(stderr, "tailtrace: error: %s\n", msg);
}

void tt_warn(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tailtrace: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
