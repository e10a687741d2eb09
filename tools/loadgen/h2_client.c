// SPDX-License-Identifier: GPL-2.0
/* loadgen client --proto h2: gRPC server streaming over prior-knowledge h2c, --streams
 * requests in flight on each connection (odd stream ids, increasing), WINDOW_UPDATEs as
 * data is consumed, a PING every --ping-ms. One thread per connection: a poll loop that
 * sends requests when due and reads whatever frames arrive. */
#include "client.h"
#include "h2.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define RBUF_CAP (256 * 1024)
#define OBUF_CAP 4096

struct h2c_stream {
	uint32_t sid; /* 0: a free slot */
	struct sample s;
	uint64_t sched, tsend, tstart, prev;
	bool rec, status_ok;
	int grpc_status; /* -1 until the trailers say */
	int64_t send_win;
	uint64_t recv_unacked;
	uint8_t pfx[GRPC_PREFIX]; /* the gRPC message parser: prefix bytes, then body bytes */
	uint32_t pfx_have, body_left;
};

struct h2c {
	struct worker *w;
	uint8_t *rb, ob[OBUF_CAP];
	size_t rpos, rlen, olen;
	struct hpack_dec hp;
	struct h2c_stream *st;
	int inflight;
	uint32_t next_sid;
	int64_t send_win;
	uint32_t peer_init_win, peer_max_frame;
	uint64_t recv_unacked, next_ping;
	uint8_t *hb; /* a header block across CONTINUATION frames */
	size_t hblen, hbcap;
	struct h2_frame hf;
	bool in_block;
	struct h2c_stream *cur; /* the stream whose header block is being decoded */
	bool pending;           /* a claimed request waiting for its time */
	long long pidx;
	uint64_t psched;
	bool no_more;
};

static int flush_out(struct h2c *h)
{
	int rc = h->olen ? write_full(h->w->fd, h->ob, h->olen) : 0;

	h->olen = 0;
	return rc;
}

/* a small control frame into the output buffer (flushed after each read) */
static int queue_frame(struct h2c *h, uint8_t type, uint8_t flags, uint32_t sid, const void *p,
		       uint32_t len)
{
	if (h->olen + H2_HDR_LEN + len > sizeof(h->ob) && flush_out(h))
		return -1;
	h2_put_hdr(h->ob + h->olen, len, type, flags, sid);
	memcpy(h->ob + h->olen + H2_HDR_LEN, p, len);
	h->olen += H2_HDR_LEN + len;
	return 0;
}

static int queue_window_update(struct h2c *h, uint32_t sid, uint64_t inc)
{
	uint8_t v[4];

	h2_put32(v, (uint32_t)inc);
	return queue_frame(h, H2_WINDOW_UPDATE, 0, sid, v, 4);
}

static struct h2c_stream *find(struct h2c *h, uint32_t sid)
{
	for (int i = 0; i < cli_opt.streams; i++)
		if (h->st[i].sid == sid && sid)
			return &h->st[i];
	return NULL;
}

static void finish(struct h2c *h, struct h2c_stream *s, uint64_t t)
{
	if (!s->status_ok || s->grpc_status != 0 || s->pfx_have || s->body_left)
		h->w->proto_errors++;
	sample_done(h->w, &s->s, s->sched, s->tsend, t, s->rec);
	s->sid = 0;
	h->inflight--;
}

static void on_field(void *arg, const char *n, size_t nl, const char *v, size_t vl)
{
	struct h2c *h = arg;
	struct h2c_stream *s = h->cur;

	if (!s)
		return;
	if (nl == 7 && !memcmp(n, ":status", 7))
		s->status_ok = vl == 3 && !memcmp(v, "200", 3);
	else if (nl == 11 && !memcmp(n, "grpc-status", 11))
		s->grpc_status = vl == 1 && v[0] >= '0' && v[0] <= '9' ? v[0] - '0' : 99;
}

/* gRPC messages in a DATA payload: each completed message is a token, read at t */
static void on_messages(struct h2c *h, struct h2c_stream *s, const uint8_t *p, uint32_t n,
			uint64_t t)
{
	while (n) {
		if (s->pfx_have < GRPC_PREFIX) {
			s->pfx[s->pfx_have++] = *p++;
			n--;
			if (s->pfx_have < GRPC_PREFIX)
				continue;
			s->body_left = h2_get32(s->pfx + 1);
		} else {
			uint32_t k = n < s->body_left ? n : s->body_left;
			p += k;
			n -= k;
			s->body_left -= k;
		}
		if (s->pfx_have == GRPC_PREFIX && !s->body_left) {
			sample_token(h->w, &s->s, s->tstart, &s->prev, t, s->rec);
			s->pfx_have = 0;
		}
	}
}

static int on_data(struct h2c *h, const struct h2_frame *f, const uint8_t *p, uint64_t t)
{
	struct h2c_stream *s = find(h, f->sid);
	uint32_t len = f->len;

	h->recv_unacked += f->len;
	if (h->recv_unacked >= cli_opt.window / 2) {
		if (queue_window_update(h, 0, h->recv_unacked))
			return -1;
		h->recv_unacked = 0;
	}
	if (!s)
		return 0;
	if (h2_unpad(f, &p, &len))
		return -1;
	on_messages(h, s, p, len, t);
	if (f->flags & H2_F_END_STREAM) {
		finish(h, s, t);
		return 0;
	}
	s->recv_unacked += f->len;
	if (s->recv_unacked >= cli_opt.window / 2) {
		if (queue_window_update(h, s->sid, s->recv_unacked))
			return -1;
		s->recv_unacked = 0;
	}
	return 0;
}

static int on_header_block(struct h2c *h, uint64_t t)
{
	h->cur = find(h, h->hf.sid);
	int rc = hpack_decode(&h->hp, h->hb, h->hblen, on_field, h);
	if (rc) {
		fprintf(stderr, "loadgen client: h2 header block: %s\n", strerror(-rc));
		return -1;
	}
	if (h->cur && (h->hf.flags & H2_F_END_STREAM))
		finish(h, h->cur, t);
	h->cur = NULL;
	return 0;
}

static int on_settings(struct h2c *h, const struct h2_frame *f, const uint8_t *p)
{
	if (f->flags & H2_F_ACK)
		return 0;
	if (f->len % 6)
		return -1;
	for (uint32_t i = 0; i < f->len; i += 6) {
		uint16_t id = (uint16_t)(p[i] << 8 | p[i + 1]);
		uint32_t v = h2_get32(p + i + 2);
		if (id == H2_S_INITIAL_WINDOW_SIZE) {
			for (int k = 0; k < cli_opt.streams; k++)
				if (h->st[k].sid)
					h->st[k].send_win += (int64_t)v - h->peer_init_win;
			h->peer_init_win = v;
		} else if (id == H2_S_MAX_FRAME_SIZE && v >= H2_DEF_FRAME && v <= 0xffffff) {
			h->peer_max_frame = v;
		}
	}
	return queue_frame(h, H2_SETTINGS, H2_F_ACK, 0, NULL, 0);
}

/* Long by one case per frame type. */
static int on_frame(struct h2c *h, const struct h2_frame *f, const uint8_t *p, uint64_t t)
{
	const uint8_t *q = p;
	uint32_t len = f->len;

	if (h->in_block != (f->type == H2_CONTINUATION))
		return -1;
	switch (f->type) {
	case H2_DATA:
		return on_data(h, f, p, t);
	case H2_HEADERS:
		if (h2_unpad(f, &q, &len))
			return -1;
		h->hf = *f;
		h->hblen = 0;
		/* fall through */
	case H2_CONTINUATION:
		if (h->hblen + len > h->hbcap) {
			size_t nc = (h->hblen + len) * 2;
			uint8_t *nb = realloc(h->hb, nc);
			if (!nb)
				return -1;
			h->hb = nb;
			h->hbcap = nc;
		}
		memcpy(h->hb + h->hblen, q, len);
		h->hblen += len;
		h->in_block = !(f->flags & H2_F_END_HEADERS);
		return h->in_block ? 0 : on_header_block(h, t);
	case H2_SETTINGS:
		return on_settings(h, f, p);
	case H2_PING:
		if (f->len != 8)
			return -1;
		if (f->flags & H2_F_ACK) {
			uint64_t sent = (uint64_t)h2_get32(p) << 32 | h2_get32(p + 4);
			if (sent && sent <= t)
				vec_push(&h->w->pings, t - sent);
			return 0;
		}
		return queue_frame(h, H2_PING, H2_F_ACK, 0, p, 8);
	case H2_WINDOW_UPDATE: {
		if (f->len != 4)
			return -1;
		uint32_t inc = h2_get32(p) & 0x7fffffffu;
		struct h2c_stream *s = f->sid ? find(h, f->sid) : NULL;
		if (!f->sid)
			h->send_win += inc;
		else if (s)
			s->send_win += inc;
		return 0;
	}
	case H2_RST_STREAM: {
		struct h2c_stream *s = find(h, f->sid);
		if (s) { /* the request failed: no sample */
			h->w->proto_errors++;
			h->w->errors++;
			s->sid = 0;
			h->inflight--;
		}
		return 0;
	}
	case H2_GOAWAY:
		return -1;
	default:
		return 0;
	}
}

/* one read(), then every complete frame in the buffer; control frames go out after */
static int read_frames(struct h2c *h)
{
	if (h->rpos) {
		memmove(h->rb, h->rb + h->rpos, h->rlen - h->rpos);
		h->rlen -= h->rpos;
		h->rpos = 0;
	}
	ssize_t r;
	do
		r = read(h->w->fd, h->rb + h->rlen, RBUF_CAP - h->rlen);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return -1;
	uint64_t t = now_ns();
	h->rlen += (size_t)r;
	while (h->rlen - h->rpos >= H2_HDR_LEN) {
		struct h2_frame f;
		h2_get_hdr(h->rb + h->rpos, &f);
		if (f.len > H2_DEF_FRAME) /* we keep the default SETTINGS_MAX_FRAME_SIZE */
			return -1;
		if (h->rlen - h->rpos < H2_HDR_LEN + f.len)
			break;
		if (on_frame(h, &f, h->rb + h->rpos + H2_HDR_LEN, t))
			return -1;
		h->rpos += H2_HDR_LEN + f.len;
	}
	return flush_out(h);
}

/* HEADERS, then the request message in DATA frames as the send windows allow (reading
 * frames while they are closed). Literal header fields, no Huffman: what HPACK allows. */
static int send_request(struct h2c *h, long long idx, uint64_t sched)
{
	struct h2c_stream *s = NULL;
	uint8_t blk[512], *out;
	char auth[128];
	size_t n = 0;
	uint32_t mlen = cli_opt.req_bytes > 8 ? cli_opt.req_bytes : 8;

	for (int i = 0; i < cli_opt.streams && !s; i++)
		if (!h->st[i].sid)
			s = &h->st[i];
	if (!s)
		return -1;
	snprintf(auth, sizeof(auth), "%s:%d", cli_opt.connect,
		 cli_opt.ports[h->w->idx % cli_opt.nports]);
	n += hpack_put_literal(blk + n, ":method", "POST");
	n += hpack_put_literal(blk + n, ":scheme", "http");
	n += hpack_put_literal(blk + n, ":path", "/tt.Infer/Generate");
	n += hpack_put_literal(blk + n, ":authority", auth);
	n += hpack_put_literal(blk + n, "content-type", "application/grpc");
	n += hpack_put_literal(blk + n, "te", "trailers");
	size_t cap = H2_HDR_LEN + n + GRPC_PREFIX + mlen + (mlen / 1024 + 2) * H2_HDR_LEN;
	uint8_t *msg = malloc(GRPC_PREFIX + mlen);
	out = malloc(cap);
	if (!msg || !out) {
		free(msg);
		free(out);
		return -1;
	}
	msg[0] = 0;
	h2_put32(msg + 1, mlen);
	uint32_t v = htole32(cli_opt.tokens);
	memcpy(msg + GRPC_PREFIX, &v, 4);
	v = htole32(cli_opt.token_bytes);
	memcpy(msg + GRPC_PREFIX + 4, &v, 4);
	memset(msg + GRPC_PREFIX + 8, 'q', mlen - 8);

	*s = (struct h2c_stream){ .sid = h->next_sid,
				  .sched = sched,
				  .rec = idx >= cli_opt.warmup,
				  .grpc_status = -1,
				  .send_win = h->peer_init_win };
	sample_init(&s->s, h->w, idx);
	h->next_sid += 2;
	h->inflight++;
	s->tsend = now_ns();
	s->tstart = sched ? sched : s->tsend;
	h2_put_hdr(out, (uint32_t)n, H2_HEADERS, H2_F_END_HEADERS, s->sid);
	memcpy(out + H2_HDR_LEN, blk, n);
	size_t o = H2_HDR_LEN + n, sent = 0, len = GRPC_PREFIX + mlen;
	uint32_t sid = s->sid;
	int rc = 0;
	while (sent < len && !rc) {
		int64_t k = (int64_t)(len - sent);
		if (k > h->send_win)
			k = h->send_win;
		if (k > s->send_win)
			k = s->send_win;
		if (k > (int64_t)h->peer_max_frame)
			k = h->peer_max_frame;
		if (k > 1024) /* the buffer's frame count; small frames are what clients send */
			k = 1024;
		if (k <= 0) { /* out of window: send what we have, wait for WINDOW_UPDATE */
			if ((o && write_full(h->w->fd, out, o)) || read_frames(h) ||
			    find(h, sid) != s)
				rc = -1;
			o = 0;
			continue;
		}
		h2_put_hdr(out + o, (uint32_t)k, H2_DATA,
			   sent + (size_t)k == len ? H2_F_END_STREAM : 0, sid);
		memcpy(out + o + H2_HDR_LEN, msg + sent, (size_t)k);
		o += H2_HDR_LEN + (size_t)k;
		sent += (size_t)k;
		h->send_win -= k;
		s->send_win -= k;
		if (o + H2_HDR_LEN + 1024 > cap) {
			rc = write_full(h->w->fd, out, o);
			o = 0;
		}
	}
	if (!rc && o)
		rc = write_full(h->w->fd, out, o);
	free(msg);
	free(out);
	return rc;
}

static int start_conn(struct h2c *h)
{
	uint8_t out[128];
	size_t o = H2_PREFACE_LEN + H2_HDR_LEN;

	h->rpos = h->rlen = h->olen = 0;
	h->inflight = 0;
	h->in_block = false;
	h->next_sid = 1;
	h->send_win = H2_DEF_WINDOW;
	h->peer_init_win = H2_DEF_WINDOW;
	h->peer_max_frame = H2_DEF_FRAME;
	h->recv_unacked = 0;
	memset(h->st, 0, (size_t)cli_opt.streams * sizeof(*h->st));
	hpack_dec_free(&h->hp);
	hpack_dec_init(&h->hp, 4096);
	memcpy(out, H2_PREFACE, H2_PREFACE_LEN);
	o += h2_put_setting(out + o, H2_S_ENABLE_PUSH, 0);
	o += h2_put_setting(out + o, H2_S_INITIAL_WINDOW_SIZE, cli_opt.window);
	h2_put_hdr(out + H2_PREFACE_LEN, (uint32_t)(o - H2_PREFACE_LEN - H2_HDR_LEN), H2_SETTINGS,
		   0, 0);
	if (cli_opt.window > H2_DEF_WINDOW)
		o += h2_put_window_update(out + o, 0, cli_opt.window - H2_DEF_WINDOW);
	return write_full(h->w->fd, out, o);
}

static int send_ping(struct h2c *h)
{
	uint8_t p[8];
	uint64_t t = now_ns();

	h2_put32(p, (uint32_t)(t >> 32));
	h2_put32(p + 4, (uint32_t)t);
	return queue_frame(h, H2_PING, 0, 0, p, 8) || flush_out(h);
}

/* the wait until the loop must act without input: a due request or PING */
static struct timespec wait_until(struct h2c *h, uint64_t now)
{
	uint64_t until = now + 100000000ull;

	if (h->pending && h->psched && h->psched < until)
		until = h->psched;
	if (cli_opt.ping_ms > 0 && h->next_ping < until)
		until = h->next_ping;
	until = until > now ? until - now : 0;
	return (struct timespec){ .tv_sec = (time_t)(until / 1000000000ull),
				  .tv_nsec = (long)(until % 1000000000ull) };
}

/* Long by the loop's three duties: start requests, read, ping; and its reconnects. */
void h2_client_run(struct worker *w)
{
	struct h2c h = { .w = w };
	uint64_t ping_ns = (uint64_t)(cli_opt.ping_ms * 1e6);

	h.rb = malloc(RBUF_CAP);
	h.st = calloc((size_t)cli_opt.streams, sizeof(*h.st));
	if (!h.rb || !h.st || start_conn(&h)) {
		w->errors++;
		goto out;
	}
	h.next_ping = now_ns() + ping_ns;
	for (;;) {
		while (h.inflight < cli_opt.streams && !h.no_more) {
			if (!h.pending) {
				h.pidx = claim(&h.psched);
				if (h.pidx < 0) {
					h.no_more = true;
					break;
				}
				h.pending = true;
			}
			if (h.psched && h.psched > now_ns())
				break;
			h.pending = false;
			if (send_request(&h, h.pidx, h.psched))
				goto conn_err;
		}
		if (h.no_more && !h.inflight)
			break;
		uint64_t now = now_ns();
		struct pollfd pfd = { .fd = w->fd, .events = POLLIN };
		struct timespec ts = wait_until(&h, now);
		int n = ppoll(&pfd, 1, &ts, NULL);
		if (n > 0 && read_frames(&h))
			goto conn_err;
		if (ping_ns && now_ns() >= h.next_ping) {
			if (send_ping(&h))
				goto conn_err;
			h.next_ping = now_ns() + ping_ns;
		}
		continue;
	conn_err:
		if (lg_stop) {
			w->incomplete += (uint64_t)h.inflight;
			break;
		}
		w->errors += h.inflight ? (uint64_t)h.inflight : 1;
		close(w->fd);
		w->fd = connect_one(w->idx);
		if (w->fd < 0 || start_conn(&h))
			break;
	}
	if (w->fd >= 0 && !lg_stop) { /* GOAWAY, NO_ERROR: the last stream we processed is 0 */
		uint8_t ga[8] = { 0 };
		queue_frame(&h, H2_GOAWAY, 0, 0, ga, 8);
		flush_out(&h);
	}
out:
	hpack_dec_free(&h.hp);
	free(h.hb);
	free(h.rb);
	free(h.st);
}
