/* SPDX-License-Identifier: GPL-2.0 */
/* What the user asked a command to trace and show: the parsed options, as the collector,
 * the RDMA tracer and the commands take them. user/cmd/options.c fills it from argv. */
#ifndef TT_CORE_OPTIONS_H
#define TT_CORE_OPTIONS_H

#include <stdbool.h>
#include <linux/types.h>
#include "tailtrace.h"

#define TT_MAX_STAGES_SEL 32

struct tt_opts {
	__u64 seen;                /* OPT_* bits (cmd/options.h) given on the command line */
	__u32 pid;                 /* -p: tgid, 0 = any */
	char comm[TT_COMM_LEN];    /* --comm */
	char cgroup_path[4096];    /* --cgroup */
	__u16 ports[TT_MAX_PORTS]; /* --port, local or remote */
	int nports;
	char devs[TT_MAX_DEVS][80]; /* --dev [NETNS/]IFNAME */
	int ndevs;
	double duration_s; /* -d, 0 = until interrupted */
	double interval_s; /* -i, 0 = only at the end */
	long count;        /* --count: number of intervals, 0 = unbounded */
	bool align;        /* --align: intervals end at multiples of -i (UTC) */
	double budget_pct; /* --budget: % of one CPU, 0 = none (unset: -1) */
	double deep_duty;  /* --deep: share of the time the deep tier runs (unset: -1) */
	bool json;         /* -j */
	int verbose;       /* -v */
	int stages[TT_MAX_STAGES_SEL]; /* --stage, enum tt_stage */
	int nstages;
	int by;                     /* --by, enum tt_group_by */
	bool by_host;               /* --by host */
	const char *host;           /* --host: the name the host is recorded and served under */
	int role;                   /* --role, enum tt_role */
	bool cuda;                  /* --cuda */
	bool tls_uprobes;           /* --tls-uprobes */
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

#endif
