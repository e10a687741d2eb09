// SPDX-License-Identifier: GPL-2.0
/* The budget's pure rules (collect/budget.h). */
#include <stdlib.h>
#include "collect/budget.h"

struct wslope {
	double slope, weight;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int cmp_wslope(const void *a, const void *b)
{
	return cmp_double(&((const struct wslope *)a)->slope, &((const struct wslope *)b)->slope);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int budget_fit_steps(const double *rate, const double *cost, size_t n, struct budget_fit *fit)
{
	struct wslope ws[BUDGET_FLOOR_STEPS * (BUDGET_FLOOR_STEPS - 1) / 2];
	double icpt[BUDGET_FLOOR_STEPS], total = 0, seen = 0, slope = 0, rmin, rmax;
	size_t np = 0;

	fit->known = false;
	if (n > BUDGET_FLOOR_STEPS)
		n = BUDGET_FLOOR_STEPS;
	if (!n)
		return -1;
	rmin = rmax = rate[0];
	for (size_t i = 1; i < n; i++) {
		rmin = rate[i] < rmin ? rate[i] : rmin;
		rmax = rate[i] > rmax ? rate[i] : rmax;
	}
	if (rmin <= 0 || rmax < BUDGET_FLOOR_MIN_SPREAD * rmin)
		return -1;
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			double lo = rate[i] < rate[j] ? rate[i] : rate[j];
			double hi = rate[i] < rate[j] ? rate[j] : rate[i];

			if (hi < BUDGET_FLOOR_SPREAD * lo)
				continue;
			ws[np].slope = (cost[j] - cost[i]) / (rate[j] - rate[i]);
			ws[np].weight = (hi - lo) * (hi - lo);
			total += ws[np++].weight;
		}
	if (np < BUDGET_FLOOR_MIN_PAIRS)
		return -1;
	qsort(ws, np, sizeof(*ws), cmp_wslope);
	for (size_t k = 0; k < np; k++) {
		seen += ws[k].weight;
		if (seen >= total / 2) {
			slope = ws[k].slope;
			break;
		}
	}
	if (slope < 0)
		slope = 0;
	for (size_t i = 0; i < n; i++)
		icpt[i] = cost[i] - slope * rate[i];
	fit->floor = median(icpt, n);
	if (fit->floor < 0)
		fit->floor = 0;
	fit->slope = slope;
	fit->known = true;
	return 0;
}

/* The floor above the aim: with the budget above the floor, the rate the fit puts 80 % of
 * the way from the floor to the budget (the aim cannot be reached, the budget can, and
 * every flow more traced is a more exact p99); under the floor, the rate whose traced
 * flows cost a twentieth of the floor. */
static double floor_hold_rate(const struct budget_fit *fit, double budget_pct)
{
	double r = fit->slope > 0 ? 0.05 * fit->floor / fit->slope : 1;

	if (fit->slope > 0 && fit->floor < budget_pct &&
	    0.8 * (budget_pct - fit->floor) / fit->slope > r)
		r = 0.8 * (budget_pct - fit->floor) / fit->slope;

	return r > 1 ? 1 : r < BUDGET_MIN_RATE ? BUDGET_MIN_RATE : r;
}

double budget_next_rate(double rate, double cost_pct, double budget_pct,
			const struct budget_fit *fit)
{
	double target = BUDGET_AIM * budget_pct, next;

	if (budget_pct <= 0)
		return 1;
	if (rate <= 0 || rate > 1)
		rate = 1;
	if (fit && fit->known && fit->floor >= target && cost_pct > budget_pct)
		return floor_hold_rate(fit, budget_pct);
	if (cost_pct <= 0)
		return rate * 2 < 1 ? rate * 2 : 1;
	next = rate * target / cost_pct;
	if (next > rate * 2)
		next = rate * 2;
	/* near the aim: stay. The band reaches up to 1/0.95 of the aim (95 % of the budget),
	 * not to the budget itself: a cost resting on the budget is over it half the time
	 * through noise alone (the budget check of tests/ns/test_tcp_stages.sh once measured
	 * a span's mean 3 % over) */
	if (next > rate * 0.95 && next < rate * 1.1)
		next = rate;
	if (next > 1)
		next = 1;
	if (next < BUDGET_MIN_RATE)
		next = BUDGET_MIN_RATE;
	return next;
}

__u32 budget_threshold(double rate)
{
	double t = rate * 4294967296.0 - 1;

	if (rate >= 1 || t >= 4294967295.0)
		return ~0u;
	return t < 0 ? 0 : (__u32)t;
}

__u64 budget_next_salt(__u64 salt)
{
	__u64 z = salt + 0x9E3779B97F4A7C15ULL;

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

double budget_rate_of(__u32 threshold)
{
	return ((double)threshold + 1) / 4294967296.0;
}
