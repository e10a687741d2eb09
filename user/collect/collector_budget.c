// SPDX-License-Identifier: GPL-2.0
/* The CPU budget applied (collect/budget.h): every BUDGET_STEP_S the collector measures its
 * cost, moves the share of flows traced and folds what was measured at the old rate (scaled
 * up) into the interval's pending snapshot; every BUDGET_DRAW_S it draws the sample anew. */
#include <errno.h>
#include <stdio.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect/collector_int.h"
#include "collect/budget.h"
#include "core/histogram.h"
#include "core/stages.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "tailtrace.skel.h"
#include "lib/util.h"

void budget_open(struct collector *c, double pct)
{
	struct budget_state *b = &c->bud;

	b->pct = pct;
	b->rate = 1;
	b->lowest = 1;
	b->nsteps = 0;
	b->fit.known = false;
	b->last_s = mono_s();
	b->salt = budget_next_salt(mono_ns());
	b->drawn_s = b->last_s;
	b->prog_ns_prev = self_cost__total_ns(&c->cost);
	b->cpu_prev = self_cpu_seconds();
	b->cost_deep = b->cost_shallow = -1;
	b->deep_cut_s = 0;
	snapshot__init(&b->pending);
}

static double ewma(double prev, double v)
{
	return prev < 0 ? v : 0.5 * prev + 0.5 * v;
}

/* A duty-cycled deep tier (record) gives way first: the sample follows the cost of the
 * steps without it, and the duty shrinks to what the rest of the budget pays for; at 0 it
 * gets a small duty back after BUDGET_DEEP_RETRY_S to measure again. Returns true when
 * this step ran with the deep tier (not a step for the sample's rate). */
static bool budget_deep(struct collector *c, double cost, double now)
{
	struct budget_state *b = &c->bud;
	struct deep_plan *p = &c->deep;
	double duty;

	if (p->duty_asked <= 0 || p->duty_asked >= 1)
		return false;
	if (c->deep_attached)
		b->cost_deep = ewma(b->cost_deep, cost);
	else
		b->cost_shallow = ewma(b->cost_shallow, cost);
	if (b->cost_deep >= 0 && b->cost_shallow >= 0) {
		duty = deep_plan_duty_within(BUDGET_AIM * b->pct, b->cost_deep, b->cost_shallow,
					     p->duty_asked);
		if (duty <= 0 && p->duty > 0)
			b->deep_cut_s = now;
		if (duty <= 0 && now - b->deep_cut_s >= BUDGET_DEEP_RETRY_S)
			duty = p->duty_asked * BUDGET_DEEP_RETRY_SHARE;
		if (log_verbose() && duty != p->duty)
			fprintf(stderr,
				"budget: deep tier %.2f %% with, %.2f %% without: duty %.3g -> "
				"%.3g\n",
				b->cost_deep, b->cost_shallow, p->duty, duty);
		deep_plan_set_duty(p, duty);
	}
	return c->deep_attached;
}

void budget_close(struct collector *c)
{
	snapshot__free(&c->bud.pending);
}

/* Deletes the state of every flow whose socket hashes out of the sample: the BPF side no
 * longer creates or finds them, and one that comes back starts afresh. */
static void drop_unsampled_flows(struct collector *c, __u32 threshold, __u64 salt)
{
	int fd = bpf_map__fd(c->skel->maps.flows);
	__u64 key, next, *prev = NULL;
	/* a key that vanished under the walk restarts it from the first: bounded */
	__u32 steps = 2 * bpf_map__max_entries(c->skel->maps.flows);

	while (steps-- && !bpf_map_get_next_key(fd, prev, &next)) {
		if (budget_flow_hash(next, salt) > threshold && !bpf_map_delete_elem(fd, &next))
			continue; /* deleted: the walk goes on from the same predecessor */
		key = next;
		prev = &key;
	}
}

void budget_step(struct collector *c)
{
	struct budget_state *b = &c->bud;
	double now = mono_s(), cpu, cost, next;
	struct budget_fit fit;
	__u64 ns, cur[CNT__MAX];
	size_t nkeys;
	bool moved = false;
	__u32 thr;

	if (b->pct <= 0 || now - b->last_s < BUDGET_STEP_S)
		return;
	ns = self_cost__total_ns(&c->cost);
	cpu = self_cpu_seconds();
	cost = 100.0 * ((double)(ns - b->prog_ns_prev) / 1e9 + (cpu - b->cpu_prev)) /
	       (now - b->last_s);
	b->last_s = now;
	b->prog_ns_prev = ns;
	b->cpu_prev = cpu;
	b->cost_pct = cost;
	/* this step ran at b->rate: one more point of cost against rate for the floor */
	if (budget_deep(c, cost, now))
		return;
	b->step_rate[b->nsteps % BUDGET_FLOOR_STEPS] = b->rate;
	b->step_cost[b->nsteps % BUDGET_FLOOR_STEPS] = cost;
	b->nsteps++;
	if (!budget_fit_steps(b->step_rate, b->step_cost,
			      b->nsteps < BUDGET_FLOOR_STEPS ? b->nsteps : BUDGET_FLOOR_STEPS,
			      &fit))
		b->fit = fit;
	next = budget_next_rate(b->rate, cost, b->pct, &b->fit);
	thr = budget_threshold(next);
	if (thr != budget_threshold(b->rate)) {
		/* what was measured so far belongs to the old rate */
		if (collect_sampled(c, &b->pending, cur, &nkeys) && log_verbose())
			fprintf(stderr, "budget: reading the maps failed\n");
		c->skel->data->sample_threshold = thr;
		if (log_verbose())
			fprintf(stderr,
				"budget: cost %.2f %% of one CPU (budget %.3g %%): rate %.4g -> "
				"%.4g\n",
				cost, b->pct, b->rate, next);
		b->rate = next;
		if (next < b->lowest)
			b->lowest = next;
		moved = true;
	}
	if (thr == ~0u)
		return;
	/* a new draw now and then, so that over a run every flow takes turns */
	if (now - b->drawn_s >=
	    (c->skel->rodata->targ_requests ? BUDGET_DRAW_S : BUDGET_DRAW_WALK_S)) {
		b->salt = budget_next_salt(b->salt);
		c->skel->bss->sample_salt = b->salt;
		b->drawn_s = now;
		moved = true;
	}
	/* with requests, a flow that left the sample (a new draw, a lower rate) goes at its
	 * next request boundary (bpf/requests.bpf.h); without, nothing else ends its turn.
	 * The sweep also takes flows a program recreated after reading an older draw. */
	if (moved && !c->skel->rodata->targ_requests)
		drop_unsampled_flows(c, thr, b->salt);
}

/* Interval's end: what was folded at earlier rates joins s, and s states the rate (the
 * lowest in force during the interval), the budget and the floor under it when known. */
int budget_finish(struct collector *c, struct snapshot *s)
{
	struct budget_state *b = &c->bud;
	int err = snapshot__merge(s, &b->pending);

	snapshot__free(&b->pending);
	snapshot__init(&b->pending);
	if (b->pct <= 0)
		return err;
	s->budget_pct = b->pct;
	s->sample_rate = b->lowest;
	s->budget_floor_pct = b->fit.known ? b->fit.floor : 0;
	b->lowest = b->rate;
	return err;
}

/* A share `rate` of the flows was traced: histograms and the counts of events on flows are
 * scaled up. The driver and softirq stages (SF_NIC) time every packet of the selected
 * ports, and with --dev the places' stages also time packets of no traced flow: kept. */
void budget_scale(const struct collector *c, struct snapshot *t)
{
	static const int flow_counters[] = {
		CNT_RETRANS,       CNT_RETRANS_RTO,     CNT_RETRANS_FAST,   CNT_RETRANS_TLP,
		CNT_RETRANS_OTHER, CNT_RETRANS_UNTIMED, CNT_RETRANS_SYNACK, CNT_DROPS,
		CNT_ECN_CE,        CNT_QDISC_PKTS,      CNT_QDISC_DROPS,    CNT_SENDS_UNTIMED,
		CNT_RETRANS_UNSEEN
	};
	double f = c->bud.rate < 1 ? 1 / c->bud.rate : 1;

	if (f == 1)
		return;
	for (size_t i = 0; i < t->nhists; i++) {
		if (stage_flow_sampled(t->hists[i].key.stage, c->skel->rodata->targ_ndevs))
			hist_scale(&t->hists[i].h, f);
	}
	for (size_t i = 0; i < ARRAY_SIZE(flow_counters); i++)
		t->counters[flow_counters[i]] =
			(__u64)((double)t->counters[flow_counters[i]] * f + 0.5);
	for (int i = 0; i < TT_DROP_REASONS; i++)
		t->drop_reasons[i] = (__u64)((double)t->drop_reasons[i] * f + 0.5);
}
