// SPDX-License-Identifier: GPL-2.0
/* loadgen server: thread per connection, persistent connections carrying many requests;
 * compute time drawn per request, spent busy on CPU or blocked; records service time. */
#include "server.h"

#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

struct srv_opts srv_opt;
char payload[PAYLOAD_BUF];
pthread_mutex_t conns_mu = PTHREAD_MUTEX_INITIALIZER;
static struct conn *conns;
static uint64_t deadline_ns;

/* totals of reaped connections */
static struct u64vec g_service, g_compute, g_cpu;
/* every gap between consecutive token writes of one streamed request, from every thread */
static struct u64vec g_token_gaps;
static pthread_mutex_t token_gaps_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_errors, g_bulk_bytes, g_bulk_t0 = UINT64_MAX, g_bulk_t1, g_conns;
static FILE *g_samples;

int push_ent(struct lg_stat_ent **v, size_t *n, size_t *cap, const struct lg_stat_ent *e)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct lg_stat_ent *nv = realloc(*v, nc * sizeof(*nv));
		if (!nv)
			return -1;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = *e;
	return 0;
}

int writev_full(int fd, struct iovec *iov, int cnt)
{
	while (cnt > 0) {
		ssize_t r = writev(fd, iov, cnt);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		size_t left = (size_t)r;
		while (cnt > 0 && left >= iov->iov_len) {
			left -= iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt > 0) {
			iov->iov_base = (char *)iov->iov_base + left;
			iov->iov_len -= left;
		}
	}
	return 0;
}

/* one frame: header and len payload bytes, in as few syscalls as possible */
static int send_frame(int fd, uint16_t type, uint16_t flags, uint64_t id, uint32_t len,
		      uint32_t seq, uint32_t compute_us)
{
	struct lg_rsp h = {
		.magic = htole32(LG_RSP_MAGIC),
		.type = htole16(type),
		.flags = htole16(flags),
		.id = htole64(id),
		.len = htole32(len),
		.seq = htole32(seq),
		.compute_us = htole32(compute_us),
	};
	struct iovec iov[2] = { { &h, sizeof(h) },
				{ payload, len < PAYLOAD_BUF ? len : PAYLOAD_BUF } };
	if (writev_full(fd, iov, 2))
		return -1;
	uint32_t left = len > PAYLOAD_BUF ? len - PAYLOAD_BUF : 0;
	while (left) {
		uint32_t n = left < PAYLOAD_BUF ? left : PAYLOAD_BUF;
		if (write_full(fd, payload, n))
			return -1;
		left -= n;
	}
	return 0;
}

void do_compute(uint64_t ns, uint64_t *wall, uint64_t *cpu)
{
	uint64_t w0 = now_ns(), c0 = thread_cpu_ns();
	if (ns) {
		if (srv_opt.busy)
			burn_cpu_ns(ns);
		else
			sleep_ns(ns);
	}
	*wall += now_ns() - w0;
	*cpu += thread_cpu_ns() - c0;
}

static uint64_t slow_extra(uint64_t *rng)
{
	if (srv_opt.slow_share > 0 && rng_unit(rng) * 100.0 < srv_opt.slow_share)
		return srv_opt.slow_extra_ns;
	return 0;
}

uint64_t srv_prefill_ns(uint64_t *rng)
{
	const struct dist *pd = srv_opt.have_prefill ? &srv_opt.prefill : &srv_opt.compute;

	return dist_draw_ns(pd, rng) + slow_extra(rng);
}

double srv_decode_factor(uint64_t *rng)
{
	if (srv_opt.slow_decode_share > 0 && rng_unit(rng) * 100.0 < srv_opt.slow_decode_share)
		return srv_opt.slow_decode_factor;
	return 1.0;
}

void srv_token_write(uint64_t *prev)
{
	uint64_t t = now_ns();

	if (*prev) {
		pthread_mutex_lock(&token_gaps_mu);
		vec_push(&g_token_gaps, t - *prev);
		pthread_mutex_unlock(&token_gaps_mu);
	}
	*prev = t;
}

void srv_record(struct conn *c, const struct lg_stat_ent *e)
{
	pthread_mutex_lock(&conns_mu);
	if (push_ent(&c->all, &c->nall, &c->call, e))
		c->errors++;
	pthread_mutex_unlock(&conns_mu);
}

static int discard(int fd, uint32_t n)
{
	static __thread char sink[65536];
	while (n) {
		uint32_t k = n < sizeof(sink) ? n : sizeof(sink);
		if (read_full(fd, sink, k))
			return -1;
		n -= k;
	}
	return 0;
}

static int serve_unary(struct conn *c, uint64_t id, uint32_t resp_bytes, struct lg_stat_ent *e)
{
	uint64_t ns = dist_draw_ns(&srv_opt.compute, &c->rng) + slow_extra(&c->rng);

	do_compute(ns, &e->compute_ns, &e->cpu_ns);
	return send_frame(c->fd, LG_T_UNARY, LG_RSP_LAST, id, resp_bytes, 0,
			  (uint32_t)(e->compute_ns / 1000));
}

/* prefill, then one frame per token, each after its decode time */
static int serve_stream(struct conn *c, uint64_t id, uint32_t resp_bytes, uint32_t tokens,
			struct lg_stat_ent *e)
{
	uint64_t ns = srv_prefill_ns(&c->rng);
	double factor = srv_decode_factor(&c->rng);
	uint32_t pre_us;
	int rc = 0;

	if (!tokens)
		tokens = 1;
	uint64_t prev = 0;

	do_compute(ns, &e->compute_ns, &e->cpu_ns);
	pre_us = (uint32_t)(e->compute_ns / 1000);
	for (uint32_t i = 0; i < tokens && !rc; i++) {
		if (i)
			do_compute(
				(uint64_t)((double)dist_draw_ns(&srv_opt.decode, &c->rng) * factor),
				&e->compute_ns, &e->cpu_ns);
		srv_token_write(&prev);
		rc = send_frame(c->fd, LG_T_STREAM, i == tokens - 1 ? LG_RSP_LAST : 0, id,
				resp_bytes, i, pre_us);
	}
	return rc;
}

/* writes until the deadline: the connection ends with it */
static void serve_bulk(struct conn *c, uint32_t resp_bytes)
{
	uint32_t chunk = resp_bytes ? resp_bytes : 65536;

	if (chunk > PAYLOAD_BUF)
		chunk = PAYLOAD_BUF;
	c->bulk_t0 = now_ns();
	while (!lg_stop && now_ns() < deadline_ns) {
		if (write_full(c->fd, payload, chunk))
			break;
		c->bulk_bytes += chunk;
	}
	c->bulk_t1 = now_ns();
}

/* the per-request entries gathered since the last call, to the client */
static int serve_stats(struct conn *c, uint64_t id)
{
	int rc;

	pthread_mutex_lock(&conns_mu);
	uint32_t len = (uint32_t)(c->npend * sizeof(struct lg_stat_ent));
	struct lg_rsp h = {
		.magic = htole32(LG_RSP_MAGIC),
		.type = htole16(LG_T_STATS),
		.flags = htole16(LG_RSP_LAST),
		.id = htole64(id),
		.len = htole32(len),
	};
	for (size_t i = 0; i < c->npend; i++) {
		struct lg_stat_ent *p = &c->pend[i];
		p->id = htole64(p->id);
		p->service_ns = htole64(p->service_ns);
		p->compute_ns = htole64(p->compute_ns);
		p->cpu_ns = htole64(p->cpu_ns);
	}
	struct iovec iov[2] = { { &h, sizeof(h) }, { c->pend, len } };
	rc = writev_full(c->fd, iov, 2);
	c->npend = 0;
	pthread_mutex_unlock(&conns_mu);
	return rc;
}

static void *conn_thread(void *arg)
{
	struct conn *c = arg;
	if (srv_opt.name)
		set_comm(srv_opt.name);
	if (srv_opt.proto != LG_P_LG) {
		if (srv_opt.proto == LG_P_SSE)
			sse_serve_conn(c);
		else
			h2_serve_conn(c);
		c->done = 1;
		return NULL;
	}
	for (;;) {
		struct lg_req r;
		if (read_full(c->fd, &r, sizeof(r)))
			break;
		if (le32toh(r.magic) != LG_REQ_MAGIC) {
			c->errors++;
			break;
		}
		uint16_t type = le16toh(r.type);
		uint64_t id = le64toh(r.id);
		uint32_t req_bytes = le32toh(r.req_bytes);
		uint32_t resp_bytes =
			srv_opt.resp_bytes ? srv_opt.resp_bytes : le32toh(r.resp_bytes);
		uint32_t tokens = srv_opt.tokens ? srv_opt.tokens : le32toh(r.tokens);
		if (discard(c->fd, req_bytes))
			break;
		uint64_t t0 = now_ns();
		struct lg_stat_ent e = { .id = id };
		int rc = 0;
		if (type == LG_T_UNARY) {
			rc = serve_unary(c, id, resp_bytes, &e);
		} else if (type == LG_T_STREAM) {
			rc = serve_stream(c, id, resp_bytes, tokens, &e);
		} else if (type == LG_T_BULK) {
			serve_bulk(c, resp_bytes);
			break;
		} else if (type == LG_T_STATS) {
			if (serve_stats(c, id))
				break;
			continue;
		} else {
			c->errors++;
			break;
		}
		if (rc) {
			c->errors++;
			break;
		}
		e.service_ns = now_ns() - t0;
		pthread_mutex_lock(&conns_mu);
		if (push_ent(&c->pend, &c->npend, &c->cpend, &e) ||
		    push_ent(&c->all, &c->nall, &c->call, &e))
			c->errors++;
		pthread_mutex_unlock(&conns_mu);
	}
	c->done = 1;
	return NULL;
}

static void reap(struct conn *c)
{
	pthread_join(c->th, NULL);
	close(c->fd);
	for (size_t i = 0; i < c->nall; i++) {
		struct lg_stat_ent *e = &c->all[i];
		vec_push(&g_service, e->service_ns);
		vec_push(&g_compute, e->compute_ns);
		vec_push(&g_cpu, e->cpu_ns);
		if (g_samples)
			fprintf(g_samples, "%d %llu %.3f %.3f %.3f\n", c->idx,
				(unsigned long long)e->id, e->service_ns / 1e3, e->compute_ns / 1e3,
				e->cpu_ns / 1e3);
	}
	g_errors += c->errors;
	g_bulk_bytes += c->bulk_bytes;
	if (c->bulk_t1) {
		if (c->bulk_t0 < g_bulk_t0)
			g_bulk_t0 = c->bulk_t0;
		if (c->bulk_t1 > g_bulk_t1)
			g_bulk_t1 = c->bulk_t1;
	}
	free(c->pend);
	free(c->all);
	free(c);
}

static void reap_done(bool all)
{
	pthread_mutex_lock(&conns_mu);
	struct conn **pp = &conns;
	struct conn *todo = NULL;
	while (*pp) {
		struct conn *c = *pp;
		if (all || c->done) {
			*pp = c->next;
			c->next = todo;
			todo = c;
		} else {
			pp = &c->next;
		}
	}
	pthread_mutex_unlock(&conns_mu);
	while (todo) {
		struct conn *n = todo->next;
		reap(todo);
		todo = n;
	}
}

static int listen_on(const char *addr, int port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	if (parse_addr(addr, port, &ss, &len)) {
		fprintf(stderr, "loadgen server: bad address %s\n", addr);
		return -1;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1, zero = 0;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 1024)) {
		fprintf(stderr, "loadgen server: bind/listen %s port %d: %s\n", addr, port,
			strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static void server_usage(void)
{
	fprintf(stderr, "usage: loadgen server [--listen ADDR] [--port P | --ports P1,P2] [--mode "
			"unary|stream|bulk]\n"
			"  [--proto lg|sse|h2] [--slow-decode-share PCT --slow-decode-factor F]\n"
			"  [--compute SPEC] [--slow-share PCT --slow-extra-us X] [--compute-kind "
			"busy|block]\n"
			"  [--prefill-us SPEC] [--decode-us SPEC] [--tokens N] [--resp-bytes R]\n"
			"  [--json FILE] [--samples FILE] [--duration S] [--name COMM] [--seed N] "
			"[--cc ALGO]\n"
			"  [--sndbuf B] [--nodelay 0|1]\n"
			"SPEC: US | const:US | lognormal:MEDIAN_US,SIGMA | exp:MEAN_US | "
			"uniform:LO_US,HI_US\n");
}

/* Options into O, checked; -1 to go on, else the exit status. */
/* Long by its option table and one case per option: splitting it would scatter them. */
static int server_parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "listen", 1, 0, 'l' },
		{ "port", 1, 0, 'p' },
		{ "ports", 1, 0, 'P' },
		{ "mode", 1, 0, 'm' },
		{ "compute", 1, 0, 'c' },
		{ "slow-share", 1, 0, 's' },
		{ "slow-extra-us", 1, 0, 'x' },
		{ "compute-kind", 1, 0, 'k' },
		{ "prefill-us", 1, 0, 'f' },
		{ "decode-us", 1, 0, 'd' },
		{ "tokens", 1, 0, 't' },
		{ "resp-bytes", 1, 0, 'r' },
		{ "json", 1, 0, 'j' },
		{ "samples", 1, 0, 'S' },
		{ "duration", 1, 0, 'D' },
		{ "name", 1, 0, 'n' },
		{ "seed", 1, 0, 'e' },
		{ "cc", 1, 0, 'C' },
		{ "sndbuf", 1, 0, 'b' },
		{ "nodelay", 1, 0, 'N' },
		{ "proto", 1, 0, 'o' },
		{ "slow-decode-share", 1, 0, 'F' },
		{ "slow-decode-factor", 1, 0, 'G' },
		{ "help", 0, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	srv_opt.listen = "::";
	srv_opt.mode = "unary";
	srv_opt.duration = 3600;
	srv_opt.seed = 1;
	srv_opt.nodelay = 1;
	srv_opt.slow_decode_factor = 1;
	dist_parse("const:100", &srv_opt.compute);
	dist_parse("const:1000", &srv_opt.decode);
	int opt;
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'l':
			srv_opt.listen = optarg;
			break;
		case 'p':
			srv_opt.ports[0] = atoi(optarg);
			srv_opt.nports = 1;
			break;
		case 'P':
			srv_opt.nports = parse_ports(optarg, srv_opt.ports, LG_MAX_PORTS);
			if (srv_opt.nports <= 0)
				goto bad;
			break;
		case 'm':
			if (strcmp(optarg, "unary") && strcmp(optarg, "stream") &&
			    strcmp(optarg, "bulk"))
				goto bad;
			srv_opt.mode = optarg;
			break;
		case 'c':
			if (dist_parse(optarg, &srv_opt.compute))
				goto bad;
			break;
		case 'f':
			if (dist_parse(optarg, &srv_opt.prefill))
				goto bad;
			srv_opt.have_prefill = true;
			break;
		case 'd':
			if (dist_parse(optarg, &srv_opt.decode))
				goto bad;
			break;
		case 's':
			srv_opt.slow_share = atof(optarg);
			break;
		case 'x':
			srv_opt.slow_extra_ns = (uint64_t)(atof(optarg) * 1000.0);
			break;
		case 'k':
			if (!strcmp(optarg, "busy"))
				srv_opt.busy = true;
			else if (!strcmp(optarg, "block"))
				srv_opt.busy = false;
			else
				goto bad;
			break;
		case 't':
			srv_opt.tokens = (uint32_t)atoi(optarg);
			break;
		case 'r': {
			long long v = parse_size(optarg);
			if (v < 0 || v > 0x7fffffff)
				goto bad;
			srv_opt.resp_bytes = (uint32_t)v;
			break;
		}
		case 'j':
			srv_opt.json = optarg;
			break;
		case 'S':
			srv_opt.samples = optarg;
			break;
		case 'D':
			srv_opt.duration = atof(optarg);
			break;
		case 'n':
			srv_opt.name = optarg;
			break;
		case 'e':
			srv_opt.seed = strtoull(optarg, NULL, 0);
			break;
		case 'C':
			srv_opt.cc = optarg;
			break;
		case 'b':
			srv_opt.sndbuf = (int)parse_size(optarg);
			break;
		case 'N':
			srv_opt.nodelay = atoi(optarg);
			break;
		case 'o':
			if (!strcmp(optarg, "lg"))
				srv_opt.proto = LG_P_LG;
			else if (!strcmp(optarg, "sse"))
				srv_opt.proto = LG_P_SSE;
			else if (!strcmp(optarg, "h2"))
				srv_opt.proto = LG_P_H2;
			else
				goto bad;
			break;
		case 'F':
			srv_opt.slow_decode_share = atof(optarg);
			break;
		case 'G':
			srv_opt.slow_decode_factor = atof(optarg);
			break;
		case 'h':
			server_usage();
			return 0;
		default:
		bad:
			server_usage();
			return 2;
		}
	}
	if (!srv_opt.nports) {
		srv_opt.ports[0] = 7000;
		srv_opt.nports = 1;
	}
	if (srv_opt.slow_share < 0 || srv_opt.slow_share > 100 || srv_opt.slow_decode_share < 0 ||
	    srv_opt.slow_decode_share > 100 || srv_opt.slow_decode_factor <= 0)
		goto bad;
	return -1;
}

/* A connection accepted on fd: its socket options and its own thread (SIGINT and SIGTERM
 * blocked: the accept loop handles them). */
static void start_conn(int fd, int idx)
{
	sigset_t ss, old;

	sigemptyset(&ss);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGTERM);
	int one = 1;
	if (srv_opt.nodelay)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (srv_opt.cc)
		setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, srv_opt.cc,
			   (socklen_t)strlen(srv_opt.cc));
	if (srv_opt.sndbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &srv_opt.sndbuf, sizeof(srv_opt.sndbuf));
	struct conn *c = calloc(1, sizeof(*c));
	c->fd = fd;
	c->idx = idx;
	c->rng = srv_opt.seed * 0x100000001b3ull + (uint64_t)c->idx * 7919 + 1;
	pthread_sigmask(SIG_BLOCK, &ss, &old);
	pthread_mutex_lock(&conns_mu);
	if (pthread_create(&c->th, NULL, conn_thread, c)) {
		pthread_mutex_unlock(&conns_mu);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		close(fd);
		free(c);
		g_errors++;
		return;
	}
	c->next = conns;
	conns = c;
	g_conns++;
	pthread_mutex_unlock(&conns_mu);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The run's summary as one JSON line. */
static void write_summary(FILE *f, double dur)
{
	char cs[64], ps[64], ds[64];
	dist_format(&srv_opt.compute, cs, sizeof(cs));
	dist_format(srv_opt.have_prefill ? &srv_opt.prefill : &srv_opt.compute, ps, sizeof(ps));
	dist_format(&srv_opt.decode, ds, sizeof(ds));
	static const char *const pn[] = { "lg", "sse", "h2" };
	fprintf(f, "{\"role\": \"server\", \"version\": %d, \"mode\": \"%s\", \"proto\": \"%s\", ",
		LG_VERSION, srv_opt.proto == LG_P_LG ? srv_opt.mode : "stream", pn[srv_opt.proto]);
	fprintf(f,
		"\"requests\": %zu, \"errors\": %llu, \"conns\": %llu, "
		"\"duration_s\": %.6f, \"rate_rps\": %.3f, ",
		g_service.n, (unsigned long long)g_errors, (unsigned long long)g_conns, dur,
		dur > 0 ? (double)g_service.n / dur : 0.0);
	fprintf(f,
		"\"compute\": \"%s\", \"prefill\": \"%s\", \"decode\": \"%s\", "
		"\"compute_kind\": \"%s\", \"slow_share_pct\": %g, \"slow_extra_us\": %.3f, ",
		cs, ps, ds, srv_opt.busy ? "busy" : "block", srv_opt.slow_share,
		srv_opt.slow_extra_ns / 1e3);
	fprintf(f, "\"slow_decode_share_pct\": %g, \"slow_decode_factor\": %g, ",
		srv_opt.slow_decode_share, srv_opt.slow_decode_factor);
	json_stats(f, "server_us", g_service.v, g_service.n);
	fprintf(f, ", ");
	json_stats(f, "compute_us", g_compute.v, g_compute.n);
	fprintf(f, ", ");
	json_stats(f, "cpu_us", g_cpu.v, g_cpu.n);
	fprintf(f, ", ");
	json_stats(f, "gap_us", g_token_gaps.v, g_token_gaps.n);
	fprintf(f, ", \"bulk_bytes\": %llu, \"bulk_bps\": ", (unsigned long long)g_bulk_bytes);
	if (g_bulk_t1 > g_bulk_t0)
		fprintf(f, "%.1f}\n", (double)g_bulk_bytes * 8e9 / (double)(g_bulk_t1 - g_bulk_t0));
	else
		fprintf(f, "null}\n");
}

int server_main(int argc, char **argv)
{
	int r = server_parse(argc, argv);

	if (r >= 0)
		return r;
	set_comm(srv_opt.name);
	lg_install_signals();
	if (srv_opt.proto != LG_P_LG)
		memset(payload, 't', sizeof(payload)); /* JSON-safe token text */
	if (srv_opt.samples) {
		g_samples = fopen(srv_opt.samples, "w");
		if (!g_samples) {
			perror(srv_opt.samples);
			return 1;
		}
		fprintf(g_samples, "# conn id service_us compute_us cpu_us\n");
	}
	int lfd[LG_MAX_PORTS];
	struct pollfd pfd[LG_MAX_PORTS];
	for (int i = 0; i < srv_opt.nports; i++) {
		lfd[i] = listen_on(srv_opt.listen, srv_opt.ports[i]);
		if (lfd[i] < 0)
			return 1;
		pfd[i].fd = lfd[i];
		pfd[i].events = POLLIN;
	}
	uint64_t t_start = now_ns();
	deadline_ns =
		srv_opt.duration > 0 ? t_start + (uint64_t)(srv_opt.duration * 1e9) : UINT64_MAX;
	int nconn = 0;
	while (!lg_stop && now_ns() < deadline_ns) {
		int n = poll(pfd, (nfds_t)srv_opt.nports, 100);
		reap_done(false);
		if (n <= 0)
			continue;
		for (int i = 0; i < srv_opt.nports; i++) {
			if (!(pfd[i].revents & POLLIN))
				continue;
			int fd = accept4(lfd[i], NULL, NULL, SOCK_CLOEXEC);
			if (fd < 0)
				continue;
			start_conn(fd, nconn++);
		}
	}
	lg_stop = 1;
	for (int i = 0; i < srv_opt.nports; i++)
		close(lfd[i]);
	pthread_mutex_lock(&conns_mu);
	for (struct conn *c = conns; c; c = c->next)
		shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_unlock(&conns_mu);
	reap_done(true);
	double dur = (double)(now_ns() - t_start) / 1e9;
	if (g_samples)
		fclose(g_samples);
	if (srv_opt.json) {
		FILE *f = fopen(srv_opt.json, "w");
		if (!f) {
			perror(srv_opt.json);
			return 1;
		}
		write_summary(f, dur);
		fclose(f);
	}
	vec_free(&g_service);
	vec_free(&g_token_gaps);
	vec_free(&g_compute);
	vec_free(&g_cpu);
	return 0;
}
