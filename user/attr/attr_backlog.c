// SPDX-License-Identifier: GPL-2.0
/* Where a tail spent in the receive backlog waited: a request only knows how long its
 * packets sat in a backlog, the rx.backlog and rx.softirq histograms know which device
 * queue and CPU, and how long that CPU's NET_RX softirq waited to run. */
#include <stdio.h>
#include <string.h>
#include "attr/attr_int.h"
#include "core/snapshot.h"
#include "lib/format.h"

#define BACKLOG_PLACES 64

struct backlog_place {
	__u32 netns, ifindex;
	__u16 cpu, queue; /* as in hist_key: + 1, 0 for none */
	double tail_ns;   /* time of its samples at or above the stage's p99 */
};

/* A slot's time, its samples counted at the slot's middle (the overflow slot's at the
 * histogram's maximum). */
static double slot_time(const struct hist *h, __u32 b)
{
	double v = b == HIST_OVERFLOW_SLOT
			   ? (double)h->max_ns
			   : ((double)hist_slot_lo(b) + (double)hist_slot_hi(b)) / 2;

	return v * (double)h->slots[b];
}

/* The placed rx.backlog histograms' tail time per place; returns how many places. */
static size_t backlog_places(const struct snapshot *s, struct backlog_place *pl)
{
	struct hist all = { 0 };
	struct hist_summary sum;
	size_t n = 0;
	__u32 p99;

	for (size_t i = 0; i < s->nhists; i++)
		if (s->hists[i].key.stage == STAGE_RX_BACKLOG && s->hists[i].key.cpu)
			hist_add(&all, &s->hists[i].h);
	if (!all.count)
		return 0;
	hist_summarize(&all, &sum);
	p99 = hist_slot(sum.p99_ns);
	for (size_t i = 0; i < s->nhists; i++) {
		const struct hist_key *k = &s->hists[i].key;
		size_t j;

		if (k->stage != STAGE_RX_BACKLOG || !k->cpu)
			continue;
		for (j = 0; j < n; j++)
			if (pl[j].netns == k->netns && pl[j].ifindex == k->ifindex &&
			    pl[j].cpu == k->cpu && pl[j].queue == k->queue)
				break;
		if (j == n) {
			if (n == BACKLOG_PLACES)
				continue;
			pl[n++] = (struct backlog_place){ .netns = k->netns,
							  .ifindex = k->ifindex,
							  .cpu = k->cpu,
							  .queue = k->queue };
		}
		for (__u32 b = p99; b < HIST_SLOTS; b++)
			pl[j].tail_ns += slot_time(&s->hists[i].h, b);
	}
	return n;
}

bool attr_backlog_where(const struct snapshot *s, char *where, size_t len)
{
	struct backlog_place pl[BACKLOG_PLACES];
	const struct backlog_place *top = NULL;
	struct hist soft = { 0 };
	__u64 ksoftirqd = 0;
	char dev[48], q[24] = "";
	size_t n;

	if (!s || !(n = backlog_places(s, pl)))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!top || pl[i].tail_ns > top->tail_ns)
			top = &pl[i];
	snapshot__dev_label(s, top->netns, top->ifindex, dev, sizeof(dev));
	if (top->queue)
		snprintf(q, sizeof(q), " rxq %u", top->queue - 1);
	snprintf(where, len, "cpu %u (dev %s%s)", top->cpu - 1, dev, q);
	/* the NET_RX softirq of that CPU: what the backlog waited for */
	for (size_t i = 0; i < s->nhists; i++) {
		const struct snap_hist *sh = &s->hists[i];

		if (sh->key.stage != STAGE_RX_SOFTIRQ || sh->key.cpu != top->cpu)
			continue;
		hist_add(&soft, &sh->h);
		if (sh->key.queue == SOFTIRQ_CTX_KSOFTIRQD)
			ksoftirqd += sh->h.count;
	}
	if (soft.count) {
		struct hist_summary sum;
		char p99[24];

		hist_summarize(&soft, &sum);
		fmt_duration(p99, sizeof(p99), (double)sum.p99_ns, DUR_PROSE);
		attr_appendf(where, len,
			     ", its NET_RX softirq waited p99 %s (rx.softirq, %.0f%% in ksoftirqd)",
			     p99, 100.0 * (double)ksoftirqd / (double)soft.count);
	}
	return true;
}
