// SPDX-License-Identifier: GPL-2.0
/* The deep tier's duty cycle and tail trigger (deep_plan.h): pure, unit-tested. */
#include <string.h>
#include "collect/deep_plan.h"

static bool always(const struct deep_plan *p)
{
	return p->duty >= 1;
}

void deep_plan_init(struct deep_plan *p, double duty, __u64 now)
{
	memset(p, 0, sizeof(*p));
	p->duty = duty < 0 ? 0 : duty > 1 ? 1 : duty;
	p->duty_asked = p->duty;
	p->start_ns = p->changed_ns = p->span_start_ns = p->taken_ns = now;
	p->window_ns = DEEP_WINDOW_MIN_NS;
	p->on = p->duty > 0;
	p->windows = p->on && !always(p);
}

void deep_plan_set_duty(struct deep_plan *p, double duty)
{
	if (always(p))
		return;
	p->duty = duty < 0 ? 0 : duty > p->duty_asked ? p->duty_asked : duty;
}

double deep_plan_duty_within(double aim, double on, double off, double asked)
{
	double d;

	if (off >= aim)
		return 0;
	if (on <= off)
		return asked;
	d = (aim - off) / (on - off);
	return d > asked ? asked : d;
}

void deep_plan_request(struct deep_plan *p, __u64 latency_ns)
{
	if (always(p) || p->duty <= 0)
		return;
	hist_record(&p->lat_cur, latency_ns);
	if (!p->on && p->threshold_ns && latency_ns > p->threshold_ns)
		p->trigger_armed = true;
}

/* A new span of requests: the trigger's threshold and the window length from the last. */
static void rotate(struct deep_plan *p, __u64 now)
{
	__u64 p99, w;

	if (now - p->span_start_ns < DEEP_TAIL_SPAN_NS)
		return;
	p->lat_prev = p->lat_cur;
	memset(&p->lat_cur, 0, sizeof(p->lat_cur));
	p->span_start_ns = now;
	if (p->lat_prev.count < DEEP_TAIL_MIN_REQS) {
		p->threshold_ns = 0;
		return;
	}
	p99 = hist_quantile(&p->lat_prev, 0.99);
	/* twice the p99: a steady load has 1 % of its requests over the p99 itself */
	p->threshold_ns = DEEP_TAIL_FACTOR * p99;
	w = 4 * p99;
	p->window_ns = w < DEEP_WINDOW_MIN_NS   ? DEEP_WINDOW_MIN_NS
		       : w > DEEP_WINDOW_MAX_NS ? DEEP_WINDOW_MAX_NS
						: w;
}

static void set_on(struct deep_plan *p, bool on, bool triggered, __u64 now)
{
	if (p->on)
		p->on_total_ns += now - p->changed_ns;
	if (on) {
		p->windows++;
		p->windows_triggered += triggered;
	}
	p->on = on;
	p->triggered = on && triggered;
	p->changed_ns = now;
	p->trigger_armed = false;
}

bool deep_plan_step(struct deep_plan *p, __u64 now)
{
	__u64 in_state = now - p->changed_ns, off_ns;

	if (always(p))
		return p->on;
	if (p->duty <= 0) {
		if (p->on)
			set_on(p, false, false, now);
		return false;
	}
	rotate(p, now);
	if (p->on) {
		if (in_state >= p->window_ns)
			set_on(p, false, false, now);
		return p->on;
	}
	/* off for as long as the duty leaves between two windows */
	off_ns = (__u64)((double)p->window_ns * (1 - p->duty) / p->duty);
	if (in_state >= off_ns) {
		set_on(p, true, false, now);
	} else if (p->trigger_armed) {
		double run = (double)(now - p->start_ns);

		p->trigger_armed = false;
		if ((double)p->on_total_ns + (double)p->window_ns <=
		    DEEP_TRIGGER_CAP * p->duty * run)
			set_on(p, true, true, now);
	}
	return p->on;
}

void deep_plan_take(struct deep_plan *p, __u64 now, __u64 *on_ns, __u64 *span_ns, __u32 *windows,
		    __u32 *triggered)
{
	__u64 total = p->on_total_ns + (p->on ? now - p->changed_ns : 0);

	*on_ns = total - p->on_since_taken_ns;
	*span_ns = now - p->taken_ns;
	*windows = p->windows;
	*triggered = p->windows_triggered;
	p->on_since_taken_ns = total;
	p->taken_ns = now;
	p->windows = 0;
	p->windows_triggered = 0;
}
