// SPDX-License-Identifier: GPL-2.0
/* Unit tests of one request's split into parts: the parts sum to the latency exactly, and
 * each claim rule gives the time to the part docs/attribution.md says. */
#include "attr_fixtures.h"

/* ---- the per-request partition ---- */

static __u64 sum_parts(const struct attr_split *s)
{
	__u64 t = 0, c = 0;

	for (int p = 0; p < ATTR_PARTS; p++)
		t += s->part_ns[p];
	for (int k = 0; k < ATTR_CLASSES; k++)
		c += s->class_ns[k];
	assert_int_equal(t, c);
	return t;
}

static void test_partition_sums_to_latency(void **state)
{
	struct gen g = { 7 };

	(void)state;
	for (int i = 0; i < 200000; i++) {
		struct req_event ev;
		struct attr_split s;
		__u64 L;
		int shape = (int)(rnd(&g) % 4);

		memset(&ev, 0, sizeof(ev));
		ev.role = (__u8)(rnd(&g) % 4); /* includes an unknown role */
		ev.start_ns = rnd(&g) >> (shape == 3 ? 0 : 20);
		L = shape == 0 ? rnd(&g) % (100 * MS) : rnd(&g) >> (rnd(&g) % 64);
		ev.end_ns = shape == 2 ? ev.start_ns - (rnd(&g) % 10) : ev.start_ns + L;
		ev.first_resp_ns = rnd(&g) % 3 ? ev.start_ns + modn(rnd(&g), L + 2) : rnd(&g);
		for (int k = 0; k < TT_REQ_STAGES; k++)
			ev.stage_ns[k] =
				rnd(&g) % 3 ? modn(rnd(&g), L + 1) : rnd(&g) >> (rnd(&g) % 64);
		ev.srtt_ns = rnd(&g) >> (rnd(&g) % 64);
		ev.min_rtt_ns = rnd(&g) % 2 ? rnd(&g) >> (rnd(&g) % 64) : 0;
		ev.drops = (__u32)(rnd(&g) % 2);
		ev.ecn_ce = (__u32)(rnd(&g) % 2);
		ev.retrans = (__u32)(rnd(&g) % 2);
		attr_split_request(&ev, &s);
		L = ev.end_ns > ev.start_ns ? ev.end_ns - ev.start_ns : 0;
		assert_int_equal(s.latency_ns, L);
		assert_int_equal(sum_parts(&s), L);
	}
}

static void test_split_server_phases(void **state)
{
	struct req_event ev;
	struct attr_split s;

	(void)state;
	/* server: gpu.wait counted once, inside sched.offcpu; the service remainder is
	 * compute (app.other); the response's qdisc wins over the thread waiting */
	memset(&ev, 0, sizeof(ev));
	ev.role = ROLE_SERVER;
	ev.start_ns = 1000;
	ev.first_resp_ns = ev.start_ns + 10 * MS;
	ev.end_ns = ev.first_resp_ns + 5 * MS;
	ev.stage_ns[STAGE_SCHED_OFFCPU] = 6 * MS + 5 * MS;
	ev.stage_ns[STAGE_GPU_WAIT] = 4 * MS;
	ev.stage_ns[STAGE_SCHED_ONCPU] = 2 * MS;
	ev.stage_ns[STAGE_TX_QDISC] = 4 * MS;
	attr_split_request(&ev, &s);
	assert_int_equal(s.part_ns[PART_GPU_WAIT], 4 * MS);
	assert_int_equal(s.part_ns[PART_SCHED_ONCPU], 2 * MS);
	/* off-CPU time cannot be placed in time: the service takes what it can */
	assert_int_equal(s.part_ns[PART_SCHED_OFFCPU], 4 * MS + 1 * MS);
	assert_int_equal(s.part_ns[PART_APP_OTHER], 0);
	assert_int_equal(s.part_ns[PART_TX_QDISC], 4 * MS);
	assert_int_equal(s.class_ns[ATTR_COMPUTE], 11 * MS);
	assert_int_equal(s.class_ns[ATTR_CONGESTION], 4 * MS);
	assert_int_equal(s.ttft_ns, 10 * MS);
	/* a service no thread stage covers (another thread did the work) is compute; an
	 * uncovered response is not */
	memset(ev.stage_ns, 0, sizeof(ev.stage_ns));
	ev.stage_ns[STAGE_TX_QDISC] = 4 * MS;
	attr_split_request(&ev, &s);
	assert_int_equal(s.part_ns[PART_APP_OTHER], 10 * MS);
	assert_int_equal(s.part_ns[PART_UNCOVERED], 1 * MS);
	assert_int_equal(s.class_ns[ATTR_UNATTRIBUTED], 1 * MS);
}

static void test_split_sendq_loss(void **state)
{
	struct req_event ev;
	struct attr_split s;

	(void)state;
	/* a send queue held back while TCP recovers from a loss is transport; with queue
	 * evidence (drops at a standing queue, or ECN CE), or without any loss, congestion */
	memset(&ev, 0, sizeof(ev));
	ev.role = ROLE_SERVER;
	ev.start_ns = 1000;
	ev.first_resp_ns = ev.start_ns + 1 * MS;
	ev.end_ns = ev.first_resp_ns + 210 * MS;
	ev.stage_ns[STAGE_TX_SENDQ] = 200 * MS;
	ev.stage_ns[STAGE_TCP_RETRANS] = 205 * MS;
	ev.retrans = 1;
	ev.retrans_rto = 1;
	attr_split_request(&ev, &s);
	assert_false(s.retrans_congestion);
	assert_int_equal(s.part_ns[PART_TX_SENDQ], 0);
	assert_int_equal(s.part_ns[PART_RETRANS_LOSS] + s.part_ns[PART_TX_SENDQ_LOSS], 210 * MS);
	assert_int_equal(s.class_ns[ATTR_CONGESTION], 0);
	ev.ecn_ce = 1;
	attr_split_request(&ev, &s);
	assert_true(s.retrans_congestion);
	assert_int_equal(s.part_ns[PART_TX_SENDQ_LOSS], 0);
	assert_int_equal(s.class_ns[ATTR_TRANSPORT], 0);
	ev.ecn_ce = 0;
	ev.retrans = 0;
	ev.retrans_rto = 0;
	ev.stage_ns[STAGE_TCP_RETRANS] = 0;
	attr_split_request(&ev, &s);
	assert_int_equal(s.part_ns[PART_TX_SENDQ], 200 * MS);
	assert_int_equal(s.part_ns[PART_TX_SENDQ_LOSS], 0);
}

static void test_split_runq_over_sockq(void **state)
{
	struct req_event ev;
	struct attr_split s;

	(void)state;
	/* runq overlapping rx.sockq is named runq */
	memset(&ev, 0, sizeof(ev));
	ev.start_ns = 1;
	ev.first_resp_ns = 1 + 10 * MS;
	ev.end_ns = ev.first_resp_ns;
	ev.stage_ns[STAGE_RX_SOCKQ] = 9 * MS;
	ev.stage_ns[STAGE_SCHED_RUNQ] = 8 * MS;
	ev.stage_ns[STAGE_SCHED_ONCPU] = 1 * MS;
	attr_split_request(&ev, &s);
	assert_int_equal(s.part_ns[PART_SCHED_RUNQ], 8 * MS);
	assert_int_equal(s.part_ns[PART_SCHED_ONCPU], 1 * MS);
	assert_int_equal(s.part_ns[PART_RX_SOCKQ], 1 * MS);
}

static void test_split_clamped(void **state)
{
	struct req_event ev;
	struct attr_split s;

	(void)state;
	/* stage sums beyond the wall time (summed over packets) are clamped */
	memset(&ev, 0, sizeof(ev));
	ev.start_ns = 1;
	ev.end_ns = 1 + 3 * MS;
	ev.stage_ns[STAGE_TX_QDISC] = 50 * MS;
	attr_split_request(&ev, &s);
	assert_int_equal(s.part_ns[PART_TX_QDISC], 3 * MS);
	assert_int_equal(s.part_ns[PART_UNCOVERED], 0);
}

static void test_split_retrans_class(void **state)
{
	struct req_event ev;
	struct attr_split s;

	(void)state;
	/* retransmission classing */
	memset(&ev, 0, sizeof(ev));
	ev.start_ns = 1;
	ev.end_ns = 1 + 300 * MS;
	ev.retrans = 1;
	ev.stage_ns[STAGE_TCP_RETRANS] = 200 * MS;
	ev.min_rtt_ns = 100 * US;
	ev.srtt_ns = 150 * US;
	attr_split_request(&ev, &s);
	assert_false(s.retrans_congestion);
	assert_int_equal(s.part_ns[PART_RETRANS_LOSS], 200 * MS);
	ev.drops = 1; /* a drop without a standing queue: still a lossy path */
	attr_split_request(&ev, &s);
	assert_false(s.retrans_congestion);
	ev.srtt_ns = 5 * MS; /* ... with the RTT inflated by a queue: congestion */
	attr_split_request(&ev, &s);
	assert_true(s.retrans_congestion);
	assert_int_equal(s.part_ns[PART_RETRANS_QUEUE], 200 * MS);
	ev.srtt_ns = 150 * US;
	ev.stage_ns[STAGE_TX_QDISC] = 2 * MS; /* ... or by its own qdisc sojourn */
	attr_split_request(&ev, &s);
	assert_true(s.retrans_congestion);
	ev.drops = 0;
	ev.stage_ns[STAGE_TX_QDISC] = 0;
	ev.ecn_ce = 3; /* CE marks come only from an AQM queue */
	attr_split_request(&ev, &s);
	assert_true(s.retrans_congestion);
}

static void test_split_client_rtt(void **state)
{
	struct req_event ev;
	struct attr_split s;

	(void)state;
	/* client: base RTT transport, inflation congestion (less our own qdisc), the rest
	 * of the wait is the unseen peer; offcpu while waiting is not compute */
	memset(&ev, 0, sizeof(ev));
	ev.role = ROLE_CLIENT;
	ev.start_ns = 1;
	ev.first_resp_ns = 1 + 10 * MS;
	ev.end_ns = ev.first_resp_ns + 4 * MS;
	ev.min_rtt_ns = 1 * MS;
	ev.srtt_ns = 4 * MS;
	ev.stage_ns[STAGE_TX_QDISC] = 1 * MS;
	ev.stage_ns[STAGE_RX_SOCKQ] = 3 * MS;
	ev.stage_ns[STAGE_SCHED_OFFCPU] = 13 * MS;
	attr_split_request(&ev, &s);
	assert_int_equal(s.part_ns[PART_TX_QDISC], 1 * MS);
	assert_int_equal(s.part_ns[PART_RTT_BASE], 1 * MS);
	assert_int_equal(s.part_ns[PART_RTT_QUEUE], 2 * MS);
	assert_int_equal(s.part_ns[PART_REMOTE], 6 * MS + 1 * MS);
	assert_int_equal(s.part_ns[PART_RX_SOCKQ], 3 * MS);
	assert_int_equal(s.part_ns[PART_SCHED_OFFCPU], 0);
	assert_int_equal(s.class_ns[ATTR_UNATTRIBUTED], 7 * MS);
}

/* ---- the parts' table against the stage catalogue ---- */

/* A part named after a stage carries the catalogue's name, a residual none; every stage of a
 * request's time (before the RDMA stages, not a request total) is some part's, but tx.ack,
 * whose time the RTT parts carry; the component classes are named as the catalogue's. */
static void test_parts_follow_catalogue(void **state)
{
	bool has_part[STAGE__MAX] = { false };

	(void)state;
	for (int p = 0; p < ATTR_PARTS; p++) {
		const struct attr_part_info *pi = attr_part_info(p);

		assert_non_null(pi->stage);
		assert_true((unsigned)pi->class < ATTR_CLASSES);
		if (pi->stage_id < 0) {
			if (stage_by_name(pi->stage) >= 0)
				fail_msg("residual part %d is named as the stage %s", p, pi->stage);
			continue;
		}
		assert_string_equal(pi->stage, stage_info(pi->stage_id)->name);
		has_part[pi->stage_id] = true;
	}
	for (int s = 0; s < TT_REQ_STAGES; s++)
		if (!has_part[s] && s != STAGE_TX_ACK && stage_info(s)->class != CLASS_REQUEST)
			fail_msg("request stage %s is no part of attribution (attribution.h)",
				 stage_info(s)->name);
	for (int c = 0; c < ATTR_UNATTRIBUTED; c++)
		assert_string_equal(attr_class_name(c), class_name(c));
	assert_string_equal(attr_class_name(ATTR_UNATTRIBUTED), "unattributed");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_partition_sums_to_latency),
		cmocka_unit_test(test_split_server_phases),
		cmocka_unit_test(test_split_sendq_loss),
		cmocka_unit_test(test_split_runq_over_sockq),
		cmocka_unit_test(test_split_clamped),
		cmocka_unit_test(test_split_retrans_class),
		cmocka_unit_test(test_split_client_rtt),
		cmocka_unit_test(test_parts_follow_catalogue),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
