// SPDX-License-Identifier: GPL-2.0
/* The tail-vs-median analysis of an aggregate: the median and tail groups, each class's
 * share of the tail's excess, the verdict with the rule that decided it, and the places
 * the top stages' tail time went to. docs/attribution.md §3 states the rule. */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/escape.h"
#include "attr/attr_int.h"
#include "core/snapshot.h"
#include "lib/format.h"

const char *attr_verdict_name(enum attr_verdict_class v)
{
	static const char *const names[] = { "none",       "compute",      "transport",
					     "congestion", "unattributed", "mixed" };

	return (unsigned)v <= VERDICT_MIXED ? names[v] : "?";
}

void attr_params__default(struct attr_params *p)
{
	p->min_requests = 100;
	p->min_excess_ns = 2000000; /* 2 ms */
	p->min_ratio = 1.5;
	p->majority = 0.5;
	p->plurality = 0.35;
	p->plurality_lead = 1.5;
	p->p999_min_requests = 10000;
	p->chronic_min_wait_ns = 1000000; /* 1 ms */
	p->chronic_min_share = 0.25;
	p->role = ROLE_AUTO;
}

struct group_sum {
	double v[ATTR_FIELDS];
	__u32 lo, hi; /* slots it touches */
};

/* Sums of the requests of ranks [first, last] (1-based, by latency). A slot the range
 * cuts through contributes pro rata: a tight distribution puts thousands of requests in
 * the slot that holds p99, and taking them all would drown the tail in typical ones. */
static void sum_ranks(const struct attr_side *sd, __u64 first, __u64 last, struct group_sum *g)
{
	__u64 seen = 0;

	memset(g, 0, sizeof(*g));
	g->lo = HIST_SLOTS - 1;
	for (__u32 i = 0; i < HIST_SLOTS && seen < last; i++) {
		__u64 n = sd->b[i].v[F_COUNT], from, to;
		double frac;

		if (!n)
			continue;
		from = seen + 1 > first ? seen + 1 : first;
		to = seen + n < last ? seen + n : last;
		seen += n;
		if (to < from)
			continue;
		frac = (double)(to - from + 1) / (double)n;
		for (int f = 0; f < ATTR_FIELDS; f++)
			g->v[f] += frac * (double)sd->b[i].v[f];
		if (i < g->lo)
			g->lo = i;
		g->hi = i;
	}
	if (g->lo > g->hi)
		g->lo = g->hi;
}

/* 1-based nearest rank of quantile q over n requests */
static __u64 rank_of_q(__u64 n, double q)
{
	double r = q * (double)n;
	__u64 k = (__u64)r;

	if ((double)k < r)
		k++;
	return k < 1 ? 1 : k > n ? n : k;
}

static double div0(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static void group_fill(struct attr_group *g, const struct group_sum *s)
{
	double n = s->v[F_COUNT], split_lat = s->v[F_LAT] - s->v[F_PARTIAL_LAT];
	/* the parts are of the requests the deep tier saw whole: their shares of those
	 * requests' time stand for the group's (1 without a duty cycle) */
	double scale = div0(s->v[F_LAT], split_lat);

	g->lo_ns = hist_slot_lo(s->lo);
	g->hi_ns = hist_slot_hi(s->hi);
	g->count = (__u64)(n + 0.5);
	g->split_count = (__u64)(n - s->v[F_PARTIAL_REQS] + 0.5);
	g->mean_ns = div0(s->v[F_LAT], n);
	g->ttft_mean_ns = div0(s->v[F_TTFT], s->v[F_TTFT_REQS]);
	for (int p = 0; p < ATTR_PARTS; p++) {
		g->part_mean_ns[p] = div0(s->v[F_PARTS + p] * scale, n);
		g->class_mean_ns[attr_parts[p].class] += g->part_mean_ns[p];
	}
	for (int c = 0; c < ATTR_CLASSES; c++)
		g->shares[c] = div0(g->class_mean_ns[c], g->mean_ns);
	g->ev.retrans = div0(s->v[F_RETRANS], n);
	g->ev.retrans_rto = div0(s->v[F_RETRANS_RTO], n);
	g->ev.drops = div0(s->v[F_DROPS], n);
	g->ev.ecn_ce = div0(s->v[F_ECN_CE], n);
	g->ev.retrans_reqs = div0(s->v[F_RETRANS_REQS], n);
	g->ev.retrans_congestion_reqs = div0(s->v[F_RETRANS_CONG_REQS], n);
	g->ev.srtt_ns = div0(s->v[F_SRTT], s->v[F_RTT_REQS]);
	g->ev.min_rtt_ns = div0(s->v[F_MIN_RTT], s->v[F_RTT_REQS]);
}

/* vsnprintf appended at the end of dst: truncation is fine for display text. */
void attr_appendf(char *dst, size_t n, const char *fmt, ...)
{
	size_t l = strnlen(dst, n);
	va_list ap;

	if (l + 1 >= n)
		return;
	va_start(ap, fmt);
	vsnprintf(dst + l, n - l, fmt, ap);
	va_end(ap);
}

static void fmt_addr(char *dst, size_t n, __u8 family, const __u8 *addr)
{
	char tmp[INET6_ADDRSTRLEN];

	if (family == AF_INET && inet_ntop(AF_INET, addr, tmp, sizeof(tmp)))
		snprintf(dst, n, "%s", tmp);
	else if (family == AF_INET6 && inet_ntop(AF_INET6, addr, tmp, sizeof(tmp)))
		snprintf(dst, n, "[%s]", tmp);
	else
		snprintf(dst, n, "?");
}

void attr_fmt_place(char *dst, size_t n, const struct attr_place_key *k, const struct snapshot *s)
{
	unsigned set = k->level ? attr_parts[k->part].place_coarse : attr_parts[k->part].place_fine;
	char dev[96] = "", flow[80] = "", thr[80] = "";

	if (set & PLACE_DEV) {
		char name[48], qd[24] = "", h[16];

		if (k->qdisc_handle) {
			qdisc_label(k->qdisc_handle, h, sizeof(h));
			snprintf(qd, sizeof(qd), " qdisc %s", h);
		}
		snapshot__dev_label(s, k->netns, k->ifindex, name, sizeof(name));
		if (k->ifindex)
			snprintf(dev, sizeof(dev), "dev %s%s (netns %u)", name, qd, k->netns);
	}
	if (set & (PLACE_FLOW | PLACE_PEER)) {
		char ra[INET6_ADDRSTRLEN + 2];

		fmt_addr(ra, sizeof(ra), k->family, k->raddr);
		if (set & PLACE_FLOW)
			snprintf(flow, sizeof(flow), "flow :%u <-> %s:%u", k->lport, ra, k->rport);
		else if (k->role == ROLE_CLIENT)
			snprintf(flow, sizeof(flow), "flows to %s:%u", ra, k->rport);
		else
			snprintf(flow, sizeof(flow), "flows :%u <-> %s", k->lport, ra);
	}
	if (set & (PLACE_TID | PLACE_PROC)) {
		/* another process's name: no control character reaches the terminal */
		char raw[sizeof(k->comm) + 1], comm[4 * sizeof(k->comm) + 1];

		memcpy(raw, k->comm, sizeof(k->comm));
		raw[sizeof(k->comm)] = '\0';
		tt_escape(comm, sizeof(comm), raw);
		if (set & PLACE_TID)
			attr_appendf(thr, sizeof(thr), "tid %u (%s)", k->tid, comm);
		else
			attr_appendf(thr, sizeof(thr), "pid %u (%s)", k->tgid, comm);
	}
	if (set & PLACE_CPU)
		attr_appendf(thr, sizeof(thr), " on cpu %u", k->cpu);
	dst[0] = 0;
	attr_appendf(dst, n, "%s%s%s%s%s", thr, thr[0] && (flow[0] || dev[0]) ? " " : "", flow,
		     flow[0] && dev[0] ? " via " : "", dev);
	if (!dst[0])
		snprintf(dst, n, "unknown");
}

/* Same place whatever the band. */
static int place_cmp_noband(const void *x, const void *y)
{
	struct attr_place_key a = ((const struct attr_place *)x)->key;
	struct attr_place_key b = ((const struct attr_place *)y)->key;

	a.band = b.band = 0;
	return memcmp(&a, &b, sizeof(a));
}

static int place_cmp_ns(const void *x, const void *y)
{
	const struct attr_place *a = x, *b = y;

	if (a->ns != b->ns)
		return a->ns < b->ns ? 1 : -1;
	return place_cmp_noband(x, y); /* deterministic ties */
}

/* Merges equal places (bands differ) in sel[0..n), sorted by time; returns the count. */
static size_t places_merge(struct attr_place *sel, size_t n)
{
	size_t m = 0;

	qsort(sel, n, sizeof(*sel), place_cmp_noband);
	for (size_t i = 0; i < n; i++) {
		if (m && !place_cmp_noband(&sel[m - 1], &sel[i])) {
			sel[m - 1].ns += sel[i].ns;
			sel[m - 1].count += sel[i].count;
		} else {
			sel[m++] = sel[i];
		}
	}
	qsort(sel, m, sizeof(*sel), place_cmp_ns);
	return m;
}

/* Where a part's tail time went: the places of the tail's bands, at the fine level, or at
 * the coarse one when no fine place holds half of it (loss spread over many flows is a
 * device's problem, not one flow's). */
void attr_stage_places(const struct attr_agg *a, int role, const struct snapshot *s,
		       enum attr_part part, __u32 band_lo, struct attr_stage_line *l)
{
	struct attr_place *sel;
	size_t n = 0, m;
	__u64 total = 0;

	l->nplaces = 0;
	if (!a->nplaces)
		return;
	sel = calloc(a->nplaces, sizeof(*sel));
	if (!sel)
		return;
	for (size_t i = 0; i < a->nplaces; i++) {
		const struct attr_place *e = &a->places[i];

		if (e->key.part == part && e->key.role == role && e->key.band >= band_lo) {
			sel[n++] = *e;
			total += e->ns;
		}
	}
	m = places_merge(sel, n);
	if (m > 1 && 2 * sel[0].ns < total &&
	    attr_parts[part].place_coarse != attr_parts[part].place_fine) {
		for (size_t i = 0; i < m; i++)
			attr_place_key_coarsen(&sel[i].key);
		m = places_merge(sel, m);
	}
	for (size_t i = 0; i < m && l->nplaces < ATTR_TOP_PLACES; i++) {
		struct attr_place_line *pl = &l->places[l->nplaces++];

		attr_fmt_place(pl->where, sizeof(pl->where), &sel[i].key, s);
		pl->share = div0((double)sel[i].ns, (double)total);
	}
	free(sel);
}

struct part_rank {
	enum attr_part p;
	double key, tie;
};

static int rank_cmp(const void *x, const void *y)
{
	const struct part_rank *a = x, *b = y;

	if (a->key != b->key)
		return a->key < b->key ? 1 : -1;
	if (a->tie != b->tie)
		return a->tie < b->tie ? 1 : -1;
	return (int)a->p - (int)b->p;
}

enum attr_verdict_class attr_class_verdict(enum attr_class c)
{
	switch (c) {
	case ATTR_COMPUTE:
		return VERDICT_COMPUTE;
	case ATTR_TRANSPORT:
		return VERDICT_TRANSPORT;
	case ATTR_CONGESTION:
		return VERDICT_CONGESTION;
	default:
		return VERDICT_UNATTRIBUTED;
	}
}

const char *attr_action_hint(enum attr_verdict_class v, enum attr_part p, bool client)
{
	switch (v) {
	case VERDICT_COMPUTE:
		if (p == PART_SCHED_RUNQ)
			return "the serving thread waits for a CPU: isolate or pin it, or move "
			       "the competing load";
		if (p == PART_RX_SOCKQ)
			return "the application leaves data unread on its socket";
		if (p == PART_GPU_WAIT)
			return "the thread waits on the GPU";
		if (p == PART_RX_BACKLOG)
			return "received packets wait for the NET_RX softirq on a busy CPU: move "
			       "the competing load or steer receive work (RPS/IRQ affinity) "
			       "elsewhere";
		return "the application itself is slow on these requests";
	case VERDICT_CONGESTION:
		return "a queue on the path builds up: look at what shares that device/flow";
	case VERDICT_TRANSPORT:
		if (p == PART_RETRANS_LOSS || p == PART_TX_SENDQ_LOSS)
			return "packets are lost without a standing queue: check the link";
		return "the host stack or the path itself is slow";
	case VERDICT_UNATTRIBUTED:
		return client ? "the time is spent beyond this host: run explain on the server"
			      : "no stage covers the time: see docs/attribution.md";
	default:
		return "";
	}
}

/* The group's means against the median's, formatted once for the verdict's text. */
struct tail_text {
	char tail[24], median[24], excess[24];
};

/* The tail group: the requests at or above the nearest rank of q, and its excess over the
 * median by class. Returns the lowest latency slot the group touches. */
static __u32 tail_group(const struct attr_side *sd, const struct attr_group *med, double q,
			struct attr_group *g)
{
	struct group_sum gs;

	memset(g, 0, sizeof(*g));
	g->quantile = q;
	sum_ranks(sd, rank_of_q(sd->lat.count, q), sd->lat.count, &gs);
	group_fill(g, &gs);
	g->hi_ns = sd->lat.max_ns;
	g->excess_ns = g->mean_ns - med->mean_ns;
	g->ratio = div0(g->mean_ns, med->mean_ns);
	for (int c = 0; c < ATTR_CLASSES; c++)
		g->excess_shares[c] =
			div0(g->class_mean_ns[c] - med->class_mean_ns[c], g->excess_ns);
	return gs.lo;
}

/* Classes by their share of the excess, largest first. */
static void classes_by_excess(const struct attr_group *g, int order[ATTR_CLASSES])
{
	for (int i = 1; i < ATTR_CLASSES; i++) /* insertion sort, descending */
		for (int j = i;
		     j > 0 && g->excess_shares[order[j]] > g->excess_shares[order[j - 1]]; j--) {
			int t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
}

/* The verdict's class and the rule that decided it; order[] gets the classes ranked when
 * the tail is worse enough to be explained. */
static void verdict_decide(const struct attr_side *sd, const struct attr_params *P,
			   const struct tail_text *t, int order[ATTR_CLASSES], struct attr_group *g)
{
	struct attr_verdict *v = &g->verdict;
	double s1, s2;

	v->class = VERDICT_NONE;
	if (sd->lat.count < P->min_requests) {
		snprintf(v->rule, sizeof(v->rule), "%llu requests < %llu: too few to judge",
			 (unsigned long long)sd->lat.count, (unsigned long long)P->min_requests);
		return;
	}
	if (!g->split_count) {
		snprintf(v->rule, sizeof(v->rule),
			 "no request of the tail ran whole inside a window of the deep tier: "
			 "timed, not split (record --deep)");
		return;
	}
	if (g->excess_ns < (double)P->min_excess_ns || g->ratio < P->min_ratio) {
		snprintf(
			v->rule, sizeof(v->rule),
			"tail mean %s vs median-group mean %s (+%s, x%.2f): not meaningfully worse "
			"(needs >= +%.1f ms and >= x%.2f)",
			t->tail, t->median, t->excess, g->ratio, (double)P->min_excess_ns / 1e6,
			P->min_ratio);
		return;
	}
	classes_by_excess(g, order);
	s1 = g->excess_shares[order[0]];
	s2 = g->excess_shares[order[1]];
	if (s1 >= P->majority ||
	    (s1 >= P->plurality && s1 >= P->plurality_lead * (s2 > 0 ? s2 : 0))) {
		v->class = attr_class_verdict(order[0]);
		snprintf(
			v->rule, sizeof(v->rule),
			"tail mean %s vs median-group mean %s (+%s, x%.2f); %s holds %.0f%% of the "
			"excess (%s %.0f%%): %s",
			t->tail, t->median, t->excess, g->ratio, attr_class_name(order[0]),
			100 * s1, attr_class_name(order[1]), 100 * s2,
			s1 >= P->majority ? "majority" : "clear plurality");
	} else {
		v->class = VERDICT_MIXED;
		snprintf(v->rule, sizeof(v->rule),
			 "tail mean %s vs median-group mean %s (+%s, x%.2f); no class holds a "
			 "majority: %s %.0f%%, %s %.0f%%",
			 t->tail, t->median, t->excess, g->ratio, attr_class_name(order[0]),
			 100 * s1, attr_class_name(order[1]), 100 * s2);
	}
}

/* The top stages: by their part of the excess when there is one to explain, else by
 * share; each with the places its tail time went to (latency bands from band_lo up). */
static void tail_stages(const struct attr_agg *a, int role, const struct snapshot *s,
			const struct attr_group *med, __u32 band_lo, struct attr_group *g)
{
	struct part_rank rk[ATTR_PARTS];

	for (int p = 0; p < ATTR_PARTS; p++) {
		double exc = g->part_mean_ns[p] - med->part_mean_ns[p];

		rk[p].p = p;
		rk[p].key = g->verdict.class == VERDICT_NONE ? g->part_mean_ns[p] : exc;
		rk[p].tie = g->part_mean_ns[p];
	}
	qsort(rk, ATTR_PARTS, sizeof(rk[0]), rank_cmp);
	for (int i = 0; i < ATTR_PARTS && g->nstages < ATTR_TOP_STAGES; i++) {
		struct attr_stage_line *l = &g->stages[g->nstages];
		enum attr_part p = rk[i].p;

		if (g->part_mean_ns[p] <= 0)
			continue;
		l->part = p;
		l->mean_ns = g->part_mean_ns[p];
		l->median_mean_ns = med->part_mean_ns[p];
		l->share = div0(l->mean_ns, g->mean_ns);
		l->excess_share = div0(l->mean_ns - l->median_mean_ns, g->excess_ns);
		attr_stage_places(a, role, s, p, band_lo, l);
		g->nstages++;
	}
}

/* The verdict's stage: the top stage of the named class, and its top place (for
 * rx.backlog the backlog's CPU and its softirq from the histograms, where s has them: a
 * request knows only its flow). */
static void verdict_stage(struct attr_group *g, const struct snapshot *s)
{
	struct attr_verdict *v = &g->verdict;

	if (v->class == VERDICT_NONE || v->class == VERDICT_MIXED)
		return;
	for (int i = 0; i < g->nstages; i++) {
		enum attr_verdict_class pc =
			attr_class_verdict(attr_parts[g->stages[i].part].class);

		if (pc != v->class)
			continue;
		v->part = g->stages[i].part;
		v->has_part = true;
		if (g->stages[i].nplaces)
			snprintf(v->where, sizeof(v->where), "%s", g->stages[i].places[0].where);
		if (v->part == PART_RX_BACKLOG)
			attr_backlog_where(s, v->where, sizeof(v->where));
		break;
	}
}

/* One line a person can act on. */
static void verdict_summary(const struct attr_side *sd, const struct attr_params *P,
			    const struct tail_text *t, const int order[ATTR_CLASSES], bool client,
			    struct attr_group *g)
{
	struct attr_verdict *v = &g->verdict;
	double q = g->quantile;

	if (v->class == VERDICT_NONE) {
		snprintf(v->summary, sizeof(v->summary),
			 "p%g tail (%llu requests, tail mean %s) is not meaningfully worse "
			 "than the median group (mean %s)",
			 q * 100, (unsigned long long)g->count, t->tail, t->median);
		if (sd->lat.count < P->min_requests)
			snprintf(v->summary, sizeof(v->summary),
				 "too few requests (%llu) to judge the p%g tail",
				 (unsigned long long)sd->lat.count, q * 100);
		else if (!g->split_count)
			snprintf(v->summary, sizeof(v->summary),
				 "the p%g tail (%llu requests, tail mean %s) ran outside the deep "
				 "tier's windows: timed, not split",
				 q * 100, (unsigned long long)g->count, t->tail);
	} else if (v->class == VERDICT_MIXED) {
		snprintf(v->summary, sizeof(v->summary),
			 "p%g tail (%llu requests, tail mean %s vs median-group mean %s): the "
			 "excess is spread: "
			 "%s %.0f%%, %s %.0f%%",
			 q * 100, (unsigned long long)g->count, t->tail, t->median,
			 attr_class_name(order[0]), 100 * g->excess_shares[order[0]],
			 attr_class_name(order[1]), 100 * g->excess_shares[order[1]]);
	} else {
		enum attr_class c = order[0];

		/* streams: which of the two figures their users watch is slow */
		if (g->streamed)
			attr_appendf(v->summary, sizeof(v->summary),
				     "%s p%g slow (%.0f%% of the "
				     "excess %s the first token): ",
				     g->first_token_share >= 0.5 ? "TTFT" : "inter-token", q * 100,
				     100 * (g->first_token_share >= 0.5 ? g->first_token_share
									: 1 - g->first_token_share),
				     g->first_token_share >= 0.5 ? "before" : "after");
		attr_appendf(v->summary, sizeof(v->summary),
			     "%s: %.0f%% of the p%g tail's excess (tail mean %s, %s over the "
			     "median group's mean %s)",
			     attr_class_name(c), 100 * g->excess_shares[c], q * 100, t->tail,
			     t->excess, t->median);
		if (v->has_part)
			attr_appendf(v->summary, sizeof(v->summary), ", mostly %s",
				     attr_parts[v->part].stage);
		if (v->where[0])
			attr_appendf(v->summary, sizeof(v->summary), " at %s", v->where);
		attr_appendf(v->summary, sizeof(v->summary), "; %s",
			     attr_action_hint(v->class, v->part, client));
	}
}

static void tail_analyze(const struct attr_agg *a, int d, const struct snapshot *s,
			 const struct attr_params *P, const struct attr_group *med, double q,
			 struct attr_group *g)
{
	const struct attr_side *sd = &a->side[d];
	bool client = d == SIDE_CLIENT;
	int order[ATTR_CLASSES] = { 0, 1, 2, 3 };
	struct tail_text t;
	__u32 lo;

	lo = tail_group(sd, med, q, g);
	/* where in the request the excess is: before the first token or between tokens */
	g->streamed = sd->stream_reqs * 2 > sd->lat.count;
	if (g->excess_ns > 0 && g->ttft_mean_ns > 0) {
		double d = (g->ttft_mean_ns - med->ttft_mean_ns) / g->excess_ns;

		g->first_token_share = d < 0 ? 0 : d > 1 ? 1 : d;
	}
	fmt_duration(t.tail, sizeof(t.tail), g->mean_ns, DUR_PROSE);
	fmt_duration(t.median, sizeof(t.median), med->mean_ns, DUR_PROSE);
	fmt_duration(t.excess, sizeof(t.excess), g->excess_ns, DUR_PROSE);
	verdict_decide(sd, P, &t, order, g);
	tail_stages(a, client ? ROLE_CLIENT : ROLE_SERVER, s, med, lo >> ATTR_BAND_SHIFT, g);
	verdict_stage(g, s);
	verdict_summary(sd, P, &t, order, client, g);
	g->verdict.episodic = g->verdict.class;
	g->verdict.kind =
		g->verdict.class == VERDICT_NONE ? VERDICT_KIND_NONE : VERDICT_KIND_EPISODIC;
}

/* Every gap between tokens, from the req.gap histograms of the interval (the kernel samples
 * each gap of a streamed response; with --role only that side's). */
static void itl_summarize(const struct snapshot *s, struct hist_summary *out)
{
	struct hist all = { 0 };

	for (size_t i = 0; s && i < s->nhists; i++)
		if (s->hists[i].key.stage == STAGE_REQ_GAP)
			hist_add(&all, &s->hists[i].h);
	hist_summarize(&all, out);
}

static void side_analyze(const struct attr_agg *a, int d, const struct snapshot *s,
			 const struct attr_params *P, struct attr_report *r)
{
	const struct attr_side *sd = &a->side[d];
	struct group_sum gs;

	memset(r, 0, sizeof(*r));
	r->role = d == SIDE_CLIENT ? ROLE_CLIENT : ROLE_SERVER;
	r->requests = sd->lat.count;
	r->overlap_reqs = sd->overlap_reqs;
	hist_summarize(&sd->lat, &r->latency);
	hist_summarize(&sd->ttft, &r->ttft);
	hist_summarize(&sd->gap, &r->gap);
	hist_summarize(&sd->tpot, &r->tpot);
	r->stream_reqs = sd->stream_reqs;
	r->stream_tokens = sd->stream_tokens;
	memcpy(r->proto_reqs, sd->proto_reqs, sizeof(r->proto_reqs));
	itl_summarize(s, &r->itl);

	/* the median group: the requests ranked from p40 to p60 */
	if (sd->lat.count) {
		sum_ranks(sd, rank_of_q(sd->lat.count, 0.40), rank_of_q(sd->lat.count, 0.60), &gs);
		group_fill(&r->median, &gs);
	}

	tail_analyze(a, d, s, P, &r->median, 0.99, &r->tail);
	r->has_p999 = sd->lat.count >= P->p999_min_requests;
	if (r->has_p999)
		tail_analyze(a, d, s, P, &r->median, 0.999, &r->p999);
	attr_chronic_analyze(a, d, s, P, r);
}

static bool named(enum attr_verdict_class v)
{
	return v == VERDICT_COMPUTE || v == VERDICT_TRANSPORT || v == VERDICT_CONGESTION ||
	       v == VERDICT_MIXED;
}

/* One side analysed: the one the caller chose, or the only one with requests; the other
 * side's p99 verdict rides along when it has requests too. */
static void analyze_chosen_side(const struct attr_agg *a, const struct snapshot *s,
				const struct attr_params *P, const __u64 n[SIDES],
				struct attr_report *r)
{
	int d = P->role == ROLE_CLIENT ||
				(P->role != ROLE_SERVER && !n[SIDE_SERVER] && n[SIDE_CLIENT])
			? SIDE_CLIENT
			: SIDE_SERVER;
	struct attr_report *other;

	side_analyze(a, d, s, P, r);
	snprintf(r->role_rule, sizeof(r->role_rule), "%s",
		 P->role != ROLE_AUTO ? "role chosen by the caller"
				      : "the only role with requests");
	if (!n[!d])
		return;
	other = malloc(sizeof(*other));
	if (other) {
		side_analyze(a, !d, s, P, other);
		r->has_other = true;
		r->other = other->tail.verdict;
		free(other);
	}
}

/* The client's requests wait before they leave it (its qdisc, its send queue): the
 * server's clock starts at their arrival, so only the client's view shows that wait. */
static bool client_send_path(const struct attr_verdict *v)
{
	return v->class == VERDICT_CONGESTION && v->has_part &&
	       (v->part == PART_TX_QDISC || v->part == PART_TX_SENDQ);
}

/* Both ends traced on this host. The server sees what the client calls remote, so its
 * view explains more -- unless the client is slow itself: a client that does not read
 * fills the server's send queue, and then the server's view blames the network for the
 * client. */
static void analyze_both_ends(const struct attr_agg *a, const struct snapshot *s,
			      const struct attr_params *P, struct attr_report *r)
{
	struct attr_report *srv = malloc(sizeof(*srv));
	struct attr_report *cli = malloc(sizeof(*cli));

	if (!srv || !cli) {
		free(srv);
		free(cli);
		side_analyze(a, SIDE_SERVER, s, P, r);
		snprintf(r->role_rule, sizeof(r->role_rule), "server (out of memory)");
		return;
	}
	side_analyze(a, SIDE_SERVER, s, P, srv);
	side_analyze(a, SIDE_CLIENT, s, P, cli);
	if (cli->tail.verdict.class == VERDICT_COMPUTE || client_send_path(&cli->tail.verdict)) {
		*r = *cli;
		r->other = srv->tail.verdict;
		snprintf(r->role_rule, sizeof(r->role_rule),
			 "both ends traced: the client is slow itself (compute) or its requests "
			 "wait on its own send path, which the server's view cannot show");
	} else if (named(srv->tail.verdict.class) || cli->tail.verdict.class == VERDICT_NONE) {
		*r = *srv;
		r->other = cli->tail.verdict;
		snprintf(r->role_rule, sizeof(r->role_rule),
			 "both ends traced: the server's view covers what the client "
			 "sees as remote");
	} else {
		*r = *cli;
		r->other = srv->tail.verdict;
		snprintf(r->role_rule, sizeof(r->role_rule),
			 "both ends traced: the server's tail explains nothing, the "
			 "client's view is used");
	}
	r->has_other = true;
	free(srv);
	free(cli);
}

void attr_analyze(const struct attr_agg *a, const struct snapshot *s, double duration_s,
		  const struct attr_params *p, struct attr_report *r)
{
	static const struct attr_agg empty;
	struct attr_params P;
	__u64 n[SIDES];

	if (p)
		P = *p;
	else
		attr_params__default(&P);
	if (!a)
		a = &empty;
	memset(r, 0, sizeof(*r));
	for (int d = 0; d < SIDES; d++)
		n[d] = a->side[d].lat.count;
	if (P.role == ROLE_SERVER || P.role == ROLE_CLIENT || !n[SIDE_SERVER] || !n[SIDE_CLIENT])
		analyze_chosen_side(a, s, &P, n, r);
	else
		analyze_both_ends(a, s, &P, r);
	r->params = P;
	r->duration_s = duration_s;
	r->server_reqs = n[SIDE_SERVER];
	r->client_reqs = n[SIDE_CLIENT];
	r->places_unstored = a->places_unstored;
	r->places_unstored_ns = a->places_unstored_ns;
}
