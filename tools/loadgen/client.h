/* SPDX-License-Identifier: GPL-2.0 */
/* loadgen client internals shared by the wire protocols (client.c: binary, sse.c,
 * h2_client.c): options, per-request samples, the per-connection worker. */
#ifndef TT_LOADGEN_CLIENT_H
#define TT_LOADGEN_CLIENT_H

#include "loadgen.h"

#include <pthread.h>

enum cli_proto { CP_LG, CP_SSE, CP_H2 };

struct cli_opts {
	const char *connect;
	int ports[LG_MAX_PORTS], nports;
	int conns, concurrency;
	uint16_t type;
	const char *mode;
	enum cli_proto proto;
	int streams;     /* h2: streams in flight per connection */
	double ping_ms;  /* h2: a PING every ping_ms (0: none) */
	uint32_t window; /* h2: the receive windows advertised (connection and stream) */
	double rate;     /* > 0: open loop */
	long long requests, warmup;
	double duration, drain, timeout;
	uint32_t req_bytes, resp_bytes, tokens, token_bytes;
	uint64_t read_delay_ns;
	int read_chunk, rcvbuf, nodelay;
	const char *json, *samples, *name, *cc;
	uint64_t seed;
};

struct sample {
	uint64_t id;
	uint64_t sched, send, total, ttft, maxgap; /* ns; sched/send relative to t_start */
	uint64_t tpot;                             /* (total - ttft) / (tokens - 1); UINT64_MAX */
	uint64_t server, compute, cpu;             /* from the server; UINT64_MAX: unknown */
	uint32_t conn, tokens;
};

struct worker {
	int idx, fd;
	pthread_t th;
	volatile int done;
	char *buf;
	size_t pos, len;
	struct sample *s;
	size_t ns, cs;
	struct u64vec gaps;
	uint64_t errors, incomplete, bulk_bytes;
	uint64_t lag_max;
	struct u64vec lags;
	struct u64vec pings;   /* h2: PING round trips */
	uint64_t proto_errors; /* sse/h2: responses that broke the protocol or said non-OK */
};

extern struct cli_opts cli_opt;
extern uint64_t t_start, t_end;

int connect_one(int idx);
int br_fill(struct worker *w);
int br_read(struct worker *w, void *dst, size_t n);
long long claim(uint64_t *sched);
int push_sample(struct worker *w, const struct sample *s);
/* a token of s (started at tstart) read at t; *prev: the previous token's time */
void sample_token(struct worker *w, struct sample *s, uint64_t tstart, uint64_t *prev, uint64_t t,
		  bool rec);
/* s ended at tend: its totals, and into w's samples when rec */
void sample_done(struct worker *w, struct sample *s, uint64_t sched, uint64_t tsend, uint64_t tend,
		 bool rec);
void sample_init(struct sample *s, struct worker *w, long long idx);

int sse_request(struct worker *w, long long idx, uint64_t sched);
void sse_client_init(void);
void h2_client_run(struct worker *w);

#endif
