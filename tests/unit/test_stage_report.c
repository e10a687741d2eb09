// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the stage report: the JSON of a synthetic snapshot is read back and each
 * figure checked against the samples that built it (counts per bucket, exact mean and
 * max, quantiles within the histogram's bound); labels, selection and the text form. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "core/histogram.h"
#include "cmd/stage_report.h"
#include "core/stages.h"
#include "lib/util.h"

#include "json_reader.h"

static bool jv_is(const struct jv *v, enum jt t)
{
	return v && v->t == t;
}

/* ---- a synthetic snapshot whose samples are known ---- */

#define US    1000ULL
#define MS    1000000ULL
#define NETNS 4026532001u
#define MAXS  4000

struct series {
	struct hist_key key;
	__u64 v[MAXS];
	size_t n;
	const char *name, *class, *group, *place; /* expected labels; place NULL: none */
};

static struct series ser[8];
static int nser;
static struct snapshot snap;

static __u64 rng;

static __u64 rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1DULL;
}

static struct series *series_add(__u16 stage, __u8 by, const char *name, const char *class,
				 const char *group, const char *place)
{
	struct series *s = &ser[nser++];

	memset(s, 0, sizeof(*s));
	s->key.stage = stage;
	s->key.by = by;
	s->name = name;
	s->class = class;
	s->group = group;
	s->place = place;
	return s;
}

static void series_commit(struct series *s)
{
	struct hist *h = calloc(1, sizeof(*h));

	assert_non_null(h);
	for (size_t i = 0; i < s->n; i++)
		hist_record(h, s->v[i]);
	assert_int_equal(snapshot__add_hist(&snap, &s->key, h), 0);
	free(h);
}

static int setup(void **state)
{
	struct dev_key eth0 = { NETNS, 3 };
	struct series *s;

	(void)state;
	nser = 0;
	rng = 42;
	snapshot__init(&snap);
	assert_int_equal(snapshot__add_dev(&snap, &eth0, "eth0"), 0);

	/* tx.qdisc at a qdisc of a known device: 1 ms +- 0.5 ms, a few at 40 ms */
	s = series_add(STAGE_TX_QDISC, GROUP_NONE, "tx.qdisc", "congestion", "all",
		       "dev eth0 qdisc 1:0");
	s->key.ifindex = 3;
	s->key.netns = NETNS;
	s->key.qdisc_handle = 0x10000;
	for (s->n = 0; s->n < 3000; s->n++)
		s->v[s->n] = s->n % 100 == 7 ? 40 * MS + rnd() % MS : MS / 2 + rnd() % MS;
	series_commit(s);

	/* the same stage at an unnamed device and another qdisc */
	s = series_add(STAGE_TX_QDISC, GROUP_NONE, "tx.qdisc", "congestion", "all",
		       "dev ifindex 9 qdisc 8001:a");
	s->key.ifindex = 9;
	s->key.netns = NETNS;
	s->key.qdisc_handle = 0x8001000a;
	for (s->n = 0; s->n < 5; s->n++)
		s->v[s->n] = 100 * US * (s->n + 1);
	series_commit(s);

	/* tcp.rtt by port */
	s = series_add(STAGE_TCP_RTT, GROUP_PORT, "tcp.rtt", "split", "port 7000", NULL);
	s->key.id = 7000;
	for (s->n = 0; s->n < MAXS; s->n++)
		s->v[s->n] =
			(__u64)exp(log(200.0 * US) + 0.8 * ((double)(rnd() % 2000) / 1000 - 1));
	series_commit(s);

	/* rx.stack by remote address, v4 and v6, through a device */
	s = series_add(STAGE_RX_STACK, GROUP_RADDR, "rx.stack", "transport", "raddr 198.18.1.2",
		       "dev eth0");
	s->key.family = AF_INET;
	s->key.ifindex = 3;
	s->key.netns = NETNS;
	inet_pton(AF_INET, "198.18.1.2", s->key.addr);
	for (s->n = 0; s->n < 1; s->n++)
		s->v[s->n] = 12 * US;
	series_commit(s);
	s = series_add(STAGE_RX_STACK, GROUP_RADDR, "rx.stack", "transport", "raddr 2001:db8::1",
		       "dev eth0");
	s->key.family = 10; /* AF_INET6 as the kernel numbers it */
	s->key.ifindex = 3;
	s->key.netns = NETNS;
	inet_pton(AF_INET6, "2001:db8::1", s->key.addr);
	for (s->n = 0; s->n < 3; s->n++)
		s->v[s->n] = 5 + s->n; /* below 16 ns: exact buckets */
	series_commit(s);

	/* tcp.retrans with values beyond the regular range */
	s = series_add(STAGE_TCP_RETRANS, GROUP_NONE, "tcp.retrans", "transport", "all", NULL);
	s->v[s->n++] = 200 * MS;
	s->v[s->n++] = 1ULL << 48;
	s->v[s->n++] = 1ULL << 50;
	series_commit(s);

	/* outside the default selection */
	s = series_add(STAGE_SCHED_RUNQ, GROUP_COMM, "sched.runq", "compute", "comm vllm[4242]",
		       NULL);
	s->key.tgid = 4242;
	memcpy(s->key.comm, "vllm", 5);
	for (s->n = 0; s->n < 10; s->n++)
		s->v[s->n] = 30 * US;
	series_commit(s);
	s = series_add(STAGE_REQ_LATENCY, GROUP_CGROUP, "req.latency", "request", "cgroup 77",
		       NULL);
	s->key.id = 77;
	for (s->n = 0; s->n < 10; s->n++)
		s->v[s->n] = 9 * MS;
	series_commit(s);

	snap.counters[CNT_RETRANS] = 11;
	snap.counters[CNT_RETRANS_RTO] = 4;
	snap.counters[CNT_RETRANS_FAST] = 5;
	snap.counters[CNT_RETRANS_TLP] = 1;
	snap.counters[CNT_RETRANS_OTHER] = 1;
	snap.counters[CNT_RETRANS_UNTIMED] = 2;
	snap.counters[CNT_DROPS] = 6;
	snap.counters[CNT_ECN_CE] = 8;
	snap.counters[CNT_QDISC_PKTS] = 1000;
	snap.counters[CNT_QDISC_DROPS] = 3;
	snap.counters[CNT_HIST_UPDATE_FAIL] = 1;
	snap.counters[CNT_FLOW_UPDATE_FAIL] = 2;
	snap.counters[CNT_PKT_UPDATE_FAIL] = 4;
	snap.counters[CNT_SCHED_UPDATE_FAIL] = 8;
	snap.counters[CNT_SENDS_UNTIMED] = 29;
	snap.counters[CNT_RETRANS_UNSEEN] = 3;
	snap.counters[CNT_CLOSES_UNSEEN] = 31;
	snap.counters[CNT_RESP_UNSEEN] = 37;
	snap.drop_reasons[2] = 5;
	snap.drop_reasons[TT_DROP_REASONS - 1] = 1;
	snap.hist_evicted = 13;
	snap.events_lost = 17;
	snap.pkt_unmatched = 19;
	snap.slow_cut = 23;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	snapshot__free(&snap);
	return 0;
}

static struct jv *render_json(const struct stage_report_opts *ro, char **text)
{
	struct json_writer w;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct jv *v;

	assert_non_null(f);
	jw_init(&w, f, false);
	jw_object_begin(&w, NULL);
	stage_report_print_json(&snap, ro, &w);
	jw_object_end(&w);
	jw_finish(&w);
	fclose(f);
	v = jv_parse(buf, len);
	if (!v)
		fail_msg("stage report is not valid JSON: %s", buf);
	if (text)
		*text = buf;
	else
		free(buf);
	return v;
}

static char *render_text(const struct stage_report_opts *ro)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	stage_report_print_text(&snap, ro, f);
	fclose(f);
	return buf;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static const struct series *series_of(const struct jv *st)
{
	const struct jv *name = jv_get(st, "name"), *group = jv_get(st, "group"),
			*place = jv_get(st, "place");

	for (int i = 0; i < nser; i++) {
		if (strcmp(ser[i].name, name->text) || strcmp(ser[i].group, group->text))
			continue;
		if (ser[i].place ? jv_is(place, J_STR) && !strcmp(ser[i].place, place->text)
				 : jv_is(place, J_NULL))
			return &ser[i];
	}
	return NULL;
}

static void check_near(const struct jv *st, const char *key, __u64 exact_ns, const char *who)
{
	const struct jv *v = jv_get(st, key);
	double got, want = (double)exact_ns / 1000.0;

	assert_true(jv_is(v, J_NUM));
	got = v->num;
	if (fabs(got - want) > want / 16 + 1e-9)
		fail_msg("%s %s: %g us, exact %g us", who, key, got, want);
}

/* Every figure of one stage entry against its samples. */
static void check_entry(const struct jv *st, const struct series *s)
{
	static const char *const keys[] = { "name",   "class",   "group",  "place",
					    "count",  "mean_us", "p50_us", "p90_us",
					    "p99_us", "p999_us", "max_us", "buckets" };
	__u64 sorted[MAXS], total = 0, prev_hi = 0;
	long double sum = 0;
	const struct jv *b;
	size_t n = s->n;

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (!jv_get(st, keys[i]))
			fail_msg("%s: key \"%s\" missing", s->name, keys[i]);
	assert_string_equal(jv_get(st, "class")->text, s->class);
	assert_true(jv_is(jv_get(st, "count"), J_NUM));
	assert_true(jv_get(st, "count")->num == (double)n);
	memcpy(sorted, s->v, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_u64);
	for (size_t i = 0; i < n; i++)
		sum += sorted[i];
	if (fabsl((long double)jv_get(st, "mean_us")->num - sum / n / 1000) >
	    1e-9L * (sum / n / 1000))
		fail_msg("%s mean_us %g, exact %Lg", s->name, jv_get(st, "mean_us")->num,
			 sum / n / 1000);
	/* exact up to the ten significant digits the writer prints */
	assert_true(fabs(jv_get(st, "max_us")->num - (double)sorted[n - 1] / 1000.0) <=
		    1e-9 * ((double)sorted[n - 1] / 1000.0));
	if (sorted[n - 1] < 1ULL << HIST_MAX_LOG2) {
		check_near(st, "p50_us", sorted[(n * 50 + 99) / 100 - 1], s->name);
		check_near(st, "p90_us", sorted[(n * 90 + 99) / 100 - 1], s->name);
		check_near(st, "p99_us", sorted[(n * 99 + 99) / 100 - 1], s->name);
		check_near(st, "p999_us", sorted[(n * 999 + 999) / 1000 - 1], s->name);
	}
	/* buckets: ascending, disjoint, each holding exactly the samples in [lo, hi) */
	b = jv_get(st, "buckets");
	assert_true(jv_is(b, J_ARR));
	for (size_t i = 0; i < b->n; i++) {
		const struct jv *e = b->items[i];
		__u64 lo, hi, cnt, want = 0;

		assert_true(jv_is(e, J_ARR));
		assert_int_equal(e->n, 3);
		lo = strtoull(e->items[0]->text, NULL, 10);
		cnt = strtoull(e->items[2]->text, NULL, 10);
		if (jv_is(e->items[1], J_NULL)) {
			hi = ~0ULL; /* the overflow bucket, unbounded */
			assert_int_equal(lo, 1ULL << HIST_MAX_LOG2);
			assert_int_equal(i, b->n - 1);
		} else {
			hi = strtoull(e->items[1]->text, NULL, 10);
		}
		assert_true(lo < hi);
		assert_true(lo >= prev_hi);
		assert_true(cnt > 0);
		prev_hi = hi;
		for (size_t k = 0; k < n; k++)
			if (sorted[k] >= lo && (sorted[k] < hi || hi == ~0ULL))
				want++;
		if (cnt != want)
			fail_msg("%s bucket [%llu, %llu): %llu, samples in it %llu", s->name,
				 (unsigned long long)lo, (unsigned long long)hi,
				 (unsigned long long)cnt, (unsigned long long)want);
		total += cnt;
	}
	assert_int_equal(total, n);
}

static void test_json_stages_against_samples(void **state)
{
	static const int all[] = { STAGE_TX_QDISC,    STAGE_TCP_RTT,    STAGE_RX_STACK,
				   STAGE_TCP_RETRANS, STAGE_SCHED_RUNQ, STAGE_REQ_LATENCY };
	struct stage_report_opts ro = { .stages = all, .nstages = 6, .duration_s = 12.5 };
	struct jv *v = render_json(&ro, NULL), *stages;
	bool seen[8] = { false };
	int prev_stage = -1;

	(void)state;
	assert_true(jv_is(jv_get(v, "duration_s"), J_NUM));
	assert_true(jv_get(v, "duration_s")->num == 12.5);
	stages = jv_get(v, "stages");
	assert_true(jv_is(stages, J_ARR));
	assert_int_equal(stages->n, nser);
	for (size_t i = 0; i < stages->n; i++) {
		const struct jv *st = stages->items[i];
		const struct series *s;
		int id;

		assert_true(jv_is(jv_get(st, "name"), J_STR));
		assert_true(jv_is(jv_get(st, "group"), J_STR));
		s = series_of(st);
		if (!s)
			fail_msg("unexpected entry %s group \"%s\" place %s",
				 jv_get(st, "name")->text, jv_get(st, "group")->text,
				 jv_is(jv_get(st, "place"), J_STR) ? jv_get(st, "place")->text
								   : "null");
		assert_false(seen[s - ser]);
		seen[s - ser] = true;
		check_entry(st, s);
		/* grouped by stage */
		id = stage_by_name(s->name);
		assert_true(id >= prev_stage);
		prev_stage = id;
	}
	jv_free(v);
}

static void test_json_overflow_visible(void **state)
{
	static const int sel[] = { STAGE_TCP_RETRANS };
	struct stage_report_opts ro = { .stages = sel, .nstages = 1 };
	struct jv *v = render_json(&ro, NULL), *st;

	(void)state;
	assert_int_equal(jv_get(v, "stages")->n, 1);
	st = jv_get(v, "stages")->items[0];
	assert_true(jv_is(jv_get(st, "overflow"), J_NUM));
	assert_true(jv_get(st, "overflow")->num == 2);
	assert_true(fabs(jv_get(st, "max_us")->num - (double)(1ULL << 50) / 1000.0) < 1e3);
	jv_free(v);
}

#define JSON_KEY_ROW(id, rec, json) json,
static const char *const json_keys[] = { TT_COUNTERS(JSON_KEY_ROW) };

static void test_json_counters(void **state)
{
	struct stage_report_opts ro = { 0 };
	struct jv *v = render_json(&ro, NULL), *c, *dr;
	static const struct {
		const char *key;
		double want;
	} want[] = {
		{ "retransmits", 11 },
		{ "retransmits_timeout", 4 },
		{ "retransmits_fast", 5 },
		{ "retransmits_tlp", 1 },
		{ "retransmits_other", 1 },
		{ "retransmits_untimed", 2 },
		{ "drops", 6 },
		{ "ecn_ce", 8 },
		{ "qdisc_packets", 1000 },
		{ "qdisc_drops", 3 },
		{ "evicted", 13 },
		{ "lost", 17 },
		{ "unmatched_stamps", 19 },
		{ "failed_updates", 15 },
		{ "slow_requests_cut", 23 },
		{ "sends_untimed", 29 },
		{ "retransmits_unseen", 3 },
		{ "closes_unseen", 31 },
		{ "responses_unseen", 37 },
	};
	char name[64];

	(void)state;
	c = jv_get(v, "counters");
	assert_true(jv_is(c, J_OBJ));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		const struct jv *x = jv_get(c, want[i].key);

		if (!jv_is(x, J_NUM) || x->num != want[i].want)
			fail_msg("counters.%s: %g, want %g", want[i].key, x ? x->num : -1,
				 want[i].want);
	}
	/* a counter given a JSON key in TT_COUNTERS is printed under it */
	for (size_t i = 0; i < ARRAY_SIZE(json_keys); i++)
		if (json_keys[i] && !jv_is(jv_get(c, json_keys[i]), J_NUM))
			fail_msg("counter %zu has JSON key %s, which the report lacks", i,
				 json_keys[i]);
	dr = jv_get(c, "drop_reasons");
	assert_true(jv_is(dr, J_OBJ));
	assert_int_equal(dr->n, 2);
	assert_true(jv_get(dr, drop_reason_name(2, name, sizeof(name)))->num == 5);
	assert_true(jv_get(dr, drop_reason_name(TT_DROP_REASONS - 1, name, sizeof(name)))->num ==
		    1);
	jv_free(v);
}

static void test_selection(void **state)
{
	static const int rtt[] = { STAGE_TCP_RTT };
	static const int runq_qdisc[] = { STAGE_SCHED_RUNQ, STAGE_TX_QDISC };
	struct stage_report_opts ro = { .stages = rtt, .nstages = 1 };
	struct jv *v, *st;

	(void)state;
	v = render_json(&ro, NULL);
	st = jv_get(v, "stages");
	assert_int_equal(st->n, 1);
	assert_string_equal(jv_get(st->items[0], "name")->text, "tcp.rtt");
	assert_string_equal(jv_get(st->items[0], "group")->text, "port 7000");
	assert_true(jv_is(jv_get(st->items[0], "place"), J_NULL));
	jv_free(v);

	ro.stages = runq_qdisc;
	ro.nstages = 2;
	v = render_json(&ro, NULL);
	st = jv_get(v, "stages");
	assert_int_equal(st->n, 3);
	for (size_t i = 0; i < st->n; i++)
		assert_true(!strcmp(jv_get(st->items[i], "name")->text, "tx.qdisc") ||
			    !strcmp(jv_get(st->items[i], "name")->text, "sched.runq"));
	jv_free(v);

	/* the default set is the TCP path and RDMA (present only with --rdma): request and
	 * scheduler stages need --stage */
	ro.stages = NULL;
	ro.nstages = 0;
	v = render_json(&ro, NULL);
	st = jv_get(v, "stages");
	assert_int_equal(st->n, 6);
	for (size_t i = 0; i < st->n; i++) {
		assert_string_not_equal(jv_get(st->items[i], "name")->text, "sched.runq");
		assert_string_not_equal(jv_get(st->items[i], "name")->text, "req.latency");
	}
	jv_free(v);
	for (int s = 0; s < STAGE__MAX; s++)
		assert_int_equal(stage_report_selected(NULL, s),
				 s <= STAGE_TCP_RETRANS || s == STAGE_RDMA_WR ||
					 s == STAGE_RDMA_CQ_EVENT || s == STAGE_RDMA_UCX ||
					 s == STAGE_RDMA_UCX_RTT || s == STAGE_RX_BACKLOG ||
					 s == STAGE_RX_SOFTIRQ || s == STAGE_TX_RING);
}

static void test_empty_snapshot(void **state)
{
	struct snapshot saved = snap;
	struct stage_report_opts ro = { .duration_s = 1 };
	struct jv *v;
	char *text;

	(void)state;
	snapshot__init(&snap);
	v = render_json(&ro, NULL);
	assert_true(jv_is(jv_get(v, "stages"), J_ARR));
	assert_int_equal(jv_get(v, "stages")->n, 0);
	assert_true(jv_get(jv_get(v, "counters"), "lost")->num == 0);
	jv_free(v);
	text = render_text(&ro);
	assert_non_null(strstr(text, "(no samples"));
	free(text);
	snap = saved;
}

static void test_labels(void **state)
{
	struct hist_key k;
	char buf[96];

	(void)state;
	memset(&k, 0, sizeof(k));
	stage_report_group(&k, buf, sizeof(buf));
	assert_string_equal(buf, "all");
	k.by = GROUP_PORT;
	k.id = 7000;
	stage_report_group(&k, buf, sizeof(buf));
	assert_string_equal(buf, "port 7000");
	memset(&k, 0, sizeof(k));
	k.by = GROUP_RADDR;
	k.family = AF_INET;
	inet_pton(AF_INET, "198.18.1.2", k.addr);
	stage_report_group(&k, buf, sizeof(buf));
	assert_string_equal(buf, "raddr 198.18.1.2");
	k.family = 0;
	stage_report_group(&k, buf, sizeof(buf));
	assert_string_equal(buf, "raddr ?");
	memset(&k, 0, sizeof(k));
	k.by = GROUP_COMM;
	k.tgid = 1;
	memcpy(k.comm, "0123456789abcdef", 16); /* a full comm without NUL */
	stage_report_group(&k, buf, sizeof(buf));
	assert_string_equal(buf, "comm 0123456789abcdef[1]");
	/* a name is another process's: its control characters are escaped, not printed */
	memset(k.comm, 0, sizeof(k.comm));
	memcpy(k.comm, "ev\x1b[2Jil\n", 9);
	stage_report_group(&k, buf, sizeof(buf));
	assert_string_equal(buf, "comm ev\\x1b[2Jil\\x0a[1]");

	/* places: qdisc handles as major:minor in hex, unknown devices by index */
	memset(&k, 0, sizeof(k));
	stage_report_place(&snap, &k, buf, sizeof(buf));
	assert_string_equal(buf, "");
	k.stage = STAGE_TX_QDISC;
	k.ifindex = 3;
	k.netns = NETNS;
	k.qdisc_handle = 0x10000;
	stage_report_place(&snap, &k, buf, sizeof(buf));
	assert_string_equal(buf, "dev eth0 qdisc 1:0");
	k.qdisc_handle = 0xffff0001;
	stage_report_place(&snap, &k, buf, sizeof(buf));
	assert_string_equal(buf, "dev eth0 qdisc ffff:1");
	k.netns = NETNS + 1; /* same index in another namespace is not eth0 */
	stage_report_place(&snap, &k, buf, sizeof(buf));
	assert_string_equal(buf, "dev ifindex 3 qdisc ffff:1");
	k.stage = STAGE_TX_NIC;
	k.netns = NETNS;
	stage_report_place(&snap, &k, buf, sizeof(buf));
	assert_string_equal(buf, "dev eth0");
	stage_report_place(NULL, &k, buf, sizeof(buf));
	assert_string_equal(buf, "dev ifindex 3");
	/* a short buffer is cut, not overrun */
	k.stage = STAGE_TX_QDISC;
	stage_report_place(&snap, &k, buf, 8);
	assert_string_equal(buf, "dev eth");
}

static void test_drop_reason_name(void **state)
{
	char buf[64];

	(void)state;
	/* from BTF when the kernel has it, else reason_N; never empty, always one word */
	for (unsigned r = 0; r < TT_DROP_REASONS; r++) {
		const char *n = drop_reason_name(r, buf, sizeof(buf));

		assert_ptr_equal(n, buf);
		assert_true(buf[0] != 0);
		for (const char *p = buf; *p; p++)
			assert_true(isalnum((unsigned char)*p) || *p == '_');
	}
}

static void test_text(void **state)
{
	static const int sel[] = { STAGE_TX_QDISC, STAGE_TCP_RTT, STAGE_TCP_RETRANS };
	struct stage_report_opts ro = { .stages = sel, .nstages = 3, .chart = true };
	char *t = render_text(&ro);
	int rows = 0;

	(void)state;
	assert_true(!strncmp(t, "STAGE", 5));
	for (char *line = t; line && *line;
	     line = strchr(line, '\n'), line = line ? line + 1 : NULL)
		if (!strncmp(line, "tx.qdisc ", 9) || !strncmp(line, "tcp.rtt ", 8) ||
		    !strncmp(line, "tcp.retrans ", 12))
			rows++;
	assert_int_equal(rows, 4);
	assert_non_null(strstr(t, "dev eth0 qdisc 1:0"));
	assert_non_null(strstr(t, "dev ifindex 9 qdisc 8001:a"));
	assert_non_null(strstr(t, "port 7000"));
	assert_null(strstr(t, "rx.stack"));
	/* the chart shows the overflow row */
	assert_non_null(strstr(t, "-> inf"));
	assert_non_null(strstr(
		t, "retransmits 11 (timeout 4, fast 5, tlp 1, other 1, syn-ack 0, untimed 2, "
		   "unseen 3)"));
	assert_non_null(strstr(t, "evicted 13  lost events 17  unmatched stamps 19  "
				  "failed updates 15  slow requests cut 23  untimed sends 29  "
				  "unseen closes 31"));
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_json_stages_against_samples, setup, teardown),
		cmocka_unit_test_setup_teardown(test_json_overflow_visible, setup, teardown),
		cmocka_unit_test_setup_teardown(test_json_counters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_selection, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_snapshot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drop_reason_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_text, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
