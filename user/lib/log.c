// SPDX-License-Identifier: GPL-2.0
/* One place decides how errors look, so no command prints raw libbpf dumps by accident. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "lib/log.h"
#include "lib/json.h"

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

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	catch_failed_prog(level, fmt, ap);
	if (verbosity == 0 || (level == LIBBPF_DEBUG && verbosity < 2))
		return 0;
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
