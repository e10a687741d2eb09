// SPDX-License-Identifier: GPL-2.0
/* OpenMetrics 1.0 text exposition of a snapshot: stage latency histograms, the global
 * counters, NAPI polls and softnet_stat per CPU, and tailtrace's own cost. Used by `report --format
 * openmetrics` and by the `record --listen` endpoint. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "export/exports.h"
#include "core/histogram.h"
#include "record/record_format.h"
#include "core/stages.h"
#include "lib/util.h"

#define LABELS_LEN 1024

struct om_series {
	char labels[LABELS_LEN]; /* already escaped, without braces */
	struct hist h;
};

/* Label values escape backslash, double quote and line feed; nothing else. */
static void escape_value(char *dst, size_t len, const char *src)
{
	size_t o = 0;

	for (; *src && o + 3 < len; src++) {
		if (*src == '\\' || *src == '"') {
			dst[o++] = '\\';
			dst[o++] = *src;
		} else if (*src == '\n') {
			dst[o++] = '\\';
			dst[o++] = 'n';
		} else {
			dst[o++] = *src;
		}
	}
	dst[o] = '\0';
}

/* An integral number of nanoseconds as exact decimal seconds. */
static void print_seconds(FILE *f, __u64 ns)
{
	__u64 frac = ns % 1000000000ULL;
	char digits[16];
	int n;

	if (!frac) {
		fprintf(f, "%llu", (unsigned long long)(ns / 1000000000ULL));
		return;
	}
	n = snprintf(digits, sizeof(digits), "%09llu", (unsigned long long)frac);
	while (n > 1 && digits[n - 1] == '0')
		digits[--n] = '\0';
	fprintf(f, "%llu.%s", (unsigned long long)(ns / 1000000000ULL), digits);
}

static void print_ts(FILE *f, __u64 ts_ns)
{
	if (!ts_ns)
		return;
	fputc(' ', f);
	print_seconds(f, ts_ns);
}

static void family(FILE *f, const char *name, const char *type, const char *unit, const char *help)
{
	fprintf(f, "# TYPE %s %s\n", name, type);
	if (unit)
		fprintf(f, "# UNIT %s %s\n", name, unit);
	fprintf(f, "# HELP %s %s\n", name, help);
}

/* host="NAME", escaped, or "" when the snapshot has no host name. */
static void host_pair(const struct snapshot *s, char *buf, size_t len)
{
	char esc[2 * SNAP_HOST_LEN];

	buf[0] = '\0';
	if (!s->host[0])
		return;
	escape_value(esc, sizeof(esc), s->host);
	snprintf(buf, len, "host=\"%s\"", esc);
}

void export_openmetrics_host_label(const struct snapshot *s, char *buf, size_t len)
{
	char pair[2 * SNAP_HOST_LEN + 8];

	host_pair(s, pair, sizeof(pair));
	if (pair[0])
		snprintf(buf, len, "{%s}", pair);
	else if (len)
		buf[0] = '\0';
}

/* A sample's name and label set: the host's label first, then the series' own (either
 * may be empty). */
static void sample_start(FILE *f, const char *name, const char *host, const char *labels)
{
	fputs(name, f);
	if (!host[0] && !labels[0])
		return;
	fprintf(f, "{%s%s%s}", host, host[0] && labels[0] ? "," : "", labels);
}

static void counter(FILE *f, const char *host, const char *name, const char *unit, const char *help,
		    __u64 v, __u64 ts)
{
	char sample[128];

	family(f, name, "counter", unit, help);
	snprintf(sample, sizeof(sample), "%s_total", name);
	sample_start(f, sample, host, "");
	fprintf(f, " %llu", (unsigned long long)v);
	print_ts(f, ts);
	fputc('\n', f);
}

static int cmp_series(const void *a, const void *b)
{
	return strcmp(((const struct om_series *)a)->labels, ((const struct om_series *)b)->labels);
}

/* `request_family`: the labels of a request family (one stage, no place): host and group. */
static void series_labels(const struct snapshot *s, const char *host, const struct hist_key *k,
			  bool request_family, char *out, size_t len)
{
	const struct stage_info *si = stage_info(k->stage);
	char group[96], place[96], eg[200], ep[200];

	export_group_label(k, group, sizeof(group));
	export_place_label(s, k, place, sizeof(place));
	escape_value(eg, sizeof(eg), group);
	escape_value(ep, sizeof(ep), place);
	if (request_family) {
		snprintf(out, len, "%s%sgroup=\"%s\"", host, host[0] ? "," : "", eg);
		return;
	}
	snprintf(out, len, "%s%sstage=\"%s\",class=\"%s\",group=\"%s\",place=\"%s\"", host,
		 host[0] ? "," : "", si->name, class_name(si->class), eg, ep);
}

/* Keys that differ only in what the labels do not show (netns, address family...) are
 * one series: a label set may appear only once in a family. `stage` >= 0: that stage's
 * series only, labelled as a request family. */
static int collect_series(const struct snapshot *s, const char *host, int stage,
			  struct om_series **out, size_t *n)
{
	struct om_series *v;
	size_t cnt = 0, w = 0;

	v = calloc(s->nhists ? s->nhists : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < s->nhists; i++) {
		if (!stage_info(s->hists[i].key.stage) ||
		    (stage >= 0 && s->hists[i].key.stage != stage))
			continue;
		series_labels(s, host, &s->hists[i].key, stage >= 0, v[cnt].labels, LABELS_LEN);
		v[cnt].h = s->hists[i].h;
		cnt++;
	}
	qsort(v, cnt, sizeof(*v), cmp_series);
	for (size_t i = 0; i < cnt; i++) {
		if (w && !strcmp(v[w - 1].labels, v[i].labels))
			hist_add(&v[w - 1].h, &v[i].h);
		else if (w != i)
			v[w++] = v[i];
		else
			w++;
	}
	*out = v;
	*n = w;
	return 0;
}

static void print_histogram(FILE *f, const char *fam, const struct om_series *se, __u64 ts)
{
	const struct hist *h = &se->h;
	__u64 cum = 0, total = 0;
	__u32 slot = 0;

	/* the slots are the truth: +Inf and _count are their sum, so the buckets are
	 * cumulative and end at _count whatever the per-CPU count said */
	for (__u32 i = 0; i < HIST_SLOTS; i++)
		total += h->slots[i];
	for (int k = OM_BUCKET_LOG2_MIN; k <= OM_BUCKET_LOG2_MAX; k++) {
		__u32 end = hist_slot(1ULL << k); /* first slot at or above 2^k */

		for (; slot < end; slot++)
			cum += h->slots[slot];
		fprintf(f, "%s_bucket{%s,le=\"", fam, se->labels);
		print_seconds(f, (1ULL << k) - 1);
		fprintf(f, "\"} %llu", (unsigned long long)cum);
		print_ts(f, ts);
		fputc('\n', f);
	}
	fprintf(f, "%s_bucket{%s,le=\"+Inf\"} %llu", fam, se->labels, (unsigned long long)total);
	print_ts(f, ts);
	fprintf(f, "\n%s_count{%s} %llu", fam, se->labels, (unsigned long long)total);
	print_ts(f, ts);
	fprintf(f, "\n%s_sum{%s} ", fam, se->labels);
	print_seconds(f, h->sum_ns);
	print_ts(f, ts);
	fputc('\n', f);
}

/* Each program's runs and run time by the kernel's accounting: rate() of the two gives
 * events per second, their ratio ns per event. */
static void print_programs(FILE *f, const struct snapshot *s, const char *host, __u64 ts)
{
	char hook[2 * SNAP_PROG_NAME], labels[3 * SNAP_PROG_NAME];

	family(f, "tailtrace_program_runs", "counter", NULL,
	       "Runs of each tailtrace BPF program (kernel run-time statistics), by hook");
	for (size_t i = 0; i < s->nprogs; i++) {
		escape_value(hook, sizeof(hook), s->progs[i].name);
		snprintf(labels, sizeof(labels), "hook=\"%s\"", hook);
		sample_start(f, "tailtrace_program_runs_total", host, labels);
		fprintf(f, " %llu", (unsigned long long)s->progs[i].runs);
		print_ts(f, ts);
		fputc('\n', f);
	}
	family(f, "tailtrace_program_run_seconds", "counter", "seconds",
	       "Time spent in each tailtrace BPF program (kernel run-time statistics), by hook");
	for (size_t i = 0; i < s->nprogs; i++) {
		escape_value(hook, sizeof(hook), s->progs[i].name);
		snprintf(labels, sizeof(labels), "hook=\"%s\"", hook);
		sample_start(f, "tailtrace_program_run_seconds_total", host, labels);
		fputc(' ', f);
		print_seconds(f, s->progs[i].run_ns);
		print_ts(f, ts);
		fputc('\n', f);
	}
}

/* A NAPI instance's labels: dev and napi_id, or cpu for a CPU's backlog (no device). */
struct om_napi {
	char labels[LABELS_LEN];
	struct napi_count c;
};

static int cmp_napi(const void *a, const void *b)
{
	return strcmp(((const struct om_napi *)a)->labels, ((const struct om_napi *)b)->labels);
}

static int cmp_softnet(const void *a, const void *b)
{
	__u32 x = ((const struct snap_softnet *)a)->cpu, y = ((const struct snap_softnet *)b)->cpu;

	return x < y ? -1 : x > y;
}

static void napi_series(FILE *f, const char *host, const char *name, const struct om_napi *v,
			size_t n, size_t col, __u64 ts)
{
	char sample[128];

	snprintf(sample, sizeof(sample), "%s_total", name);
	for (size_t i = 0; i < n; i++) {
		__u64 x = col == 0 ? v[i].c.polls : col == 1 ? v[i].c.exhausted : v[i].c.work;

		sample_start(f, sample, host, v[i].labels);
		fprintf(f, " %llu", (unsigned long long)x);
		print_ts(f, ts);
		fputc('\n', f);
	}
}

/* NAPI polls against their budget per device and queue, and /proc/net/softnet_stat per
 * CPU (bpf/nic.bpf.h): families only when the driver/softirq programs ran. */
static int print_nic(FILE *f, const struct snapshot *s, const char *host, __u64 ts)
{
	static const struct {
		const char *name, *help;
	} napi_fam[] = {
		{ "tailtrace_napi_polls",
		  "NAPI polls, by device and NAPI id (cpu: a CPU's backlog)" },
		{ "tailtrace_napi_polls_exhausted",
		  "NAPI polls that used their whole budget: the driver had more packets" },
		{ "tailtrace_napi_packets", "Packets handled by NAPI polls" },
	};
	static const struct {
		const char *name, *help;
		size_t off;
	} sn_fam[] = {
		{ "tailtrace_softnet_processed", "Packets processed by the CPU (softnet_stat)",
		  offsetof(struct snap_softnet, processed) },
		{ "tailtrace_softnet_dropped",
		  "Packets dropped because the CPU's backlog was full (softnet_stat)",
		  offsetof(struct snap_softnet, dropped) },
		{ "tailtrace_softnet_time_squeeze",
		  "NET_RX softirq runs that ended with work left: budget or time (softnet_stat)",
		  offsetof(struct snap_softnet, time_squeeze) },
		{ "tailtrace_softnet_received_rps",
		  "RPS/RFS inter-processor interrupts received by the CPU (softnet_stat)",
		  offsetof(struct snap_softnet, received_rps) },
		{ "tailtrace_softnet_flow_limit",
		  "Packets dropped by the flow limit (softnet_stat)",
		  offsetof(struct snap_softnet, flow_limit) },
	};
	struct om_napi *v = calloc(s->nnapi ? s->nnapi : 1, sizeof(*v));
	struct snap_softnet *rows = calloc(s->nsoftnet ? s->nsoftnet : 1, sizeof(*rows));
	size_t n = 0;

	if (!v || !rows) {
		free(v);
		free(rows);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->nnapi; i++) {
		const struct snap_napi *sn = &s->napi[i];
		char dev[96], edev[200];

		if (sn->key.ifindex) {
			snapshot__dev_label(s, sn->key.netns, sn->key.ifindex, dev, sizeof(dev));
			escape_value(edev, sizeof(edev), dev);
			snprintf(v[n].labels, LABELS_LEN, "dev=\"%s\",napi_id=\"%u\"", edev,
				 sn->key.napi_id);
		} else {
			snprintf(v[n].labels, LABELS_LEN, "cpu=\"%u\"", sn->key.napi_id);
		}
		v[n++].c = sn->c;
	}
	/* keys that differ only in what the labels do not show are one series */
	qsort(v, n, sizeof(*v), cmp_napi);
	{
		size_t w = 0;

		for (size_t i = 0; i < n; i++) {
			if (w && !strcmp(v[w - 1].labels, v[i].labels)) {
				v[w - 1].c.polls += v[i].c.polls;
				v[w - 1].c.exhausted += v[i].c.exhausted;
				v[w - 1].c.work += v[i].c.work;
			} else {
				v[w++] = v[i];
			}
		}
		n = w;
	}
	for (size_t k = 0; s->nnapi && k < ARRAY_SIZE(napi_fam); k++) {
		family(f, napi_fam[k].name, "counter", NULL, napi_fam[k].help);
		napi_series(f, host, napi_fam[k].name, v, n, k, ts);
	}
	free(v);
	if (s->nsoftnet)
		memcpy(rows, s->softnet, s->nsoftnet * sizeof(*rows));
	qsort(rows, s->nsoftnet, sizeof(*rows), cmp_softnet);
	for (size_t k = 0; s->nsoftnet && k < ARRAY_SIZE(sn_fam); k++) {
		family(f, sn_fam[k].name, "counter", NULL, sn_fam[k].help);
		char sample[128];

		snprintf(sample, sizeof(sample), "%s_total", sn_fam[k].name);
		for (size_t i = 0; i < s->nsoftnet; i++) {
			char cpu[24];
			__u64 x;

			memcpy(&x, (const char *)&rows[i] + sn_fam[k].off, sizeof(x));
			snprintf(cpu, sizeof(cpu), "cpu=\"%u\"", rows[i].cpu);
			sample_start(f, sample, host, cpu);
			fprintf(f, " %llu", (unsigned long long)x);
			print_ts(f, ts);
			fputc('\n', f);
		}
	}
	free(rows);
	return 0;
}

static void gauge(FILE *f, const char *host, const char *name, const char *help, double v, __u64 ts)
{
	family(f, name, "gauge", NULL, help);
	sample_start(f, name, host, "");
	fprintf(f, " %.6g", v);
	print_ts(f, ts);
	fputc('\n', f);
}

/* The sampling rate in force (--budget) and the error it puts on a p99. */
static void print_sampling(FILE *f, const struct snapshot *s, const char *host, __u64 ts)
{
	gauge(f, host, "tailtrace_sample_rate",
	      "Share of flows traced (1: all; counts are scaled up)", snapshot__sample_rate(s), ts);
	gauge(f, host, "tailtrace_sample_p99_error_ratio",
	      "Largest estimated relative error of a p99 from sampling (stages with 1000 "
	      "sampled events)",
	      snapshot__p99_error(s, NULL), ts);
	gauge(f, host, "tailtrace_budget_cpu_ratio", "CPU budget, share of one CPU (0: none)",
	      s->budget_pct / 100, ts);
	gauge(f, host, "tailtrace_budget_floor_cpu_ratio",
	      "Estimated cost with no flow traced, share of one CPU (0: not estimated)",
	      s->budget_floor_pct / 100, ts);
}

/* The request stages again under the names serving stacks use for their own figures, so
 * a dashboard can put tailtrace's next to them. */
static const struct {
	int stage;
	const char *family, *help;
} request_families[] = {
	{ STAGE_REQ_LATENCY, "tailtrace_request_latency_seconds",
	  "Request latency on the socket, first request byte to last response byte" },
	{ STAGE_REQ_TTFT, "tailtrace_time_to_first_token_seconds",
	  "Time to the first token (first response data after a header block sent alone; "
	  "an HTTP/2 stream's first DATA frame)" },
	{ STAGE_REQ_GAP, "tailtrace_inter_token_latency_seconds",
	  "Every gap between consecutive tokens (response sends or arrivals) of a request" },
};

static int print_request_families(FILE *f, const struct snapshot *s, const char *host, __u64 ts)
{
	for (size_t k = 0; k < ARRAY_SIZE(request_families); k++) {
		struct om_series *series;
		size_t n;
		int err = collect_series(s, host, request_families[k].stage, &series, &n);

		if (err)
			return err;
		if (n)
			family(f, request_families[k].family, "histogram", "seconds",
			       request_families[k].help);
		for (size_t i = 0; i < n; i++)
			print_histogram(f, request_families[k].family, &series[i], ts);
		free(series);
	}
	return 0;
}

int export_openmetrics_families(FILE *f, const struct snapshot *s, __u64 ts)
{
	char name[96], help[160], host[2 * SNAP_HOST_LEN + 8], labels[32];
	struct om_series *series;
	size_t n;
	int err;
	bool any_drop = false;

	host_pair(s, host, sizeof(host));
	err = collect_series(s, host, -1, &series, &n);
	if (err)
		return err;
	family(f, "tailtrace_stage_latency_seconds", "histogram", "seconds",
	       "Latency of each stage (docs/stages.md) by grouping and place");
	for (size_t i = 0; i < n; i++)
		print_histogram(f, "tailtrace_stage_latency_seconds", &series[i], ts);
	free(series);
	err = print_request_families(f, s, host, ts);
	if (err)
		return err;

	for (int i = 0; i < CNT__MAX; i++) {
		snprintf(name, sizeof(name), "tailtrace_%s", rec_counter_name(i));
		snprintf(help, sizeof(help), "Kernel-side counter %s (docs/stages.md)",
			 rec_counter_name(i));
		counter(f, host, name, NULL, help, s->counters[i], ts);
	}
	counter(f, host, "tailtrace_hist_evicted", NULL,
		"Histogram keys evicted from the bounded kernel map", s->hist_evicted, ts);
	counter(f, host, "tailtrace_slow_requests_cut", NULL,
		"Slow requests not kept because the per-interval bound was hit", s->slow_cut, ts);

	for (int i = 0; i < TT_DROP_REASONS; i++)
		any_drop |= s->drop_reasons[i] != 0;
	family(f, "tailtrace_drops_by_reason", "counter", NULL,
	       "Packet drops on traced flows by kernel drop reason number (last: all higher)");
	for (int i = 0; any_drop && i < TT_DROP_REASONS; i++) {
		if (!s->drop_reasons[i])
			continue;
		snprintf(labels, sizeof(labels), "reason=\"%d\"", i);
		sample_start(f, "tailtrace_drops_by_reason_total", host, labels);
		fprintf(f, " %llu", (unsigned long long)s->drop_reasons[i]);
		print_ts(f, ts);
		fputc('\n', f);
	}

	family(f, "tailtrace_hist_keys_live", "gauge", NULL,
	       "Histogram keys present in the kernel map at the last snapshot");
	sample_start(f, "tailtrace_hist_keys_live", host, "");
	fprintf(f, " %llu", (unsigned long long)s->hist_live);
	print_ts(f, ts);
	fputc('\n', f);

	family(f, "tailtrace_slow_threshold_seconds", "gauge", "seconds",
	       "Adaptive latency threshold above which requests are kept");
	sample_start(f, "tailtrace_slow_threshold_seconds", host, "");
	fputc(' ', f);
	print_seconds(f, s->slow_threshold_ns);
	print_ts(f, ts);
	fputc('\n', f);

	family(f, "tailtrace_self_cpu_seconds", "counter", "seconds",
	       "CPU time tailtrace itself used");
	sample_start(f, "tailtrace_self_cpu_seconds_total", host, "");
	fprintf(f, " %.6f", s->self_cpu_s >= 0 ? s->self_cpu_s : 0);
	print_ts(f, ts);
	fputc('\n', f);

	family(f, "tailtrace_self_rss_bytes", "gauge", "bytes",
	       "Resident memory of tailtrace (largest seen)");
	sample_start(f, "tailtrace_self_rss_bytes", host, "");
	fprintf(f, " %llu", (unsigned long long)s->self_rss_kb * 1024);
	print_ts(f, ts);
	fputc('\n', f);
	print_programs(f, s, host, ts);
	print_sampling(f, s, host, ts);
	err = print_nic(f, s, host, ts);
	if (err)
		return err;
	return ferror(f) ? -EIO : 0;
}

int export_openmetrics(FILE *f, const struct snapshot *s, __u64 ts)
{
	int err = export_openmetrics_families(f, s, ts);

	if (err)
		return err;
	fputs("# EOF\n", f);
	return ferror(f) ? -EIO : 0;
}
