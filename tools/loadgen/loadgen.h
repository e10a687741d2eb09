/* SPDX-License-Identifier: GPL-2.0 */
/*
 * loadgen: an inference-like load generator with ground truth for tailtrace's testbed.
 * One binary, subcommands: server, client, hog. See docs/testbed.md.
 */
#ifndef TT_LOADGEN_H
#define TT_LOADGEN_H

#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

/* ---- wire format (little-endian on the wire, fixed sizes) ---- */
#define LG_REQ_MAGIC 0x51525454u /* "TTRQ" */
#define LG_RSP_MAGIC 0x53525454u /* "TTRS" */
#define LG_VERSION   1

enum lg_type {
	LG_T_UNARY = 1,  /* request -> one response of resp_bytes */
	LG_T_STREAM = 2, /* request -> tokens frames of resp_bytes each */
	LG_T_BULK = 3,   /* request -> server writes until the peer closes */
	LG_T_STATS = 4,  /* ask for the per-request service times of this connection */
};

struct lg_req { /* 48 bytes, followed by req_bytes of payload */
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint64_t id;
	uint32_t req_bytes;
	uint32_t resp_bytes; /* unary: response payload; stream: bytes per token; bulk: chunk */
	uint32_t tokens;
	uint32_t flags;
	uint64_t rsvd[2];
} __attribute__((packed));

#define LG_RSP_LAST 1u
struct lg_rsp { /* 32 bytes, followed by len bytes of payload */
	uint32_t magic;
	uint16_t type;
	uint16_t flags; /* LG_RSP_LAST on the last frame of a response */
	uint64_t id;
	uint32_t len;
	uint32_t seq;        /* token index (stream), 0 otherwise */
	uint32_t compute_us; /* server's compute (prefill) wall time so far, for information */
	uint32_t rsvd;
} __attribute__((packed));

/* one entry of a LG_T_STATS answer */
struct lg_stat_ent {
	uint64_t id;
	uint64_t service_ns; /* request fully read -> last response byte written */
	uint64_t compute_ns; /* wall time spent in compute (prefill + decode) */
	uint64_t cpu_ns;     /* on-CPU time of the serving thread during compute */
};

/* ---- distributions ---- */
enum dist_kind { D_CONST, D_LOGNORMAL, D_EXP, D_UNIFORM };
struct dist {
	enum dist_kind kind;
	double a, b; /* const: a; lognormal: median a, sigma b; exp: mean a; uniform: [a,b] */
};
int dist_parse(const char *s, struct dist *d);
uint64_t dist_draw_ns(const struct dist *d, uint64_t *rng);
void dist_format(const struct dist *d, char *buf, size_t n);

/* ---- random numbers (splitmix64: small, seedable, per thread) ---- */
uint64_t rng_next(uint64_t *s);
double rng_unit(uint64_t *s); /* (0,1) */
double rng_normal(uint64_t *s);

/* ---- time ---- */
static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static inline uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
void sleep_until_ns(uint64_t t);
void sleep_ns(uint64_t ns);
/* burn ns of on-CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), so that run-queue
 * delay stretches the wall time as it would for real work */
void burn_cpu_ns(uint64_t ns);

/* ---- io ---- */
int read_full(int fd, void *buf, size_t n);        /* 0 ok, -1 error/EOF */
int write_full(int fd, const void *buf, size_t n); /* 0 ok, -1 error */
int parse_addr(const char *host, int port, struct sockaddr_storage *ss, socklen_t *len);
void set_comm(const char *name);

/* ---- statistics ---- */
struct u64vec {
	uint64_t *v;
	size_t n, cap;
};
int vec_push(struct u64vec *a, uint64_t x);
void vec_free(struct u64vec *a);
/* exact nearest-rank percentile of a sorted array: value at rank ceil(p/100 * n) */
uint64_t pct_sorted(const uint64_t *v, size_t n, double p);
/* writes `"key": {...}` (values in microseconds, ns resolution) or `"key": null` when n == 0;
 * sorts v in place */
void json_stats(FILE *f, const char *key, uint64_t *v, size_t n);

/* ---- common option helpers ---- */
extern volatile sig_atomic_t lg_stop;
void lg_install_signals(void);
long long parse_size(const char *s); /* 64kb, 1m, 1000 */
int parse_ports(const char *s, int *ports, int max);

int server_main(int argc, char **argv);
int client_main(int argc, char **argv);
int hog_main(int argc, char **argv);

#define LG_MAX_PORTS 16
#endif
