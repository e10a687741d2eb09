// SPDX-License-Identifier: GPL-2.0
/* Text and JSON rendering of per-stage histograms and of the loss/eviction counters. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <bpf/btf.h>
#include "lib/escape.h"
#include "cmd/stage_report.h"
#include "core/histogram.h"
#include "rdma/rdma_tracer.h"
#include "core/stages.h"
#include "lib/format.h"
#include "collect/k8s.h"

bool stage_report_selected(const struct stage_report_opts *ro, int stage)
{
	const struct stage_info *si;

	if (!ro || !ro->nstages) {
		si = stage_info(stage);
		return si && (si->flags & SF_DEFAULT);
	}
	for (int i = 0; i < ro->nstages; i++)
		if (ro->stages[i] == stage)
			return true;
	return false;
}

void stage_report_group(const struct hist_key *k, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (k->stage == STAGE_RDMA_WR) {
		__u8 st = RDMA_SNAP_STATUS(k->id);

		snprintf(buf, len, "qp %u %s%s%s", RDMA_SNAP_QPN(k->id),
			 rdma_opcode_name(RDMA_SNAP_OPCODE(k->id)), st ? " " : "",
			 st ? rdma_status_name(st) : "");
		return;
	}
	if (k->stage == STAGE_RDMA_CQ_EVENT) {
		snprintf(buf, len, "cq %u [%u]", RDMA_SNAP_QPN(k->id), k->tgid);
		return;
	}
	if (k->stage == STAGE_RDMA_UCX || k->stage == STAGE_RDMA_UCX_RTT) {
		/* the endpoint is folded into 48 bits of the id: a name, not an address */
		snprintf(buf, len, "ep %06x%06x %s [%u]", RDMA_SNAP_PEER(k->id),
			 RDMA_SNAP_QPN(k->id), rdma_ucx_op_name(RDMA_SNAP_OPCODE(k->id)), k->tgid);
		return;
	}
	switch (k->by) {
	case GROUP_PORT:
		snprintf(buf, len, "port %llu", (unsigned long long)k->id);
		break;
	case GROUP_RADDR:
		if (!k->family) {
			snprintf(buf, len, "raddr ?");
			break;
		}
		inet_ntop(k->family == AF_INET6 ? AF_INET6 : AF_INET, k->addr, a, sizeof(a));
		snprintf(buf, len, "raddr %s", a);
		break;
	case GROUP_COMM: {
		/* another process's name: no control character reaches the terminal */
		char raw[sizeof(k->comm) + 1], comm[4 * sizeof(k->comm) + 1];

		memcpy(raw, k->comm, sizeof(k->comm));
		raw[sizeof(k->comm)] = '\0';
		tt_escape(comm, sizeof(comm), raw);
		snprintf(buf, len, "comm %s[%u]", comm, k->tgid);
		break;
	}
	case GROUP_CGROUP:
		snprintf(buf, len, "cgroup %llu", (unsigned long long)k->id);
		break;
	case GROUP_POD:
		snprintf(buf, len, "%s", k8s_cgroup_label(k->id));
		break;
	default:
		snprintf(buf, len, "all");
	}
}

/* The queue and CPU of a driver/softirq stage's place ("rxq 0 cpu 1", "cpu 1 ksoftirqd"). */
static void place_queue_cpu(const struct hist_key *k, char *buf, size_t len)
{
	char q[24] = "", c[16] = "";

	if (k->stage == STAGE_RX_SOFTIRQ && k->queue == SOFTIRQ_CTX_KSOFTIRQD)
		snprintf(q, sizeof(q), " ksoftirqd");
	else if (k->stage != STAGE_RX_SOFTIRQ && k->queue)
		snprintf(q, sizeof(q), " %s %u", k->stage == STAGE_TX_RING ? "txq" : "rxq",
			 k->queue - 1);
	if (k->cpu)
		snprintf(c, sizeof(c), " cpu %u", k->cpu - 1);
	if (k->stage == STAGE_RX_SOFTIRQ)
		snprintf(buf, len, "%s%s", c + (c[0] ? 1 : 0), q);
	else
		snprintf(buf, len, "%s%s", q, c);
}

void stage_report_place(const struct snapshot *s, const struct hist_key *k, char *buf, size_t len)
{
	char dev[48], qd[16], qc[48];

	place_queue_cpu(k, qc, sizeof(qc));
	if (!k->ifindex) {
		snprintf(buf, len, "%s", qc);
		return;
	}
	snapshot__dev_label(s, k->netns, k->ifindex, dev, sizeof(dev));
	qdisc_label(k->qdisc_handle, qd, sizeof(qd));
	if (k->stage == STAGE_TX_QDISC)
		snprintf(buf, len, "dev %s qdisc %s", dev, qd);
	else
		snprintf(buf, len, "dev %s%s", dev, qc);
}

const char *drop_reason_name(unsigned int reason, char *buf, size_t len)
{
	static struct btf *btf;
	static const struct btf_type *t;
	static bool tried;

	if (!tried) {
		tried = true;
		btf = btf__load_vmlinux_btf();
		if (btf) {
			int id = btf__find_by_name_kind(btf, "skb_drop_reason", BTF_KIND_ENUM);

			t = id > 0 ? btf__type_by_id(btf, id) : NULL;
		}
	}
	if (t) {
		const struct btf_enum *e = btf_enum(t);

		for (int i = 0; i < btf_vlen(t); i++, e++) {
			if ((unsigned int)e->val == reason) {
				const char *n = btf__name_by_offset(btf, e->name_off);

				if (!strncmp(n, "SKB_DROP_REASON_", 16))
					n += 16;
				snprintf(buf, len, "%s", n);
				return buf;
			}
		}
	}
	snprintf(buf, len, "reason_%u", reason);
	return buf;
}

static int cmp_hist(const void *a, const void *b)
{
	const struct snap_hist *x = a, *y = b;

	if (x->key.stage != y->key.stage)
		return x->key.stage - y->key.stage;
	return memcmp(&x->key, &y->key, sizeof(x->key));
}

/* Sorted copy of the selected histograms. */
static struct snap_hist *selected(const struct snapshot *s, const struct stage_report_opts *ro,
				  size_t *n)
{
	struct snap_hist *v = calloc(s->nhists ? s->nhists : 1, sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < s->nhists; i++)
		if (stage_report_selected(ro, s->hists[i].key.stage))
			v[(*n)++] = s->hists[i];
	qsort(v, *n, sizeof(*v), cmp_hist);
	return v;
}

static double us(__u64 ns)
{
	return (double)ns / 1000.0;
}

void hist_summary_print_row(FILE *f, const struct hist *h)
{
	struct hist_summary s;
	char b[6][16];

	hist_summarize(h, &s);
	fmt_duration(b[0], sizeof(b[0]), s.mean_ns, DUR_FINE);
	fmt_duration(b[1], sizeof(b[1]), (double)s.p50_ns, DUR_FINE);
	fmt_duration(b[2], sizeof(b[2]), (double)s.p90_ns, DUR_FINE);
	fmt_duration(b[3], sizeof(b[3]), (double)s.p99_ns, DUR_FINE);
	fmt_duration(b[4], sizeof(b[4]), (double)s.p999_ns, DUR_FINE);
	fmt_duration(b[5], sizeof(b[5]), (double)s.max_ns, DUR_FINE);
	fprintf(f, "%8llu %9s %9s %9s %9s %9s %9s\n", (unsigned long long)s.count, b[0], b[1], b[2],
		b[3], b[4], b[5]);
}

void hist_summary_print_json(struct json_writer *w, const struct hist *h)
{
	struct hist_summary sm;

	hist_summarize(h, &sm);
	jw_uint(w, "count", sm.count);
	jw_double(w, "mean_ns", sm.mean_ns);
	jw_uint(w, "p50_ns", sm.p50_ns);
	jw_uint(w, "p90_ns", sm.p90_ns);
	jw_uint(w, "p99_ns", sm.p99_ns);
	jw_uint(w, "p999_ns", sm.p999_ns);
	jw_uint(w, "max_ns", sm.max_ns);
	jw_uint(w, "overflow", sm.overflow);
}

/* The counters' JSON keys, from bpf/tailtrace.h's TT_COUNTERS: every counter with one is
 * printed, in the table's order. */
#define COUNTER_JSON_KEY(id, rec, json) [CNT_##id] = json,
static const char *const counter_keys[CNT__MAX] = { TT_COUNTERS(COUNTER_JSON_KEY) };

/* What tailtrace itself lost or could not store: summed from the maps' counters and the
 * snapshot, not one counter each. */
static void own_losses_json(const struct snapshot *s, struct json_writer *w)
{
	jw_uint(w, "evicted", s->hist_evicted);
	jw_uint(w, "lost", s->events_lost);
	jw_uint(w, "unmatched_stamps", s->pkt_unmatched);
	jw_uint(w, "failed_updates",
		s->counters[CNT_HIST_UPDATE_FAIL] + s->counters[CNT_FLOW_UPDATE_FAIL] +
			s->counters[CNT_PKT_UPDATE_FAIL] + s->counters[CNT_SCHED_UPDATE_FAIL] +
			s->counters[CNT_STREAM_UPDATE_FAIL]);
	jw_uint(w, "slow_requests_cut", s->slow_cut);
}

/* /proc/net/softnet_stat summed over the CPUs: packets the per-CPU backlog dropped (full)
 * and NET_RX runs that stopped with work left (budget or time), null when unread. */
static void softnet_counters_json(const struct snapshot *s, struct json_writer *w)
{
	__u64 dropped = 0, squeezed = 0;

	for (size_t i = 0; i < s->nsoftnet; i++) {
		dropped += s->softnet[i].dropped;
		squeezed += s->softnet[i].time_squeeze;
	}
	if (!s->nsoftnet) {
		jw_null(w, "softnet_dropped");
		jw_null(w, "softnet_time_squeeze");
		return;
	}
	jw_uint(w, "softnet_dropped", dropped);
	jw_uint(w, "softnet_time_squeeze", squeezed);
}

void stage_report_counters_print_json(const struct snapshot *s, struct json_writer *w)
{
	char name[64];

	jw_object_begin(w, "counters");
	for (int c = 0; c < CNT__MAX; c++) {
		if (counter_keys[c])
			jw_uint(w, counter_keys[c], s->counters[c]);
		if (c == CNT_DROPS) {
			jw_object_begin(w, "drop_reasons");
			for (int i = 0; i < TT_DROP_REASONS; i++)
				if (s->drop_reasons[i])
					jw_uint(w, drop_reason_name(i, name, sizeof(name)),
						s->drop_reasons[i]);
			jw_object_end(w);
		}
		if (c == CNT_QDISC_DROPS)
			own_losses_json(s, w);
	}
	softnet_counters_json(s, w);
	jw_object_end(w);
	stage_report_self_print_json(s, w);
}

void stage_report_print_json(const struct snapshot *s, const struct stage_report_opts *ro,
			     struct json_writer *w)
{
	struct hist_summary sum;
	char group[96], place[96];
	struct snap_hist *v;
	size_t n;

	jw_double(w, "duration_s", ro->duration_s);
	jw_array_begin(w, "stages");
	v = selected(s, ro, &n);
	for (size_t i = 0; v && i < n; i++) {
		const struct stage_info *si = stage_info(v[i].key.stage);
		const struct hist *h = &v[i].h;

		if (!si)
			continue;
		hist_summarize(h, &sum);
		stage_report_group(&v[i].key, group, sizeof(group));
		stage_report_place(s, &v[i].key, place, sizeof(place));
		jw_object_begin(w, NULL);
		jw_string(w, "name", si->name);
		jw_string(w, "class", class_name(si->class));
		jw_string(w, "group", group);
		if (place[0])
			jw_string(w, "place", place);
		else
			jw_null(w, "place");
		jw_uint(w, "count", sum.count);
		jw_double(w, "mean_us", sum.mean_ns / 1000.0);
		jw_double(w, "p50_us", us(sum.p50_ns));
		jw_double(w, "p90_us", us(sum.p90_ns));
		jw_double(w, "p99_us", us(sum.p99_ns));
		/* sampled by --budget: the p99's estimated relative error (0: all flows) */
		jw_double(w, "p99_error", snapshot__hist_p99_error(s, &v[i]));
		jw_double(w, "p999_us", us(sum.p999_ns));
		jw_double(w, "max_us", us(sum.max_ns));
		for (__u32 b = 0; b < HIST_SLOTS; b++) {
			if (h->slots[b]) {
				jw_double(w, "min_us", us(hist_slot_lo(b)));
				break;
			}
		}
		jw_uint(w, "overflow", sum.overflow);
		jw_array_begin(w, "buckets");
		for (__u32 b = 0; b < HIST_SLOTS; b++) {
			if (!h->slots[b])
				continue;
			jw_array_begin(w, NULL);
			jw_uint(w, NULL, hist_slot_lo(b));
			if (b == HIST_OVERFLOW_SLOT)
				jw_null(w, NULL);
			else
				jw_uint(w, NULL, hist_slot_hi(b));
			jw_uint(w, NULL, h->slots[b]);
			jw_array_end(w);
		}
		jw_array_end(w);
		jw_object_end(w);
	}
	free(v);
	jw_array_end(w);
	stage_report_counters_print_json(s, w);
	nic_report_json(s, ro->duration_s, w);
}

/* One row per power of two (sub-buckets summed) keeps the chart short. */
static void chart(const struct hist *h, FILE *f)
{
	__u64 rows[HIST_MAX_LOG2 + 2] = { 0 }, maxv = 0;
	int first = -1, last = -1;

	for (__u32 b = 0; b < HIST_SLOTS; b++) {
		int r = b == HIST_OVERFLOW_SLOT ? HIST_MAX_LOG2 + 1
						: (b < HIST_SUB ? 0 : (int)(b / HIST_SUB) + 3);

		if (b < HIST_SUB && b)
			r = 0;
		rows[r] += h->slots[b];
	}
	for (int r = 0; r < HIST_MAX_LOG2 + 2; r++) {
		if (!rows[r])
			continue;
		if (first < 0)
			first = r;
		last = r;
		if (rows[r] > maxv)
			maxv = rows[r];
	}
	for (int r = first; r >= 0 && r <= last; r++) {
		char lo[16], hi[16], bar[41];
		int n = maxv ? (int)(rows[r] * 40 / maxv) : 0;

		fmt_duration(lo, sizeof(lo), (double)(r == 0 ? 0 : 1ULL << r), DUR_TABLE);
		fmt_duration(hi, sizeof(hi), (double)(r == 0 ? 16 : 1ULL << (r + 1)), DUR_TABLE);
		memset(bar, '*', (size_t)n);
		bar[n] = 0;
		if (r == HIST_MAX_LOG2 + 1)
			fprintf(f, "      %10s -> inf    : %-10llu |%-40s|\n", lo,
				(unsigned long long)rows[r], bar);
		else
			fprintf(f, "      %10s -> %-9s: %-10llu |%-40s|\n", lo, hi,
				(unsigned long long)rows[r], bar);
	}
}

void stage_report_counters_print_text(const struct snapshot *s, FILE *f)
{
	char name[64];
	bool any = false;

	fprintf(f,
		"retransmits %llu (timeout %llu, fast %llu, tlp %llu, other %llu, syn-ack %llu,"
		" untimed %llu, unseen %llu)"
		"  drops %llu  ecn_ce %llu  qdisc packets %llu drops %llu\n",
		(unsigned long long)s->counters[CNT_RETRANS],
		(unsigned long long)s->counters[CNT_RETRANS_RTO],
		(unsigned long long)s->counters[CNT_RETRANS_FAST],
		(unsigned long long)s->counters[CNT_RETRANS_TLP],
		(unsigned long long)s->counters[CNT_RETRANS_OTHER],
		(unsigned long long)s->counters[CNT_RETRANS_SYNACK],
		(unsigned long long)s->counters[CNT_RETRANS_UNTIMED],
		(unsigned long long)s->counters[CNT_RETRANS_UNSEEN],
		(unsigned long long)s->counters[CNT_DROPS],
		(unsigned long long)s->counters[CNT_ECN_CE],
		(unsigned long long)s->counters[CNT_QDISC_PKTS],
		(unsigned long long)s->counters[CNT_QDISC_DROPS]);
	for (int i = 0; i < TT_DROP_REASONS; i++) {
		if (!s->drop_reasons[i])
			continue;
		fprintf(f, "%s%s %llu",
			any ? ", " : "drop reasons: ", drop_reason_name(i, name, sizeof(name)),
			(unsigned long long)s->drop_reasons[i]);
		any = true;
	}
	if (any)
		fputc('\n', f);
	fprintf(f,
		"tailtrace losses: evicted %llu  lost events %llu  unmatched stamps %llu  "
		"failed updates %llu  slow requests cut %llu  untimed sends %llu  unseen closes "
		"%llu  unseen responses %llu  framing lost %llu\n",
		(unsigned long long)s->hist_evicted, (unsigned long long)s->events_lost,
		(unsigned long long)s->pkt_unmatched,
		(unsigned long long)(s->counters[CNT_HIST_UPDATE_FAIL] +
				     s->counters[CNT_FLOW_UPDATE_FAIL] +
				     s->counters[CNT_PKT_UPDATE_FAIL] +
				     s->counters[CNT_SCHED_UPDATE_FAIL] +
				     s->counters[CNT_STREAM_UPDATE_FAIL]),
		(unsigned long long)s->slow_cut, (unsigned long long)s->counters[CNT_SENDS_UNTIMED],
		(unsigned long long)s->counters[CNT_CLOSES_UNSEEN],
		(unsigned long long)s->counters[CNT_RESP_UNSEEN],
		(unsigned long long)s->counters[CNT_FRAMING_LOST]);
	stage_report_self_print_text(s, f);
}

static double snap_seconds(const struct snapshot *s)
{
	return s->end_ns > s->start_ns ? (double)(s->end_ns - s->start_ns) / 1e9 : 0;
}

/* Percent of one CPU that `used` seconds make of the snapshot's window. */
static double pct_of_cpu(const struct snapshot *s, double used)
{
	double secs = snap_seconds(s);

	return secs > 0 ? 100.0 * used / secs : 0;
}

void stage_report_self_print_json(const struct snapshot *s, struct json_writer *w)
{
	double secs = snap_seconds(s), prog_s = (double)snap_prog_time_ns(s) / 1e9, err;
	int err_stage;

	jw_object_begin(w, "self");
	jw_double(w, "cpu_s", s->self_cpu_s);
	jw_double(w, "cpu_pct", pct_of_cpu(s, s->self_cpu_s));
	jw_uint(w, "rss_kb", s->self_rss_kb);
	jw_double(w, "programs_s", prog_s);
	jw_double(w, "programs_cpu_pct", pct_of_cpu(s, prog_s));
	jw_array_begin(w, "programs");
	for (size_t i = 0; i < s->nprogs; i++) {
		const struct snap_prog *p = &s->progs[i];

		if (!p->runs)
			continue;
		jw_object_begin(w, NULL);
		jw_string(w, "hook", p->name);
		jw_uint(w, "runs", p->runs);
		jw_uint(w, "run_ns", p->run_ns);
		jw_double(w, "events_per_s", prog_runs_per_s(p, secs));
		jw_double(w, "ns_per_event", prog_ns_per_run(p));
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_object_begin(w, "sampling");
	jw_double(w, "rate", snapshot__sample_rate(s));
	err = snapshot__p99_error(s, &err_stage);
	/* sampled, but no stage had enough events to bound its p99: unknown, not 0 */
	if (snapshot__sample_rate(s) < 1 && err_stage < 0)
		jw_null(w, "p99_error");
	else
		jw_double(w, "p99_error", err);
	if (err_stage >= 0 && stage_info(err_stage))
		jw_string(w, "p99_error_stage", stage_info(err_stage)->name);
	else
		jw_null(w, "p99_error_stage");
	jw_double(w, "budget_pct", s->budget_pct);
	if (s->budget_floor_pct > 0)
		jw_double(w, "floor_pct", s->budget_floor_pct);
	else
		jw_null(w, "floor_pct");
	jw_object_end(w);
	/* the deep tier: always on unless duty-cycled (deep_span_ns) */
	jw_object_begin(w, "deep");
	jw_double(w, "duty", s->deep_span_ns ? s->deep_duty : 1);
	/* what --budget gave up: the duty asked for, when it held the duty lower */
	jw_double(w, "duty_asked", s->deep_span_ns ? s->deep_duty_asked : 1);
	jw_double(w, "share", s->deep_span_ns ? (double)s->deep_ns / (double)s->deep_span_ns : 1);
	jw_uint(w, "windows", s->deep_windows);
	jw_uint(w, "triggered", s->deep_triggered);
	jw_object_end(w);
	jw_object_end(w);
}

void stage_report_self_print_text(const struct snapshot *s, FILE *f)
{
	double secs = snap_seconds(s), prog_s = (double)snap_prog_time_ns(s) / 1e9;
	double rate = snapshot__sample_rate(s);
	bool first = true;

	fprintf(f,
		"tailtrace itself: %.3f s CPU (%.2f %% of one CPU), %llu kB RSS; its programs "
		"%.3f s (%.2f %%)\n",
		s->self_cpu_s, pct_of_cpu(s, s->self_cpu_s), (unsigned long long)s->self_rss_kb,
		prog_s, pct_of_cpu(s, prog_s));
	if (s->budget_pct > 0)
		fprintf(f, "budget %.3g %% of one CPU: ", s->budget_pct);
	if (rate < 1 || s->budget_pct > 0) {
		int err_stage;
		double err = snapshot__p99_error(s, &err_stage);

		fprintf(f, "%.4g of flows traced (counts scaled up), ", rate);
		if (err_stage >= 0 && stage_info(err_stage))
			fprintf(f, "p99 error up to %s%.1f %% (%s; each stage's in its row)\n",
				err >= 1 ? ">= " : "~", 100.0 * err, stage_info(err_stage)->name);
		else if (rate < 1)
			fprintf(f, "no stage has %d sampled events (each p99's error in its row)\n",
				SNAP_P99_ERROR_MIN_SEEN);
		else
			fprintf(f, "p99 error 0 %%\n");
	}
	if (s->deep_span_ns)
		fprintf(f,
			"deep tier (per-packet and scheduler programs) ran %.1f %% of the time "
			"(duty %.3g %%%s; %u windows, %u by the tail trigger)\n",
			100.0 * (double)s->deep_ns / (double)s->deep_span_ns, 100.0 * s->deep_duty,
			s->deep_duty < s->deep_duty_asked ? ", lowered by --budget" : "",
			s->deep_windows, s->deep_triggered);
	/* the aim is 90 % of the budget: a floor above it cannot be sampled away */
	if (s->budget_pct > 0 && s->budget_floor_pct >= 0.9 * s->budget_pct)
		fprintf(f,
			"budget %s the floor: ~%.3g %% of one CPU with no flow traced "
			"(every hook still runs for each event of the selected ports)\n",
			s->budget_floor_pct >= s->budget_pct ? "under" : "close to",
			s->budget_floor_pct);
	for (size_t i = 0; i < s->nprogs; i++) {
		const struct snap_prog *p = &s->progs[i];

		if (!p->runs)
			continue;
		fprintf(f, "%s%s %.0f/s %.0f ns", first ? "per hook (events/s, ns/event): " : ", ",
			p->name, prog_runs_per_s(p, secs), prog_ns_per_run(p));
		first = false;
	}
	if (!first)
		fputc('\n', f);
}

void stage_report_print_text(const struct snapshot *s, const struct stage_report_opts *ro, FILE *f)
{
	char group[96], place[96], c[7][16];
	struct hist_summary sum;
	struct snap_hist *v;
	size_t n;

	int gw = 22; /* the group column: as wide as its longest label (pods are ~63) */

	v = selected(s, ro, &n);
	for (size_t i = 0; v && i < n; i++) {
		stage_report_group(&v[i].key, group, sizeof(group));
		if ((int)strlen(group) > gw)
			gw = (int)strlen(group);
	}
	fprintf(f, "%-12s %-11s %-*s %9s %9s %9s %9s %9s %9s  %s\n", "STAGE", "CLASS", gw, "GROUP",
		"COUNT", "MEAN", "P50", "P90", "P99", "P99.9", "MAX / PLACE");
	for (size_t i = 0; v && i < n; i++) {
		const struct stage_info *si = stage_info(v[i].key.stage);

		if (!si)
			continue;
		hist_summarize(&v[i].h, &sum);
		stage_report_group(&v[i].key, group, sizeof(group));
		stage_report_place(s, &v[i].key, place, sizeof(place));
		fmt_duration(c[0], 16, (double)((__u64)sum.mean_ns), DUR_TABLE);
		fmt_duration(c[1], 16, (double)(sum.p50_ns), DUR_TABLE);
		fmt_duration(c[2], 16, (double)(sum.p90_ns), DUR_TABLE);
		fmt_duration(c[3], 16, (double)(sum.p99_ns), DUR_TABLE);
		fmt_duration(c[4], 16, (double)(sum.p999_ns), DUR_TABLE);
		fmt_duration(c[5], 16, (double)(sum.max_ns), DUR_TABLE);
		fprintf(f, "%-12s %-11s %-*s %9llu %9s %9s %9s %9s %9s  %s%s%s", si->name,
			class_name(si->class), gw, group, (unsigned long long)sum.count, c[0], c[1],
			c[2], c[3], c[4], c[5], place[0] ? "  " : "", place);
		if (snapshot__sample_rate(s) < 1)
			fprintf(f, "  (p99 +-%.1f%%)", 100 * snapshot__hist_p99_error(s, &v[i]));
		fputc('\n', f);
		if (ro->chart)
			chart(&v[i].h, f);
	}
	if (!n)
		fprintf(f, "(no samples for the selected stages and filters)\n");
	free(v);
	stage_report_counters_print_text(s, f);
	nic_report_text(s, ro->duration_s, f);
}
