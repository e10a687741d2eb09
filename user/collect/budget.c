// SPDX-License-Identifier: GPL-2.0
/* The budget's pure rules (collect/budget.h). */
#include "collect/budget.h"

double budget_next_rate(double rate, double cost_pct, double budget_pct)
{
	double target = 0.9 * budget_pct, next;

	if (budget_pct <= 0)
		return 1;
	if (rate <= 0 || rate > 1)
		rate = 1;
	if (cost_pct <= 0)
		return rate * 2 < 1 ? rate * 2 : 1;
	next = rate * target / cost_pct;
	if (next > rate * 2)
		next = rate * 2;
	/* inside the budget and within a tenth of the aim: stay */
	if (cost_pct <= budget_pct && next > rate * 0.9 && next < rate * 1.1)
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
