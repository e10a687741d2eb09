// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the stage -> hook table, driven by fabricated kernel capabilities: what
 * a stage needs missing makes it unavailable with a reason that names what is missing,
 * and nothing else is affected. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "collect/kernel_caps.h"
#include "core/stages.h"
#include "lib/util.h"

/* The tracepoints kernel_caps_probe() looks for: a stage needing one outside this list
 * could never be available on any kernel, which the all-available test would show. */
static const char *const all_tps[] = {
	"tcp:tcp_sendmsg_locked",
	"tcp:tcp_probe",
	"tcp:tcp_retransmit_skb",
	"sock:sock_send_length",
	"sock:sock_recv_length",
	"sock:sk_data_ready",
	"sock:inet_sock_set_state",
	"qdisc:qdisc_enqueue",
	"qdisc:qdisc_dequeue",
	"net:net_dev_queue",
	"net:net_dev_start_xmit",
	"net:net_dev_xmit",
	"net:netif_receive_skb",
	"skb:kfree_skb",
	"sched:sched_switch",
	"sched:sched_wakeup",
	"sched:sched_process_exit",
	"net:netif_rx",
	"net:napi_gro_receive_entry",
	"irq:softirq_raise",
	"irq:softirq_entry",
	"napi:napi_poll",
	"skb:consume_skb",
};
#define NTPS ((int)ARRAY_SIZE(all_tps))

static const enum tt_stage tcp_stages[] = {
	STAGE_TX_SENDQ, STAGE_TX_QDISC, STAGE_TX_NIC,  STAGE_TX_ACK,
	STAGE_RX_STACK, STAGE_RX_SOCKQ, STAGE_TCP_RTT, STAGE_TCP_RETRANS,
};
#define NTCP ((int)ARRAY_SIZE(tcp_stages))

static struct kernel_caps caps;

static void caps_all(struct kernel_caps *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->release, sizeof(c->release), "6.8.0-test");
	c->btf = true;
	c->tracefs = true;
	for (int k = 0; k < PK__MAX; k++) {
		c->kinds[k].available = true;
		snprintf(c->kinds[k].detail, sizeof(c->kinds[k].detail), "fired");
	}
	for (int t = 0; t < PT__MAX; t++)
		c->tstamp_cb[t] = true;
	assert_true(NTPS <= CAPS_MAX_TPS);
	for (int i = 0; i < NTPS; i++) {
		c->tps[i].name = all_tps[i];
		c->tps[i].btf = true;
		c->tps[i].tracefs = true;
	}
	c->ntps = NTPS;
}

static struct stage_feed feed(enum tt_stage s)
{
	struct stage_feed f;

	memset(&f, 0x5a, sizeof(f));
	stage_feed_of(&caps, s, &f);
	assert_non_null(f.hook);
	assert_true(f.hook[0] != 0);
	/* why is a string, and empty exactly when the stage is available */
	assert_non_null(memchr(f.why, 0, sizeof(f.why)));
	assert_int_equal(f.available, f.why[0] == 0);
	return f;
}

static void assert_unavailable_because(enum tt_stage s, const char *needle)
{
	struct stage_feed f = feed(s);

	if (f.available)
		fail_msg("%s available, expected unavailable (%s)", stage_info(s)->name, needle);
	if (!strstr(f.why, needle))
		fail_msg("%s: reason \"%s\" does not mention \"%s\"", stage_info(s)->name, f.why,
			 needle);
}

static void assert_available(enum tt_stage s)
{
	struct stage_feed f = feed(s);

	if (!f.available)
		fail_msg("%s unavailable: %s", stage_info(s)->name, f.why);
}

static bool is_tcp(enum tt_stage s)
{
	for (int i = 0; i < NTCP; i++)
		if (tcp_stages[i] == s)
			return true;
	return false;
}

static void test_all_available(void **state)
{
	(void)state;
	caps_all(&caps);
	for (int s = 0; s < STAGE__MAX; s++)
		assert_available(s);
}

/* tx.sendq and tx.ack come from tracepoints (the ring of sends): a kernel without the
 * sockops TX timestamping callbacks (before 6.15) loses no stage. */
static void test_no_tstamp_callbacks_needed(void **state)
{
	(void)state;
	caps_all(&caps);
	caps.kinds[PK_SOCKOPS_TSTAMP].available = false;
	caps.kinds[PK_SOCKOPS_TSTAMP].err = 22;
	snprintf(caps.kinds[PK_SOCKOPS_TSTAMP].detail, sizeof(caps.kinds[0].detail),
		 "BPF_SOCK_OPS_TSTAMP_* callbacks not in this kernel");
	for (int t = 0; t < PT__MAX; t++)
		caps.tstamp_cb[t] = false;
	for (int s = 0; s < STAGE__MAX; s++)
		assert_available(s);
}

/* The send ring's hooks: each one missing takes tx.sendq or tx.ack, named. */
static void test_send_ring_hooks(void **state)
{
	(void)state;
	caps_all(&caps);
	caps.tps[0].btf = false;
	assert_string_equal(caps.tps[0].name, "tcp:tcp_sendmsg_locked");
	assert_unavailable_because(STAGE_TX_SENDQ, "tcp:tcp_sendmsg_locked");
	assert_unavailable_because(STAGE_TX_ACK, "tcp:tcp_sendmsg_locked");
	caps_all(&caps);
	caps.tps[10].btf = false;
	assert_string_equal(caps.tps[10].name, "net:net_dev_start_xmit");
	assert_unavailable_because(STAGE_TX_ACK, "net:net_dev_start_xmit");
	assert_available(STAGE_TX_SENDQ);
	caps_all(&caps);
	caps.tps[3].btf = false;
	assert_string_equal(caps.tps[3].name, "sock:sock_send_length");
	assert_unavailable_because(STAGE_TX_SENDQ, "sock:sock_send_length");
}

static void test_missing_tracepoint_named(void **state)
{
	(void)state;
	caps_all(&caps);
	caps.tps[7].btf = false; /* qdisc:qdisc_enqueue */
	assert_string_equal(caps.tps[7].name, "qdisc:qdisc_enqueue");
	assert_unavailable_because(STAGE_TX_QDISC, "tracepoint qdisc:qdisc_enqueue missing");
	assert_available(STAGE_TX_NIC);
	assert_available(STAGE_TCP_RTT);

	caps_all(&caps);
	caps.tps[1].btf = false; /* tcp:tcp_probe: RTT and receive-side stages */
	assert_unavailable_because(STAGE_TCP_RTT, "tcp:tcp_probe");
	assert_unavailable_because(STAGE_RX_STACK, "tcp:tcp_probe");
	assert_available(STAGE_TX_QDISC);
	assert_available(STAGE_RX_SOCKQ);
}

/* For every tracepoint: taking it away makes unavailable exactly the stages whose reason
 * names it, and every TCP stage needs at least one tracepoint or callback. */
static void test_each_tracepoint_missing(void **state)
{
	int needs[STAGE__MAX] = { 0 };

	(void)state;
	for (int t = 0; t < NTPS; t++) {
		caps_all(&caps);
		caps.tps[t].btf = false;
		for (int s = 0; s < STAGE__MAX; s++) {
			struct stage_feed f = feed(s);

			if (f.available)
				continue;
			needs[s]++;
			if (!strstr(f.why, all_tps[t]))
				fail_msg("%s unavailable without %s, but says \"%s\"",
					 stage_info(s)->name, all_tps[t], f.why);
		}
	}
	for (int s = 0; s < STAGE__MAX; s++)
		if (is_tcp(s) && !needs[s])
			fail_msg("%s needs no tracepoint", stage_info(s)->name);
	/* sched:sched_switch feeds all the scheduler stages */
	caps_all(&caps);
	caps.tps[14].btf = false;
	assert_string_equal(caps.tps[14].name, "sched:sched_switch");
	assert_unavailable_because(STAGE_SCHED_RUNQ, "sched:sched_switch");
	assert_unavailable_because(STAGE_SCHED_ONCPU, "sched:sched_switch");
	assert_unavailable_because(STAGE_SCHED_OFFCPU, "sched:sched_switch");
}

/* A tracepoint only in tracefs (no btf_trace_ type) is no use to tp_btf programs. */
static void test_tracefs_only_is_not_enough(void **state)
{
	(void)state;
	caps_all(&caps);
	caps.tps[12].btf = false; /* net:netif_receive_skb */
	caps.tps[12].tracefs = true;
	assert_unavailable_because(STAGE_RX_STACK, "net:netif_receive_skb");
	/* and one not probed at all is missing: every TCP stage needs one */
	caps_all(&caps);
	caps.ntps = 0;
	for (int i = 0; i < NTCP; i++)
		assert_unavailable_because(tcp_stages[i], "tracepoint");
}

static void test_no_btf(void **state)
{
	(void)state;
	caps_all(&caps);
	caps.btf = false;
	for (int s = 0; s < STAGE__MAX; s++)
		assert_unavailable_because(s, "BTF");
}

static void test_uprobe_missing(void **state)
{
	(void)state;
	caps_all(&caps);
	caps.kinds[PK_UPROBE].available = false;
	snprintf(caps.kinds[PK_UPROBE].detail, sizeof(caps.kinds[0].detail), "EPERM");
	assert_unavailable_because(STAGE_GPU_WAIT, "uprobe unavailable: EPERM");
	assert_unavailable_because(STAGE_RDMA_WR, "uprobe");
	assert_unavailable_because(STAGE_RDMA_CQ_EVENT, "uprobe");
	for (int i = 0; i < NTCP; i++)
		assert_available(tcp_stages[i]);
}

/* Kinds no stage feed depends on (the collector picks among them) change nothing. */
static void test_other_kinds_irrelevant(void **state)
{
	static const enum probe_kind others[] = { PK_RAW_TP, PK_TRACEPOINT,     PK_KPROBE,
						  PK_FENTRY, PK_SOCKOPS_TSTAMP, PK_TC,
						  PK_XDP };

	(void)state;
	caps_all(&caps);
	for (size_t i = 0; i < ARRAY_SIZE(others); i++)
		caps.kinds[others[i]].available = false;
	for (int i = 0; i < NTCP; i++)
		assert_available(tcp_stages[i]);
}

/* A long failure detail still leaves a terminated, bounded reason. */
static void test_long_detail_truncated(void **state)
{
	(void)state;
	caps_all(&caps);
	caps.kinds[PK_UPROBE].available = false;
	memset(caps.kinds[PK_UPROBE].detail, 'x', sizeof(caps.kinds[0].detail) - 1);
	caps.kinds[PK_UPROBE].detail[sizeof(caps.kinds[0].detail) - 1] = 0;
	assert_unavailable_because(STAGE_GPU_WAIT, "uprobe unavailable: xxx");
}

static void test_unknown_stage(void **state)
{
	struct stage_feed f;

	(void)state;
	caps_all(&caps);
	stage_feed_of(&caps, STAGE__MAX, &f);
	assert_false(f.available);
	assert_string_equal(f.hook, "none");
	assert_non_null(strstr(f.why, "no hook"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_available),
		cmocka_unit_test(test_no_tstamp_callbacks_needed),
		cmocka_unit_test(test_send_ring_hooks),
		cmocka_unit_test(test_missing_tracepoint_named),
		cmocka_unit_test(test_each_tracepoint_missing),
		cmocka_unit_test(test_tracefs_only_is_not_enough),
		cmocka_unit_test(test_no_btf),
		cmocka_unit_test(test_uprobe_missing),
		cmocka_unit_test(test_other_kinds_irrelevant),
		cmocka_unit_test(test_long_detail_truncated),
		cmocka_unit_test(test_unknown_stage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
