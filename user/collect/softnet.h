/* SPDX-License-Identifier: GPL-2.0 */
/* /proc/net/softnet_stat: the kernel's per-CPU receive counters (packets processed, backlog
 * drops, time squeezes, RPS interrupts, flow-limit drops), read at each snapshot so they
 * line up with the histograms' intervals. */
#ifndef TT_SOFTNET_H
#define TT_SOFTNET_H

#include <stdio.h>
#include "core/snapshot.h"

#define SOFTNET_MAX_CPUS 1024

/* Parses the file's rows into cumulative counters (32-bit in the kernel). A row's CPU is its
 * last column where the kernel prints one (13 columns, 5.10+), else its line number.
 * Returns the number of rows, at most max. */
int softnet_parse(FILE *f, struct snap_softnet *rows, int max);

/* Per-CPU deltas from prev to cur (32-bit wrap taken into account), added to s; prev
 * becomes cur. prev and cur are indexed by row as softnet_parse returned them. */
int softnet_delta(struct snapshot *s, struct snap_softnet *prev, int nprev,
		  const struct snap_softnet *cur, int ncur);

#endif
