/* SPDX-License-Identifier: GPL-2.0 */
/* What every tracing command shares: parse options, check privileges, open the collector,
 * report unavailable stages once, and run an interval loop until -d or a signal. */
#ifndef TT_SESSION_H
#define TT_SESSION_H

#include <stdbool.h>
#include "collect/collector.h"
#include "cmd/options.h"

struct rdma_tracer;
struct self_prio;

struct session {
	struct tt_opts o;
	struct collector *coll;
	struct rdma_tracer *rdma; /* with --rdma (or any RDMA option) */
	double started;           /* CLOCK_MONOTONIC seconds */
	struct self_prio *prio;   /* SCHED_IDLE with its watchdog (self_prio.h), or NULL */
};

typedef unsigned int (*session_features_fn)(const struct tt_opts *o);

/* Returns -1 when the caller should go on, else the exit status to return. The collector
 * features are `features`, plus what features_of (may be NULL) derives from the options.
 * The programs are attached when it returns; the caller opens what it still needs
 * privileges for, then calls session_settle(). */
int session_start(struct session *s, enum tt_cmd_id cmd, int argc, char **argv,
		  unsigned int features, session_features_fn features_of);
/* After attaching: drops every capability the rest of the run does not need (all of them,
 * but for RDMA discovery's with --rdma; docs/security.md), sets no-new-privs, then moves
 * this thread to SCHED_IDLE with its watchdog (self_prio.h). Threads started before it
 * would keep their capabilities: start them after. Returns 0, or -errno when the drop
 * failed (the session goes on; the caller says so). */
int session_settle(struct session *s);
/* Consumes request events and RDMA discovery for up to timeout_ms. */
void session_poll(struct session *s, int timeout_ms);
/* Everything measured since the last call (TCP, scheduler, requests, RDMA) into s. */
int session_snapshot(struct session *s, struct snapshot *snap);
/* Called with each interval's snapshot and its length in seconds; `last` is true for the
 * final one (the end of -d, a signal, or --count reached). */
typedef void (*session_emit_fn)(struct session *s, const struct snapshot *snap, double dur,
				bool last, void *ctx);
/* The interval loop every tracing command runs: wait, snapshot, emit, until -d, a signal
 * or `count` intervals (0: no limit). Ends the session; returns the exit status. */
int session_run(struct session *s, double interval_s, long count, session_emit_fn emit, void *ctx);
void session_end(struct session *s);

#endif
