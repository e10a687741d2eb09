// SPDX-License-Identifier: GPL-2.0
/* Fabric counter windows: readings, deltas and the call, window by window. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "rdma/rdma_fabric.h"

/* dst = a copy of src (the deltas of a window point into its own set, which it keeps) */
static void set_copy(struct rdma_counter_set *dst, const struct rdma_counter_set *src)
{
	struct rdma_counter *c = malloc((src->n ? src->n : 1) * sizeof(*c));

	if (!c)
		return; /* out of memory: the next window is taken against the older base */
	rdma_counter_set__free(dst);
	*dst = *src;
	memcpy(c, src->c, src->n * sizeof(*c));
	dst->c = c;
	dst->cap = src->n;
}

int rdma_fabric__open(struct rdma_fabric *f, const char *root, char *msg, size_t msglen)
{
	int r;

	memset(f, 0, sizeof(*f));
	f->root = root;
	r = rdma_counters_read(root, &f->first, msg, msglen);
	if (r) {
		rdma_counter_set__free(&f->first);
		return r;
	}
	f->available = true;
	set_copy(&f->prev, &f->first);
	return 0;
}

void rdma_fabric__window(struct rdma_fabric *f, bool total, double seconds,
			 struct rdma_fabric_window *w)
{
	const struct rdma_counter_set *base = total ? &f->first : &f->prev;
	char msg[256];
	size_t n;

	memset(w, 0, sizeof(*w));
	if (!f->available || rdma_counters_read(f->root, &w->cur, msg, sizeof(msg)))
		return;
	n = rdma_counters_delta(base, &w->cur, NULL, 0);
	w->deltas = calloc(n ? n : 1, sizeof(*w->deltas));
	if (!w->deltas)
		return;
	w->ndeltas = rdma_counters_delta(base, &w->cur, w->deltas, n);
	w->available = true;
	rdma_counters_call(total ? &f->total_state : &f->window_state, w->deltas, w->ndeltas,
			   seconds, &w->call);
	if (!total)
		set_copy(&f->prev, &w->cur); /* the next window starts where this one ends */
}

void rdma_fabric_window__free(struct rdma_fabric_window *w)
{
	free(w->deltas);
	rdma_counter_set__free(&w->cur);
	memset(w, 0, sizeof(*w));
}

void rdma_fabric__close(struct rdma_fabric *f)
{
	rdma_counter_set__free(&f->first);
	rdma_counter_set__free(&f->prev);
	f->available = false;
}
