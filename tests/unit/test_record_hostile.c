// SPDX-License-Identifier: GPL-2.0
/* Record segments from an untrusted source: a key repeated in a payload is merged, not
 * appended; an interval and a report hold no more than their documented limits
 * (docs/record-format.md, "Limits") and say which one was passed; merging stays linear. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/histogram.h"
#include "core/stages.h"
#include "export/exports.h"
#include "record/record_format.h"

/* A raw (uncompressed) snapshot payload, written field by field as the format says. */
struct payload {
	__u8 *p;
	size_t len, cap;
};

static void put(struct payload *b, __u64 v, int n)
{
	if (b->len + (size_t)n > b->cap) {
		b->cap = b->cap ? b->cap * 2 : 4096;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	for (int i = 0; i < n; i++)
		b->p[b->len++] = (__u8)(v >> (8 * i));
}

static void put_str8(struct payload *b, const char *s)
{
	put(b, strlen(s), 1);
	for (const char *c = s; *c; c++)
		put(b, (__u8)*c, 1);
}

/* The fixed part up to the devices: times, gauges, no counters, no drop reasons. */
static void put_head(struct payload *b)
{
	put(b, 1000, 8);
	put(b, 2000, 8);
	for (int i = 0; i < 7; i++)
		put(b, 0, 8);
	put(b, 0, 2);
	put(b, 0, 2);
}

/* Device records with ifindex = first + i. */
static void put_devs(struct payload *b, __u32 n, __u32 first)
{
	put(b, n, 4);
	for (__u32 i = 0; i < n; i++) {
		put(b, 7, 4);
		put(b, first + i, 4);
		put_str8(b, "eth");
	}
}

/* One tx.qdisc histogram by port `port`: count 1, one sample in slot 9. */
static void put_hist(struct payload *b, __u64 port)
{
	put_str8(b, "tx.qdisc");
	put_str8(b, "port");
	put(b, 0, 1);
	for (int i = 0; i < 4; i++)
		put(b, 0, 4);
	put(b, port, 8);
	for (int i = 0; i < 32; i++)
		put(b, 0, 1);
	put(b, 1, 8);
	put(b, 500, 8);
	put(b, 500, 8);
	put(b, 1, 2);
	put(b, 9, 2);
	put(b, 1, 8);
}

/* No attribution, no slow requests, no scalars. */
static void put_tail(struct payload *b)
{
	put(b, 0, 4);
	put(b, 0, 4);
	put(b, 0, 2);
}

static int decode(struct payload *b, struct snapshot *s)
{
	snapshot__init(s);
	return rec_payload_decode(REC_FRAME_SNAPSHOT, b->p, b->len, s);
}

static void test_repeated_keys_merge_on_decode(void **state)
{
	struct payload b = { 0 };
	struct snapshot s;

	(void)state;
	put_head(&b);
	put_devs(&b, 3, 1);
	put(&b, 3000, 4);
	for (int i = 0; i < 3000; i++)
		put_hist(&b, i % 2 ? 8000 : 9000);
	put_tail(&b);
	assert_int_equal(decode(&b, &s), 0);
	/* 3000 records of two keys: two histograms holding all the samples, in the order of
	 * first appearance */
	assert_int_equal(s.nhists, 2);
	assert_int_equal(s.hists[0].key.id, 9000);
	assert_int_equal(s.hists[1].key.id, 8000);
	assert_int_equal(s.hists[0].h.count, 1500);
	assert_int_equal(s.hists[1].h.count, 1500);
	assert_int_equal(s.hists[0].h.slots[9], 1500);
	assert_int_equal(s.hists[0].h.sum_ns, 1500 * 500);
	assert_int_equal(s.ndevs, 3);
	snapshot__free(&s);
	free(b.p);
}

static void test_repeated_devices_merge_on_decode(void **state)
{
	struct payload b = { 0 };
	struct snapshot s;

	(void)state;
	put_head(&b);
	put(&b, 5000, 4);
	for (int i = 0; i < 5000; i++) {
		put(&b, 7, 4);
		put(&b, 1 + i % 4, 4);
		put_str8(&b, i < 4 ? "first" : "later");
	}
	put(&b, 0, 4);
	put_tail(&b);
	assert_int_equal(decode(&b, &s), 0);
	assert_int_equal(s.ndevs, 4);
	assert_string_equal(snapshot__dev_name(&s, 7, 3), "first"); /* the first name stays */
	snapshot__free(&s);
	free(b.p);
}

/* distinct keys 0 .. distinct - 1, the first 100 repeated once more */
static void hists_payload(struct payload *b, __u32 distinct)
{
	memset(b, 0, sizeof(*b));
	put_head(b);
	put_devs(b, 0, 0);
	put(b, distinct + 100, 4);
	for (__u32 i = 0; i < distinct + 100; i++)
		put_hist(b, i < 100 ? i : i - 100);
	put_tail(b);
}

static void test_interval_limits(void **state)
{
	struct payload b = { 0 };
	struct snapshot s;

	(void)state;
	put_head(&b);
	put_devs(&b, REC_INTERVAL_DEVS_MAX, 1);
	put(&b, 0, 4);
	put_tail(&b);
	assert_int_equal(decode(&b, &s), 0);
	assert_int_equal(s.ndevs, REC_INTERVAL_DEVS_MAX);
	snapshot__free(&s);
	b.len = 0;
	put_head(&b);
	put_devs(&b, REC_INTERVAL_DEVS_MAX + 1, 1);
	put(&b, 0, 4);
	put_tail(&b);
	assert_int_equal(decode(&b, &s), -E2BIG);
	snapshot__free(&s);
	free(b.p);
	/* repeats do not count against the histogram limit; one distinct key too many stops
	 * the interval */
	hists_payload(&b, REC_INTERVAL_HISTS_MAX);
	assert_int_equal(decode(&b, &s), 0);
	assert_int_equal(s.nhists, REC_INTERVAL_HISTS_MAX);
	snapshot__free(&s);
	free(b.p);
	hists_payload(&b, REC_INTERVAL_HISTS_MAX + 1);
	assert_int_equal(decode(&b, &s), -E2BIG);
	snapshot__free(&s);
	free(b.p);
}

/* A NIC payload of n distinct NAPI instances (one column) and n distinct CPUs. */
static void nic_payload(struct payload *b, __u32 napi, __u32 cpus)
{
	b->len = 0;
	put(b, 1000, 8);
	put(b, 2000, 8);
	put(b, 1, 1);
	put_str8(b, "polls");
	put(b, napi, 4);
	for (__u32 i = 0; i < napi; i++) {
		put(b, 7, 4);
		put(b, 2, 4);
		put(b, i, 4);
		put(b, 1, 8);
	}
	put(b, 1, 1);
	put_str8(b, "dropped");
	put(b, cpus, 4);
	for (__u32 i = 0; i < cpus; i++) {
		put(b, i, 4);
		put(b, 1, 8);
	}
}

static void test_nic_interval_limits(void **state)
{
	struct payload b = { 0 };
	struct snapshot s;

	(void)state;
	nic_payload(&b, REC_INTERVAL_NAPI_MAX, REC_INTERVAL_SOFTNET_MAX);
	snapshot__init(&s);
	assert_int_equal(rec_payload_decode(REC_FRAME_NIC, b.p, b.len, &s), 0);
	assert_int_equal(s.nnapi, REC_INTERVAL_NAPI_MAX);
	assert_int_equal(s.nsoftnet, REC_INTERVAL_SOFTNET_MAX);
	snapshot__free(&s);
	nic_payload(&b, REC_INTERVAL_NAPI_MAX + 1, 1);
	snapshot__init(&s);
	assert_int_equal(rec_payload_decode(REC_FRAME_NIC, b.p, b.len, &s), -E2BIG);
	snapshot__free(&s);
	nic_payload(&b, 1, REC_INTERVAL_SOFTNET_MAX + 1);
	snapshot__init(&s);
	assert_int_equal(rec_payload_decode(REC_FRAME_NIC, b.p, b.len, &s), -E2BIG);
	snapshot__free(&s);
	free(b.p);
}

/* A segment whose one interval has nslow slow requests (nslow / 512 flight frames). */
static void segment_with_slow(struct rec_buf *out, size_t nslow)
{
	struct rec_header h;
	struct snapshot s;

	memset(&h, 0, sizeof(h));
	h.version = REC_VERSION;
	h.flags = REC_FLAG_ZLIB;
	h.hist_sub_bits = HIST_SUB_BITS;
	h.hist_max_log2 = HIST_MAX_LOG2;
	strcpy(h.host, "t");
	assert_int_equal(rec_header_encode(out, &h), 0);
	snapshot__init(&s);
	s.start_ns = 1000;
	s.end_ns = 2000;
	s.slow_reqs = calloc(nslow, sizeof(*s.slow_reqs));
	s.nslow = s.slow_cap = nslow;
	for (size_t i = 0; i < nslow; i++)
		s.slow_reqs[i].end_ns = i + 1;
	assert_int_equal(rec_interval_encode(out, &s), 0);
	snapshot__free(&s);
}

static int count_slow(const struct snapshot *s, void *ctx)
{
	*(size_t *)ctx += s->nslow;
	return 0;
}

static void test_flight_frame_limits(void **state)
{
	const size_t most = (size_t)REC_INTERVAL_FLIGHTS_MAX * REC_FLIGHT_PER_FRAME;
	struct rec_buf b = { 0 };
	struct rec_diag d;
	size_t got = 0;

	(void)state;
	segment_with_slow(&b, most);
	assert_int_equal(rec_decode(b.p, b.len, "ok", NULL, count_slow, &got, &d), 0);
	assert_int_equal(got, most);
	rec_buf__free(&b);
	segment_with_slow(&b, most + 1);
	assert_int_equal(rec_decode(b.p, b.len, "seg", NULL, count_slow, &got, &d), -E2BIG);
	assert_non_null(strstr(d.msg, "flight-recorder frames"));
	assert_non_null(strstr(d.msg, "Limits"));
	rec_buf__free(&b);
}

static void test_flight_frame_over_512_is_corrupt(void **state)
{
	struct payload b = { 0 };
	struct snapshot s;

	(void)state;
	put(&b, 1000, 8);
	put(&b, 2000, 8);
	put(&b, 0, 1); /* no stage columns */
	put(&b, REC_FLIGHT_PER_FRAME + 1, 4);
	for (int i = 0; i < (REC_FLIGHT_PER_FRAME + 1) * 160; i++)
		put(&b, 0, 1);
	snapshot__init(&s);
	assert_int_equal(rec_payload_decode(REC_FRAME_FLIGHT, b.p, b.len, &s), -EBADMSG);
	assert_int_equal(s.nslow, 0);
	snapshot__free(&s);
	free(b.p);
}

static void add_port_hist(struct snapshot *s, __u64 port)
{
	struct hist_key k;
	struct hist h;

	memset(&k, 0, sizeof(k));
	memset(&h, 0, sizeof(h));
	k.stage = STAGE_TX_QDISC;
	k.by = GROUP_PORT;
	k.id = port;
	hist_record(&h, 1000);
	assert_int_equal(snapshot__add_hist(s, &k, &h), 0);
}

static void test_report_limits(void **state)
{
	const struct rec_limits lim = { .hists = 3, .devs = 2, .slow = 4 };
	struct snapshot dst, a, b;
	struct dev_key dk = { .netns = 1 };
	char msg[256] = "";

	(void)state;
	snapshot__init(&dst);
	snapshot__init(&a);
	snapshot__init(&b);
	add_port_hist(&a, 1);
	add_port_hist(&a, 2);
	add_port_hist(&a, 3);
	assert_int_equal(rec_window_merge(&dst, &a, &lim, msg, sizeof(msg)), 0);
	/* keys already held do not count against the limit */
	assert_int_equal(rec_window_merge(&dst, &a, &lim, msg, sizeof(msg)), 0);
	assert_int_equal(dst.nhists, 3);
	assert_int_equal(dst.hists[0].h.count, 2);
	add_port_hist(&b, 2);
	add_port_hist(&b, 4);
	assert_int_equal(rec_window_merge(&dst, &b, &lim, msg, sizeof(msg)), -E2BIG);
	assert_non_null(strstr(msg, "more than 3 histogram keys"));
	assert_non_null(strstr(msg, "--from/--to"));
	assert_int_equal(dst.nhists, 3); /* refused whole: nothing of b was added */
	assert_int_equal(dst.hists[1].h.count, 2);
	snapshot__free(&b);
	snapshot__init(&b);
	for (__u32 i = 1; i <= 3; i++) {
		dk.ifindex = i;
		assert_int_equal(snapshot__add_dev(&b, &dk, "d"), 0);
	}
	assert_int_equal(rec_window_merge(&dst, &b, &lim, msg, sizeof(msg)), -E2BIG);
	assert_non_null(strstr(msg, "more than 2 devices"));
	snapshot__free(&b);
	snapshot__init(&b);
	b.slow_reqs = calloc(5, sizeof(*b.slow_reqs));
	b.nslow = b.slow_cap = 5;
	assert_int_equal(rec_window_merge(&dst, &b, &lim, msg, sizeof(msg)), -E2BIG);
	assert_non_null(strstr(msg, "more than 4 slow requests"));
	assert_int_equal(dst.nslow, 0);
	snapshot__free(&b);
	snapshot__free(&a);
	snapshot__free(&dst);
}

/* Merging many intervals of many keys: each key once, in the order of first appearance,
 * every sample counted (this took minutes when each key was found by a scan). */
static void test_merge_many_keys(void **state)
{
	const int nkeys = 20000, rounds = 20;
	struct snapshot dst, src;
	char msg[256];

	(void)state;
	snapshot__init(&dst);
	for (int r = 0; r < rounds; r++) {
		snapshot__init(&src);
		for (int i = 0; i < nkeys / 4; i++)
			add_port_hist(&src, (__u64)((r * 997 + i * 4) % nkeys));
		assert_int_equal(rec_window_merge(&dst, &src, NULL, msg, sizeof(msg)), 0);
		snapshot__free(&src);
	}
	assert_true(dst.nhists <= (size_t)nkeys);
	{
		__u64 total = 0;

		for (size_t i = 0; i < dst.nhists; i++) {
			total += dst.hists[i].h.count;
			for (size_t j = i + 1; j < dst.nhists && j < i + 8; j++)
				assert_int_not_equal(dst.hists[i].key.id, dst.hists[j].key.id);
		}
		assert_int_equal(total, (__u64)rounds * (nkeys / 4));
	}
	assert_int_equal(dst.hists[0].key.id, 0);
	assert_int_equal(dst.hists[1].key.id, 4);
	snapshot__free(&dst);
}

/* Many requests on one stack: the tail profile keeps one row per stack however many
 * requests share it (it used to hold a row per request and part). */
static void test_tail_profile_compacts(void **state)
{
	struct tail_profile one, many;
	struct snapshot s;

	(void)state;
	snapshot__init(&s);
	s.slow_reqs = calloc(20000, sizeof(*s.slow_reqs));
	s.slow_cap = 20000;
	for (int i = 0; i < 20000; i++) {
		struct req_event *e = &s.slow_reqs[s.nslow++];

		e->start_ns = 1000;
		e->end_ns = 5001000;
		e->stage_ns[STAGE_TX_QDISC] = 1000000;
		e->role = ROLE_SERVER;
		strcpy(e->comm, "srv");
	}
	s.nslow = 1;
	assert_int_equal(tail_profile__build(&one, &s), 0);
	s.nslow = 20000;
	assert_int_equal(tail_profile__build(&many, &s), 0);
	assert_int_equal(many.nrows, one.nrows);
	assert_true(many.cap <= 8192);
	assert_int_equal(many.total_ns, 20000 * one.total_ns);
	assert_int_equal(many.total_count, 20000 * one.total_count);
	tail_profile__free(&one);
	tail_profile__free(&many);
	snapshot__free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_repeated_keys_merge_on_decode),
		cmocka_unit_test(test_repeated_devices_merge_on_decode),
		cmocka_unit_test(test_interval_limits),
		cmocka_unit_test(test_nic_interval_limits),
		cmocka_unit_test(test_flight_frame_limits),
		cmocka_unit_test(test_flight_frame_over_512_is_corrupt),
		cmocka_unit_test(test_report_limits),
		cmocka_unit_test(test_merge_many_keys),
		cmocka_unit_test(test_tail_profile_compacts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
