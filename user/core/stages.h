/* SPDX-License-Identifier: GPL-2.0 */
/* The stage catalogue: stable names, attribution class and hook of every stage. */
#ifndef TT_USER_STAGES_H
#define TT_USER_STAGES_H

#include "tailtrace.h"

enum tt_class {
	CLASS_COMPUTE,
	CLASS_TRANSPORT,
	CLASS_CONGESTION,
	CLASS_SPLIT,	/* RTT-like: base part is transport, inflation above min is congestion */
	CLASS_REQUEST,	/* request-level totals, not a component */
	CLASS__MAX,
};

struct stage_info {
	enum tt_stage id;
	const char *name;	/* stable contract, e.g. "tx.qdisc" */
	enum tt_class class;
	const char *desc;
};

const struct stage_info *stage_info(enum tt_stage id);
/* Returns the stage id for a name, or -ENOENT. */
int stage_by_name(const char *name);
const char *class_name(enum tt_class c);
const char *group_by_name(enum tt_group_by by);
/* Returns the enum tt_group_by for "port", "raddr", "comm", "cgroup", "none" or -EINVAL. */
int group_by_parse(const char *s);

#endif
