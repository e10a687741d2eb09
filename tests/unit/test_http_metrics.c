// SPDX-License-Identifier: GPL-2.0
/* The /metrics endpoint of `record --listen`: the request parser on hostile heads, the
 * bound on the series it keeps, a table full of silent connections that a scrape still
 * gets through, and the serving thread answering while its caller does something else. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include "export/exports.h"
#include "core/histogram.h"
#include "core/stages.h"
#include "lib/util.h"

#define RESP_MAX (32 << 20) /* HTTP_MAX_SERIES histograms of 35 lines */

static int connect_to(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((__u16)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* Sends req and reads the answer; h non-NULL: serve from this thread meanwhile (no
 * serving thread), NULL: a serving thread answers and this only waits. */
static size_t http_get(int port, const char *req, char *resp, struct http_metrics *h)
{
	size_t got = 0;
	int fd = connect_to(port);

	assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
	for (int i = 0; i < 100; i++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (h)
			http_metrics__serve(h, 20);
		else
			poll(&p, 1, 20);
		while ((r = recv(fd, resp + got, RESP_MAX - 1 - got, MSG_DONTWAIT)) > 0)
			got += (size_t)r;
		if (r == 0)
			break;
	}
	resp[got] = '\0';
	close(fd);
	return got;
}

static void one_series(struct snapshot *s, __u64 id, __u64 value)
{
	struct hist_key k;
	struct hist h;

	memset(&k, 0, sizeof(k));
	memset(&h, 0, sizeof(h));
	k.stage = STAGE_TX_QDISC;
	k.by = GROUP_PORT;
	k.id = id;
	hist_record(&h, value);
	assert_int_equal(snapshot__add_hist(s, &k, &h), 0);
}

static void test_request_status(void **state)
{
	static const struct {
		const char *req;
		int status;
		bool head;
	} cases[] = {
		{ "GET /metrics HTTP/1.1\r\n\r\n", 200, false },
		{ "HEAD /metrics HTTP/1.1\r\n\r\n", 200, true },
		{ "GET /metrics?x=1 HTTP/1.1\r\n\r\n", 200, false },
		{ "GET /metrics\r\n\r\n", 200, false },
		{ "GET /metricsx HTTP/1.1\r\n\r\n", 404, false },
		{ "HEAD /other HTTP/1.1\r\n\r\n", 404, true },
		{ "POST /metrics HTTP/1.1\r\n\r\n", 405, false },
		{ "GETX /metrics HTTP/1.1\r\n\r\n", 405, false },
		{ "", 400, false },
		{ " ", 400, false },
		{ " \t \r\n\r\n", 400,
		  false }, /* white space only: nothing to read a method from */
		{ "\r\n\r\n", 400, false },
		{ "\n\n", 400, false },
		{ "GET\r\n\r\n", 400, false },
		{ "GET \r\n\r\n", 400, false },
		{ "GET  /metrics HTTP/1.1\r\n\r\n", 400, false },
		{ " GET /metrics HTTP/1.1\r\n\r\n", 400, false },
		{ "GET\t/metrics HTTP/1.1\r\n\r\n", 400, false },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		bool head = !cases[i].head;
		int st = http_request_status(cases[i].req, &head);

		if (st != cases[i].status || head != cases[i].head)
			fail_msg("\"%s\": %d head %d, want %d head %d", cases[i].req, st, head,
				 cases[i].status, cases[i].head);
	}
}

static void test_endpoint(void **state)
{
	char err[256], *resp = malloc(RESP_MAX);
	struct http_metrics *h;
	struct snapshot s;
	int port;

	(void)state;
	assert_null(http_metrics__open("not-a-port", err, sizeof(err)));
	h = http_metrics__open("127.0.0.1:0", err, sizeof(err));
	assert_non_null(h);
	port = http_metrics__port(h);
	assert_true(port > 0);
	snapshot__init(&s);
	one_series(&s, 8000, 1000);
	s.counters[CNT_RETRANS] = 42;
	assert_int_equal(http_metrics__update(h, &s), 0);
	assert_int_equal(http_metrics__update(h, &s), 0); /* cumulative: counters add up */
	http_get(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", resp, h);
	assert_int_equal(strncmp(resp, "HTTP/1.1 200 OK\r\n", 17), 0);
	assert_non_null(strstr(resp, "Content-Type: application/openmetrics-text; "
				     "version=1.0.0; charset=utf-8\r\n"));
	assert_non_null(strstr(resp, "\ntailtrace_retrans_total 84\n"));
	assert_non_null(strstr(resp, "\ntailtrace_listen_series_over_limit_total 0\n"));
	assert_int_equal(strcmp(resp + strlen(resp) - 6, "# EOF\n"), 0);
	assert_null(strstr(resp, "# EOF\n# ")); /* one EOF, at the end */
	http_get(port, "GET /other HTTP/1.1\r\n\r\n", resp, h);
	assert_int_equal(strncmp(resp, "HTTP/1.1 404", 12), 0);
	http_get(port, "POST /metrics HTTP/1.1\r\n\r\n", resp, h);
	assert_int_equal(strncmp(resp, "HTTP/1.1 405", 12), 0);
	assert_non_null(strstr(resp, "\r\nAllow: GET, HEAD\r\n"));
	http_get(port, "   \r\n\r\n", resp, h);
	assert_int_equal(strncmp(resp, "HTTP/1.1 400", 12), 0);
	http_get(port, "HEAD /metrics HTTP/1.1\r\n\r\n", resp, h);
	assert_int_equal(strncmp(resp, "HTTP/1.1 200", 12), 0);
	assert_int_equal(strcmp(resp + strlen(resp) - 4, "\r\n\r\n"), 0); /* no body */
	http_metrics__close(h);
	snapshot__free(&s);
	free(resp);
}

/* Keys past HTTP_MAX_SERIES are counted, not kept; the ones kept go on counting. */
static void test_series_bound(void **state)
{
	char err[256], *resp = malloc(RESP_MAX), want[128];
	struct http_metrics *h = http_metrics__open("127.0.0.1:0", err, sizeof(err));
	struct snapshot s;
	size_t n;

	(void)state;
	assert_non_null(h);
	for (int round = 0; round < 2; round++) {
		snapshot__init(&s);
		/* the second round: the same first half, then keys never seen */
		for (__u64 i = 0; i < HTTP_MAX_SERIES; i++)
			one_series(&s, round ? (i < HTTP_MAX_SERIES / 2 ? i : i + 100000) : i,
				   1000);
		assert_int_equal(http_metrics__update(h, &s), 0);
		snapshot__free(&s);
	}
	http_get(http_metrics__port(h), "GET /metrics HTTP/1.1\r\n\r\n", resp, h);
	snprintf(want, sizeof(want), "\ntailtrace_listen_series_over_limit_total %d\n",
		 HTTP_MAX_SERIES / 2);
	assert_non_null(strstr(resp, want));
	/* a key of the first half counted twice, one past the bound never served */
	assert_non_null(strstr(resp, "_count{stage=\"tx.qdisc\",class=\"congestion\",group=\"port "
				     "5\",place=\"(unknown device)\"} 2\n"));
	assert_null(strstr(resp, "group=\"port 100000\""));
	n = 0;
	for (const char *p = resp; (p = strstr(p, "_count{")); p++)
		n++;
	assert_int_equal(n, HTTP_MAX_SERIES);
	http_metrics__close(h);
	free(resp);
}

/* NAPI polls and softnet rows add up over the intervals served (counters only grow); NAPI
 * instances past HTTP_MAX_NAPI are counted, not served, as histogram keys are. */
static void test_nic_counters(void **state)
{
	char err[256], *resp = malloc(RESP_MAX), want[128];
	struct http_metrics *h = http_metrics__open("127.0.0.1:0", err, sizeof(err));
	struct snap_softnet row = { .cpu = 1, .dropped = 3, .time_squeeze = 5 };
	struct napi_count c = { .polls = 7, .exhausted = 1, .work = 70 };
	struct snapshot s;

	(void)state;
	assert_non_null(h);
	for (int round = 0; round < 2; round++) {
		snapshot__init(&s);
		for (__u32 i = 0; i < HTTP_MAX_NAPI + (round ? 5 : 0); i++) {
			struct napi_key k = { .netns = 1, .ifindex = 2, .napi_id = 100 + i };

			assert_int_equal(snapshot__add_napi(&s, &k, &c), 0);
		}
		assert_int_equal(snapshot__add_softnet(&s, &row), 0);
		assert_int_equal(http_metrics__update(h, &s), 0);
		snapshot__free(&s);
	}
	http_get(http_metrics__port(h), "GET /metrics HTTP/1.1\r\n\r\n", resp, h);
	assert_non_null(strstr(resp, "\ntailtrace_softnet_dropped_total{cpu=\"1\"} 6\n"));
	assert_non_null(strstr(resp, "\ntailtrace_softnet_time_squeeze_total{cpu=\"1\"} 10\n"));
	assert_non_null(strstr(
		resp, "\ntailtrace_napi_polls_total{dev=\"ifindex 2\",napi_id=\"100\"} 14\n"));
	snprintf(want, sizeof(want), "napi_id=\"%d\"}", 100 + HTTP_MAX_NAPI);
	assert_null(strstr(resp, want));
	assert_non_null(strstr(resp, "\ntailtrace_listen_series_over_limit_total 5\n"));
	http_metrics__close(h);
	free(resp);
}

/* Every slot held by a connection that sends nothing: a scrape still gets an answer, by
 * closing silent ones once they are past their grace period. */
static void test_silent_clients_evicted(void **state)
{
	char err[256], *resp = malloc(RESP_MAX);
	struct http_metrics *h = http_metrics__open("127.0.0.1:0", err, sizeof(err));
	int silent[40];

	(void)state;
	assert_non_null(h);
	for (int i = 0; i < 40; i++) {
		silent[i] = connect_to(http_metrics__port(h));
		http_metrics__serve(h, 0);
	}
	/* all 16 slots young: the rest wait in the backlog, none is evicted yet */
	assert_int_equal(http_metrics__evicted(h), 0);
	http_get(http_metrics__port(h), "GET /metrics HTTP/1.1\r\n\r\n", resp, h);
	assert_int_equal(strncmp(resp, "HTTP/1.1 200 OK\r\n", 17), 0);
	assert_true(http_metrics__evicted(h) >= 40 - 16);
	for (int i = 0; i < 40; i++)
		close(silent[i]);
	http_metrics__close(h);
	free(resp);
}

/* A burst of silent connections arriving after a scrape's request, all accepted in one
 * go: they push out each other, not the scrape whose request waits to be read. */
static void test_burst_spares_waiting_request(void **state)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\n\r\n";
	char err[256], *resp = malloc(RESP_MAX);
	struct http_metrics *h = http_metrics__open("127.0.0.1:0", err, sizeof(err));
	int silent[60], fd;
	size_t got = 0;
	ssize_t r;

	(void)state;
	assert_non_null(h);
	for (int i = 0; i < 16; i++)
		silent[i] = connect_to(http_metrics__port(h));
	http_metrics__serve(h, 0); /* the table is full of silent clients */
	fd = connect_to(http_metrics__port(h));
	assert_int_equal(send(fd, req, sizeof(req) - 1, 0), (ssize_t)sizeof(req) - 1);
	for (int i = 16; i < 60; i++)
		silent[i] = connect_to(http_metrics__port(h));
	for (int i = 0; i < 50; i++) {
		http_metrics__serve(h, 20);
		while ((r = recv(fd, resp + got, RESP_MAX - 1 - got, MSG_DONTWAIT)) > 0)
			got += (size_t)r;
		if (r == 0)
			break;
	}
	resp[got] = '\0';
	assert_int_equal(strncmp(resp, "HTTP/1.1 200 OK\r\n", 17), 0);
	close(fd);
	for (int i = 0; i < 60; i++)
		close(silent[i]);
	http_metrics__close(h);
	free(resp);
}

/* A connection that never completes its head gives its slot back after ~1 s. */
static void test_head_timeout(void **state)
{
	char err[256], c;
	struct http_metrics *h = http_metrics__open("127.0.0.1:0", err, sizeof(err));
	int fd;
	ssize_t r = -1;

	(void)state;
	assert_non_null(h);
	fd = connect_to(http_metrics__port(h));
	assert_int_equal(send(fd, "GET /metr", 9, 0), 9);
	for (int i = 0; i < 40 && r < 0; i++) {
		http_metrics__serve(h, 50);
		r = recv(fd, &c, 1, MSG_DONTWAIT);
	}
	assert_int_equal(r, 0); /* closed by the server, nothing sent */
	close(fd);
	http_metrics__close(h);
}

/* With its thread started the server answers while the caller only waits, and updates
 * from the caller's thread reach the next scrape. */
static void test_serving_thread(void **state)
{
	char err[256], *resp = malloc(RESP_MAX);
	struct http_metrics *h = http_metrics__open("127.0.0.1:0", err, sizeof(err));
	struct snapshot s;

	(void)state;
	assert_non_null(h);
	assert_int_equal(http_metrics__start(h), 0);
	http_get(http_metrics__port(h), "GET /metrics HTTP/1.1\r\n\r\n", resp, NULL);
	assert_non_null(strstr(resp, "\ntailtrace_retrans_total 0\n"));
	snapshot__init(&s);
	s.counters[CNT_RETRANS] = 7;
	for (int i = 0; i < 50; i++) {
		assert_int_equal(http_metrics__update(h, &s), 0);
		http_get(http_metrics__port(h), "GET /metrics HTTP/1.1\r\n\r\n", resp, NULL);
		assert_int_equal(strncmp(resp, "HTTP/1.1 200 OK\r\n", 17), 0);
	}
	assert_non_null(strstr(resp, "\ntailtrace_retrans_total 350\n"));
	snapshot__free(&s);
	http_metrics__close(h);
	free(resp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_status),
		cmocka_unit_test(test_endpoint),
		cmocka_unit_test(test_series_bound),
		cmocka_unit_test(test_nic_counters),
		cmocka_unit_test(test_silent_clients_evicted),
		cmocka_unit_test(test_head_timeout),
		cmocka_unit_test(test_burst_spares_waiting_request),
		cmocka_unit_test(test_serving_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
