/* SPDX-License-Identifier: GPL-2.0 */
/* Command-line options of every command, parsed and validated in one pure function into
 * struct tt_opts (core/options.h). */
#ifndef TT_OPTIONS_H
#define TT_OPTIONS_H

#include <stdbool.h>
#include <linux/types.h>
#include "tailtrace.h"
#include "core/options.h"

/* Option bits: each command says which options it accepts. */
enum tt_opt_bit {
	OPT_PID = 1u << 0,
	OPT_COMM = 1u << 1,
	OPT_CGROUP = 1u << 2,
	OPT_PORT = 1u << 3,
	OPT_DEV = 1u << 4,
	OPT_DURATION = 1u << 5,
	OPT_INTERVAL = 1u << 6,
	OPT_JSON = 1u << 7,
	OPT_STAGE = 1u << 8,
	OPT_BY = 1u << 9,
	OPT_ROLE = 1u << 10,
	OPT_CUDA = 1u << 11,
	OPT_OUTPUT = 1u << 12,
	OPT_MAX_SIZE = 1u << 13,
	OPT_LISTEN = 1u << 14,
	OPT_FROM_TO = 1u << 15,
	OPT_FORMAT = 1u << 16,
	OPT_RDMA = 1u << 17,
	OPT_COUNT = 1u << 18,
	OPT_BUDGET = 1u << 19,
	OPT_HOST = 1u << 20,    /* --host NAME */
	OPT_BY_HOST = 1u << 21, /* --by host (report: compare hosts) */
	OPT_ALIGN = 1u << 22,   /* --align: interval boundaries on the wall clock's grid */
	OPT_TLS = 1u << 23,     /* --tls-uprobes: plaintext framing from libssl */
};
/* Longest --host name: what a segment header holds (docs/record-format.md). */
#define TT_HOST_NAME_MAX 255
#define OPT_FILTERS      (OPT_PID | OPT_COMM | OPT_CGROUP | OPT_PORT | OPT_DEV)

/* Parses argv (argv[0] is the command name) accepting only the options in `allowed`.
 * Returns 0, 1 when help was asked for, or -EINVAL with a one-line reason in err. */
int opts_parse(struct tt_opts *o, int argc, char **argv, unsigned int allowed, char *err,
	       size_t errlen);
/* Parses sizes like 512k, 64M, 2G (powers of 1024). Returns -EINVAL when malformed. */
int parse_size(const char *s, __u64 *out);
/* Durations and intervals: a millisecond is the finest the loops wait (poll(2) takes ms);
 * the upper end keeps every product with 1e9 well inside a __u64 of nanoseconds. */
#define TT_SECONDS_MIN 1e-3
#define TT_SECONDS_MAX 1e7
/* Parses a number of seconds from TT_SECONDS_MIN to TT_SECONDS_MAX (fractions allowed;
 * no sign, white space, nan or inf). Returns -EINVAL otherwise. */
int parse_seconds(const char *s, double *out);

#endif
