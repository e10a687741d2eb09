/* SPDX-License-Identifier: GPL-2.0 */
/* Command-line options of every command, parsed and validated in one pure function into
 * struct tt_opts (core/options.h). */
#ifndef TT_OPTIONS_H
#define TT_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>
#include "tailtrace.h"
#include "core/options.h"
#include "cmd/option_table.h"

/* Each option's bit, from the table (option_table.h): commands say which options they
 * accept, tt_opts.seen which were given. OPT_BY_HOST is --by host (report's comparison of
 * hosts), not --by KEY. */
enum tt_opt_index {
#define X(id, name, letter, value, cmds, help) OI_##id,
	TT_OPTIONS(X)
#undef X
		TT_NOPTIONS,
	OI_BY_HOST = TT_NOPTIONS,
};
enum tt_opt_bit {
#define X(id, name, letter, value, cmds, help) OPT_##id = 1ULL << OI_##id,
	TT_OPTIONS(X)
#undef X
		OPT_BY_HOST = 1ULL << OI_BY_HOST,
};
_Static_assert(OI_BY_HOST < 64, "more options than bits in tt_opts.seen: widen it");
/* Accepted by every command whatever its set, and not recorded in tt_opts.seen. */
#define OPT_ALWAYS  (OPT_HELP | OPT_VERBOSE)
#define OPT_FILTERS (OPT_PID | OPT_COMM | OPT_CGROUP | OPT_PORT | OPT_DEV)
#define OPT_FROM_TO (OPT_FROM | OPT_TO)
/* any of the RDMA options: the session then opens the RDMA tracer */
#define OPT_RDMA                                                                                   \
	(OPT_RDMA_ON | OPT_RDMA_PROBE | OPT_RDMA_FULL | OPT_RDMA_HOST_WIDE | OPT_SYSFS_ROOT |      \
	 OPT_DEBUG_DIR)

/* The options `cmd` accepts: the bits of the table's rows naming it. */
__u64 opts_allowed(enum tt_cmd_id cmd);
/* The command's name, as typed after `tailtrace`. */
const char *opts_cmd_name(enum tt_cmd_id cmd);
/* The options part of `tailtrace CMD --help`: a line per option the command accepts. */
void opts_print_help(FILE *f, enum tt_cmd_id cmd);
/* The help line of option `opt` as command `cmd` shows it, and its value's name (NULL: a
 * flag) in *value. */
const char *opts_help(enum tt_cmd_id cmd, enum tt_opt_index opt, const char **value);

/* Longest --host name: what a segment header holds (docs/record-format.md). */
#define TT_HOST_NAME_MAX 255

/* Parses argv (argv[0] is the command name) accepting only the options in `allowed`.
 * Returns 0, 1 when help was asked for, or -EINVAL with a one-line reason in err. */
int opts_parse(struct tt_opts *o, int argc, char **argv, __u64 allowed, char *err, size_t errlen);
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
