// SPDX-License-Identifier: GPL-2.0
/* `tailtrace top`: a refreshing table per group of the main stages' p50/p99, redrawn in
 * place on a terminal and printed as successive blocks otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cmd/commands.h"
#include "core/histogram.h"
#include "cmd/session.h"
#include "cmd/stage_report.h"
#include "lib/util.h"

/* Columns: the stages an operator scans first. */
static const int top_stages[] = { STAGE_TX_SENDQ, STAGE_TX_QDISC, STAGE_TCP_RTT, STAGE_RX_SOCKQ };
#define NTOP (int)ARRAY_SIZE(top_stages)

struct top_row {
	struct hist_key group; /* stage and place zeroed: the group alone */
	struct hist h[NTOP];
	__u64 samples; /* rtt samples: a proxy of the segment rate */
	__u64 retrans; /* timed retransmissions of the group */
};

static int find_row(struct top_row **rows, size_t *n, const struct hist_key *k)
{
	struct hist_key g = *k;
	struct top_row *nr;

	g.stage = 0;
	g.ifindex = 0;
	g.netns = 0;
	g.qdisc_handle = 0;
	for (size_t i = 0; i < *n; i++)
		if (!memcmp(&(*rows)[i].group, &g, sizeof(g)))
			return (int)i;
	nr = realloc(*rows, (*n + 1) * sizeof(**rows));
	if (!nr)
		return -1;
	*rows = nr;
	memset(&nr[*n], 0, sizeof(nr[*n]));
	nr[*n].group = g;
	return (int)(*n)++;
}

static int cmp_rows(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	return x->samples < y->samples ? 1 : x->samples > y->samples ? -1 : 0;
}

static void fmt(char *buf, size_t len, __u64 ns)
{
	if (!ns)
		snprintf(buf, len, "-");
	else if (ns >= 1000000)
		snprintf(buf, len, "%.1fms", ns / 1e6);
	else
		snprintf(buf, len, "%.0fus", ns / 1e3);
}

static void draw(struct session *ss, const struct snapshot *s, double dur, bool last, void *ctx)
{
	bool tty = *(const bool *)ctx;
	struct top_row *rows = NULL;
	size_t n = 0;
	char clock[32], g[96];
	time_t t = time(NULL);

	(void)ss;
	(void)last;
	for (size_t i = 0; i < s->nhists; i++) {
		const struct snap_hist *sh = &s->hists[i];
		int r = find_row(&rows, &n, &sh->key);

		if (r < 0)
			break;
		for (int c = 0; c < NTOP; c++)
			if (sh->key.stage == top_stages[c])
				hist_add(&rows[r].h[c], &sh->h);
		if (sh->key.stage == STAGE_TCP_RTT)
			rows[r].samples += sh->h.count;
		if (sh->key.stage == STAGE_TCP_RETRANS)
			rows[r].retrans += sh->h.count;
	}
	qsort(rows, n, sizeof(*rows), cmp_rows);
	strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&t));
	if (tty)
		printf("\033[H\033[2J");
	printf("tailtrace top - %s - %.1f s interval - %zu groups\n", clock, dur, n);
	printf("%-26s %9s %8s %8s %8s %8s %8s %8s %8s %8s %7s\n", "GROUP", "SEGS/s", "SENDQ50",
	       "SENDQ99", "QDISC50", "QDISC99", "RTT50", "RTT99", "SOCKQ50", "SOCKQ99", "RETRANS");
	for (size_t i = 0; i < n; i++) {
		char v[NTOP * 2][16];

		for (int c = 0; c < NTOP; c++) {
			fmt(v[2 * c], 16, hist_quantile(&rows[i].h[c], 0.5));
			fmt(v[2 * c + 1], 16, hist_quantile(&rows[i].h[c], 0.99));
		}
		stage_report_group(&rows[i].group, g, sizeof(g));
		printf("%-26.26s %9.1f %8s %8s %8s %8s %8s %8s %8s %8s %7llu\n", g,
		       dur > 0 ? rows[i].samples / dur : 0.0, v[0], v[1], v[2], v[3], v[4], v[5],
		       v[6], v[7], (unsigned long long)rows[i].retrans);
	}
	if (!n)
		printf("(no traffic matched the filters in this interval)\n");
	stage_report_counters_print_text(s, stdout);
	if (!tty)
		printf("\n");
	fflush(stdout);
	free(rows);
}

int cmd_top(int argc, char **argv)
{
	bool tty = isatty(STDOUT_FILENO);
	struct session ss;
	int r;

	r = session_start(&ss, TT_CMD_TOP, argc, argv, 0, NULL);
	if (r >= 0)
		return r;
	session_settle(&ss);
	return session_run(&ss, ss.o.interval_s > 0 ? ss.o.interval_s : 1, ss.o.count, draw, &tty);
}
