// SPDX-License-Identifier: GPL-2.0
/* Record segments: every field round-trips, rotation and --max-size hold, torn tails are
 * skipped at every cut, corruption is an error with the offset, time windows select. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "attr/attribution.h"
#include "core/histogram.h"
#include "record/record_format.h"
#include "core/stages.h"

static void fill_event(struct req_event *e, unsigned seed)
{
	memset(e, 0, sizeof(*e));
	e->sk_cookie = 0x1122334455667788ULL + seed;
	e->start_ns = 1000000000ULL * seed + 17;
	e->end_ns = e->start_ns + 5000000 + seed * 1000;
	e->first_resp_ns = e->start_ns + 1000000;
	for (int i = 0; i < TT_REQ_STAGES; i++)
		e->stage_ns[i] = (i + 1) * 1000 + seed;
	e->max_gap_ns = 77 + seed;
	e->srtt_ns = 200000 + seed;
	e->min_rtt_ns = 100000;
	e->cgroup_id = 0xabcdef + seed;
	e->tgid = 100 + seed;
	e->tid = 200 + seed;
	e->chunks = 3 + seed;
	e->retrans = 1;
	e->retrans_rto = 2;
	e->drops = 3;
	e->ecn_ce = 4;
	e->ifindex = 5;
	e->qdisc_handle = 0x10001;
	e->netns = 4026531840u;
	e->cpu = seed % 8;
	e->bytes_in = 1000 + seed;
	e->bytes_out = 2000 + seed;
	e->lport = 8000;
	e->rport = (__u16)(40000 + seed);
	e->family = 10;
	e->role = ROLE_CLIENT;
	/* the split depends on these: tx.sendq in loss recovery is transport */
	e->flags = REQ_F_LOSS_RECOVERY | REQ_F_STREAM | (seed & 1 ? REQ_F_OVERLAP : 0);
	e->proto = PROTO_HTTP2;
	e->stream_id = 2 * seed + 1;
	for (int i = 0; i < 16; i++)
		e->raddr[i] = (__u8)(i * 7 + seed);
	snprintf(e->comm, sizeof(e->comm), "w%u", seed);
}

/* A snapshot with every field set to something distinct. */
static void make_snapshot(struct snapshot *s, __u64 start, unsigned nslow)
{
	struct hist_key k;
	struct hist h;
	struct dev_key dk = { .netns = 4026531840u, .ifindex = 5 };

	snapshot__init(s);
	s->start_ns = start;
	s->end_ns = start + 10000000000ULL;
	memset(&k, 0, sizeof(k));
	memset(&h, 0, sizeof(h));
	k.stage = STAGE_TX_QDISC;
	k.by = GROUP_COMM;
	k.family = 2;
	k.ifindex = 5;
	k.qdisc_handle = 0x10001;
	k.netns = 4026531840u;
	k.tgid = 4242;
	k.id = 99;
	memcpy(k.addr, "\x0a\x00\x00\x02", 4);
	memcpy(k.comm, "vllm", 4);
	for (__u64 v = 1; v < (1ULL << 40); v = v * 3 + 1)
		hist_record(&h, v);
	hist_record(&h, 1ULL << 50); /* overflow slot */
	assert_int_equal(snapshot__add_hist(s, &k, &h), 0);
	k.stage = STAGE_REQ_LATENCY;
	k.by = GROUP_PORT;
	k.id = 8000;
	hist_record(&h, 123456789);
	assert_int_equal(snapshot__add_hist(s, &k, &h), 0);
	assert_int_equal(snapshot__add_dev(s, &dk, "eth0"), 0);
	dk.ifindex = 1;
	assert_int_equal(snapshot__add_dev(s, &dk, "lo"), 0);
	for (int i = 0; i < CNT__MAX; i++)
		s->counters[i] = 1000 + i;
	s->drop_reasons[2] = 7;
	s->drop_reasons[TT_DROP_REASONS - 1] = 9;
	s->hist_evicted = 11;
	s->hist_live = 12;
	s->events_lost = 13;
	s->pkt_unmatched = 16;
	s->slow_cut = 14;
	s->slow_threshold_ns = 15000000;
	s->self_cpu_s = 0.125;
	s->self_rss_kb = 30000;
	{
		struct napi_key nk = { .netns = 4026531840u, .ifindex = 5, .napi_id = 8193 };
		struct napi_count nc = { .polls = 400, .exhausted = 3, .work = 9000 };
		struct snap_softnet sn = { .cpu = 1,
					   .processed = 12345,
					   .dropped = 6,
					   .time_squeeze = 7,
					   .received_rps = 8,
					   .flow_limit = 9 };

		assert_int_equal(snapshot__add_napi(s, &nk, &nc), 0);
		nk = (struct napi_key){ .napi_id = 1 }; /* CPU 1's backlog */
		nc = (struct napi_count){ .polls = 50, .exhausted = 0, .work = 70 };
		assert_int_equal(snapshot__add_napi(s, &nk, &nc), 0);
		assert_int_equal(snapshot__add_softnet(s, &sn), 0);
		sn.cpu = 0;
		sn.dropped = 0;
		assert_int_equal(snapshot__add_softnet(s, &sn), 0);
	}
	s->attr = attr_agg__new();
	assert_non_null(s->attr);
	if (nslow) {
		s->slow_reqs = calloc(nslow, sizeof(*s->slow_reqs));
		s->slow_cap = nslow;
		for (unsigned i = 0; i < nslow; i++) {
			fill_event(&s->slow_reqs[s->nslow++], i);
			attr_agg__add(s->attr, &s->slow_reqs[i]);
		}
	}
}

static void assert_snapshots_equal(const struct snapshot *a, const struct snapshot *b)
{
	assert_int_equal(a->start_ns, b->start_ns);
	assert_int_equal(a->end_ns, b->end_ns);
	assert_int_equal(a->nhists, b->nhists);
	for (size_t i = 0; i < a->nhists; i++) {
		assert_memory_equal(&a->hists[i].key, &b->hists[i].key, sizeof(a->hists[i].key));
		assert_memory_equal(&a->hists[i].h, &b->hists[i].h, sizeof(a->hists[i].h));
	}
	assert_int_equal(a->ndevs, b->ndevs);
	for (size_t i = 0; i < a->ndevs; i++)
		assert_memory_equal(&a->devs[i], &b->devs[i], sizeof(a->devs[i]));
	assert_memory_equal(a->counters, b->counters, sizeof(a->counters));
	assert_memory_equal(a->drop_reasons, b->drop_reasons, sizeof(a->drop_reasons));
	assert_int_equal(a->hist_evicted, b->hist_evicted);
	assert_int_equal(a->hist_live, b->hist_live);
	assert_int_equal(a->events_lost, b->events_lost);
	assert_int_equal(a->pkt_unmatched, b->pkt_unmatched);
	assert_int_equal(a->slow_cut, b->slow_cut);
	assert_int_equal(a->slow_threshold_ns, b->slow_threshold_ns);
	assert_true(a->self_cpu_s == b->self_cpu_s);
	assert_int_equal(a->self_rss_kb, b->self_rss_kb);
	assert_int_equal(a->nnapi, b->nnapi);
	for (size_t i = 0; i < a->nnapi; i++)
		assert_memory_equal(&a->napi[i], &b->napi[i], sizeof(a->napi[i]));
	assert_int_equal(a->nsoftnet, b->nsoftnet);
	for (size_t i = 0; i < a->nsoftnet; i++)
		assert_memory_equal(&a->softnet[i], &b->softnet[i], sizeof(a->softnet[i]));
	assert_int_equal(a->nslow, b->nslow);
	for (size_t i = 0; i < a->nslow; i++)
		assert_memory_equal(&a->slow_reqs[i], &b->slow_reqs[i], sizeof(a->slow_reqs[i]));
	assert_int_equal(!!a->attr, !!b->attr);
	if (a->attr)
		assert_true(attr_agg__equal(a->attr, b->attr));
}

struct collected {
	struct snapshot s[64];
	int n;
};

static int collect(const struct snapshot *s, void *ctx)
{
	struct collected *c = ctx;

	if (c->n == 64)
		return -E2BIG;
	snapshot__init(&c->s[c->n]);
	/* merge into an empty snapshot = deep copy */
	return snapshot__merge(&c->s[c->n++], s);
}

static void collected_free(struct collected *c)
{
	for (int i = 0; i < c->n; i++)
		snapshot__free(&c->s[i]);
	c->n = 0;
}

static void header_for_test(struct rec_header *h)
{
	memset(h, 0, sizeof(*h));
	h->version = REC_VERSION;
	h->flags = REC_FLAG_ZLIB;
	h->created_ns = 1714564800000000000ULL;
	h->seq = 3;
	h->hist_sub_bits = HIST_SUB_BITS;
	h->hist_max_log2 = HIST_MAX_LOG2;
	strcpy(h->host, "testhost");
}

/* header + n intervals; frame_off[i] = offset of interval i's first frame */
static void build_segment(struct rec_buf *b, int n, unsigned nslow, size_t *frame_off)
{
	struct rec_header h;

	header_for_test(&h);
	assert_int_equal(rec_header_encode(b, &h), 0);
	for (int i = 0; i < n; i++) {
		struct snapshot s;

		make_snapshot(&s, 1714564800000000000ULL + i * 10000000000ULL, nslow);
		if (frame_off)
			frame_off[i] = b->len;
		assert_int_equal(rec_interval_encode(b, &s), 0);
		snapshot__free(&s);
	}
}

static void test_round_trip_every_field(void **state)
{
	struct rec_buf b = { 0 };
	struct rec_header h;
	struct rec_diag d;
	struct collected *c = calloc(1, sizeof(*c));
	struct snapshot want;

	(void)state;
	/* 1100 slow requests: three flight-recorder frames for one interval, after its
	 * snapshot and NIC counter frames */
	build_segment(&b, 2, 1100, NULL);
	assert_int_equal(rec_decode(b.p, b.len, "mem", &h, collect, c, &d), 0);
	assert_false(d.torn);
	assert_int_equal(c->n, 2);
	assert_int_equal(d.frames, 2 * 5);
	assert_string_equal(h.host, "testhost");
	assert_int_equal(h.seq, 3);
	assert_int_equal(h.created_ns, 1714564800000000000ULL);
	for (int i = 0; i < 2; i++) {
		make_snapshot(&want, 1714564800000000000ULL + i * 10000000000ULL, 1100);
		assert_snapshots_equal(&want, &c->s[i]);
		snapshot__free(&want);
	}
	collected_free(c);
	free(c);
	rec_buf__free(&b);
}

/* A raw NIC payload, field by field as docs/record-format.md says. */
static void raw_le(struct rec_buf *b, __u64 v, int n)
{
	b->p = realloc(b->p, b->len + (size_t)n);
	assert_non_null(b->p);
	for (int i = 0; i < n; i++)
		b->p[b->len++] = (__u8)(v >> (8 * i));
}

static void raw_str8(struct rec_buf *b, const char *s)
{
	raw_le(b, strlen(s), 1);
	for (; *s; s++)
		raw_le(b, (__u8)*s, 1);
}

/* Columns are read by name: a reader takes them in any order and skips one it does not
 * know (a later build's), so the frame can grow without a version change. */
static void test_nic_columns_by_name(void **state)
{
	struct rec_buf b = { 0 };
	struct snapshot s;

	(void)state;
	raw_le(&b, 1000, 8);
	raw_le(&b, 2000, 8);
	raw_le(&b, 4, 1);
	raw_str8(&b, "exhausted");
	raw_str8(&b, "polls_of_the_future");
	raw_str8(&b, "packets");
	raw_str8(&b, "polls");
	raw_le(&b, 1, 4);
	raw_le(&b, 7, 4); /* netns */
	raw_le(&b, 3, 4); /* ifindex */
	raw_le(&b, 9, 4); /* napi_id */
	raw_le(&b, 5, 8);
	raw_le(&b, 999, 8);
	raw_le(&b, 640, 8);
	raw_le(&b, 10, 8);
	raw_le(&b, 2, 1);
	raw_str8(&b, "time_squeeze");
	raw_str8(&b, "dropped");
	raw_le(&b, 2, 4);
	raw_le(&b, 1, 4); /* cpu 1 */
	raw_le(&b, 11, 8);
	raw_le(&b, 12, 8);
	raw_le(&b, 1, 4); /* cpu 1 again: summed */
	raw_le(&b, 1, 8);
	raw_le(&b, 1, 8);
	snapshot__init(&s);
	assert_int_equal(rec_payload_decode(REC_FRAME_NIC, b.p, b.len, &s), 0);
	assert_int_equal(s.start_ns, 1000);
	assert_int_equal(s.end_ns, 2000);
	assert_int_equal(s.nnapi, 1);
	assert_int_equal(s.napi[0].key.netns, 7);
	assert_int_equal(s.napi[0].key.ifindex, 3);
	assert_int_equal(s.napi[0].key.napi_id, 9);
	assert_int_equal(s.napi[0].c.polls, 10);
	assert_int_equal(s.napi[0].c.exhausted, 5);
	assert_int_equal(s.napi[0].c.work, 640);
	assert_int_equal(s.nsoftnet, 1);
	assert_int_equal(s.softnet[0].time_squeeze, 12);
	assert_int_equal(s.softnet[0].dropped, 13);
	assert_int_equal(s.softnet[0].processed, 0);
	snapshot__free(&s);
	/* one byte short: malformed, not a partial read */
	snapshot__init(&s);
	assert_int_equal(rec_payload_decode(REC_FRAME_NIC, b.p, b.len - 1, &s), -EBADMSG);
	snapshot__free(&s);
	rec_buf__free(&b);
}

/* A recording without the driver/softirq programs has no NIC frame (segments stay as
 * before); a NIC frame must follow the snapshot frame of its own interval; the window a
 * report merges sums the counters per instance and per CPU. */
static void test_nic_frame_placement_and_window(void **state)
{
	struct rec_buf b = { 0 }, nic = { 0 };
	struct collected *c = calloc(1, sizeof(*c));
	struct rec_header h;
	struct rec_diag d;
	struct snapshot s, win;
	char msg[256];

	(void)state;
	header_for_test(&h);
	assert_int_equal(rec_header_encode(&b, &h), 0);
	make_snapshot(&s, 1714564800000000000ULL, 0);
	free(s.napi);
	free(s.softnet);
	s.napi = NULL;
	s.softnet = NULL;
	s.nnapi = s.napi_cap = s.nsoftnet = s.softnet_cap = 0;
	assert_int_equal(rec_interval_encode(&b, &s), 0);
	snapshot__free(&s);
	assert_int_equal(rec_decode(b.p, b.len, "mem", NULL, collect, c, &d), 0);
	assert_int_equal(d.frames, 1);
	assert_int_equal(c->s[0].nnapi, 0);
	assert_int_equal(c->s[0].nsoftnet, 0);
	collected_free(c);

	/* a NIC frame of another interval after it */
	make_snapshot(&s, 1714564900000000000ULL, 0);
	assert_int_equal(rec_interval_encode(&nic, &s), 0);
	snapshot__free(&s);
	{
		/* the second frame of that interval is its NIC frame */
		size_t first = REC_FRAME_HDR +
			       (nic.p[4] | nic.p[5] << 8 | nic.p[6] << 16 | (size_t)nic.p[7] << 24);
		size_t at = b.len;

		assert_int_equal(nic.p[first], REC_FRAME_NIC);
		b.p = realloc(b.p, b.len + nic.len - first);
		memcpy(b.p + b.len, nic.p + first, nic.len - first);
		b.len += nic.len - first;
		assert_int_equal(rec_decode(b.p, b.len, "mem", NULL, collect, c, &d), -EBADMSG);
		assert_non_null(strstr(d.msg, "has no snapshot frame before it"));
		assert_int_equal(d.offset, at);
		collected_free(c);
	}
	rec_buf__free(&nic);

	/* two intervals merged as report merges them: sums per key */
	rec_buf__free(&b);
	build_segment(&b, 2, 0, NULL);
	assert_int_equal(rec_decode(b.p, b.len, "mem", NULL, collect, c, &d), 0);
	snapshot__init(&win);
	assert_int_equal(rec_window_merge(&win, &c->s[0], NULL, msg, sizeof(msg)), 0);
	assert_int_equal(rec_window_merge(&win, &c->s[1], NULL, msg, sizeof(msg)), 0);
	assert_int_equal(win.nnapi, 2);
	assert_int_equal(win.napi[0].c.polls, 800);
	assert_int_equal(win.napi[0].c.exhausted, 6);
	assert_int_equal(win.nsoftnet, 2);
	assert_int_equal(win.softnet[0].cpu, 1);
	assert_int_equal(win.softnet[0].dropped, 12);
	assert_int_equal(win.softnet[1].time_squeeze, 14);
	{
		const struct rec_limits lim = {
			.hists = 100, .devs = 100, .slow = 100, .napi = 2, .softnet = 2
		};
		struct napi_key nk = { .ifindex = 9, .napi_id = 1 };
		struct napi_count nc = { .polls = 1 };
		struct snap_softnet sn = { .cpu = 2 };

		snapshot__init(&s);
		assert_int_equal(snapshot__add_napi(&s, &nk, &nc), 0);
		assert_int_equal(rec_window_merge(&win, &s, &lim, msg, sizeof(msg)), -E2BIG);
		assert_non_null(strstr(msg, "more than 2 NAPI instances"));
		assert_int_equal(win.nnapi, 2);
		snapshot__free(&s);
		snapshot__init(&s);
		assert_int_equal(snapshot__add_softnet(&s, &sn), 0);
		assert_int_equal(rec_window_merge(&win, &s, &lim, msg, sizeof(msg)), -E2BIG);
		assert_non_null(strstr(msg, "more than 2 softnet_stat CPUs"));
		snapshot__free(&s);
	}
	snapshot__free(&win);
	collected_free(c);
	free(c);
	rec_buf__free(&b);
}

static void test_sparse_histograms_stay_small(void **state)
{
	struct rec_buf b = { 0 };
	struct snapshot s;

	(void)state;
	make_snapshot(&s, 1, 0);
	assert_int_equal(rec_interval_encode(&b, &s), 0);
	/* two dense histograms would be 2 * 721 * 8 bytes before compression */
	assert_true(b.len < 2 * HIST_SLOTS * 8 / 4);
	snapshot__free(&s);
	rec_buf__free(&b);
}

static void test_counter_names_complete(void **state)
{
	/* the names records carry (docs/record-format.md): a reader of older files looks
	 * counters up by them, so none may change */
	static const char *const stable[] = {
		"retrans",          "retrans_rto",      "retrans_fast",      "retrans_tlp",
		"retrans_other",    "retrans_untimed",  "retrans_synack",    "drops",
		"ecn_ce",           "qdisc_pkts",       "qdisc_drops",       "hist_inserts",
		"hist_update_fail", "flow_update_fail", "pkt_inserts",       "pkt_update_fail",
		"pkt_deletes",      "events_lost",      "sched_update_fail", "thread_inserts",
		"thread_deletes",   "sends_untimed",    "retrans_unseen",    "closes_unseen",
		"bql_stalls",       "responses_unseen", "stream_inserts",    "stream_update_fail",
		"stream_deletes",   "framing_lost",
	};

	(void)state;
	/* ids are internal: each name is there, whatever its id, and no other */
	assert_int_equal(sizeof(stable) / sizeof(stable[0]), CNT__MAX);
	for (size_t i = 0; i < sizeof(stable) / sizeof(stable[0]); i++)
		if (rec_counter_by_name(stable[i]) < 0)
			fail_msg("no counter is named %s in records any more", stable[i]);
	assert_null(rec_counter_name(CNT__MAX));
	assert_null(rec_counter_name(-1));
	for (int i = 0; i < CNT__MAX; i++) {
		const char *n = rec_counter_name(i);

		assert_non_null(n);
		assert_string_not_equal(n, "unnamed");
		assert_int_equal(rec_counter_by_name(n), i);
	}
}

static void test_torn_tail_every_offset(void **state)
{
	struct rec_buf b = { 0 };
	struct collected *c = calloc(1, sizeof(*c));
	size_t off[3], snap_end;
	struct rec_diag d;
	struct snapshot want;

	(void)state;
	build_segment(&b, 3, 0, off);
	/* the last interval is a snapshot frame and its NIC frame */
	snap_end = off[2] + REC_FRAME_HDR +
		   (b.p[off[2] + 4] | b.p[off[2] + 5] << 8 | b.p[off[2] + 6] << 16 |
		    (size_t)b.p[off[2] + 7] << 24);
	assert_int_equal(b.p[snap_end], REC_FRAME_NIC);
	/* every cut inside the last snapshot frame: the first two intervals survive, no
	 * error; a cut inside its NIC frame keeps the interval without its NIC counters */
	for (size_t cut = off[2]; cut < b.len; cut++) {
		assert_int_equal(rec_decode(b.p, cut, "mem", NULL, collect, c, &d), 0);
		assert_true(cut == off[2] || cut == snap_end ? !d.torn : d.torn);
		assert_int_equal(c->n, cut < snap_end ? 2 : 3);
		if (cut >= snap_end)
			assert_int_equal(c->s[2].nnapi + c->s[2].nsoftnet, 0);
		make_snapshot(&want, 1714564800000000000ULL + 10000000000ULL, 0);
		assert_snapshots_equal(&want, &c->s[1]);
		snapshot__free(&want);
		collected_free(c);
	}
	/* a last frame (the NIC frame) whose bytes are all there but wrong: CRC mismatch at
	 * the tail, its interval kept without it */
	b.p[b.len - 1] ^= 0x55;
	assert_int_equal(rec_decode(b.p, b.len, "mem", NULL, collect, c, &d), 0);
	assert_true(d.torn);
	assert_int_equal(c->n, 3);
	assert_int_equal(c->s[2].nnapi, 0);
	assert_non_null(strstr(d.msg, "CRC"));
	collected_free(c);
	/* a zero-filled tail (size grew, data never hit the disk) */
	memset(b.p + off[2], 0, b.len - off[2]);
	assert_int_equal(rec_decode(b.p, b.len, "mem", NULL, collect, c, &d), 0);
	assert_true(d.torn);
	assert_int_equal(c->n, 2);
	collected_free(c);
	/* every cut inside the header: an incomplete file, skipped with a warning */
	for (size_t cut = 0; cut < off[0]; cut++) {
		assert_int_equal(rec_decode(b.p, cut, "mem", NULL, collect, c, &d), 0);
		assert_true(d.torn);
		assert_int_equal(c->n, 0);
	}
	free(c);
	rec_buf__free(&b);
}

static void test_mid_file_corruption_names_offset(void **state)
{
	struct rec_buf b = { 0 };
	struct collected *c = calloc(1, sizeof(*c));
	size_t off[3];
	struct rec_diag d;
	char want[64];

	(void)state;
	build_segment(&b, 3, 0, off);
	b.p[off[1] + REC_FRAME_HDR + 5] ^= 0x01; /* inside the second frame's payload */
	assert_int_equal(rec_decode(b.p, b.len, "seg-x.ttrec", NULL, collect, c, &d), -EBADMSG);
	assert_int_equal(d.offset, off[1]);
	snprintf(want, sizeof(want), "offset %zu", off[1]);
	assert_non_null(strstr(d.msg, want));
	assert_non_null(strstr(d.msg, "seg-x.ttrec"));
	collected_free(c);
	b.p[off[1] + REC_FRAME_HDR + 5] ^= 0x01;
	b.p[off[1] + 1] = 7; /* reserved frame-header byte */
	assert_int_equal(rec_decode(b.p, b.len, "mem", NULL, collect, c, &d), -EBADMSG);
	assert_int_equal(d.offset, off[1]);
	collected_free(c);
	free(c);
	rec_buf__free(&b);
}

static void test_foreign_and_future_files(void **state)
{
	struct rec_buf b = { 0 };
	struct rec_header h;
	struct rec_diag d;
	const char *text = "# TYPE foo counter\nfoo_total 1\n";

	(void)state;
	assert_int_equal(rec_decode(text, strlen(text), "foo.txt", NULL, NULL, NULL, &d), -ENOTSUP);
	assert_non_null(strstr(d.msg, "foo.txt"));
	header_for_test(&h);
	assert_int_equal(rec_header_encode(&b, &h), 0);
	b.p[8] = REC_VERSION + 1; /* version field, before the CRC is even looked at */
	assert_int_equal(rec_decode(b.p, b.len, "new", NULL, NULL, NULL, &d), -EPROTONOSUPPORT);
	assert_int_equal(d.offset, 8);
	rec_buf__free(&b);
	h.flags |= 0x80;
	assert_int_equal(rec_header_encode(&b, &h), 0);
	assert_int_equal(rec_decode(b.p, b.len, "flags", NULL, NULL, NULL, &d), -EPROTONOSUPPORT);
	rec_buf__free(&b);
	header_for_test(&h);
	h.hist_sub_bits = HIST_SUB_BITS + 1;
	assert_int_equal(rec_header_encode(&b, &h), 0);
	assert_int_equal(rec_decode(b.p, b.len, "geom", NULL, NULL, NULL, &d), -EPROTONOSUPPORT);
	rec_buf__free(&b);
	header_for_test(&h);
	assert_int_equal(rec_header_encode(&b, &h), 0);
	b.p[20] ^= 1; /* created_ns under the header CRC */
	assert_int_equal(rec_decode(b.p, b.len, "crc", NULL, NULL, NULL, &d), -EBADMSG);
	rec_buf__free(&b);
}

static char *make_tmpdir(void)
{
	char tmpl[] = "/tmp/tt-rec-XXXXXX";
	char *d = mkdtemp(tmpl);

	assert_non_null(d);
	return strdup(d);
}

static void rm_rf(const char *dir)
{
	char p[8192];
	DIR *dp = opendir(dir);
	struct dirent *de;

	while (dp && (de = readdir(dp))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	if (dp)
		closedir(dp);
	rmdir(dir);
}

static __u64 dir_bytes(const char *dir, size_t *nseg)
{
	char **names, p[8192];
	size_t n;
	__u64 total = 0;
	struct stat st;

	assert_int_equal(rec_list_segments(dir, &names, &n), 0);
	for (size_t i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		assert_int_equal(stat(p, &st), 0);
		assert_int_equal(st.st_mode & 0777, 0600);
		total += (__u64)st.st_size;
	}
	rec_names_free(names, n);
	*nseg = n;
	return total;
}

static void test_rotation_and_max_size(void **state)
{
	char *dir = make_tmpdir(), err[256], sub[4200];
	const __u64 max = 96 << 10;
	struct recorder *r;
	struct collected *c = calloc(1, sizeof(*c));
	struct rec_diag d;
	size_t nseg, most = 0;
	struct stat st;

	(void)state;
	snprintf(sub, sizeof(sub), "%s/rec", dir);
	r = recorder__open(sub, max, NULL, err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	for (int i = 0; i < 60; i++) {
		struct snapshot s;

		make_snapshot(&s, 1714564800000000000ULL + i * 10000000000ULL, 20);
		assert_int_equal(recorder__append(r, &s), 0);
		snapshot__free(&s);
		assert_true(dir_bytes(sub, &nseg) <= max);
		assert_int_equal(recorder__usage(r), dir_bytes(sub, &nseg));
		if (nseg > most)
			most = nseg;
	}
	recorder__close(r);
	assert_true(most >= 4); /* rotated */
	/* what is left reads back as the newest intervals, contiguous, ending at the last */
	assert_int_equal(rec_read_path(sub, collect, c, &d), 0);
	assert_true(c->n > 0 && c->n < 60);
	for (int i = 0; i < c->n; i++)
		assert_int_equal(c->s[i].start_ns,
				 1714564800000000000ULL + (60 - c->n + i) * 10000000000ULL);
	collected_free(c);
	/* a restarted record continues the sequence instead of overwriting */
	r = recorder__open(sub, max, NULL, err, sizeof(err));
	assert_non_null(r);
	{
		struct snapshot s;

		make_snapshot(&s, 1714564800000000000ULL + 60 * 10000000000ULL, 0);
		assert_int_equal(recorder__append(r, &s), 0);
		snapshot__free(&s);
	}
	recorder__close(r);
	assert_int_equal(rec_read_path(sub, collect, c, &d), 0);
	assert_int_equal(c->s[c->n - 1].start_ns, 1714564800000000000ULL + 60 * 10000000000ULL);
	collected_free(c);
	free(c);
	rm_rf(sub);
	rmdir(dir);
	free(dir);
}

static void test_open_errors(void **state)
{
	char err[256] = "";

	(void)state;
	assert_null(recorder__open("/proc/self/no/such/dir", 0, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "/proc/self/no/such/dir"));
}

static void test_time_arguments(void **state)
{
	const __u64 now = 1714564800000000000ULL;
	__u64 t;

	(void)state;
	setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3", 1);
	tzset();
	assert_int_equal(rec_parse_time("2024-05-01T12:00:00Z", now, &t), 0);
	assert_int_equal(t, 1714564800000000000ULL);
	assert_int_equal(rec_parse_time("2024-05-01T14:00:00+02:00", now, &t), 0);
	assert_int_equal(t, 1714564800000000000ULL);
	assert_int_equal(rec_parse_time("2024-05-01T12:00:00.250Z", now, &t), 0);
	assert_int_equal(t, 1714564800250000000ULL);
	/* local time: CEST is UTC+2 on May 1st */
	assert_int_equal(rec_parse_time("2024-05-01 14:00", now, &t), 0);
	assert_int_equal(t, 1714564800000000000ULL);
	assert_int_equal(rec_parse_time("2024-05-01 14:00:30", now, &t), 0);
	assert_int_equal(t, 1714564830000000000ULL);
	assert_int_equal(rec_parse_time("1714564800", now, &t), 0);
	assert_int_equal(t, 1714564800000000000ULL);
	assert_int_equal(rec_parse_time("@1714564800.5", now, &t), 0);
	assert_int_equal(t, 1714564800500000000ULL);
	assert_int_equal(rec_parse_time("-10m", now, &t), 0);
	assert_int_equal(t, now - 600000000000ULL);
	assert_int_equal(rec_parse_time("-2h", now, &t), 0);
	assert_int_equal(t, now - 7200000000000ULL);
	assert_int_equal(rec_parse_time("-30s", now, &t), 0);
	assert_int_equal(t, now - 30000000000ULL);
	assert_int_equal(rec_parse_time("now", now, &t), 0);
	assert_int_equal(t, now);
	assert_int_equal(rec_parse_time("", now, &t), -EINVAL);
	assert_int_equal(rec_parse_time("-10x", now, &t), -EINVAL);
	assert_int_equal(rec_parse_time("2024-13-01 10:00", now, &t), -EINVAL);
	assert_int_equal(rec_parse_time("2024-05-01T25:00:00Z", now, &t), -EINVAL);
	assert_int_equal(rec_parse_time("yesterday", now, &t), -EINVAL);
	assert_int_equal(rec_parse_time("12abc", now, &t), -EINVAL);
	unsetenv("TZ");
	tzset();
}

static void test_window_midpoint(void **state)
{
	struct snapshot s;

	(void)state;
	snapshot__init(&s);
	s.start_ns = 100;
	s.end_ns = 200; /* midpoint 150 */
	assert_true(rec_in_window(&s, 0, UINT64_MAX));
	assert_true(rec_in_window(&s, 150, 151));
	assert_false(rec_in_window(&s, 151, 300));
	assert_false(rec_in_window(&s, 0, 150)); /* [from, to): adjacent windows partition */
	assert_true(rec_in_window(&s, 100, 200));
}

static int merge_window(const struct snapshot *s, void *ctx)
{
	char msg[256];

	return rec_window_merge(ctx, s, NULL, msg, sizeof(msg));
}

/* Every input the fuzzer once crashed on (and the seeds) stays harmless, read as
 * tests/fuzz/fuzz_segment.c reads it: merged into one window, as `report` does. */
static void test_fuzz_corpus_regress(void **state)
{
	const char *root = getenv("TT_ROOT");
	char dir[4096], p[4400];
	struct dirent *de;
	int files = 0;
	DIR *dp;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus-regress", root ? root : ".");
	dp = opendir(dir);
	if (!dp)
		fail_msg("no corpus at %s (set TT_ROOT): the replay would test nothing", dir);
	while ((de = readdir(dp))) {
		struct snapshot acc;
		struct rec_diag d;
		struct stat st;
		__u8 *buf;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		fd = open(p, O_RDONLY);
		if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		buf = malloc((size_t)st.st_size + 1);
		assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
		close(fd);
		/* the first byte picks the entry point, as in tests/fuzz/fuzz_segment.c */
		snapshot__init(&acc);
		if (st.st_size > 0 && buf[0] % 3 == 0)
			(void)rec_decode(buf + 1, (size_t)st.st_size - 1, de->d_name, NULL,
					 merge_window, &acc, &d);
		else if (st.st_size > 0 && buf[0] % 3 == 1)
			(void)rec_payload_decode(REC_FRAME_SNAPSHOT, buf + 1,
						 (size_t)st.st_size - 1, &acc);
		else if (st.st_size > 0) {
			(void)rec_payload_decode(REC_FRAME_FLIGHT, buf + 1, (size_t)st.st_size - 1,
						 &acc);
			snapshot__free(&acc);
			snapshot__init(&acc);
			(void)rec_payload_decode(REC_FRAME_NIC, buf + 1, (size_t)st.st_size - 1,
						 &acc);
		}
		snapshot__free(&acc);
		free(buf);
		files++;
	}
	closedir(dp);
	print_message("replayed %d corpus files\n", files);
	/* the seed, at least: an empty directory would pass without replaying anything */
	assert_true(files >= 1);
	{
		char seed[4400];
		struct stat st;

		snprintf(seed, sizeof(seed), "%s/seed-segment-head", dir);
		assert_int_equal(stat(seed, &st), 0);
		assert_true(st.st_size > 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_every_field),
		cmocka_unit_test(test_nic_columns_by_name),
		cmocka_unit_test(test_nic_frame_placement_and_window),
		cmocka_unit_test(test_sparse_histograms_stay_small),
		cmocka_unit_test(test_counter_names_complete),
		cmocka_unit_test(test_torn_tail_every_offset),
		cmocka_unit_test(test_mid_file_corruption_names_offset),
		cmocka_unit_test(test_foreign_and_future_files),
		cmocka_unit_test(test_rotation_and_max_size),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_time_arguments),
		cmocka_unit_test(test_window_midpoint),
		cmocka_unit_test(test_fuzz_corpus_regress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
