// SPDX-License-Identifier: GPL-2.0
/* The deep tier's programs (PF_DEEP rows of bpf/program_catalogue.h): attached while the
 * plan (deep_plan.c) wants them, detached otherwise. A detached program is not run at all:
 * its bpf_link is destroyed, the kernel's tracepoint no longer calls it. The BPF side
 * learns of each change through deep_gen (bpf/maps.bpf.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect/collector_int.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "tailtrace.skel.h"

bool collector_prog_deep(const struct bpf_program *p)
{
	const struct feed_row *rows = feed_rows();

	for (int i = 0; i < FEED_ROWS; i++)
		if ((rows[i].flags & PF_DEEP) && !strcmp(rows[i].prog, bpf_program__name(p)))
			return true;
	return false;
}

static int deep_attach(struct collector *c)
{
	struct bpf_program *p;

	bpf_object__for_each_program (p, c->skel->obj) {
		struct bpf_link *l;

		if (!bpf_program__autoload(p) || !collector_prog_deep(p))
			continue;
		if (c->ndeep_links == MAX_DEEP_LINKS)
			return -E2BIG;
		l = bpf_program__attach(p);
		if (!l)
			return -errno;
		c->deep_links[c->ndeep_links++] = l;
	}
	/* attached first: a request flagged deep started with every deep program in place */
	c->skel->bss->deep_since_ns = mono_ns();
	__atomic_store_n(&c->skel->data->deep_gen, c->skel->data->deep_gen | 1, __ATOMIC_SEQ_CST);
	c->deep_attached = true;
	return 0;
}

/* A window's stamps end with it: the programs that would take them are detached, and
 * stamp_take refuses a stamp older than the next window anyway. Left in place they would
 * read as live stamps until their bucket is reused; cleared, they count as unmatched,
 * which they are. Only the drop hook still takes stamps now, and a bucket cleared under
 * it loses nothing it could have used. */
static void stamps_clear(const struct stamp_bucket *view, const struct bpf_map *map)
{
	static const struct stamp_bucket empty;
	int fd = bpf_map__fd(map);

	if (!view)
		return;
	for (__u32 i = 0; i < STAMP_BUCKETS; i++)
		if (__atomic_load_n(&view[i].e[0].skb, __ATOMIC_RELAXED) ||
		    __atomic_load_n(&view[i].e[1].skb, __ATOMIC_RELAXED))
			bpf_map_update_elem(fd, &i, &empty, BPF_ANY);
}

static void deep_detach(struct collector *c)
{
	/* the generation first: a request in flight now is no longer complete */
	__atomic_store_n(&c->skel->data->deep_gen, (c->skel->data->deep_gen | 1) + 1,
			 __ATOMIC_SEQ_CST);
	for (int i = 0; i < c->ndeep_links; i++)
		bpf_link__destroy(c->deep_links[i]);
	c->ndeep_links = 0;
	c->deep_attached = false;
	stamps_clear(c->qdisc_stamps, c->skel->maps.qdisc_stamps);
	stamps_clear(c->rx_stamps, c->skel->maps.rx_stamps);
}

void deep_prepare(struct collector *c, double duty)
{
	deep_plan_init(&c->deep, duty, mono_ns());
	/* before load: off until deep_attach() says otherwise, unless always deep */
	if (duty < 1)
		c->skel->data->deep_gen = 0;
}

int deep_open(struct collector *c)
{
	int r = c->deep.on ? deep_attach(c) : 0;

	if (r)
		deep_detach(c);
	return r;
}

void deep_step(struct collector *c)
{
	bool want = deep_plan_step(&c->deep, mono_ns());
	int r;

	if (want == c->deep_attached)
		return;
	if (!want) {
		deep_detach(c);
		return;
	}
	r = deep_attach(c);
	if (r) {
		/* leave it off for good rather than half attached */
		deep_detach(c);
		deep_plan_init(&c->deep, 0, mono_ns());
		fprintf(stderr, "deep tier off: attaching its programs failed: %s\n", strerror(-r));
	}
}

void deep_collect(struct collector *c, struct snapshot *s)
{
	__u64 on, span;
	__u32 windows, triggered;

	deep_plan_take(&c->deep, mono_ns(), &on, &span, &windows, &triggered);
	if (c->deep.duty >= 1)
		return; /* always deep: deep_span_ns 0 says so */
	s->deep_duty = c->deep.duty;
	s->deep_duty_asked = c->deep.duty_asked;
	s->deep_ns = on;
	s->deep_span_ns = span;
	s->deep_windows = windows;
	s->deep_triggered = triggered;
}

void deep_close(struct collector *c)
{
	for (int i = 0; i < c->ndeep_links; i++)
		bpf_link__destroy(c->deep_links[i]);
	c->ndeep_links = 0;
}
