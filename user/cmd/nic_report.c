// SPDX-License-Identifier: GPL-2.0
/* The driver/softirq counters of `hist` and `report`: NAPI polls against their budget per
 * device and queue (from napi:napi_poll) and /proc/net/softnet_stat per CPU, both over
 * the interval of the histograms beside them. */
#include <stdio.h>
#include "cmd/stage_report.h"

/* "dev veth1 napi 8193" or "backlog cpu 1" (the CPU's backlog has no device). */
static void napi_label(const struct snapshot *s, const struct snap_napi *n, char *buf, size_t len)
{
	const char *name;

	if (!n->key.ifindex) {
		snprintf(buf, len, "backlog cpu %u", n->key.napi_id);
		return;
	}
	name = snapshot__dev_name(s, n->key.netns, n->key.ifindex);
	if (name)
		snprintf(buf, len, "dev %s napi %u", name, n->key.napi_id);
	else
		snprintf(buf, len, "ifindex %u napi %u", n->key.ifindex, n->key.napi_id);
}

static double per_s(__u64 n, double duration_s)
{
	return duration_s > 0 ? (double)n / duration_s : 0.0;
}

void nic_report_text(const struct snapshot *s, double duration_s, FILE *f)
{
	char label[96];

	if (!s->nnapi && !s->nsoftnet)
		return;
	if (s->nnapi)
		fprintf(f, "%-32s %10s %10s %12s %12s\n", "NAPI", "POLLS", "EXHAUSTED",
			"EXHAUSTED/S", "PACKETS");
	for (size_t i = 0; i < s->nnapi; i++) {
		const struct snap_napi *n = &s->napi[i];

		napi_label(s, n, label, sizeof(label));
		fprintf(f, "%-32.32s %10llu %10llu %12.1f %12llu\n", label,
			(unsigned long long)n->c.polls, (unsigned long long)n->c.exhausted,
			per_s(n->c.exhausted, duration_s), (unsigned long long)n->c.work);
	}
	fprintf(f, "bql stalls %llu\n", (unsigned long long)s->counters[CNT_BQL_STALLS]);
	if (s->nsoftnet)
		fprintf(f, "%-8s %12s %10s %12s %12s %10s\n", "SOFTNET", "PROCESSED", "DROPPED",
			"SQUEEZED", "RPS_IPI", "FLOW_LIMIT");
	for (size_t i = 0; i < s->nsoftnet; i++) {
		const struct snap_softnet *r = &s->softnet[i];

		fprintf(f, "cpu %-4u %12llu %10llu %12llu %12llu %10llu\n", r->cpu,
			(unsigned long long)r->processed, (unsigned long long)r->dropped,
			(unsigned long long)r->time_squeeze, (unsigned long long)r->received_rps,
			(unsigned long long)r->flow_limit);
	}
}

void nic_report_json(const struct snapshot *s, double duration_s, struct json_writer *w)
{
	char label[96];

	if (!s->nnapi && !s->nsoftnet)
		return;
	jw_array_begin(w, "napi");
	for (size_t i = 0; i < s->nnapi; i++) {
		const struct snap_napi *n = &s->napi[i];
		const char *dev = snapshot__dev_name(s, n->key.netns, n->key.ifindex);

		napi_label(s, n, label, sizeof(label));
		jw_object_begin(w, NULL);
		jw_string(w, "place", label);
		if (n->key.ifindex && dev)
			jw_string(w, "dev", dev);
		else
			jw_null(w, "dev");
		jw_uint(w, n->key.ifindex ? "napi_id" : "cpu", n->key.napi_id);
		jw_uint(w, "polls", n->c.polls);
		jw_uint(w, "exhausted", n->c.exhausted);
		jw_double(w, "exhausted_per_s", per_s(n->c.exhausted, duration_s));
		jw_uint(w, "packets", n->c.work);
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_array_begin(w, "softnet");
	for (size_t i = 0; i < s->nsoftnet; i++) {
		const struct snap_softnet *r = &s->softnet[i];

		jw_object_begin(w, NULL);
		jw_uint(w, "cpu", r->cpu);
		jw_uint(w, "processed", r->processed);
		jw_uint(w, "dropped", r->dropped);
		jw_uint(w, "time_squeeze", r->time_squeeze);
		jw_uint(w, "received_rps", r->received_rps);
		jw_uint(w, "flow_limit", r->flow_limit);
		jw_object_end(w);
	}
	jw_array_end(w);
}
