/* SPDX-License-Identifier: GPL-2.0 */
/* loadgen server internals shared by the wire protocols (server.c: binary, sse.c, h2_server.c). */
#ifndef TT_LOADGEN_SERVER_H
#define TT_LOADGEN_SERVER_H

#include "loadgen.h"

#include <pthread.h>
#include <sys/uio.h>

#define PAYLOAD_BUF (1 << 20)

enum lg_proto { LG_P_LG, LG_P_SSE, LG_P_H2 };

struct srv_opts {
	const char *listen;
	int ports[LG_MAX_PORTS], nports;
	const char *mode;
	enum lg_proto proto;
	struct dist compute, prefill, decode;
	bool have_prefill;
	double slow_share; /* percent */
	uint64_t slow_extra_ns;
	double slow_decode_share; /* percent */
	double slow_decode_factor;
	bool busy;
	uint32_t tokens, resp_bytes;
	const char *json, *samples, *name, *cc;
	double duration;
	uint64_t seed;
	int sndbuf, nodelay;
};

struct conn {
	int fd;
	int idx;
	pthread_t th;
	volatile int done;
	uint64_t rng;
	/* entries not yet returned by a LG_T_STATS request, and all entries */
	struct lg_stat_ent *pend, *all;
	size_t npend, cpend, nall, call;
	uint64_t errors, bulk_bytes, bulk_t0, bulk_t1;
	struct conn *next;
};

extern struct srv_opts srv_opt;
extern char payload[PAYLOAD_BUF]; /* response filler bytes */
extern pthread_mutex_t conns_mu;  /* guards every conn's entry lists */

int push_ent(struct lg_stat_ent **v, size_t *n, size_t *cap, const struct lg_stat_ent *e);
int writev_full(int fd, struct iovec *iov, int cnt);
void do_compute(uint64_t ns, uint64_t *wall, uint64_t *cpu);
/* a streamed request's prefill (with the slow share's extra) and its decode-time factor
 * (--slow-decode-share), drawn from rng */
uint64_t srv_prefill_ns(uint64_t *rng);
double srv_decode_factor(uint64_t *rng);
/* a token's write begins now: the gap since the request's previous one (*prev, 0 before the
 * first) goes to the server JSON's gap_us, the truth for a tracer timing token sends */
void srv_token_write(uint64_t *prev);
/* an entry for the server's JSON and --samples (not for STATS: those protocols have none) */
void srv_record(struct conn *c, const struct lg_stat_ent *e);

void sse_serve_conn(struct conn *c);
void h2_serve_conn(struct conn *c);

#endif
