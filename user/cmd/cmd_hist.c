// SPDX-License-Identifier: GPL-2.0
/* `tailtrace hist`: per-stage latency histograms of the selected TCP traffic. */
#include <stdio.h>
#include <string.h>
#include "cmd/commands.h"
#include "cmd/session.h"
#include "cmd/stage_report.h"
#include "core/stages.h"
#include "lib/clock.h"

/* request and scheduler stages need the request programs */
static unsigned int hist_features(const struct tt_opts *o)
{
	unsigned int f = 0;

	for (int i = 0; i < o->nstages; i++) {
		const struct stage_info *si = stage_info(o->stages[i]);

		if (si && (si->flags & SF_REQUESTS))
			f |= COLL_REQUESTS;
		if (si && (si->flags & SF_SCHED))
			f |= COLL_SCHED_HIST;
	}
	return f;
}

static void emit(struct session *ss, const struct snapshot *snap, double dur, bool last, void *ctx)
{
	struct stage_report_opts ro;

	(void)ctx;
	/* without -i only the final, whole-run snapshot is printed */
	if (ss->o.interval_s <= 0 && !last)
		return;
	ro = (struct stage_report_opts){
		.stages = ss->o.stages, .nstages = ss->o.nstages, .duration_s = dur, .chart = true
	};

	if (ss->o.json) {
		struct json_writer w;

		jw_init(&w, stdout, false);
		jw_object_begin(&w, NULL);
		/* the interval's end on the wall clock: joins instances' and hosts' outputs */
		jw_uint(&w, "end_unix_ms", realtime_ns() / 1000000);
		stage_report_print_json(snap, &ro, &w);
		jw_object_end(&w);
		jw_finish(&w);
	} else {
		printf("\n%.1f s of traffic\n", dur);
		stage_report_print_text(snap, &ro, stdout);
		fflush(stdout);
	}
}

int cmd_hist(int argc, char **argv)
{
	struct session ss;
	int r;

	r = session_start(&ss, TT_CMD_HIST, argc, argv, 0, hist_features);
	if (r >= 0)
		return r;
	session_settle(&ss);
	if (!ss.o.json && !ss.o.interval_s)
		fprintf(stderr, "Tracing TCP stages%s... Hit Ctrl-C to end.\n",
			ss.o.duration_s > 0 ? " for the given duration" : "");
	return session_run(&ss, ss.o.interval_s, 0, emit, NULL);
}
