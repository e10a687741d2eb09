// SPDX-License-Identifier: GPL-2.0
/* `tailtrace explain`: why the slow requests were slow — compute, transport or congestion,
 * and where. */
#include <stdio.h>
#include <string.h>
#include "attr/attribution.h"
#include "cmd/commands.h"
#include "lib/json.h"
#include "collect/session.h"
#include "cmd/stage_report.h"

static void print(struct session *ss, const struct snapshot *snap, double dur, bool last, void *ctx)
{
	struct attr_params p;
	struct attr_report r;

	(void)last;
	(void)ctx;
	attr_params__default(&p);
	p.role = ss->o.role;
	attr_analyze(snap->attr, snap, dur, &p, &r);
	if (ss->o.json) {
		struct json_writer w;

		jw_init(&w, stdout, true);
		jw_object_begin(&w, NULL);
		attr_report__print_json(&r, &w);
		stage_report_counters_print_json(snap, &w);
		jw_object_end(&w);
		jw_finish(&w);
	} else {
		attr_report__print_text(&r, stdout);
		printf("\n");
		stage_report_counters_print_text(snap, stdout);
		fflush(stdout);
	}
}

int cmd_explain(int argc, char **argv)
{
	struct session ss;
	int r;

	r = session_start(&ss, "explain", argc, argv,
			  OPT_FILTERS | OPT_RDMA | OPT_DURATION | OPT_INTERVAL | OPT_BUDGET |
				  OPT_JSON | OPT_ROLE | OPT_CUDA,
			  COLL_REQUESTS, NULL);
	if (r >= 0)
		return r;
	session_settle(&ss);
	if (!ss.o.json)
		fprintf(stderr, "Tracing requests%s... Hit Ctrl-C to end.\n",
			ss.o.duration_s > 0 ? " for the given duration" : "");
	return session_run(&ss, ss.o.interval_s, 0, print, NULL);
}
