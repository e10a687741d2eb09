/* SPDX-License-Identifier: GPL-2.0 */
/* The fabric counters over a run: the first reading, the previous window's, and the
 * congestion-vs-transport call of each window (rdma_counters.h) and of the whole run.
 * Shared by `tailtrace rdma` and `tailtrace explain --rdma`. */
#ifndef TT_RDMA_FABRIC_H
#define TT_RDMA_FABRIC_H
#include <stdbool.h>
#include <stddef.h>
#include "rdma/rdma_counters.h"

struct rdma_fabric {
	const char *root; /* counters root (--sysfs-root), NULL = live */
	bool available;   /* the first reading found a device */
	struct rdma_counter_set first, prev;
	struct rdma_call_state window_state, total_state;
};

/* One report's view of the counters. */
struct rdma_fabric_window {
	bool available;
	struct rdma_counter_set cur;
	struct rdma_counter_delta *deltas;
	size_t ndeltas;
	struct rdma_window_call call;
};

/* Takes the first reading. Returns 0, or -ENOENT with a one-line reason in msg when
 * there is no RDMA device (the fabric then reports nothing, which is not an error). */
int rdma_fabric__open(struct rdma_fabric *f, const char *root, char *msg, size_t msglen);
/* Reads the counters now: the window since the previous window (total false) or since the
 * first reading (total true), judged over `seconds`. A window (not the total) becomes the
 * base of the next one. Free w with rdma_fabric_window__free. */
void rdma_fabric__window(struct rdma_fabric *f, bool total, double seconds,
			 struct rdma_fabric_window *w);
void rdma_fabric_window__free(struct rdma_fabric_window *w);
void rdma_fabric__close(struct rdma_fabric *f);

#endif
