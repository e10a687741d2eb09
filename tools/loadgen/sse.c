// SPDX-License-Identifier: GPL-2.0
/* loadgen --proto sse: HTTP/1.1 Server-Sent Events as OpenAI-compatible inference servers
 * stream completions. Server: the response header block at once, the prefill, then one
 * chunked `data:` event per token; client: times every event. */
#include "client.h"
#include "server.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>
#include <unistd.h>

#define SSE_HDR_MAX         16384
#define SSE_PARAM_MAX       512 /* the body's parameters come before the prompt */
#define SSE_DEF_TOKENS      16
#define SSE_DEF_TOKEN_BYTES 32

/* ---- server ---- */

struct sse_rd {
	int fd;
	char buf[SSE_HDR_MAX];
	size_t pos, len;
};

static int rd_more(struct sse_rd *r)
{
	if (r->pos && r->pos == r->len)
		r->pos = r->len = 0;
	if (r->len == sizeof(r->buf)) {
		if (!r->pos)
			return -1;
		memmove(r->buf, r->buf + r->pos, r->len - r->pos);
		r->len -= r->pos;
		r->pos = 0;
	}
	for (;;) {
		ssize_t k = read(r->fd, r->buf + r->len, sizeof(r->buf) - r->len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		r->len += (size_t)k;
		return 0;
	}
}

/* the request's header block (NUL-terminated in hdr) and the first SSE_PARAM_MAX bytes of its
 * body (in body); the rest of the body is read and dropped */
static int sse_read_request(struct sse_rd *r, char *hdr, size_t hmax, char *body, size_t *blen)
{
	char *end;
	long long cl = 0;

	for (;;) {
		end = r->len > r->pos ? memmem(r->buf + r->pos, r->len - r->pos, "\r\n\r\n", 4)
				      : NULL;
		if (end)
			break;
		if (rd_more(r))
			return -1;
	}
	size_t hl = (size_t)(end - (r->buf + r->pos)) + 4;
	if (hl >= hmax)
		return -1;
	memcpy(hdr, r->buf + r->pos, hl);
	hdr[hl] = 0;
	r->pos += hl;
	for (char *l = strstr(hdr, "\r\n"); l; l = strstr(l + 2, "\r\n"))
		if (!strncasecmp(l + 2, "content-length:", 15))
			cl = atoll(l + 17);
	if (cl < 0)
		return -1;
	*blen = 0;
	while (cl > 0) {
		if (r->pos == r->len && rd_more(r))
			return -1;
		size_t k = r->len - r->pos;
		if ((long long)k > cl)
			k = (size_t)cl;
		if (*blen < SSE_PARAM_MAX) {
			size_t c = SSE_PARAM_MAX - *blen < k ? SSE_PARAM_MAX - *blen : k;
			memcpy(body + *blen, r->buf + r->pos, c);
			*blen += c;
		}
		r->pos += k;
		cl -= (long long)k;
	}
	body[*blen] = 0;
	return 0;
}

static uint32_t json_u32(const char *body, const char *key, uint32_t def)
{
	const char *p = strstr(body, key);

	if (!p)
		return def;
	p += strlen(key);
	while (*p == '"' || *p == ':' || *p == ' ')
		p++;
	long long v = atoll(p);
	return v > 0 && v <= 0x7fffffff ? (uint32_t)v : def;
}

/* one chunk in one write: size line, data, CRLF */
static int send_chunk(int fd, const char *pre, size_t plen, const char *mid, size_t mlen,
		      const char *post, size_t postlen)
{
	char szl[16];
	int sl = snprintf(szl, sizeof(szl), "%zx\r\n", plen + mlen + postlen);
	struct iovec iov[4] = { { szl, (size_t)sl },
				{ (void *)pre, plen },
				{ (void *)mid, mlen },
				{ (void *)post, postlen + 2 } };
	return writev_full(fd, iov, 4);
}

static int sse_stream(struct conn *c, uint64_t id, uint32_t tokens, uint32_t tb,
		      struct lg_stat_ent *e)
{
	static const char hdr[] = "HTTP/1.1 200 OK\r\n"
				  "Content-Type: text/event-stream\r\n"
				  "Transfer-Encoding: chunked\r\n"
				  "Cache-Control: no-cache\r\n"
				  "Connection: keep-alive\r\n\r\n";
	static const char post[] = "\"}]}\n\n\r\n"; /* the event's end and the chunk's CRLF */
	static const char done[] = "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
	char pre[128];

	if (write_full(c->fd, hdr, sizeof(hdr) - 1))
		return -1;
	if (tb > PAYLOAD_BUF)
		tb = PAYLOAD_BUF;
	do_compute(srv_prefill_ns(&c->rng), &e->compute_ns, &e->cpu_ns);
	double factor = srv_decode_factor(&c->rng);
	uint64_t prev = 0;

	for (uint32_t i = 0; i < tokens; i++) {
		if (i)
			do_compute(
				(uint64_t)((double)dist_draw_ns(&srv_opt.decode, &c->rng) * factor),
				&e->compute_ns, &e->cpu_ns);
		int pl = snprintf(pre, sizeof(pre),
				  "data: {\"id\":\"cmpl-%llu\",\"object\":\"text_completion\","
				  "\"choices\":[{\"index\":%u,\"text\":\"",
				  (unsigned long long)id, i);
		srv_token_write(&prev);
		if (send_chunk(c->fd, pre, (size_t)pl, payload, tb, post, sizeof(post) - 3))
			return -1;
	}
	return write_full(c->fd, done, sizeof(done) - 1);
}

void sse_serve_conn(struct conn *c)
{
	struct sse_rd *r = calloc(1, sizeof(*r));
	char *hdr = malloc(SSE_HDR_MAX + 1), body[SSE_PARAM_MAX + 1];
	size_t blen;

	if (!r || !hdr)
		goto out;
	r->fd = c->fd;
	for (uint64_t id = 0;; id++) {
		if (sse_read_request(r, hdr, SSE_HDR_MAX, body, &blen))
			break;
		uint64_t t0 = now_ns();
		struct lg_stat_ent e = { .id = id };
		uint32_t tokens = srv_opt.tokens ? srv_opt.tokens
						 : json_u32(body, "\"max_tokens\"", SSE_DEF_TOKENS);
		uint32_t tb = srv_opt.resp_bytes
				      ? srv_opt.resp_bytes
				      : json_u32(body, "\"tt_token_bytes\"", SSE_DEF_TOKEN_BYTES);
		if (strncmp(hdr, "POST ", 5) || sse_stream(c, id, tokens, tb, &e)) {
			c->errors++;
			break;
		}
		e.service_ns = now_ns() - t0;
		srv_record(c, &e);
		if (strcasestr(hdr, "\r\nconnection: close"))
			break;
	}
out:
	free(r);
	free(hdr);
}

/* ---- client ---- */

static char *sse_body;
static size_t sse_body_len;

void sse_client_init(void)
{
	char head[256];
	int hl = snprintf(head, sizeof(head),
			  "{\"model\":\"tt\",\"max_tokens\":%u,\"tt_token_bytes\":%u,"
			  "\"stream\":true,\"prompt\":\"",
			  cli_opt.tokens, cli_opt.token_bytes);
	size_t n = cli_opt.req_bytes > (uint32_t)hl + 2 ? cli_opt.req_bytes : (size_t)hl + 2;

	sse_body = malloc(n);
	if (!sse_body) {
		fprintf(stderr, "loadgen client: no memory for a %zu-byte body\n", n);
		exit(1);
	}
	memcpy(sse_body, head, (size_t)hl);
	memset(sse_body + hl, 'q', n - (size_t)hl - 2);
	memcpy(sse_body + n - 2, "\"}", 2);
	sse_body_len = n;
}

/* a line without its CRLF into line (NUL-terminated, cut at max - 1) */
static int br_line(struct worker *w, char *line, size_t max)
{
	size_t n = 0;
	char ch;

	for (;;) {
		if (br_read(w, &ch, 1))
			return -1;
		if (ch == '\n')
			break;
		if (n + 1 < max)
			line[n++] = ch;
	}
	if (n && line[n - 1] == '\r')
		n--;
	line[n] = 0;
	return 0;
}

static int sse_send(struct worker *w)
{
	char head[512];
	int hl = snprintf(head, sizeof(head),
			  "POST /v1/completions HTTP/1.1\r\nHost: %s:%d\r\n"
			  "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
			  "Content-Length: %zu\r\n\r\n",
			  cli_opt.connect, cli_opt.ports[w->idx % cli_opt.nports], sse_body_len);
	struct iovec iov[2] = { { head, (size_t)hl }, { sse_body, sse_body_len } };
	return writev_full(w->fd, iov, 2);
}

/* the response's status line and headers: 0 when 200 and chunked */
static int sse_read_head(struct worker *w)
{
	char line[1024];
	bool chunked = false;

	if (br_line(w, line, sizeof(line)))
		return -1;
	if (strncmp(line, "HTTP/1.1 200", 12)) {
		w->proto_errors++;
		return -1;
	}
	for (;;) {
		if (br_line(w, line, sizeof(line)))
			return -1;
		if (!line[0])
			break;
		if (!strncasecmp(line, "transfer-encoding:", 18) && strcasestr(line, "chunked"))
			chunked = true;
	}
	if (!chunked)
		w->proto_errors++;
	return chunked ? 0 : -1;
}

/* Events may span chunks and a chunk may hold several: the data is gathered in ev and cut at
 * every blank line. 0 ok, -1 connection or protocol error. */
int sse_request(struct worker *w, long long idx, uint64_t sched)
{
	struct sample s;
	bool rec = idx >= cli_opt.warmup, done = false;
	char line[128];
	char *ev = NULL;
	size_t evlen = 0, evcap = 0;
	uint64_t prev = 0;
	int rc = -1;

	sample_init(&s, w, idx);
	if (sched)
		sleep_until_ns(sched);
	uint64_t tsend = now_ns();
	uint64_t tstart = sched ? sched : tsend;
	if (sse_send(w) || sse_read_head(w))
		return -1;
	for (;;) {
		if (br_line(w, line, sizeof(line)))
			goto out;
		char *endp;
		unsigned long long sz = strtoull(line, &endp, 16);
		if (endp == line) {
			w->proto_errors++;
			goto out;
		}
		if (sz == 0) { /* last chunk, trailers, blank line */
			do {
				if (br_line(w, line, sizeof(line)))
					goto out;
			} while (line[0]);
			break;
		}
		if (evlen + sz + 1 > evcap) {
			size_t nc = (evlen + sz + 1) * 2;
			char *ne = realloc(ev, nc);
			if (!ne)
				goto out;
			ev = ne;
			evcap = nc;
		}
		if (br_read(w, ev + evlen, sz) || br_line(w, line, sizeof(line)))
			goto out;
		evlen += sz;
		uint64_t t = now_ns();
		char *p = ev, *e;
		while ((e = memmem(p, evlen - (size_t)(p - ev), "\n\n", 2))) {
			if (!strncmp(p, "data: [DONE]", 12))
				done = true;
			else if (!strncmp(p, "data:", 5))
				sample_token(w, &s, tstart, &prev, t, rec);
			p = e + 2;
		}
		evlen -= (size_t)(p - ev);
		memmove(ev, p, evlen);
	}
	if (!done)
		w->proto_errors++;
	sample_done(w, &s, sched, tsend, now_ns(), rec);
	rc = 0;
out:
	free(ev);
	return rc;
}
