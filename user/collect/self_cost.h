/* SPDX-License-Identifier: GPL-2.0 */
/* What tailtrace costs, measured by itself each interval: its BPF programs' run count and
 * run time from the kernel's own accounting, and its process's CPU time. Also the sampling
 * rate the --budget controller keeps the cost in with (collect/budget.h).
 *
 * The kernel's statistics cost every program on the host two sched_clock() reads a run,
 * as much as a small program costs on a VM; turning them on or off costs far more: it
 * flips a host-wide static key (every inlined bpf_prog_run() site patched, every CPU
 * synced), 5-17 ms of one CPU with preemption off on a 2-vCPU VM. A window of
 * SELF_STATS_ON_NS in every SELF_STATS_PERIOD_NS, scaled to the period, switched them
 * twice a second and stalled the host's threads as long: the tails tailtrace measures.
 * So the BPF_ENABLE_STATS fd taken at the start is held until the end (one window that
 * never closes, the figures whole). The window code stays for a kernel whose switch is
 * cheap; self_cost__init starts no keeper, so it never runs. */
#ifndef TT_SELF_COST_H
#define TT_SELF_COST_H

#include <stdbool.h>
#include <linux/types.h>
#include "collect/stats_keeper.h"
#include "core/snapshot.h"

#define SELF_PROGS_MAX SNAP_PROGS_MAX

#define SELF_STATS_PERIOD_NS 1000000000ULL
#define SELF_STATS_ON_NS     100000000ULL

/* Cumulative figures of one program as the kernel reports them. */
struct prog_stat {
	__u64 runs;
	__u64 run_ns;
};

struct self_cost {
	int stats_fd; /* BPF_ENABLE_STATS(BPF_STATS_RUN_TIME) while the window is open */
	/* once capabilities are dropped, the statistics are turned on by the keeper */
	struct stats_keeper keeper;
	bool keeper_on;    /* the keeper has them on */
	bool keeper_asked; /* ... asked to turn them on, no answer yet */
	bool dropped;      /* this process can no longer turn them on (capabilities dropped) */
	bool refused;      /* the kernel refused the statistics at the start: figures stay zero */
	bool measuring;    /* they are on and the window open */
	bool measured;     /* this period's window was read */
	__u64 period_ns;   /* when this period began, CLOCK_MONOTONIC */
	__u64 window_start_ns; /* when its window opened */
	__u64 window_ns;       /* the window's length once read, 0 before */
	__u64 last_window_ns;  /* the last window measured (a period without one uses it) */
	int nprogs;
	int prog_fd[SELF_PROGS_MAX];
	char name[SELF_PROGS_MAX][SNAP_PROG_NAME];
	struct prog_stat opened[SELF_PROGS_MAX]; /* the kernel's counts when the window opened */
	struct prog_stat window[SELF_PROGS_MAX]; /* what the window saw, once closed */
	struct prog_stat last_window[SELF_PROGS_MAX];
	struct prog_stat est[SELF_PROGS_MAX];  /* estimated totals of the periods so far */
	struct prog_stat prev[SELF_PROGS_MAX]; /* est at the last collect */
	double cpu_prev;                       /* process CPU seconds at the last read */
};

/* Opens the first window (-errno when the kernel refuses: figures stay zero). */
int self_cost__init(struct self_cost *sc);
/* Adds a loaded program to follow, from now on. */
void self_cost__add_prog(struct self_cost *sc, int prog_fd, const char *name);
/* Closes the window or starts the next period when it is time: call it often (every
 * poll); the window is as long as the time between two calls allows. */
void self_cost__tick(struct self_cost *sc);
/* The interval since the last call: each program's runs and run time, the process's CPU and
 * RSS, into s. Ends the period in progress. */
void self_cost__collect(struct self_cost *sc, struct snapshot *s);
void self_cost__close(struct self_cost *sc);
/* Estimated run time of all followed programs so far, ns (cumulative). Ends the period in
 * progress. */
__u64 self_cost__total_ns(struct self_cost *sc);

/* A period of period_ns in which the statistics were on for window_ns and counted `seen`:
 * the estimate for the whole period, in est (added). Pure. */
void prog_stat_scale_add(const struct prog_stat *seen, __u64 window_ns, __u64 period_ns,
			 struct prog_stat *est);

/* What happened between two readings of cumulative counters. A counter that went
 * backwards (the program was replaced, statistics switched off and on) starts again from
 * zero: its new value is the delta. Pure. */
void prog_stat_delta(const struct prog_stat *prev, const struct prog_stat *cur,
		     struct prog_stat *delta);

double self_cpu_seconds(void);
unsigned long long self_rss_kb(void);

#endif
