// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the feed choice (user/collect/feeds.c), driven by made-up kernels: each
 * event goes through the cheapest feed the kernel has (tracepoint, fentry/fexit, kprobe), a
 * stage whose events have no feed left is unavailable with a reason naming what is
 * missing, and the kernels of the matrix (5.10, 6.1, 6.12) keep every TCP stage. */
#include <errno.h>
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

static const enum tt_stage tcp_stages[] = {
	STAGE_TX_SENDQ, STAGE_TX_QDISC, STAGE_TX_NIC,  STAGE_TX_ACK,
	STAGE_RX_STACK, STAGE_RX_SOCKQ, STAGE_TCP_RTT, STAGE_TCP_RETRANS,
};
#define NTCP ((int)ARRAY_SIZE(tcp_stages))

static struct kernel_caps caps;

static struct tp_need *tp(const char *name)
{
	for (int i = 0; i < caps.ntps; i++)
		if (!strcmp(caps.tps[i].name, name))
			return &caps.tps[i];
	fail_msg("tracepoint %s is in no catalogue row", name);
	return NULL;
}

static struct fn_need *fn(const char *name)
{
	for (int i = 0; i < caps.nfns; i++)
		if (!strcmp(caps.fns[i].name, name))
			return &caps.fns[i];
	fail_msg("function %s is in no catalogue row", name);
	return NULL;
}

static void tp_set(const char *name, bool present, int nargs)
{
	tp(name)->btf = present;
	tp(name)->nargs = present ? nargs : -1;
}

static void kind_off(enum probe_kind k, const char *detail)
{
	caps.kinds[k].available = false;
	snprintf(caps.kinds[k].detail, sizeof(caps.kinds[k].detail), "%s", detail);
}

/* The newest kernel: every tracepoint with as many arguments as the richest program reads,
 * every function with today's prototype, every hook kind and helper. */
static void caps_all(struct kernel_caps *c)
{
	const struct feed_row *rows = feed_rows();

	memset(c, 0, sizeof(*c));
	snprintf(c->release, sizeof(c->release), "7.3.0-test");
	c->btf = true;
	c->tracefs = true;
	c->kfunc_rdonly_cast = true;
	for (int k = 0; k < PK__MAX; k++) {
		c->kinds[k].available = true;
		snprintf(c->kinds[k].detail, sizeof(c->kinds[k].detail), "fired");
	}
	for (int f = 0; f < PFEAT__MAX; f++)
		c->feat[f] = true;
	for (int t = 0; t < PT__MAX; t++)
		c->tstamp_cb[t] = true;
	for (int i = 0; i < FEED_ROWS; i++) {
		const struct feed_row *r = &rows[i];
		bool seen = false;

		if (r->kind == FEED_TP_BTF) {
			for (int j = 0; j < c->ntps; j++)
				seen |= !strcmp(c->tps[j].name, r->target);
			assert_true(c->ntps < CAPS_MAX_TPS);
			if (!seen)
				c->tps[c->ntps++] = (struct tp_need){ r->target, true, true, 4 };
		} else if (r->kind != FEED_SOCKOPS && r->kind != FEED_SOCKOPS_TSTAMP &&
			   r->kind != FEED_UPROBE && r->kind != FEED_RUN) {
			for (int j = 0; j < c->nfns; j++)
				seen |= !strcmp(c->fns[j].name, r->target);
			assert_true(c->nfns < CAPS_MAX_FNS);
			if (!seen)
				c->fns[c->nfns++] = (struct fn_need){ r->target, true, 0 };
		}
	}
	/* the prototypes of 5.19 and later */
	for (int j = 0; j < c->nfns; j++) {
		const char *n = c->fns[j].name;

		c->fns[j].nargs = !strcmp(n, "tcp_recvmsg")          ? 5
				  : !strcmp(n, "tcp_sendmsg_locked") ? 3
				  : !strcmp(n, "tcp_data_ready")     ? 1
								     : 2;
	}
}

/* Debian's 6.1 (bookworm): no socket send/receive tracepoints, no tcp_sendmsg_locked
 * event, kfree_skb without the receiving socket, fentry works. */
static void caps_61(void)
{
	caps_all(&caps);
	tp_set("tcp:tcp_sendmsg_locked", false, 0);
	tp_set("sock:sock_send_length", false, 0);
	tp_set("sock:sock_recv_length", false, 0);
	tp_set("sock:sk_data_ready", false, 0);
	tp_set("skb:kfree_skb", true, 3);
	tp_set("tcp:tcp_retransmit_skb", true, 2);
	tp_set("napi:dql_stall_detected", false, 0);
	caps.kfunc_rdonly_cast = false;
}

/* Debian's 5.10 (bullseye), where fentry does not work but kprobes do: also no
 * qdisc_enqueue event, no drop reasons, sched_switch without prev_state, tcp_recvmsg with
 * its `nonblock`, no bpf_for_each_map_elem() and no cookie helper for tracing. */
static void caps_510_kprobes(void)
{
	caps_61();
	tp_set("qdisc:qdisc_enqueue", false, 0);
	tp_set("skb:kfree_skb", true, 2);
	tp_set("sched:sched_switch", true, 3);
	fn("tcp_recvmsg")->nargs = 6;
	caps.feat[PFEAT_FOR_EACH] = false;
	caps.feat[PFEAT_SK_COOKIE] = false;
	kind_off(PK_FENTRY, "load: Operation not permitted");
}

static struct stage_feed feed(enum tt_stage s)
{
	struct stage_feed f;

	feeds_choose(&caps);
	memset(&f, 0x5a, sizeof(f));
	stage_feed_of(&caps, s, &f);
	assert_non_null(f.hook);
	assert_true(f.hook[0] != 0);
	/* why is a string, and empty exactly when the stage is available */
	assert_non_null(memchr(f.why, 0, sizeof(f.why)));
	assert_non_null(memchr(f.feeds, 0, sizeof(f.feeds)));
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

/* The event's chosen feed contains `needle` ("fexit tcp_recvmsg"). */
static void assert_fed_by(const char *event, const char *needle)
{
	char desc[256];

	feeds_choose(&caps);
	if (!feed_event(&caps, event, desc, sizeof(desc)))
		fail_msg("%s has no feed: %s", event, desc);
	if (!strstr(desc, needle))
		fail_msg("%s fed by \"%s\", expected \"%s\"", event, desc, needle);
}

static void assert_prog(const char *prog, bool on)
{
	feeds_choose(&caps);
	if (feeds_prog_on(&caps, prog) != on)
		fail_msg("%s %s, expected %s", prog, on ? "off" : "on", on ? "on" : "off");
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
	/* one program per event, the tracepoint's */
	assert_fed_by("tcp:tcp_sendmsg_locked", "tp_btf tcp:tcp_sendmsg_locked");
	assert_prog("tt_tcp_sendmsg", true);
	assert_prog("tt_tcp_sendmsg_fentry", false);
	assert_prog("tt_tcp_sendmsg_kprobe", false);
	assert_prog("tt_kfree_skb", true);
	assert_prog("tt_kfree_skb_reason", false);
	assert_prog("tt_flow_sweep", true);
	assert_prog("tt_flow_sweep_keys", false);
	assert_false(feeds_flag_on(&caps, PF_QDISC_AT_DEVQ));
}

/* tx.sendq and tx.ack come from tracepoints (the ring of sends): a kernel without the
 * sockops TX timestamping callbacks (before 6.15) loses no stage. */
static void test_no_tstamp_callbacks_needed(void **state)
{
	(void)state;
	caps_all(&caps);
	kind_off(PK_SOCKOPS_TSTAMP, "BPF_SOCK_OPS_TSTAMP_* callbacks not in this kernel");
	for (int t = 0; t < PT__MAX; t++)
		caps.tstamp_cb[t] = false;
	for (int s = 0; s < STAGE__MAX; s++)
		assert_available(s);
}

/* 6.1: the socket events through fentry/fexit, every stage kept. */
static void test_kernel_61_fentry(void **state)
{
	(void)state;
	caps_61();
	for (int s = 0; s < STAGE__MAX; s++)
		assert_available(s);
	assert_fed_by("tcp:tcp_sendmsg_locked", "fentry tcp_sendmsg_locked");
	assert_fed_by("sock:sock_send_length", "fexit tcp_sendmsg_locked");
	assert_fed_by("sock:sock_recv_length", "fexit tcp_recvmsg");
	assert_fed_by("sock:sk_data_ready", "fentry tcp_data_ready");
	assert_fed_by("skb:kfree_skb", "tp_btf skb:kfree_skb");
	assert_prog("tt_kfree_skb_reason", true);
	assert_prog("tt_kfree_skb", false);
	assert_prog("tt_tcp_retransmit_skb_sent", true);
	assert_prog("tt_tcp_recvmsg_fexit", true);
	assert_prog("tt_tcp_recvmsg_fexit_nb", false);
	assert_prog("tt_dql_stall", false);
}

/* 6.12: tracepoints where they exist, fentry for the send's start only. */
static void test_kernel_612_mixed(void **state)
{
	(void)state;
	caps_all(&caps);
	tp_set("tcp:tcp_sendmsg_locked", false, 0);
	tp_set("tcp:tcp_retransmit_skb", true, 2);
	for (int s = 0; s < STAGE__MAX; s++)
		assert_available(s);
	assert_fed_by("tcp:tcp_sendmsg_locked", "fentry tcp_sendmsg_locked");
	assert_fed_by("sock:sock_send_length", "tp_btf sock:sock_send_length");
	assert_prog("tt_tcp_retransmit_skb", false);
	assert_prog("tt_tcp_retransmit_skb_sent", true);
}

/* 5.10 with kprobes only: every TCP stage and the requests still there. */
static void test_kernel_510_kprobes(void **state)
{
	(void)state;
	caps_510_kprobes();
	for (int s = 0; s < STAGE__MAX; s++)
		assert_available(s);
	assert_fed_by("tcp:tcp_sendmsg_locked", "kprobe tcp_sendmsg_locked");
	assert_fed_by("sock:sock_send_length", "kprobe+kretprobe tcp_sendmsg_locked");
	assert_fed_by("sock:sock_recv_length", "kprobe+kretprobe tcp_recvmsg");
	assert_fed_by("sock:sk_data_ready", "kprobe tcp_data_ready");
	assert_fed_by("qdisc:qdisc_enqueue", "tp_btf net:net_dev_queue");
	assert_true(feeds_flag_on(&caps, PF_QDISC_AT_DEVQ));
	assert_prog("tt_qdisc_enqueue", false);
	assert_prog("tt_net_dev_queue", true);
	assert_prog("tt_kfree_skb_noreason", true);
	/* the feed names the program where the kind and target do not tell it apart */
	assert_fed_by("skb:kfree_skb", "tp_btf skb:kfree_skb (tt_kfree_skb_noreason)");
	assert_fed_by("sock:sock_send_length", "kprobe+kretprobe tcp_sendmsg_locked");
	assert_prog("tt_sched_switch_nostate", true);
	assert_prog("tt_sched_switch", false);
	assert_prog("tt_flow_sweep", false);
	assert_prog("tt_flow_sweep_keys", true);
	assert_prog("tt_tcp_recvmsg_stash", true);
	assert_prog("tt_tcp_recvmsg_kretprobe", true);
	/* 5.10 with fentry: its tcp_recvmsg has 6 parameters, so the fexit that reads them */
	caps_510_kprobes();
	caps.kinds[PK_FENTRY].available = true;
	assert_fed_by("sock:sock_recv_length", "fexit tcp_recvmsg");
	assert_prog("tt_tcp_recvmsg_fexit_nb", true);
	assert_prog("tt_tcp_recvmsg_fexit", false);
}

/* Neither fentry nor kprobes on an old kernel: the socket stages go, each naming every
 * feed it tried, and the packet stages stay. */
static void test_old_kernel_no_function_hooks(void **state)
{
	(void)state;
	caps_510_kprobes();
	kind_off(PK_KPROBE, "CONFIG_KPROBES off");
	assert_unavailable_because(STAGE_TX_SENDQ, "tracepoint tcp:tcp_sendmsg_locked missing");
	assert_unavailable_because(STAGE_TX_SENDQ, "fentry unavailable");
	assert_unavailable_because(STAGE_TX_SENDQ, "kprobe unavailable (CONFIG_KPROBES off)");
	assert_unavailable_because(STAGE_RX_SOCKQ, "sk_data_ready");
	assert_unavailable_because(STAGE_REQ_LATENCY, "tcp_sendmsg_locked");
	assert_available(STAGE_TX_QDISC);
	assert_available(STAGE_TX_NIC);
	assert_available(STAGE_RX_STACK);
	assert_available(STAGE_TCP_RTT);
	assert_available(STAGE_TCP_RETRANS);
}

/* TAILTRACE_AVOID_FEEDS: the next feed where one exists, the only one where none does. */
static void test_avoid_kinds(void **state)
{
	unsigned int avoid;

	(void)state;
	assert_int_equal(feed_kinds_parse("tp_btf,fentry", &avoid), 0);
	assert_int_equal(avoid, (1u << FEED_TP_BTF) | (1u << FEED_FENTRY) | (1u << FEED_FEXIT));
	assert_int_equal(feed_kinds_parse("kfunc", &avoid), 0);
	assert_int_equal(avoid, FEED_AVOID_KFUNCS);
	assert_int_equal(feed_kinds_parse("tp_btf,nonsense", &avoid), -EINVAL);
	caps_all(&caps);
	feed_kinds_parse("tp_btf,fentry", &caps.avoid_kinds);
	assert_fed_by("tcp:tcp_sendmsg_locked", "kprobe tcp_sendmsg_locked");
	assert_fed_by("sock:sock_recv_length", "kprobe+kretprobe tcp_recvmsg");
	assert_fed_by("tcp:tcp_probe", "tp_btf tcp:tcp_probe");
	for (int s = 0; s < STAGE__MAX; s++)
		assert_available(s);
}

/* Without fentry and kprobes, taking a tracepoint away makes unavailable exactly the
 * stages whose reason names it, and every TCP stage needs at least one. */
static void test_each_tracepoint_missing(void **state)
{
	int needs[STAGE__MAX] = { 0 }, ntps;

	(void)state;
	caps_all(&caps);
	ntps = caps.ntps;
	for (int t = 0; t < ntps; t++) {
		const char *name;

		caps_all(&caps);
		kind_off(PK_FENTRY, "off");
		kind_off(PK_KPROBE, "off");
		name = caps.tps[t].name;
		caps.tps[t].btf = false;
		caps.tps[t].nargs = -1;
		for (int s = 0; s < STAGE__MAX; s++) {
			struct stage_feed f = feed(s);

			if (f.available)
				continue;
			needs[s]++;
			if (!strstr(f.why, name))
				fail_msg("%s unavailable without %s, but says \"%s\"",
					 stage_info(s)->name, name, f.why);
		}
	}
	for (int s = 0; s < STAGE__MAX; s++)
		if (is_tcp(s) && !needs[s])
			fail_msg("%s needs no tracepoint", stage_info(s)->name);
	/* sched:sched_switch feeds all the scheduler stages */
	caps_all(&caps);
	tp_set("sched:sched_switch", false, 0);
	assert_unavailable_because(STAGE_SCHED_RUNQ, "sched:sched_switch");
	assert_unavailable_because(STAGE_SCHED_ONCPU, "sched:sched_switch");
	assert_unavailable_because(STAGE_SCHED_OFFCPU, "sched:sched_switch");
}

/* A tracepoint with fewer arguments than a program reads is no use to that program: the
 * next one that reads fewer takes it, or the event is missing with the count named. */
static void test_tracepoint_arguments(void **state)
{
	(void)state;
	caps_all(&caps);
	tp_set("skb:kfree_skb", true, 3);
	assert_prog("tt_kfree_skb", false);
	assert_prog("tt_kfree_skb_reason", true);
	caps_all(&caps);
	tp_set("tcp:tcp_probe", true, 1);
	assert_unavailable_because(STAGE_TCP_RTT, "tcp:tcp_probe has 1 arguments, not 2");
}

/* A tracepoint only in tracefs (no btf_trace_ type) is no use to tp_btf programs. */
static void test_tracefs_only_is_not_enough(void **state)
{
	(void)state;
	caps_all(&caps);
	tp_set("net:netif_receive_skb", false, 0);
	tp("net:netif_receive_skb")->tracefs = true;
	assert_unavailable_because(STAGE_RX_STACK, "net:netif_receive_skb");
	/* and one not probed at all is missing: every TCP stage needs one */
	caps_all(&caps);
	caps.ntps = 0;
	kind_off(PK_FENTRY, "off");
	kind_off(PK_KPROBE, "off");
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

/* Where every tracepoint is there, the other kinds change nothing. */
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
		cmocka_unit_test(test_kernel_61_fentry),
		cmocka_unit_test(test_kernel_612_mixed),
		cmocka_unit_test(test_kernel_510_kprobes),
		cmocka_unit_test(test_old_kernel_no_function_hooks),
		cmocka_unit_test(test_avoid_kinds),
		cmocka_unit_test(test_each_tracepoint_missing),
		cmocka_unit_test(test_tracepoint_arguments),
		cmocka_unit_test(test_tracefs_only_is_not_enough),
		cmocka_unit_test(test_no_btf),
		cmocka_unit_test(test_uprobe_missing),
		cmocka_unit_test(test_other_kinds_irrelevant),
		cmocka_unit_test(test_long_detail_truncated),
		cmocka_unit_test(test_unknown_stage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
