/* SPDX-License-Identifier: GPL-2.0 */
/* Several hosts' recordings in one report: each recorded interval goes to the window of the
 * host named in its segment, so every figure keeps its host; the fleet is their merge. */
#ifndef TT_HOST_WINDOW_H
#define TT_HOST_WINDOW_H

#include <stddef.h>
#include <linux/types.h>
#include "core/snapshot.h"
#include "record/record_format.h"

/* Most hosts one report compares; more is a fleet question for Prometheus (docs/deploy.md). */
#define HOST_WINDOWS_MAX 64
#define HOST_SOURCE_LEN  512

struct host_window {
	char host[SNAP_HOST_LEN];     /* "unknown" for a segment that names none */
	char source[HOST_SOURCE_LEN]; /* the first path its intervals were read from */
	struct snapshot merged;
	unsigned long intervals;
	/* each interval's start, to catch one recording read twice (host_set__check) */
	__u64 *starts;
	size_t nstarts, starts_cap;
};

struct host_set {
	struct host_window *w; /* in order of first appearance; host_set__sort() by name */
	size_t n;
};

/* Adds one recorded interval, read from `source`, to its host's window (made on first
 * sight). The report limits (rec_window_merge) hold per host and, through the fleet merge,
 * for the whole. 0; -E2BIG with msg set past a limit or past HOST_WINDOWS_MAX hosts;
 * -ENOMEM. */
int host_set__add(struct host_set *hs, const struct snapshot *interval, const char *source,
		  const struct rec_limits *lim, char *msg, size_t len);
/* -EEXIST with msg naming host, time and paths when one host has two intervals starting at
 * the same instant (the same recording given twice, or copied into two directories:
 * counting it twice would double its events); else 0. */
int host_set__check(struct host_set *hs, char *msg, size_t len);
/* Hosts by name, so that a report reads the same whatever the argument order. */
void host_set__sort(struct host_set *hs);
/* fleet = every host's window merged (events of all hosts in one distribution), named
 * "N hosts". 0, -E2BIG (msg set) or -ENOMEM. */
int host_set__fleet(const struct host_set *hs, struct snapshot *fleet, char *msg, size_t len);
void host_set__free(struct host_set *hs);

#endif
