// SPDX-License-Identifier: GPL-2.0
/* Which program feeds each kernel event on this kernel, and so which stages exist: the
 * program catalogue (bpf/program_catalogue.h) against the kernel's capabilities. Pure, so
 * `probe`, the collector and the tests agree, and tests can drive it with made-up kernels. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "collect/kernel_caps.h"
#include "core/stages.h"
#include "lib/util.h"

#define FEED_ROW(p, ev, a, k, tgt, n, fl)                                                          \
	{ .prog = #p, .event = ev, .alt = a, .kind = k, .target = tgt, .nargs = n, .flags = fl },

static const struct feed_row rows[FEED_ROWS] = { TT_PROGRAM_CATALOGUE(FEED_ROW) };

static const char *const feed_kind_names[FEED__MAX] = {
	[FEED_TP_BTF] = "tp_btf",
	[FEED_FENTRY] = "fentry",
	[FEED_FEXIT] = "fexit",
	[FEED_KPROBE] = "kprobe",
	[FEED_KRETPROBE] = "kretprobe",
	[FEED_SOCKOPS] = "sockops",
	[FEED_SOCKOPS_TSTAMP] = "sockops_tstamp",
	[FEED_CGROUP_SKB] = "cgroup_skb",
	[FEED_UPROBE] = "uprobe",
	[FEED_RUN] = "run",
};

const struct feed_row *feed_rows(void)
{
	return rows;
}

const char *feed_kind_name(enum feed_kind k)
{
	return (unsigned)k < FEED__MAX ? feed_kind_names[k] : "?";
}

int feed_kinds_parse(const char *s, unsigned int *out)
{
	char buf[128], *save = NULL;

	*out = 0;
	if (!s || !*s)
		return 0;
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int k;

		if (!strcmp(t, "kfunc")) {
			*out |= FEED_AVOID_KFUNCS;
			continue;
		}
		for (k = 0; k < FEED__MAX; k++)
			if (!strcmp(t, feed_kind_names[k]))
				break;
		if (k == FEED__MAX)
			return -EINVAL;
		*out |= 1u << k;
		/* a kind and its return twin go together */
		if (k == FEED_FENTRY)
			*out |= 1u << FEED_FEXIT;
		if (k == FEED_KPROBE)
			*out |= 1u << FEED_KRETPROBE;
	}
	return 0;
}

static const struct fn_need *fn_of(const struct kernel_caps *c, const char *name)
{
	for (int i = 0; i < c->nfns; i++)
		if (!strcmp(c->fns[i].name, name))
			return &c->fns[i];
	return NULL;
}

static const struct tp_need *tp_of(const struct kernel_caps *c, const char *name)
{
	for (int i = 0; i < c->ntps; i++)
		if (!strcmp(c->tps[i].name, name))
			return &c->tps[i];
	return NULL;
}

static bool kind_ok(const struct kernel_caps *c, enum probe_kind k, char *why, size_t len)
{
	if (c->kinds[k].available)
		return true;
	snprintf(why, len, "%s unavailable (%s)", probe_kind_name(k), c->kinds[k].detail);
	return false;
}

static bool fn_ok(const struct kernel_caps *c, const struct feed_row *r, enum probe_kind k,
		  char *why, size_t len)
{
	const struct fn_need *fn = fn_of(c, r->target);

	if (!kind_ok(c, k, why, len))
		return false;
	if (!fn || !fn->btf) {
		snprintf(why, len, "no function %s", r->target);
		return false;
	}
	if (r->nargs && k == PK_FENTRY && fn->nargs != r->nargs) {
		snprintf(why, len, "%s has %d parameters, not %d", r->target, fn->nargs, r->nargs);
		return false;
	}
	return true;
}

bool feed_row_available(const struct kernel_caps *c, const struct feed_row *r, char *why,
			size_t len)
{
	const struct tp_need *tp;

	why[0] = 0;
	switch (r->kind) {
	case FEED_TP_BTF:
		tp = tp_of(c, r->target);
		if (!tp || !tp->btf) {
			snprintf(why, len, "tracepoint %s missing", r->target);
			return false;
		}
		if (tp->nargs >= 0 && tp->nargs < r->nargs) {
			snprintf(why, len, "tracepoint %s has %d arguments, not %d", r->target,
				 tp->nargs, r->nargs);
			return false;
		}
		return true;
	case FEED_FENTRY:
	case FEED_FEXIT:
		return fn_ok(c, r, PK_FENTRY, why, len);
	case FEED_KPROBE:
	case FEED_KRETPROBE:
		return fn_ok(c, r, PK_KPROBE, why, len);
	case FEED_UPROBE:
		return kind_ok(c, PK_UPROBE, why, len);
	case FEED_SOCKOPS_TSTAMP:
		/* its kfuncs are not in the compat object */
		if (c->compat) {
			snprintf(why, len, "no kfuncs before 6.2");
			return false;
		}
		return kind_ok(c, PK_SOCKOPS_TSTAMP, why, len);
	case FEED_RUN:
		if ((r->flags & PF_FOR_EACH) && !c->feat[PFEAT_FOR_EACH]) {
			snprintf(why, len, "no bpf_for_each_map_elem()");
			return false;
		}
		return true;
	default:
		return true;
	}
}

/* Whether every row of (event, alt) is available; *kinds gets their kinds' bits. */
static bool alt_available(const struct kernel_caps *c, const char *event, int alt,
			  unsigned int *kinds)
{
	char why[160];
	bool any = false;

	*kinds = 0;
	for (int i = 0; i < FEED_ROWS; i++) {
		if (strcmp(rows[i].event, event) || rows[i].alt != alt)
			continue;
		if (!feed_row_available(c, &rows[i], why, sizeof(why)))
			return false;
		*kinds |= 1u << rows[i].kind;
		any = true;
	}
	return any;
}

static int max_alt(const char *event)
{
	int m = -1;

	for (int i = 0; i < FEED_ROWS; i++)
		if (!strcmp(rows[i].event, event) && rows[i].alt > m)
			m = rows[i].alt;
	return m;
}

/* The chosen alternative of an event, -1 when none works. */
static int choose_alt(const struct kernel_caps *c, const char *event)
{
	int first_ok = -1, n = max_alt(event);

	for (int alt = 0; alt <= n; alt++) {
		unsigned int kinds;

		if (!alt_available(c, event, alt, &kinds))
			continue;
		if (!(kinds & c->avoid_kinds))
			return alt;
		if (first_ok < 0)
			first_ok = alt;
	}
	return first_ok;
}

static bool first_of_event(int i)
{
	for (int j = 0; j < i; j++)
		if (!strcmp(rows[j].event, rows[i].event))
			return false;
	return true;
}

int feed_events(const char **out, int max)
{
	int n = 0;

	for (int i = 0; i < FEED_ROWS && n < max; i++)
		if (first_of_event(i))
			out[n++] = rows[i].event;
	return n;
}

void feeds_choose(struct kernel_caps *c)
{
	memset(c->feed_on, 0, sizeof(c->feed_on));
	for (int i = 0; i < FEED_ROWS; i++) {
		int alt;

		if (!first_of_event(i))
			continue;
		alt = choose_alt(c, rows[i].event);
		for (int j = i; j < FEED_ROWS && alt >= 0; j++)
			if (!strcmp(rows[j].event, rows[i].event) && rows[j].alt == alt)
				c->feed_on[j] = true;
	}
}

bool feeds_prog_on(const struct kernel_caps *c, const char *prog)
{
	for (int i = 0; i < FEED_ROWS; i++)
		if (c->feed_on[i] && !strcmp(rows[i].prog, prog))
			return true;
	return false;
}

bool feeds_flag_on(const struct kernel_caps *c, unsigned int flag)
{
	for (int i = 0; i < FEED_ROWS; i++)
		if (c->feed_on[i] && (rows[i].flags & flag))
			return true;
	return false;
}

/* Whether another feed of the event is of the same kind on the same target (a
 * tracepoint's other argument lists, fexit's other prototype). */
static bool target_shared(const char *event, int alt, int kind, const char *target)
{
	for (int i = 0; i < FEED_ROWS; i++)
		if (!strcmp(rows[i].event, event) && rows[i].alt != alt &&
		    (int)rows[i].kind == kind && !strcmp(rows[i].target, target))
			return true;
	return false;
}

/* "tp_btf sock:sock_send_length", "kprobe+kretprobe tcp_recvmsg"; where another feed of the
 * event is of that kind on that target, the program too: "tp_btf skb:kfree_skb
 * (tt_kfree_skb_noreason)" */
static void describe_alt(const char *event, int alt, char *buf, size_t len)
{
	const char *target = "", *prog = "";
	size_t off = 0;
	int last = -1;

	buf[0] = 0;
	for (int i = 0; i < FEED_ROWS && off < len; i++) {
		if (strcmp(rows[i].event, event) || rows[i].alt != alt)
			continue;
		target = rows[i].target;
		prog = rows[i].prog;
		if ((int)rows[i].kind == last)
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "+" : "",
					feed_kind_name(rows[i].kind));
		last = (int)rows[i].kind;
	}
	if (off < len)
		off += (size_t)snprintf(buf + off, len - off, " %s", target);
	if (off < len && target_shared(event, alt, last, target))
		snprintf(buf + off, len - off, " (%s)", prog);
}

bool feed_event(const struct kernel_caps *c, const char *event, char *desc, size_t len)
{
	int n = max_alt(event);
	size_t off = 0;

	desc[0] = 0;
	if (n < 0) {
		snprintf(desc, len, "no program feeds %s", event);
		return false;
	}
	for (int i = 0; i < FEED_ROWS; i++) {
		if (c->feed_on[i] && !strcmp(rows[i].event, event)) {
			describe_alt(event, rows[i].alt, desc, len);
			return true;
		}
	}
	/* none chosen: why each alternative is missing, the first row that fails */
	for (int alt = 0; alt <= n && off < len; alt++) {
		for (int i = 0; i < FEED_ROWS; i++) {
			char why[160];

			if (strcmp(rows[i].event, event) || rows[i].alt != alt ||
			    feed_row_available(c, &rows[i], why, sizeof(why)))
				continue;
			off += (size_t)snprintf(desc + off, len - off, "%s%s", off ? "; " : "",
						why);
			break;
		}
	}
	return false;
}

void stage_feed_of(const struct kernel_caps *c, enum tt_stage s, struct stage_feed *out)
{
	const struct stage_info *r = stage_info(s);
	size_t off = 0;

	memset(out, 0, sizeof(*out));
	out->hook = "none";
	if (!r) {
		snprintf(out->why, sizeof(out->why), "no hook known");
		return;
	}
	out->hook = r->hook;
	if (!c->btf) {
		snprintf(out->why, sizeof(out->why), "no kernel BTF (tp_btf and CO-RE need it)");
		return;
	}
	if (r->kind >= 0 && !c->kinds[r->kind].available) {
		snprintf(out->why, sizeof(out->why), "%s unavailable: %s", probe_kind_name(r->kind),
			 c->kinds[r->kind].detail);
		return;
	}
	for (int t = 0; t < 4 && r->tps[t]; t++) {
		char desc[200];

		if (!feed_event(c, r->tps[t], desc, sizeof(desc))) {
			snprintf(out->why, sizeof(out->why), "%s: %s", r->tps[t], desc);
			out->feeds[0] = 0;
			return;
		}
		if (off < sizeof(out->feeds))
			off += (size_t)snprintf(out->feeds + off, sizeof(out->feeds) - off, "%s%s",
						off ? ", " : "", desc);
	}
	out->available = true;
}
