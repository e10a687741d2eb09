// SPDX-License-Identifier: GPL-2.0
/* `record --listen`: a minimal HTTP/1.1 server answering GET /metrics with the OpenMetrics
 * text of everything recorded so far. The record loop renders that text once per interval,
 * at its own (SCHED_IDLE) priority; a serving thread at the normal priority only answers
 * scrapes with the text last rendered, so a scrape does not wait for idle CPU time and
 * tailtrace's own work gets no higher priority than before. Without the thread (a caller
 * that never calls http_metrics__start(), the unit tests) the same code serves from the
 * caller's poll loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "core/histogram.h"
#include "export/exports.h"

#define HTTP_MAX_CLIENTS 16
#define HTTP_MAX_REQUEST 8192
#define HTTP_MAX_HEADER  256 /* the status line and headers of an answer */
/* A scraper sends its request head at once; a connection that has not within this time
 * gives its slot back. */
#define HTTP_HEAD_TIMEOUT_MS 1000
/* A client younger than this is never evicted: a scrape may be between its connect() and
 * its send(). With every slot young, new connections wait in the listen backlog. */
#define HTTP_EVICT_GRACE_MS    200
#define HTTP_CLIENT_TIMEOUT_MS 5000 /* the whole exchange, a slow reader included */
#define HTTP_BACKLOG           64
#define HTTP_THREAD_WAIT_MS    1000 /* the serving thread's longest sleep */

struct http_client {
	int fd;
	char req[HTTP_MAX_REQUEST];
	size_t req_len;
	char *resp; /* the status line and headers; NULL while reading the request */
	size_t resp_hdr_len, resp_len, resp_off;
	struct http_body *body; /* shared with the other clients, or NULL */
	const char *btext;      /* the body sent after resp */
	__u64 accepted_ms;
	__u64 progress_ms; /* last time bytes went either way: the eviction order */
};

/* One rendering of the text, shared by every client sending it: 16 clients of a 10 MB
 * text hold 10 MB, not 160. */
struct http_body {
	unsigned int refs; /* under http_metrics.lock */
	size_t len;
	char *text;
};

struct http_metrics {
	int lfd;
	int port;
	/* the record loop's side: cumulative since start (counters must only grow) */
	struct snapshot total;
	__u64 series_over; /* histogram keys or NAPI instances not added: a bound hit */
	/* the text served, replaced whole by each update */
	pthread_mutex_t lock;
	struct http_body *body;
	/* the serving side: the thread once started, else the caller of serve() */
	struct http_client clients[HTTP_MAX_CLIENTS];
	__u64 evicted; /* connections closed to make room for a new one */
	pthread_t thread;
	bool threaded;
	int stop_fd;
};

static __u64 mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000;
}

static void body_put(struct http_metrics *h, struct http_body *b)
{
	bool last;

	if (!b)
		return;
	pthread_mutex_lock(&h->lock);
	last = !--b->refs;
	pthread_mutex_unlock(&h->lock);
	if (last) {
		free(b->text);
		free(b);
	}
}

/* Renders h->total and publishes it for the serving side. */
static int render(struct http_metrics *h)
{
	struct http_body *b = calloc(1, sizeof(*b)), *old;
	char host_label[2 * SNAP_HOST_LEN + 16];
	char *buf = NULL;
	size_t len = 0;
	FILE *f = b ? open_memstream(&buf, &len) : NULL;
	int err;

	if (!f) {
		free(b);
		return -ENOMEM;
	}
	err = export_openmetrics_families(f, &h->total, 0);
	export_openmetrics_host_label(&h->total, host_label, sizeof(host_label));
	if (!err)
		fprintf(f,
			"# TYPE tailtrace_listen_series_over_limit counter\n"
			"# HELP tailtrace_listen_series_over_limit Histogram keys or NAPI "
			"instances of an interval not served: the bound of %d series or %d NAPI "
			"instances was reached\n"
			"tailtrace_listen_series_over_limit_total%s %llu\n# EOF\n",
			HTTP_MAX_SERIES, HTTP_MAX_NAPI, host_label,
			(unsigned long long)h->series_over);
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (err) {
		free(buf);
		free(b);
		return err;
	}
	b->text = buf;
	b->len = len;
	b->refs = 1; /* h->body's */
	pthread_mutex_lock(&h->lock);
	old = h->body;
	h->body = b;
	pthread_mutex_unlock(&h->lock);
	body_put(h, old);
	return 0;
}

static int parse_listen(const char *spec, struct sockaddr_storage *ss, socklen_t *sl)
{
	char host[128] = "127.0.0.1";
	const char *colon = strrchr(spec, ':'), *port_s = spec;
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	char *end;
	long port;

	memset(ss, 0, sizeof(*ss));
	if (colon) {
		size_t n = (size_t)(colon - spec);

		port_s = colon + 1;
		if (n) {
			if (spec[0] == '[' && spec[n - 1] == ']') {
				spec++;
				n -= 2;
			}
			if (n >= sizeof(host))
				return -EINVAL;
			memcpy(host, spec, n);
			host[n] = '\0';
		}
	}
	errno = 0;
	port = strtol(port_s, &end, 10);
	if (!*port_s || *end || errno || port < 0 || port > 65535)
		return -EINVAL;
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((__u16)port);
		*sl = sizeof(*in4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((__u16)port);
		*sl = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

struct http_metrics *http_metrics__open(const char *listen_spec, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	struct http_metrics *h;
	int one = 1, e;

	if (parse_listen(listen_spec, &ss, &sl)) {
		snprintf(err, errlen, "invalid --listen '%s' (PORT, HOST:PORT or [V6]:PORT)",
			 listen_spec);
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snapshot__init(&h->total);
	pthread_mutex_init(&h->lock, NULL);
	h->stop_fd = -1;
	for (int i = 0; i < HTTP_MAX_CLIENTS; i++)
		h->clients[i].fd = -1;
	h->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (h->lfd < 0)
		goto fail;
	setsockopt(h->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(h->lfd, (struct sockaddr *)&ss, sl) || listen(h->lfd, HTTP_BACKLOG))
		goto fail;
	sl = sizeof(ss);
	if (getsockname(h->lfd, (struct sockaddr *)&ss, &sl))
		goto fail;
	h->port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
						: ((struct sockaddr_in6 *)&ss)->sin6_port);
	if ((e = render(h))) {
		errno = -e;
		goto fail;
	}
	return h;
fail:
	e = errno;
	snprintf(err, errlen, "cannot listen on %s: %s", listen_spec, strerror(e));
	http_metrics__close(h);
	return NULL;
}

static struct snap_hist *find_series(struct snapshot *s, const struct hist_key *key)
{
	for (size_t i = 0; i < s->nhists; i++)
		if (!memcmp(&s->hists[i].key, key, sizeof(*key)))
			return &s->hists[i];
	return NULL;
}

/* Histograms into the totals, new keys only while there is room for them: a series that
 * exists keeps counting, one that would pass the bound is counted as over it. */
static int add_series(struct http_metrics *h, const struct snapshot *interval)
{
	for (size_t i = 0; i < interval->nhists; i++) {
		const struct snap_hist *src = &interval->hists[i];
		struct snap_hist *dst;
		int err;

		if (h->total.nhists < HTTP_MAX_SERIES) {
			err = snapshot__add_hist(&h->total, &src->key, &src->h);
			if (err)
				return err;
		} else if ((dst = find_series(&h->total, &src->key))) {
			hist_add(&dst->h, &src->h);
		} else {
			h->series_over++;
		}
	}
	return 0;
}

int http_metrics__set_host(struct http_metrics *h, const char *host)
{
	snprintf(h->total.host, sizeof(h->total.host), "%s", host);
	return render(h);
}

/* NAPI instances into the totals, bounded as the histogram series are: a device churn
 * (pods coming and going) must not grow the text without end. */
static int add_napi(struct http_metrics *h, const struct snapshot *interval)
{
	for (size_t i = 0; i < interval->nnapi; i++) {
		const struct snap_napi *src = &interval->napi[i];
		bool known = false;
		int err;

		for (size_t j = 0; j < h->total.nnapi && !known; j++)
			known = !memcmp(&h->total.napi[j].key, &src->key, sizeof(src->key));
		if (!known && h->total.nnapi >= HTTP_MAX_NAPI) {
			h->series_over++;
			continue;
		}
		if ((err = snapshot__add_napi(&h->total, &src->key, &src->c)))
			return err;
	}
	return 0;
}

int http_metrics__update(struct http_metrics *h, const struct snapshot *interval)
{
	struct snapshot only = *interval;
	int err;

	/* only the aggregates: slow requests and attribution are not metrics */
	only.slow_reqs = NULL;
	only.nslow = 0;
	only.attr = NULL;
	only.hists = NULL;
	only.nhists = 0;
	only.napi = NULL;
	only.nnapi = 0;
	if (h->total.ndevs >= HTTP_MAX_DEVS)
		only.ndevs = 0; /* a device without a name is labelled by its index */
	err = add_series(h, interval);
	if (!err)
		err = add_napi(h, interval);
	if (!err)
		err = snapshot__merge(&h->total, &only);
	h->total.hist_live = interval->hist_live; /* a gauge: the latest value */
	h->total.slow_threshold_ns = interval->slow_threshold_ns;
	return err ? err : render(h);
}

int http_request_status(const char *req, bool *head)
{
	size_t mlen = strcspn(req, " \t\r\n"), plen;
	const char *path = req + mlen + 1;

	*head = false;
	/* "METHOD SP PATH": the request line starts the head, one space before the path */
	if (!mlen || req[mlen] != ' ')
		return 400;
	plen = strcspn(path, " \t\r\n");
	if (!plen)
		return 400;
	if (!(mlen == 3 && !memcmp(req, "GET", 3)) && !(mlen == 4 && !memcmp(req, "HEAD", 4)))
		return 405;
	*head = mlen == 4;
	if (!(plen == 8 && !memcmp(path, "/metrics", 8)) &&
	    !(plen > 8 && !memcmp(path, "/metrics?", 9)))
		return 404;
	return 200;
}

static void client_close(struct http_metrics *h, struct http_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->resp);
	body_put(h, c->body);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static const char *status_line(int status)
{
	switch (status) {
	case 200:
		return "200 OK";
	case 404:
		return "404 Not Found";
	case 405:
		return "405 Method Not Allowed";
	default:
		return "400 Bad Request";
	}
}

static int client_respond(struct http_metrics *h, struct http_client *c)
{
	static const char other[] = "try GET /metrics\n";
	bool head;
	int status = http_request_status(c->req, &head);
	const char *ctype = status == 200
				    ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
				    : "text/plain; charset=utf-8";
	size_t blen = sizeof(other) - 1;
	int n;

	c->btext = other;
	if (status == 200) {
		/* a reference, not a copy: an update may replace h->body meanwhile */
		pthread_mutex_lock(&h->lock);
		c->body = h->body;
		c->body->refs++;
		pthread_mutex_unlock(&h->lock);
		c->btext = c->body->text;
		blen = c->body->len;
	}
	c->resp = malloc(HTTP_MAX_HEADER);
	if (!c->resp)
		return -ENOMEM;
	n = snprintf(c->resp, HTTP_MAX_HEADER,
		     "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n%s\r\n",
		     status_line(status), ctype, blen, status == 405 ? "Allow: GET, HEAD\r\n" : "");
	c->resp_hdr_len = (size_t)n;
	c->resp_len = (size_t)n + (head ? 0 : blen);
	c->resp_off = 0;
	return 0;
}

/* Sends what the socket takes of the headers and the body; -1 when the client is gone. */
static int client_send(struct http_client *c)
{
	while (c->resp_off < c->resp_len) {
		size_t off = c->resp_off, hl = c->resp_hdr_len;
		struct iovec iov[2] = {
			{ .iov_base = c->resp + off, .iov_len = off < hl ? hl - off : 0 },
			{ .iov_base = (char *)c->btext + (off > hl ? off - hl : 0),
			  .iov_len = c->resp_len - (off > hl ? off : hl) },
		};
		struct msghdr m = { .msg_iov = off < hl ? iov : iov + 1,
				    .msg_iovlen = off < hl ? 2 : 1 };
		ssize_t r = sendmsg(c->fd, &m, MSG_NOSIGNAL);

		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (r <= 0)
			return -1;
		c->resp_off += (size_t)r;
		c->progress_ms = mono_ms();
	}
	return 1;
}

/* Reads what the client sent; returns 1 once the request head is complete (or fills the
 * buffer), 0 to wait for more, -1 when the client is gone. */
static int client_read(struct http_client *c)
{
	ssize_t r = recv(c->fd, c->req + c->req_len, sizeof(c->req) - 1 - c->req_len, 0);

	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (r <= 0)
		return -1;
	c->req_len += (size_t)r;
	c->req[c->req_len] = '\0';
	c->progress_ms = mono_ms();
	/* the request head is all we need; bodies are not accepted */
	if (!strstr(c->req, "\r\n\r\n") && !strstr(c->req, "\n\n"))
		return c->req_len >= sizeof(c->req) - 1;
	return 1;
}

/* Advances one client; returns 1 when its response is complete. */
static int client_step(struct http_metrics *h, struct http_client *c)
{
	ssize_t r;

	if (!c->resp) {
		r = client_read(c);
		if (r <= 0 || client_respond(h, c)) {
			if (r)
				client_close(h, c);
			return 0;
		}
	}
	r = client_send(c);
	if (r <= 0) {
		if (r)
			client_close(h, c);
		return 0;
	}
	shutdown(c->fd, SHUT_WR);
	client_close(h, c);
	return 1;
}

/* True for a client that has sent nothing: no byte read, none waiting to be. */
static bool client_silent(const struct http_client *c)
{
	int pending = 0;

	return !c->resp && !c->req_len && !ioctl(c->fd, FIONREAD, &pending) && !pending;
}

/* A slot for a new connection, without closing anything yet: a free one, else the silent
 * client connected longest ago, else the client that made progress least recently; only
 * clients older than HTTP_EVICT_GRACE_MS qualify. NULL when none does. With every slot
 * taken by connections that send nothing, a new scrape still gets in, and a burst of them
 * does not push out a scrape whose request is on its way or waiting to be read. */
static struct http_client *pick_slot(struct http_metrics *h, __u64 now)
{
	struct http_client *victim = NULL, *stalest = NULL;

	for (int i = 0; i < HTTP_MAX_CLIENTS; i++) {
		struct http_client *c = &h->clients[i];

		if (c->fd < 0)
			return c;
		if (now - c->accepted_ms < HTTP_EVICT_GRACE_MS)
			continue;
		if (client_silent(c) && (!victim || c->accepted_ms < victim->accepted_ms))
			victim = c;
		if (!stalest || c->progress_ms < stalest->progress_ms)
			stalest = c;
	}
	return victim ? victim : stalest;
}

/* Accepts while a slot can be had; the rest wait in the kernel's backlog. */
static void accept_all(struct http_metrics *h)
{
	for (;;) {
		struct http_client *c = pick_slot(h, mono_ms());
		int fd;

		if (!c)
			return;
		fd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (c->fd >= 0) {
			client_close(h, c);
			__atomic_fetch_add(&h->evicted, 1, __ATOMIC_RELAXED);
		}
		c->fd = fd;
		c->accepted_ms = c->progress_ms = mono_ms();
	}
}

static __u64 client_deadline(const struct http_client *c)
{
	return c->accepted_ms + (c->resp ? HTTP_CLIENT_TIMEOUT_MS : HTTP_HEAD_TIMEOUT_MS);
}

/* One poll over the listener, the clients and stop_fd (when >= 0) for up to wait_ms, or
 * until the next client deadline. Returns the responses completed, -errno, or -ECANCELED
 * once stop_fd is readable. */
static int serve_once(struct http_metrics *h, int wait_ms, int stop_fd)
{
	struct pollfd pfd[HTTP_MAX_CLIENTS + 2];
	int idx[HTTP_MAX_CLIENTS + 2], n = 0, r, done = 0;
	__u64 now = mono_ms(), until = now + (__u64)(wait_ms > 0 ? wait_ms : 0);

	if (pick_slot(h, now)) {
		pfd[n] = (struct pollfd){ .fd = h->lfd, .events = POLLIN };
		idx[n++] = -1;
	} else if (now + HTTP_EVICT_GRACE_MS < until) {
		until = now + HTTP_EVICT_GRACE_MS; /* every slot young: look again soon */
	}
	if (stop_fd >= 0) {
		pfd[n] = (struct pollfd){ .fd = stop_fd, .events = POLLIN };
		idx[n++] = -2;
	}
	for (int i = 0; i < HTTP_MAX_CLIENTS; i++) {
		struct http_client *c = &h->clients[i];

		if (c->fd < 0)
			continue;
		if (now >= client_deadline(c)) {
			client_close(h, c); /* slow or idle client */
			continue;
		}
		if (client_deadline(c) < until)
			until = client_deadline(c);
		pfd[n] = (struct pollfd){ .fd = c->fd, .events = c->resp ? POLLOUT : POLLIN };
		idx[n++] = i;
	}
	r = poll(pfd, (nfds_t)n, (int)(until - now));
	if (r < 0)
		return -errno;
	/* the clients first: a request already here is read before new connections can
	 * take its slot */
	for (int k = n - 1; k >= 0 && r > 0; k--) {
		if (!pfd[k].revents)
			continue;
		if (idx[k] == -2)
			return -ECANCELED;
		if (idx[k] == -1)
			accept_all(h);
		else
			done += client_step(h, &h->clients[idx[k]]);
	}
	return done;
}

int http_metrics__serve(struct http_metrics *h, int timeout_ms)
{
	__u64 end = mono_ms() + (timeout_ms > 0 ? (__u64)timeout_ms : 0);
	int done = 0;

	for (;;) {
		__u64 now = mono_ms();
		int r = serve_once(h, now >= end ? 0 : (int)(end - now), -1);

		if (r < 0)
			return r;
		done += r;
		if (mono_ms() >= end)
			return done;
	}
}

static void *serving_thread(void *arg)
{
	struct http_metrics *h = arg;
	struct sched_param sp = { 0 };

	/* created by a SCHED_IDLE thread, it starts at SCHED_IDLE: a scrape is the
	 * scraper's wait, not tailtrace's work, so it is answered at the normal policy */
	if (sched_getscheduler(0) == SCHED_IDLE && sched_setscheduler(0, SCHED_OTHER, &sp))
		fprintf(stderr, "tailtrace: warning: --listen serves at SCHED_IDLE: %s\n",
			strerror(errno));
	while (serve_once(h, HTTP_THREAD_WAIT_MS, h->stop_fd) != -ECANCELED)
		;
	return NULL;
}

int http_metrics__start(struct http_metrics *h)
{
	sigset_t all, old;
	int r;

	h->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (h->stop_fd < 0)
		return -errno;
	/* every signal blocked: SIGINT/SIGTERM must interrupt the record loop, not this */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&h->thread, NULL, serving_thread, h);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		close(h->stop_fd);
		h->stop_fd = -1;
		return -r;
	}
	pthread_setname_np(h->thread, "tailtrace-http");
	h->threaded = true;
	return 0;
}

int http_metrics__fd(const struct http_metrics *h)
{
	return h->lfd;
}

int http_metrics__port(const struct http_metrics *h)
{
	return h->port;
}

unsigned long long http_metrics__evicted(const struct http_metrics *h)
{
	return __atomic_load_n(&h->evicted, __ATOMIC_RELAXED);
}

void http_metrics__close(struct http_metrics *h)
{
	__u64 one = 1;

	if (!h)
		return;
	if (h->threaded) {
		if (write(h->stop_fd, &one, sizeof(one)) != sizeof(one))
			pthread_cancel(h->thread);
		pthread_join(h->thread, NULL);
	}
	if (h->stop_fd >= 0)
		close(h->stop_fd);
	for (int i = 0; i < HTTP_MAX_CLIENTS; i++)
		if (h->clients[i].fd >= 0)
			client_close(h, &h->clients[i]);
	if (h->lfd >= 0)
		close(h->lfd);
	snapshot__free(&h->total);
	body_put(h, h->body);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
