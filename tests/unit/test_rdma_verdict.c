// SPDX-License-Identifier: GPL-2.0
/* Unit tests of user/rdma/rdma_verdict.c (`explain --rdma`) on built rows: a tail or none,
 * and the evidence that names its class in the documented order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include <cmocka.h>
#include "core/stages.h"
#include "lib/json.h"
#include "rdma/rdma_verdict.h"

#define US 1000ull

static struct rdma_row rows[8];
static struct rdma_read rd;
static struct rdma_verdict_params P;

static int setup(void **state)
{
	(void)state;
	memset(rows, 0, sizeof(rows));
	memset(&rd, 0, sizeof(rd));
	rd.rows = rows;
	rdma_verdict_params__default(&P);
	return 0;
}

/* A row of the window: n values from lo, each step ns more. */
static struct rdma_row *row(__u16 stage, __u32 qpn, __u8 op, __u8 status)
{
	struct rdma_row *r = &rows[rd.nrows++];

	r->key.stage = stage;
	r->key.tgid = 42;
	r->key.qpn = qpn;
	r->key.peer_qpn = qpn + 1;
	r->key.opcode = op;
	r->key.status = status;
	return r;
}

static void fill(struct rdma_row *r, unsigned int n, __u64 lo, __u64 step)
{
	for (unsigned int i = 0; i < n; i++)
		hist_record(&r->win, lo + i * step);
}

/* 1000 work requests around 100 us on QP 0x10, and a slow 3 % at 2 ms on QP 0x20 */
static void tail_of_qp20(void)
{
	fill(row(STAGE_RDMA_WR, 0x10, IBV_WC_RDMA_WRITE, 0), 970, 90 * US, 20);
	fill(row(STAGE_RDMA_WR, 0x20, IBV_WC_RDMA_WRITE, 0), 30, 2000 * US, 1000);
}

static struct rdma_window_call call_of(enum rdma_call c, __u64 cong, __u64 trans)
{
	struct rdma_window_call w = {
		.call = c, .congestion_events = cong, .transport_events = trans, .nev = 1
	};

	snprintf(w.ev[0].name, sizeof(w.ev[0].name), "%s",
		 cong >= trans ? "np_cnp_sent" : "packet_seq_err");
	w.ev[0].delta = cong >= trans ? cong : trans;
	return w;
}

static void test_no_tail(void **state)
{
	struct rdma_window_call c = call_of(RDMA_CALL_CONGESTION, 500, 0);
	struct rdma_verdict v;

	(void)state;
	fill(row(STAGE_RDMA_WR, 0x10, IBV_WC_SEND, 0), 1000, 90 * US, 20);
	assert_true(rdma_verdict_judge(&rd, false, RDMA_FAM_VERBS, &c, &P, &v));
	/* counters rising without a tail are no verdict: nothing was slow */
	assert_int_equal(v.cls, VERDICT_NONE);
	assert_false(v.tail);
	assert_int_equal(v.count, 1000);
	assert_non_null(strstr(v.rule, "no tail"));
}

static void test_congestion_names_the_qp(void **state)
{
	struct rdma_window_call c = call_of(RDMA_CALL_CONGESTION, 500, 0);
	struct rdma_verdict v;

	(void)state;
	tail_of_qp20();
	assert_true(rdma_verdict_judge(&rd, false, RDMA_FAM_VERBS, &c, &P, &v));
	assert_true(v.tail);
	assert_int_equal(v.cls, VERDICT_CONGESTION);
	assert_non_null(strstr(v.where, "qp 0x20"));
	assert_non_null(strstr(v.where, "RDMA_WRITE"));
	assert_int_equal(v.where_tail, v.tail_total);
	assert_non_null(strstr(v.rule, "np_cnp_sent +500"));
}

static void test_retry_failures_are_transport(void **state)
{
	struct rdma_window_call c = call_of(RDMA_CALL_CONGESTION, 500, 0);
	struct rdma_verdict v;

	(void)state;
	tail_of_qp20();
	fill(row(STAGE_RDMA_WR, 0x20, IBV_WC_RDMA_WRITE, IBV_WC_RETRY_EXC_ERR), 3, 50000 * US, 0);
	fill(row(STAGE_RDMA_WR, 0x10, IBV_WC_RDMA_WRITE, IBV_WC_WR_FLUSH_ERR), 7, 10 * US, 0);
	assert_true(rdma_verdict_judge(&rd, false, RDMA_FAM_VERBS, &c, &P, &v));
	assert_int_equal(v.cls, VERDICT_TRANSPORT);
	assert_int_equal(v.failed, 10);
	assert_int_equal(v.retry_failed, 3);
	/* failed completions are not in the latency figures */
	assert_int_equal(v.count, 1000);
}

static void test_flush_errors_are_not_transport(void **state)
{
	struct rdma_verdict v;

	(void)state;
	tail_of_qp20();
	fill(row(STAGE_RDMA_WR, 0x10, IBV_WC_RDMA_WRITE, IBV_WC_WR_FLUSH_ERR), 7, 10 * US, 0);
	fill(row(STAGE_RDMA_WR, 0x10, IBV_WC_RDMA_WRITE, IBV_WC_REM_ACCESS_ERR), 2, 10 * US, 0);
	assert_true(rdma_verdict_judge(&rd, false, RDMA_FAM_VERBS, NULL, &P, &v));
	assert_int_equal(v.retry_failed, 0);
	assert_int_equal(v.cls, VERDICT_UNATTRIBUTED);
	assert_non_null(strstr(v.rule, "no RDMA device"));
}

static void test_slow_waiters_are_compute(void **state)
{
	struct rdma_window_call c = call_of(RDMA_CALL_CONGESTION, 500, 0);
	struct rdma_verdict v;

	(void)state;
	tail_of_qp20();
	/* the waiters' p99 wake-up is most of the 2 ms excess: measured time comes first */
	fill(row(STAGE_RDMA_CQ_EVENT, 7, 0, 0), 90, 20 * US, 0);
	fill(row(STAGE_RDMA_CQ_EVENT, 7, 0, 0), 10, 1500 * US, 0);
	assert_true(rdma_verdict_judge(&rd, false, RDMA_FAM_VERBS, &c, &P, &v));
	assert_int_equal(v.cls, VERDICT_COMPUTE);
	assert_true(v.wake_share >= 0.5);
	assert_int_equal(v.wake_count, 100);
}

static void test_small_wakeup_yields_to_counters(void **state)
{
	struct rdma_window_call c = call_of(RDMA_CALL_CONGESTION, 500, 0);
	struct rdma_verdict v;

	(void)state;
	tail_of_qp20();
	fill(row(STAGE_RDMA_CQ_EVENT, 7, 0, 0), 100, 700 * US, 0); /* ~1/3 of the excess */
	assert_true(rdma_verdict_judge(&rd, false, RDMA_FAM_VERBS, &c, &P, &v));
	assert_int_equal(v.cls, VERDICT_CONGESTION);
	/* without the counters, the same wake-up is the evidence */
	assert_true(rdma_verdict_judge(&rd, false, RDMA_FAM_VERBS, NULL, &P, &v));
	assert_int_equal(v.cls, VERDICT_COMPUTE);
}

static void test_both_calls_take_the_larger(void **state)
{
	struct rdma_window_call c = call_of(RDMA_CALL_BOTH, 20, 300);
	struct rdma_verdict v;

	(void)state;
	tail_of_qp20();
	assert_true(rdma_verdict_judge(&rd, false, RDMA_FAM_VERBS, &c, &P, &v));
	assert_int_equal(v.cls, VERDICT_TRANSPORT);
	c = call_of(RDMA_CALL_BOTH, 300, 20);
	assert_true(rdma_verdict_judge(&rd, false, RDMA_FAM_VERBS, &c, &P, &v));
	assert_int_equal(v.cls, VERDICT_CONGESTION);
}

static void test_few_transfers(void **state)
{
	struct rdma_verdict v;

	(void)state;
	fill(row(STAGE_RDMA_WR, 0x10, IBV_WC_SEND, 0), 5, 90 * US, 100 * US);
	assert_true(rdma_verdict_judge(&rd, false, RDMA_FAM_VERBS, NULL, &P, &v));
	assert_int_equal(v.cls, VERDICT_NONE);
	assert_non_null(strstr(v.rule, "needs >= 20"));
}

static void test_ucx_apart_from_verbs(void **state)
{
	struct rdma_window_call c = call_of(RDMA_CALL_TRANSPORT, 0, 40);
	struct rdma_verdict v;
	struct rdma_row *slow;

	(void)state;

	fill(row(STAGE_RDMA_UCX, 0x1000, 2 /* GET */, 0), 980, 15 * US, 5);
	slow = row(STAGE_RDMA_UCX, 0x2000, 2, 0);
	slow->key.peer_qpn = 0x7f; /* an endpoint's address: high word in peer_qpn */
	fill(slow, 20, 400 * US, 100);
	/* no verbs transfer: nothing to say about verbs */
	assert_false(rdma_verdict_judge(&rd, false, RDMA_FAM_VERBS, &c, &P, &v));
	assert_true(rdma_verdict_judge(&rd, false, RDMA_FAM_UCX, &c, &P, &v));
	assert_int_equal(v.cls, VERDICT_TRANSPORT);
	assert_non_null(strstr(v.where, "ep 0x7f00002000 GET"));
}

static void test_totals_and_json(void **state)
{
	struct rdma_window_call c = call_of(RDMA_CALL_CONGESTION, 500, 0);
	struct json_writer w;
	struct rdma_verdict v;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	tail_of_qp20();
	/* the window is empty when the totals are asked for: they decide */
	for (size_t i = 0; i < rd.nrows; i++) {
		rows[i].total = rows[i].win;
		memset(&rows[i].win, 0, sizeof(rows[i].win));
	}
	assert_false(rdma_verdict_judge(&rd, false, RDMA_FAM_VERBS, &c, &P, &v));
	assert_true(rdma_verdict_judge(&rd, true, RDMA_FAM_VERBS, &c, &P, &v));
	assert_int_equal(v.cls, VERDICT_CONGESTION);
	f = open_memstream(&buf, &len);
	jw_init(&w, f, false);
	jw_array_begin(&w, NULL);
	rdma_verdict__print_json(&v, &w);
	jw_array_end(&w);
	jw_finish(&w);
	fclose(f);
	assert_non_null(strstr(buf, "\"class\":\"congestion\""));
	assert_non_null(strstr(buf, "\"family\":\"verbs\""));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_no_tail, setup),
		cmocka_unit_test_setup(test_congestion_names_the_qp, setup),
		cmocka_unit_test_setup(test_retry_failures_are_transport, setup),
		cmocka_unit_test_setup(test_flush_errors_are_not_transport, setup),
		cmocka_unit_test_setup(test_slow_waiters_are_compute, setup),
		cmocka_unit_test_setup(test_small_wakeup_yields_to_counters, setup),
		cmocka_unit_test_setup(test_both_calls_take_the_larger, setup),
		cmocka_unit_test_setup(test_few_transfers, setup),
		cmocka_unit_test_setup(test_ucx_apart_from_verbs, setup),
		cmocka_unit_test_setup(test_totals_and_json, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
