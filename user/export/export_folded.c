// SPDX-License-Identifier: GPL-2.0
/* The tail profile (class -> stage -> place -> process, weighted by tail latency) and its
 * folded-stack rendering for flamegraph.pl, inferno and speedscope. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "export/exports.h"
#include "attr/attribution.h"
#include "core/histogram.h"
#include "core/stages.h"
#include "collect/k8s.h"

const char *tail_source_name(enum tail_source s)
{
	switch (s) {
	case TAIL_REQUESTS:
		return "requests";
	case TAIL_HISTOGRAMS:
		return "histograms";
	default:
		return "none";
	}
}

/* Folded lines split frames at ';' and the value at the last blank: keep both out of
 * frames, and anything that is not printable. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if (*s == ';' || (unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '_';
}

/* Samples taken at a device (the catalogue's SF_PLACE_DEV): a key of such a stage without
 * one names an unknown device; other stages' keys have no place. */
static bool stage_has_device(int stage)
{
	const struct stage_info *si = stage_info(stage);

	return si && (si->flags & SF_PLACE_DEV);
}

static void device_label(const struct snapshot *s, __u32 netns, __u32 ifindex, __u32 qdisc,
			 bool with_qdisc, char *buf, size_t len)
{
	char dev[32], qd[16];

	if (ifindex)
		snapshot__dev_label(s, netns, ifindex, dev, sizeof(dev));
	else
		snprintf(dev, sizeof(dev), "(unknown device)");
	qdisc_label(qdisc, qd, sizeof(qd));
	if (with_qdisc && qdisc)
		snprintf(buf, len, "%s qdisc %s", dev, qd);
	else
		snprintf(buf, len, "%s", dev);
	sanitize(buf);
}

void export_place_label(const struct snapshot *s, const struct hist_key *k, char *buf, size_t len)
{
	if (k->ifindex || stage_has_device(k->stage))
		device_label(s, k->netns, k->ifindex, k->qdisc_handle, k->stage == STAGE_TX_QDISC,
			     buf, len);
	else
		snprintf(buf, len, "(no place)");
}

static void comm_label(const char comm[TT_COMM_LEN], __u32 tgid, char *buf, size_t len)
{
	char c[TT_COMM_LEN + 1];

	memcpy(c, comm, TT_COMM_LEN);
	c[TT_COMM_LEN] = '\0';
	snprintf(buf, len, "%s[%u]", c[0] ? c : "?", tgid);
	sanitize(buf);
}

void export_group_label(const struct hist_key *k, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	switch (k->by) {
	case GROUP_PORT:
		snprintf(buf, len, "port %llu", (unsigned long long)k->id);
		break;
	case GROUP_RADDR:
		if (!inet_ntop(k->family == AF_INET6 ? AF_INET6 : AF_INET, k->addr, a, sizeof(a)))
			snprintf(a, sizeof(a), "?");
		snprintf(buf, len, "%s", a);
		break;
	case GROUP_COMM:
		comm_label(k->comm, k->tgid, buf, len);
		break;
	case GROUP_CGROUP:
		snprintf(buf, len, "cgroup %llu", (unsigned long long)k->id);
		break;
	case GROUP_POD:
		snprintf(buf, len, "%s", k8s_cgroup_label(k->id));
		break;
	default:
		snprintf(buf, len, "(all)");
		break;
	}
	sanitize(buf);
}

static int cmp_rows(const void *a, const void *b)
{
	const struct tail_row *x = a, *y = b;

	for (int i = 0; i < 4; i++) {
		int c = strcmp(x->frame[i], y->frame[i]);

		if (c)
			return c;
	}
	return 0;
}

/* Sorts the rows and merges equal stacks, so each stack is held once. */
static void rows_compact(struct tail_profile *p)
{
	size_t w = 0;

	qsort(p->rows, p->nrows, sizeof(*p->rows), cmp_rows);
	for (size_t i = 0; i < p->nrows; i++) {
		if (w && !cmp_rows(&p->rows[w - 1], &p->rows[i])) {
			p->rows[w - 1].ns += p->rows[i].ns;
			p->rows[w - 1].count += p->rows[i].count;
		} else {
			p->rows[w++] = p->rows[i];
		}
	}
	p->nrows = w;
}

#define TAIL_ROWS_COMPACT 4096 /* rows from which a full table is compacted before growing */

/* Room for one more row: a full table is compacted first (many requests share a stack),
 * and grown only while that frees less than half of it, up to TAIL_ROWS_MAX. 0, -ENOMEM,
 * or -E2BIG when TAIL_ROWS_MAX distinct stacks are held. */
static int rows_room(struct tail_profile *p)
{
	struct tail_row *r;
	size_t cap;

	if (p->nrows < p->cap)
		return 0;
	if (p->cap >= TAIL_ROWS_COMPACT)
		rows_compact(p);
	if (p->nrows <= p->cap / 2 && p->cap)
		return 0;
	if (p->cap >= TAIL_ROWS_MAX)
		return p->nrows < p->cap ? 0 : -E2BIG;
	cap = p->cap ? p->cap * 2 : 64;
	r = realloc(p->rows, cap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	p->rows = r;
	p->cap = cap;
	return 0;
}

static int add_row(struct tail_profile *p, const char *cls, const char *stage, const char *place,
		   const char *proc, __u64 ns, __u64 count)
{
	struct tail_row *r;
	int err;

	if (!ns)
		return 0;
	err = rows_room(p);
	if (err)
		return err;
	r = &p->rows[p->nrows++];
	memset(r, 0, sizeof(*r));
	snprintf(r->frame[0], TAIL_FRAME_LEN, "%s", cls);
	snprintf(r->frame[1], TAIL_FRAME_LEN, "%s", stage);
	snprintf(r->frame[2], TAIL_FRAME_LEN, "%s", place);
	snprintf(r->frame[3], TAIL_FRAME_LEN, "%s", proc);
	r->ns = ns;
	r->count = count;
	return 0;
}

static void flow_label(const struct req_event *e, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(e->family == AF_INET6 ? AF_INET6 : AF_INET, e->raddr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	/* no remote port: one frame per peer, not per connection, keeps stacks readable */
	snprintf(buf, len, ":%u <-> %s", e->lport, a);
	sanitize(buf);
}

/* Where a part of a request happened, at the coarse granularity attribution reports it
 * at (the process is the next frame, so it is not repeated here). */
static void part_place(const struct snapshot *s, const struct req_event *e, enum attr_part part,
		       char *buf, size_t len)
{
	const struct attr_part_info *pi = attr_part_info(part);
	unsigned where = pi ? pi->place_coarse : 0;

	if (where & PLACE_DEV)
		device_label(s, e->netns, e->ifindex, e->qdisc_handle, part == PART_TX_QDISC, buf,
			     len);
	else if (where & PLACE_CPU)
		snprintf(buf, len, "cpu %u", e->cpu);
	else if (where & (PLACE_PEER | PLACE_FLOW))
		flow_label(e, buf, len);
	else if (where & PLACE_TID)
		snprintf(buf, len, "tid %u", e->tid);
	else
		snprintf(buf, len, "(no place)");
}

/* Each kept request's latency split into attribution parts (user/attr/attribution.h): the
 * parts sum to the request's latency exactly, so the profile's total is the total
 * latency of the tail requests and nothing is counted twice. */
static int build_from_requests(struct tail_profile *p, const struct snapshot *s)
{
	char place[TAIL_FRAME_LEN], proc[TAIL_FRAME_LEN];
	struct attr_split sp;
	int err;

	for (size_t i = 0; i < s->nslow; i++) {
		const struct req_event *e = &s->slow_reqs[i];

		attr_split_request(e, &sp);
		comm_label(e->comm, e->tgid, proc, sizeof(proc));
		for (int part = 0; part < ATTR_PARTS; part++) {
			const struct attr_part_info *pi = attr_part_info(part);

			if (!sp.part_ns[part] || !pi)
				continue;
			part_place(s, e, part, place, sizeof(place));
			err = add_row(p, attr_class_name(pi->class), pi->stage, place, proc,
				      sp.part_ns[part], 1);
			if (err)
				return err;
		}
	}
	return 0;
}

/* Time of the events at or above the p99 bucket, each counted at its bucket's midpoint
 * (at most the observed max): the slowest ~1% of each distribution. */
static void hist_tail_mass(const struct hist *h, __u64 *ns, __u64 *count)
{
	__u32 from = hist_slot(hist_quantile(h, 0.99));

	*ns = *count = 0;
	if (!h->count)
		return;
	for (__u32 i = from; i < HIST_SLOTS; i++) {
		__u64 mid;

		if (!h->slots[i])
			continue;
		mid = i == HIST_OVERFLOW_SLOT
			      ? h->max_ns
			      : hist_slot_lo(i) + (hist_slot_hi(i) - hist_slot_lo(i)) / 2;
		if (h->max_ns && mid > h->max_ns)
			mid = h->max_ns;
		*ns += h->slots[i] * mid;
		*count += h->slots[i];
	}
}

static int build_from_hists(struct tail_profile *p, const struct snapshot *s)
{
	char place[TAIL_FRAME_LEN], proc[TAIL_FRAME_LEN];
	int err;

	for (size_t i = 0; i < s->nhists; i++) {
		const struct snap_hist *sh = &s->hists[i];
		const struct stage_info *si = stage_info(sh->key.stage);
		__u64 ns, count;

		if (!si || si->class == CLASS_REQUEST)
			continue;
		hist_tail_mass(&sh->h, &ns, &count);
		export_place_label(s, &sh->key, place, sizeof(place));
		export_group_label(&sh->key, proc, sizeof(proc));
		err = add_row(p, class_name(si->class), si->name, place, proc, ns, count);
		if (err)
			return err;
	}
	return 0;
}

int tail_profile__build(struct tail_profile *p, const struct snapshot *s)
{
	int err;

	memset(p, 0, sizeof(*p));
	if (s->nslow) {
		p->source = TAIL_REQUESTS;
		err = build_from_requests(p, s);
	} else {
		p->source = TAIL_HISTOGRAMS;
		err = build_from_hists(p, s);
	}
	if (err) {
		tail_profile__free(p);
		return err;
	}
	if (!p->nrows) {
		p->source = TAIL_NONE;
		return 0;
	}
	rows_compact(p);
	for (size_t i = 0; i < p->nrows; i++) {
		p->total_ns += p->rows[i].ns;
		p->total_count += p->rows[i].count;
	}
	return 0;
}

void tail_profile__free(struct tail_profile *p)
{
	free(p->rows);
	memset(p, 0, sizeof(*p));
}

int export_folded(FILE *f, const struct snapshot *s)
{
	struct tail_profile p;
	int err;

	err = tail_profile__build(&p, s);
	if (err)
		return err;
	for (size_t i = 0; i < p.nrows; i++)
		fprintf(f, "%s;%s;%s;%s %llu\n", p.rows[i].frame[0], p.rows[i].frame[1],
			p.rows[i].frame[2], p.rows[i].frame[3], (unsigned long long)p.rows[i].ns);
	tail_profile__free(&p);
	return ferror(f) ? -EIO : 0;
}
