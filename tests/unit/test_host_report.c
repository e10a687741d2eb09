// SPDX-License-Identifier: GPL-2.0
/* Several hosts in one report: intervals grouped by the host their segment names, the
 * fleet as the exact merge of the hosts, every figure labelled with its host (text, JSON,
 * OpenMetrics), one recording given twice refused. Values are set here, so the expected
 * percentiles are the histogram's own (hist_summarize of the same events). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/host_report.h"
#include "cmd/option_table.h"
#include "core/histogram.h"
#include "core/stages.h"
#include "export/exports.h"
#include "record/host_window.h"
#include "json_reader.h"

/* cmd_report.c (linked for the per-host reports) needs main.c's help printer */
void cmd_print_help(enum tt_cmd_id name);
void cmd_print_help(enum tt_cmd_id name)
{
	(void)name;
}

#define T0_NS 1714564800000000000ULL
#define IV_NS 10000000000ULL

/* One interval of `host` with n req.latency events of value_ns each, port 8000. */
static void interval(struct snapshot *s, const char *host, int iv, __u64 value_ns, int n)
{
	struct hist_key k = { .stage = STAGE_REQ_LATENCY, .by = GROUP_PORT, .id = 8000 };
	struct hist h;

	snapshot__init(s);
	snprintf(s->host, sizeof(s->host), "%s", host);
	s->start_ns = T0_NS + (__u64)iv * IV_NS;
	s->end_ns = s->start_ns + IV_NS;
	memset(&h, 0, sizeof(h));
	for (int i = 0; i < n; i++)
		hist_record(&h, value_ns);
	assert_int_equal(snapshot__add_hist(s, &k, &h), 0);
	s->counters[0] = (__u64)n;
}

static void add(struct host_set *hs, const char *host, int iv, __u64 value_ns, int n,
		const char *src)
{
	struct snapshot s;
	char msg[256];

	interval(&s, host, iv, value_ns, n);
	assert_int_equal(host_set__add(hs, &s, src, NULL, msg, sizeof(msg)), 0);
	snapshot__free(&s);
}

static __u64 count_of(const struct snapshot *s)
{
	__u64 c = 0;

	for (size_t i = 0; i < s->nhists; i++)
		c += s->hists[i].h.count;
	return c;
}

/* "b" (slow: 100 ms) read before "a" (fast: 1 ms), an unnamed segment's interval. */
static void two_hosts(struct host_set *hs)
{
	memset(hs, 0, sizeof(*hs));
	add(hs, "b", 0, 100000000, 30, "dirB");
	add(hs, "a", 0, 1000000, 50, "dirA");
	add(hs, "a", 1, 1000000, 50, "dirA");
	add(hs, "b", 1, 100000000, 30, "dirB");
	host_set__sort(hs);
}

static void test_grouped_by_host(void **state)
{
	struct host_set hs;
	struct snapshot fleet;
	char msg[256];

	(void)state;
	two_hosts(&hs);
	assert_int_equal(hs.n, 2);
	assert_string_equal(hs.w[0].host, "a");
	assert_string_equal(hs.w[0].source, "dirA");
	assert_int_equal(hs.w[0].intervals, 2);
	assert_int_equal(count_of(&hs.w[0].merged), 100);
	assert_int_equal(hs.w[0].merged.counters[0], 100);
	assert_string_equal(hs.w[1].host, "b");
	assert_int_equal(count_of(&hs.w[1].merged), 60);
	assert_int_equal(host_set__check(&hs, msg, sizeof(msg)), 0);

	snapshot__init(&fleet);
	assert_int_equal(host_set__fleet(&hs, &fleet, msg, sizeof(msg)), 0);
	assert_string_equal(fleet.host, "2 hosts");
	assert_int_equal(count_of(&fleet), 160);
	assert_int_equal(fleet.counters[0], 160);
	assert_int_equal(fleet.start_ns, T0_NS);
	assert_int_equal(fleet.end_ns, T0_NS + 2 * IV_NS);
	snapshot__free(&fleet);
	host_set__free(&hs);
}

static void test_unnamed_and_twice(void **state)
{
	struct host_set hs;
	char msg[256];

	(void)state;
	two_hosts(&hs);
	add(&hs, "", 0, 5000, 1, "old.ttrec");
	assert_int_equal(hs.n, 3);
	assert_string_equal(hs.w[2].host, "unknown");
	assert_int_equal(host_set__check(&hs, msg, sizeof(msg)), 0);
	/* dirA again: its intervals start at the same instants */
	add(&hs, "a", 1, 1000000, 50, "copyA");
	assert_int_equal(host_set__check(&hs, msg, sizeof(msg)), -EEXIST);
	assert_non_null(strstr(msg, "host a has two intervals starting at 2024-05-01T12:00:10Z"));
	assert_non_null(strstr(msg, "dirA"));
	host_set__free(&hs);
}

static void test_too_many_hosts(void **state)
{
	struct host_set hs = { 0 };
	struct snapshot s;
	char msg[256], name[16];
	int err = 0;

	(void)state;
	for (int i = 0; i <= HOST_WINDOWS_MAX && !err; i++) {
		snprintf(name, sizeof(name), "h%d", i);
		interval(&s, name, 0, 1000, 1);
		err = host_set__add(&hs, &s, "d", NULL, msg, sizeof(msg));
		snapshot__free(&s);
	}
	assert_int_equal(err, -E2BIG);
	assert_int_equal(hs.n, HOST_WINDOWS_MAX);
	assert_non_null(strstr(msg, "more than 64 hosts"));
	host_set__free(&hs);
}

static char *render(const struct host_set *hs, const struct snapshot *fleet, bool json,
		    bool compare_only)
{
	char *sources[] = { "dirA", "dirB" }, *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	if (json)
		assert_int_equal(host_report_print_json(f, hs, fleet, sources, 2, compare_only), 0);
	else
		assert_int_equal(host_report_print_text(f, hs, fleet, sources, 2, compare_only), 0);
	fclose(f);
	return buf;
}

static __u64 p99_of(__u64 value_ns, int n)
{
	struct hist h;
	struct hist_summary sm;

	memset(&h, 0, sizeof(h));
	for (int i = 0; i < n; i++)
		hist_record(&h, value_ns);
	hist_summarize(&h, &sm);
	return sm.p99_ns;
}

static const struct jv *stage_row(const struct jv *o, const char *stage)
{
	const struct jv *rows = jv_get(o, "stages");

	assert_non_null(rows);
	for (size_t i = 0; i < rows->n; i++)
		if (!strcmp(jv_get(rows->items[i], "stage")->text, stage))
			return rows->items[i];
	fail_msg("no stage %s", stage);
	return NULL;
}

static void test_json_labels(void **state)
{
	struct host_set hs;
	struct snapshot fleet;
	const struct jv *hosts, *row;
	struct jv *root;
	char msg[256], *text;

	(void)state;
	two_hosts(&hs);
	snapshot__init(&fleet);
	assert_int_equal(host_set__fleet(&hs, &fleet, msg, sizeof(msg)), 0);

	text = render(&hs, &fleet, true, true);
	root = jv_parse(text, strlen(text));
	assert_non_null(root);
	assert_int_equal((int)jv_get(jv_get(root, "fleet"), "hosts")->num, 2);
	/* the fleet's p99 is the slow host's: 60 of 160 events are 100 ms */
	row = stage_row(jv_get(root, "fleet"), "req.latency");
	assert_int_equal((__u64)jv_get(row, "count")->num, 160);
	assert_int_equal((__u64)jv_get(row, "p99_ns")->num, p99_of(100000000, 1));
	hosts = jv_get(root, "hosts");
	assert_int_equal(hosts->n, 2);
	assert_string_equal(jv_get(hosts->items[0], "host")->text, "a");
	assert_string_equal(jv_get(hosts->items[0], "source")->text, "dirA");
	row = stage_row(hosts->items[0], "req.latency");
	assert_int_equal((__u64)jv_get(row, "count")->num, 100);
	assert_int_equal((__u64)jv_get(row, "p99_ns")->num, p99_of(1000000, 100));
	assert_string_equal(jv_get(hosts->items[1], "host")->text, "b");
	row = stage_row(hosts->items[1], "req.latency");
	assert_int_equal((__u64)jv_get(row, "p50_ns")->num, p99_of(100000000, 60));
	assert_int_equal(jv_get(hosts->items[1], "verdict")->t, J_NULL); /* no requests */
	assert_null(jv_get(root, "reports")); /* --by host: the comparison only */
	jv_free(root);
	free(text);

	/* without --by host each host's own report follows, named after it */
	text = render(&hs, &fleet, true, false);
	root = jv_parse(text, strlen(text));
	assert_non_null(root);
	assert_int_equal(jv_get(root, "reports")->n, 2);
	assert_string_equal(jv_get(jv_get(root, "reports")->items[1], "host")->text, "b");
	assert_string_equal(jv_get(jv_get(root, "reports")->items[1], "source")->text, "dirB");
	jv_free(root);
	free(text);
	snapshot__free(&fleet);
	host_set__free(&hs);
}

static void test_text_labels(void **state)
{
	struct host_set hs;
	struct snapshot fleet;
	char msg[256], *text, *row;

	(void)state;
	two_hosts(&hs);
	snapshot__init(&fleet);
	assert_int_equal(host_set__fleet(&hs, &fleet, msg, sizeof(msg)), 0);
	text = render(&hs, &fleet, false, false);
	assert_non_null(strstr(text, "tailtrace report of 2 hosts from dirA dirB\n"));
	row = strstr(text, "req.latency");
	assert_non_null(row);
	/* the fleet row, then one row per host, each naming it */
	assert_non_null(strstr(row, "(fleet)"));
	assert_non_null(strstr(row, "\n                                  a "));
	assert_non_null(strstr(row, "\n                                  b "));
	assert_non_null(strstr(text, "  a                    (no requests recorded)"));
	assert_non_null(strstr(text, "==== host a ====\ntailtrace report of dirA (host a)\n"));
	assert_non_null(strstr(text, "==== host b ====\ntailtrace report of dirB (host b)\n"));
	free(text);
	snapshot__free(&fleet);
	host_set__free(&hs);
}

/* Every OpenMetrics sample carries the host first, escaped; none without a host. */
static void test_openmetrics_host(void **state)
{
	struct snapshot s;
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0, samples = 0;
	FILE *f;

	(void)state;
	interval(&s, "rack\"7\\n", 0, 1000000, 10);
	f = open_memstream(&buf, &len);
	assert_int_equal(export_openmetrics(f, &s, 0), 0);
	fclose(f);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		samples++;
		assert_non_null(strstr(line, "{host=\"rack\\\"7\\\\n\""));
	}
	assert_true(samples > 40);
	free(buf);

	s.host[0] = '\0';
	buf = NULL;
	f = open_memstream(&buf, &len);
	assert_int_equal(export_openmetrics(f, &s, 0), 0);
	fclose(f);
	assert_null(strstr(buf, "host="));
	assert_non_null(strstr(buf, "\ntailtrace_hist_keys_live 0\n"));
	free(buf);
	snapshot__free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grouped_by_host), cmocka_unit_test(test_unnamed_and_twice),
		cmocka_unit_test(test_too_many_hosts),  cmocka_unit_test(test_json_labels),
		cmocka_unit_test(test_text_labels),     cmocka_unit_test(test_openmetrics_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
