/* SPDX-License-Identifier: GPL-2.0 */
/* When the deep tier runs (--deep): the per-packet and scheduler programs (PF_DEEP in
 * bpf/program_catalogue.h) cost most of what tailtrace costs, and a request's split needs
 * them only for a sample of the requests. The socket-level programs time every request all
 * the time; the deep ones are attached for windows that take `duty` of the time (a duty
 * cycle), and for one more window when a request finishes slower than twice the p99 of
 * the last span (the tail trigger), so the requests of an episode are split too. A window lasts at
 * least DEEP_WINDOW_MIN_NS and four times the recent p99 latency (up to DEEP_WINDOW_MAX_NS), so
 * long requests can start and end inside one. The pure rules here; collector_deep.c
 * attaches and detaches. */
#ifndef TT_DEEP_PLAN_H
#define TT_DEEP_PLAN_H

#include <stdbool.h>
#include <linux/types.h>
#include "core/histogram.h"

#define DEEP_DUTY_DEFAULT  0.1            /* record: 1 s of every 10 */
#define DEEP_WINDOW_MIN_NS 1000000000ULL  /* 1 s */
#define DEEP_WINDOW_MAX_NS 30000000000ULL /* 30 s */
#define DEEP_TAIL_SPAN_NS  10000000000ULL /* the tail trigger's p99 is of the last 10 s */
#define DEEP_TAIL_MIN_REQS 100            /* ... once that many requests were seen */
#define DEEP_TAIL_FACTOR   2              /* fires over this many times that p99 */
/* triggered windows may take at most this many times the duty's share of the run */
#define DEEP_TRIGGER_CAP 2.0

struct deep_plan {
	double duty;        /* share of the time: 1 always deep, 0 never */
	double duty_asked;  /* ... as the user asked; --budget may lower duty below it */
	bool on;            /* the tier runs now */
	bool triggered;     /* ... and this window was opened by the tail trigger */
	bool trigger_armed; /* a request slower than the threshold finished while off */
	__u64 start_ns;     /* CLOCK_MONOTONIC at the plan's start */
	__u64 changed_ns;   /* ... at the last change of `on` */
	__u64 window_ns;    /* the length of the window in progress or next */
	__u64 on_total_ns;  /* time on since the start, the window in progress excluded */
	__u64 threshold_ns; /* the tail trigger: p99 of the last span's requests (0: none) */
	struct hist lat_cur, lat_prev; /* requests' latency, this span and the last */
	__u64 span_start_ns;
	/* since the last deep_plan_take() */
	__u64 taken_ns, on_since_taken_ns;
	__u32 windows, windows_triggered;
};

/* duty in [0, 1]; the tier starts on (a short run gets a split) unless duty is 0. */
void deep_plan_init(struct deep_plan *p, double duty, __u64 now);
/* --budget: the duty to hold from now on (at most the one asked for). */
void deep_plan_set_duty(struct deep_plan *p, double duty);
/* The duty --budget allows: the share of the time the deep tier can run for the cost to
 * stay at `aim` (% of one CPU), costing `on` while it runs and `off` otherwise; at most
 * `asked`, 0 when even `off` is over the aim. */
double deep_plan_duty_within(double aim, double on, double off, double asked);
/* A request finished with this latency. */
void deep_plan_request(struct deep_plan *p, __u64 latency_ns);
/* Whether the tier should run at `now`; moves the plan on. */
bool deep_plan_step(struct deep_plan *p, __u64 now);
/* Since the last take: time on, time in all, windows opened (and by the trigger). */
void deep_plan_take(struct deep_plan *p, __u64 now, __u64 *on_ns, __u64 *span_ns, __u32 *windows,
		    __u32 *triggered);

#endif
