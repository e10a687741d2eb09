/* SPDX-License-Identifier: GPL-2.0 */
/* What tailtrace costs, measured by itself each interval: its BPF programs' run count and
 * run time from the kernel's own accounting (statistics on through a BPF_ENABLE_STATS fd
 * held while tracing), and its process's CPU time. Also the sampling rate the --budget
 * controller keeps the cost in with (collect/budget.h). */
#ifndef TT_SELF_COST_H
#define TT_SELF_COST_H

#include <stdbool.h>
#include <linux/types.h>
#include "core/snapshot.h"

#define SELF_PROGS_MAX SNAP_PROGS_MAX

/* Cumulative figures of one program as the kernel reports them. */
struct prog_stat {
	__u64 runs;
	__u64 run_ns;
};

struct self_cost {
	int stats_fd; /* BPF_ENABLE_STATS(BPF_STATS_RUN_TIME), -1 when refused */
	int nprogs;
	int prog_fd[SELF_PROGS_MAX];
	char name[SELF_PROGS_MAX][SNAP_PROG_NAME];
	struct prog_stat prev[SELF_PROGS_MAX];
	double cpu_prev; /* process CPU seconds at the last read */
};

/* Turns the statistics on (-errno when the kernel refuses: figures stay zero). */
int self_cost__init(struct self_cost *sc);
/* Adds a loaded program to follow; its counts so far become the baseline. */
void self_cost__add_prog(struct self_cost *sc, int prog_fd, const char *name);
/* The interval since the last call: each program's runs and run time, the process's CPU and
 * RSS, into s. */
void self_cost__collect(struct self_cost *sc, struct snapshot *s);
void self_cost__close(struct self_cost *sc);
/* Run time of all followed programs so far, ns (cumulative). */
__u64 self_cost__total_ns(const struct self_cost *sc);

/* What happened between two readings of cumulative counters. A counter that went
 * backwards (the program was replaced, statistics switched off and on) starts again from
 * zero: its new value is the delta. Pure. */
void prog_stat_delta(const struct prog_stat *prev, const struct prog_stat *cur,
		     struct prog_stat *delta);

double self_cpu_seconds(void);
unsigned long long self_rss_kb(void);

#endif
