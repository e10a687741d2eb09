/* SPDX-License-Identifier: GPL-2.0 */
/* What this kernel allows, found by loading and firing a minimal program of each kind,
 * and which hook feeds each stage as a result. */
#ifndef TT_KERNEL_CAPS_H
#define TT_KERNEL_CAPS_H

#include <stdbool.h>
#include "probe.bpf.h"
#include "tailtrace.h"

struct hook_result {
	bool available;
	int err;         /* positive errno when not available */
	char detail[96]; /* what failed or what fired */
};

struct tp_need {
	const char *name; /* tracepoint as group:event */
	bool btf;         /* btf_trace_<event> in vmlinux BTF (tp_btf usable) */
	bool tracefs;     /* listed under tracefs events (classic tracepoint usable) */
};

#define CAPS_MAX_TPS 48

struct kernel_caps {
	char release[65];
	bool btf;     /* /sys/kernel/btf/vmlinux */
	bool tracefs; /* tracefs mounted (after trying to mount it) */
	bool tracefs_mounted_by_us;
	struct hook_result kinds[PK__MAX];
	bool tstamp_cb[PT__MAX]; /* which TX timestamping callbacks fired */
	struct tp_need tps[CAPS_MAX_TPS];
	int ntps;
};

const char *probe_kind_name(enum probe_kind k);
/* Runs every probe. Needs root; returns 0 or negative errno for a setup failure. */
int kernel_caps_probe(struct kernel_caps *c);
/* What a tracepoint no stage of the catalogue names feeds (a counter, flow state), or
 * NULL. */
const char *kernel_caps_tp_feeds(const char *name);
/* True when the tracepoint is usable through tp_btf. */
bool kernel_caps_has_tp(const struct kernel_caps *c, const char *name);

struct stage_feed {
	const char *hook; /* hook description for the stage */
	bool available;
	char why[128]; /* when not available */
};

/* Which hook feeds a stage on this kernel (pure: derived from caps). */
void stage_feed_of(const struct kernel_caps *c, enum tt_stage s, struct stage_feed *out);

#endif
