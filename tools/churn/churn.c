// SPDX-License-Identifier: GPL-2.0
/* Connection and process churn for the reliability tests: a small epoll server and a client
 * that opens many short TCP connections (optionally from many source addresses, one process
 * each, or all held open at once), each carrying R fixed-size request/response exchanges.
 * The client prints its own counts as one JSON line: the ground truth the tests compare
 * tailtrace's figures with. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_BUF 65536

struct cfg {
	const char *addr;
	int port, nports;
	long conns;
	int parallel, reqs, req_bytes, resp_bytes;
	const char *src_base;
	int src_count;
	bool fork_each;
	double hold_s, duration_s;
};

struct conn {
	int fd;
	int done_reqs;
	int want; /* bytes still to read of the current response / request */
	bool sent;
};

static volatile sig_atomic_t stopping;
static char zeros[MAX_BUF];

static void on_stop(int sig)
{
	(void)sig;
	stopping = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int make_addr(const char *host, int port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((unsigned short)port);
		*len = sizeof(*a4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((unsigned short)port);
		*len = sizeof(*a6);
		return 0;
	}
	return -EINVAL;
}

/* i-th source address: the base plus i (IPv4: host part, IPv6: last 16 bits). */
static int src_addr(const struct cfg *c, long i, struct sockaddr_storage *ss, socklen_t *len)
{
	if (make_addr(c->src_base, 0, ss, len))
		return -EINVAL;
	if (ss->ss_family == AF_INET) {
		struct sockaddr_in *a4 = (struct sockaddr_in *)ss;

		a4->sin_addr.s_addr =
			htonl(ntohl(a4->sin_addr.s_addr) + (unsigned)(i % c->src_count));
	} else {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
		unsigned v = (a6->sin6_addr.s6_addr[14] << 8 | a6->sin6_addr.s6_addr[15]) +
			     (unsigned)(i % c->src_count);

		a6->sin6_addr.s6_addr[14] = (unsigned char)(v >> 8);
		a6->sin6_addr.s6_addr[15] = (unsigned char)v;
	}
	return 0;
}

static int open_conn(const struct cfg *c, long i, bool nonblock)
{
	struct sockaddr_storage dst, src;
	socklen_t dl, sl;
	int fd, one = 1;

	if (make_addr(c->addr, c->port + (int)(i % c->nports), &dst, &dl))
		return -1;
	fd = socket(dst.ss_family, SOCK_STREAM | (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (c->src_base) {
		setsockopt(fd, SOL_IP, IP_FREEBIND, &one, sizeof(one));
		if (src_addr(c, i, &src, &sl) || bind(fd, (struct sockaddr *)&src, sl)) {
			close(fd);
			return -1;
		}
	}
	if (connect(fd, (struct sockaddr *)&dst, dl) && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* ---- client, one process: epoll over up to `parallel` connections ---- */

struct totals {
	long ok, failed, exchanges;
};

static void conn_fail(int ep, struct conn *k, struct totals *t)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, k->fd, NULL);
	close(k->fd);
	k->fd = -1;
	t->failed++;
}

/* Advance one connection as far as its socket allows; true when it finished. */
static bool conn_step(const struct cfg *c, int ep, struct conn *k, struct totals *t)
{
	char buf[MAX_BUF];

	for (;;) {
		if (!k->sent) {
			if (k->done_reqs == c->reqs)
				return true;
			if (write(k->fd, zeros, (size_t)c->req_bytes) != c->req_bytes) {
				if (errno == EAGAIN || errno == EINPROGRESS || errno == ENOTCONN)
					return false;
				conn_fail(ep, k, t);
				return false;
			}
			k->sent = true;
			k->want = c->resp_bytes;
		}
		ssize_t r = read(k->fd, buf, (size_t)k->want);

		if (r < 0 && errno == EAGAIN)
			return false;
		if (r <= 0) {
			conn_fail(ep, k, t);
			return false;
		}
		k->want -= (int)r;
		if (k->want)
			continue;
		k->sent = false;
		k->done_reqs++;
		t->exchanges++;
	}
}

static int run_client(const struct cfg *c)
{
	struct conn *ks = calloc((size_t)c->parallel, sizeof(*ks));
	struct epoll_event ev, evs[256];
	struct totals t = { 0 };
	long started = 0, held = 0;
	double t0 = now_s(), end = c->duration_s > 0 ? t0 + c->duration_s : 0;
	int ep = epoll_create1(0), active = 0;

	if (!ks || ep < 0)
		return 1;
	for (int i = 0; i < c->parallel; i++)
		ks[i].fd = -1;
	while (!stopping) {
		bool more = (c->conns == 0 || started < c->conns) && !(end && now_s() > end);

		for (int i = 0; more && i < c->parallel; i++) {
			if (ks[i].fd >= 0)
				continue;
			memset(&ks[i], 0, sizeof(ks[i]));
			ks[i].fd = open_conn(c, started++, true);
			if (ks[i].fd < 0) {
				t.failed++;
				more = (c->conns == 0 || started < c->conns);
				continue;
			}
			ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
			ev.data.u32 = (unsigned)i;
			epoll_ctl(ep, EPOLL_CTL_ADD, ks[i].fd, &ev);
			active++;
			more = (c->conns == 0 || started < c->conns) && !(end && now_s() > end);
		}
		if (!active)
			break;
		int n = epoll_wait(ep, evs, 256, 100);

		for (int j = 0; j < n; j++) {
			struct conn *k = &ks[evs[j].data.u32];

			if (k->fd < 0)
				continue;
			if (conn_step(c, ep, k, &t)) {
				t.ok++;
				if (c->hold_s > 0) {
					/* keep it open: parked until every connection is up */
					epoll_ctl(ep, EPOLL_CTL_DEL, k->fd, NULL);
					held++;
					active--;
					continue;
				}
				epoll_ctl(ep, EPOLL_CTL_DEL, k->fd, NULL);
				close(k->fd);
				k->fd = -1;
				active--;
			} else if (k->fd < 0) {
				active--;
			}
		}
		if (c->hold_s > 0 && held + t.failed >= c->parallel)
			break;
	}
	if (c->hold_s > 0) {
		double until = now_s() + c->hold_s;

		printf("{\"held\":%ld}\n", held);
		fflush(stdout);
		while (!stopping && now_s() < until)
			usleep(20000);
	}
	for (int i = 0; i < c->parallel; i++)
		if (ks[i].fd >= 0)
			close(ks[i].fd);
	printf("{\"conns\":%ld,\"failed\":%ld,\"exchanges\":%ld,\"elapsed_s\":%.3f}\n", t.ok,
	       t.failed, t.exchanges, now_s() - t0);
	free(ks);
	close(ep);
	return 0;
}

/* ---- client, one process per connection (process churn) ---- */

static int child_conn(const struct cfg *c, long i)
{
	char buf[MAX_BUF];
	int fd = open_conn(c, i, false), done = 0;

	if (fd < 0)
		return 255;
	for (int r = 0; r < c->reqs; r++) {
		int want = c->resp_bytes;

		if (write(fd, zeros, (size_t)c->req_bytes) != c->req_bytes)
			break;
		while (want > 0) {
			ssize_t n = read(fd, buf, (size_t)want);

			if (n <= 0)
				break;
			want -= (int)n;
		}
		if (want)
			break;
		done++;
	}
	close(fd);
	return done;
}

static int run_forking(const struct cfg *c)
{
	struct totals t = { 0 };
	double t0 = now_s(), end = c->duration_s > 0 ? t0 + c->duration_s : 0;
	long started = 0;
	int running = 0, st;

	for (;;) {
		while (!stopping && running < c->parallel &&
		       (c->conns == 0 || started < c->conns) && !(end && now_s() > end)) {
			pid_t p = fork();

			if (p == 0)
				_exit(child_conn(c, started));
			if (p < 0)
				break;
			started++;
			running++;
		}
		if (!running)
			break;
		if (wait(&st) < 0)
			break;
		running--;
		if (WIFEXITED(st) && WEXITSTATUS(st) == c->reqs) {
			t.ok++;
			t.exchanges += c->reqs;
		} else {
			t.failed++;
			if (WIFEXITED(st) && WEXITSTATUS(st) != 255)
				t.exchanges += WEXITSTATUS(st);
		}
	}
	printf("{\"conns\":%ld,\"failed\":%ld,\"exchanges\":%ld,\"elapsed_s\":%.3f}\n", t.ok,
	       t.failed, t.exchanges, now_s() - t0);
	return 0;
}

/* ---- server ---- */

static int run_server(const struct cfg *c)
{
	struct epoll_event ev, evs[256];
	char buf[MAX_BUF];
	int ep = epoll_create1(0), one = 1;
	int *want = calloc(1 << 20, sizeof(int)); /* per fd: request bytes still due */
	double end = c->duration_s > 0 ? now_s() + c->duration_s : 0;
	long accepted = 0;

	if (ep < 0 || !want)
		return 1;
	for (int p = 0; p < c->nports; p++) {
		struct sockaddr_storage ss;
		socklen_t sl;
		int lfd;

		if (make_addr(c->addr, c->port + p, &ss, &sl))
			return 2;
		lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (lfd < 0 || bind(lfd, (struct sockaddr *)&ss, sl) || listen(lfd, 65535)) {
			perror("churn server: listen");
			return 1;
		}
		ev.events = EPOLLIN;
		ev.data.u64 = (1ULL << 32) | (unsigned)lfd;
		epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	}
	printf("{\"listening\":%d}\n", c->nports);
	fflush(stdout);
	while (!stopping && !(end && now_s() > end)) {
		int n = epoll_wait(ep, evs, 256, 100);

		for (int j = 0; j < n; j++) {
			int fd = (int)(unsigned)evs[j].data.u64;

			if (evs[j].data.u64 >> 32) {
				int cfd;

				while ((cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					if (cfd >= (1 << 20)) {
						close(cfd);
						continue;
					}
					setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one,
						   sizeof(one));
					want[cfd] = c->req_bytes;
					ev.events = EPOLLIN;
					ev.data.u64 = (unsigned)cfd;
					epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &ev);
					accepted++;
				}
				continue;
			}
			for (;;) {
				ssize_t r = read(fd, buf, sizeof(buf));

				if (r < 0 && errno == EAGAIN)
					break;
				if (r <= 0) {
					epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
					close(fd);
					break;
				}
				while (r > 0) {
					ssize_t use = r < want[fd] ? r : want[fd];

					want[fd] -= (int)use;
					r -= use;
					if (!want[fd]) {
						if (write(fd, zeros, (size_t)c->resp_bytes) < 0)
							break;
						want[fd] = c->req_bytes;
					}
				}
			}
		}
	}
	fprintf(stderr, "churn server: %ld connections accepted\n", accepted);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: churn server --listen ADDR --port P [--nports N] [--req B] [--resp B]\n"
		"                    [--duration S]\n"
		"       churn client --connect ADDR --port P [--nports N] [--conns N] [--parallel "
		"C]\n"
		"                    [--reqs R] [--req B] [--resp B] [--src-base IP --src-count "
		"K]\n"
		"                    [--fork] [--hold S] [--duration S]\n"
		"Client connections i = 0.. go to port P + i %% N from source base + i %% K; "
		"--fork\n"
		"runs each connection in its own process; --hold keeps all C connections open S\n"
		"seconds. --conns 0 (default with --duration) means until the duration ends.\n");
}

/* Long by its option table and one case per option: splitting it would scatter them. */
int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "listen", 1, NULL, 'l' },    { "connect", 1, NULL, 'c' },
		{ "port", 1, NULL, 'p' },      { "nports", 1, NULL, 'N' },
		{ "conns", 1, NULL, 'n' },     { "parallel", 1, NULL, 'P' },
		{ "reqs", 1, NULL, 'r' },      { "req", 1, NULL, 'q' },
		{ "resp", 1, NULL, 's' },      { "src-base", 1, NULL, 'b' },
		{ "src-count", 1, NULL, 'k' }, { "fork", 0, NULL, 'f' },
		{ "hold", 1, NULL, 'H' },      { "duration", 1, NULL, 'd' },
		{ "help", 0, NULL, 'h' },      { 0 }
	};
	struct cfg c = { .port = 0,
			 .nports = 1,
			 .parallel = 32,
			 .reqs = 1,
			 .req_bytes = 64,
			 .resp_bytes = 256,
			 .src_count = 1 };
	struct sigaction sa = { .sa_handler = on_stop };
	struct rlimit rl;
	const char *mode;
	int o;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	mode = argv[1];
	optind = 2;
	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (o) {
		case 'l':
		case 'c':
			c.addr = optarg;
			break;
		case 'p':
			c.port = atoi(optarg);
			break;
		case 'N':
			c.nports = atoi(optarg);
			break;
		case 'n':
			c.conns = atol(optarg);
			break;
		case 'P':
			c.parallel = atoi(optarg);
			break;
		case 'r':
			c.reqs = atoi(optarg);
			break;
		case 'q':
			c.req_bytes = atoi(optarg);
			break;
		case 's':
			c.resp_bytes = atoi(optarg);
			break;
		case 'b':
			c.src_base = optarg;
			break;
		case 'k':
			c.src_count = atoi(optarg);
			break;
		case 'f':
			c.fork_each = true;
			break;
		case 'H':
			c.hold_s = atof(optarg);
			break;
		case 'd':
			c.duration_s = atof(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!c.addr || c.port < 1 || c.nports < 1 || c.port + c.nports > 65536 || c.parallel < 1 ||
	    c.reqs < 1 || c.reqs > 250 || c.req_bytes < 1 || c.req_bytes > MAX_BUF ||
	    c.resp_bytes < 1 || c.resp_bytes > MAX_BUF || c.src_count < 1) {
		usage(stderr);
		return 2;
	}
	if (!c.conns && !c.duration_s && strcmp(mode, "server"))
		c.conns = c.parallel;
	/* as many descriptors as the hard limit allows (raising it needs CAP_SYS_RESOURCE) */
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(mode, "server"))
		return run_server(&c);
	if (!strcmp(mode, "client"))
		return c.fork_each ? run_forking(&c) : run_client(&c);
	usage(stderr);
	return 2;
}
