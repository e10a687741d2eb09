/* SPDX-License-Identifier: GPL-2.0 */
/* The stage catalogue (bpf/stage_catalogue.h) as a table: stable names, attribution class,
 * hooks and stage sets of every stage. */
#ifndef TT_USER_STAGES_H
#define TT_USER_STAGES_H

#include <stdbool.h>
#include "tailtrace.h"

/* The values of the catalogue's class column, X(ID, name): CLASS_<ID>, class_name(). */
#define TT_CLASSES(X)                                                                              \
	X(COMPUTE, "compute")                                                                      \
	X(TRANSPORT, "transport")                                                                  \
	X(CONGESTION, "congestion")                                                                \
	/* RTT-like: base part is transport, inflation above min is congestion */                  \
	X(SPLIT, "split")                                                                          \
	/* request-level totals, not a component */                                                \
	X(REQUEST, "request")

enum tt_class {
#define X(id, name) CLASS_##id,
	TT_CLASSES(X)
#undef X
		CLASS__MAX,
};

/* One row of bpf/stage_catalogue.h. */
struct stage_info {
	enum tt_stage id;
	const char *name; /* stable contract, e.g. "tx.qdisc" */
	enum tt_class class;
	unsigned int flags; /* SF_* */
	int kind;           /* enum probe_kind needed beyond tracepoints, -1 none */
	const char *tps[4]; /* tracepoints it needs, "system:name" */
	const char *hook;   /* the hooks, as `probe` prints them */
	const char *desc;
	const char *test; /* the test comparing it with outside truth, or NULL */
};

const struct stage_info *stage_info(enum tt_stage id);
/* Returns the stage id for a name, or -ENOENT. */
int stage_by_name(const char *name);
/* The same for a recording: also the names stages had before a rename. */
int stage_by_recorded_name(const char *name);
/* Whether flow sampling (--budget) thins a stage's samples: not the driver and softirq
 * stages (SF_NIC), which time every packet of the selected ports, nor, with --dev (devs),
 * tx.qdisc and tx.nic, which then time packets of any flow. */
bool stage_flow_sampled(enum tt_stage id, bool devs);
/* The stages whose flags include all of `flags`, in catalogue order; returns how many
 * (at most max). */
int stages_with(unsigned int flags, int *out, int max);
const char *class_name(enum tt_class c);
const char *group_by_name(enum tt_group_by by);
/* Returns the enum tt_group_by for "port", "raddr", "comm", "cgroup", "none" or -EINVAL. */
int group_by_parse(const char *s);

#endif
