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

				w.opcode = IBV_WR_SEND_WITH_IMM;
				w.send_flags = IBV_SEND_SIGNALED;
				ttsi_plan(qp[i], w.wr_id,
					  (uint64_t)((double)pick_delay(&cfg.seed) * cfg.scale),
					  IBV_WC_SUCCESS);
				if (ibv_post_send(qp[i], &w, &bad))
					return -1;
				out_q[i]++;
			}
		}
		n = ibv_poll_cq(scq, 16, wc);
		for (int j = 0; j < n; j++)
			out_q[wc[j].qp_num - qpn0]--;
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
		default:
			fprintf(stderr, "usage: rdma_app [--mode poll|event] [--wrs N] [--qps N] "
					"[--depth N] [--errors-every K] [--recv-every K] "
					"[--unsignaled-every K] [--seed S] [--go-open FILE] "
					"[--go-post FILE] [--out FILE] [--scale F] [--bench N] "
					"[--warm-until FILE]\n");
			return 2;
		}
	}
	event_mode = !strcmp(cfg.mode, "event");
	if (cfg.qps < 1 || cfg.qps > MAX_QPS || cfg.wrs < 1 || cfg.depth < 1 || cfg.scale <= 0)
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

		qp[i] = ibv_create_qp(pd, &ia);
		if (!qp[i])
			return 1;
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
	if (cfg.warm_until && (warm = warm_up(qp, scq, out_q)) < 0)
		return 1;
	for (int i = 0; i < cfg.qps; i++)
		warm_out += out_q[i];

	while (done < expected || posted < cfg.wrs) {
		struct ibv_wc wc[16];
		int n;

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

				if (cfg.errors_every && id % (uint64_t)cfg.errors_every == 0)
					st = errs[(id / (uint64_t)cfg.errors_every) % 3];
				ttsi_plan(qp[i], id,
					  (uint64_t)((double)pick_delay(&cfg.seed) * cfg.scale),
					  st);
				r->qpn = qp[i]->qp_num;
				r->op = recv ? 2 : id % 3 ? 0 : 1;
				r->expect = !unsig;
				r->post_ns = now_ns();
				if (recv) {
					struct ibv_recv_wr w = { .wr_id = id }, *bad;

					err = ibv_post_recv(qp[i], &w, &bad);
				} else {
					struct ibv_send_wr w = { .wr_id = id }, *bad;

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
		n = ibv_poll_cq(scq, 16, wc);
		if (n <= 0)
			n = ibv_poll_cq(rcq, 16, wc);
		if (n == 0 && event_mode) {
			struct ibv_cq *ecq;
			void *ectx;

			ibv_req_notify_cq(scq, 0);
			ibv_req_notify_cq(rcq, 0);
			/* re-poll: a completion may have landed before the arm */
			n = ibv_poll_cq(scq, 16, wc);
			if (n <= 0)
				n = ibv_poll_cq(rcq, 16, wc);
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
			uint64_t t = now_ns();
			struct wr_rec *r =
				wc[k].wr_id <= (uint64_t)cfg.wrs ? &rec[wc[k].wr_id] : NULL;
			int qi;

			if (wc[k].wr_id & WARM_BIT) {
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
			if (wc[k].wr_id < last_done_id[qi])
				ooo++;
			else
				last_done_id[qi] = wc[k].wr_id;
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
	print_dist(f, "cq_event", cqev, (size_t)ncqev, true);
	print_dist(f, "wr", lat, (size_t)nlat, false);
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
