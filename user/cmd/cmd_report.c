// SPDX-License-Identifier: GPL-2.0
/* `tailtrace report`: merges the recorded intervals of a time window and renders them as
 * the explain report (text, JSON) or as one of the exports (user/export/exports.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include "attr/attribution.h"
#include "cmd/commands.h"
#include "export/exports.h"
#include "core/histogram.h"
#include "lib/json.h"
#include "cmd/host_report.h"
#include "cmd/stage_report.h"
#include "lib/escape.h"
#include "lib/log.h"
#include "cmd/options.h"
#include "record/record_format.h"
#include "core/stages.h"
#include "lib/util.h"
#include "lib/clock.h"
#include "lib/format.h"

enum report_format {
	FMT_TEXT,
	FMT_JSON,
	FMT_FOLDED,
	FMT_SVG,
	FMT_PPROF,
	FMT_PERFETTO,
	FMT_OPENMETRICS
};

static const char *const format_names[] = { "text",  "json",     "folded",     "svg",
					    "pprof", "perfetto", "openmetrics" };

struct window_ctx {
	__u64 from_ns, to_ns;
	struct snapshot merged;
	unsigned long intervals, skipped;
	char limit_msg[512]; /* set when the window passed a report limit */
	/* every interval goes to the window of the host that recorded it */
	struct host_set hosts;
	const char *path; /* the argument being read */
};

static int merge_in_window(const struct snapshot *s, void *ctx)
{
	struct window_ctx *w = ctx;

	if (!rec_in_window(s, w->from_ns, w->to_ns)) {
		w->skipped++;
		return 0;
	}
	w->intervals++;
	return host_set__add(&w->hosts, s, w->path, NULL, w->limit_msg, sizeof(w->limit_msg));
}

static void summary_cols(FILE *f, const struct hist *h)
{
	struct hist_summary sm;
	char v[7][16];

	hist_summarize(h, &sm);
	fmt_duration(v[0], sizeof(v[0]), sm.mean_ns, DUR_FINE);
	fmt_duration(v[1], sizeof(v[1]), (double)sm.p50_ns, DUR_FINE);
	fmt_duration(v[2], sizeof(v[2]), (double)sm.p90_ns, DUR_FINE);
	fmt_duration(v[3], sizeof(v[3]), (double)sm.p99_ns, DUR_FINE);
	fmt_duration(v[4], sizeof(v[4]), (double)sm.p999_ns, DUR_FINE);
	fmt_duration(v[5], sizeof(v[5]), (double)sm.max_ns, DUR_FINE);
	fprintf(f, "%10llu %9s %9s %9s %9s %9s %9s", (unsigned long long)sm.count, v[0], v[1], v[2],
		v[3], v[4], v[5]);
	if (sm.overflow)
		fprintf(f, "  (%llu beyond range)", (unsigned long long)sm.overflow);
	fputc('\n', f);
}

static void stage_total(const struct snapshot *s, int st, struct hist *h)
{
	memset(h, 0, sizeof(*h));
	for (size_t i = 0; i < s->nhists; i++)
		if (s->hists[i].key.stage == st)
			hist_add(h, &s->hists[i].h);
}

static void attribution_report(const struct snapshot *s, double dur_s, struct attr_report *r)
{
	/* the attribution engine's report over the same window (user/attr/attribution.h) */
	attr_analyze(s->attr, s, dur_s, NULL, r);
}

static double window_seconds(const struct snapshot *s)
{
	return s->end_ns > s->start_ns ? (double)(s->end_ns - s->start_ns) / 1e9 : 0;
}

#define REPORT_TOP_STACKS 20

static int cmp_rows_ns(const void *a, const void *b)
{
	const struct tail_row *x = a, *y = b;

	return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : 0;
}

/* The attribution report of the window, or a line saying there was no request. */
static int text_attribution(FILE *f, const struct snapshot *s)
{
	if (s->attr && attr_agg__requests(s->attr)) {
		struct attr_report *r = calloc(1, sizeof(*r));

		if (!r)
			return -ENOMEM;
		attribution_report(s, window_seconds(s), r);
		attr_report__print_text(r, f);
		free(r);
		fputc('\n', f);
	} else {
		fputs("attribution: no requests recorded in this window\n\n", f);
	}
	return 0;
}

/* One line per stage, then one per group and place when the stage has several. */
static void text_stages(FILE *f, const struct snapshot *s)
{
	char place[96], group[96];
	struct hist h;

	fprintf(f, "%-22s %-10s %10s %9s %9s %9s %9s %9s %9s\n", "STAGE", "CLASS", "COUNT", "MEAN",
		"P50", "P90", "P99", "P99.9", "MAX");
	for (int st = 0; st < STAGE__MAX; st++) {
		const struct stage_info *si = stage_info(st);
		size_t ngroups = 0;

		stage_total(s, st, &h);
		if (!h.count)
			continue;
		fprintf(f, "%-22s %-10s ", si->name, class_name(si->class));
		summary_cols(f, &h);
		for (size_t i = 0; i < s->nhists; i++)
			ngroups += s->hists[i].key.stage == st;
		if (ngroups < 2)
			continue;
		for (size_t i = 0; i < s->nhists; i++) {
			char label[200];

			if (s->hists[i].key.stage != st)
				continue;
			export_group_label(&s->hists[i].key, group, sizeof(group));
			export_place_label(s, &s->hists[i].key, place, sizeof(place));
			snprintf(label, sizeof(label), "  %s @ %s", group, place);
			fprintf(f, "%-33s ", label);
			summary_cols(f, &s->hists[i].h);
		}
	}
}

/* The REPORT_TOP_STACKS heaviest stacks of the tail profile. */
static int text_tail_profile(FILE *f, const struct snapshot *s)
{
	struct tail_profile tp;
	char a[16];
	int err;

	err = tail_profile__build(&tp, s);
	if (err)
		return err;
	fmt_duration(a, sizeof(a), (double)tp.total_ns, DUR_FINE);
	fprintf(f, "\ntail profile (source: %s): %s over %llu samples\n",
		tail_source_name(tp.source), a, (unsigned long long)tp.total_count);
	/* heaviest stacks first; the full list is what --format folded is for */
	if (tp.nrows)
		qsort(tp.rows, tp.nrows, sizeof(*tp.rows), cmp_rows_ns);
	for (size_t i = 0; i < tp.nrows && i < REPORT_TOP_STACKS; i++) {
		fmt_duration(a, sizeof(a), (double)tp.rows[i].ns, DUR_FINE);
		fprintf(f, "  %5.1f%% %10s  %s;%s;%s;%s\n",
			tp.total_ns ? 100.0 * (double)tp.rows[i].ns / (double)tp.total_ns : 0.0, a,
			tp.rows[i].frame[0], tp.rows[i].frame[1], tp.rows[i].frame[2],
			tp.rows[i].frame[3]);
	}
	if (tp.nrows > REPORT_TOP_STACKS)
		fprintf(f, "  ... %zu more (--format folded lists all)\n",
			tp.nrows - REPORT_TOP_STACKS);
	tail_profile__free(&tp);
	return 0;
}

int report_print_text(FILE *f, const struct snapshot *s, const char *source,
		      unsigned long intervals)
{
	char t0[32], t1[32], a[16];
	int err;

	fmt_utc(t0, sizeof(t0), s->start_ns);
	fmt_utc(t1, sizeof(t1), s->end_ns);
	fprintf(f, "tailtrace report of %s", source);
	if (s->host[0])
		fprintf(f, " (host %s)", s->host);
	fprintf(f, "\nwindow %s .. %s (%.1f s, %lu intervals)\n\n", t0, t1, window_seconds(s),
		intervals);
	err = text_attribution(f, s);
	if (err)
		return err;
	text_stages(f, s);
	if (s->nnapi || s->nsoftnet) {
		fputs("\ndriver and softirq counters, summed over the window:\n", f);
		nic_report_text(s, window_seconds(s), f);
	}
	err = text_tail_profile(f, s);
	if (err)
		return err;

	fputs("\ncounters:", f);
	for (int i = 0; i < CNT__MAX; i++)
		fprintf(f, "%s%s %llu", i % 4 ? ", " : "\n  ", rec_counter_name(i),
			(unsigned long long)s->counters[i]);
	fmt_duration(a, sizeof(a), (double)s->slow_threshold_ns, DUR_FINE);
	fprintf(f,
		"\nhistogram keys: %llu live, %llu evicted; events lost: %llu\n"
		"flight recorder: %zu slow requests kept, %llu cut, threshold %s\n",
		(unsigned long long)s->hist_live, (unsigned long long)s->hist_evicted,
		(unsigned long long)s->events_lost, s->nslow, (unsigned long long)s->slow_cut, a);
	stage_report_self_print_text(s, f);
	return ferror(f) ? -EIO : 0;
}

/* "attribution": the attribution report, or null without requests. */
static int json_attribution(struct json_writer *w, const struct snapshot *s)
{
	if (s->attr && attr_agg__requests(s->attr)) {
		struct attr_report *r = calloc(1, sizeof(*r));

		if (!r)
			return -ENOMEM;
		attribution_report(s, window_seconds(s), r);
		jw_object_begin(w, "attribution");
		attr_report__print_json(r, w);
		jw_object_end(w);
		free(r);
	} else {
		jw_null(w, "attribution");
	}
	return 0;
}

/* "stages": each stage's total and its groups. */
static void json_stages(struct json_writer *w, const struct snapshot *s)
{
	char buf[96];
	struct hist h;

	jw_array_begin(w, "stages");
	for (int st = 0; st < STAGE__MAX; st++) {
		const struct stage_info *si = stage_info(st);

		stage_total(s, st, &h);
		if (!h.count)
			continue;
		jw_object_begin(w, NULL);
		jw_string(w, "stage", si->name);
		jw_string(w, "class", class_name(si->class));
		hist_summary_print_json(w, &h);
		jw_array_begin(w, "groups");
		for (size_t i = 0; i < s->nhists; i++) {
			if (s->hists[i].key.stage != st)
				continue;
			jw_object_begin(w, NULL);
			jw_string(w, "by", group_by_name(s->hists[i].key.by));
			export_group_label(&s->hists[i].key, buf, sizeof(buf));
			jw_string(w, "group", buf);
			export_place_label(s, &s->hists[i].key, buf, sizeof(buf));
			jw_string(w, "place", buf);
			hist_summary_print_json(w, &s->hists[i].h);
			jw_object_end(w);
		}
		jw_array_end(w);
		jw_object_end(w);
	}
	jw_array_end(w);
}

/* "tail_profile": every row. */
static void json_tail_profile(struct json_writer *w, const struct tail_profile *tp)
{
	jw_object_begin(w, "tail_profile");
	jw_string(w, "source", tail_source_name(tp->source));
	jw_uint(w, "total_ns", tp->total_ns);
	jw_uint(w, "total_count", tp->total_count);
	jw_array_begin(w, "rows");
	for (size_t i = 0; i < tp->nrows; i++) {
		jw_object_begin(w, NULL);
		jw_string(w, "class", tp->rows[i].frame[0]);
		jw_string(w, "stage", tp->rows[i].frame[1]);
		jw_string(w, "place", tp->rows[i].frame[2]);
		jw_string(w, "process", tp->rows[i].frame[3]);
		jw_uint(w, "ns", tp->rows[i].ns);
		jw_uint(w, "count", tp->rows[i].count);
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_object_end(w);
}

/* Counters, drop reasons, losses, the flight recorder and tailtrace's own cost. */
static void json_counters(struct json_writer *w, const struct snapshot *s)
{
	char buf[16];

	jw_object_begin(w, "counters");
	for (int i = 0; i < CNT__MAX; i++)
		jw_uint(w, rec_counter_name(i), s->counters[i]);
	jw_object_end(w);
	jw_object_begin(w, "drop_reasons");
	for (int i = 0; i < TT_DROP_REASONS; i++) {
		if (!s->drop_reasons[i])
			continue;
		snprintf(buf, sizeof(buf), "%d", i);
		jw_uint(w, buf, s->drop_reasons[i]);
	}
	jw_object_end(w);
	jw_uint(w, "hist_live", s->hist_live);
	jw_uint(w, "hist_evicted", s->hist_evicted);
	jw_uint(w, "events_lost", s->events_lost);
	jw_object_begin(w, "flight_recorder");
	jw_uint(w, "kept", s->nslow);
	jw_uint(w, "cut", s->slow_cut);
	jw_uint(w, "threshold_ns", s->slow_threshold_ns);
	jw_object_end(w);
	stage_report_self_print_json(s, w);
}

int report_json_keys(struct json_writer *w, const struct snapshot *s, const char *source,
		     unsigned long intervals)
{
	struct tail_profile tp;
	int err;

	err = tail_profile__build(&tp, s);
	if (err)
		return err;
	jw_string(w, "source", source);
	if (s->host[0])
		jw_string(w, "host", s->host);
	jw_object_begin(w, "window");
	jw_uint(w, "start_ns", s->start_ns);
	jw_uint(w, "end_ns", s->end_ns);
	jw_double(w, "seconds", window_seconds(s));
	jw_uint(w, "intervals", intervals);
	jw_object_end(w);
	err = json_attribution(w, s);
	if (!err) {
		json_stages(w, s);
		/* "napi" and "softnet", summed over the window, when the recording has them */
		nic_report_json(s, window_seconds(s), w);
		json_tail_profile(w, &tp);
		json_counters(w, s);
	}
	tail_profile__free(&tp);
	return err;
}

int report_print_json(FILE *f, const struct snapshot *s, const char *source,
		      unsigned long intervals)
{
	struct json_writer w;
	int err;

	jw_init(&w, f, true);
	jw_object_begin(&w, NULL);
	err = report_json_keys(&w, s, source, intervals);
	jw_object_end(&w);
	jw_finish(&w);
	if (err)
		return err;
	return ferror(f) ? -EIO : 0;
}

/* The options of report: *fmt gets the output format, w the window. Returns -1 to go on,
 * else the exit status. */
static int report_parse(struct tt_opts *o, int argc, char **argv, enum report_format *fmt,
			struct window_ctx *w)
{
	char err[256];
	int r;

	r = opts_parse(o, argc, argv, opts_allowed(TT_CMD_REPORT), err, sizeof(err));
	if (r == 1) {
		cmd_print_help(TT_CMD_REPORT);
		return 0;
	}
	log_setup(o->json, o->verbose);
	if (r < 0) {
		tt_error("%s", err);
		return 2;
	}
	if (o->nargs < 1) {
		tt_error("report needs a DIR or FILE, or one per host (see 'tailtrace report "
			 "--help')");
		return 2;
	}
	if (o->json)
		*fmt = FMT_JSON;
	if (o->format) {
		size_t i;

		for (i = 0; i < ARRAY_SIZE(format_names); i++)
			if (!strcmp(o->format, format_names[i]))
				break;
		if (i == ARRAY_SIZE(format_names)) {
			tt_error("unknown --format '%s' (text, json, folded, svg, pprof, perfetto, "
				 "openmetrics)",
				 o->format);
			return 2;
		}
		if (o->json && i != FMT_JSON) {
			tt_error("-j conflicts with --format %s", o->format);
			return 2;
		}
		*fmt = (enum report_format)i;
	}
	if (o->from && rec_parse_time(o->from, realtime_ns(), &w->from_ns)) {
		tt_error("invalid --from '%s' (RFC 3339, 'YYYY-MM-DD HH:MM[:SS]', unix seconds, "
			 "or -10m)",
			 o->from);
		return 2;
	}
	if (o->to && rec_parse_time(o->to, realtime_ns(), &w->to_ns)) {
		tt_error("invalid --to '%s' (RFC 3339, 'YYYY-MM-DD HH:MM[:SS]', unix seconds, "
			 "or -10m)",
			 o->to);
		return 2;
	}
	if (w->from_ns >= w->to_ns) {
		tt_error("empty window: --from is not before --to");
		return 2;
	}
	return -1;
}

/* Renders the merged window in fmt; 0 or a negative errno. */
static int report_write(FILE *out, enum report_format fmt, const struct window_ctx *w,
			const char *source)
{
	switch (fmt) {
	case FMT_TEXT:
		return report_print_text(out, &w->merged, source, w->intervals);
	case FMT_JSON:
		return report_print_json(out, &w->merged, source, w->intervals);
	case FMT_FOLDED:
		return export_folded(out, &w->merged);
	case FMT_SVG:
		return export_svg(out, &w->merged);
	case FMT_PPROF:
		return export_pprof(out, &w->merged);
	case FMT_PERFETTO:
		return export_perfetto(out, &w->merged);
	case FMT_OPENMETRICS:
		/* a report describes a past window: its samples carry the window's end */
		return export_openmetrics(out, &w->merged, w->merged.end_ns);
	}
	return 0;
}

/* Opens report -o's file for writing. Reports carry what record keeps 0600, and root may
 * run report in a directory others can write: never through a symlink (O_NOFOLLOW), never
 * into a file with other hard links, another user's file or anything but a regular file
 * (O_NONBLOCK: a FIFO named there must not hold report waiting for a reader), created 0600
 * whatever the umask; an existing file is set to 0600 before it is truncated, so the
 * report never inherits its mode. NULL with errno set (ENOTUNIQ: not a regular file,
 * EPERM: another user's). */
static FILE *report_open_output(const char *path)
{
	struct stat st;
	FILE *f;
	int fd, e;

	fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno == ENXIO ? (errno = ENOTUNIQ, NULL) : NULL; /* a FIFO, no reader */
	if (fstat(fd, &st)) {
		e = errno;
	} else if (!S_ISREG(st.st_mode)) {
		e = ENOTUNIQ;
	} else if (st.st_uid != geteuid()) {
		e = EPERM;
	} else if (st.st_nlink > 1) {
		e = EMLINK;
	} else if (fchmod(fd, 0600) || ftruncate(fd, 0) ||
		   fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)) {
		e = errno;
	} else {
		f = fdopen(fd, "w");
		if (f)
			return f;
		e = errno;
	}
	close(fd);
	errno = e;
	return NULL;
}

static void report_output_error(const char *path)
{
	if (errno == ELOOP)
		tt_error("cannot write %s: it is a symbolic link (report -o never follows one)",
			 path);
	else if (errno == EMLINK)
		tt_error("cannot write %s: the file has other hard links (report -o never writes "
			 "through one)",
			 path);
	else if (errno == ENOTUNIQ)
		tt_error(
			"cannot write %s: not a regular file (report -o writes regular files only)",
			tt_esc(path));
	else if (errno == EPERM)
		tt_error("cannot write %s: another user owns it (report -o writes its own files "
			 "only)",
			 tt_esc(path));
	else
		tt_error("cannot write %s: %s", path, strerror(errno));
}

/* Reads every path given into w->hosts. 0, or the exit status after an error line. */
static int report_read(struct window_ctx *w, char **paths, int npaths)
{
	struct rec_diag d;
	int r;

	for (int i = 0; i < npaths; i++) {
		w->path = paths[i];
		r = rec_read_path(paths[i], merge_in_window, w, &d);
		if (!r)
			continue;
		if (w->limit_msg[0])
			tt_error("%s", w->limit_msg);
		else if (d.msg[0])
			tt_error("%s", d.msg);
		else
			tt_error("%s: %s", paths[i], strerror(-r));
		/* a path that is not there is the user's input; a bad file is a runtime error */
		return r == -ENOENT || r == -ENOTDIR ? 2 : 1;
	}
	if ((r = host_set__check(&w->hosts, w->limit_msg, sizeof(w->limit_msg)))) {
		tt_error("%s", w->limit_msg);
		return 2;
	}
	host_set__sort(&w->hosts);
	return 0;
}

/* Several hosts, or --by host: the comparison (and each host's report) in text or JSON. */
static int report_hosts(FILE *out, enum report_format fmt, struct window_ctx *w,
			const struct tt_opts *o)
{
	struct snapshot fleet;
	int err;

	snapshot__init(&fleet);
	err = host_set__fleet(&w->hosts, &fleet, w->limit_msg, sizeof(w->limit_msg));
	if (!err && fmt == FMT_JSON)
		err = host_report_print_json(out, &w->hosts, &fleet, o->args, o->nargs, o->by_host);
	else if (!err)
		err = host_report_print_text(out, &w->hosts, &fleet, o->args, o->nargs, o->by_host);
	snapshot__free(&fleet);
	return err;
}

/* The paths given, space-separated, for the heading of a one-host report. */
static const char *join_paths(char *buf, size_t len, const struct tt_opts *o)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < o->nargs && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " " : "", o->args[i]);
	return buf;
}

int cmd_report(int argc, char **argv)
{
	struct window_ctx w = { .to_ns = UINT64_MAX };
	char paths[1024];
	enum report_format fmt = FMT_TEXT;
	struct tt_opts o;
	FILE *out = stdout;
	bool several;
	int r, ret = 0;

	r = report_parse(&o, argc, argv, &fmt, &w);
	if (r >= 0)
		return r;

	snapshot__init(&w.merged);
	ret = report_read(&w, o.args, o.nargs);
	if (ret)
		goto out;
	if (!w.intervals)
		tt_warn("warning: no recorded interval in the window (%lu outside it)", w.skipped);
	several = w.hosts.n > 1 || o.by_host;
	if (several && fmt != FMT_TEXT && fmt != FMT_JSON) {
		tt_error("--format %s renders one host's window and these recordings hold %zu "
			 "hosts: give one host's DIR, or use text or json",
			 format_names[fmt], w.hosts.n);
		ret = 2;
		goto out;
	}
	if (!several && w.hosts.n) {
		/* one host: its window is the report's (moved, not copied) */
		w.merged = w.hosts.w[0].merged;
		snapshot__init(&w.hosts.w[0].merged);
	}

	if (o.output && !(out = report_open_output(o.output))) {
		report_output_error(o.output);
		ret = 1;
		goto out;
	}
	if (several)
		r = report_hosts(out, fmt, &w, &o);
	else
		r = report_write(out, fmt, &w, join_paths(paths, sizeof(paths), &o));
	if (out == stdout) {
		if (fflush(stdout) && !r)
			r = -errno;
	} else if (fclose(out) && !r) {
		r = -errno;
	}
	if (r == -E2BIG && w.limit_msg[0]) {
		tt_error("%s", w.limit_msg);
		ret = 1;
	} else if (r == -E2BIG) {
		tt_error("the window's tail profile has more than %u distinct stacks, the most one "
			 "report holds (docs/record-format.md, \"Limits\"): narrow it with "
			 "--from/--to",
			 TAIL_ROWS_MAX);
		ret = 1;
	} else if (r) {
		tt_error("writing the %s report failed: %s", format_names[fmt], strerror(-r));
		ret = 1;
	}
out:
	host_set__free(&w.hosts);
	snapshot__free(&w.merged);
	return ret;
}
