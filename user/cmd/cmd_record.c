// SPDX-License-Identifier: GPL-2.0
/* `tailtrace record`: always-on profiling into rotating segment files (docs/record-format.md),
 * optionally serving OpenMetrics on loopback for Prometheus. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>
#include "cmd/commands.h"
#include "export/exports.h"
#include "lib/log.h"
#include "record/record_format.h"
#include "cmd/session.h"
#include "lib/clock.h"
#include "lib/stop_signal.h"

#define RECORD_DEFAULT_INTERVAL 10.0
/* How long the loop sleeps between taking request events. Events wait in the ring buffer
 * (the BPF side wakes us early once 1 MiB is waiting, a quarter of it), and bigger batches
 * find attribution's tables still in cache: 4 wake-ups a second instead of 20 cost about
 * 0.2 % of a core less at 10k requests/s. Scrapes are answered by --listen's own
 * thread; only when that thread could not start does the loop serve them, with the short
 * step. */
#define RECORD_POLL_MS      250
#define RECORD_POLL_HTTP_MS 50

/* Waits for the interval while consuming request events, and answering scrapes when http
 * is given (only when its serving thread did not start). Returns false when recording
 * should stop after this interval. */
static bool wait_interval(struct session *ss, struct http_metrics *http, double interval)
{
	double end = mono_s() + interval;
	int step_ms = http ? RECORD_POLL_HTTP_MS : RECORD_POLL_MS;

	if (ss->o.duration_s > 0 && ss->started + ss->o.duration_s < end)
		end = ss->started + ss->o.duration_s;
	while (!stop_requested()) {
		double left = end - mono_s();

		if (left <= 0)
			break;
		session_poll(ss, left * 1000 > step_ms ? step_ms : (int)(left * 1000) + 1);
		if (http)
			http_metrics__serve(http, 0);
	}
	return !stop_requested() &&
	       !(ss->o.duration_s > 0 && mono_s() >= ss->started + ss->o.duration_s - 1e-3);
}

/* Intervals that could not be written (disk full, directory removed): recording goes on,
 * the first failure and the recovery are each said once, with the count. */
struct unwritten {
	unsigned long now, total; /* since writing last worked, and in all */
};

static void unwritten_note(struct unwritten *u, const char *dir, int err)
{
	if (!u->now)
		tt_warn("warning: cannot write to %s: %s; tracing goes on, the intervals are "
			"counted and writing resumes when it works again",
			dir, strerror(-err));
	u->now++;
	u->total++;
}

static void unwritten_resumed(struct unwritten *u, const char *dir)
{
	if (!u->now)
		return;
	tt_warn("warning: writing to %s again; %lu interval%s could not be written", dir, u->now,
		u->now == 1 ? "" : "s");
	u->now = 0;
}

/* Takes the interval's snapshot, writes it and serves it. 0, or an error that stops
 * recording: storage trouble passes (counted in u), memory trouble does not. */
/* tailtrace's own CPU and memory are in the snapshot already (collect/self_cost.c) */
static int record_interval(struct session *ss, struct recorder *rec, struct http_metrics *http,
			   const char *host, struct unwritten *u)
{
	struct snapshot snap;
	int r;

	snapshot__init(&snap);
	r = session_snapshot(ss, &snap);
	snprintf(snap.host, sizeof(snap.host), "%s", host);
	if (!r) {
		r = recorder__append(rec, &snap);
		if (recorder__take_remade(rec))
			tt_warn("warning: %s was removed while recording; made it again and "
				"recording goes on there (the segments it held are gone)",
				ss->o.output);
		if (r && r != -ENOMEM) {
			unwritten_note(u, ss->o.output, r);
			r = 0;
		} else if (!r) {
			unwritten_resumed(u, ss->o.output);
		}
	}
	if (!r && http)
		r = http_metrics__update(http, &snap);
	snapshot__free(&snap);
	return r;
}

/* The name segments and metrics carry: --host, else the node name (uname -n), which is
 * what a fleet's inventory and Prometheus' targets usually call the host. */
static void record_host(const struct tt_opts *o, char *buf, size_t len)
{
	struct utsname u;

	if (o->host)
		snprintf(buf, len, "%s", o->host);
	else if (!uname(&u) && u.nodename[0])
		snprintf(buf, len, "%s", u.nodename);
	else
		snprintf(buf, len, "unknown");
}

int cmd_record(int argc, char **argv)
{
	char host[SNAP_HOST_LEN];
	struct http_metrics *http = NULL, *served_by_loop = NULL;
	struct recorder *rec = NULL;
	struct unwritten unw = { 0 };
	struct session ss;
	char err[512];
	double interval;
	bool more = true;
	int r, status = 0;

	/* the output directory and the listener are the user's input: check them before any
	 * BPF program is loaded, and create nothing when one of them is refused */
	if (opts_parse(&ss.o, argc, argv, opts_allowed(TT_CMD_RECORD), err, sizeof(err)) == 0 &&
	    !ss.o.output) {
		log_setup(ss.o.json, 0);
		tt_error("record needs -o DIR (where the segment files go)");
		return 2;
	}
	if (ss.o.output && ss.o.listen) {
		http = http_metrics__open(ss.o.listen, err, sizeof(err));
		if (!http) {
			log_setup(ss.o.json, 0);
			tt_error("%s", err);
			return 2;
		}
	}
	r = session_start(&ss, TT_CMD_RECORD, argc, argv, COLL_REQUESTS | COLL_SLOW_REQS, NULL);
	if (r >= 0) {
		http_metrics__close(http);
		return r;
	}
	record_host(&ss.o, host, sizeof(host));
	rec = recorder__open(ss.o.output, ss.o.max_size, host, err, sizeof(err));
	if (!rec) {
		tt_error("%s", err);
		http_metrics__close(http);
		session_end(&ss);
		return 2;
	}
	/* the segment directory is open: nothing left needs a privilege */
	session_settle(&ss);
	if (http && (r = http_metrics__set_host(http, host))) {
		tt_error("--listen: %s", strerror(-r));
		status = 1;
		goto out;
	}
	if (http) {
		/* started after the programs are attached (and privileges dropped): the thread
		 * never holds more than the loop does */
		r = http_metrics__start(http);
		if (r)
			tt_warn("--listen: no serving thread (%s): scrapes wait for the record "
				"loop",
				strerror(-r));
		served_by_loop = r ? http : NULL;
		fprintf(stderr, "Serving OpenMetrics on %s (GET /metrics) as host=\"%s\"\n",
			ss.o.listen, host);
	}
	interval = ss.o.interval_s > 0 ? ss.o.interval_s : RECORD_DEFAULT_INTERVAL;
	fprintf(stderr, "Recording to %s every %.3g s... SIGINT/SIGTERM flush and stop.\n",
		ss.o.output, interval);
	while (more) {
		more = wait_interval(&ss, served_by_loop, interval);
		r = record_interval(&ss, rec, http, host, &unw);
		if (r) {
			tt_error("recording failed: %s", strerror(-r));
			status = 1;
			break;
		}
	}
out:
	recorder__close(rec);
	if (unw.total)
		tt_warn("warning: %lu interval%s of this recording could not be written to %s",
			unw.total, unw.total == 1 ? "" : "s", ss.o.output);
	http_metrics__close(http);
	session_end(&ss);
	return status;
}
