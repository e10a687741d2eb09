/* SPDX-License-Identifier: GPL-2.0 */
/* What this kernel allows, found by loading and firing a minimal program of each kind,
 * and which hook feeds each stage as a result. */
#ifndef TT_KERNEL_CAPS_H
#define TT_KERNEL_CAPS_H

#include <stdbool.h>
#include "probe.bpf.h"
#include "program_catalogue.h"
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
	int nargs;        /* its arguments, from BTF (-1 unknown) */
};

/* A kernel function an fentry, fexit or kprobe program attaches to. */
struct fn_need {
	const char *name;
	bool btf;  /* a FUNC in vmlinux BTF: not inlined away, fentry can type it */
	int nargs; /* its parameters, from BTF */
};

#define CAPS_MAX_TPS 48
#define CAPS_MAX_FNS 16

/* One row of bpf/program_catalogue.h. */
struct feed_row {
	const char *prog;
	const char *event;
	int alt;
	enum feed_kind kind;
	const char *target;
	int nargs;
	unsigned int flags; /* PF_* */
};

#define TT_PROG_COUNT_ROW(...) +1
enum { FEED_ROWS = 0 TT_PROGRAM_CATALOGUE(TT_PROG_COUNT_ROW) };

struct kernel_caps {
	char release[65];
	bool btf;     /* /sys/kernel/btf/vmlinux */
	bool tracefs; /* tracefs mounted (after trying to mount it) */
	bool tracefs_mounted_by_us;
	struct hook_result kinds[PK__MAX];
	bool tstamp_cb[PT__MAX]; /* which TX timestamping callbacks fired */
	bool feat[PFEAT__MAX];   /* helpers the verifier accepts (probe.bpf.h) */
	bool kfunc_rdonly_cast;  /* bpf_rdonly_cast in BTF (6.2+): the object with kfuncs loads */
	bool compat;             /* the object without kfuncs is loaded (see above) */
	struct tp_need tps[CAPS_MAX_TPS];
	int ntps;
	struct fn_need fns[CAPS_MAX_FNS];
	int nfns;
	/* the feed of every event: feeds_choose() */
	unsigned int avoid_kinds; /* 1 << FEED_*: not chosen while another feed works */
	bool feed_on[FEED_ROWS];
};

const char *probe_kind_name(enum probe_kind k);
const char *feed_kind_name(enum feed_kind k);
/* The program catalogue; returns FEED_ROWS. */
const struct feed_row *feed_rows(void);
/* Runs every probe. Needs root; returns 0, or -EINVAL when TAILTRACE_AVOID_FEEDS names an
 * unknown feed kind. */
int kernel_caps_probe(struct kernel_caps *c);
/* What a tracepoint no stage of the catalogue names feeds (a counter, flow state), or
 * NULL. */
const char *kernel_caps_tp_feeds(const char *name);
/* True when the tracepoint is usable through tp_btf. */
bool kernel_caps_has_tp(const struct kernel_caps *c, const char *name);
/* Parses TAILTRACE_AVOID_FEEDS ("kprobe,fentry", ...) into 1 << FEED_* bits, "kfunc"
 * into FEED_AVOID_KFUNCS (the compat object even where kfuncs exist); -EINVAL on an
 * unknown name. */
#define FEED_AVOID_KFUNCS (1u << FEED__MAX)
int feed_kinds_parse(const char *s, unsigned int *out);

/* Pure, from caps (user/collect/feeds.c): */
/* Whether one row's hook is there, and if not why. */
bool feed_row_available(const struct kernel_caps *c, const struct feed_row *r, char *why,
			size_t len);
/* Per event, the first alternative whose rows are all available and whose kinds are not
 * avoided (an avoided one only when nothing else is): fills c->feed_on. */
void feeds_choose(struct kernel_caps *c);
/* The catalogue's distinct events, in its order, into out; returns how many. */
int feed_events(const char **out, int max);
/* Whether a program is in the chosen feeds. */
bool feeds_prog_on(const struct kernel_caps *c, const char *prog);
/* Whether a chosen feed carries one of the flags. */
bool feeds_flag_on(const struct kernel_caps *c, unsigned int flag);
/* The event's chosen feed, as "fentry tcp_sendmsg_locked" into desc; false (desc: why
 * each feed is missing) when none is available. */
bool feed_event(const struct kernel_caps *c, const char *event, char *desc, size_t len);

struct stage_feed {
	const char *hook; /* hook description for the stage */
	bool available;
	char feeds[256]; /* the chosen feed of each event the stage needs */
	char why[256];   /* when not available */
};

/* Which hook feeds a stage on this kernel (pure: derived from caps). */
void stage_feed_of(const struct kernel_caps *c, enum tt_stage s, struct stage_feed *out);

#endif
