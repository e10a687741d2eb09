// SPDX-License-Identifier: GPL-2.0
/* Test application for the RDMA tracer: opens the stand-in device through the verbs API,
 * posts work requests whose completions the stand-in delivers after planned delays (out
 * of order, some with errors, some receive WRs, some unsignaled), reaps them by busy
 * polling or through a completion channel, and writes its own per-WR timings as JSON:
 * the ground truth tailtrace's rdma.wr / rdma.cq_event histograms are checked against.
 * --bench measures the cost of one post and one poll call instead. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <infiniband/verbs.h>
#include "standin.h"

#define MAX_QPS 16
/* wr_id bit of the WRs posted before --warm-until's file appears: not in the stats */
#define WARM_BIT (1ull << 40)
/* --same-wrid: the wr_id of every WR, as perftest posts them */
#define SAME_WRID 0x5157ull
/* --same-wrid: the WRs outstanding on each queue, in post order (queues complete in order) */
#define FIFO_MAX 4096

struct wr_rec {
	uint64_t post_ns;
	uint64_t lat_ns;
	uint32_t qpn;
	uint8_t status;
	uint8_t op; /* 0 RDMA_WRITE, 1 SEND, 2 RECV: the opcodes tailtrace's rows name */
	bool done;
	bool expect; /* a completion will come */
};

static struct {
	const char *mode, *out, *go_open, *go_post, *warm_until;
	long wrs, bench;
	int qps, depth, errors_every, recv_every, unsig_every;
	double scale; /* multiplies every planned delay */
	uint64_t seed;
	bool same_wrid; /* every WR with one wr_id, queues in order, capacity = depth */
} cfg = { .mode = "poll",
	  .wrs = 2000,
	  .qps = 2,
	  .depth = 8,
	  .errors_every = 0,
	  .recv_every = 0,
	  .unsig_every = 0,
	  .scale = 1.0,
	  .seed = 1 };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A tail-heavy completion delay: most WRs fast, a few an order of magnitude slower. */
static uint64_t pick_delay(uint64_t *s)
{
	uint64_t u = rng(s) % 1000, j = rng(s) % 1000;

	if (u < 600)
		return 100000 + j * 200; /* 100-300 us */
	if (u < 900)
		return 400000 + j * 500; /* 0.4-0.9 ms */
	if (u < 990)
		return 1500000 + j * 1000; /* 1.5-2.5 ms */
	return 6000000 + j * 2000;         /* 6-8 ms */
}

static void wait_file(const char *path)
{
	struct stat st;

	while (path && stat(path, &st))
		usleep(2000);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* nearest rank, as tailtrace's exact_quantile() */
static uint64_t quantile(const uint64_t *sorted, size_t n, double q)
{
	size_t r;

	if (!n)
		return 0;
	r = (size_t)(q * (double)n);
	if ((double)r < q * (double)n)
		r++;
	if (r < 1)
		r = 1;
	return sorted[r - 1];
}

static void print_dist(FILE *f, const char *key, uint64_t *v, size_t n, bool comma)
{
	double sum = 0;

	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < n; i++)
		sum += (double)v[i];
	fprintf(f,
		"\"%s\": {\"count\": %zu, \"mean_ns\": %.0f, \"p50_ns\": %llu, "
		"\"p90_ns\": %llu, \"p99_ns\": %llu, \"max_ns\": %llu}%s\n",
		key, n, n ? sum / (double)n : 0.0, (unsigned long long)quantile(v, n, 0.5),
		(unsigned long long)quantile(v, n, 0.9), (unsigned long long)quantile(v, n, 0.99),
		(unsigned long long)(n ? v[n - 1] : 0), comma ? "," : "");
}

/* The k/1000 quantiles (k = 0..1000) of sorted v: the distribution's shape, so a test can
 * ask where a tracer's quantile falls in the application's distribution (a rank) rather
 * than how far its value is, which jumps wherever the distribution has a gap. */
static void print_permille(FILE *f, const char *key, const uint64_t *sorted, size_t n)
{
	fprintf(f, "\"%s\": [", key);
	for (int k = 0; n && k <= 1000; k++)
		fprintf(f, "%s%llu", k ? ", " : "",
			(unsigned long long)(k ? quantile(sorted, n, k / 1000.0) : sorted[0]));
	fprintf(f, "]\n");
}

/* Each warm-up WR: CLOCK_MONOTONIC before its post, after the post returned, before the
 * poll call that reaped it and after (0: not yet). The truth of what a tracer attaching
 * during the warm-up can time (posted after its post probe attached, reaped by a poll call
 * that began after its poll probe attached) and of what was in flight then. */
struct warm_rec {
	uint64_t post0, post1, poll0, reaped;
};
#define WARM_MAX (1u << 20)
static struct warm_rec *warm_recs;

/* The life of a process tailtrace attaches to late: it keeps every QP depth deep with
 * signaled SEND_IMM WRs (planned delays, no errors) and busy-polls, making no verbs
 * control call, until the file cfg.warm_until appears. Returns the WRs posted. */
static long warm_up(struct ibv_qp **qp, struct ibv_cq *scq, int *out_q)
{
	uint32_t qpn0 = qp[0]->qp_num;
	uint64_t k = 0, next_check = 0;
	struct stat st;

	for (;;) {
		struct ibv_wc wc[16];
		uint64_t t = now_ns();
		int n;

		if (t >= next_check) {
			if (!stat(cfg.warm_until, &st))
				return (long)k;
			next_check = t + 1000000;
		}
		for (int i = 0; i < cfg.qps; i++) {
			while (out_q[i] < cfg.depth) {
				struct ibv_send_wr w = { .wr_id = WARM_BIT | ++k }, *bad;
				struct warm_rec *r = k < WARM_MAX ? &warm_recs[k] : NULL;

				w.opcode = IBV_WR_SEND_WITH_IMM;
				w.send_flags = IBV_SEND_SIGNALED;
				ttsi_plan(qp[i], w.wr_id,
					  (uint64_t)((double)pick_delay(&cfg.seed) * cfg.scale),
					  IBV_WC_SUCCESS);
				if (r)
					r->post0 = now_ns();
				if (ibv_post_send(qp[i], &w, &bad))
					return -1;
				if (r)
					r->post1 = now_ns();
				out_q[i]++;
			}
		}
		uint64_t p0 = now_ns();

		n = ibv_poll_cq(scq, 16, wc);
		for (int j = 0; j < n; j++) {
			uint64_t wk = wc[j].wr_id & ~WARM_BIT;

			out_q[wc[j].qp_num - qpn0]--;
			if (wk < WARM_MAX) {
				warm_recs[wk].poll0 = p0;
				warm_recs[wk].reaped = now_ns();
			}
		}
	}
}

/* "per_op": successful WRs per QP and opcode, the rows tailtrace's rdma.wr shows. */
static void print_per_op(FILE *f, struct ibv_qp **qp, const struct wr_rec *rec, uint64_t *lat)
{
	static const char *const names[] = { "RDMA_WRITE", "SEND", "RECV" };

	fprintf(f, "\"per_op\": [\n");
	for (int i = 0; i < cfg.qps; i++) {
		for (int op = 0; op < 3; op++) {
			size_t n = 0;
			char key[64];

			for (long id = 1; id <= cfg.wrs; id++)
				if (rec[id].done && !rec[id].status &&
				    rec[id].qpn == qp[i]->qp_num && rec[id].op == op)
					lat[n++] = rec[id].lat_ns;
			snprintf(key, sizeof(key), "%u %s", qp[i]->qp_num, names[op]);
			fprintf(f, "{");
			print_dist(f, key, lat, n, false);
			fprintf(f, "}%s", i + 1 < cfg.qps || op < 2 ? ",\n" : "\n");
		}
	}
	fprintf(f, "],\n");
}

static int bench(struct ibv_qp *qp, struct ibv_cq *cq, FILE *f)
{
	uint64_t *post = calloc(cfg.bench, 8), *hit = calloc(cfg.bench, 8),
		 *empty = calloc(cfg.bench, 8);
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc;

	if (!post || !hit || !empty)
		return 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	for (long i = 0; i < cfg.bench; i++) {
		uint64_t t0, t1, t2, t3;

		wr.wr_id = (uint64_t)i + 1;
		t0 = now_ns();
		if (ibv_post_send(qp, &wr, &bad))
			return 1;
		t1 = now_ns();
		if (ibv_poll_cq(cq, 1, &wc) != 1) /* no plan: completed at post */
			return 1;
		t2 = now_ns();
		if (ibv_poll_cq(cq, 1, &wc) != 0)
			return 1;
		t3 = now_ns();
		post[i] = t1 - t0;
		hit[i] = t2 - t1;
		empty[i] = t3 - t2;
	}
	fprintf(f, "{\"pid\": %d, \"bench\": {\n", getpid());
	print_dist(f, "post", post, cfg.bench, true);
	print_dist(f, "poll_hit", hit, cfg.bench, true);
	print_dist(f, "poll_empty", empty, cfg.bench, false);
	fprintf(f, "}}\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "mode", 1, NULL, 'm' },
		{ "wrs", 1, NULL, 'n' },
		{ "qps", 1, NULL, 'q' },
		{ "depth", 1, NULL, 'D' },
		{ "errors-every", 1, NULL, 'e' },
		{ "recv-every", 1, NULL, 'r' },
		{ "unsignaled-every", 1, NULL, 'u' },
		{ "seed", 1, NULL, 's' },
		{ "out", 1, NULL, 'o' },
		{ "go-open", 1, NULL, 'O' },
		{ "go-post", 1, NULL, 'P' },
		{ "bench", 1, NULL, 'b' },
		{ "scale", 1, NULL, 'S' },
		{ "warm-until", 1, NULL, 'W' },
		{ "same-wrid", 0, NULL, 'I' },
		{ 0 },
	};
	static const enum ibv_wc_status errs[] = { IBV_WC_RETRY_EXC_ERR, IBV_WC_REM_ACCESS_ERR,
						   IBV_WC_WR_FLUSH_ERR };
	struct ibv_device **devs;
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch = NULL;
	struct ibv_cq *scq, *rcq;
	struct ibv_pd *pd;
	struct ibv_qp *qp[MAX_QPS];
	struct wr_rec *rec;
	uint64_t *lat, *cqev, *qlat;
	long posted = 0, done = 0, expected = 0, nlat = 0, ncqev = 0, nunsig = 0, ooo = 0, warm = 0;
	long warm_out = 0; /* warm-up WRs still outstanding */
	long nerr[32] = { 0 };
	int out_q[MAX_QPS] = { 0 };
	uint64_t last_done_id[MAX_QPS] = { 0 };
	static uint64_t fifo[MAX_QPS][2][FIFO_MAX]; /* --same-wrid: record ids, per queue */
	static unsigned int fhead[MAX_QPS][2], ftail[MAX_QPS][2];
	bool event_mode;
	FILE *f = stdout;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			cfg.mode = optarg;
			break;
		case 'n':
			cfg.wrs = atol(optarg);
			break;
		case 'q':
			cfg.qps = atoi(optarg);
			break;
		case 'D':
			cfg.depth = atoi(optarg);
			break;
		case 'e':
			cfg.errors_every = atoi(optarg);
			break;
		case 'r':
			cfg.recv_every = atoi(optarg);
			break;
		case 'u':
			cfg.unsig_every = atoi(optarg);
			break;
		case 's':
			cfg.seed = strtoull(optarg, NULL, 0);
			break;
		case 'o':
			cfg.out = optarg;
			break;
		case 'O':
			cfg.go_open = optarg;
			break;
		case 'P':
			cfg.go_post = optarg;
			break;
		case 'b':
			cfg.bench = atol(optarg);
			break;
		case 'S':
			cfg.scale = atof(optarg);
			break;
		case 'W':
			cfg.warm_until = optarg;
			break;
		case 'I':
			cfg.same_wrid = true;
			break;
		default:
			fprintf(stderr, "usage: rdma_app [--mode poll|event] [--wrs N] [--qps N] "
					"[--depth N] [--errors-every K] [--recv-every K] "
					"[--unsignaled-every K] [--seed S] [--go-open FILE] "
					"[--go-post FILE] [--out FILE] [--scale F] [--bench N] "
					"[--warm-until FILE] [--same-wrid]\n");
			return 2;
		}
	}
	event_mode = !strcmp(cfg.mode, "event");
	if (cfg.qps < 1 || cfg.qps > MAX_QPS || cfg.wrs < 1 || cfg.depth < 1 || cfg.scale <= 0 ||
	    (cfg.same_wrid && (cfg.depth > FIFO_MAX || cfg.warm_until)))
		return 2;
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	rec = calloc((size_t)cfg.wrs + 1, sizeof(*rec));
	lat = calloc((size_t)cfg.wrs, 8);
	qlat = calloc((size_t)cfg.wrs, 8);
	cqev = calloc((size_t)cfg.wrs + 16, 8);
	if (!rec || !lat || !qlat || !cqev)
		return 1;

	wait_file(cfg.go_open);
	devs = ibv_get_device_list(NULL);
	if (!devs || !devs[0] || !(ctx = ibv_open_device(devs[0]))) {
		perror("ibv_open_device");
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	if (event_mode)
		ch = ibv_create_comp_channel(ctx);
	scq = ibv_create_cq(ctx, 4096, NULL, ch, 0);
	rcq = ibv_create_cq(ctx, 4096, NULL, ch, 0);
	for (int i = 0; i < cfg.qps; i++) {
		struct ibv_qp_init_attr ia = { .send_cq = scq,
					       .recv_cq = rcq,
					       .cap = { 1024, 1024, 1, 1, 0 },
					       .qp_type = IBV_QPT_RC,
					       .sq_sig_all = 0 };
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RTR };

		if (cfg.same_wrid) /* as perftest: the queues as deep as the traffic */
			ia.cap.max_send_wr = ia.cap.max_recv_wr = (uint32_t)cfg.depth;
		qp[i] = ibv_create_qp(pd, &ia);
		if (!qp[i])
			return 1;
		if (cfg.same_wrid)
			ttsi_qp_in_order(qp[i]);
		/* loopback pairs: QP i talks to QP i^1 (or itself) */
		qa.dest_qp_num = qp[0]->qp_num + (uint32_t)((i ^ 1) < cfg.qps ? (i ^ 1) : i);
		ibv_modify_qp(qp[i], &qa, IBV_QP_STATE | IBV_QP_DEST_QPN);
	}
	wait_file(cfg.go_post);
	if (cfg.bench) {
		if (cfg.out && !(f = fopen(cfg.out, "w")))
			return 1;
		c = bench(qp[0], scq, f);
		fclose(f);
		return c;
	}
	if (cfg.warm_until && !(warm_recs = calloc(WARM_MAX, sizeof(*warm_recs))))
		return 1;
	if (cfg.warm_until && (warm = warm_up(qp, scq, out_q)) < 0)
		return 1;
	for (int i = 0; i < cfg.qps; i++)
		warm_out += out_q[i];

	while (done < expected || posted < cfg.wrs) {
		struct ibv_wc wc[16];
		int n, from_rcq = 0;
		uint64_t poll0;

		/* keep every QP `depth` deep */
		for (int i = 0; i < cfg.qps && posted < cfg.wrs; i++) {
			while (out_q[i] < cfg.depth && posted < cfg.wrs) {
				uint64_t id = (uint64_t)++posted;
				struct wr_rec *r = &rec[id];
				enum ibv_wc_status st = IBV_WC_SUCCESS;
				bool recv = cfg.recv_every && id % (uint64_t)cfg.recv_every == 0;
				bool unsig = !recv && cfg.unsig_every &&
					     id % (uint64_t)cfg.unsig_every == 0;
				int err;

				uint64_t wr_id = cfg.same_wrid ? SAME_WRID : id;

				if (cfg.errors_every && id % (uint64_t)cfg.errors_every == 0)
					st = errs[(id / (uint64_t)cfg.errors_every) % 3];
				ttsi_plan(qp[i], wr_id,
					  (uint64_t)((double)pick_delay(&cfg.seed) * cfg.scale),
					  st);
				r->qpn = qp[i]->qp_num;
				r->op = recv ? 2 : id % 3 ? 0 : 1;
				r->expect = !unsig;
				r->post_ns = now_ns();
				if (cfg.same_wrid && !unsig)
					fifo[i][recv][ftail[i][recv]++ % FIFO_MAX] = id;
				if (recv) {
					struct ibv_recv_wr w = { .wr_id = wr_id }, *bad;

					err = ibv_post_recv(qp[i], &w, &bad);
				} else {
					struct ibv_send_wr w = { .wr_id = wr_id }, *bad;

					w.opcode = id % 3 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
					w.send_flags = unsig ? 0 : IBV_SEND_SIGNALED;
					err = ibv_post_send(qp[i], &w, &bad);
				}
				if (err)
					return 1;
				if (unsig) {
					nunsig++;
					continue;
				}
				out_q[i]++;
				expected++;
			}
		}
		if (done >= expected && !warm_out)
			continue;
		poll0 = now_ns();
		n = ibv_poll_cq(scq, 16, wc);
		if (n <= 0) {
			n = ibv_poll_cq(rcq, 16, wc);
			from_rcq = 1;
		}
		if (n == 0 && event_mode) {
			struct ibv_cq *ecq;
			void *ectx;

			ibv_req_notify_cq(scq, 0);
			ibv_req_notify_cq(rcq, 0);
			/* re-poll: a completion may have landed before the arm */
			n = ibv_poll_cq(scq, 16, wc);
			from_rcq = 0;
			if (n <= 0) {
				n = ibv_poll_cq(rcq, 16, wc);
				from_rcq = 1;
			}
			if (n == 0) {
				if (ibv_get_cq_event(ch, &ecq, &ectx))
					return 1;
				cqev[ncqev++] = now_ns() - ttsi_cq_last_event_ns(ecq);
				ibv_ack_cq_events(ecq, 1);
				continue;
			}
		}
		if (n < 0)
			return 1;
		for (int k = 0; k < n; k++) {
			uint64_t t = now_ns(), rid = wc[k].wr_id;
			struct wr_rec *r;
			int qi;

			if (cfg.same_wrid) {
				int fq = (int)(wc[k].qp_num - qp[0]->qp_num);

				if (wc[k].wr_id != SAME_WRID || fq < 0 || fq >= cfg.qps ||
				    fhead[fq][from_rcq] == ftail[fq][from_rcq])
					return 1;
				rid = fifo[fq][from_rcq][fhead[fq][from_rcq]++ % FIFO_MAX];
			}
			r = rid <= (uint64_t)cfg.wrs ? &rec[rid] : NULL;

			if (wc[k].wr_id & WARM_BIT) {
				uint64_t wk = wc[k].wr_id & ~WARM_BIT;

				if (wk < WARM_MAX) {
					warm_recs[wk].poll0 = poll0;
					warm_recs[wk].reaped = t;
				}
				out_q[wc[k].qp_num - qp[0]->qp_num]--;
				warm_out--;
				continue;
			}
			if (!r || r->done || r->qpn != wc[k].qp_num)
				return 1;
			r->done = true;
			r->status = (uint8_t)wc[k].status;
			r->lat_ns = t - r->post_ns;
			qi = (int)(r->qpn - qp[0]->qp_num);
			out_q[qi]--;
			done++;
			if (rid < last_done_id[qi])
				ooo++;
			else
				last_done_id[qi] = rid;
			if (wc[k].status == IBV_WC_SUCCESS)
				lat[nlat++] = r->lat_ns;
			else
				nerr[wc[k].status & 31]++;
		}
	}

	if (cfg.out && !(f = fopen(cfg.out, "w"))) {
		perror(cfg.out);
		return 1;
	}
	fprintf(f,
		"{\"pid\": %d, \"mode\": \"%s\", \"posted\": %ld, \"completed\": %ld, "
		"\"unsignaled\": %ld, \"out_of_order\": %ld, \"warm_wrs\": %ld,\n",
		getpid(), cfg.mode, posted, done, nunsig, ooo, warm);
	fprintf(f, "\"errors\": {");
	for (int s = 0, first = 1; s < 32; s++) {
		if (!nerr[s])
			continue;
		fprintf(f, "%s\"%d\": %ld", first ? "" : ", ", s, nerr[s]);
		first = 0;
	}
	fprintf(f, "},\n\"per_qp\": [\n");
	for (int i = 0; i < cfg.qps; i++) {
		size_t nq = 0;
		char key[32];

		for (long id = 1; id <= cfg.wrs; id++)
			if (rec[id].done && !rec[id].status && rec[id].qpn == qp[i]->qp_num)
				qlat[nq++] = rec[id].lat_ns;
		snprintf(key, sizeof(key), "%u", qp[i]->qp_num);
		fprintf(f, "{");
		print_dist(f, key, qlat, nq, false);
		fprintf(f, "}%s", i + 1 < cfg.qps ? ",\n" : "\n");
	}
	fprintf(f, "],\n");
	print_per_op(f, qp, rec, qlat);
	if (warm_recs) {
		/* [post, post returned, reaping poll began, reaped] of each warm-up WR,
		 * CLOCK_MONOTONIC ns */
		fprintf(f, "\"warm\": [");
		for (long k = 1; k <= warm && k < (long)WARM_MAX; k++)
			fprintf(f, "%s[%llu, %llu, %llu, %llu]", k > 1 ? ", " : "",
				(unsigned long long)warm_recs[k].post0,
				(unsigned long long)warm_recs[k].post1,
				(unsigned long long)warm_recs[k].poll0,
				(unsigned long long)warm_recs[k].reaped);
		fprintf(f, "],\n");
	}
	print_dist(f, "cq_event", cqev, (size_t)ncqev, true);
	print_dist(f, "wr", lat, (size_t)nlat, true);
	print_permille(f, "wr_permille", lat, (size_t)nlat);
	fprintf(f, "}\n");
	if (f != stdout)
		fclose(f);
	for (int i = 0; i < cfg.qps; i++)
		ibv_destroy_qp(qp[i]);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	if (ch)
		ibv_destroy_comp_channel(ch);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(devs);
	return 0;
}
