// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the snapshot containers: histograms kept per key and merged by key,
 * devices, counters, drop reasons and slow requests added across snapshots. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "attr/attribution.h"
#include "core/histogram.h"
#include "core/snapshot.h"

#define MS 1000000ULL

static struct hist_key key_of(__u16 stage, __u8 by, __u64 id)
{
	struct hist_key k;

	memset(&k, 0, sizeof(k));
	k.stage = stage;
	k.by = by;
	k.id = id;
	return k;
}

/* A histogram of n values spread from base to 2 * base. */
static struct hist *hist_of(__u64 base, int n)
{
	struct hist *h = calloc(1, sizeof(*h));

	assert_non_null(h);
	for (int i = 0; i < n; i++)
		hist_record(h, base + base * (__u64)i / (__u64)(n ? n : 1));
	return h;
}

static const struct snap_hist *find(const struct snapshot *s, const struct hist_key *k)
{
	const struct snap_hist *found = NULL;

	for (size_t i = 0; i < s->nhists; i++) {
		if (!memcmp(&s->hists[i].key, k, sizeof(*k))) {
			assert_null(found); /* a key is present at most once */
			found = &s->hists[i];
		}
	}
	return found;
}

static void test_add_hist_same_key_merges(void **state)
{
	struct snapshot s;
	struct hist_key k = key_of(STAGE_TX_QDISC, GROUP_PORT, 7000);
	struct hist *a = hist_of(1 * MS, 100), *b = hist_of(40 * MS, 3), *sum = hist_of(0, 0);
	const struct snap_hist *sh;

	(void)state;
	snapshot__init(&s);
	assert_int_equal(snapshot__add_hist(&s, &k, a), 0);
	assert_int_equal(snapshot__add_hist(&s, &k, b), 0);
	assert_int_equal(s.nhists, 1);
	hist_add(sum, a);
	hist_add(sum, b);
	sh = find(&s, &k);
	assert_non_null(sh);
	assert_memory_equal(&sh->h, sum, sizeof(*sum));
	assert_int_equal(sh->h.count, 103);
	assert_int_equal(sh->h.max_ns, b->max_ns);
	/* the snapshot holds a copy: the caller's histogram can be reused */
	memset(a, 0xff, sizeof(*a));
	assert_memory_equal(&find(&s, &k)->h, sum, sizeof(*sum));
	snapshot__free(&s);
	free(a);
	free(b);
	free(sum);
}

/* Keys differing in any one field are different histograms. */
static void test_add_hist_keys_apart(void **state)
{
	struct snapshot s;
	struct hist_key base = key_of(STAGE_TX_QDISC, GROUP_RADDR, 0), k[11];
	struct hist *h = hist_of(1 * MS, 10);

	(void)state;
	base.family = AF_INET;
	base.ifindex = 3;
	base.qdisc_handle = 0x10000;
	base.netns = 4026531840u;
	base.addr[0] = 198;
	for (int i = 0; i < 11; i++)
		k[i] = base;
	k[1].stage = STAGE_TX_NIC;
	k[2].by = GROUP_PORT;
	k[3].family = AF_INET6;
	k[4].ifindex = 4;
	k[5].qdisc_handle = 0x10001;
	k[6].netns = 4026531841u;
	k[7].tgid = 1;
	k[8].id = 1;
	k[9].addr[15] = 1;
	k[10].comm[15] = 'x';
	snapshot__init(&s);
	for (int rep = 0; rep < 2; rep++)
		for (int i = 0; i < 11; i++)
			assert_int_equal(snapshot__add_hist(&s, &k[i], h), 0);
	assert_int_equal(s.nhists, 11);
	for (int i = 0; i < 11; i++) {
		const struct snap_hist *sh = find(&s, &k[i]);

		assert_non_null(sh);
		assert_int_equal(sh->h.count, 20);
	}
	snapshot__free(&s);
	free(h);
}

/* Past the initial capacity, every key still holds its own histogram. */
static void test_add_hist_many_keys(void **state)
{
	struct snapshot s;
	struct hist *h = calloc(1, sizeof(*h));

	(void)state;
	snapshot__init(&s);
	for (int rep = 0; rep < 2; rep++) {
		for (__u64 id = 1; id <= 300; id++) {
			struct hist_key k = key_of(STAGE_TCP_RTT, GROUP_PORT, id);

			memset(h, 0, sizeof(*h));
			hist_record(h, id * 1000);
			assert_int_equal(snapshot__add_hist(&s, &k, h), 0);
		}
	}
	assert_int_equal(s.nhists, 300);
	assert_true(s.hists_cap >= 300);
	for (__u64 id = 1; id <= 300; id++) {
		struct hist_key k = key_of(STAGE_TCP_RTT, GROUP_PORT, id);
		const struct snap_hist *sh = find(&s, &k);

		assert_non_null(sh);
		assert_int_equal(sh->h.count, 2);
		assert_int_equal(sh->h.max_ns, id * 1000);
		assert_int_equal(sh->h.slots[hist_slot(id * 1000)], 2);
	}
	snapshot__free(&s);
	free(h);
}

static struct req_event slow_req(__u64 cookie, __u64 lat)
{
	struct req_event e;

	memset(&e, 0, sizeof(e));
	e.sk_cookie = cookie;
	e.start_ns = 1000 * MS + cookie;
	e.end_ns = e.start_ns + lat;
	e.lport = 7000;
	return e;
}

static void add_slow(struct snapshot *s, __u64 cookie, __u64 lat)
{
	if (s->nslow == s->slow_cap) {
		s->slow_cap = s->slow_cap ? s->slow_cap * 2 : 2;
		s->slow_reqs = realloc(s->slow_reqs, s->slow_cap * sizeof(*s->slow_reqs));
		assert_non_null(s->slow_reqs);
	}
	s->slow_reqs[s->nslow++] = slow_req(cookie, lat);
}

/* Two snapshots of the same kind, with known contents. */
static void fill(struct snapshot *s, int which)
{
	struct hist_key shared = key_of(STAGE_TX_QDISC, GROUP_NONE, 0);
	struct hist_key own = key_of(STAGE_TCP_RTT, GROUP_PORT, 7000 + (__u64)which);
	struct dev_key d1 = { 4026531840u, 2 }, d2 = { 4026531840u, 3 + (__u32)which };
	struct hist *h = hist_of((1 + (__u64)which) * MS, 50);

	snapshot__init(s);
	s->start_ns = which ? 5000 : 2000;
	s->end_ns = which ? 9000 : 6000;
	assert_int_equal(snapshot__add_hist(s, &shared, h), 0);
	assert_int_equal(snapshot__add_hist(s, &own, h), 0);
	assert_int_equal(snapshot__add_dev(s, &d1, "eth0"), 0);
	assert_int_equal(snapshot__add_dev(s, &d2, which ? "veth-b" : "veth-a"), 0);
	for (int i = 0; i < CNT__MAX; i++)
		s->counters[i] = (__u64)(i + 1) * (which ? 100 : 1);
	s->drop_reasons[2] = which ? 5 : 1;
	s->drop_reasons[TT_DROP_REASONS - 1] = 7;
	s->hist_evicted = which ? 10 : 1;
	s->hist_live = which ? 3 : 8;
	s->events_lost = which ? 20 : 2;
	s->pkt_unmatched = which ? 30 : 3;
	for (int i = 0; i < 3; i++)
		add_slow(s, (__u64)which * 100 + (__u64)i, 50 * MS);
	s->slow_cut = which ? 4 : 1;
	s->slow_threshold_ns = which ? 20 * MS : 30 * MS;
	s->self_cpu_s = which ? 0.25 : 0.5;
	s->self_rss_kb = which ? 9000 : 12000;
	free(h);
}

static void test_merge_adds_everything(void **state)
{
	struct snapshot a, b;
	struct hist_key shared = key_of(STAGE_TX_QDISC, GROUP_NONE, 0);
	struct hist *ha = hist_of(1 * MS, 50), *hb = hist_of(2 * MS, 50), *sum = hist_of(0, 0);

	(void)state;
	fill(&a, 0);
	fill(&b, 1);
	assert_int_equal(snapshot__merge(&a, &b), 0);
	/* histograms: shared key added, own keys kept apart */
	assert_int_equal(a.nhists, 3);
	hist_add(sum, ha);
	hist_add(sum, hb);
	assert_memory_equal(&find(&a, &shared)->h, sum, sizeof(*sum));
	for (int w = 0; w < 2; w++) {
		struct hist_key own = key_of(STAGE_TCP_RTT, GROUP_PORT, 7000 + (__u64)w);

		assert_memory_equal(&find(&a, &own)->h, w ? hb : ha, sizeof(*ha));
	}
	/* devices: union, shared one once */
	assert_int_equal(a.ndevs, 3);
	assert_string_equal(snapshot__dev_name(&a, 4026531840u, 2), "eth0");
	assert_string_equal(snapshot__dev_name(&a, 4026531840u, 3), "veth-a");
	assert_string_equal(snapshot__dev_name(&a, 4026531840u, 4), "veth-b");
	/* counters and drop reasons add */
	for (int i = 0; i < CNT__MAX; i++)
		assert_int_equal(a.counters[i], (__u64)(i + 1) * 101);
	assert_int_equal(a.drop_reasons[2], 6);
	assert_int_equal(a.drop_reasons[TT_DROP_REASONS - 1], 14);
	assert_int_equal(a.drop_reasons[1], 0);
	assert_int_equal(a.hist_evicted, 11);
	assert_int_equal(a.events_lost, 22);
	assert_int_equal(a.pkt_unmatched, 33);
	assert_int_equal(a.slow_cut, 5);
	/* gauges: the larger one */
	assert_int_equal(a.hist_live, 8);
	assert_int_equal(a.self_rss_kb, 12000);
	assert_int_equal(a.slow_threshold_ns, 30 * MS);
	assert_true(a.self_cpu_s == 0.75);
	/* the window spans both */
	assert_int_equal(a.start_ns, 2000);
	assert_int_equal(a.end_ns, 9000);
	/* slow requests: all of both, in order */
	assert_int_equal(a.nslow, 6);
	for (int i = 0; i < 6; i++)
		assert_int_equal(a.slow_reqs[i].sk_cookie, (i < 3 ? 0 : 100) + (i % 3));
	/* src untouched */
	assert_int_equal(b.nhists, 2);
	assert_int_equal(b.nslow, 3);
	assert_int_equal(b.counters[0], 100);
	snapshot__free(&a);
	snapshot__free(&b);
	free(ha);
	free(hb);
	free(sum);
}

/* Merging into an empty snapshot gives the source back; the order of merges does not
 * change the histograms. */
static void test_merge_into_empty_and_order(void **state)
{
	struct snapshot e, a, b, ab, ba;

	(void)state;
	fill(&a, 0);
	fill(&b, 1);
	snapshot__init(&e);
	assert_int_equal(snapshot__merge(&e, &a), 0);
	assert_int_equal(e.nhists, a.nhists);
	for (size_t i = 0; i < a.nhists; i++)
		assert_memory_equal(&find(&e, &a.hists[i].key)->h, &a.hists[i].h,
				    sizeof(struct hist));
	assert_memory_equal(e.counters, a.counters, sizeof(a.counters));
	assert_int_equal(e.start_ns, a.start_ns);
	assert_int_equal(e.end_ns, a.end_ns);
	assert_int_equal(e.nslow, a.nslow);
	assert_int_equal(e.ndevs, a.ndevs);

	snapshot__init(&ab);
	snapshot__init(&ba);
	assert_int_equal(snapshot__merge(&ab, &a), 0);
	assert_int_equal(snapshot__merge(&ab, &b), 0);
	assert_int_equal(snapshot__merge(&ba, &b), 0);
	assert_int_equal(snapshot__merge(&ba, &a), 0);
	assert_int_equal(ab.nhists, ba.nhists);
	for (size_t i = 0; i < ab.nhists; i++)
		assert_memory_equal(&find(&ba, &ab.hists[i].key)->h, &ab.hists[i].h,
				    sizeof(struct hist));
	assert_memory_equal(ab.counters, ba.counters, sizeof(ab.counters));
	assert_memory_equal(ab.drop_reasons, ba.drop_reasons, sizeof(ab.drop_reasons));
	assert_int_equal(ab.start_ns, ba.start_ns);
	assert_int_equal(ab.end_ns, ba.end_ns);
	snapshot__free(&e);
	snapshot__free(&a);
	snapshot__free(&b);
	snapshot__free(&ab);
	snapshot__free(&ba);
}

/* A source without a start time does not erase the destination's. */
static void test_merge_window_bounds(void **state)
{
	struct snapshot a, b;

	(void)state;
	snapshot__init(&a);
	snapshot__init(&b);
	a.start_ns = 100;
	a.end_ns = 200;
	assert_int_equal(snapshot__merge(&a, &b), 0);
	assert_int_equal(a.start_ns, 100);
	assert_int_equal(a.end_ns, 200);
	b.start_ns = 50;
	b.end_ns = 150;
	assert_int_equal(snapshot__merge(&a, &b), 0);
	assert_int_equal(a.start_ns, 50);
	assert_int_equal(a.end_ns, 200);
	snapshot__free(&a);
	snapshot__free(&b);
}

static void test_merge_attribution(void **state)
{
	struct snapshot a, b;
	struct req_event e = slow_req(1, 30 * MS);

	(void)state;
	snapshot__init(&a);
	snapshot__init(&b);
	b.attr = attr_agg__new();
	assert_non_null(b.attr);
	attr_agg__add(b.attr, &e);
	attr_agg__add(b.attr, &e);
	assert_int_equal(attr_agg__requests(b.attr), 2);
	assert_int_equal(snapshot__merge(&a, &b), 0);
	assert_non_null(a.attr);
	assert_int_equal(attr_agg__requests(a.attr), attr_agg__requests(b.attr));
	assert_int_equal(snapshot__merge(&a, &b), 0);
	assert_int_equal(attr_agg__requests(a.attr), 2 * attr_agg__requests(b.attr));
	snapshot__free(&a);
	snapshot__free(&b);
}

static void test_dev_names(void **state)
{
	struct snapshot s;
	struct dev_key a = { 111, 2 }, b = { 222, 2 }, c = { 111, 5 };

	(void)state;
	snapshot__init(&s);
	assert_null(snapshot__dev_name(&s, 111, 2));
	assert_int_equal(snapshot__add_dev(&s, &a, "eth0"), 0);
	assert_int_equal(snapshot__add_dev(&s, &b, "veth0"), 0);
	assert_int_equal(snapshot__add_dev(&s, &c, "a-very-long-device-name"), 0);
	/* the same ifindex in two namespaces is two devices */
	assert_string_equal(snapshot__dev_name(&s, 111, 2), "eth0");
	assert_string_equal(snapshot__dev_name(&s, 222, 2), "veth0");
	assert_null(snapshot__dev_name(&s, 333, 2));
	assert_null(snapshot__dev_name(&s, 111, 9));
	/* netns 0: any namespace */
	assert_non_null(snapshot__dev_name(&s, 0, 2));
	assert_string_equal(snapshot__dev_name(&s, 0, 5), "a-very-long-dev");
	/* names fit IFNAMSIZ, NUL included */
	assert_int_equal(strlen(snapshot__dev_name(&s, 111, 5)), 15);
	/* a known device keeps its first name */
	assert_int_equal(snapshot__add_dev(&s, &a, "renamed"), 0);
	assert_int_equal(s.ndevs, 3);
	assert_string_equal(snapshot__dev_name(&s, 111, 2), "eth0");
	/* past the initial capacity */
	for (__u32 i = 100; i < 200; i++) {
		struct dev_key k = { 444, i };
		char name[16];

		snprintf(name, sizeof(name), "d%u", i);
		assert_int_equal(snapshot__add_dev(&s, &k, name), 0);
	}
	assert_int_equal(s.ndevs, 103);
	assert_string_equal(snapshot__dev_name(&s, 444, 150), "d150");
	assert_string_equal(snapshot__dev_name(&s, 111, 5), "a-very-long-dev");
	snapshot__free(&s);
}

static void test_free_resets(void **state)
{
	struct snapshot s, zero;

	(void)state;
	fill(&s, 1);
	snapshot__free(&s);
	memset(&zero, 0, sizeof(zero));
	assert_memory_equal(&s, &zero, sizeof(s));
	/* freeing twice, or an empty one, is harmless */
	snapshot__free(&s);
	snapshot__init(&s);
	snapshot__free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_hist_same_key_merges),
		cmocka_unit_test(test_add_hist_keys_apart),
		cmocka_unit_test(test_add_hist_many_keys),
		cmocka_unit_test(test_merge_adds_everything),
		cmocka_unit_test(test_merge_into_empty_and_order),
		cmocka_unit_test(test_merge_window_bounds),
		cmocka_unit_test(test_merge_attribution),
		cmocka_unit_test(test_dev_names),
		cmocka_unit_test(test_free_resets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
