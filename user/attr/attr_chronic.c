// SPDX-License-Identifier: GPL-2.0
/* The chronic question: how much of the p99 request's time is waiting above the floor that
 * every request has too (a standing queue, persistent loss, steady CPU contention, a reader
 * that is always slow). The tail-vs-median rule cannot see such a fault: it slows the median
 * as much as the tail. Here every part is a floor, work, waiting or unseen; the waiting the
 * p99 group shares with the median group is the chronic fault, and the verdict combines it
 * with the episodic answer (docs/attribution.md §3). */
#include <string.h>
#include "attr/attr_int.h"
#include "core/snapshot.h"
#include "lib/format.h"

enum part_kind { PK_FLOOR, PK_WORK, PK_WAIT, PK_UNSEEN };

/* What each part is when nothing is wrong. Waiting stages have a floor of ~0: any time in
 * them is waiting. tcp.rtt's base is the path floor itself (attr_floor.c), rx.stack and
 * tx.nic the stack's and driver's own cost. Work is the request's own compute. */
static const enum part_kind part_kind[ATTR_PARTS] = {
	[PART_RX_STACK] = PK_FLOOR,
	[PART_RX_SOCKQ] = PK_WAIT,
	[PART_TX_SENDQ] = PK_WAIT,
	[PART_TX_QDISC] = PK_WAIT,
	[PART_TX_NIC] = PK_FLOOR,
	[PART_RETRANS_LOSS] = PK_WAIT,
	[PART_RETRANS_QUEUE] = PK_WAIT,
	[PART_RTT_BASE] = PK_FLOOR,
	[PART_RTT_QUEUE] = PK_WAIT,
	[PART_SCHED_RUNQ] = PK_WAIT,
	[PART_SCHED_ONCPU] = PK_WORK,
	[PART_SCHED_OFFCPU] = PK_WORK,
	[PART_GPU_WAIT] = PK_WORK,
	[PART_APP_OTHER] = PK_WORK,
	[PART_REMOTE] = PK_UNSEEN,
	[PART_UNCOVERED] = PK_UNSEEN,
	[PART_TX_SENDQ_LOSS] = PK_WAIT,
	/* packets waiting for the NET_RX softirq: nothing of it is the stack's own cost */
	[PART_RX_BACKLOG] = PK_WAIT,
};

const char *attr_verdict_kind_name(enum attr_verdict_kind k)
{
	static const char *const names[] = { "none", "episodic", "chronic", "both" };

	return (unsigned)k <= VERDICT_KIND_BOTH ? names[k] : "?";
}

static void budget_of(const struct attr_group *g, struct attr_budget *b)
{
	memset(b, 0, sizeof(*b));
	for (int p = 0; p < ATTR_PARTS; p++) {
		double v = g->part_mean_ns[p];

		switch (part_kind[p]) {
		case PK_FLOOR:
			b->floor_ns += v;
			break;
		case PK_WORK:
			b->work_ns += v;
			break;
		case PK_WAIT:
			b->wait_ns[attr_parts[p].class] += v;
			break;
		default:
			b->unseen_ns += v;
		}
	}
}

static double min2(double a, double b)
{
	return a < b ? a : b;
}

/* The class whose waiting the p99 and the median request share most, its part, and the
 * rule that says whether it is a fault. */
static void chronic_find(const struct attr_report *r, const struct attr_params *P,
			 struct attr_chronic *c)
{
	double standing[ATTR_CLASSES] = { 0 }, best_part = -1, floor_ns;
	char w[24], tm[24];

	for (int p = 0; p < ATTR_PARTS; p++)
		if (part_kind[p] == PK_WAIT)
			standing[attr_parts[p].class] +=
				min2(r->tail.part_mean_ns[p], r->median.part_mean_ns[p]);
	c->class = ATTR_COMPUTE;
	for (int k = 1; k < ATTR_CLASSES; k++)
		if (standing[k] > standing[c->class])
			c->class = k;
	c->wait_ns = standing[c->class];
	c->tail_wait_ns = r->tail.budget.wait_ns[c->class];
	c->median_wait_ns = r->median.budget.wait_ns[c->class];
	for (int p = 0; p < ATTR_PARTS; p++) {
		double v = min2(r->tail.part_mean_ns[p], r->median.part_mean_ns[p]);

		if (part_kind[p] != PK_WAIT || attr_parts[p].class != c->class || v <= best_part)
			continue;
		best_part = v;
		c->part = p;
		c->has_part = v > 0;
		c->part_median_ns = r->median.part_mean_ns[p];
	}
	/* a share of the median request: what every request is made of (a tail of rare
	 * long spikes must not hide a queue that every request waits in) */
	floor_ns = (double)P->chronic_min_wait_ns;
	if (P->chronic_min_share * r->median.mean_ns > floor_ns)
		floor_ns = P->chronic_min_share * r->median.mean_ns;
	fmt_duration(w, sizeof(w), c->wait_ns, DUR_PROSE);
	fmt_duration(tm, sizeof(tm), r->median.mean_ns, DUR_PROSE);
	c->found = r->requests >= P->min_requests && c->wait_ns > 0 && c->wait_ns >= floor_ns;
	snprintf(c->rule, sizeof(c->rule),
		 "%s waiting shared by the p99 tail and the median group: %s (%.0f%% of the "
		 "median group's mean %s, %.0f%% of the tail mean): %s (needs >= %.1f ms and >= "
		 "%.0f%% of the median group's mean)",
		 attr_class_name(c->class), w, 100 * (c->wait_ns / (r->median.mean_ns + 1e-9)), tm,
		 100 * (c->wait_ns / (r->tail.mean_ns + 1e-9)),
		 c->found ? "a chronic fault" : "no chronic fault",
		 (double)P->chronic_min_wait_ns / 1e6, 100 * P->chronic_min_share);
	if (r->requests < P->min_requests)
		snprintf(c->rule, sizeof(c->rule), "too few requests to judge");
}

/* The path floor of the analysed side: where tcp.rtt's base came from. */
static void floor_info(const struct attr_agg *a, int side, const struct snapshot *s,
		       struct attr_floor_info *f)
{
	const struct attr_path *p = attr_floor_top(a, side);
	struct attr_place_key k = { .part = PART_RTT_BASE, .level = 0 };
	char where[ATTR_WHERE_LEN], rtt[24];

	memset(f, 0, sizeof(*f));
	if (!p || !p->min_rtt_ns) {
		snprintf(f->source, sizeof(f->source),
			 "no RTT seen (recordings made before path floors were kept have none)");
		return;
	}
	f->known = true;
	f->rtt_ns = (double)p->min_rtt_ns;
	f->reqs = p->reqs;
	f->own_min_ns = (double)p->own_min_sum_ns / (double)(p->reqs ? p->reqs : 1);
	k.family = p->key.family;
	k.netns = p->key.netns;
	k.ifindex = p->key.ifindex;
	k.lport = p->lport;
	k.rport = p->rport;
	k.role = side == SIDE_CLIENT ? ROLE_CLIENT : ROLE_SERVER;
	memcpy(k.raddr, p->key.raddr, sizeof(k.raddr));
	attr_fmt_place(where, sizeof(where), &k, s);
	fmt_duration(rtt, sizeof(rtt), f->rtt_ns, DUR_PROSE);
	attr_appendf(f->source, sizeof(f->source),
		     "lowest RTT (%s) seen on %s, over %llu requests on that path", rtt, where,
		     (unsigned long long)p->reqs);
}

/* The device whose qdisc held the most of the traced flows' time, from the window's
 * tx.qdisc histograms: a standing queue shows as a high low quantile. */
static void qdisc_evidence(const struct snapshot *s, char *dst, size_t n)
{
	const struct snap_hist *top = NULL;
	char p10[24], p50[24];
	double dur;

	if (!s)
		return;
	dur = s->end_ns > s->start_ns ? (double)(s->end_ns - s->start_ns) / 1e9 : 0;
	for (size_t i = 0; i < s->nhists; i++) {
		const struct snap_hist *h = &s->hists[i];

		if (h->key.stage == STAGE_TX_QDISC && (!top || h->h.sum_ns > top->h.sum_ns))
			top = h;
	}
	if (!top || !top->h.count)
		return;
	fmt_duration(p10, sizeof(p10), (double)hist_quantile(&top->h, 0.10), DUR_PROSE);
	fmt_duration(p50, sizeof(p50), (double)hist_quantile(&top->h, 0.50), DUR_PROSE);
	attr_appendf(dst, n,
		     "qdisc %x:%x on dev %s: %llu packets of the traced flows in %.0f s, sojourn "
		     "p10 %s p50 %s (the backlog they met); qdisc drops %llu of %llu packets on "
		     "traced devices",
		     top->key.qdisc_handle >> 16, top->key.qdisc_handle & 0xffff,
		     snapshot__dev_name(s, top->key.netns, top->key.ifindex) ?: "?",
		     (unsigned long long)top->h.count, dur, p10, p50,
		     (unsigned long long)s->counters[CNT_QDISC_DROPS],
		     (unsigned long long)s->counters[CNT_QDISC_PKTS]);
}

/* What confirms the chronic fault, from data already collected. */
static void chronic_evidence(const struct attr_report *r, const struct snapshot *s,
			     struct attr_chronic *c)
{
	const struct attr_group *m = &r->median;
	char *e = c->evidence;
	size_t n = sizeof(c->evidence);
	double lat = m->mean_ns > 0 ? m->mean_ns : 1;

	switch (c->part) {
	case PART_TX_QDISC:
	case PART_TX_SENDQ:
	case PART_RETRANS_QUEUE:
		qdisc_evidence(s, e, n);
		break;
	case PART_RTT_QUEUE:
		attr_appendf(e, n, "median srtt %.0f us vs the path's floor %.0f us (%s)",
			     m->ev.srtt_ns / 1e3, r->floor.rtt_ns / 1e3, r->floor.source);
		break;
	case PART_RETRANS_LOSS:
	case PART_TX_SENDQ_LOSS:
		attr_appendf(e, n,
			     "retransmissions per request: median group %.2f (%.0f%% of requests), "
			     "p99 group %.2f; RTO %.2f per request",
			     m->ev.retrans, 100 * m->ev.retrans_reqs, r->tail.ev.retrans,
			     m->ev.retrans_rto);
		break;
	case PART_SCHED_RUNQ:
		attr_appendf(e, n,
			     "run-queue share: %.0f%% of the median request's time, %.0f%% "
			     "of the p99's",
			     100 * m->part_mean_ns[PART_SCHED_RUNQ] / lat,
			     100 * r->tail.part_mean_ns[PART_SCHED_RUNQ] /
				     (r->tail.mean_ns + 1e-9));
		break;
	case PART_RX_SOCKQ:
		attr_appendf(e, n,
			     "data unread on the socket: %.0f%% of the median request's time (the "
			     "receive window is not collected; the sender sees it as tx.sendq)",
			     100 * m->part_mean_ns[PART_RX_SOCKQ] / lat);
		break;
	default:
		break;
	}
}

/* "standing queue: every request waits ~17 ms in dev X qdisc Y" */
void attr_chronic_phrase(const struct attr_chronic *c, char *dst, size_t n)
{
	char w[24];
	const char *at = c->where[0] ? c->where : "an unknown place";

	fmt_duration(w, sizeof(w), c->part_median_ns, DUR_PROSE);
	dst[0] = 0;
	switch (c->part) {
	case PART_TX_QDISC:
		attr_appendf(dst, n, "standing queue: every request waits ~%s in %s", w, at);
		break;
	case PART_TX_SENDQ:
		attr_appendf(dst, n, "standing queue: every response waits ~%s for cwnd in %s", w,
			     at);
		break;
	case PART_RTT_QUEUE:
		attr_appendf(dst, n,
			     "standing queue on the path: every round trip is ~%s above the path's "
			     "floor (%s)",
			     w, at);
		break;
	case PART_RETRANS_QUEUE:
	case PART_RETRANS_LOSS:
	case PART_TX_SENDQ_LOSS:
		attr_appendf(dst, n,
			     "persistent loss: every request waits ~%s for retransmissions (%s)", w,
			     at);
		break;
	case PART_SCHED_RUNQ:
		attr_appendf(dst, n,
			     "steady CPU contention: every request waits ~%s for a CPU (%s)", w,
			     at);
		break;
	case PART_RX_SOCKQ:
		attr_appendf(dst, n,
			     "slow reader: every response waits ~%s unread on the socket (%s)", w,
			     at);
		break;
	default:
		attr_appendf(dst, n, "every request waits ~%s in %s", w, at);
	}
}

/* The p99 request's time in one line: floor, work, waiting per class, unseen. */
static void budget_phrase(const struct attr_group *g, char *dst, size_t n)
{
	char a[24], b[24], c[24];

	fmt_duration(a, sizeof(a), g->mean_ns, DUR_PROSE);
	fmt_duration(b, sizeof(b), g->budget.floor_ns, DUR_PROSE);
	fmt_duration(c, sizeof(c), g->budget.work_ns, DUR_PROSE);
	snprintf(dst, n, "p99 tail mean %s = floor %s + work %s", a, b, c);
	for (int k = 0; k < ATTR_CLASSES; k++) {
		if (g->budget.wait_ns[k] < 0.05 * g->mean_ns)
			continue;
		fmt_duration(a, sizeof(a), g->budget.wait_ns[k], DUR_PROSE);
		attr_appendf(dst, n, " + %s waiting %s", attr_class_name(k), a);
	}
	if (g->budget.unseen_ns >= 0.05 * g->mean_ns) {
		fmt_duration(a, sizeof(a), g->budget.unseen_ns, DUR_PROSE);
		attr_appendf(dst, n, " + unseen %s", a);
	}
}

/* The verdict with both answers: the one that explains more of the p99's time names the
 * class; the other is said next to it. */
static void combine(const struct attr_report *r, struct attr_chronic *c, struct attr_verdict *v)
{
	double episodic_ns = 0;
	char phrase[240], budget[200], old_rule[640], old_sum[640];

	if (!c->found)
		return;
	attr_chronic_phrase(c, phrase, sizeof(phrase));
	budget_phrase(&r->tail, budget, sizeof(budget));
	snprintf(old_rule, sizeof(old_rule), "%s", v->rule);
	snprintf(old_sum, sizeof(old_sum), "%s", v->summary);
	if (v->class != VERDICT_NONE) {
		/* the named class's share of the excess; a mixed tail explains all of it */
		episodic_ns = r->tail.excess_ns;
		for (int k = 0; k < ATTR_CLASSES && v->class != VERDICT_MIXED; k++)
			if (attr_class_verdict(k) == v->class)
				episodic_ns = r->tail.excess_ns * r->tail.excess_shares[k];
	}
	v->kind = v->class == VERDICT_NONE ? VERDICT_KIND_CHRONIC : VERDICT_KIND_BOTH;
	v->rule[0] = 0;
	attr_appendf(v->rule, sizeof(v->rule), "chronic: %s; episodic: %s", c->rule, old_rule);
	v->summary[0] = 0;
	if (v->kind == VERDICT_KIND_BOTH && episodic_ns >= c->wait_ns) {
		attr_appendf(v->summary, sizeof(v->summary), "%s; besides, %s", old_sum, phrase);
		return;
	}
	v->class = attr_class_verdict(c->class);
	v->part = c->part;
	v->has_part = c->has_part;
	snprintf(v->where, sizeof(v->where), "%s", c->where);
	attr_appendf(v->summary, sizeof(v->summary), "%s; %s", phrase, budget);
	if (v->kind == VERDICT_KIND_BOTH)
		attr_appendf(v->summary, sizeof(v->summary), "; and the tail: %s", old_sum);
}

void attr_chronic_analyze(const struct attr_agg *a, int side, const struct snapshot *s,
			  const struct attr_params *P, struct attr_report *r)
{
	struct attr_chronic *c = &r->chronic;
	int role = side == SIDE_CLIENT ? ROLE_CLIENT : ROLE_SERVER;

	memset(c, 0, sizeof(*c));
	budget_of(&r->tail, &r->tail.budget);
	budget_of(&r->median, &r->median.budget);
	if (r->has_p999)
		budget_of(&r->p999, &r->p999.budget);
	floor_info(a, side, s, &r->floor);
	if (!r->requests)
		return;
	chronic_find(r, P, c);
	if (c->has_part) {
		struct attr_stage_line l = { 0 };

		/* places from the median group's band up: the standing part is everywhere */
		attr_stage_places(a, role, s, c->part,
				  hist_slot(r->median.lo_ns) >> ATTR_BAND_SHIFT, &l);
		if (l.nplaces)
			snprintf(c->where, sizeof(c->where), "%s", l.places[0].where);
	}
	if (c->found)
		chronic_evidence(r, s, c);
	combine(r, c, &r->tail.verdict);
}
