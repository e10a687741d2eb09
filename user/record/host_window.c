// SPDX-License-Identifier: GPL-2.0
/* Recorded intervals grouped by the host that recorded them (record/host_window.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "record/host_window.h"
#include "lib/format.h"
#include "lib/util.h"

static struct host_window *find_or_add(struct host_set *hs, const char *host, const char *source,
				       char *msg, size_t len)
{
	struct host_window *w;

	for (size_t i = 0; i < hs->n; i++)
		if (!strcmp(hs->w[i].host, host))
			return &hs->w[i];
	if (hs->n == HOST_WINDOWS_MAX) {
		snprintf(msg, len,
			 "%s: more than %d hosts in one report; compare fewer, or the fleet in "
			 "Prometheus (docs/deploy.md)",
			 source, HOST_WINDOWS_MAX);
		errno = E2BIG;
		return NULL;
	}
	w = realloc(hs->w, (hs->n + 1) * sizeof(*w));
	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	hs->w = w;
	w = &hs->w[hs->n++];
	memset(w, 0, sizeof(*w));
	snprintf(w->host, sizeof(w->host), "%s", host);
	snprintf(w->source, sizeof(w->source), "%s", source);
	snapshot__init(&w->merged);
	return w;
}

int host_set__add(struct host_set *hs, const struct snapshot *interval, const char *source,
		  const struct rec_limits *lim, char *msg, size_t len)
{
	const char *host = interval->host[0] ? interval->host : "unknown";
	struct host_window *w = find_or_add(hs, host, source, msg, len);
	int err;

	if (!w)
		return -errno;
	if (ARRAY_RESERVE(w->starts, w->starts_cap, w->nstarts + 1))
		return -ENOMEM;
	err = rec_window_merge(&w->merged, interval, lim, msg, len);
	if (err)
		return err;
	w->starts[w->nstarts++] = interval->start_ns;
	w->intervals++;
	/* the merged window is named after the host even when the interval was not */
	snprintf(w->merged.host, sizeof(w->merged.host), "%s", w->host);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

int host_set__check(struct host_set *hs, char *msg, size_t len)
{
	for (size_t i = 0; i < hs->n; i++) {
		struct host_window *w = &hs->w[i];

		qsort(w->starts, w->nstarts, sizeof(*w->starts), cmp_u64);
		for (size_t j = 1; j < w->nstarts; j++) {
			char when[32];

			if (w->starts[j] != w->starts[j - 1])
				continue;
			fmt_utc(when, sizeof(when), w->starts[j]);
			snprintf(msg, len,
				 "host %s has two intervals starting at %s: the same recording "
				 "given twice? (first read from %s)",
				 w->host, when, w->source);
			return -EEXIST;
		}
	}
	return 0;
}

static int cmp_host(const void *a, const void *b)
{
	return strcmp(((const struct host_window *)a)->host, ((const struct host_window *)b)->host);
}

void host_set__sort(struct host_set *hs)
{
	if (hs->n > 1)
		qsort(hs->w, hs->n, sizeof(*hs->w), cmp_host);
}

int host_set__fleet(const struct host_set *hs, struct snapshot *fleet, char *msg, size_t len)
{
	int err;

	for (size_t i = 0; i < hs->n; i++)
		if ((err = rec_window_merge(fleet, &hs->w[i].merged, NULL, msg, len)))
			return err;
	snprintf(fleet->host, sizeof(fleet->host), "%zu hosts", hs->n);
	return 0;
}

void host_set__free(struct host_set *hs)
{
	for (size_t i = 0; i < hs->n; i++) {
		snapshot__free(&hs->w[i].merged);
		free(hs->w[i].starts);
	}
	free(hs->w);
	hs->w = NULL;
	hs->n = 0;
}
