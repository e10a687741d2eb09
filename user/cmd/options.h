/* SPDX-License-Identifier: GPL-2.0 */
/* Command-line options of every command, parsed and validated in one pure function. */
#ifndef TT_OPTIONS_H
#define TT_OPTIONS_H

#include <stdbool.h>
#include <linux/types.h>
#include "tailtrace.h"

#define TT_MAX_STAGES_SEL 32

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
};
/* Longest --host name: what a segment header holds (docs/record-format.md). */
#define TT_HOST_NAME_MAX 255
#define OPT_FILTERS      (OPT_PID | OPT_COMM | OPT_CGROUP | OPT_PORT | OPT_DEV)

struct tt_opts {
	unsigned int seen;         /* OPT_* bits given on the command line */
	__u32 pid;                 /* -p: tgid, 0 = any */
	char comm[TT_COMM_LEN];    /* --comm */
	char cgroup_path[4096];    /* --cgroup */
	__u16 ports[TT_MAX_PORTS]; /* --port, local or remote */
	int nports;
	char devs[TT_MAX_DEVS][80]; /* --dev [NETNS/]IFNAME */
	int ndevs;
	double duration_s;             /* -d, 0 = until interrupted */
	double interval_s;             /* -i, 0 = only at the end */
	long count;                    /* --count: number of intervals, 0 = unbounded */
	bool align;                    /* --align: intervals end at multiples of -i (UTC) */
	double budget_pct;             /* --budget: % of one CPU, 0 = none (unset: -1) */
	bool json;                     /* -j */
	int verbose;                   /* -v */
	int stages[TT_MAX_STAGES_SEL]; /* --stage, enum tt_stage */
	int nstages;
	int by;                     /* --by, enum tt_group_by */
	bool by_host;               /* --by host */
	const char *host;           /* --host: the name the host is recorded and served under */
	int role;                   /* --role, enum tt_role */
	bool cuda;                  /* --cuda */
	const char *output;         /* -o */
	__u64 max_size;             /* --max-size in bytes */
	const char *listen;         /* --listen ADDR:PORT */
	const char *from, *to;      /* --from, --to */
	const char *format;         /* --format */
	const char *rdma_probes[8]; /* --rdma-probe LIB:SYMBOL|LIB:0xOFFSET */
	int nrdma_probes;
	const char *sysfs_root; /* --sysfs-root */
	const char *debug_dir;  /* --debug-dir: debug files by build-id (NULL: /usr/lib/debug) */
	bool rdma_full;         /* --rdma-full: trace every poll */
	bool rdma_host_wide;    /* --rdma-host-wide: data-path probes in every process */
	bool rdma;              /* --rdma: add the RDMA stages (hist, top, explain, record) */
	char **args;            /* positional arguments left */
	int nargs;
};

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
