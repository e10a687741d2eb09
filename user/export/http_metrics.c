// SPDX-License-Identifier: GPL-2.0
/* `record --listen`: a minimal single-threaded HTTP/1.1 server answering GET /metrics with
 * the OpenMetrics text of everything recorded so far. Non-blocking and poll-driven so
 * the record loop serves scrapes while it waits for the next interval, no threads. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include "export/exports.h"

#define HTTP_MAX_CLIENTS       16
#define HTTP_MAX_REQUEST       8192
#define HTTP_CLIENT_TIMEOUT_MS 5000

struct http_client {
	int fd;
	char req[HTTP_MAX_REQUEST];
	size_t req_len;
	char *resp; /* NULL while reading the request */
	size_t resp_len, resp_off;
	__u64 deadline_ms;
};

struct http_metrics {
	int lfd;
	int port;
	struct snapshot total; /* cumulative since start: counters must only grow */
	char *body;
	size_t body_len;
	struct http_client clients[HTTP_MAX_CLIENTS];
};

static __u64 mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000;
}

static int render(struct http_metrics *h)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (!f)
		return -ENOMEM;
	err = export_openmetrics(f, &h->total, 0);
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (err) {
		free(buf);
		return err;
	}
	free(h->body);
	h->body = buf;
	h->body_len = len;
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
	for (int i = 0; i < HTTP_MAX_CLIENTS; i++)
		h->clients[i].fd = -1;
	h->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (h->lfd < 0)
		goto fail;
	setsockopt(h->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(h->lfd, (struct sockaddr *)&ss, sl) || listen(h->lfd, 16))
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

int http_metrics__update(struct http_metrics *h, const struct snapshot *interval)
{
	struct snapshot only = *interval;
	int err;

	/* only the aggregates: slow requests and attribution are not metrics */
	only.slow_reqs = NULL;
	only.nslow = 0;
	only.attr = NULL;
	err = snapshot__merge(&h->total, &only);
	h->total.hist_live = interval->hist_live; /* a gauge: the latest value */
	h->total.slow_threshold_ns = interval->slow_threshold_ns;
	return err ? err : render(h);
}

static void client_close(struct http_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->resp);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static int client_respond(struct http_metrics *h, struct http_client *c)
{
	char method[16], path[256];
	const char *status = "200 OK",
		   *ctype = "application/openmetrics-text; version=1.0.0; charset=utf-8";
	const char *body = h->body;
	size_t blen = h->body_len;
	bool head = false;
	char hdr[512];
	int n;

	if (sscanf(c->req, "%15s %255s", method, path) != 2) {
		status = "400 Bad Request";
	} else if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		status = "405 Method Not Allowed";
	} else if (strcmp(path, "/metrics") && strncmp(path, "/metrics?", 9)) {
		status = "404 Not Found";
	}
	head = !strcmp(method, "HEAD");
	if (strcmp(status, "200 OK")) {
		body = "try GET /metrics\n";
		blen = strlen(body);
		ctype = "text/plain; charset=utf-8";
	}
	n = snprintf(hdr, sizeof(hdr),
		     "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n%s\r\n",
		     status, ctype, blen,
		     strcmp(status, "405 Method Not Allowed") ? "" : "Allow: GET, HEAD\r\n");
	c->resp = malloc((size_t)n + (head ? 0 : blen));
	if (!c->resp)
		return -ENOMEM;
	memcpy(c->resp, hdr, (size_t)n);
	if (!head)
		memcpy(c->resp + n, body, blen);
	c->resp_len = (size_t)n + (head ? 0 : blen);
	c->resp_off = 0;
	return 0;
}

/* Advances one client; returns 1 when its response is complete. */
static int client_step(struct http_metrics *h, struct http_client *c)
{
	ssize_t r;

	if (!c->resp) {
		r = recv(c->fd, c->req + c->req_len, sizeof(c->req) - 1 - c->req_len, 0);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (r <= 0) {
			client_close(c);
			return 0;
		}
		c->req_len += (size_t)r;
		c->req[c->req_len] = '\0';
		/* the request head is all we need; bodies are not accepted */
		if (!strstr(c->req, "\r\n\r\n") && !strstr(c->req, "\n\n")) {
			if (c->req_len < sizeof(c->req) - 1)
				return 0;
		}
		if (client_respond(h, c)) {
			client_close(c);
			return 0;
		}
	}
	while (c->resp_off < c->resp_len) {
		r = send(c->fd, c->resp + c->resp_off, c->resp_len - c->resp_off, MSG_NOSIGNAL);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (r <= 0) {
			client_close(c);
			return 0;
		}
		c->resp_off += (size_t)r;
	}
	shutdown(c->fd, SHUT_WR);
	client_close(c);
	return 1;
}

static void accept_all(struct http_metrics *h)
{
	for (;;) {
		int fd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), i;

		if (fd < 0)
			return;
		for (i = 0; i < HTTP_MAX_CLIENTS; i++)
			if (h->clients[i].fd < 0)
				break;
		if (i == HTTP_MAX_CLIENTS) {
			close(fd); /* busy: the scraper retries on its next interval */
			continue;
		}
		h->clients[i].fd = fd;
		h->clients[i].deadline_ms = mono_ms() + HTTP_CLIENT_TIMEOUT_MS;
	}
}

int http_metrics__serve(struct http_metrics *h, int timeout_ms)
{
	struct pollfd pfd[HTTP_MAX_CLIENTS + 1];
	int idx[HTTP_MAX_CLIENTS + 1];
	__u64 end = mono_ms() + (timeout_ms > 0 ? (__u64)timeout_ms : 0);
	int done = 0;

	for (;;) {
		__u64 now = mono_ms();
		int n = 0, r, wait;

		pfd[n].fd = h->lfd;
		pfd[n].events = POLLIN;
		idx[n++] = -1;
		for (int i = 0; i < HTTP_MAX_CLIENTS; i++) {
			struct http_client *c = &h->clients[i];

			if (c->fd < 0)
				continue;
			if (now > c->deadline_ms) {
				client_close(c); /* slow or idle client */
				continue;
			}
			pfd[n].fd = c->fd;
			pfd[n].events = c->resp ? POLLOUT : POLLIN;
			idx[n++] = i;
		}
		wait = now >= end ? 0 : (int)(end - now);
		r = poll(pfd, (nfds_t)n, wait);
		if (r < 0)
			return errno == EINTR ? -EINTR : -errno;
		for (int k = 0; k < n && r > 0; k++) {
			if (!pfd[k].revents)
				continue;
			if (idx[k] < 0)
				accept_all(h);
			else
				done += client_step(h, &h->clients[idx[k]]);
		}
		if (mono_ms() >= end)
			return done;
	}
}

int http_metrics__fd(const struct http_metrics *h)
{
	return h->lfd;
}

int http_metrics__port(const struct http_metrics *h)
{
	return h->port;
}

void http_metrics__close(struct http_metrics *h)
{
	if (!h)
		return;
	for (int i = 0; i < HTTP_MAX_CLIENTS; i++)
		if (h->clients[i].fd >= 0)
			client_close(&h->clients[i]);
	if (h->lfd >= 0)
		close(h->lfd);
	snapshot__free(&h->total);
	free(h->body);
	free(h);
}
