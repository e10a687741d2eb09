/* SPDX-License-Identifier: GPL-2.0 */
/* What the attribution tests (test_attr_*.c) share: a deterministic generator and
 * synthetic server and client requests as the BPF side reports them, with populations for
 * each judged scenario whose ground truth is what the generator injected. */
#ifndef TT_ATTR_FIXTURES_H
#define TT_ATTR_FIXTURES_H

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

#define US      1000ULL
#define MS      1000000ULL
#define NETNS   4026532001u
#define IFINDEX 3u
#define QDISC   0x10000u /* 1:0 */

/* ---- deterministic generator ---- */

struct gen {
	__u64 s;
};

static inline __u64 rnd(struct gen *g)
{
	g->s ^= g->s >> 12;
	g->s ^= g->s << 25;
	g->s ^= g->s >> 27;
	return g->s * 0x2545F4914F6CDD1DULL;
}

static inline __u64 modn(__u64 x, __u64 n)
{
	return n ? x % n : x;
}

static inline double urand(struct gen *g)
{
	return (double)(rnd(g) >> 11) / (double)(1ULL << 53);
}

/* base scaled by a uniform factor in [1 - frac, 1 + frac] */
static inline __u64 jit(struct gen *g, __u64 base, double frac)
{
	return (__u64)((double)base * (1 + frac * (2 * urand(g) - 1)));
}

static inline __u64 uni(struct gen *g, __u64 lo, __u64 hi)
{
	return lo + (__u64)(urand(g) * (double)(hi - lo));
}

/* What a scenario adds to one server request. */
struct srv_req {
	__u64 runq;     /* waiting for a CPU before reading (inside rx.sockq) */
	__u64 runq_mid; /* preempted during the service */
	__u64 oncpu;    /* extra service on CPU */
	__u64 offcpu;   /* extra service blocked */
	__u64 gpu;      /* part of offcpu inside CUDA sync */
	__u64 sendq, qdisc, retrans;
	__u32 retrans_n, rto, drops, ecn;
	__u64 srtt_infl;
	__u32 cpu;
	__u64 backlog; /* in a CPU's receive backlog before the stack saw the request */
};

static inline void flow_fill(struct req_event *ev, int i, int role)
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
static inline void server_event(struct gen *g, struct req_event *ev, int i, __u64 t,
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
	st[STAGE_RX_BACKLOG] = x->backlog;
	st[STAGE_RX_STACK] = rx;
	st[STAGE_RX_SOCKQ] = sockq;
	st[STAGE_SCHED_RUNQ] = x->runq + x->runq_mid + (urand(g) < 0.3 ? jit(g, 8 * US, 0.9) : 0);
	st[STAGE_SCHED_ONCPU] = svc + x->oncpu;
	st[STAGE_SCHED_OFFCPU] = x->offcpu;
	st[STAGE_GPU_WAIT] = x->gpu;
	ev->start_ns = t;
	ev->first_resp_ns = t + x->backlog + rx + sockq + svc + x->oncpu + x->offcpu + x->runq_mid;
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
static inline void client_event(struct gen *g, struct req_event *ev, int i, __u64 t, __u64 stall)
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

enum scenario {
	SC_BASELINE,
	SC_COMPUTE,
	SC_HOGS,
	SC_CONGESTION,
	SC_LOSS,
	SC_LOSS_NETEM,
	SC_SLOWREAD,
	SC_GPU,
	SC_SOFTIRQ
};

/* A population of n requests for a scenario; the magnitudes follow the issue. */
/* Per mille of the requests population() makes as record's duty cycle leaves them: the
 * deep tier off for part of them (REQ_F_PARTIAL), their per-packet and scheduler stages
 * missing or cut short. 0: every request whole. */
static __u32 fixture_partial_per_mille;

static inline void make_partial(struct gen *g, struct req_event *ev)
{
	double keep = urand(g); /* the share of the request the tier still saw */

	ev->flags |= REQ_F_PARTIAL;
	for (int s = 0; s < TT_REQ_STAGES; s++)
		if (s != STAGE_RX_SOCKQ && s != STAGE_REQ_LATENCY && s != STAGE_REQ_TTFT)
			ev->stage_ns[s] = (__u64)((double)ev->stage_ns[s] * keep);
}

static inline struct attr_agg *population(enum scenario sc, int n, __u64 seed)
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
		case SC_SOFTIRQ:
			/* receive processing steered onto a CPU whose NET_RX softirq is
			 * starved: every request's segment waits a little in the backlog, the
			 * ones that arrive while the hog holds the CPU wait milliseconds */
			x.backlog = jit(&g, 6 * US, 0.5);
			if (urand(&g) < 0.02)
				x.backlog += uni(&g, 3 * MS, 12 * MS);
			break;
		}
		if (sc == SC_SLOWREAD)
			client_event(&g, &ev, i, t,
				     urand(&g) < 0.03 ? uni(&g, 20 * MS, 60 * MS) : 0);
		else
			server_event(&g, &ev, i, t, &x);
		if (modn(rnd(&g), 1000) < fixture_partial_per_mille)
			make_partial(&g, &ev);
		attr_agg__add(a, &ev);
		t += 1 * MS;
	}
	return a;
}

static inline void snap_with_dev(struct snapshot *s)
{
	struct dev_key k = { .netns = NETNS, .ifindex = IFINDEX };

	snapshot__init(s);
	assert_int_equal(snapshot__add_dev(s, &k, "tt-srv-eth0"), 0);
}

/* The driver/softirq histograms of the softirq-starvation scenario: the backlog of
 * dev/rxq 0 processed on CPU 0 (quick, most packets) and, through RPS, on CPU 1 (a heavy
 * tail); CPU 1's NET_RX softirq mostly pushed to ksoftirqd and waiting there. */
static inline void snap_add_nic(struct snapshot *s, struct gen *g)
{
	struct hist_key k = {
		.stage = STAGE_RX_BACKLOG, .netns = NETNS, .ifindex = IFINDEX, .queue = 1
	};
	struct hist *h;

	k.cpu = 1; /* CPU 0 */
	assert_non_null(h = snapshot__hist(s, &k));
	for (int i = 0; i < 30000; i++)
		hist_record(h, jit(g, 6 * US, 0.5));
	k.cpu = 2; /* CPU 1 */
	assert_non_null(h = snapshot__hist(s, &k));
	for (int i = 0; i < 10000; i++)
		hist_record(h, urand(g) < 0.05 ? uni(g, 3 * MS, 12 * MS) : jit(g, 8 * US, 0.5));
	memset(&k, 0, sizeof(k));
	k.stage = STAGE_RX_SOFTIRQ;
	k.cpu = 2;
	k.queue = SOFTIRQ_CTX_KSOFTIRQD;
	assert_non_null(h = snapshot__hist(s, &k));
	for (int i = 0; i < 900; i++)
		hist_record(h, uni(g, 1 * MS, 10 * MS));
	k.queue = SOFTIRQ_CTX_IRQ;
	assert_non_null(h = snapshot__hist(s, &k));
	for (int i = 0; i < 100; i++)
		hist_record(h, jit(g, 3 * US, 0.5));
	k.cpu = 1;
	assert_non_null(h = snapshot__hist(s, &k));
	for (int i = 0; i < 5000; i++)
		hist_record(h, jit(g, 3 * US, 0.5));
}

static inline void analyze(struct attr_agg *a, struct attr_report *r)
{
	struct snapshot s;

	snap_with_dev(&s);
	attr_analyze(a, &s, 30.0, NULL, r);
	snapshot__free(&s);
}

#endif
