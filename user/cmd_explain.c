// SPDX-License-Identifier: GPL-2.0
/* `tailtrace explain`: why the slow requests were slow — compute, transport or congestion,
 * and where. */
#include <stdio.h>
#include <string.h>
#include "attribution.h"
#include "commands.h"
#include "json.h"
#include "session.h"
#include "stage_report.h"

static void print(const struct session *ss, const struct snapshot *snap, double dur)
{
	struct attr_params p;
	struct attr_report r;

	attr_params__default(&p);
	p.role = ss->o.role;
	attr_analyze(snap->attr, snap, dur, &p, &r);
	if (ss->o.json) {
		struct json_writer w;

		jw_init(&w, stdout, true);
		jw_object_begin(&w, NULL);
		attr_report__print_json(&r, &w);
		stage_report_counters_json(snap, &w);
		jw_object_end(&w);
		jw_finish(&w);
	} else {
		attr_report__print_text(&r, stdout);
		printf("\n");
		stage_report_counters_text(snap, stdout);
		fflush(stdout);
	}
}

int cmd_explain(int argc, char **argv)
{
	struct session ss;
	struct snapshot snap;
	bool more = true;
	double last = 0;
	int r;

	r = session_start(&ss, "explain", argc, argv,
			  OPT_FILTERS | OPT_RDMA | OPT_DURATION | OPT_INTERVAL | OPT_JSON | OPT_ROLE | OPT_CUDA,
			  COLL_REQUESTS, NULL);
	if (r >= 0)
		return r;
	if (!ss.o.json)
		fprintf(stderr, "Tracing requests%s... Hit Ctrl-C to end.\n",
			ss.o.duration_s > 0 ? " for the given duration" : "");
	while (more) {
		double now;

		more = session_wait(&ss, ss.o.interval_s);
		snapshot__init(&snap);
		r = session_snapshot(&ss, &snap);
		now = session_elapsed(&ss);
		if (!r)
			print(&ss, &snap, now - last);
		last = now;
		snapshot__free(&snap);
		if (r)
			break;
	}
	session_end(&ss);
	return r ? 1 : 0;
}
