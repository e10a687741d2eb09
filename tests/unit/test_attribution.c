// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the attribution engine: synthetic request populations for each judged
 * scenario (the ground truth is what the generator injected), the partition invariant,
 * merging, and the encoding against truncation and corruption. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "attr/attribution.h"
#include "lib/json.h"
#include "core/snapshot.h"

#define US 1000ULL
#define MS 1000000ULL
#define NETNS 4026532001u
#define IFINDEX 3u
#define QDISC 0x10000u /* 1:0 */

/* ---- deterministic generator ---- */

struct gen {
	__u64 s;
};

static __u64 rnd(struct gen *g)
{
	g->s ^= g->s >> 12;
	g->s ^= g->s << 25;
	g->s ^= g->s >> 27;
	return g->s * 0x2545F4914F6CDD1DULL;
}

static __u64 modn(__u64 x, __u64 n)
{
	return n ? x % n : x;
}

static double urand(struct gen *g)
{
	return (double)(rnd(g) >> 11) / (double)(1ULL << 53);
}

/* base scaled by a uniform factor in [1 - frac, 1 + frac] */
static __u64 jit(struct gen *g, __u64 base, double frac)
{
	return (__u64)((double)base * (1 + frac * (2 * urand(g) - 1)));
}

static __u64 uni(struct gen *g, __u64 lo, __u64 hi)
{
	return lo + (__u64)(urand(g) * (double)(hi - lo));
}

/* What a scenario adds to one server request. */
struct srv_req {
	__u64 runq;	/* waiting for a CPU before reading (inside rx.sockq) */
	__u64 runq_mid;	/* preempted during the service */
	__u64 oncpu;	/* extra service on CPU */
	__u64 offcpu;	/* extra service blocked */
	__u64 gpu;	/* part of offcpu inside CUDA sync */
	__u64 sendq, qdisc, retrans;
	__u32 retrans_n, rto, drops, ecn;
	__u64 srtt_infl;
	__u32 cpu;
};

static void flow_fill(struct req_event *ev, int i, int role)
{
	ev->sk_cookie = 1000 + i % 16;
	ev->family = AF_INET;
	ev->role = role;
	ev->raddr[0] = 198;
	ev->raddr[1] = 18;
	ev->raddr[2] = role == ROLE_SERVER ? 1 : 2;
	ev->raddr[3] = 2;
	ev->lport = role == ROLE_SERVER ? 7000 : 41000 + i % 16;
	ev->rport = role == ROLE_SERVER ? 41000 + i % 16 : 7000;
	ev->ifindex = IFINDEX;
	ev->netns = NETNS;
	ev->qdisc_handle = QDISC;
	ev->tgid = role == ROLE_SERVER ? 100 : 200;
}

/* A server request as the BPF side reports it: rx.stack, then rx.sockq (which contains
 * the wait for a CPU of the thread that will read), the service (~1 ms on CPU with
 * noise), then the response through TCP, the qdisc and the driver. The thread is blocked
 * waiting for its next request while the response is in flight, and that off-CPU time is
 * reported too: the model must not call it compute. */
static void server_event(struct gen *g, struct req_event *ev, int i, __u64 t,
			 const struct srv_req *x)
{
	__u64 *st = ev->stage_ns;
	__u64 rx, sockq, svc, resp;

	memset(ev, 0, sizeof(*ev));
	flow_fill(ev, i, ROLE_SERVER);
	ev->tid = 100 + i % 4;
	ev->cpu = x->cpu ? x->cpu : (__u32)(i % 4);
	snprintf(ev->comm, sizeof(ev->comm), "server");
	rx = jit(g, 15 * US, 0.5);
	sockq = jit(g, 20 * US, 0.5) + jit(g, 10 * US, 0.9) + x->runq;
	svc = jit(g, 1 * MS, 0.1);
	st[STAGE_RX_STACK] = rx;
	st[STAGE_RX_SOCKQ] = sockq;
	st[STAGE_SCHED_RUNQ] = x->runq + x->runq_mid + (urand(g) < 0.3 ? jit(g, 8 * US, 0.9) : 0);
	st[STAGE_SCHED_ONCPU] = svc + x->oncpu;
	st[STAGE_SCHED_OFFCPU] = x->offcpu;
	st[STAGE_GPU_WAIT] = x->gpu;
	ev->start_ns = t;
	ev->first_resp_ns = t + rx + sockq + svc + x->oncpu + x->offcpu + x->runq_mid;
	st[STAGE_TX_SENDQ] = jit(g, 8 * US, 0.5) + x->sendq;
	st[STAGE_TX_QDISC] = jit(g, 4 * US, 0.5) + x->qdisc;
	st[STAGE_TX_NIC] = jit(g, 5 * US, 0.5);
	st[STAGE_TCP_RETRANS] = x->retrans;
	resp = st[STAGE_TX_SENDQ] + st[STAGE_TX_QDISC] + st[STAGE_TX_NIC] + x->retrans;
	st[STAGE_SCHED_OFFCPU] += resp; /* back in epoll while the response leaves */
	ev->end_ns = ev->first_resp_ns + resp;
	ev->chunks = 1;
	ev->retrans = x->retrans_n;
	ev->retrans_rto = x->rto;
	ev->drops = x->drops;
	ev->ecn_ce = x->ecn;
	ev->min_rtt_ns = 60 * US;
	ev->srtt_ns = jit(g, 80 * US, 0.3) + x->srtt_infl;
	ev->bytes_in = 512;
	ev->bytes_out = 2048;
}

/* A client request: send, the server's ~1 ms and one RTT (unseen), then a streamed
 * response of 8 chunks 0.5 ms apart that the client reads, after `stall` if it stalls.
 * The client thread is blocked while it waits: that is not compute. */
static void client_event(struct gen *g, struct req_event *ev, int i, __u64 t, __u64 stall)
{
	__u64 *st = ev->stage_ns;
	__u64 tx, remote, stream = 7 * 500 * US, sockq = 0;

	memset(ev, 0, sizeof(*ev));
	flow_fill(ev, i, ROLE_CLIENT);
	ev->tid = 200;
	ev->cpu = 3;
	snprintf(ev->comm, sizeof(ev->comm), "client");
	st[STAGE_TX_SENDQ] = jit(g, 8 * US, 0.5);
	st[STAGE_TX_QDISC] = jit(g, 4 * US, 0.5);
	st[STAGE_TX_NIC] = jit(g, 5 * US, 0.5);
	tx = st[STAGE_TX_SENDQ] + st[STAGE_TX_QDISC] + st[STAGE_TX_NIC];
	ev->min_rtt_ns = 60 * US;
	ev->srtt_ns = jit(g, 80 * US, 0.3);
	remote = ev->srtt_ns + jit(g, 1 * MS, 0.1);
	ev->start_ns = t;
	ev->first_resp_ns = t + tx + remote;
	st[STAGE_RX_STACK] = 8 * jit(g, 10 * US, 0.5);
	/* each chunk waits on the socket from its arrival until the (late) read */
	for (int c = 0; c < 8; c++) {
		__u64 arrive = (__u64)c * 500 * US;

		sockq += stall > arrive ? stall - arrive : 0;
		sockq += jit(g, 15 * US, 0.5);
	}
	st[STAGE_RX_SOCKQ] = sockq;
	st[STAGE_SCHED_ONCPU] = 8 * jit(g, 5 * US, 0.5);
	st[STAGE_SCHED_RUNQ] = jit(g, 5 * US, 0.9);
	ev->end_ns = ev->first_resp_ns + (stall > stream ? stall : stream) + 20 * US;
	st[STAGE_SCHED_OFFCPU] = ev->end_ns - ev->start_ns - st[STAGE_SCHED_ONCPU];
	ev->chunks = 8;
	ev->max_gap_ns = 500 * US;
}

enum scenario { SC_BASELINE, SC_COMPUTE, SC_HOGS, SC_CONGESTION, SC_LOSS, SC_LOSS_NETEM,
		SC_SLOWREAD, SC_GPU };

/* A population of n requests for a scenario; the magnitudes follow the issue. */
static struct attr_agg *population(enum scenario sc, int n, __u64 seed)
{
	struct attr_agg *a = attr_agg__new();
	struct gen g = { seed * 0x9E3779B97F4A7C15ULL + 1 };
	struct req_event ev;
	__u64 t = 1000 * MS;

	assert_non_null(a);
	for (int i = 0; i < n; i++) {
		struct srv_req x = { 0 };
		double u = urand(&g);

		/* baseline noise: some wake-up and scheduling jitter everywhere */
		if (u < 0.03)
			x.runq = uni(&g, 50 * US, 400 * US);
		else if (u < 0.05)
			x.offcpu = uni(&g, 50 * US, 600 * US);
		switch (sc) {
		case SC_BASELINE:
			break;
		case SC_COMPUTE:
			if (urand(&g) < 0.01)
				x.oncpu += jit(&g, 50 * MS, 0.05);
			break;
		case SC_GPU:
			if (urand(&g) < 0.02) {
				x.gpu = jit(&g, 30 * MS, 0.2);
				x.offcpu += x.gpu;
			}
			break;
		case SC_HOGS:
			/* hogs on CPUs 1 and 2: threads there wait for a CPU, often long */
			x.cpu = 1 + (__u32)(i % 2);
			x.runq += (__u64)((double)MS * 0.5 * -log(1 - urand(&g)));
			if (urand(&g) < 0.05)
				x.runq_mid = uni(&g, 3 * MS, 15 * MS);
			if (x.cpu == 2) { /* cpu 2's hog is lighter */
				x.runq /= 4;
				x.runq_mid /= 3;
			}
			break;
		case SC_CONGESTION:
			/* the bulk neighbour's sawtooth fills the tbf queue: every request
			 * waits behind it, the tail waits behind a full queue */
			x.qdisc = uni(&g, 0, 15 * MS);
			if (urand(&g) < 0.02)
				x.qdisc += uni(&g, 5 * MS, 15 * MS);
			x.sendq = uni(&g, 0, 1 * MS);
			x.srtt_infl = x.qdisc / 2 + uni(&g, 0, 5 * MS);
			if (urand(&g) < 0.005) {
				x.retrans_n = 1;
				x.drops = 1;
				x.retrans = jit(&g, 80 * US + x.srtt_infl, 0.2);
			}
			break;
		case SC_LOSS:
		case SC_LOSS_NETEM:
			/* random loss, no queue: RTO-recovered segments */
			if (urand(&g) < 0.015) {
				x.retrans_n = 1;
				x.rto = 1;
				x.retrans = jit(&g, 210 * MS, 0.05);
				/* a netem loss is a kfree_skb on the flow's device */
				x.drops = sc == SC_LOSS_NETEM;
			}
			break;
		case SC_SLOWREAD:
			break;
		}
		if (sc == SC_SLOWREAD)
			client_event(&g, &ev, i, t,
				     urand(&g) < 0.03 ? uni(&g, 20 * MS, 60 * MS) : 0);
		else
			server_event(&g, &ev, i, t, &x);
		attr_agg__add(a, &ev);
		t += 1 * MS;
	}
	return a;
}

static void snap_with_dev(struct snapshot *s)
{
	struct dev_key k = { .netns = NETNS, .ifindex = IFINDEX };

	snapshot__init(s);
	assert_int_equal(snapshot__add_dev(s, &k, "tt-srv-eth0"), 0);
}

static void analyze(struct attr_agg *a, struct attr_report *r)
{
	struct snapshot s;

	snap_with_dev(&s);
	attr_analyze(a, &s, 30.0, NULL, r);
	snapshot__free(&s);
}

static const char *top_stage(const struct attr_group *g)
{
	return g->nstages ? attr_part_info(g->stages[0].part)->stage : "";
}

static const char *verdict_stage(const struct attr_report *r)
{
	return r->tail.verdict.has_part ? attr_part_info(r->tail.verdict.part)->stage : "";
}

#define SEEDS 10

static void expect(enum scenario sc, int n, enum attr_verdict_class v, const char *stage,
		   const char *where)
{
	for (__u64 seed = 1; seed <= SEEDS; seed++) {
		struct attr_agg *a = population(sc, n, seed);
		struct attr_report r;

		analyze(a, &r);
		if (seed == 1 && getenv("TT_SHOW_REPORTS")) /* to see what a scenario gives */
			attr_report__print_text(&r, stderr);
		if (r.tail.verdict.class != v || (stage && strcmp(verdict_stage(&r), stage)) ||
		    (stage && strcmp(top_stage(&r.tail), stage)) ||
		    (where && !strstr(r.tail.verdict.where, where))) {
			attr_report__print_text(&r, stderr);
			fail_msg("scenario %d seed %llu: verdict %s stage %s where '%s'", sc,
				 (unsigned long long)seed, attr_verdict_name(r.tail.verdict.class),
				 verdict_stage(&r), r.tail.verdict.where);
		}
		attr_agg__free(a);
	}
}

static void test_baseline_none(void **state)
{
	(void)state;
	expect(SC_BASELINE, 20000, VERDICT_NONE, NULL, NULL);
}

static void test_compute_spike(void **state)
{
	(void)state;
	expect(SC_COMPUTE, 20000, VERDICT_COMPUTE, "sched.oncpu", "server");
}

static void test_gpu_wait(void **state)
{
	(void)state;
	expect(SC_GPU, 10000, VERDICT_COMPUTE, "gpu.wait", "pid 100 (server)");
}

static void test_hogs_runq(void **state)
{
	(void)state;
	expect(SC_HOGS, 20000, VERDICT_COMPUTE, "sched.runq", "pid 100 (server) on cpu 1");
}

static void test_congestion_qdisc(void **state)
{
	(void)state;
	expect(SC_CONGESTION, 20000, VERDICT_CONGESTION, "tx.qdisc",
	       "dev tt-srv-eth0 qdisc 1:0 (netns 4026532001)");
}

static void test_loss_transport(void **state)
{
	(void)state;
	/* spread over 16 flows: the place is the device they share */
	expect(SC_LOSS, 20000, VERDICT_TRANSPORT, "tcp.retrans",
	       "dev tt-srv-eth0 qdisc 1:0 (netns 4026532001)");
	/* netem-style loss shows as a drop on the device, but no queue stood behind it */
	expect(SC_LOSS_NETEM, 20000, VERDICT_TRANSPORT, "tcp.retrans", NULL);
}

static void test_slowread_client(void **state)
{
	(void)state;
	expect(SC_SLOWREAD, 10000, VERDICT_COMPUTE, "rx.sockq",
	       "pid 200 (client) flows to 198.18.2.2:7000");
}

/* Every request read late by the client: the tail is not worse than the median, but
 * where the time goes is still the unread socket. */
static void test_slowread_everywhere(void **state)
{
	struct gen g = { 42 };
	struct attr_agg *a = attr_agg__new();
	struct attr_report r;
	struct req_event ev;

	(void)state;
	for (int i = 0; i < 5000; i++) {
		client_event(&g, &ev, i, 1000 * MS + (__u64)i * MS, uni(&g, 5 * MS, 10 * MS));
		attr_agg__add(a, &ev);
	}
	analyze(a, &r);
	assert_int_equal(r.tail.verdict.class, VERDICT_NONE);
	assert_string_equal(top_stage(&r.tail), "rx.sockq");
	assert_string_equal(attr_class_name(attr_part_info(r.tail.stages[0].part)->class),
			    "compute");
	assert_int_equal(r.client_reqs, 5000);
	attr_agg__free(a);
}

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
			ev.stage_ns[k] = rnd(&g) % 3 ? modn(rnd(&g), L + 1)
						     : rnd(&g) >> (rnd(&g) % 64);
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

static void test_partition_rules(void **state)
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

	/* stage sums beyond the wall time (summed over packets) are clamped */
	memset(&ev, 0, sizeof(ev));
	ev.start_ns = 1;
	ev.end_ns = 1 + 3 * MS;
	ev.stage_ns[STAGE_TX_QDISC] = 50 * MS;
	attr_split_request(&ev, &s);
	assert_int_equal(s.part_ns[PART_TX_QDISC], 3 * MS);
	assert_int_equal(s.part_ns[PART_UNCOVERED], 0);

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

/* ---- verdict thresholds ---- */

/* n requests at `base` on CPU, a share `frac` of them `extra` longer in `stage`. */
static struct attr_agg *two_level(int n, __u64 base, double frac, __u64 extra, int stage,
				  int stage2, double split)
{
	struct attr_agg *a = attr_agg__new();
	struct gen g = { 99 };

	for (int i = 0; i < n; i++) {
		struct req_event ev;
		__u64 L = jit(&g, base, 0.05);

		memset(&ev, 0, sizeof(ev));
		flow_fill(&ev, i, ROLE_SERVER);
		ev.tid = 5;
		ev.start_ns = 1000;
		ev.first_resp_ns = ev.start_ns + L;
		ev.stage_ns[STAGE_SCHED_ONCPU] = L;
		if (urand(&g) < frac) {
			__u64 e1 = (__u64)((double)extra * split), e2 = extra - e1;

			ev.stage_ns[stage] += e1;
			if (stage2 >= 0)
				ev.stage_ns[stage2] += e2;
			else
				e2 = 0;
			ev.end_ns = ev.first_resp_ns + e1 + e2;
		} else {
			ev.end_ns = ev.first_resp_ns;
		}
		attr_agg__add(a, &ev);
	}
	return a;
}

static enum attr_verdict_class verdict_of(struct attr_agg *a)
{
	struct attr_report r;

	attr_analyze(a, NULL, 10, NULL, &r);
	attr_agg__free(a);
	return r.tail.verdict.class;
}

static void test_verdict_rule(void **state)
{
	(void)state;
	/* large relative but small absolute excess: none */
	assert_int_equal(verdict_of(two_level(5000, 200 * US, 0.02, 1500 * US, STAGE_TX_QDISC,
					      -1, 1)),
			 VERDICT_NONE);
	/* large absolute but small relative excess: none */
	assert_int_equal(verdict_of(two_level(5000, 20 * MS, 0.02, 5 * MS, STAGE_TX_QDISC, -1,
					      1)),
			 VERDICT_NONE);
	/* both: named */
	assert_int_equal(verdict_of(two_level(5000, 1 * MS, 0.02, 5 * MS, STAGE_TX_QDISC, -1,
					      1)),
			 VERDICT_CONGESTION);
	/* a 55/45 split is a majority */
	assert_int_equal(verdict_of(two_level(5000, 1 * MS, 0.02, 10 * MS, STAGE_TX_QDISC,
					      STAGE_TX_NIC, 0.55)),
			 VERDICT_CONGESTION);
	/* three-way 40/30/30 split: the plurality is not clear enough (needs 1.5x) */
	{
		struct attr_agg *a = attr_agg__new();
		struct gen g = { 5 };

		for (int i = 0; i < 5000; i++) {
			struct req_event ev;

			memset(&ev, 0, sizeof(ev));
			ev.start_ns = 1;
			ev.first_resp_ns = 1 + jit(&g, 1 * MS, 0.05);
			ev.stage_ns[STAGE_SCHED_ONCPU] = ev.first_resp_ns - 1;
			ev.end_ns = ev.first_resp_ns;
			if (urand(&g) < 0.02) {
				ev.stage_ns[STAGE_SCHED_ONCPU] += 4 * MS;
				ev.first_resp_ns += 4 * MS;
				ev.stage_ns[STAGE_TX_QDISC] = 3 * MS;
				ev.stage_ns[STAGE_TX_NIC] = 3 * MS;
				ev.end_ns = ev.first_resp_ns + 6 * MS;
			}
			attr_agg__add(a, &ev);
		}
		assert_int_equal(verdict_of(a), VERDICT_MIXED);
	}
	/* too few requests */
	assert_int_equal(verdict_of(two_level(50, 1 * MS, 0.1, 50 * MS, STAGE_TX_QDISC, -1, 1)),
			 VERDICT_NONE);
}

static void test_client_remote_unattributed(void **state)
{
	struct attr_agg *a = attr_agg__new();
	struct gen g = { 3 };
	struct attr_report r;

	(void)state;
	/* the server is slow on 2% of requests: from the client that is beyond this host */
	for (int i = 0; i < 5000; i++) {
		struct req_event ev;

		client_event(&g, &ev, i, 1000 * MS, 0);
		if (urand(&g) < 0.02) {
			ev.first_resp_ns += 40 * MS;
			ev.end_ns += 40 * MS;
		}
		attr_agg__add(a, &ev);
	}
	attr_analyze(a, NULL, 10, NULL, &r);
	assert_int_equal(r.tail.verdict.class, VERDICT_UNATTRIBUTED);
	assert_string_equal(verdict_stage(&r), "remote");
	assert_non_null(strstr(r.tail.verdict.summary, "run explain on the server"));
	attr_agg__free(a);
}

/* Both ends traced on one host (the testbed's namespaces): each exchange is seen once
 * as a server request and once as a client request. */
static struct attr_agg *both_ends(bool slow_server, bool slow_client, __u64 seed)
{
	struct attr_agg *a = attr_agg__new();
	struct gen g = { seed };

	for (int i = 0; i < 10000; i++) {
		struct req_event sev, cev;
		struct srv_req x = { 0 };
		__u64 stall = 0, L;

		if (slow_server && urand(&g) < 0.01)
			x.oncpu = jit(&g, 50 * MS, 0.05);
		/* a client that does not read closes the window: the server's response
		 * waits in its send queue */
		if (slow_client && urand(&g) < 0.03)
			stall = x.sendq = uni(&g, 20 * MS, 60 * MS);
		server_event(&g, &sev, i, 1000 * MS, &x);
		client_event(&g, &cev, i, 1000 * MS, stall);
		L = sev.end_ns - sev.start_ns - x.sendq;
		cev.first_resp_ns += L > 1 * MS ? L - 1 * MS : 0;
		cev.end_ns += L > 1 * MS ? L - 1 * MS : 0;
		attr_agg__add(a, &sev);
		attr_agg__add(a, &cev);
	}
	return a;
}

static void test_both_ends(void **state)
{
	struct attr_params p;
	struct attr_report r;
	struct attr_agg *a;

	(void)state;
	/* slow server: the client only sees `remote`; the server's view is used */
	a = both_ends(true, false, 1);
	attr_analyze(a, NULL, 10, NULL, &r);
	assert_int_equal(r.role, ROLE_SERVER);
	assert_int_equal(r.tail.verdict.class, VERDICT_COMPUTE);
	assert_string_equal(verdict_stage(&r), "sched.oncpu");
	assert_true(r.has_other);
	assert_int_equal(r.other.class, VERDICT_UNATTRIBUTED);
	assert_int_equal(r.server_reqs, 10000);
	assert_int_equal(r.client_reqs, 10000);
	/* the caller can ask for one side */
	attr_params__default(&p);
	p.role = ROLE_CLIENT;
	attr_analyze(a, NULL, 10, &p, &r);
	assert_int_equal(r.role, ROLE_CLIENT);
	assert_int_equal(r.tail.verdict.class, VERDICT_UNATTRIBUTED);
	assert_int_equal(r.other.class, VERDICT_COMPUTE);
	attr_agg__free(a);

	/* slow reader: the server blames its send queue, the client knows better */
	a = both_ends(false, true, 2);
	p.role = ROLE_SERVER;
	attr_analyze(a, NULL, 10, &p, &r);
	assert_int_equal(r.tail.verdict.class, VERDICT_CONGESTION);
	assert_string_equal(verdict_stage(&r), "tx.sendq");
	attr_analyze(a, NULL, 10, NULL, &r);
	assert_int_equal(r.role, ROLE_CLIENT);
	assert_int_equal(r.tail.verdict.class, VERDICT_COMPUTE);
	assert_string_equal(verdict_stage(&r), "rx.sockq");
	assert_int_equal(r.other.class, VERDICT_CONGESTION);
	attr_agg__free(a);

	/* nothing wrong: none from either side */
	a = both_ends(false, false, 3);
	attr_analyze(a, NULL, 10, NULL, &r);
	assert_int_equal(r.tail.verdict.class, VERDICT_NONE);
	assert_int_equal(r.other.class, VERDICT_NONE);
	attr_agg__free(a);
}

static void test_empty(void **state)
{
	struct attr_agg *a = attr_agg__new();
	struct attr_report r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json_writer w;

	(void)state;
	attr_analyze(a, NULL, 1, NULL, &r);
	assert_int_equal(r.tail.verdict.class, VERDICT_NONE);
	attr_analyze(NULL, NULL, 1, NULL, &r);
	assert_int_equal(r.requests, 0);
	attr_report__print_text(&r, f);
	jw_init(&w, f, false);
	jw_object_begin(&w, NULL);
	attr_report__print_json(&r, &w);
	jw_object_end(&w);
	fclose(f);
	assert_non_null(strstr(buf, "\"class\":\"none\""));
	free(buf);
	attr_agg__free(a);
}

/* ---- merge and encoding ---- */

static struct attr_agg *mixed_population(__u64 seed, int from, int to)
{
	struct attr_agg *a = attr_agg__new();
	struct gen g = { seed };

	for (int i = 0; i < to; i++) {
		struct req_event ev;
		struct srv_req x = { 0 };

		if (urand(&g) < 0.05)
			x.qdisc = uni(&g, 1 * MS, 20 * MS);
		if (urand(&g) < 0.02) {
			x.retrans = 200 * MS;
			x.retrans_n = 1;
			x.ecn = urand(&g) < 0.5;
		}
		if (i % 3)
			server_event(&g, &ev, i, 1000 * MS, &x);
		else
			client_event(&g, &ev, i, 1000 * MS, urand(&g) < 0.1 ? 30 * MS : 0);
		if (i >= from)
			attr_agg__add(a, &ev);
	}
	return a;
}

static void test_merge_equals_add_all(void **state)
{
	struct attr_agg *all = mixed_population(11, 0, 6000);
	struct attr_agg *x = mixed_population(11, 0, 2500);
	struct attr_agg *y = mixed_population(11, 2500, 6000);
	struct attr_agg *m = attr_agg__new();
	struct attr_report r1, r2;

	(void)state;
	/* y holds requests 2500.. generated from the same stream */
	attr_agg__merge(m, x);
	attr_agg__merge(m, y);
	assert_true(attr_agg__equal(m, all));
	assert_int_equal(attr_agg__requests(m), 6000);
	attr_analyze(m, NULL, 10, NULL, &r1);
	attr_analyze(all, NULL, 10, NULL, &r2);
	assert_memory_equal(&r1, &r2, sizeof(r1));
	/* and it differs when it should */
	attr_agg__merge(m, y);
	assert_false(attr_agg__equal(m, all));
	attr_agg__free(all);
	attr_agg__free(x);
	attr_agg__free(y);
	attr_agg__free(m);
}

/* The place memo is a cache: requests added one after the other (memo hits) land where
 * each request alone would (no hits: a fresh aggregate per request), also when a socket
 * and thread keep their entry but another place field changes under them. */
static void test_memo_equals_index(void **state)
{
	struct attr_agg *all = attr_agg__new(), *ref = attr_agg__new();
	struct gen g = { 41 };

	(void)state;
	for (int i = 0; i < 3000; i++) {
		struct req_event ev;
		struct srv_req x = { 0 };
		struct attr_agg *one = attr_agg__new();

		if (urand(&g) < 0.2)
			x.qdisc = uni(&g, 100 * US, 20 * MS);
		x.oncpu = uni(&g, 0, 200 * MS); /* latencies over many bands */
		if ((i / 400) % 2)
			client_event(&g, &ev, 0, 1000 * MS, urand(&g) < 0.2 ? 30 * MS : 0);
		else
			server_event(&g, &ev, 0, 1000 * MS, &x);
		ev.sk_cookie = 1000; /* one socket and thread: one memo entry for all */
		ev.tid = 7;
		ev.cpu = 1;
		memcpy(ev.comm, "worker-thread-a", 16);
		/* runs of 40 alike (memo hits), every other run with one field changed */
		switch ((i / 40) % 2 ? (i / 80) % 6 + 1 : 0) {
		case 1: /* the same socket connected again elsewhere */
			ev.raddr[3] = 9;
			break;
		case 2:
			ev.rport ^= 1;
			break;
		case 3: /* renamed thread */
			memcpy(ev.comm, "worker-thread-b", 16);
			break;
		case 4: /* a byte past the cut is no difference */
			memcpy(ev.comm, "worker-thread-aX", 16);
			break;
		case 5:
			ev.ifindex++;
			break;
		case 6:
			ev.tgid++;
			break;
		}
		attr_agg__add(all, &ev);
		attr_agg__add(one, &ev);
		attr_agg__merge(ref, one);
		attr_agg__free(one);
	}
	assert_true(attr_agg__equal(all, ref));
	attr_agg__free(all);
	attr_agg__free(ref);
}

static void test_encode_roundtrip(void **state)
{
	struct attr_agg *a = mixed_population(21, 0, 5000), *b = NULL, *e = attr_agg__new();
	void *buf;
	size_t len;

	(void)state;
	assert_int_equal(attr_agg__encode(a, &buf, &len), 0);
	assert_int_equal(attr_agg__decode(&b, buf, len), 0);
	assert_true(attr_agg__equal(a, b));
	attr_agg__free(b);
	free(buf);
	/* the empty aggregate too */
	assert_int_equal(attr_agg__encode(e, &buf, &len), 0);
	assert_int_equal(attr_agg__decode(&b, buf, len), 0);
	assert_true(attr_agg__equal(e, b));
	attr_agg__free(b);
	free(buf);
	attr_agg__free(a);
	attr_agg__free(e);
}

static void test_decode_corrupt(void **state)
{
	struct attr_agg *a = mixed_population(31, 0, 1500), *b;
	struct gen g = { 77 };
	unsigned char *buf, *copy;
	size_t len;

	(void)state;
	assert_int_equal(attr_agg__encode(a, (void **)&buf, &len), 0);
	/* every truncation, decoded from an exact-size heap copy so a read past the end
	 * would show under ASan/valgrind */
	for (size_t n = 0; n < len; n++) {
		copy = malloc(n ? n : 1);
		memcpy(copy, buf, n);
		b = (struct attr_agg *)1;
		assert_int_equal(attr_agg__decode(&b, copy, n), -EINVAL);
		assert_null(b);
		free(copy);
	}
	/* trailing garbage */
	copy = malloc(len + 1);
	memcpy(copy, buf, len);
	copy[len] = 0;
	assert_int_equal(attr_agg__decode(&b, copy, len + 1), -EINVAL);
	free(copy);
	/* random byte flips, one to four at a time */
	copy = malloc(len);
	for (int i = 0; i < 20000; i++) {
		int k = 1 + (int)(rnd(&g) % 4);

		memcpy(copy, buf, len);
		for (int j = 0; j < k; j++)
			copy[rnd(&g) % len] ^= (unsigned char)(1 + rnd(&g) % 255);
		if (!memcmp(copy, buf, len))
			continue;
		assert_int_equal(attr_agg__decode(&b, copy, len), -EINVAL);
	}
	/* pure garbage, with and without the magic */
	for (int i = 0; i < 2000; i++) {
		size_t n = rnd(&g) % len;

		for (size_t j = 0; j < n; j++)
			copy[j] = (unsigned char)rnd(&g);
		if (n >= 4 && i % 2)
			memcpy(copy, "TTAT", 4);
		assert_int_equal(attr_agg__decode(&b, copy, n), -EINVAL);
	}
	assert_int_equal(attr_agg__decode(&b, NULL, 0), -EINVAL);
	free(copy);
	free(buf);
	attr_agg__free(a);
}

/* A consistent but lying payload (valid checksum) must still be refused. */
static __u64 fnv(const unsigned char *p, size_t n)
{
	__u64 h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void reseal(unsigned char *p, size_t len)
{
	__u64 h = fnv(p, len - 8);

	for (int i = 0; i < 8; i++)
		p[len - 8 + i] = (unsigned char)(h >> (8 * i));
}

/* Recordings made before version 2 still read, to the same aggregate; version 2 (varints,
 * absent addresses and names left out) is the smaller one. */
static void test_decode_version1(void **state)
{
	struct attr_agg *a = mixed_population(23, 0, 5000), *b = NULL;
	void *v1, *v2;
	size_t len1, len2;

	(void)state;
	assert_int_equal(attr_agg__encode_version(a, 1, &v1, &len1), 0);
	assert_int_equal(((unsigned char *)v1)[4], 1);
	assert_int_equal(attr_agg__decode(&b, v1, len1), 0);
	assert_true(attr_agg__equal(a, b));
	attr_agg__free(b);
	assert_int_equal(attr_agg__encode(a, &v2, &len2), 0);
	assert_int_equal(((unsigned char *)v2)[4], 2);
	assert_true(len2 < len1 / 2);
	/* a version-1 blob relabelled 2 (checksum fixed up) is refused, not misread */
	((unsigned char *)v1)[4] = 2;
	reseal(v1, len1);
	assert_int_equal(attr_agg__decode(&b, v1, len1), -EINVAL);
	assert_int_equal(attr_agg__encode_version(a, 3, &v2, &len2), -EINVAL);
	free(v1);
	free(v2);
	attr_agg__free(a);
}

static void test_decode_resealed(void **state)
{
	struct attr_agg *a = mixed_population(41, 0, 800), *b;
	struct gen g = { 5 };
	unsigned char *buf, *copy;
	size_t len;
	int accepted = 0;

	(void)state;
	assert_int_equal(attr_agg__encode(a, (void **)&buf, &len), 0);
	copy = malloc(len);
	/* a flipped byte with a fixed-up checksum either decodes to a well-formed
	 * aggregate (a changed number) or is refused; it never crashes */
	for (int i = 0; i < 20000; i++) {
		memcpy(copy, buf, len);
		copy[20 + rnd(&g) % (len - 28)] ^= (unsigned char)(1 + rnd(&g) % 255);
		reseal(copy, len);
		if (!attr_agg__decode(&b, copy, len)) {
			struct attr_report r;

			attr_analyze(b, NULL, 1, NULL, &r);
			attr_agg__free(b);
			accepted++;
		}
	}
	assert_true(accepted < 20000);
	free(copy);
	free(buf);
	attr_agg__free(a);
}

static void test_place_table_bounded(void **state)
{
	struct attr_agg *a = attr_agg__new(), *b;
	struct gen g = { 8 };
	struct attr_report r;
	void *buf;
	size_t len;

	(void)state;
	/* 40000 distinct slow flows: more places than the table keeps */
	for (int i = 0; i < 40000; i++) {
		struct req_event ev;
		struct srv_req x = { .qdisc = uni(&g, 1 * MS, 30 * MS) };

		server_event(&g, &ev, i, 1000 * MS, &x);
		ev.rport = (__u16)i;
		ev.raddr[3] = (__u8)(i >> 16);
		ev.tid = (__u32)i;
		attr_agg__add(a, &ev);
	}
	attr_analyze(a, NULL, 10, NULL, &r);
	assert_true(r.places_unstored > 0);
	assert_true(r.places_unstored_ns > 0);
	assert_int_equal(r.requests, 40000);
	assert_int_equal(attr_agg__encode(a, &buf, &len), 0);
	assert_int_equal(attr_agg__decode(&b, buf, len), 0);
	assert_true(attr_agg__equal(a, b));
	free(buf);
	attr_agg__free(a);
	attr_agg__free(b);
}

/* ---- rendering ---- */

static void test_render(void **state)
{
	static const char *const keys[] = {
		"\"duration_s\":", "\"requests\":", "\"role\":\"server\"", "\"roles\":{",
		"\"latency_us\":{",
		"\"ttft_us\":{", "\"gap_us\":{", "\"p50\":", "\"p90\":", "\"p99\":",
		"\"p999\":", "\"max\":", "\"tail\":{", "\"threshold_us\":", "\"count\":",
		"\"shares\":{", "\"compute\":", "\"transport\":", "\"congestion\":",
		"\"unattributed\":", "\"excess_shares\":{", "\"stages\":[",
		"\"stage\":\"tx.qdisc\"",
		"\"class\":\"congestion\"", "\"share\":", "\"where\":\"dev tt-srv-eth0 qdisc 1:0",
		"\"median\":{", "\"verdict\":{\"class\":\"congestion\",\"stage\":\"tx.qdisc\"",
		"\"summary\":", "\"rule\":", "\"evidence\":{", "\"thresholds\":{",
	};
	struct attr_agg *a = population(SC_CONGESTION, 20000, 1);
	struct attr_report r;
	struct json_writer w;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int depth = 0;

	(void)state;
	analyze(a, &r);
	f = open_memstream(&buf, &len);
	jw_init(&w, f, false);
	jw_object_begin(&w, NULL);
	attr_report__print_json(&r, &w);
	jw_object_end(&w);
	jw_finish(&w);
	fclose(f);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strstr(buf, keys[i]))
			fail_msg("missing %s in %s", keys[i], buf);
	for (char *p = buf; *p; p++) {
		depth += *p == '{' || *p == '[';
		depth -= *p == '}' || *p == ']';
		assert_true(depth >= 0);
	}
	assert_int_equal(depth, 0);
	free(buf);

	buf = NULL;
	f = open_memstream(&buf, &len);
	attr_report__print_text(&r, f);
	fclose(f);
	/* the verdict comes first, and names the place */
	assert_int_equal(strncmp(buf, "verdict: congestion (tx.qdisc)", 30), 0);
	assert_non_null(strstr(buf, "dev tt-srv-eth0 qdisc 1:0"));
	assert_non_null(strstr(buf, "p99 tail:"));
	free(buf);
	attr_agg__free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_partition_sums_to_latency),
		cmocka_unit_test(test_partition_rules),
		cmocka_unit_test(test_baseline_none),
		cmocka_unit_test(test_compute_spike),
		cmocka_unit_test(test_gpu_wait),
		cmocka_unit_test(test_hogs_runq),
		cmocka_unit_test(test_congestion_qdisc),
		cmocka_unit_test(test_loss_transport),
		cmocka_unit_test(test_slowread_client),
		cmocka_unit_test(test_slowread_everywhere),
		cmocka_unit_test(test_client_remote_unattributed),
		cmocka_unit_test(test_verdict_rule),
		cmocka_unit_test(test_both_ends),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_merge_equals_add_all),
		cmocka_unit_test(test_memo_equals_index),
		cmocka_unit_test(test_encode_roundtrip),
		cmocka_unit_test(test_decode_version1),
		cmocka_unit_test(test_decode_corrupt),
		cmocka_unit_test(test_decode_resealed),
		cmocka_unit_test(test_place_table_bounded),
		cmocka_unit_test(test_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
