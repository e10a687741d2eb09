// SPDX-License-Identifier: GPL-2.0
/* /proc/net/softnet_stat into per-CPU, per-interval deltas (softnet.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "collect/softnet.h"

/* Columns of a row, in the kernel's order (net/core/net-procfs.c softnet_seq_show). */
enum {
	COL_PROCESSED = 0,
	COL_DROPPED = 1,
	COL_TIME_SQUEEZE = 2,
	COL_RECEIVED_RPS = 9,
	COL_FLOW_LIMIT = 10,
	COL_CPU = 12,
	COLS = 13,
};

int softnet_parse(FILE *f, struct snap_softnet *rows, int max)
{
	char line[512];
	int n = 0;

	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned long v[COLS] = { 0 };
		char *p = line, *end;
		int cols = 0;

		while (cols < COLS) {
			v[cols] = strtoul(p, &end, 16);
			if (end == p)
				break;
			cols++;
			p = end;
		}
		if (cols <= COL_FLOW_LIMIT)
			continue; /* not a row of a kernel we know */
		memset(&rows[n], 0, sizeof(rows[n]));
		rows[n].cpu = cols > COL_CPU ? (__u32)v[COL_CPU] : (__u32)n;
		rows[n].processed = v[COL_PROCESSED];
		rows[n].dropped = v[COL_DROPPED];
		rows[n].time_squeeze = v[COL_TIME_SQUEEZE];
		rows[n].received_rps = v[COL_RECEIVED_RPS];
		rows[n].flow_limit = v[COL_FLOW_LIMIT];
		n++;
	}
	return n;
}

static __u64 delta32(__u64 cur, __u64 prev)
{
	return (cur - prev) & 0xffffffffULL;
}

int softnet_delta(struct snapshot *s, struct snap_softnet *prev, int nprev,
		  const struct snap_softnet *cur, int ncur)
{
	int err = 0;

	for (int i = 0; i < ncur && !err; i++) {
		struct snap_softnet d = { .cpu = cur[i].cpu };
		const struct snap_softnet *p = NULL;

		for (int j = 0; j < nprev && !p; j++)
			if (prev[j].cpu == cur[i].cpu)
				p = &prev[j];
		if (p) {
			d.processed = delta32(cur[i].processed, p->processed);
			d.dropped = delta32(cur[i].dropped, p->dropped);
			d.time_squeeze = delta32(cur[i].time_squeeze, p->time_squeeze);
			d.received_rps = delta32(cur[i].received_rps, p->received_rps);
			d.flow_limit = delta32(cur[i].flow_limit, p->flow_limit);
		}
		/* a CPU seen for the first time (came online) starts from zero */
		err = snapshot__add_softnet(s, &d);
	}
	memcpy(prev, cur, (size_t)ncur * sizeof(*cur));
	return err;
}
