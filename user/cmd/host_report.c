// SPDX-License-Identifier: GPL-2.0
/* `report` over several hosts: the comparison table, the verdicts, each host's report. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/host_report.h"
#include "attr/attribution.h"
#include "core/histogram.h"
#include "core/stages.h"
#include "export/exports.h"
#include "lib/format.h"
#include "lib/json.h"

static void stage_total(const struct snapshot *s, int st, struct hist *h)
{
	memset(h, 0, sizeof(*h));
	for (size_t i = 0; i < s->nhists; i++)
		if (s->hists[i].key.stage == st)
			hist_add(h, &s->hists[i].h);
}

static double seconds_of(const struct snapshot *s)
{
	return s->end_ns > s->start_ns ? (double)(s->end_ns - s->start_ns) / 1e9 : 0;
}

/* The host's p99 verdict (docs/attribution.md); false when it recorded no request. */
static bool host_verdict(const struct snapshot *s, struct attr_verdict *v)
{
	struct attr_report *r;

	if (!s->attr || !attr_agg__requests(s->attr))
		return false;
	r = calloc(1, sizeof(*r));
	if (!r)
		return false;
	attr_analyze(s->attr, s, seconds_of(s), NULL, r);
	*v = r->tail.verdict;
	free(r);
	return true;
}

static unsigned long total_intervals(const struct host_set *hs)
{
	unsigned long n = 0;

	for (size_t i = 0; i < hs->n; i++)
		n += hs->w[i].intervals;
	return n;
}

static void text_row(FILE *f, const char *stage, const char *class, const char *host,
		     const struct hist *h)
{
	struct hist_summary sm;
	char p50[16] = "-", p99[16] = "-";

	hist_summarize(h, &sm);
	if (sm.count) {
		fmt_duration(p50, sizeof(p50), (double)sm.p50_ns, DUR_FINE);
		fmt_duration(p99, sizeof(p99), (double)sm.p99_ns, DUR_FINE);
	}
	fprintf(f, "%-22s %-10s %-20s %10llu %9s %9s\n", stage, class, host,
		(unsigned long long)sm.count, p50, p99);
}

static void text_compare(FILE *f, const struct host_set *hs, const struct snapshot *fleet)
{
	struct attr_verdict v;
	struct hist h;

	fputs("hosts compared: each stage's p50 and p99 per host, and over the fleet (every "
	      "host's events in one distribution)\n",
	      f);
	fprintf(f, "%-22s %-10s %-20s %10s %9s %9s\n", "STAGE", "CLASS", "HOST", "COUNT", "P50",
		"P99");
	for (int st = 0; st < STAGE__MAX; st++) {
		const struct stage_info *si = stage_info(st);

		stage_total(fleet, st, &h);
		if (!h.count)
			continue;
		text_row(f, si->name, class_name(si->class), "(fleet)", &h);
		for (size_t i = 0; i < hs->n; i++) {
			stage_total(&hs->w[i].merged, st, &h);
			text_row(f, "", "", hs->w[i].host, &h);
		}
	}
	fputs("\nverdict per host (the p99 tail, docs/attribution.md):\n", f);
	for (size_t i = 0; i < hs->n; i++) {
		if (!host_verdict(&hs->w[i].merged, &v)) {
			fprintf(f, "  %-20s (no requests recorded)\n", hs->w[i].host);
			continue;
		}
		fprintf(f, "  %-20s %s", hs->w[i].host, attr_verdict_name(v.class));
		if (v.has_part)
			fprintf(f, " (%s)", attr_part_info(v.part)->stage);
		if (v.kind != VERDICT_KIND_NONE)
			fprintf(f, ", %s", attr_verdict_kind_name(v.kind));
		fprintf(f, ": %s\n", v.summary);
	}
}

int host_report_print_text(FILE *f, const struct host_set *hs, const struct snapshot *fleet,
			   char *const *sources, int nsources, bool compare_only)
{
	char t0[32], t1[32], src[HOST_SOURCE_LEN + SNAP_HOST_LEN + 16];
	int err;

	fmt_utc(t0, sizeof(t0), fleet->start_ns);
	fmt_utc(t1, sizeof(t1), fleet->end_ns);
	fprintf(f, "tailtrace report of %zu hosts from", hs->n);
	for (int i = 0; i < nsources; i++)
		fprintf(f, " %s", sources[i]);
	fprintf(f, "\nwindow %s .. %s (%.1f s, %lu intervals)\nhosts:", t0, t1, seconds_of(fleet),
		total_intervals(hs));
	for (size_t i = 0; i < hs->n; i++)
		fprintf(f, " %s (%lu intervals, %s)", hs->w[i].host, hs->w[i].intervals,
			hs->w[i].source);
	fputs("\n\n", f);
	text_compare(f, hs, fleet);
	for (size_t i = 0; !compare_only && i < hs->n; i++) {
		fprintf(f, "\n==== host %s ====\n", hs->w[i].host);
		snprintf(src, sizeof(src), "%s", hs->w[i].source);
		err = report_print_text(f, &hs->w[i].merged, src, hs->w[i].intervals);
		if (err)
			return err;
	}
	return ferror(f) ? -EIO : 0;
}

/* "stages": [{stage, class, count, p50_ns, p99_ns}] of the stages s has events in. */
static void json_stage_rows(struct json_writer *w, const struct snapshot *s)
{
	struct hist_summary sm;
	struct hist h;

	jw_array_begin(w, "stages");
	for (int st = 0; st < STAGE__MAX; st++) {
		const struct stage_info *si = stage_info(st);

		stage_total(s, st, &h);
		if (!h.count)
			continue;
		hist_summarize(&h, &sm);
		jw_object_begin(w, NULL);
		jw_string(w, "stage", si->name);
		jw_string(w, "class", class_name(si->class));
		jw_uint(w, "count", sm.count);
		jw_uint(w, "p50_ns", sm.p50_ns);
		jw_uint(w, "p99_ns", sm.p99_ns);
		jw_object_end(w);
	}
	jw_array_end(w);
}

static void json_window(struct json_writer *w, const struct snapshot *s, unsigned long intervals)
{
	jw_object_begin(w, "window");
	jw_uint(w, "start_ns", s->start_ns);
	jw_uint(w, "end_ns", s->end_ns);
	jw_double(w, "seconds", seconds_of(s));
	jw_uint(w, "intervals", intervals);
	jw_object_end(w);
}

static void json_verdict(struct json_writer *w, const struct snapshot *s)
{
	struct attr_verdict v;

	if (!host_verdict(s, &v)) {
		jw_null(w, "verdict");
		return;
	}
	jw_object_begin(w, "verdict");
	jw_string(w, "class", attr_verdict_name(v.class));
	jw_string(w, "kind", attr_verdict_kind_name(v.kind));
	if (v.has_part)
		jw_string(w, "stage", attr_part_info(v.part)->stage);
	else
		jw_null(w, "stage");
	jw_string(w, "summary", v.summary);
	jw_object_end(w);
}

int host_report_print_json(FILE *f, const struct host_set *hs, const struct snapshot *fleet,
			   char *const *sources, int nsources, bool compare_only)
{
	struct json_writer w;
	int err = 0;

	jw_init(&w, f, true);
	jw_object_begin(&w, NULL);
	jw_array_begin(&w, "sources");
	for (int i = 0; i < nsources; i++)
		jw_string(&w, NULL, sources[i]);
	jw_array_end(&w);
	jw_object_begin(&w, "fleet");
	jw_uint(&w, "hosts", hs->n);
	json_window(&w, fleet, total_intervals(hs));
	json_stage_rows(&w, fleet);
	jw_object_end(&w);
	jw_array_begin(&w, "hosts");
	for (size_t i = 0; i < hs->n; i++) {
		const struct host_window *hw = &hs->w[i];

		jw_object_begin(&w, NULL);
		jw_string(&w, "host", hw->host);
		jw_string(&w, "source", hw->source);
		json_window(&w, &hw->merged, hw->intervals);
		json_verdict(&w, &hw->merged);
		json_stage_rows(&w, &hw->merged);
		jw_object_end(&w);
	}
	jw_array_end(&w);
	if (!compare_only) {
		jw_array_begin(&w, "reports");
		for (size_t i = 0; i < hs->n && !err; i++) {
			jw_object_begin(&w, NULL);
			err = report_json_keys(&w, &hs->w[i].merged, hs->w[i].source,
					       hs->w[i].intervals);
			jw_object_end(&w);
		}
		jw_array_end(&w);
	}
	jw_object_end(&w);
	jw_finish(&w);
	if (err)
		return err;
	return ferror(f) ? -EIO : 0;
}
