// SPDX-License-Identifier: GPL-2.0
/* `tailtrace explain`: why the slow requests were slow — compute, transport or congestion,
 * and where. With --rdma, the same question for RDMA transfers (rdma/rdma_verdict.h). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "attr/attribution.h"
#include "cmd/commands.h"
#include "lib/json.h"
#include "lib/log.h"
#include "cmd/session.h"
#include "cmd/stage_report.h"
#include "rdma/rdma_fabric.h"
#include "rdma/rdma_verdict.h"

struct explain {
	struct rdma_fabric fabric; /* --rdma: the fabric counters, window by window */
	struct rdma_read rd;
	struct rdma_verdict rv[2]; /* verbs, UCX */
	int nrv;
};

/* The RDMA transfers of the window just ended, one verdict per family that had any. */
static void rdma_judge(struct session *ss, struct explain *x, double dur)
{
	static const enum rdma_family fams[] = { RDMA_FAM_VERBS, RDMA_FAM_UCX };
	struct rdma_verdict_params p;
	struct rdma_fabric_window fw;
	int err;

	x->nrv = 0;
	err = rdma_tracer__read(ss->rdma, &x->rd);
	if (err) {
		tt_warn("reading the RDMA maps: %s", strerror(-err));
		return;
	}
	rdma_verdict_params__default(&p);
	rdma_fabric__window(&x->fabric, false, dur, &fw);
	for (int i = 0; i < 2; i++)
		if (rdma_verdict_judge(&x->rd, false, fams[i], fw.available ? &fw.call : NULL, &p,
				       &x->rv[x->nrv]))
			x->nrv++;
	rdma_fabric_window__free(&fw);
}

static void print(struct session *ss, const struct snapshot *snap, double dur, bool last, void *ctx)
{
	struct explain *x = ctx;
	struct attr_params p;
	struct attr_report r;

	(void)last;
	attr_params__default(&p);
	p.role = ss->o.role;
	attr_analyze(snap->attr, snap, dur, &p, &r);
	if (ss->rdma)
		rdma_judge(ss, x, dur);
	if (ss->o.json) {
		struct json_writer w;

		jw_init(&w, stdout, true);
		jw_object_begin(&w, NULL);
		attr_report__print_json(&r, &w);
		if (ss->rdma) {
			jw_array_begin(&w, "rdma");
			for (int i = 0; i < x->nrv; i++)
				rdma_verdict__print_json(&x->rv[i], &w);
			jw_array_end(&w);
		}
		stage_report_counters_print_json(snap, &w);
		jw_object_end(&w);
		jw_finish(&w);
	} else {
		attr_report__print_text(&r, stdout);
		printf("\n");
		for (int i = 0; i < x->nrv; i++) {
			rdma_verdict__print_text(&x->rv[i], stdout);
			printf("\n");
		}
		if (ss->rdma && !x->nrv)
			printf("rdma: no transfer completed in this window\n\n");
		stage_report_counters_print_text(snap, stdout);
		fflush(stdout);
	}
}

/* --rdma: the counters' first reading. Returns -1 to go on, else the exit status. */
static int rdma_start(struct session *ss, struct explain *x)
{
	const char *root = ss->o.sysfs_root;
	struct stat st;
	char msg[256];

	if (!ss->rdma)
		return -1;
	if (root && (stat(root, &st) || !S_ISDIR(st.st_mode))) {
		tt_error("--sysfs-root %s: not a directory", root);
		return 2;
	}
	if (rdma_fabric__open(&x->fabric, root, msg, sizeof(msg)))
		tt_warn("%s: RDMA verdicts without fabric counters", msg);
	return -1;
}

int cmd_explain(int argc, char **argv)
{
	struct explain x;
	struct session ss;
	int r;

	memset(&x, 0, sizeof(x));
	r = session_start(&ss, TT_CMD_EXPLAIN, argc, argv, COLL_REQUESTS, NULL);
	if (r >= 0)
		return r;
	r = rdma_start(&ss, &x);
	if (r >= 0) {
		session_end(&ss);
		return r;
	}
	session_settle(&ss);
	if (!ss.o.json)
		fprintf(stderr, "Tracing requests%s... Hit Ctrl-C to end.\n",
			ss.o.duration_s > 0 ? " for the given duration" : "");
	r = session_run(&ss, ss.o.interval_s, 0, print, &x);
	rdma_fabric__close(&x.fabric);
	rdma_read__free(&x.rd);
	return r;
}
