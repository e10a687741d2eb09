// SPDX-License-Identifier: GPL-2.0
/* loadgen client: persistent connections, open loop (Poisson arrivals, latency measured
 * from the scheduled send time) or closed loop; exact percentiles over all samples. */
#include "loadgen.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

struct cli_opts {
	const char *connect;
	int ports[LG_MAX_PORTS], nports;
	int conns, concurrency;
	uint16_t type;
	const char *mode;
	double rate; /* > 0: open loop */
	long long requests, warmup;
	double duration, drain, timeout;
	uint32_t req_bytes, resp_bytes, tokens, token_bytes;
	uint64_t read_delay_ns;
	int read_chunk, rcvbuf, nodelay;
	const char *json, *samples, *name, *cc;
	uint64_t seed;
};

struct sample {
	uint64_t id;
	uint64_t sched, send, total, ttft, maxgap; /* ns; sched/send relative to t_start */
	uint64_t server, compute, cpu;             /* from the server; UINT64_MAX: unknown */
	uint32_t conn, tokens;
};

struct worker {
	int idx, fd;
	pthread_t th;
	volatile int done;
	char *buf;
	size_t pos, len;
	struct sample *s;
	size_t ns, cs;
	struct u64vec gaps;
	uint64_t errors, incomplete, bulk_bytes;
	uint64_t lag_max;
	struct u64vec lags;
};

static struct cli_opts O;
static struct worker *W;
static uint64_t t_start, t_end; /* t_end: no new request is started at or after it */
static pthread_mutex_t sched_mu = PTHREAD_MUTEX_INITIALIZER;
static long long next_idx;
static double next_arrival_ns;
static uint64_t sched_rng;
static char reqpay[65536];

static int connect_one(int idx)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int port = O.ports[idx % O.nports];
	if (parse_addr(O.connect, port, &ss, &len)) {
		fprintf(stderr, "loadgen client: bad address %s\n", O.connect);
		return -1;
	}
	for (int tries = 0; tries < 50 && !lg_stop; tries++) {
		int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		int one = 1;
		if (O.rcvbuf > 0)
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &O.rcvbuf, sizeof(O.rcvbuf));
		if (O.nodelay)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (O.cc &&
		    setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, O.cc, (socklen_t)strlen(O.cc)))
			fprintf(stderr, "loadgen client: TCP_CONGESTION %s: %s\n", O.cc,
				strerror(errno));
		if (connect(fd, (struct sockaddr *)&ss, len) == 0)
			return fd;
		close(fd);
		sleep_ns(100000000ull);
	}
	fprintf(stderr, "loadgen client: connect %s port %d: %s\n", O.connect, port,
		strerror(errno));
	return -1;
}

/* buffered read; the optional delay before every read() models a slow reader */
static int br_fill(struct worker *w)
{
	if (O.read_delay_ns)
		sleep_ns(O.read_delay_ns);
	for (;;) {
		ssize_t r = read(w->fd, w->buf, (size_t)O.read_chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		w->pos = 0;
		w->len = (size_t)r;
		return 0;
	}
}

static int br_read(struct worker *w, void *dst, size_t n)
{
	char *d = dst;
	while (n) {
		if (w->pos == w->len && br_fill(w))
			return -1;
		size_t k = w->len - w->pos;
		if (k > n)
			k = n;
		if (d) {
			memcpy(d, w->buf + w->pos, k);
			d += k;
		}
		w->pos += k;
		n -= k;
	}
	return 0;
}

static int send_req(struct worker *w, uint16_t type, uint64_t id, uint32_t req_bytes)
{
	struct lg_req r = {
		.magic = htole32(LG_REQ_MAGIC),
		.version = htole16(LG_VERSION),
		.type = htole16(type),
		.id = htole64(id),
		.req_bytes = htole32(req_bytes),
		.resp_bytes = htole32(type == LG_T_STREAM ? O.token_bytes : O.resp_bytes),
		.tokens = htole32(O.tokens),
	};
	uint32_t first = req_bytes < sizeof(reqpay) ? req_bytes : (uint32_t)sizeof(reqpay);
	struct iovec iov[2] = { { &r, sizeof(r) }, { reqpay, first } };
	size_t tot = sizeof(r) + first;
	ssize_t done = 0;
	int cnt = 2;
	struct iovec *v = iov;
	while ((size_t)done < tot) {
		ssize_t k = writev(w->fd, v, cnt);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		done += k;
		size_t left = (size_t)k;
		while (cnt && left >= v->iov_len) {
			left -= v->iov_len;
			v++;
			cnt--;
		}
		if (cnt) {
			v->iov_base = (char *)v->iov_base + left;
			v->iov_len -= left;
		}
	}
	for (uint32_t left = req_bytes - first; left;) {
		uint32_t k = left < sizeof(reqpay) ? left : (uint32_t)sizeof(reqpay);
		if (write_full(w->fd, reqpay, k))
			return -1;
		left -= k;
	}
	return 0;
}

/* claim the next request: index and scheduled time; -1 when the run is over */
static long long claim(uint64_t *sched)
{
	long long i;
	pthread_mutex_lock(&sched_mu);
	i = next_idx;
	if (lg_stop || (O.requests > 0 && i >= O.requests + O.warmup)) {
		pthread_mutex_unlock(&sched_mu);
		return -1;
	}
	if (O.rate > 0) {
		uint64_t t = t_start + (uint64_t)next_arrival_ns;
		if (t >= t_end) {
			pthread_mutex_unlock(&sched_mu);
			return -1;
		}
		*sched = t;
		next_arrival_ns += -log(rng_unit(&sched_rng)) * 1e9 / O.rate;
	} else {
		uint64_t t = now_ns();
		if (t >= t_end) {
			pthread_mutex_unlock(&sched_mu);
			return -1;
		}
		*sched = 0;
	}
	next_idx++;
	pthread_mutex_unlock(&sched_mu);
	/* closed loop: nothing starts before t_start, or its offset from it (an unsigned
	 * difference) would wrap and the run's duration with it */
	for (uint64_t t; O.rate <= 0 && (t = now_ns()) < t_start;)
		sleep_ns(t_start - t);
	return i;
}

static int push_sample(struct worker *w, const struct sample *s)
{
	if (w->ns == w->cs) {
		size_t nc = w->cs ? w->cs * 2 : 1024;
		struct sample *n = realloc(w->s, nc * sizeof(*n));
		if (!n)
			return -1;
		w->s = n;
		w->cs = nc;
	}
	w->s[w->ns++] = *s;
	return 0;
}

/* one request/response; 0 ok, -1 connection error */
static int do_request(struct worker *w, long long idx, uint64_t sched)
{
	struct sample s = { .id = (uint64_t)idx,
			    .conn = (uint32_t)w->idx,
			    .server = UINT64_MAX,
			    .compute = UINT64_MAX,
			    .cpu = UINT64_MAX };
	bool rec = idx >= O.warmup;
	uint64_t gaps_local[1];
	(void)gaps_local;
	if (sched)
		sleep_until_ns(sched);
	uint64_t tsend = now_ns();
	uint64_t tstart = sched ? sched : tsend;
	if (send_req(w, O.type, (uint64_t)idx, O.req_bytes))
		return -1;
	uint64_t prev = 0;
	uint32_t ntok = 0;
	for (;;) {
		struct lg_rsp h;
		if (br_read(w, &h, sizeof(h)))
			return -1;
		if (le32toh(h.magic) != LG_RSP_MAGIC || le64toh(h.id) != (uint64_t)idx)
			return -1;
		if (br_read(w, NULL, le32toh(h.len)))
			return -1;
		uint64_t t = now_ns();
		if (ntok == 0)
			s.ttft = t - tstart;
		else if (rec) {
			vec_push(&w->gaps, t - prev);
			if (t - prev > s.maxgap)
				s.maxgap = t - prev;
		}
		prev = t;
		ntok++;
		if (le16toh(h.flags) & LG_RSP_LAST)
			break;
	}
	s.total = prev - tstart;
	s.tokens = ntok;
	s.sched = tstart - t_start;
	s.send = tsend - t_start;
	if (rec) {
		push_sample(w, &s);
		if (sched)
			vec_push(&w->lags, tsend - sched);
	}
	return 0;
}

/* ask the server for the service times of the requests of this connection */
static void fetch_stats(struct worker *w)
{
	struct lg_rsp h;
	if (send_req(w, LG_T_STATS, UINT64_MAX, 0) || br_read(w, &h, sizeof(h)) ||
	    le32toh(h.magic) != LG_RSP_MAGIC || le16toh(h.type) != LG_T_STATS)
		return;
	uint32_t len = le32toh(h.len);
	size_t n = len / sizeof(struct lg_stat_ent), j = 0;
	for (size_t i = 0; i < n; i++) {
		struct lg_stat_ent e;
		if (br_read(w, &e, sizeof(e)))
			return;
		uint64_t id = le64toh(e.id);
		/* both lists are in the order the requests were sent on this connection */
		while (j < w->ns && w->s[j].id < id)
			j++;
		if (j < w->ns && w->s[j].id == id) {
			w->s[j].server = le64toh(e.service_ns);
			w->s[j].compute = le64toh(e.compute_ns);
			w->s[j].cpu = le64toh(e.cpu_ns);
		}
	}
}

static void *worker_thread(void *arg)
{
	struct worker *w = arg;
	if (O.name)
		set_comm(O.name);
	if (O.type == LG_T_BULK) {
		if (!send_req(w, LG_T_BULK, 0, 0)) {
			while (!lg_stop && now_ns() < t_end) {
				ssize_t r = read(w->fd, w->buf, (size_t)O.read_chunk);
				if (r < 0 && errno == EINTR)
					continue;
				if (r <= 0)
					break;
				w->bulk_bytes += (uint64_t)r;
				if (O.read_delay_ns)
					sleep_ns(O.read_delay_ns);
			}
		} else {
			w->errors++;
		}
		w->done = 1;
		return NULL;
	}
	for (;;) {
		uint64_t sched;
		long long idx = claim(&sched);
		if (idx < 0)
			break;
		if (do_request(w, idx, sched)) {
			if (lg_stop) {
				w->incomplete++;
				break;
			}
			w->errors++;
			close(w->fd);
			w->pos = w->len = 0;
			w->fd = connect_one(w->idx);
			if (w->fd < 0)
				break;
		}
	}
	if (!lg_stop && w->fd >= 0)
		fetch_stats(w);
	w->done = 1;
	return NULL;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void client_usage(void)
{
	fprintf(stderr,
		"usage: loadgen client --connect ADDR [--port P | --ports P1,P2] [--conns N]\n"
		"  [--mode unary|stream|bulk] [--rate RPS (open loop, Poisson) | --concurrency C "
		"(closed)]\n"
		"  [--requests N] [--duration S] [--warmup N] [--req-bytes S] [--resp-bytes R]\n"
		"  [--tokens N] [--token-bytes B] [--read-delay-us D] [--read-chunk B] [--rcvbuf "
		"B]\n"
		"  [--json FILE] [--samples FILE] [--name COMM] [--seed N] [--cc ALGO] [--nodelay "
		"0|1]\n"
		"  [--drain S] [--timeout S]\n");
}

static void stats_of(struct sample *all, size_t n, size_t off, struct u64vec *out)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v = *(uint64_t *)((char *)&all[i] + off);
		if (v != UINT64_MAX)
			vec_push(out, v);
	}
}

/* Options into O, checked; -1 to go on, else the exit status. */
/* Long by its option table and one case per option: splitting it would scatter them. */
static int client_parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "connect", 1, 0, 'a' },
		{ "port", 1, 0, 'p' },
		{ "ports", 1, 0, 'P' },
		{ "conns", 1, 0, 'c' },
		{ "concurrency", 1, 0, 'C' },
		{ "mode", 1, 0, 'm' },
		{ "rate", 1, 0, 'r' },
		{ "requests", 1, 0, 'n' },
		{ "duration", 1, 0, 'd' },
		{ "warmup", 1, 0, 'w' },
		{ "req-bytes", 1, 0, 'q' },
		{ "resp-bytes", 1, 0, 'R' },
		{ "tokens", 1, 0, 't' },
		{ "token-bytes", 1, 0, 'T' },
		{ "read-delay-us", 1, 0, 'D' },
		{ "read-chunk", 1, 0, 'k' },
		{ "rcvbuf", 1, 0, 'b' },
		{ "json", 1, 0, 'j' },
		{ "samples", 1, 0, 's' },
		{ "name", 1, 0, 'N' },
		{ "seed", 1, 0, 'e' },
		{ "cc", 1, 0, 'g' },
		{ "nodelay", 1, 0, 'y' },
		{ "drain", 1, 0, 'x' },
		{ "timeout", 1, 0, 'o' },
		{ "help", 0, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	O.mode = "unary";
	O.type = LG_T_UNARY;
	O.req_bytes = 256;
	O.resp_bytes = 1024;
	O.tokens = 16;
	O.token_bytes = 32;
	O.read_chunk = 65536;
	O.nodelay = 1;
	O.drain = 5;
	O.seed = 1;
	O.duration = -1;
	int opt;
	long long v;
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'a':
			O.connect = optarg;
			break;
		case 'p':
			O.ports[0] = atoi(optarg);
			O.nports = 1;
			break;
		case 'P':
			O.nports = parse_ports(optarg, O.ports, LG_MAX_PORTS);
			if (O.nports <= 0)
				goto bad;
			break;
		case 'c':
			O.conns = atoi(optarg);
			break;
		case 'C':
			O.concurrency = atoi(optarg);
			break;
		case 'm':
			O.mode = optarg;
			if (!strcmp(optarg, "unary"))
				O.type = LG_T_UNARY;
			else if (!strcmp(optarg, "stream"))
				O.type = LG_T_STREAM;
			else if (!strcmp(optarg, "bulk"))
				O.type = LG_T_BULK;
			else
				goto bad;
			break;
		case 'r':
			O.rate = atof(optarg);
			break;
		case 'n':
			O.requests = atoll(optarg);
			break;
		case 'd':
			O.duration = atof(optarg);
			break;
		case 'w':
			O.warmup = atoll(optarg);
			break;
		case 'q':
		case 'R':
		case 'T':
		case 'b':
		case 'k':
			v = parse_size(optarg);
			if (v < 0 || v > 0x7fffffff)
				goto bad;
			if (opt == 'q')
				O.req_bytes = (uint32_t)v;
			if (opt == 'R')
				O.resp_bytes = (uint32_t)v;
			if (opt == 'T')
				O.token_bytes = (uint32_t)v;
			if (opt == 'b')
				O.rcvbuf = (int)v;
			if (opt == 'k')
				O.read_chunk = (int)v;
			break;
		case 't':
			O.tokens = (uint32_t)atoi(optarg);
			break;
		case 'D':
			O.read_delay_ns = (uint64_t)(atof(optarg) * 1000.0);
			break;
		case 'j':
			O.json = optarg;
			break;
		case 's':
			O.samples = optarg;
			break;
		case 'N':
			O.name = optarg;
			break;
		case 'e':
			O.seed = strtoull(optarg, NULL, 0);
			break;
		case 'g':
			O.cc = optarg;
			break;
		case 'y':
			O.nodelay = atoi(optarg);
			break;
		case 'x':
			O.drain = atof(optarg);
			break;
		case 'o':
			O.timeout = atof(optarg);
			break;
		case 'h':
			client_usage();
			return 0;
		default:
		bad:
			client_usage();
			return 2;
		}
	}
	if (!O.connect)
		goto bad;
	if (!O.nports) {
		O.ports[0] = 7000;
		O.nports = 1;
	}
	if (O.read_chunk <= 0)
		O.read_chunk = 65536;
	if (O.rate > 0 && O.concurrency > 0) {
		fprintf(stderr, "loadgen client: --rate and --concurrency exclude each other\n");
		return 2;
	}
	if (O.concurrency > O.conns)
		O.conns = O.concurrency;
	if (O.conns <= 0)
		O.conns = O.rate > 0 ? 4 : 1;
	if (O.conns > 4096)
		goto bad;
	if (O.duration < 0)
		O.duration = (O.requests > 0 && O.type != LG_T_BULK) ? 0 : 10;
	if (O.timeout <= 0)
		O.timeout = O.duration > 0 ? O.duration + O.drain : 600;
	return -1;
}

/* Connects every connection and starts its worker; -1 when all run, else the exit
 * status. *hard_end gets when the run is cut short whatever its state (--timeout). */
static int start_workers(uint64_t *hard_end)
{
	set_comm(O.name);
	lg_install_signals();
	memset(reqpay, 'q', sizeof(reqpay));
	sched_rng = O.seed * 0x9e3779b97f4a7c15ull + 12345;

	W = calloc((size_t)O.conns, sizeof(*W));
	for (int i = 0; i < O.conns; i++) {
		W[i].idx = i;
		W[i].buf = malloc((size_t)O.read_chunk);
		W[i].fd = connect_one(i);
		if (W[i].fd < 0)
			return 1;
	}
	sigset_t ss, old;
	sigemptyset(&ss);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGTERM);
	t_start = now_ns() + 1000000; /* 1 ms: let every thread get going */
	t_end = O.duration > 0 ? t_start + (uint64_t)(O.duration * 1e9) : UINT64_MAX;
	*hard_end = t_start + (uint64_t)(O.timeout * 1e9);
	pthread_sigmask(SIG_BLOCK, &ss, &old);
	for (int i = 0; i < O.conns; i++)
		if (pthread_create(&W[i].th, NULL, worker_thread, &W[i])) {
			fprintf(stderr, "loadgen client: pthread_create failed\n");
			return 1;
		}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -1;
}

/* Until every worker is done; at a signal or hard_end their sockets are shut down. */
static void wait_workers(uint64_t hard_end)
{
	for (;;) {
		int done = 0;
		for (int i = 0; i < O.conns; i++)
			done += W[i].done;
		if (done == O.conns)
			break;
		if (lg_stop || now_ns() >= hard_end) {
			lg_stop = 1;
			for (int i = 0; i < O.conns; i++)
				if (!W[i].done && W[i].fd >= 0)
					shutdown(W[i].fd, SHUT_RDWR);
		}
		sleep_ns(10000000ull);
	}
}

/* What the workers measured, all together. */
struct client_result {
	uint64_t errors, incomplete, bulk;
	struct u64vec gaps, lags;
	struct sample *all; /* sorted by cmp_sample */
	size_t n;
	double dur;
};

static void gather_results(struct client_result *r, uint64_t t_done)
{
	size_t nall = 0;

	memset(r, 0, sizeof(*r));
	for (int i = 0; i < O.conns; i++) {
		pthread_join(W[i].th, NULL);
		if (W[i].fd >= 0)
			close(W[i].fd);
		nall += W[i].ns;
		r->errors += W[i].errors;
		r->incomplete += W[i].incomplete;
		r->bulk += W[i].bulk_bytes;
		for (size_t k = 0; k < W[i].gaps.n; k++)
			vec_push(&r->gaps, W[i].gaps.v[k]);
		for (size_t k = 0; k < W[i].lags.n; k++)
			vec_push(&r->lags, W[i].lags.v[k]);
	}
	r->all = malloc((nall + 1) * sizeof(*r->all));
	for (int i = 0; i < O.conns; i++) {
		memcpy(r->all + r->n, W[i].s, W[i].ns * sizeof(*r->all));
		r->n += W[i].ns;
	}
	qsort(r->all, r->n, sizeof(*r->all), cmp_sample);
	uint64_t last = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->all[i].sched + r->all[i].total > last)
			last = r->all[i].sched + r->all[i].total;
	r->dur = O.type == LG_T_BULK ? (double)(t_done - t_start) / 1e9 : (double)last / 1e9;
}

/* --samples: one line per request; 0, or 1 when the file cannot be written. */
static int write_samples(const struct sample *all, size_t n)
{
	FILE *f = fopen(O.samples, "w");
	if (!f) {
		perror(O.samples);
		return 1;
	}
	fprintf(f, "# id conn sched_ns send_ns total_us ttft_us maxgap_us tokens "
		   "server_us compute_us cpu_us\n");
	for (size_t i = 0; i < n; i++) {
		const struct sample *s = &all[i];
		fprintf(f, "%llu %u %llu %llu %.3f %.3f %.3f %u", (unsigned long long)s->id,
			s->conn, (unsigned long long)s->sched, (unsigned long long)s->send,
			s->total / 1e3, s->ttft / 1e3, s->maxgap / 1e3, s->tokens);
		if (s->server != UINT64_MAX)
			fprintf(f, " %.3f %.3f %.3f\n", s->server / 1e3, s->compute / 1e3,
				s->cpu / 1e3);
		else
			fprintf(f, " nan nan nan\n");
	}
	fclose(f);
	return 0;
}

/* The run's summary: settings, counts and the distributions, as one JSON line. */
static void write_summary(FILE *f, struct client_result *r)
{
	struct sample *all = r->all;
	size_t n = r->n;
	double dur = r->dur;
	uint64_t errors = r->errors, incomplete = r->incomplete, bulk = r->bulk;
	struct u64vec gaps = r->gaps, lags = r->lags;
	struct u64vec lat = { 0 }, ttft = { 0 }, srv = { 0 }, comp = { 0 }, cpu = { 0 };
	stats_of(all, n, offsetof(struct sample, total), &lat);
	if (O.type == LG_T_STREAM)
		stats_of(all, n, offsetof(struct sample, ttft), &ttft);
	stats_of(all, n, offsetof(struct sample, server), &srv);
	stats_of(all, n, offsetof(struct sample, compute), &comp);
	stats_of(all, n, offsetof(struct sample, cpu), &cpu);
	fprintf(f, "{\"role\": \"client\", \"version\": %d, \"mode\": \"%s\", \"loop\": \"%s\", ",
		LG_VERSION, O.mode, O.rate > 0 ? "open" : "closed");
	fprintf(f, "\"target_rps\": %.3f, \"conns\": %d, \"concurrency\": %d, ", O.rate, O.conns,
		O.rate > 0 ? 0 : O.conns);
	fprintf(f, "\"requests\": %zu, \"warmup\": %lld, \"errors\": %llu, \"incomplete\": %llu, ",
		n, O.warmup, (unsigned long long)errors, (unsigned long long)incomplete);
	fprintf(f, "\"duration_s\": %.6f, \"rate_rps\": %.3f, ", dur,
		dur > 0 ? (double)n / dur : 0.0);
	fprintf(f,
		"\"req_bytes\": %u, \"resp_bytes\": %u, \"tokens\": %u, \"token_bytes\": %u, "
		"\"read_delay_us\": %.3f, \"rcvbuf\": %d, ",
		O.req_bytes, O.resp_bytes, O.type == LG_T_STREAM ? O.tokens : 0, O.token_bytes,
		O.read_delay_ns / 1e3, O.rcvbuf);
	json_stats(f, "latency_us", lat.v, lat.n);
	fprintf(f, ", ");
	json_stats(f, "ttft_us", ttft.v, ttft.n);
	fprintf(f, ", ");
	json_stats(f, "gap_us", gaps.v, gaps.n);
	fprintf(f, ", ");
	json_stats(f, "send_lag_us", lags.v, lags.n);
	fprintf(f, ", ");
	json_stats(f, "server_us", srv.v, srv.n);
	fprintf(f, ", ");
	json_stats(f, "server_compute_us", comp.v, comp.n);
	fprintf(f, ", ");
	json_stats(f, "server_cpu_us", cpu.v, cpu.n);
	fprintf(f, ", \"bulk_bytes\": %llu, \"bulk_bps\": ", (unsigned long long)bulk);
	if (O.type == LG_T_BULK)
		fprintf(f, "%.1f}\n", dur > 0 ? (double)bulk * 8.0 / dur : 0.0);
	else
		fprintf(f, "null}\n");
}

int client_main(int argc, char **argv)
{
	struct client_result res;
	uint64_t hard_end;
	int r = client_parse(argc, argv);

	if (r >= 0)
		return r;
	r = start_workers(&hard_end);
	if (r >= 0)
		return r;
	wait_workers(hard_end);
	gather_results(&res, now_ns());
	if (O.samples && write_samples(res.all, res.n))
		return 1;
	FILE *f = stdout;
	if (O.json) {
		f = fopen(O.json, "w");
		if (!f) {
			perror(O.json);
			return 1;
		}
	}
	write_summary(f, &res);
	if (f != stdout)
		fclose(f);
	return res.errors && !res.n ? 1 : 0;
}
