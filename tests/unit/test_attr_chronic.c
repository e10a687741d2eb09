// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the chronic question (issue 22): faults that slow every request alike (a
 * standing queue, steady CPU contention, persistent loss, a standing queue seen only as
 * RTT inflation by a client whose flows opened behind it) must not be `none`; the p99
 * split, the path floor and where it came from; the thresholds; both questions at once. */
#include "attr_fixtures.h"
#include "lib/util.h"

static const char *vstage(const struct attr_report *r)
{
	return r->tail.verdict.has_part ? attr_part_info(r->tail.verdict.part)->stage : "";
}

/* n server requests, each with what `fill` adds to it. */
static struct attr_agg *servers(int n, __u64 seed, void (*fill)(struct gen *, struct srv_req *))
{
	struct attr_agg *a = attr_agg__new();
	struct gen g = { seed };
	struct req_event ev;

	for (int i = 0; i < n; i++) {
		struct srv_req x = { 0 };

		fill(&g, &x);
		server_event(&g, &ev, i, 1000 * MS + (__u64)i * MS, &x);
		attr_agg__add(a, &ev);
	}
	return a;
}

/* a bulk neighbour keeps the bottleneck's buffer full: every response waits 15-19 ms */
static void standing_queue(struct gen *g, struct srv_req *x)
{
	x->qdisc = uni(g, 15 * MS, 19 * MS);
}

static void standing_queue_small(struct gen *g, struct srv_req *x)
{
	x->qdisc = uni(g, 300 * US, 500 * US);
}

/* the standing queue, and 2% of requests 50 ms slower in the application */
static void standing_queue_and_spikes(struct gen *g, struct srv_req *x)
{
	x->qdisc = uni(g, 15 * MS, 19 * MS);
	if (urand(g) < 0.02)
		x->oncpu = jit(g, 50 * MS, 0.05);
}

/* hogs on the serving core all the time: every request waits for the CPU */
static void steady_hogs(struct gen *g, struct srv_req *x)
{
	x->cpu = 1;
	x->runq = uni(g, 1 * MS, 4 * MS);
	x->runq_mid = uni(g, 0, 2 * MS);
}

/* a lossy busy link: every response loses a segment, fast retransmit a few ms later */
static void persistent_loss(struct gen *g, struct srv_req *x)
{
	x->retrans_n = 1;
	x->retrans = uni(g, 3 * MS, 6 * MS);
}

static void expect_chronic(struct attr_agg *a, enum attr_verdict_class v, const char *stage,
			   const char *where, const char *phrase)
{
	struct attr_report r;

	analyze(a, &r);
	if (getenv("TT_SHOW_REPORTS"))
		attr_report__print_text(&r, stderr);
	if (r.tail.verdict.class != v || strcmp(vstage(&r), stage) ||
	    r.tail.verdict.kind != VERDICT_KIND_CHRONIC ||
	    r.tail.verdict.episodic != VERDICT_NONE || !strstr(r.tail.verdict.where, where) ||
	    !strstr(r.tail.verdict.summary, phrase)) {
		attr_report__print_text(&r, stderr);
		fail_msg("verdict %s (%s) %s at '%s'", attr_verdict_name(r.tail.verdict.class),
			 attr_verdict_kind_name(r.tail.verdict.kind), vstage(&r),
			 r.tail.verdict.where);
	}
	assert_true(r.chronic.found);
	assert_non_null(strstr(r.tail.verdict.rule, "chronic: "));
	assert_non_null(strstr(r.tail.verdict.rule, "episodic: tail mean"));
	attr_agg__free(a);
}

static void test_standing_queue(void **state)
{
	struct attr_agg *a = servers(20000, 1, standing_queue);
	struct attr_report r;

	(void)state;
	analyze(a, &r);
	/* the p99 request: ~17 ms waiting in congestion, the floor tens of microseconds, the
	 * work the ~1 ms service */
	assert_true(r.tail.budget.wait_ns[ATTR_CONGESTION] > 15 * MS);
	assert_true(r.tail.budget.floor_ns < 100 * US);
	assert_true(r.tail.budget.work_ns > 0.9 * MS && r.tail.budget.work_ns < 2 * MS);
	assert_true(r.median.budget.wait_ns[ATTR_CONGESTION] > 15 * MS);
	assert_true(r.chronic.part_median_ns > 16 * MS && r.chronic.part_median_ns < 18 * MS);
	assert_non_null(strstr(r.tail.verdict.summary, "every request waits ~17."));
	attr_agg__free(a);
	expect_chronic(servers(20000, 2, standing_queue), VERDICT_CONGESTION, "tx.qdisc",
		       "dev tt-srv-eth0 qdisc 1:0 (netns 4026532001)",
		       "standing queue: every request waits ~");
}

static void test_steady_cpu(void **state)
{
	(void)state;
	expect_chronic(servers(20000, 3, steady_hogs), VERDICT_COMPUTE, "sched.runq",
		       "pid 100 (server) on cpu 1", "steady CPU contention: every request waits");
}

static void test_persistent_loss(void **state)
{
	(void)state;
	expect_chronic(servers(20000, 4, persistent_loss), VERDICT_TRANSPORT, "tcp.retrans",
		       "dev tt-srv-eth0", "persistent loss: every request waits");
}

/* Below the thresholds a standing wait is the path's normal state: none. */
static void test_small_standing_wait(void **state)
{
	struct attr_agg *a = servers(20000, 5, standing_queue_small);
	struct attr_report r;

	(void)state;
	analyze(a, &r);
	assert_int_equal(r.tail.verdict.class, VERDICT_NONE);
	assert_int_equal(r.tail.verdict.kind, VERDICT_KIND_NONE);
	assert_false(r.chronic.found);
	assert_non_null(strstr(r.chronic.rule, "no chronic fault"));
	attr_agg__free(a);
}

/* Both questions find a fault: the one that explains more of the p99's time names it. */
static void test_both(void **state)
{
	struct attr_agg *a = servers(20000, 6, standing_queue_and_spikes);
	struct attr_report r;

	(void)state;
	analyze(a, &r);
	assert_int_equal(r.tail.verdict.kind, VERDICT_KIND_BOTH);
	assert_int_equal(r.tail.verdict.episodic, VERDICT_COMPUTE);
	assert_int_equal(r.tail.verdict.class, VERDICT_COMPUTE);
	assert_string_equal(vstage(&r), "sched.oncpu");
	assert_non_null(strstr(r.tail.verdict.summary, "besides, standing queue"));
	attr_agg__free(a);
}

/* A client whose flows opened behind a standing queue on the server's egress: their own
 * min_rtt is 5 ms, one flow opened before it saw 60 us. The base RTT is the path's lowest
 * and the rest of the round trip is congestion, not transport. */
static struct attr_agg *client_behind_queue(bool one_clean_flow)
{
	struct attr_agg *a = attr_agg__new();
	struct gen g = { 77 };
	struct req_event ev;

	for (int i = 0; i < 5000; i++) {
		__u64 q = uni(&g, 15 * MS, 19 * MS);

		client_event(&g, &ev, i, 1000 * MS + (__u64)i * MS, 0);
		ev.min_rtt_ns = one_clean_flow && i % 16 == 0 ? 60 * US : 5 * MS;
		ev.srtt_ns = 60 * US + q;
		ev.first_resp_ns += q;
		ev.end_ns += q;
		ev.stage_ns[STAGE_SCHED_OFFCPU] += q;
		attr_agg__add(a, &ev);
	}
	return a;
}

static void test_client_floor(void **state)
{
	struct attr_agg *a = client_behind_queue(true);
	struct attr_report r;

	(void)state;
	analyze(a, &r);
	assert_int_equal(r.role, ROLE_CLIENT);
	assert_int_equal(r.tail.verdict.class, VERDICT_CONGESTION);
	assert_int_equal(r.tail.verdict.kind, VERDICT_KIND_CHRONIC);
	assert_string_equal(vstage(&r), "tcp.rtt");
	assert_true(r.floor.known);
	assert_true(r.floor.rtt_ns == 60 * US);
	assert_true(r.floor.own_min_ns > 4 * MS);
	assert_non_null(strstr(r.floor.source, "lowest RTT (60 us) seen on flow :41000"));
	/* the base part is the path's floor, the inflation is congestion */
	assert_true(r.median.part_mean_ns[PART_RTT_BASE] < 100 * US);
	assert_true(r.median.part_mean_ns[PART_RTT_QUEUE] > 14 * MS);
	assert_non_null(strstr(r.tail.verdict.summary, "standing queue on the path"));
	attr_agg__free(a);

	/* without the clean flow the floor is the flows' 5 ms: still chronic congestion for
	 * the rest, and the floor says where it came from */
	a = client_behind_queue(false);
	analyze(a, &r);
	assert_true(r.floor.rtt_ns == 5 * MS);
	assert_int_equal(r.tail.verdict.class, VERDICT_CONGESTION);
	attr_agg__free(a);
}

/* Path floors merge by taking the lower, like adding both populations. */
static void test_floor_merge(void **state)
{
	struct attr_agg *a = client_behind_queue(false), *b = client_behind_queue(true);
	struct attr_report r;

	(void)state;
	attr_agg__merge(a, b);
	analyze(a, &r);
	assert_true(r.floor.rtt_ns == 60 * US);
	assert_int_equal(r.floor.reqs, 10000);
	attr_agg__free(a);
	attr_agg__free(b);
}

/* Both ends on one host, a standing queue on the client's egress: every request waits
 * ~20 ms before it leaves the client; the server sees none of it (its clock starts at the
 * arrival) but has a tail of its own. The client's view is the one that explains. */
static void test_client_egress_queue(void **state)
{
	struct attr_agg *a = attr_agg__new();
	struct gen g = { 11 };
	struct attr_report r;

	(void)state;
	for (int i = 0; i < 5000; i++) {
		struct req_event sev, cev;
		struct srv_req x = { 0 };
		__u64 q = uni(&g, 18 * MS, 22 * MS);

		if (urand(&g) < 0.02)
			x.offcpu = jit(&g, 15 * MS, 0.1);
		server_event(&g, &sev, i, 1000 * MS, &x);
		client_event(&g, &cev, i, 1000 * MS, 0);
		cev.stage_ns[STAGE_TX_QDISC] += q;
		cev.first_resp_ns += q;
		cev.end_ns += q;
		attr_agg__add(a, &sev);
		attr_agg__add(a, &cev);
	}
	analyze(a, &r);
	assert_int_equal(r.role, ROLE_CLIENT);
	assert_int_equal(r.tail.verdict.class, VERDICT_CONGESTION);
	assert_string_equal(vstage(&r), "tx.qdisc");
	assert_non_null(strstr(r.role_rule, "own send path"));
	attr_agg__free(a);
}

static void test_json(void **state)
{
	static const char *const keys[] = {
		"\"verdict\":{\"class\":\"congestion\",\"kind\":\"chronic\",\"episodic\":\"none\"",
		"\"tail\":{",
		"\"split\":{\"floor_us\":",
		"\"waiting_us\":{\"compute\":",
		"\"floor\":{\"rtt_us\":60,",
		"\"chronic\":{\"found\":true,\"class\":\"congestion\",\"stage\":\"tx.qdisc\"",
		"\"evidence\":\"",
	};
	struct attr_agg *a = servers(5000, 9, standing_queue);
	struct attr_report r;
	struct json_writer w;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	analyze(a, &r);
	f = open_memstream(&buf, &len);
	jw_init(&w, f, false);
	jw_object_begin(&w, NULL);
	attr_report__print_json(&r, &w);
	jw_object_end(&w);
	jw_finish(&w);
	fclose(f);
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (!strstr(buf, keys[i]))
			fail_msg("missing %s in %s", keys[i], buf);
	free(buf);
	attr_agg__free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_standing_queue),
		cmocka_unit_test(test_steady_cpu),
		cmocka_unit_test(test_persistent_loss),
		cmocka_unit_test(test_small_standing_wait),
		cmocka_unit_test(test_both),
		cmocka_unit_test(test_client_floor),
		cmocka_unit_test(test_floor_merge),
		cmocka_unit_test(test_client_egress_queue),
		cmocka_unit_test(test_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
