// SPDX-License-Identifier: GPL-2.0
/* loadgen client: persistent connections, open loop (Poisson arrivals, latency measured
 * from the scheduled send time) or closed loop; exact percentiles over all samples. */
#include "client.h"

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

struct cli_opts cli_opt;
static struct worker *W;
uint64_t t_start, t_end; /* t_end: no new request is started at or after it */
static pthread_mutex_t sched_mu = PTHREAD_MUTEX_INITIALIZER;
static long long next_idx;
static double next_arrival_ns;
static uint64_t sched_rng;
static char reqpay[65536];

int connect_one(int idx)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int port = cli_opt.ports[idx % cli_opt.nports];
	if (parse_addr(cli_opt.connect, port, &ss, &len)) {
		fprintf(stderr, "loadgen client: bad address %s\n", cli_opt.connect);
		return -1;
	}
	for (int tries = 0; tries < 50 && !lg_stop; tries++) {
		int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		int one = 1;
		if (cli_opt.rcvbuf > 0)
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &cli_opt.rcvbuf,
				   sizeof(cli_opt.rcvbuf));
		if (cli_opt.nodelay)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (cli_opt.cc && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cli_opt.cc,
					     (socklen_t)strlen(cli_opt.cc)))
			fprintf(stderr, "loadgen client: TCP_CONGESTION %s: %s\n", cli_opt.cc,
				strerror(errno));
		if (connect(fd, (struct sockaddr *)&ss, len) == 0)
			return fd;
		close(fd);
		sleep_ns(100000000ull);
	}
	fprintf(stderr, "loadgen client: connect %s port %d: %s\n", cli_opt.connect, port,
		strerror(errno));
	return -1;
}

/* buffered read; the optional delay before every read() models a slow reader */
int br_fill(struct worker *w)
{
	if (cli_opt.read_delay_ns)
		sleep_ns(cli_opt.read_delay_ns);
	for (;;) {
		ssize_t r = read(w->fd, w->buf, (size_t)cli_opt.read_chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		w->pos = 0;
		w->len = (size_t)r;
		return 0;
	}
}

int br_read(struct worker *w, void *dst, size_t n)
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
		.resp_bytes =
			htole32(type == LG_T_STREAM ? cli_opt.token_bytes : cli_opt.resp_bytes),
		.tokens = htole32(cli_opt.tokens),
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
long long claim(uint64_t *sched)
{
	long long i;
	pthread_mutex_lock(&sched_mu);
	i = next_idx;
	if (lg_stop || (cli_opt.requests > 0 && i >= cli_opt.requests + cli_opt.warmup)) {
		pthread_mutex_unlock(&sched_mu);
		return -1;
	}
	if (cli_opt.rate > 0) {
		uint64_t t = t_start + (uint64_t)next_arrival_ns;
		if (t >= t_end) {
			pthread_mutex_unlock(&sched_mu);
			return -1;
		}
		*sched = t;
		next_arrival_ns += -log(rng_unit(&sched_rng)) * 1e9 / cli_opt.rate;
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
	for (uint64_t t; cli_opt.rate <= 0 && (t = now_ns()) < t_start;)
		sleep_ns(t_start - t);
	return i;
}

int push_sample(struct worker *w, const struct sample *s)
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

void sample_init(struct sample *s, struct worker *w, long long idx)
{
	*s = (struct sample){ .id = (uint64_t)idx,
			      .conn = (uint32_t)w->idx,
			      .tpot = UINT64_MAX,
			      .server = UINT64_MAX,
			      .compute = UINT64_MAX,
			      .cpu = UINT64_MAX };
}

void sample_token(struct worker *w, struct sample *s, uint64_t tstart, uint64_t *prev, uint64_t t,
		  bool rec)
{
	if (s->tokens == 0) {
		s->ttft = t - tstart;
	} else if (rec) {
		vec_push(&w->gaps, t - *prev);
		if (t - *prev > s->maxgap)
			s->maxgap = t - *prev;
	}
	*prev = t;
	s->tokens++;
}

void sample_done(struct worker *w, struct sample *s, uint64_t sched, uint64_t tsend, uint64_t tend,
		 bool rec)
{
	uint64_t tstart = sched ? sched : tsend;

	s->total = tend - tstart;
	if (s->tokens > 1 && cli_opt.type == LG_T_STREAM)
		s->tpot = (s->total - s->ttft) / (s->tokens - 1);
	s->sched = tstart - t_start;
	s->send = tsend - t_start;
	if (rec) {
		push_sample(w, s);
		if (sched)
			vec_push(&w->lags, tsend - sched);
	}
}

/* one request/response; 0 ok, -1 connection error */
static int do_request(struct worker *w, long long idx, uint64_t sched)
{
	struct sample s;
	bool rec = idx >= cli_opt.warmup;
	if (cli_opt.proto == CP_SSE)
		return sse_request(w, idx, sched);
	sample_init(&s, w, idx);
	if (sched)
		sleep_until_ns(sched);
	uint64_t tsend = now_ns();
	uint64_t tstart = sched ? sched : tsend;
	if (send_req(w, cli_opt.type, (uint64_t)idx, cli_opt.req_bytes))
		return -1;
	uint64_t prev = 0;
	for (;;) {
		struct lg_rsp h;
		if (br_read(w, &h, sizeof(h)))
			return -1;
		if (le32toh(h.magic) != LG_RSP_MAGIC || le64toh(h.id) != (uint64_t)idx)
			return -1;
		if (br_read(w, NULL, le32toh(h.len)))
			return -1;
		sample_token(w, &s, tstart, &prev, now_ns(), rec);
		if (le16toh(h.flags) & LG_RSP_LAST)
			break;
	}
	sample_done(w, &s, sched, tsend, prev, rec);
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
	if (cli_opt.name)
		set_comm(cli_opt.name);
	if (cli_opt.type == LG_T_BULK) {
		if (!send_req(w, LG_T_BULK, 0, 0)) {
			while (!lg_stop && now_ns() < t_end) {
				ssize_t r = read(w->fd, w->buf, (size_t)cli_opt.read_chunk);
				if (r < 0 && errno == EINTR)
					continue;
				if (r <= 0)
					break;
				w->bulk_bytes += (uint64_t)r;
				if (cli_opt.read_delay_ns)
					sleep_ns(cli_opt.read_delay_ns);
			}
		} else {
			w->errors++;
		}
		w->done = 1;
		return NULL;
	}
	if (cli_opt.proto == CP_H2) {
		h2_client_run(w);
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
	if (!lg_stop && w->fd >= 0 && cli_opt.proto == CP_LG)
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
		"  [--drain S] [--timeout S] [--proto lg|sse|h2] [--streams N] [--ping-ms MS]\n"
		"  [--h2-window B]\n");
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
		{ "proto", 1, 0, 'O' },
		{ "streams", 1, 0, 'S' },
		{ "ping-ms", 1, 0, 'i' },
		{ "h2-window", 1, 0, 'W' },
		{ "help", 0, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	cli_opt.mode = "unary";
	cli_opt.type = LG_T_UNARY;
	cli_opt.req_bytes = 256;
	cli_opt.resp_bytes = 1024;
	cli_opt.tokens = 16;
	cli_opt.token_bytes = 32;
	cli_opt.read_chunk = 65536;
	cli_opt.nodelay = 1;
	cli_opt.drain = 5;
	cli_opt.seed = 1;
	cli_opt.duration = -1;
	cli_opt.streams = 1;
	cli_opt.window = 65535;
	int opt;
	long long v;
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'a':
			cli_opt.connect = optarg;
			break;
		case 'p':
			cli_opt.ports[0] = atoi(optarg);
			cli_opt.nports = 1;
			break;
		case 'P':
			cli_opt.nports = parse_ports(optarg, cli_opt.ports, LG_MAX_PORTS);
			if (cli_opt.nports <= 0)
				goto bad;
			break;
		case 'c':
			cli_opt.conns = atoi(optarg);
			break;
		case 'C':
			cli_opt.concurrency = atoi(optarg);
			break;
		case 'm':
			cli_opt.mode = optarg;
			if (!strcmp(optarg, "unary"))
				cli_opt.type = LG_T_UNARY;
			else if (!strcmp(optarg, "stream"))
				cli_opt.type = LG_T_STREAM;
			else if (!strcmp(optarg, "bulk"))
				cli_opt.type = LG_T_BULK;
			else
				goto bad;
			break;
		case 'r':
			cli_opt.rate = atof(optarg);
			break;
		case 'n':
			cli_opt.requests = atoll(optarg);
			break;
		case 'd':
			cli_opt.duration = atof(optarg);
			break;
		case 'w':
			cli_opt.warmup = atoll(optarg);
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
				cli_opt.req_bytes = (uint32_t)v;
			if (opt == 'R')
				cli_opt.resp_bytes = (uint32_t)v;
			if (opt == 'T')
				cli_opt.token_bytes = (uint32_t)v;
			if (opt == 'b')
				cli_opt.rcvbuf = (int)v;
			if (opt == 'k')
				cli_opt.read_chunk = (int)v;
			break;
		case 't':
			cli_opt.tokens = (uint32_t)atoi(optarg);
			break;
		case 'D':
			cli_opt.read_delay_ns = (uint64_t)(atof(optarg) * 1000.0);
			break;
		case 'j':
			cli_opt.json = optarg;
			break;
		case 's':
			cli_opt.samples = optarg;
			break;
		case 'N':
			cli_opt.name = optarg;
			break;
		case 'e':
			cli_opt.seed = strtoull(optarg, NULL, 0);
			break;
		case 'g':
			cli_opt.cc = optarg;
			break;
		case 'y':
			cli_opt.nodelay = atoi(optarg);
			break;
		case 'x':
			cli_opt.drain = atof(optarg);
			break;
		case 'o':
			cli_opt.timeout = atof(optarg);
			break;
		case 'O':
			if (!strcmp(optarg, "lg"))
				cli_opt.proto = CP_LG;
			else if (!strcmp(optarg, "sse"))
				cli_opt.proto = CP_SSE;
			else if (!strcmp(optarg, "h2"))
				cli_opt.proto = CP_H2;
			else
				goto bad;
			break;
		case 'S':
			cli_opt.streams = atoi(optarg);
			break;
		case 'i':
			cli_opt.ping_ms = atof(optarg);
			break;
		case 'W':
			v = parse_size(optarg);
			if (v < 65535 || v > 0x7fffffff)
				goto bad;
			cli_opt.window = (uint32_t)v;
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
	if (!cli_opt.connect || cli_opt.streams < 1 || cli_opt.streams > 1024)
		goto bad;
	if (cli_opt.proto != CP_LG) { /* both speak token streams only */
		cli_opt.type = LG_T_STREAM;
		cli_opt.mode = "stream";
	}
	if (!cli_opt.nports) {
		cli_opt.ports[0] = 7000;
		cli_opt.nports = 1;
	}
	if (cli_opt.read_chunk <= 0)
		cli_opt.read_chunk = 65536;
	if (cli_opt.rate > 0 && cli_opt.concurrency > 0) {
		fprintf(stderr, "loadgen client: --rate and --concurrency exclude each other\n");
		return 2;
	}
	if (cli_opt.concurrency > cli_opt.conns)
		cli_opt.conns = cli_opt.concurrency;
	if (cli_opt.conns <= 0)
		cli_opt.conns = cli_opt.rate > 0 ? 4 : 1;
	if (cli_opt.conns > 4096)
		goto bad;
	if (cli_opt.duration < 0)
		cli_opt.duration = (cli_opt.requests > 0 && cli_opt.type != LG_T_BULK) ? 0 : 10;
	if (cli_opt.timeout <= 0)
		cli_opt.timeout = cli_opt.duration > 0 ? cli_opt.duration + cli_opt.drain : 600;
	return -1;
}

/* Connects every connection and starts its worker; -1 when all run, else the exit
 * status. *hard_end gets when the run is cut short whatever its state (--timeout). */
static int start_workers(uint64_t *hard_end)
{
	set_comm(cli_opt.name);
	lg_install_signals();
	memset(reqpay, 'q', sizeof(reqpay));
	if (cli_opt.proto == CP_SSE)
		sse_client_init();
	sched_rng = cli_opt.seed * 0x9e3779b97f4a7c15ull + 12345;

	W = calloc((size_t)cli_opt.conns, sizeof(*W));
	for (int i = 0; i < cli_opt.conns; i++) {
		W[i].idx = i;
		W[i].buf = malloc((size_t)cli_opt.read_chunk);
		W[i].fd = connect_one(i);
		if (W[i].fd < 0)
			return 1;
	}
	sigset_t ss, old;
	sigemptyset(&ss);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGTERM);
	t_start = now_ns() + 1000000; /* 1 ms: let every thread get going */
	t_end = cli_opt.duration > 0 ? t_start + (uint64_t)(cli_opt.duration * 1e9) : UINT64_MAX;
	*hard_end = t_start + (uint64_t)(cli_opt.timeout * 1e9);
	pthread_sigmask(SIG_BLOCK, &ss, &old);
	for (int i = 0; i < cli_opt.conns; i++)
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
		for (int i = 0; i < cli_opt.conns; i++)
			done += W[i].done;
		if (done == cli_opt.conns)
			break;
		if (lg_stop || now_ns() >= hard_end) {
			lg_stop = 1;
			for (int i = 0; i < cli_opt.conns; i++)
				if (!W[i].done && W[i].fd >= 0)
					shutdown(W[i].fd, SHUT_RDWR);
		}
		sleep_ns(10000000ull);
	}
}

/* What the workers measured, all together. */
struct client_result {
	uint64_t errors, incomplete, bulk, proto_errors;
	struct u64vec gaps, lags, pings;
	struct sample *all; /* sorted by cmp_sample */
	size_t n;
	double dur;
};

static void gather_results(struct client_result *r, uint64_t t_done)
{
	size_t nall = 0;

	memset(r, 0, sizeof(*r));
	for (int i = 0; i < cli_opt.conns; i++) {
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
		for (size_t k = 0; k < W[i].pings.n; k++)
			vec_push(&r->pings, W[i].pings.v[k]);
		r->proto_errors += W[i].proto_errors;
	}
	r->all = malloc((nall + 1) * sizeof(*r->all));
	for (int i = 0; i < cli_opt.conns; i++) {
		memcpy(r->all + r->n, W[i].s, W[i].ns * sizeof(*r->all));
		r->n += W[i].ns;
	}
	qsort(r->all, r->n, sizeof(*r->all), cmp_sample);
	uint64_t last = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->all[i].sched + r->all[i].total > last)
			last = r->all[i].sched + r->all[i].total;
	r->dur = cli_opt.type == LG_T_BULK ? (double)(t_done - t_start) / 1e9 : (double)last / 1e9;
}

/* --samples: one line per request; 0, or 1 when the file cannot be written. */
static int write_samples(const struct sample *all, size_t n)
{
	FILE *f = fopen(cli_opt.samples, "w");
	if (!f) {
		perror(cli_opt.samples);
		return 1;
	}
	fprintf(f, "# id conn sched_ns send_ns total_us ttft_us maxgap_us tokens "
		   "server_us compute_us cpu_us tpot_us\n");
	for (size_t i = 0; i < n; i++) {
		const struct sample *s = &all[i];
		fprintf(f, "%llu %u %llu %llu %.3f %.3f %.3f %u", (unsigned long long)s->id,
			s->conn, (unsigned long long)s->sched, (unsigned long long)s->send,
			s->total / 1e3, s->ttft / 1e3, s->maxgap / 1e3, s->tokens);
		if (s->server != UINT64_MAX)
			fprintf(f, " %.3f %.3f %.3f", s->server / 1e3, s->compute / 1e3,
				s->cpu / 1e3);
		else
			fprintf(f, " nan nan nan");
		if (s->tpot != UINT64_MAX)
			fprintf(f, " %.3f\n", s->tpot / 1e3);
		else
			fprintf(f, " nan\n");
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
	struct u64vec tpot = { 0 }, ntok = { 0 };
	static const char *const pn[] = { "lg", "sse", "h2" };
	stats_of(all, n, offsetof(struct sample, total), &lat);
	if (cli_opt.type == LG_T_STREAM) {
		stats_of(all, n, offsetof(struct sample, ttft), &ttft);
		stats_of(all, n, offsetof(struct sample, tpot), &tpot);
		/* whole tokens through the microsecond formatter: counts print as N.000 */
		for (size_t i = 0; i < n; i++)
			vec_push(&ntok, (uint64_t)all[i].tokens * 1000);
	}
	stats_of(all, n, offsetof(struct sample, server), &srv);
	stats_of(all, n, offsetof(struct sample, compute), &comp);
	stats_of(all, n, offsetof(struct sample, cpu), &cpu);
	fprintf(f, "{\"role\": \"client\", \"version\": %d, \"mode\": \"%s\", \"loop\": \"%s\", ",
		LG_VERSION, cli_opt.mode, cli_opt.rate > 0 ? "open" : "closed");
	fprintf(f, "\"proto\": \"%s\", \"streams\": %d, \"proto_errors\": %llu, ",
		pn[cli_opt.proto], cli_opt.proto == CP_H2 ? cli_opt.streams : 1,
		(unsigned long long)r->proto_errors);
	fprintf(f, "\"target_rps\": %.3f, \"conns\": %d, \"concurrency\": %d, ", cli_opt.rate,
		cli_opt.conns, cli_opt.rate > 0 ? 0 : cli_opt.conns);
	fprintf(f, "\"requests\": %zu, \"warmup\": %lld, \"errors\": %llu, \"incomplete\": %llu, ",
		n, cli_opt.warmup, (unsigned long long)errors, (unsigned long long)incomplete);
	fprintf(f, "\"duration_s\": %.6f, \"rate_rps\": %.3f, ", dur,
		dur > 0 ? (double)n / dur : 0.0);
	fprintf(f,
		"\"req_bytes\": %u, \"resp_bytes\": %u, \"tokens\": %u, \"token_bytes\": %u, "
		"\"read_delay_us\": %.3f, \"rcvbuf\": %d, ",
		cli_opt.req_bytes, cli_opt.resp_bytes,
		cli_opt.type == LG_T_STREAM ? cli_opt.tokens : 0, cli_opt.token_bytes,
		cli_opt.read_delay_ns / 1e3, cli_opt.rcvbuf);
	json_stats(f, "latency_us", lat.v, lat.n);
	fprintf(f, ", ");
	json_stats(f, "ttft_us", ttft.v, ttft.n);
	fprintf(f, ", ");
	json_stats(f, "gap_us", gaps.v, gaps.n);
	fprintf(f, ", ");
	json_stats(f, "tpot_us", tpot.v, tpot.n);
	fprintf(f, ", ");
	json_stats(f, "tokens_per_request", ntok.v, ntok.n);
	fprintf(f, ", ");
	json_stats(f, "ping_rtt_us", r->pings.v, r->pings.n);
	fprintf(f, ", ");
	json_stats(f, "send_lag_us", lags.v, lags.n);
	fprintf(f, ", ");
	json_stats(f, "server_us", srv.v, srv.n);
	fprintf(f, ", ");
	json_stats(f, "server_compute_us", comp.v, comp.n);
	fprintf(f, ", ");
	json_stats(f, "server_cpu_us", cpu.v, cpu.n);
	fprintf(f, ", \"bulk_bytes\": %llu, \"bulk_bps\": ", (unsigned long long)bulk);
	if (cli_opt.type == LG_T_BULK)
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
	if (cli_opt.samples && write_samples(res.all, res.n))
		return 1;
	FILE *f = stdout;
	if (cli_opt.json) {
		f = fopen(cli_opt.json, "w");
		if (!f) {
			perror(cli_opt.json);
			return 1;
		}
	}
	write_summary(f, &res);
	if (f != stdout)
		fclose(f);
	return res.errors && !res.n ? 1 : 0;
}
