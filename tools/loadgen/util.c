// SPDX-License-Identifier: GPL-2.0
/* loadgen: shared helpers (distributions, time, io, exact percentiles, JSON) and main. */
#include "loadgen.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>

volatile sig_atomic_t lg_stop;

static void on_signal(int sig)
{
	(void)sig;
	lg_stop = 1;
}

void lg_install_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* precise sleeps: the default 50 us timer slack would blur scheduled sends and
	 * blocked compute; threads created later inherit it */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
}

/* ---- rng ---- */
uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double rng_unit(uint64_t *s)
{
	return ((double)(rng_next(s) >> 11) + 0.5) / 9007199254740992.0;
}

double rng_normal(uint64_t *s)
{
	double u1 = rng_unit(s), u2 = rng_unit(s);
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* ---- distributions: "const:US", "US", "lognormal:MEDIAN_US,SIGMA", "exp:MEAN_US",
 * "uniform:LO_US,HI_US" ---- */
int dist_parse(const char *s, struct dist *d)
{
	char *end;
	memset(d, 0, sizeof(*d));
	if (!strncmp(s, "const:", 6)) {
		d->kind = D_CONST;
		d->a = strtod(s + 6, &end);
	} else if (!strncmp(s, "lognormal:", 10)) {
		d->kind = D_LOGNORMAL;
		d->a = strtod(s + 10, &end);
		if (*end != ',')
			return -1;
		d->b = strtod(end + 1, &end);
	} else if (!strncmp(s, "exp:", 4)) {
		d->kind = D_EXP;
		d->a = strtod(s + 4, &end);
	} else if (!strncmp(s, "uniform:", 8)) {
		d->kind = D_UNIFORM;
		d->a = strtod(s + 8, &end);
		if (*end != ',')
			return -1;
		d->b = strtod(end + 1, &end);
		if (d->b < d->a)
			return -1;
	} else {
		d->kind = D_CONST;
		d->a = strtod(s, &end);
		if (end == s)
			return -1;
	}
	if (*end || d->a < 0 || d->b < 0)
		return -1;
	return 0;
}

void dist_format(const struct dist *d, char *buf, size_t n)
{
	switch (d->kind) {
	case D_CONST:
		snprintf(buf, n, "const:%g", d->a);
		break;
	case D_LOGNORMAL:
		snprintf(buf, n, "lognormal:%g,%g", d->a, d->b);
		break;
	case D_EXP:
		snprintf(buf, n, "exp:%g", d->a);
		break;
	case D_UNIFORM:
		snprintf(buf, n, "uniform:%g,%g", d->a, d->b);
		break;
	}
}

uint64_t dist_draw_ns(const struct dist *d, uint64_t *rng)
{
	double us = 0;
	switch (d->kind) {
	case D_CONST:
		us = d->a;
		break;
	case D_LOGNORMAL:
		us = d->a * exp(d->b * rng_normal(rng));
		break;
	case D_EXP:
		us = -d->a * log(rng_unit(rng));
		break;
	case D_UNIFORM:
		us = d->a + (d->b - d->a) * rng_unit(rng);
		break;
	}
	if (us > 3600e6)
		us = 3600e6;
	return (uint64_t)(us * 1000.0);
}

/* ---- time ---- */
void sleep_until_ns(uint64_t t)
{
	struct timespec ts = { .tv_sec = (time_t)(t / 1000000000ull),
			       .tv_nsec = (long)(t % 1000000000ull) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !lg_stop)
		;
}

void sleep_ns(uint64_t ns)
{
	if (ns)
		sleep_until_ns(now_ns() + ns);
}

void burn_cpu_ns(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns;
	volatile uint64_t x = 0;
	while (thread_cpu_ns() < end) {
		for (int i = 0; i < 200; i++)
			x += (uint64_t)i;
	}
}

/* ---- io ---- */
int read_full(int fd, void *buf, size_t n)
{
	char *p = buf;
	while (n) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int write_full(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int parse_addr(const char *host, int port, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		*len = sizeof(*s4);
		return 0;
	}
	const char *h = host;
	char tmp[INET6_ADDRSTRLEN + 2];
	if (h[0] == '[') { /* [v6] */
		snprintf(tmp, sizeof(tmp), "%s", h + 1);
		char *e = strchr(tmp, ']');
		if (e)
			*e = 0;
		h = tmp;
	}
	if (inet_pton(AF_INET6, h, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*s6);
		return 0;
	}
	return -1;
}

void set_comm(const char *name)
{
	if (name && *name)
		prctl(PR_SET_NAME, name, 0, 0, 0);
}

/* ---- sizes and lists ---- */
long long parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || v < 0)
		return -1;
	long long m = 1;
	if (!strcasecmp(end, "") || !strcasecmp(end, "b"))
		m = 1;
	else if (!strcasecmp(end, "k") || !strcasecmp(end, "kb"))
		m = 1024;
	else if (!strcasecmp(end, "m") || !strcasecmp(end, "mb"))
		m = 1024 * 1024;
	else if (!strcasecmp(end, "g") || !strcasecmp(end, "gb"))
		m = 1024ll * 1024 * 1024;
	else
		return -1;
	return (long long)(v * (double)m);
}

int parse_ports(const char *s, int *ports, int max)
{
	int n = 0;
	char *dup = strdup(s), *save = NULL;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int p = atoi(t);
		if (p <= 0 || p > 65535 || n >= max) {
			free(dup);
			return -1;
		}
		ports[n++] = p;
	}
	free(dup);
	return n;
}

/* ---- statistics ---- */
int vec_push(struct u64vec *a, uint64_t x)
{
	if (a->n == a->cap) {
		size_t nc = a->cap ? a->cap * 2 : 1024;
		uint64_t *nv = realloc(a->v, nc * sizeof(*nv));
		if (!nv)
			return -1;
		a->v = nv;
		a->cap = nc;
	}
	a->v[a->n++] = x;
	return 0;
}

void vec_free(struct u64vec *a)
{
	free(a->v);
	memset(a, 0, sizeof(*a));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t pct_sorted(const uint64_t *v, size_t n, double p)
{
	if (!n)
		return 0;
	/* nearest rank: the smallest value with at least p% of the samples <= it. The
	 * rank is computed in integer per-mille-of-percent units to avoid 0.99*n rounding
	 * surprises (p is given with at most 3 decimals). */
	unsigned long long pm = (unsigned long long)llround(p * 1000.0); /* p * 1000 */
	unsigned long long num = pm * (unsigned long long)n;
	unsigned long long rank = (num + 100000 - 1) / 100000; /* ceil(p/100*n) */
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

void json_stats(FILE *f, const char *key, uint64_t *v, size_t n)
{
	if (!n) {
		fprintf(f, "\"%s\": null", key);
		return;
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	long double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	fprintf(f,
		"\"%s\": {\"count\": %zu, \"min\": %.3f, \"mean\": %.3f, \"p50\": %.3f, "
		"\"p90\": %.3f, \"p99\": %.3f, \"p995\": %.3f, \"p999\": %.3f, \"max\": %.3f}",
		key, n, v[0] / 1e3, (double)(sum / n) / 1e3, pct_sorted(v, n, 50) / 1e3,
		pct_sorted(v, n, 90) / 1e3, pct_sorted(v, n, 99) / 1e3,
		pct_sorted(v, n, 99.5) / 1e3, pct_sorted(v, n, 99.9) / 1e3, v[n - 1] / 1e3);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: loadgen server|client|hog [options]   (loadgen CMD --help for options)\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage();
		return 2;
	}
	if (!strcmp(argv[1], "server"))
		return server_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "client"))
		return client_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "hog"))
		return hog_main(argc - 1, argv + 1);
	usage();
	return 2;
}
