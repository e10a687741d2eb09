// SPDX-License-Identifier: GPL-2.0
/* loadgen server --proto h2: prior-knowledge h2c carrying gRPC server streaming, as
 * Triton-like model servers answer. The connection's thread reads frames; each request gets
 * a thread that sends its response HEADERS at once, computes the prefill, then one DATA
 * frame (one gRPC message) per token and the trailers. Writes go out under the connection's
 * lock; a stream out of flow-control window waits on its condition variable. */
#include "h2.h"
#include "server.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SRV_STREAM_WINDOW  (1u << 20)  /* SETTINGS_INITIAL_WINDOW_SIZE we advertise */
#define SRV_CONN_WINDOW    (16u << 20) /* the connection window after our WINDOW_UPDATE */
#define H2_DEF_TOKENS      16
#define H2_DEF_TOKEN_BYTES 32

struct h2s_conn;

struct h2s_stream {
	uint32_t id;
	int64_t win; /* our send window on the stream */
	bool reset, started;
	uint8_t req[GRPC_PREFIX + 8]; /* the start of the request message */
	size_t rlen;
	uint64_t recv_unacked, t_req;
	uint64_t rng;
	struct h2s_conn *hc;
	struct h2s_stream *next;
};

struct h2s_conn {
	struct conn *c;
	int fd;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int64_t win; /* connection send window */
	uint32_t peer_init_win, peer_max_frame;
	struct h2s_stream *streams;
	int running; /* stream threads */
	bool dead;
	uint64_t recv_unacked;
	uint32_t last_sid;
	struct hpack_dec hp;
};

static int send_locked(struct h2s_conn *hc, const void *p, size_t n)
{
	if (hc->dead)
		return -1;
	if (write_full(hc->fd, p, n)) {
		hc->dead = true;
		pthread_cond_broadcast(&hc->cv);
		return -1;
	}
	return 0;
}

static int send_frame(struct h2s_conn *hc, uint8_t type, uint8_t flags, uint32_t sid, const void *p,
		      uint32_t len)
{
	uint8_t buf[H2_HDR_LEN + 64];
	int rc;

	if (len > sizeof(buf) - H2_HDR_LEN)
		return -1;
	h2_put_hdr(buf, len, type, flags, sid);
	memcpy(buf + H2_HDR_LEN, p, len);
	pthread_mutex_lock(&hc->mu);
	rc = send_locked(hc, buf, H2_HDR_LEN + len);
	pthread_mutex_unlock(&hc->mu);
	return rc;
}

static int send_headers(struct h2s_conn *hc, uint32_t sid, bool trailers)
{
	uint8_t blk[128];
	size_t n = 0;

	if (trailers) {
		n += hpack_put_literal(blk + n, "grpc-status", "0");
	} else {
		n += hpack_put_indexed(blk + n, 8); /* :status 200 */
		n += hpack_put_literal(blk + n, "content-type", "application/grpc");
	}
	return send_frame(hc, H2_HEADERS, H2_F_END_HEADERS | (trailers ? H2_F_END_STREAM : 0), sid,
			  blk, (uint32_t)n);
}

/* one gRPC message in DATA frames, as far as the windows allow in one write */
static int send_message(struct h2s_stream *s, const uint8_t *msg, size_t len, uint8_t *out)
{
	struct h2s_conn *hc = s->hc;
	size_t sent = 0, o = 0;
	int rc = 0;

	pthread_mutex_lock(&hc->mu);
	while (sent < len && !rc) {
		while (!hc->dead && !s->reset && (hc->win <= 0 || s->win <= 0)) {
			if (o) { /* what the window allowed so far goes out first */
				rc = send_locked(hc, out, o);
				o = 0;
				continue;
			}
			pthread_cond_wait(&hc->cv, &hc->mu);
		}
		if (hc->dead || s->reset || rc) {
			rc = -1;
			break;
		}
		size_t k = len - sent;
		if ((int64_t)k > hc->win)
			k = (size_t)hc->win;
		if ((int64_t)k > s->win)
			k = (size_t)s->win;
		if (k > hc->peer_max_frame)
			k = hc->peer_max_frame;
		h2_put_hdr(out + o, (uint32_t)k, H2_DATA, 0, s->id);
		memcpy(out + o + H2_HDR_LEN, msg + sent, k);
		o += H2_HDR_LEN + k;
		sent += k;
		hc->win -= (int64_t)k;
		s->win -= (int64_t)k;
	}
	if (!rc && o)
		rc = send_locked(hc, out, o);
	pthread_mutex_unlock(&hc->mu);
	return rc;
}

static void stream_free(struct h2s_stream *s)
{
	struct h2s_conn *hc = s->hc;

	pthread_mutex_lock(&hc->mu);
	for (struct h2s_stream **pp = &hc->streams; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	pthread_mutex_unlock(&hc->mu);
	free(s);
}

static void *stream_thread(void *arg)
{
	struct h2s_stream *s = arg;
	struct h2s_conn *hc = s->hc;
	struct lg_stat_ent e = { .id = s->id };
	uint32_t mlen = s->rlen >= GRPC_PREFIX ? h2_get32(s->req + 1) : 0;
	uint32_t tokens = H2_DEF_TOKENS, tb = H2_DEF_TOKEN_BYTES;
	uint8_t *msg = NULL, *out = NULL;
	int rc = -1;

	if (srv_opt.name)
		set_comm(srv_opt.name);
	if (mlen >= 8 && s->rlen >= GRPC_PREFIX + 8) {
		uint32_t v;
		memcpy(&v, s->req + GRPC_PREFIX, 4);
		if (le32toh(v) > 0 && le32toh(v) < 1000000)
			tokens = le32toh(v);
		memcpy(&v, s->req + GRPC_PREFIX + 4, 4);
		if (le32toh(v) > 0 && le32toh(v) <= PAYLOAD_BUF)
			tb = le32toh(v);
	}
	if (srv_opt.tokens)
		tokens = srv_opt.tokens;
	if (srv_opt.resp_bytes)
		tb = srv_opt.resp_bytes < PAYLOAD_BUF ? srv_opt.resp_bytes : PAYLOAD_BUF;
	size_t len = GRPC_PREFIX + tb;
	/* frames of at most 16 KiB or the peer's maximum, whichever is larger, each with a header
	 */
	size_t outcap = len + (len / 16384 + 1) * H2_HDR_LEN;
	msg = malloc(len);
	out = malloc(outcap + 16 * H2_HDR_LEN);
	if (!msg || !out || send_headers(hc, s->id, false))
		goto done;
	msg[0] = 0;
	h2_put32(msg + 1, tb);
	memcpy(msg + GRPC_PREFIX, payload, tb);
	do_compute(srv_prefill_ns(&s->rng), &e.compute_ns, &e.cpu_ns);
	double factor = srv_decode_factor(&s->rng);
	uint64_t prev = 0;

	for (uint32_t i = 0; i < tokens; i++) {
		if (i)
			do_compute(
				(uint64_t)((double)dist_draw_ns(&srv_opt.decode, &s->rng) * factor),
				&e.compute_ns, &e.cpu_ns);
		srv_token_write(&prev);
		if (send_message(s, msg, len, out))
			goto done;
	}
	rc = send_headers(hc, s->id, true);
done:
	if (!rc) {
		e.service_ns = now_ns() - s->t_req;
		srv_record(hc->c, &e);
	} else if (!s->reset) {
		__atomic_fetch_add(&hc->c->errors, 1, __ATOMIC_RELAXED);
	}
	free(msg);
	free(out);
	stream_free(s);
	pthread_mutex_lock(&hc->mu);
	hc->running--;
	pthread_cond_broadcast(&hc->cv);
	pthread_mutex_unlock(&hc->mu);
	return NULL;
}

static struct h2s_stream *stream_find(struct h2s_conn *hc, uint32_t sid)
{
	for (struct h2s_stream *s = hc->streams; s; s = s->next)
		if (s->id == sid)
			return s;
	return NULL;
}

/* the request is complete: its thread starts (with SIGINT/SIGTERM blocked: inherited) */
static int stream_start(struct h2s_conn *hc, struct h2s_stream *s)
{
	pthread_attr_t a;
	pthread_t th;

	s->t_req = now_ns();
	s->started = true;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&hc->mu);
	hc->running++;
	pthread_mutex_unlock(&hc->mu);
	if (pthread_create(&th, &a, stream_thread, s)) {
		pthread_mutex_lock(&hc->mu);
		hc->running--;
		pthread_mutex_unlock(&hc->mu);
		pthread_attr_destroy(&a);
		stream_free(s);
		return -1;
	}
	pthread_attr_destroy(&a);
	return 0;
}

static void ignore_field(void *arg, const char *n, size_t nl, const char *v, size_t vl)
{
	(void)arg;
	(void)n;
	(void)nl;
	(void)v;
	(void)vl;
}

static int on_settings(struct h2s_conn *hc, const struct h2_frame *f, const uint8_t *p)
{
	uint8_t ack[H2_HDR_LEN];

	if (f->flags & H2_F_ACK)
		return 0;
	if (f->len % 6 || f->sid)
		return -1;
	pthread_mutex_lock(&hc->mu);
	for (uint32_t i = 0; i < f->len; i += 6) {
		uint16_t id = (uint16_t)(p[i] << 8 | p[i + 1]);
		uint32_t v = h2_get32(p + i + 2);
		if (id == H2_S_INITIAL_WINDOW_SIZE) {
			int64_t d = (int64_t)v - (int64_t)hc->peer_init_win;
			for (struct h2s_stream *s = hc->streams; s; s = s->next)
				s->win += d;
			hc->peer_init_win = v;
		} else if (id == H2_S_MAX_FRAME_SIZE && v >= H2_DEF_FRAME && v <= 0xffffff) {
			hc->peer_max_frame = v;
		}
	}
	pthread_cond_broadcast(&hc->cv);
	h2_put_hdr(ack, 0, H2_SETTINGS, H2_F_ACK, 0);
	int rc = send_locked(hc, ack, sizeof(ack));
	pthread_mutex_unlock(&hc->mu);
	return rc;
}

static int on_window_update(struct h2s_conn *hc, const struct h2_frame *f, const uint8_t *p)
{
	if (f->len != 4)
		return -1;
	uint32_t inc = h2_get32(p) & 0x7fffffffu;
	pthread_mutex_lock(&hc->mu);
	if (!f->sid) {
		hc->win += inc;
	} else {
		struct h2s_stream *s = stream_find(hc, f->sid);
		if (s)
			s->win += inc;
	}
	pthread_cond_broadcast(&hc->cv);
	pthread_mutex_unlock(&hc->mu);
	return 0;
}

/* request DATA: kept as far as the parameters go, and given back to the windows */
static int on_data(struct h2s_conn *hc, const struct h2_frame *f, const uint8_t *p)
{
	uint8_t wu[2 * (H2_HDR_LEN + 4)];
	size_t n = 0;
	uint32_t len = f->len;
	int rc = 0;

	/* a started stream belongs to its thread (which frees it): only unstarted ones here */
	pthread_mutex_lock(&hc->mu);
	struct h2s_stream *s = stream_find(hc, f->sid);
	if (s && s->started)
		s = NULL;
	pthread_mutex_unlock(&hc->mu);
	hc->recv_unacked += f->len;
	if (hc->recv_unacked >= SRV_CONN_WINDOW / 4) {
		n += h2_put_window_update(wu + n, 0, (uint32_t)hc->recv_unacked);
		hc->recv_unacked = 0;
	}
	if (s) {
		if (h2_unpad(f, &p, &len))
			return -1;
		size_t k = sizeof(s->req) - s->rlen < len ? sizeof(s->req) - s->rlen : len;
		memcpy(s->req + s->rlen, p, k);
		s->rlen += k;
		s->recv_unacked += f->len;
		if (!(f->flags & H2_F_END_STREAM) && s->recv_unacked >= SRV_STREAM_WINDOW / 2) {
			n += h2_put_window_update(wu + n, s->id, (uint32_t)s->recv_unacked);
			s->recv_unacked = 0;
		}
	}
	if (n) {
		pthread_mutex_lock(&hc->mu);
		rc = send_locked(hc, wu, n);
		pthread_mutex_unlock(&hc->mu);
	}
	if (!rc && s && (f->flags & H2_F_END_STREAM))
		rc = stream_start(hc, s);
	return rc;
}

/* a header block (HEADERS and its CONTINUATIONs): decoded, whoever it is for, to keep the
 * HPACK table in step; a new odd stream id opens a stream */
static int on_headers(struct h2s_conn *hc, const struct h2_frame *f, uint8_t *blk, size_t n)
{
	int rc = hpack_decode(&hc->hp, blk, n, ignore_field, NULL);

	if (rc) {
		fprintf(stderr, "loadgen server: h2 header block: %s\n", strerror(-rc));
		return -1;
	}
	pthread_mutex_lock(&hc->mu);
	struct h2s_stream *s = stream_find(hc, f->sid);
	bool started = s && s->started;
	pthread_mutex_unlock(&hc->mu);
	if (started)
		return 0; /* trailers after the request's end: nothing to do */
	if (!s) {
		if (!(f->sid & 1) || f->sid <= hc->last_sid)
			return 0; /* closed stream: nothing to do */
		hc->last_sid = f->sid;
		s = calloc(1, sizeof(*s));
		if (!s)
			return -1;
		s->id = f->sid;
		s->hc = hc;
		pthread_mutex_lock(&hc->mu);
		s->win = hc->peer_init_win;
		s->rng = rng_next(&hc->c->rng);
		s->next = hc->streams;
		hc->streams = s;
		pthread_mutex_unlock(&hc->mu);
	}
	if (f->flags & H2_F_END_STREAM)
		return stream_start(hc, s);
	return 0;
}

static int on_rst(struct h2s_conn *hc, const struct h2_frame *f)
{
	pthread_mutex_lock(&hc->mu);
	struct h2s_stream *s = stream_find(hc, f->sid);
	bool unstarted = s && !s->started;
	if (s)
		s->reset = true;
	pthread_cond_broadcast(&hc->cv);
	pthread_mutex_unlock(&hc->mu);
	if (unstarted)
		stream_free(s);
	return 0;
}

static int read_frame(int fd, struct h2_frame *f, uint8_t *p)
{
	uint8_t h[H2_HDR_LEN];

	if (read_full(fd, h, sizeof(h)))
		return -1;
	h2_get_hdr(h, f);
	if (f->len > H2_DEF_FRAME) /* we advertise the default SETTINGS_MAX_FRAME_SIZE */
		return -1;
	return f->len ? read_full(fd, p, f->len) : 0;
}

static int h2_start(struct h2s_conn *hc)
{
	uint8_t pre[H2_PREFACE_LEN], out[64];
	size_t o = H2_HDR_LEN;

	if (read_full(hc->fd, pre, sizeof(pre)) || memcmp(pre, H2_PREFACE, H2_PREFACE_LEN))
		return -1;
	o += h2_put_setting(out + o, H2_S_MAX_CONCURRENT_STREAMS, 1024);
	o += h2_put_setting(out + o, H2_S_INITIAL_WINDOW_SIZE, SRV_STREAM_WINDOW);
	h2_put_hdr(out, (uint32_t)(o - H2_HDR_LEN), H2_SETTINGS, 0, 0);
	o += h2_put_window_update(out + o, 0, SRV_CONN_WINDOW - H2_DEF_WINDOW);
	return write_full(hc->fd, out, o);
}

/* Long by one case per frame type of the read loop. */
void h2_serve_conn(struct conn *c)
{
	struct h2s_conn *hc = calloc(1, sizeof(*hc));
	uint8_t *p = malloc(H2_DEF_FRAME), *blk = NULL;
	size_t blen = 0, bcap = 0;
	struct h2_frame f, hf = { 0 };
	bool in_block = false;

	if (!hc || !p)
		goto out;
	hc->c = c;
	hc->fd = c->fd;
	hc->win = H2_DEF_WINDOW;
	hc->peer_init_win = H2_DEF_WINDOW;
	hc->peer_max_frame = H2_DEF_FRAME;
	pthread_mutex_init(&hc->mu, NULL);
	pthread_cond_init(&hc->cv, NULL);
	hpack_dec_init(&hc->hp, 4096);
	hc->hp.huff_opaque = true; /* no field's value is read (ignore_field) */
	if (h2_start(hc))
		goto bad;
	while (read_frame(hc->fd, &f, p) == 0) {
		const uint8_t *q = p;
		uint32_t len = f.len;
		int rc = 0;

		if (in_block != (f.type == H2_CONTINUATION))
			goto bad; /* a header block is contiguous */
		switch (f.type) {
		case H2_HEADERS:
			if (h2_unpad(&f, &q, &len))
				goto bad;
			hf = f;
			blen = 0;
			/* fall through */
		case H2_CONTINUATION:
			if (blen + len > bcap) {
				bcap = (blen + len) * 2;
				uint8_t *nb = realloc(blk, bcap);
				if (!nb)
					goto bad;
				blk = nb;
			}
			memcpy(blk + blen, q, len);
			blen += len;
			in_block = !(f.flags & H2_F_END_HEADERS);
			if (!in_block)
				rc = on_headers(hc, &hf, blk, blen);
			break;
		case H2_DATA:
			rc = on_data(hc, &f, p);
			break;
		case H2_SETTINGS:
			rc = on_settings(hc, &f, p);
			break;
		case H2_PING:
			if (f.len != 8)
				goto bad;
			if (!(f.flags & H2_F_ACK))
				rc = send_frame(hc, H2_PING, H2_F_ACK, 0, p, 8);
			break;
		case H2_WINDOW_UPDATE:
			rc = on_window_update(hc, &f, p);
			break;
		case H2_RST_STREAM:
			rc = on_rst(hc, &f);
			break;
		case H2_GOAWAY:
			goto drain;
		default: /* PRIORITY, unknown types */
			break;
		}
		if (rc)
			goto bad;
	}
	/* the peer is gone: streams waiting for window would wait for ever */
	pthread_mutex_lock(&hc->mu);
	hc->dead = true;
	pthread_mutex_unlock(&hc->mu);
	goto drain;
bad:
	__atomic_fetch_add(&c->errors, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&hc->mu);
	hc->dead = true;
	pthread_mutex_unlock(&hc->mu);
	shutdown(c->fd, SHUT_RDWR);
drain:
	/* the streams under way end (or fail once the socket does), then the connection */
	pthread_mutex_lock(&hc->mu);
	if (!hc->dead && lg_stop)
		hc->dead = true;
	pthread_cond_broadcast(&hc->cv);
	while (hc->running)
		pthread_cond_wait(&hc->cv, &hc->mu);
	pthread_mutex_unlock(&hc->mu);
	while (hc->streams) /* opened, never completed */
		stream_free(hc->streams);
	hpack_dec_free(&hc->hp);
	pthread_mutex_destroy(&hc->mu);
	pthread_cond_destroy(&hc->cv);
out:
	free(hc);
	free(p);
	free(blk);
}
