// SPDX-License-Identifier: GPL-2.0
/* `tailtrace rdma`: RDMA verbs work-request latency per QP/peer/opcode, completion-event
 * wake-ups, error completions, fabric counter deltas and the congestion-vs-transport
 * call, per interval and for the whole run. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include "cmd/commands.h"
#include "core/histogram.h"
#include "lib/json.h"
#include "cmd/stage_report.h"
#include "cmd/rdma_ucx_report.h"
#include "lib/log.h"
#include "cmd/options.h"
#include "rdma/rdma_tracer.h"
#include "collect/privs.h"
#include "rdma/rdma_counters.h"
#include "rdma/rdma_counter_table.h"
#include "rdma/rdma_fabric.h"
#include "rdma/rdma_resolve.h"
#include "core/stages.h"
#include "lib/util.h"
#include "lib/clock.h"
#include "lib/format.h"
#include "lib/stop_signal.h"

struct rdma_cmd {
	struct tt_opts o;
	struct rdma_tracer *t;
	struct rdma_read rd;
	const char *root; /* counters root, NULL = live */
	struct rdma_fabric fabric;
};

static void gid_str(const __u8 *g, char *b, size_t n)
{
	snprintf(b, n, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12],
		 g[13], g[14], g[15]);
}

/* Everything one report (an interval or the whole run) shows. */
struct view {
	const char *type; /* "interval" or "total" */
	double seconds;
	bool total; /* use rows' totals and run-long counters */
	const __u64 *cnt;
	struct rdma_counter_delta *deltas;
	size_t ndeltas;
	bool counters;
	struct rdma_window_call call;
	const struct rdma_counter_set *cset; /* warnings */
	double p99_ratio;                    /* window p99 / p99 before it, 0 if unknown */
};

static const struct hist *row_hist(const struct rdma_row *r, bool total)
{
	return total ? &r->total : &r->win;
}

/* rdma.wr rows (successful completions), their sum, then rdma.cq_event rows. */
static void print_text_rows(const struct rdma_read *rd, const struct view *v)
{
	struct hist all;
	bool any = false;

	memset(&all, 0, sizeof(all));
	for (size_t i = 0; i < rd->nrows; i++) {
		const struct rdma_row *r = &rd->rows[i];
		const struct hist *h = row_hist(r, v->total);

		if (r->key.stage != STAGE_RDMA_WR || r->key.status || !h->count)
			continue;
		hist_add(&all, h);
		printf("  %-13s %7u %#8x %#8x %-14s ", "rdma.wr", r->key.tgid, r->key.qpn,
		       r->key.peer_qpn, rdma_opcode_name(r->key.opcode));
		hist_summary_print_row(stdout, h);
		any = true;
	}
	if (any) {
		printf("  %-13s %7s %8s %8s %-14s ", "rdma.wr", "all", "", "", "");
		hist_summary_print_row(stdout, &all);
	}
	for (size_t i = 0; i < rd->nrows; i++) {
		const struct rdma_row *r = &rd->rows[i];
		const struct hist *h = row_hist(r, v->total);

		if (r->key.stage != STAGE_RDMA_CQ_EVENT || !h->count)
			continue;
		printf("  %-13s %7u %#8x %8s %-14s ", "rdma.cq_event", r->key.tgid, r->key.qpn,
		       "cq", "");
		hist_summary_print_row(stdout, h);
	}
}

/* Error completions, one line per QP, status and opcode. */
static void print_text_errors(const struct rdma_read *rd, const struct view *v)
{
	for (size_t i = 0; i < rd->nrows; i++) {
		const struct rdma_row *r = &rd->rows[i];
		const struct hist *h = row_hist(r, v->total);

		if (r->key.stage != STAGE_RDMA_WR || !r->key.status || !h->count)
			continue;
		printf("  error         pid %u qp %#x %s: %llu completions (%s)\n", r->key.tgid,
		       r->key.qpn, rdma_status_name(r->key.status), (unsigned long long)h->count,
		       rdma_opcode_name(r->key.opcode));
	}
}

/* Fabric counters that moved, the congestion-vs-transport call and its evidence. */
static void print_text_counters(const struct view *v)
{
	bool shown = false;

	if (!v->counters) {
		printf("  counters      not available (no RDMA device)\n");
		return;
	}
	for (size_t i = 0; i < v->ndeltas; i++) {
		const struct rdma_counter_delta *d = &v->deltas[i];

		if (!d->delta || d->c->cls == RCC_OTHER)
			continue;
		printf("  %-13s %s %s +%llu%s (%s)\n", shown ? "" : "counters", d->c->dev,
		       d->c->name, (unsigned long long)d->delta, d->reset ? " reset" : "",
		       rdma_counter_class_name(d->c->cls));
		shown = true;
	}
	if (!shown)
		printf("  counters      no congestion or transport counter moved\n");
	printf("  call          %s", rdma_call_name(v->call.call));
	for (size_t i = 0; i < v->call.nev; i++)
		printf("%s%s +%llu", i ? ", " : ": ", v->call.ev[i].name,
		       (unsigned long long)v->call.ev[i].delta);
	if (v->p99_ratio > 0)
		printf(" (p99 %.1fx the run's p99 before this window)", v->p99_ratio);
	printf("\n");
	for (unsigned int i = 0; i < v->cset->nwarn; i++)
		printf("  warning       %s\n", v->cset->warn[i]);
}

static void print_text(struct rdma_cmd *c, const struct view *v)
{
	const struct rdma_read *rd = &c->rd;
	size_t ntg;

	rdma_tracer__targets(c->t, &ntg);

	printf("\n== rdma %s: %.1f s, poll side traced %.0f%% of the time\n", v->type, v->seconds,
	       rdma_tracer__poll_duty(c->t) * 100);
	if (!ntg)
		printf("  (no data-path function attached yet: waiting for a verbs context)\n");
	printf("  %-13s %7s %8s %8s %-14s %8s %9s %9s %9s %9s %9s %9s\n", "stage", "pid", "qp",
	       "peer", "opcode", "count", "mean", "p50", "p90", "p99", "p99.9", "max");
	print_text_rows(rd, v);
	print_text_errors(rd, v);
	rdma_ucx_print_text(rd, rdma_tracer__ucx(c->t), v->total, v->cnt);
	print_text_counters(v);
	printf("  timing        %llu of %llu signaled WRs timed; not timed: completed unseen %llu, "
	       "ambiguous %llu, in flight now %llu; in flight at attach %llu\n",
	       (unsigned long long)v->cnt[RC_INFLIGHT_DELETES],
	       (unsigned long long)(v->cnt[RC_INFLIGHT_INSERTS] + v->cnt[RC_INFLIGHT_FAIL] +
				    v->cnt[RC_WRSEQ_FAIL]),
	       (unsigned long long)v->cnt[RC_UNSEEN], (unsigned long long)v->cnt[RC_AMBIGUOUS],
	       (unsigned long long)rd->inflight_live, (unsigned long long)v->cnt[RC_PRE_ATTACH]);
	printf("  loss          unmatched %llu (posted before attach %llu), in-flight evicted %llu "
	       "aged %llu dup %llu "
	       "fail %llu, hist fail %llu, unsignaled %llu, truncated post %llu poll %llu, "
	       "thread-state fail %llu, ctx lost %llu\n",
	       (unsigned long long)v->cnt[RC_UNMATCHED], (unsigned long long)v->cnt[RC_PRE_ATTACH],
	       (unsigned long long)rd->inflight_evicted, (unsigned long long)rd->inflight_aged,
	       (unsigned long long)v->cnt[RC_INFLIGHT_DUP],
	       (unsigned long long)v->cnt[RC_INFLIGHT_FAIL],
	       (unsigned long long)v->cnt[RC_HIST_FAIL], (unsigned long long)v->cnt[RC_UNSIGNALED],
	       (unsigned long long)v->cnt[RC_POST_TRUNC], (unsigned long long)v->cnt[RC_POLL_TRUNC],
	       (unsigned long long)v->cnt[RC_THREAD_FAIL], (unsigned long long)v->cnt[RC_CTX_LOST]);
	fflush(stdout);
}

/* "wr" (successful completions per QP, peer and opcode) and "wr_all", their sum. */
static void json_wr(struct json_writer *w, const struct rdma_read *rd, const struct view *v)
{
	struct hist all;
	char b[64];

	memset(&all, 0, sizeof(all));
	jw_array_begin(w, "wr");
	for (size_t i = 0; i < rd->nrows; i++) {
		const struct rdma_row *r = &rd->rows[i];
		const struct hist *h = row_hist(r, v->total);

		if (r->key.stage != STAGE_RDMA_WR || r->key.status || !h->count)
			continue;
		hist_add(&all, h);
		jw_object_begin(w, NULL);
		jw_uint(w, "pid", r->key.tgid);
		jw_uint(w, "qp", r->key.qpn);
		jw_uint(w, "peer_qp", r->key.peer_qpn);
		if (r->qp_known && r->qp.gid_set) {
			gid_str(r->qp.dgid, b, sizeof(b));
			jw_string(w, "peer_gid", b);
		}
		jw_string(w, "opcode", rdma_opcode_name(r->key.opcode));
		hist_summary_print_json(w, h);
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_object_begin(w, "wr_all");
	hist_summary_print_json(w, &all);
	jw_object_end(w);
}

/* "errors" (error completions) and "cq_event" (completion-event wake-ups per CQ). */
static void json_errors_cq_events(struct json_writer *w, const struct rdma_read *rd,
				  const struct view *v)
{
	jw_array_begin(w, "errors");
	for (size_t i = 0; i < rd->nrows; i++) {
		const struct rdma_row *r = &rd->rows[i];
		const struct hist *h = row_hist(r, v->total);

		if (r->key.stage != STAGE_RDMA_WR || !r->key.status || !h->count)
			continue;
		jw_object_begin(w, NULL);
		jw_uint(w, "pid", r->key.tgid);
		jw_uint(w, "qp", r->key.qpn);
		jw_uint(w, "status", r->key.status);
		jw_string(w, "status_name", rdma_status_name(r->key.status));
		jw_string(w, "opcode", rdma_opcode_name(r->key.opcode));
		jw_uint(w, "count", h->count);
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_array_begin(w, "cq_event");
	for (size_t i = 0; i < rd->nrows; i++) {
		const struct rdma_row *r = &rd->rows[i];
		const struct hist *h = row_hist(r, v->total);

		if (r->key.stage != STAGE_RDMA_CQ_EVENT || !h->count)
			continue;
		jw_object_begin(w, NULL);
		jw_uint(w, "pid", r->key.tgid);
		jw_uint(w, "cq_handle", r->key.qpn);
		hist_summary_print_json(w, h);
		jw_object_end(w);
	}
	jw_array_end(w);
}

/* "counters": the deltas, the call with its evidence, and the counters' warnings. */
static void json_counters(struct json_writer *w, const struct view *v)
{
	jw_object_begin(w, "counters");
	jw_bool(w, "available", v->counters);
	if (v->counters) {
		jw_array_begin(w, "deltas");
		for (size_t i = 0; i < v->ndeltas; i++) {
			const struct rdma_counter_delta *d = &v->deltas[i];

			if (!d->delta)
				continue;
			jw_object_begin(w, NULL);
			jw_string(w, "dev", d->c->dev);
			jw_string(w, "name", d->c->name);
			jw_string(w, "source", rdma_counter_source_name(d->c->source));
			jw_string(w, "class", rdma_counter_class_name(d->c->cls));
			jw_uint(w, "delta", d->delta);
			if (d->reset)
				jw_bool(w, "reset", true);
			jw_object_end(w);
		}
		jw_array_end(w);
		jw_string(w, "call", rdma_call_name(v->call.call));
		jw_uint(w, "congestion_events", v->call.congestion_events);
		jw_uint(w, "transport_events", v->call.transport_events);
		jw_array_begin(w, "evidence");
		for (size_t i = 0; i < v->call.nev; i++) {
			jw_object_begin(w, NULL);
			jw_string(w, "dev", v->call.ev[i].dev);
			jw_string(w, "name", v->call.ev[i].name);
			jw_string(w, "class", rdma_counter_class_name(v->call.ev[i].cls));
			jw_uint(w, "delta", v->call.ev[i].delta);
			jw_double(w, "baseline_per_s", v->call.ev[i].baseline_per_s);
			{
				const struct rdma_counter_meaning *m = rdma_counter_meaning(
					v->call.ev[i].provider, v->call.ev[i].name);

				jw_string(w, "provider",
					  rdma_provider_name(v->call.ev[i].provider));
				jw_string(w, "means", m ? m->means : "(no row: classed by name)");
			}
			jw_object_end(w);
		}
		jw_array_end(w);
		jw_array_begin(w, "warnings");
		for (unsigned int i = 0; i < v->cset->nwarn; i++)
			jw_string(w, NULL, v->cset->warn[i]);
		jw_array_end(w);
	}
	jw_object_end(w);
}

/* "loss": every counter of what the BPF side could not keep, and the in-flight table. */
static void json_loss(struct json_writer *w, const struct rdma_read *rd, const struct view *v)
{

	static const struct {
		const char *name;
		int idx;
	} cnames[] = {
		{ "post_calls", RC_POST_CALLS },
		{ "post_wrs", RC_POST_WRS },
		{ "post_truncated", RC_POST_TRUNC },
		{ "unsignaled", RC_UNSIGNALED },
		{ "inflight_inserts", RC_INFLIGHT_INSERTS },
		{ "inflight_dup", RC_INFLIGHT_DUP },
		{ "inflight_update_fail", RC_INFLIGHT_FAIL },
		{ "inflight_deletes", RC_INFLIGHT_DELETES },
		{ "poll_calls", RC_POLL_CALLS },
		{ "poll_wcs", RC_POLL_WCS },
		{ "poll_truncated", RC_POLL_TRUNC },
		{ "unmatched", RC_UNMATCHED },
		{ "error_completions", RC_ERRORS },
		{ "hist_inserts", RC_HIST_INSERTS },
		{ "hist_update_fail", RC_HIST_FAIL },
		{ "thread_state_fail", RC_THREAD_FAIL },
		{ "qp_state_fail", RC_QP_FAIL },
		{ "ctx_events", RC_CTX_EVENTS },
		{ "ctx_lost", RC_CTX_LOST },
		{ "cq_event_calls", RC_CQEV_CALLS },
		{ "cq_event_immediate", RC_CQEV_IMMEDIATE },
		{ "pre_attach", RC_PRE_ATTACH },
		{ "completed_unseen", RC_UNSEEN },
		{ "ambiguous", RC_AMBIGUOUS },
		{ "inflight_retired", RC_INFLIGHT_RETIRED },
		{ "wrseq_update_fail", RC_WRSEQ_FAIL },
	};

	jw_object_begin(w, "loss");
	for (size_t i = 0; i < ARRAY_SIZE(cnames); i++)
		jw_uint(w, cnames[i].name, v->cnt[cnames[i].idx]);
	jw_uint(w, "inflight_live", rd->inflight_live);
	jw_uint(w, "inflight_aged", rd->inflight_aged);
	jw_uint(w, "inflight_evicted", rd->inflight_evicted);
	jw_uint(w, "hist_live", rd->hist_live);
	jw_object_end(w);
	/* what was timed of the signaled WRs posted since the post side attached */
	jw_object_begin(w, "timing");
	jw_uint(w, "signaled_posted",
		v->cnt[RC_INFLIGHT_INSERTS] + v->cnt[RC_INFLIGHT_FAIL] + v->cnt[RC_WRSEQ_FAIL]);
	jw_uint(w, "timed", v->cnt[RC_INFLIGHT_DELETES]);
	jw_uint(w, "completed_unseen", v->cnt[RC_UNSEEN]);
	jw_uint(w, "ambiguous", v->cnt[RC_AMBIGUOUS]);
	jw_uint(w, "in_flight_now", rd->inflight_live);
	jw_uint(w, "in_flight_at_attach", v->cnt[RC_PRE_ATTACH]);
	jw_uint(w, "post_attached_ns", rd->post_attached_ns);
	jw_object_end(w);
}

/* "targets": where each data-path uprobe sits and how it was found. */
static void json_targets(struct json_writer *w, const struct rdma_tracer *t)
{
	const struct rdma_target *tg;
	size_t ntg;
	char b[64];

	tg = rdma_tracer__targets(t, &ntg);
	jw_array_begin(w, "targets");
	for (size_t i = 0; i < ntg; i++) {
		jw_object_begin(w, NULL);
		jw_string(w, "fn", rdma_fn_name(tg[i].fn));
		jw_string(w, "path", tg[i].path);
		snprintf(b, sizeof(b), "0x%llx", (unsigned long long)tg[i].offset);
		jw_string(w, "offset", b);
		jw_string(w, "how", tg[i].how);
		jw_uint(w, "attach_begin_ns", tg[i].attach_begin_ns);
		jw_uint(w, "attach_end_ns", tg[i].attach_end_ns);
		jw_object_end(w);
	}
	jw_array_end(w);
}

static void print_json(struct rdma_cmd *c, const struct view *v)
{
	struct json_writer w;

	jw_init(&w, stdout, false);
	jw_object_begin(&w, NULL);
	jw_string(&w, "type", v->type);
	jw_double(&w, "duration_s", v->seconds);
	jw_double(&w, "poll_duty", rdma_tracer__poll_duty(c->t));
	json_wr(&w, &c->rd, v);
	json_errors_cq_events(&w, &c->rd, v);
	json_counters(&w, v);
	if (v->p99_ratio > 0)
		jw_double(&w, "p99_ratio", v->p99_ratio);
	json_loss(&w, &c->rd, v);
	json_targets(&w, c->t);
	rdma_ucx_json(&w, &c->rd, rdma_tracer__ucx(c->t), v->total, v->cnt);
	jw_object_end(&w);
	jw_finish(&w);
	fflush(stdout);
}

/* p99 of successful WRs in this window against the p99 of everything before it. */
static double p99_ratio(const struct rdma_read *rd)
{
	struct hist win, before;

	memset(&win, 0, sizeof(win));
	memset(&before, 0, sizeof(before));
	for (size_t i = 0; i < rd->nrows; i++) {
		const struct rdma_row *r = &rd->rows[i];

		if (r->key.stage != STAGE_RDMA_WR || r->key.status)
			continue;
		hist_add(&win, &r->win);
		hist_add(&before, &r->total);
	}
	for (__u32 s = 0; s < HIST_SLOTS; s++)
		before.slots[s] -= win.slots[s];
	before.count -= win.count;
	if (win.count < 10 || before.count < 10)
		return 0;
	return (double)hist_quantile(&win, 0.99) / (double)hist_quantile(&before, 0.99);
}

static int report(struct rdma_cmd *c, bool total, double seconds)
{
	struct rdma_fabric_window fw;
	struct view v = { .type = total ? "total" : "interval",
			  .seconds = seconds,
			  .total = total };
	int err;

	err = rdma_tracer__read(c->t, &c->rd);
	if (err)
		return err;
	v.cnt = total ? c->rd.cnt : c->rd.cnt_win;
	rdma_fabric__window(&c->fabric, total, seconds, &fw);
	v.counters = fw.available;
	v.deltas = fw.deltas;
	v.ndeltas = fw.ndeltas;
	v.call = fw.call;
	v.cset = &fw.cur;
	if (!total)
		v.p99_ratio = p99_ratio(&c->rd);
	if (c->o.json)
		print_json(c, &v);
	else
		print_text(c, &v);
	rdma_fabric_window__free(&fw);
	return 0;
}

/* Options and --sysfs-root; returns -1 to go on, else the exit status. */
static int rdma_cmd_parse(struct rdma_cmd *c, int argc, char **argv)
{
	char err[512];
	int r;

	r = opts_parse(&c->o, argc, argv, opts_allowed(TT_CMD_RDMA), err, sizeof(err));
	if (r == 1) {
		cmd_print_help(TT_CMD_RDMA);
		return 0;
	}
	log_setup(c->o.json, c->o.verbose);
	if (r < 0) {
		tt_error("%s", err);
		return 2;
	}
	if (c->o.nargs) {
		tt_error("unexpected argument '%s' (see 'tailtrace rdma --help')", c->o.args[0]);
		return 2;
	}
	if (c->o.sysfs_root) {
		struct stat st;

		if (stat(c->o.sysfs_root, &st) || !S_ISDIR(st.st_mode)) {
			tt_error("--sysfs-root %s: not a directory", c->o.sysfs_root);
			return 2;
		}
		c->root = c->o.sysfs_root;
	}
	return -1;
}

/* Opens the tracer and takes the counters' first reading; returns -1 to go on, else the
 * exit status. */
static int rdma_cmd_start(struct rdma_cmd *c)
{
	char err[512], msg[256];
	int r;

	r = rdma_tracer__open(&c->o, stderr, &c->t, err, sizeof(err));
	if (r) {
		tt_error("%s", err);
		return r == -EINVAL ? 2 : 1;
	}
	if (rdma_fabric__open(&c->fabric, c->root, msg, sizeof(msg)))
		tt_warn("%s: RDMA counters not shown", msg);
	r = privs_drop(rdma_privs_after_attach(c->t));
	if (r)
		tt_warn("cannot drop privileges after attaching: %s", strerror(-r));
	return -1;
}

/* Polls the tracer and reports every interval until the end (signal, --duration, --count,
 * the traced process gone); *last gets the end of the last interval reported. */
static int rdma_cmd_trace(struct rdma_cmd *c, double t0, double *last)
{
	long windows = 0;
	double now;
	int r = 0;

	while (!stop_requested()) {
		if ((r = rdma_tracer__poll(c->t, 50)))
			break;
		now = mono_s();
		if (!rdma_tracer__target_alive(c->t)) {
			if (!c->o.json)
				fprintf(stderr, "tailtrace: rdma: pid %u exited\n", c->o.pid);
			break;
		}
		if (c->o.duration_s > 0 && now - t0 >= c->o.duration_s)
			break;
		if (c->o.interval_s > 0 && now - *last >= c->o.interval_s) {
			if ((r = report(c, false, now - *last)))
				break;
			*last = now;
			if (c->o.count && ++windows >= c->o.count)
				break;
		}
	}
	return r;
}

int cmd_rdma(int argc, char **argv)
{
	struct rdma_cmd c;
	double t0, last, now;
	int r;

	memset(&c, 0, sizeof(c));
	r = rdma_cmd_parse(&c, argc, argv);
	if (r >= 0)
		return r;
	r = rdma_cmd_start(&c);
	if (r >= 0)
		return r;

	stop_signal_install();
	if (!c.o.json)
		fprintf(stderr, "Tracing RDMA verbs%s... Hit Ctrl-C to end.\n",
			c.o.pid ? " of one process" : "");
	t0 = last = mono_s();
	r = rdma_cmd_trace(&c, t0, &last);
	now = mono_s();
	if (!r && c.o.interval_s > 0 && now - last > 0.05)
		r = report(&c, false, now - last);
	if (!r)
		r = report(&c, true, now - t0);
	if (r) {
		tt_error("reading the RDMA maps: %s", strerror(-r));
		r = 1;
	}
	rdma_tracer__close(c.t);
	rdma_read__free(&c.rd);
	rdma_fabric__close(&c.fabric);
	return r;
}
