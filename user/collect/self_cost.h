/* SPDX-License-Identifier: GPL-2.0 */
/* What tailtrace costs, measured by itself each interval: its BPF programs' run count and
 * run time from the kernel's own accounting, and its process's CPU time. Also the sampling
 * rate the --budget controller keeps the cost in with (collect/budget.h).
 *
 * The kernel's statistics cost every program on the host two sched_clock() reads a run,
 * as much as a small program costs on a VM; turning them on or off costs far more: it
 * flips a host-wide static key (every inlined bpf_prog_run() site patched, every CPU
 * synced), 5-17 ms of one CPU with preemption off on a 2-vCPU VM. Switched on and off
 * twice a second, they stalled the host's threads as long: the tails tailtrace measures.
 * So the BPF_ENABLE_STATS fd is taken at the start, before capabilities are dropped, and
 * held until the end: the figures are the kernel's whole counts. */
#ifndef TT_SELF_COST_H
#define TT_SELF_COST_H

#include <linux/types.h>
#include "core/snapshot.h"

#define SELF_PROGS_MAX SNAP_PROGS_MAX

/* Cumulative figures of one program as the kernel reports them. */
struct prog_stat {
	__u64 runs;
	__u64 run_ns;
};

struct self_cost {
	int stats_fd; /* BPF_ENABLE_STATS(BPF_STATS_RUN_TIME), held to close; -1: refused */
	int nprogs;
	int prog_fd[SELF_PROGS_MAX];
	char name[SELF_PROGS_MAX][SNAP_PROG_NAME];
	struct prog_stat read[SELF_PROGS_MAX];  /* the kernel's counts at the last read */
	struct prog_stat total[SELF_PROGS_MAX]; /* counted since the program was followed */
	struct prog_stat prev[SELF_PROGS_MAX];  /* total at the last collect */
	double cpu_prev;                        /* process CPU seconds at the last read */
};

/* Turns the statistics on for the whole run (-errno when the kernel refuses: figures stay
 * zero). */
int self_cost__init(struct self_cost *sc);
/* Adds a loaded program to follow, from now on. */
void self_cost__add_prog(struct self_cost *sc, int prog_fd, const char *name);
/* The interval since the last call: each program's runs and run time, the process's CPU and
 * RSS, into s. */
void self_cost__collect(struct self_cost *sc, struct snapshot *s);
/* Turns the statistics off (unless another holder keeps them on). */
void self_cost__close(struct self_cost *sc);
/* Run time of all followed programs so far, ns (cumulative). */
__u64 self_cost__total_ns(struct self_cost *sc);

/* What happened between two readings of cumulative counters. A counter that went
 * backwards (the program was replaced, statistics switched off and on) starts again from
 * zero: its new value is the delta. Pure. */
void prog_stat_delta(const struct prog_stat *prev, const struct prog_stat *cur,
		     struct prog_stat *delta);

double self_cpu_seconds(void);
unsigned long long self_rss_kb(void);

#endif
