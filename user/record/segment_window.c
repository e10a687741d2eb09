// SPDX-License-Identifier: GPL-2.0
/* The time window of `report --from/--to`: parsing the time arguments, and which recorded
 * intervals fall inside the window. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "record/record_format.h"

/* Times are __u64 nanoseconds since the epoch, which end in the year 2554: anything later
 * is refused before it is multiplied (18e9 s is in 2540, a round bound below the end). */
#define REC_TIME_MAX_S 18000000000ULL

static int parse_uint(const char **s, int ndigits, int *out)
{
	int v = 0;

	for (int i = 0; i < ndigits; i++) {
		if ((*s)[i] < '0' || (*s)[i] > '9')
			return -EINVAL;
		v = v * 10 + ((*s)[i] - '0');
	}
	*s += ndigits;
	*out = v;
	return 0;
}

/* Seconds since the epoch of a UTC broken-down time (no time zone database involved). */
static long long days_from_civil(int y, int m, int d)
{
	long long era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int parse_fraction(const char **s, double *frac)
{
	double scale = 0.1;

	*frac = 0;
	if (**s != '.' && **s != ',')
		return 0;
	(*s)++;
	if (**s < '0' || **s > '9')
		return -EINVAL;
	while (**s >= '0' && **s <= '9') {
		*frac += (**s - '0') * scale;
		scale /= 10;
		(*s)++;
	}
	return 0;
}

static int parse_datetime(const char *s, __u64 *out_ns)
{
	int Y, M, D, h = 0, m = 0, sec = 0, oh, om;
	bool zone = false;
	long long secs, offset = 0;
	double frac = 0;
	struct tm tm;

	if (parse_uint(&s, 4, &Y) || *s++ != '-' || parse_uint(&s, 2, &M) || *s++ != '-' ||
	    parse_uint(&s, 2, &D))
		return -EINVAL;
	if (*s == 'T' || *s == 't' || *s == ' ') {
		s++;
		if (parse_uint(&s, 2, &h) || *s++ != ':' || parse_uint(&s, 2, &m))
			return -EINVAL;
		if (*s == ':') {
			s++;
			if (parse_uint(&s, 2, &sec) || parse_fraction(&s, &frac))
				return -EINVAL;
		}
	}
	if (*s == 'Z' || *s == 'z') {
		zone = true;
		s++;
	} else if (*s == '+' || *s == '-') {
		int sign = *s++ == '-' ? -1 : 1;

		if (parse_uint(&s, 2, &oh))
			return -EINVAL;
		if (*s == ':')
			s++;
		if (parse_uint(&s, 2, &om) || oh > 23 || om > 59)
			return -EINVAL;
		zone = true;
		offset = sign * (oh * 3600LL + om * 60LL);
	}
	if (*s || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
		return -EINVAL;
	if (zone) {
		secs = days_from_civil(Y, M, D) * 86400 + h * 3600LL + m * 60LL + sec - offset;
	} else {
		memset(&tm, 0, sizeof(tm));
		tm.tm_year = Y - 1900;
		tm.tm_mon = M - 1;
		tm.tm_mday = D;
		tm.tm_hour = h;
		tm.tm_min = m;
		tm.tm_sec = sec;
		tm.tm_isdst = -1;
		secs = mktime(&tm);
		if (secs == -1)
			return -EINVAL;
	}
	if (secs < 0 || (unsigned long long)secs > REC_TIME_MAX_S)
		return -EINVAL;
	*out_ns = (__u64)secs * 1000000000ULL + (__u64)(frac * 1e9 + 0.5);
	return 0;
}

int rec_parse_time(const char *s, __u64 now_ns, __u64 *out_ns)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	if (!strcmp(s, "now")) {
		*out_ns = now_ns;
		return 0;
	}
	if (s[0] == '-') {
		double mult;

		/* a digit or '.' first, decimal: strtod would also take white space, "nan",
		 * "inf" and hexadecimal */
		if (!((s[1] >= '0' && s[1] <= '9') || s[1] == '.') || strpbrk(s + 1, "xX"))
			return -EINVAL;
		errno = 0;
		v = strtod(s + 1, &end);
		if (errno || end == s + 1 || !isfinite(v) || v < 0)
			return -EINVAL;
		if (!strcmp(end, "s") || !*end)
			mult = 1;
		else if (!strcmp(end, "m") || !strcmp(end, "min"))
			mult = 60;
		else if (!strcmp(end, "h"))
			mult = 3600;
		else if (!strcmp(end, "d"))
			mult = 86400;
		else
			return -EINVAL;
		v *= mult * 1e9;
		/* in range of a __u64 before the cast, then no earlier than the epoch */
		if (!(v < 1.8e19) || (__u64)v > now_ns)
			return -EINVAL;
		*out_ns = now_ns - (__u64)v;
		return 0;
	}
	if (strlen(s) >= 10 && s[4] == '-')
		return parse_datetime(s, out_ns);
	if (s[0] == '@')
		s++;
	{
		unsigned long long secs;
		double frac;
		const char *q;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		errno = 0;
		secs = strtoull(s, &end, 10);
		q = end;
		if (errno || secs > REC_TIME_MAX_S || parse_fraction(&q, &frac) || *q)
			return -EINVAL;
		*out_ns = secs * 1000000000ULL + (__u64)(frac * 1e9 + 0.5);
	}
	return 0;
}

bool rec_in_window(const struct snapshot *s, __u64 from_ns, __u64 to_ns)
{
	__u64 mid = s->start_ns + (s->end_ns > s->start_ns ? (s->end_ns - s->start_ns) / 2 : 0);

	return mid >= from_ns && mid < to_ns;
}

static const struct rec_limits report_limits = {
	.hists = REC_REPORT_HISTS_MAX,
	.devs = REC_REPORT_DEVS_MAX,
	.slow = REC_REPORT_SLOW_MAX,
	.napi = REC_REPORT_NAPI_MAX,
	.softnet = REC_REPORT_SOFTNET_MAX,
};

/* NAPI instances and softnet CPUs of src that dst does not hold yet. */
static void count_new_nic(const struct snapshot *dst, const struct snapshot *src, size_t *napi,
			  size_t *softnet)
{
	*napi = *softnet = 0;
	for (size_t i = 0; i < src->nnapi; i++) {
		bool found = false;

		for (size_t j = 0; j < dst->nnapi && !found; j++)
			found = !memcmp(&dst->napi[j].key, &src->napi[i].key,
					sizeof(src->napi[i].key));
		*napi += !found;
	}
	for (size_t i = 0; i < src->nsoftnet; i++) {
		bool found = false;

		for (size_t j = 0; j < dst->nsoftnet && !found; j++)
			found = dst->softnet[j].cpu == src->softnet[i].cpu;
		*softnet += !found;
	}
}

int rec_window_merge(struct snapshot *dst, const struct snapshot *src, const struct rec_limits *lim,
		     char *msg, size_t len)
{
	size_t new_hists = src->nhists, new_devs = src->ndevs, limit = 0;
	size_t new_napi = src->nnapi, new_softnet = src->nsoftnet;
	const char *what = NULL;
	int err;

	if (!lim)
		lim = &report_limits;
	/* counted before merging, so the merged window never holds more than the limits */
	if ((dst->nhists + new_hists > lim->hists || dst->ndevs + new_devs > lim->devs) &&
	    (err = snapshot__count_new(dst, src, &new_hists, &new_devs)))
		return err;
	if (dst->nnapi + new_napi > lim->napi || dst->nsoftnet + new_softnet > lim->softnet)
		count_new_nic(dst, src, &new_napi, &new_softnet);
	if (dst->nhists + new_hists > lim->hists) {
		what = "histogram keys";
		limit = lim->hists;
	} else if (dst->ndevs + new_devs > lim->devs) {
		what = "devices";
		limit = lim->devs;
	} else if (dst->nslow + src->nslow > lim->slow) {
		what = "slow requests";
		limit = lim->slow;
	} else if (dst->nnapi + new_napi > lim->napi) {
		what = "NAPI instances";
		limit = lim->napi;
	} else if (dst->nsoftnet + new_softnet > lim->softnet) {
		what = "softnet_stat CPUs";
		limit = lim->softnet;
	}
	if (!what)
		return snapshot__merge(dst, src);
	snprintf(msg, len,
		 "the window holds more than %zu %s, the most one report reads "
		 "(docs/record-format.md, \"Limits\"): narrow it with --from/--to",
		 limit, what);
	return -E2BIG;
}
