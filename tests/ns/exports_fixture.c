// SPDX-License-Identifier: GPL-2.0
/* Writes a synthetic recording through the real recorder (no BPF, no root) and prints the
 * ground truth the consumer test checks the exports against (HOST: the host name its
 * segments carry, default the node name): built by
 * tests/ns/test_exports_consumers.sh against build/libtt.a. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attr/attribution.h"
#include "core/histogram.h"
#include "record/record_format.h"

#define T0_NS             1714564800000000000ULL /* 2024-05-01T12:00:00Z */
#define INTERVAL_NS       10000000000ULL
#define INTERVALS         6
#define REQS_PER_INTERVAL 40

static __u64 rng = 88172645463325252ULL;

static __u64 next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(int argc, char **argv)
{
	char err[256];
	struct recorder *r;
	__u64 tail_ns = 0, reqs = 0, lat_count = 0, qdisc_ns = 0;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: %s DIR [HOST]\n", argv[0]);
		return 2;
	}
	r = recorder__open(argv[1], 64ULL << 20, argc == 3 ? argv[2] : NULL, err, sizeof(err));
	if (!r) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	for (int iv = 0; iv < INTERVALS; iv++) {
		struct snapshot s;
		struct hist_key k;
		struct hist h;
		struct dev_key dk = { .netns = 4026531840u, .ifindex = 2 };

		snapshot__init(&s);
		s.start_ns = T0_NS + iv * INTERVAL_NS;
		s.end_ns = s.start_ns + INTERVAL_NS;
		s.attr = attr_agg__new();
		snapshot__add_dev(&s, &dk, "eth0");
		s.slow_reqs = calloc(REQS_PER_INTERVAL, sizeof(*s.slow_reqs));
		s.slow_cap = REQS_PER_INTERVAL;
		memset(&h, 0, sizeof(h));
		for (int i = 0; i < REQS_PER_INTERVAL; i++) {
			struct req_event *e = &s.slow_reqs[s.nslow++];
			__u64 lat = 2000000 + next_rand() % 30000000;

			e->sk_cookie = 1000 + iv * 100 + i;
			e->start_ns = 5000000000ULL + (iv * REQS_PER_INTERVAL + i) * 50000000ULL;
			e->end_ns = e->start_ns + lat;
			e->first_resp_ns = e->start_ns + lat / 3;
			e->stage_ns[STAGE_RX_STACK] = 20000;
			e->stage_ns[STAGE_TX_QDISC] = lat / 4;
			e->stage_ns[STAGE_SCHED_RUNQ] = lat / 5;
			e->stage_ns[STAGE_SCHED_ONCPU] = lat / 6;
			e->tgid = i % 2 ? 4242 : 777;
			e->tid = e->tgid + 1;
			memcpy(e->comm, i % 2 ? "vllm;serve" : "triton", i % 2 ? 10 : 6);
			e->chunks = 16;
			e->ifindex = 2;
			e->netns = 4026531840u;
			e->qdisc_handle = 0x10000;
			e->cpu = i % 4;
			e->lport = 8000;
			e->rport = 40000 + i;
			e->family = 2;
			e->role = ROLE_SERVER;
			e->raddr[0] = 10;
			e->raddr[3] = 2;
			e->bytes_in = 512;
			e->bytes_out = 4096;
			attr_agg__add(s.attr, e);
			hist_record(&h, lat);
			tail_ns += lat;
			qdisc_ns += e->stage_ns[STAGE_TX_QDISC];
			reqs++;
		}
		memset(&k, 0, sizeof(k));
		k.stage = STAGE_REQ_LATENCY;
		k.by = GROUP_PORT;
		k.id = 8000;
		snapshot__add_hist(&s, &k, &h);
		lat_count += h.count;
		memset(&k, 0, sizeof(k));
		memset(&h, 0, sizeof(h));
		k.stage = STAGE_TX_QDISC;
		k.ifindex = 2;
		k.netns = 4026531840u;
		k.qdisc_handle = 0x10000;
		for (int i = 0; i < 500; i++)
			hist_record(&h, 1000 + next_rand() % 5000000);
		snapshot__add_hist(&s, &k, &h);
		{
			/* the driver/softirq counters: a device queue, a CPU's backlog, a CPU */
			struct napi_key nk = { .netns = 4026531840u,
					       .ifindex = 2,
					       .napi_id = 8193 };
			struct napi_count nc = { .polls = 40, .exhausted = 2, .work = 900 };
			struct snap_softnet sn = { .cpu = 1, .processed = 900, .time_squeeze = 3 };

			snapshot__add_napi(&s, &nk, &nc);
			nk = (struct napi_key){ .napi_id = 1 };
			snapshot__add_napi(&s, &nk, &nc);
			snapshot__add_softnet(&s, &sn);
		}
		s.counters[CNT_RETRANS] = 3;
		s.counters[CNT_EVENTS_LOST] = 1;
		s.events_lost = 1;
		s.drop_reasons[2] = 5;
		s.hist_live = 2;
		s.slow_threshold_ns = 2000000;
		s.self_cpu_s = 0.25;
		s.self_rss_kb = 20480;
		if (recorder__append(r, &s)) {
			fprintf(stderr, "append failed\n");
			return 1;
		}
		snapshot__free(&s);
	}
	recorder__close(r);
	printf("tail_ns=%llu requests=%llu latency_count=%llu qdisc_ns=%llu\n",
	       (unsigned long long)tail_ns, (unsigned long long)reqs, (unsigned long long)lat_count,
	       (unsigned long long)qdisc_ns);
	return 0;
}
