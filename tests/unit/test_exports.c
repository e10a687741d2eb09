// SPDX-License-Identifier: GPL-2.0
/* The exports against ground truth: OpenMetrics buckets against the exact values
 * recorded, folded and pprof totals against the requests' latencies (pprof decoded by a
 * minimal protobuf reader written here), trace-event tracks (the /metrics endpoint:
 * test_http_metrics.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <zlib.h>
#include "attr/attribution.h"
#include "cmd/option_table.h"
#include "export/exports.h"
#include "core/histogram.h"
#include "core/stages.h"

/* report.c's command entry needs main.c's help printer; this test only uses renderers */
void cmd_print_help(enum tt_cmd_id name);
void cmd_print_help(enum tt_cmd_id name)
{
	(void)name;
}

#define NVALS 2000

static __u64 vals[NVALS];

static void make(struct snapshot *s, unsigned nslow, __u64 *lat_sum)
{
	struct hist_key k;
	struct hist h;
	struct dev_key dk = { .netns = 1, .ifindex = 3 };
	__u64 x = 12345;

	snapshot__init(s);
	s->start_ns = 1714564800000000000ULL;
	s->end_ns = s->start_ns + 60000000000ULL;
	memset(&k, 0, sizeof(k));
	memset(&h, 0, sizeof(h));
	for (int i = 0; i < NVALS; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		vals[i] = (x >> 20) % (1ULL << (8 + i % 30)); /* spread over 30 powers of two */
		hist_record(&h, vals[i]);
	}
	k.stage = STAGE_TX_QDISC;
	k.by = GROUP_COMM;
	k.ifindex = 3;
	k.netns = 1;
	k.qdisc_handle = 0x10000;
	k.tgid = 9;
	memcpy(k.comm, "a\"b\\c\nd", 7); /* needs label escaping */
	assert_int_equal(snapshot__add_hist(s, &k, &h), 0);
	assert_int_equal(snapshot__add_dev(s, &dk, "eth9"), 0);
	s->counters[CNT_RETRANS] = 42;
	s->drop_reasons[5] = 6;
	*lat_sum = 0;
	if (!nslow)
		return;
	s->slow_reqs = calloc(nslow, sizeof(*s->slow_reqs));
	s->slow_cap = nslow;
	for (unsigned i = 0; i < nslow; i++) {
		struct req_event *e = &s->slow_reqs[s->nslow++];

		e->start_ns = 1000000000ULL + i * 100000000ULL;
		e->end_ns = e->start_ns + 3000000 + i * 7919;
		e->first_resp_ns = e->start_ns + 1000000;
		e->stage_ns[STAGE_TX_QDISC] = 1000000;
		e->stage_ns[STAGE_SCHED_RUNQ] = 500000 + i;
		e->tgid = 9 + i % 2;
		memcpy(e->comm, i % 2 ? "b;x" : "a", i % 2 ? 3 : 1);
		e->ifindex = 3;
		e->netns = 1;
		e->qdisc_handle = 0x10000;
		e->family = AF_INET;
		e->role = ROLE_SERVER;
		e->lport = 8000;
		*lat_sum += e->end_ns - e->start_ns;
	}
}

static char *render(int (*fn)(FILE *, const struct snapshot *), const struct snapshot *s,
		    size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	assert_non_null(f);
	assert_int_equal(fn(f, s), 0);
	fclose(f);
	if (len)
		*len = n;
	return buf;
}

static int om(FILE *f, const struct snapshot *s)
{
	return export_openmetrics(f, s, 0);
}

static void test_openmetrics_buckets_exact(void **state)
{
	struct snapshot s;
	__u64 sum;
	char *text, *line, *save;
	int buckets = 0;
	double last_le = -1;
	__u64 last_v = 0, inf = 0, count = ~0ULL;

	(void)state;
	make(&s, 0, &sum);
	text = render(om, &s, NULL);
	/* escaped label value: backslash and quote; control characters became '_' */
	assert_non_null(strstr(text, "group=\"a\\\"b\\\\c_d[9]\""));
	assert_non_null(strstr(text, "# TYPE tailtrace_stage_latency_seconds histogram\n"
				     "# UNIT tailtrace_stage_latency_seconds seconds\n"));
	assert_non_null(strstr(text, "# TYPE tailtrace_retrans counter\n"));
	assert_non_null(strstr(text, "\ntailtrace_retrans_total 42\n"));
	assert_non_null(strstr(text, "tailtrace_drops_by_reason_total{reason=\"5\"} 6\n"));
	assert_int_equal(strcmp(text + strlen(text) - 6, "# EOF\n"), 0);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *le = strstr(line, "le=\"");
		__u64 v;

		if (!strncmp(line, "tailtrace_stage_latency_seconds_count", 37))
			count = strtoull(strrchr(line, ' ') + 1, NULL, 10);
		if (strncmp(line, "tailtrace_stage_latency_seconds_bucket", 38) || !le)
			continue;
		v = strtoull(strrchr(line, ' ') + 1, NULL, 10);
		assert_true(v >= last_v); /* cumulative */
		last_v = v;
		if (!strncmp(le + 4, "+Inf", 4)) {
			inf = v;
			continue;
		}
		{
			double b = strtod(le + 4, NULL);
			__u64 le_ns = (__u64)(b * 1e9 + 0.5), exact = 0;

			assert_true(b > last_le); /* ascending */
			last_le = b;
			for (int i = 0; i < NVALS; i++)
				exact += vals[i] <= le_ns;
			/* "<= le" is exact: bounds sit on slot boundaries */
			assert_int_equal(v, exact);
		}
		buckets++;
	}
	assert_int_equal(buckets, OM_BUCKET_LOG2_MAX - OM_BUCKET_LOG2_MIN + 1);
	assert_int_equal(inf, NVALS);
	assert_int_equal(count, NVALS);
	free(text);
	snapshot__free(&s);
}

static void test_openmetrics_timestamps(void **state)
{
	struct snapshot s;
	char *buf = NULL;
	size_t n = 0;
	__u64 sum;
	FILE *f;

	(void)state;
	make(&s, 0, &sum);
	f = open_memstream(&buf, &n);
	assert_int_equal(export_openmetrics(f, &s, 1714564860500000000ULL), 0);
	fclose(f);
	/* OpenMetrics timestamps are seconds */
	assert_non_null(strstr(buf, "\ntailtrace_retrans_total 42 1714564860.5\n"));
	free(buf);
	snapshot__free(&s);
}

/* NAPI polls and softnet rows: counters labelled by device and NAPI id, or by CPU for a
 * CPU's backlog; keys the labels do not tell apart are one series; none without them. */
static void test_openmetrics_nic(void **state)
{
	struct napi_key dev = { .netns = 1, .ifindex = 3, .napi_id = 8193 };
	struct napi_key dev_other_ns = { .netns = 2, .ifindex = 3, .napi_id = 8193 };
	struct napi_key backlog = { .napi_id = 1 };
	struct napi_count c = { .polls = 10, .exhausted = 2, .work = 300 };
	struct snap_softnet r1 = { .cpu = 1,
				   .processed = 500,
				   .dropped = 4,
				   .time_squeeze = 9,
				   .received_rps = 7,
				   .flow_limit = 1 };
	struct snap_softnet r0 = { .cpu = 0, .processed = 50 };
	struct snapshot s;
	char *text;
	__u64 sum;

	(void)state;
	make(&s, 0, &sum);
	text = render(om, &s, NULL);
	assert_null(strstr(text, "tailtrace_napi"));
	assert_null(strstr(text, "tailtrace_softnet"));
	free(text);
	assert_int_equal(snapshot__add_napi(&s, &dev, &c), 0);
	assert_int_equal(snapshot__add_napi(&s, &backlog, &c), 0);
	/* the same device name and NAPI id seen in another netns without a name of its own:
	 * labelled by index, so a series of its own */
	assert_int_equal(snapshot__add_napi(&s, &dev_other_ns, &c), 0);
	assert_int_equal(snapshot__add_softnet(&s, &r1), 0);
	assert_int_equal(snapshot__add_softnet(&s, &r0), 0);
	text = render(om, &s, NULL);
	assert_non_null(strstr(text, "# TYPE tailtrace_napi_polls counter\n"));
	assert_non_null(
		strstr(text, "\ntailtrace_napi_polls_total{dev=\"eth9\",napi_id=\"8193\"} 10\n"));
	assert_non_null(strstr(text, "\ntailtrace_napi_polls_total{cpu=\"1\"} 10\n"));
	assert_non_null(strstr(
		text, "\ntailtrace_napi_polls_exhausted_total{dev=\"eth9\",napi_id=\"8193\"} 2\n"));
	assert_non_null(strstr(text, "\ntailtrace_napi_packets_total{cpu=\"1\"} 300\n"));
	assert_non_null(strstr(text, "# TYPE tailtrace_softnet_dropped counter\n"));
	/* CPUs in order, each column its own family */
	assert_non_null(strstr(text, "\ntailtrace_softnet_processed_total{cpu=\"0\"} 50\n"
				     "tailtrace_softnet_processed_total{cpu=\"1\"} 500\n"));
	assert_non_null(strstr(text, "\ntailtrace_softnet_dropped_total{cpu=\"1\"} 4\n"));
	assert_non_null(strstr(text, "\ntailtrace_softnet_time_squeeze_total{cpu=\"1\"} 9\n"));
	assert_non_null(strstr(text, "\ntailtrace_softnet_received_rps_total{cpu=\"1\"} 7\n"));
	assert_non_null(strstr(text, "\ntailtrace_softnet_flow_limit_total{cpu=\"1\"} 1\n"));
	assert_int_equal(strcmp(text + strlen(text) - 6, "# EOF\n"), 0);
	free(text);
	/* a key the labels cannot tell apart from another: summed into one series */
	assert_int_equal(
		snapshot__add_dev(&s, &(struct dev_key){ .netns = 2, .ifindex = 3 }, "eth9"), 0);
	text = render(om, &s, NULL);
	assert_non_null(
		strstr(text, "\ntailtrace_napi_polls_total{dev=\"eth9\",napi_id=\"8193\"} 20\n"));
	{
		int n = 0;

		for (const char *p = text; (p = strstr(p, "tailtrace_napi_polls_total{dev")); p++)
			n++;
		assert_int_equal(n, 1);
	}
	free(text);
	snapshot__free(&s);
}

static void test_folded_total_is_tail_latency(void **state)
{
	struct snapshot s;
	__u64 lat, total = 0;
	char *text, *line, *save;
	int lines = 0;

	(void)state;
	make(&s, 25, &lat);
	text = render(export_folded, &s, NULL);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' ');
		int semis = 0;

		assert_non_null(sp);
		for (char *p = line; p < sp; p++)
			semis += *p == ';';
		assert_int_equal(semis, 3); /* class;stage;place;process, ';' in comm replaced */
		total += strtoull(sp + 1, NULL, 10);
		lines++;
	}
	assert_true(lines > 2);
	assert_int_equal(total, lat);
	free(text);
	snapshot__free(&s);
}

/* The SVG flame graph of a snapshot: its root frame and subtitle hold the sum of the kept
 * requests' latencies, the window is named (the drawing itself: test_export_svg.c). */
static void test_svg_total_is_tail_latency(void **state)
{
	struct snapshot s;
	char want[96];
	__u64 lat;
	char *text;

	(void)state;
	make(&s, 25, &lat);
	text = render(export_svg, &s, NULL);
	snprintf(want, sizeof(want), "data-n=\"%llu\" data-name=\"all\"", (unsigned long long)lat);
	assert_non_null(strstr(text, want));
	snprintf(want, sizeof(want), "(%llu ns) over", (unsigned long long)lat);
	assert_non_null(strstr(text, want));
	assert_non_null(strstr(text, "window 2024-05-01T12:00:00Z to 2024-05-01T12:01:00Z"));
	free(text);
	snapshot__free(&s);
}

static void test_histogram_source_without_requests(void **state)
{
	struct snapshot s;
	struct tail_profile p;
	__u64 sum, p99, tail_events = 0;

	(void)state;
	make(&s, 0, &sum);
	assert_int_equal(tail_profile__build(&p, &s), 0);
	assert_int_equal(p.source, TAIL_HISTOGRAMS);
	assert_int_equal(p.nrows, 1);
	assert_string_equal(p.rows[0].frame[0], "congestion");
	assert_string_equal(p.rows[0].frame[1], "tx.qdisc");
	assert_string_equal(p.rows[0].frame[2], "eth9 qdisc 1:0");
	/* events counted are those in or above the p99 bucket: about 1% */
	p99 = hist_quantile(&s.hists[0].h, 0.99);
	for (int i = 0; i < NVALS; i++)
		tail_events += hist_slot(vals[i]) >= hist_slot(p99);
	assert_int_equal(p.total_count, tail_events);
	tail_profile__free(&p);
	snapshot__free(&s);
}

/* A key's place: its device when it has one; without one, an unknown device for the stages
 * the catalogue says are timed at a device (SF_PLACE_DEV), else no place. */
static void test_place_label(void **state)
{
	struct snapshot s;
	struct hist_key k;
	char buf[96];
	__u64 sum;

	(void)state;
	make(&s, 0, &sum);
	assert_int_equal(s.nhists, 1);
	export_place_label(&s, &s.hists[0].key, buf, sizeof(buf));
	assert_string_equal(buf, "eth9 qdisc 1:0");
	memset(&k, 0, sizeof(k));
	for (int st = 0; st < STAGE__MAX; st++) {
		k.stage = st;
		export_place_label(&s, &k, buf, sizeof(buf));
		assert_string_equal(buf, stage_info(st)->flags & SF_PLACE_DEV ? "(unknown device)"
									      : "(no place)");
	}
	k.stage = STAGE_TX_QDISC;
	export_place_label(&s, &k, buf, sizeof(buf));
	assert_string_equal(buf, "(unknown device)");
	k.stage = STAGE_TCP_RTT; /* flow samples: no device in the key */
	export_place_label(&s, &k, buf, sizeof(buf));
	assert_string_equal(buf, "(no place)");
	snapshot__free(&s);
}

/* ---- a minimal protobuf reader for the pprof check ---- */

struct pb {
	const __u8 *p, *end;
};

static __u64 pb_varint(struct pb *b)
{
	__u64 v = 0;

	for (int sh = 0; b->p < b->end && sh < 64; sh += 7) {
		__u8 c = *b->p++;

		v |= (__u64)(c & 0x7f) << sh;
		if (!(c & 0x80))
			return v;
	}
	fail_msg("bad varint");
	return 0;
}

/* Next field: returns the field number, sets wire type and (for LEN) the sub-buffer. */
static int pb_next(struct pb *b, int *wt, struct pb *sub, __u64 *v)
{
	__u64 key;

	if (b->p >= b->end)
		return 0;
	key = pb_varint(b);
	*wt = key & 7;
	if (*wt == 0) {
		*v = pb_varint(b);
	} else if (*wt == 2) {
		__u64 n = pb_varint(b);

		assert_true(n <= (__u64)(b->end - b->p));
		sub->p = b->p;
		sub->end = b->p + n;
		b->p += n;
	} else {
		fail_msg("unexpected wire type %d", *wt);
	}
	return (int)(key >> 3);
}

static void test_pprof_decodes(void **state)
{
	struct snapshot s;
	__u64 lat, ns = 0, cnt = 0, v;
	char *gz, strs[64][64];
	size_t gzlen, nstr = 0, nloc = 0, nfunc = 0, nsamp = 0;
	__u8 *raw = malloc(1 << 20);
	uLongf rawlen = 1 << 20;
	z_stream zs;
	struct pb b, sub, sub2, sub3;
	int f, wt;
	__u64 types[2][2];
	int ntypes = 0;

	(void)state;
	make(&s, 25, &lat);
	gz = render(export_pprof, &s, &gzlen);
	assert_true(gzlen > 18 && (__u8)gz[0] == 0x1f && (__u8)gz[1] == 0x8b); /* gzip */
	memset(&zs, 0, sizeof(zs));
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (__u8 *)gz;
	zs.avail_in = (uInt)gzlen;
	zs.next_out = raw;
	zs.avail_out = (uInt)rawlen;
	assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
	rawlen = zs.total_out;
	inflateEnd(&zs);

	b.p = raw;
	b.end = raw + rawlen;
	while ((f = pb_next(&b, &wt, &sub, &v))) {
		switch (f) {
		case 1: /* sample_type */
			assert_true(ntypes < 2);
			types[ntypes][0] = types[ntypes][1] = 0;
			while ((f = pb_next(&sub, &wt, &sub2, &v)))
				types[ntypes][f - 1] = v;
			ntypes++;
			break;
		case 2: { /* sample */
			int nvals = 0, nlocs = 0;

			while ((f = pb_next(&sub, &wt, &sub2, &v))) {
				while (sub2.p < sub2.end) {
					__u64 x = pb_varint(&sub2);

					if (f == 1) {
						nlocs++;
						assert_true(x >= 1);
					} else if (nvals++ == 0) {
						ns += x;
					} else {
						cnt += x;
					}
				}
			}
			assert_int_equal(nlocs, 4);
			assert_int_equal(nvals, 2);
			nsamp++;
			break;
		}
		case 4: /* location: id and one line -> function */
			while ((f = pb_next(&sub, &wt, &sub2, &v)))
				if (f == 4)
					while (pb_next(&sub2, &wt, &sub3, &v))
						;
			nloc++;
			break;
		case 5:
			nfunc++;
			break;
		case 6:
			assert_true(nstr < 64);
			snprintf(strs[nstr++], 64, "%.*s", (int)(sub.end - sub.p), sub.p);
			break;
		}
	}
	assert_true(nstr > 5);
	assert_string_equal(strs[0], ""); /* string_table[0] must be "" */
	assert_int_equal(ntypes, 2);
	assert_string_equal(strs[types[0][0]], "tail_latency");
	assert_string_equal(strs[types[0][1]], "nanoseconds");
	assert_string_equal(strs[types[1][0]], "requests");
	assert_string_equal(strs[types[1][1]], "count");
	assert_int_equal(nloc, nfunc);
	assert_true(nsamp > 2);
	assert_int_equal(ns, lat); /* total = the tail requests' latency */
	{
		struct tail_profile p;

		assert_int_equal(tail_profile__build(&p, &s), 0);
		assert_int_equal(cnt, p.total_count);
		tail_profile__free(&p);
	}
	free(raw);
	free(gz);
	snapshot__free(&s);
}

static void test_perfetto_tracks(void **state)
{
	struct snapshot s;
	__u64 lat;
	char *text, *p;
	int requests = 0, names = 0;

	(void)state;
	make(&s, 25, &lat);
	text = render(export_perfetto, &s, NULL);
	for (p = text; (p = strstr(p, "{\"ph\":\"X\",\"name\":\"request\"")); p++)
		requests++;
	for (p = text; (p = strstr(p, "\"name\":\"thread_name\"")); p++)
		names++;
	assert_int_equal(requests, 25);
	assert_int_equal(names, 25);
	assert_non_null(strstr(text, "\"name\":\"process_name\",\"pid\":9,\"tid\":0,"
				     "\"args\":{\"name\":\"a[9]\"}"));
	/* 3 ms request at t=1 s: complete events on whole microseconds */
	assert_non_null(strstr(text, "\"ts\":1000000,\"dur\":3000,"));
	/* every complete event's ts and dur are whole numbers, so no viewer's conversion to
	 * ns can move a part past its request */
	for (p = text; (p = strstr(p, "{\"ph\":\"X\"")); p++) {
		char *ts = strstr(p, "\"ts\":"), *args = strstr(p, ",\"args\"");

		assert_non_null(ts);
		assert_non_null(args);
		for (char *c = ts; c < args; c++)
			assert_true(*c != '.');
	}
	assert_int_equal(strcmp(text + strlen(text) - 4, "\n]}\n"), 0);
	free(text);
	snapshot__free(&s);
}

static void test_report_renderers(void **state)
{
	struct snapshot s;
	__u64 lat;
	char *buf = NULL, want[64];
	size_t n = 0;
	FILE *f;

	(void)state;
	make(&s, 25, &lat);
	for (unsigned i = 0; i < s.nslow; i++) {
		if (!s.attr)
			s.attr = attr_agg__new();
		attr_agg__add(s.attr, &s.slow_reqs[i]);
	}
	f = open_memstream(&buf, &n);
	assert_int_equal(report_print_json(f, &s, "mem", 6), 0);
	fclose(f);
	snprintf(want, sizeof(want), "\"total_ns\": %llu", (unsigned long long)lat);
	assert_non_null(strstr(buf, want));
	assert_non_null(strstr(buf, "\"stage\": \"tx.qdisc\""));
	assert_non_null(strstr(buf, "\"attribution\": {"));
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &n);
	assert_int_equal(report_print_text(f, &s, "mem", 6), 0);
	fclose(f);
	assert_non_null(strstr(buf, "tx.qdisc"));
	assert_non_null(strstr(buf, "retrans 42"));
	free(buf);
	snapshot__free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openmetrics_buckets_exact),
		cmocka_unit_test(test_openmetrics_timestamps),
		cmocka_unit_test(test_openmetrics_nic),
		cmocka_unit_test(test_folded_total_is_tail_latency),
		cmocka_unit_test(test_svg_total_is_tail_latency),
		cmocka_unit_test(test_histogram_source_without_requests),
		cmocka_unit_test(test_place_label),
		cmocka_unit_test(test_pprof_decodes),
		cmocka_unit_test(test_perfetto_tracks),
		cmocka_unit_test(test_report_renderers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
