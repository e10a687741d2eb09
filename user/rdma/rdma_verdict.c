// SPDX-License-Identifier: GPL-2.0
/* The RDMA part of `explain`: a tail, then the evidence that names its class, in a fixed
 * order (docs/attribution.md, "RDMA transfers"). */
#include <infiniband/verbs.h>
#include <string.h>
#include "core/histogram.h"
#include "core/stages.h"
#include "lib/format.h"
#include "lib/json.h"
#include "rdma/rdma_verdict.h"

void rdma_verdict_params__default(struct rdma_verdict_params *p)
{
	p->min_count = 20;
	p->tail_ratio = 1.5;
	p->tail_min_ns = 10000;
	p->wake_share = 0.25;
	p->wake_lead = 0.5;
	p->wake_min_ns = 5000;
}

const char *rdma_family_name(enum rdma_family f)
{
	return f == RDMA_FAM_UCX ? "ucx" : "verbs";
}

/* Completions that failed because the transport gave up: retries exhausted, no response
 * in time (verbs); timeouts, resets, unreachable peers, link and endpoint failures
 * (UCX's ucs_status_t, stored negated). A flush or an access error is the application's. */
static bool retry_failure(enum rdma_family fam, __u8 status)
{
	if (fam == RDMA_FAM_VERBS)
		return status == IBV_WC_RETRY_EXC_ERR || status == IBV_WC_RNR_RETRY_EXC_ERR ||
		       status == IBV_WC_RESP_TIMEOUT_ERR || status == IBV_WC_BAD_RESP_ERR;
	return status == 3 /* IO_ERROR */ || status == 6 /* UNREACHABLE */ ||
	       status == 20 /* TIMED_OUT */ || status == 24 /* NOT_CONNECTED */ ||
	       status == 25 /* CONNECTION_RESET */ ||
	       (status >= 40 && status <= 89) /* link and endpoint failures */;
}

static __u16 family_stage(enum rdma_family fam)
{
	return fam == RDMA_FAM_UCX ? STAGE_RDMA_UCX : STAGE_RDMA_WR;
}

static const struct hist *row_hist(const struct rdma_row *r, bool total)
{
	return total ? &r->total : &r->win;
}

static __u64 count_from_slot(const struct hist *h, __u32 slot)
{
	__u64 n = 0;

	for (__u32 s = slot; s < HIST_SLOTS; s++)
		n += h->slots[s];
	return n;
}

static void place_label(const struct rdma_row *r, enum rdma_family fam, char *b, size_t n)
{
	if (fam == RDMA_FAM_UCX)
		snprintf(b, n, "pid %u ep %#llx %s", r->key.tgid,
			 (unsigned long long)((__u64)r->key.peer_qpn << 32 | r->key.qpn),
			 rdma_ucx_op_name(r->key.opcode));
	else
		snprintf(b, n, "pid %u qp %#x -> peer qp %#x %s", r->key.tgid, r->key.qpn,
			 r->key.peer_qpn, rdma_opcode_name(r->key.opcode));
}

/* The place holding most of the transfers in the p99's bucket and above. */
static void tail_place(const struct rdma_read *rd, bool total, enum rdma_family fam,
		       struct rdma_verdict *v)
{
	__u32 slot = hist_slot(v->p99_ns);
	const struct rdma_row *best = NULL;
	__u64 best_n = 0;

	v->tail_total = 0;
	for (size_t i = 0; i < rd->nrows; i++) {
		const struct rdma_row *r = &rd->rows[i];
		__u64 n;

		if (r->key.stage != family_stage(fam) || r->key.status)
			continue;
		n = count_from_slot(row_hist(r, total), slot);
		v->tail_total += n;
		if (n > best_n) {
			best_n = n;
			best = r;
		}
	}
	if (best) {
		place_label(best, fam, v->where, sizeof(v->where));
		v->where_tail = best_n;
	}
}

static void gather(const struct rdma_read *rd, bool total, enum rdma_family fam, struct hist *ok,
		   struct hist *wake, struct rdma_verdict *v)
{
	memset(ok, 0, sizeof(*ok));
	memset(wake, 0, sizeof(*wake));
	for (size_t i = 0; i < rd->nrows; i++) {
		const struct rdma_row *r = &rd->rows[i];
		const struct hist *h = row_hist(r, total);

		if (r->key.stage == STAGE_RDMA_CQ_EVENT && fam == RDMA_FAM_VERBS) {
			hist_add(wake, h);
		} else if (r->key.stage == family_stage(fam) && !r->key.status) {
			hist_add(ok, h);
		} else if (r->key.stage == family_stage(fam)) {
			v->failed += h->count;
			if (retry_failure(fam, r->key.status))
				v->retry_failed += h->count;
		}
	}
}

static void fabric_of(const struct rdma_window_call *call, struct rdma_verdict *v)
{
	if (!call)
		return;
	v->counters = true;
	v->fabric = call->call;
	v->congestion_events = call->congestion_events;
	v->transport_events = call->transport_events;
	if (call->nev)
		snprintf(v->fabric_top, sizeof(v->fabric_top), "%s +%llu", call->ev[0].name,
			 (unsigned long long)call->ev[0].delta);
}

static void compute_verdict(struct rdma_verdict *v)
{
	char w[32];

	fmt_duration(w, sizeof(w), (double)v->wake_p99_ns, DUR_PROSE);
	v->cls = VERDICT_COMPUTE;
	snprintf(v->rule, sizeof(v->rule),
		 "waiters took %s (p99) to run after their completion event: %.0f%% of the "
		 "tail's excess",
		 w, 100 * v->wake_share);
}

/* The fabric counters of one kind rose in the window: that kind's class. */
static void counter_verdict(struct rdma_verdict *v, enum attr_verdict_class cls, const char *kind,
			    __u64 events)
{
	v->cls = cls;
	snprintf(v->rule, sizeof(v->rule), "%s counters rose in the window (%llu events%s%s)", kind,
		 (unsigned long long)events, v->fabric_top[0] ? ", " : "", v->fabric_top);
}

/* The class of a tail, from the evidence in a fixed order: a wake-up that is most of the
 * excess (measured time beats counts), transfers failing on transport retries, the fabric
 * counters' call (both: the larger count of risen events), a smaller but real wake-up;
 * else the time is where this host cannot see. */
static void decide(const struct rdma_verdict_params *p, struct rdma_verdict *v)
{
	bool wake =
		v->wake_count && v->wake_p99_ns >= p->wake_min_ns && v->wake_share >= p->wake_share;
	bool cong = v->fabric == RDMA_CALL_CONGESTION || v->fabric == RDMA_CALL_BOTH;
	bool trans = v->fabric == RDMA_CALL_TRANSPORT || v->fabric == RDMA_CALL_BOTH;

	if (wake && v->wake_share >= p->wake_lead) {
		compute_verdict(v);
	} else if (v->retry_failed) {
		v->cls = VERDICT_TRANSPORT;
		snprintf(v->rule, sizeof(v->rule),
			 "%llu transfers failed on transport retries or timeouts",
			 (unsigned long long)v->retry_failed);
	} else if (cong && (!trans || v->congestion_events >= v->transport_events)) {
		counter_verdict(v, VERDICT_CONGESTION, "congestion", v->congestion_events);
	} else if (trans) {
		counter_verdict(v, VERDICT_TRANSPORT, "transport", v->transport_events);
	} else if (wake) {
		compute_verdict(v);
	} else {
		v->cls = VERDICT_UNATTRIBUTED;
		snprintf(v->rule, sizeof(v->rule),
			 "no fabric counter rose%s, no transfer failed on a retry, waiters ran "
			 "in time: the time is in the adapter, the fabric or the peer",
			 v->counters ? "" : " (no RDMA device: no counters)");
	}
}

bool rdma_verdict_judge(const struct rdma_read *rd, bool total, enum rdma_family fam,
			const struct rdma_window_call *call, const struct rdma_verdict_params *p,
			struct rdma_verdict *v)
{
	struct hist ok, wake;
	char a[32], b[32], d[32];
	__u64 excess;

	memset(v, 0, sizeof(*v));
	v->family = fam;
	gather(rd, total, fam, &ok, &wake, v);
	if (!ok.count && !v->failed)
		return false;
	v->count = ok.count;
	v->p50_ns = hist_quantile(&ok, 0.5);
	v->p99_ns = hist_quantile(&ok, 0.99);
	v->wake_count = wake.count;
	v->wake_p99_ns = hist_quantile(&wake, 0.99);
	excess = v->p99_ns > v->p50_ns ? v->p99_ns - v->p50_ns : 0;
	v->wake_share = excess ? (double)v->wake_p99_ns / (double)excess : 0;
	fabric_of(call, v);
	fmt_duration(a, sizeof(a), (double)v->p99_ns, DUR_PROSE);
	fmt_duration(b, sizeof(b), (double)v->p50_ns, DUR_PROSE);
	fmt_duration(d, sizeof(d), (double)p->tail_min_ns, DUR_PROSE);
	if (v->count < p->min_count) {
		v->cls = VERDICT_NONE;
		snprintf(v->rule, sizeof(v->rule), "%llu successful transfers (needs >= %llu)",
			 (unsigned long long)v->count, (unsigned long long)p->min_count);
		return true;
	}
	tail_place(rd, total, fam, v);
	v->tail = v->p99_ns >= p->tail_ratio * (double)v->p50_ns && excess >= p->tail_min_ns;
	if (!v->tail) {
		v->cls = VERDICT_NONE;
		snprintf(v->rule, sizeof(v->rule),
			 "p99 %s vs p50 %s (x%.2f): no tail (needs >= +%s and >= x%.2f)", a, b,
			 v->p50_ns ? (double)v->p99_ns / (double)v->p50_ns : 0.0, d, p->tail_ratio);
		return true;
	}
	decide(p, v);
	return true;
}

void rdma_verdict__print_text(const struct rdma_verdict *v, FILE *f)
{
	char a[32], b[32], w[32];

	fmt_duration(a, sizeof(a), (double)v->p50_ns, DUR_PROSE);
	fmt_duration(b, sizeof(b), (double)v->p99_ns, DUR_PROSE);
	fprintf(f, "rdma %s verdict: %s\n", rdma_family_name(v->family), attr_verdict_name(v->cls));
	fprintf(f, "  %llu transfers, p50 %s, p99 %s; %llu failed (%llu on transport retries)\n",
		(unsigned long long)v->count, a, b, (unsigned long long)v->failed,
		(unsigned long long)v->retry_failed);
	if (v->counters)
		fprintf(f, "  fabric counters: %s (congestion %llu, transport %llu events%s%s)\n",
			rdma_call_name(v->fabric), (unsigned long long)v->congestion_events,
			(unsigned long long)v->transport_events, v->fabric_top[0] ? "; top " : "",
			v->fabric_top);
	else
		fprintf(f, "  fabric counters: none (no RDMA device)\n");
	if (v->wake_count) {
		fmt_duration(w, sizeof(w), (double)v->wake_p99_ns, DUR_PROSE);
		fprintf(f, "  completion-event waiters: %llu wake-ups, p99 %s\n",
			(unsigned long long)v->wake_count, w);
	}
	if (v->where[0])
		fprintf(f, "  where: %s (%llu of %llu transfers at the p99 or above)\n", v->where,
			(unsigned long long)v->where_tail, (unsigned long long)v->tail_total);
	fprintf(f, "  rule: %s\n", v->rule);
}

void rdma_verdict__print_json(const struct rdma_verdict *v, struct json_writer *w)
{
	jw_object_begin(w, NULL);
	jw_string(w, "family", rdma_family_name(v->family));
	jw_string(w, "class", attr_verdict_name(v->cls));
	jw_bool(w, "tail", v->tail);
	jw_uint(w, "count", v->count);
	jw_uint(w, "p50_ns", v->p50_ns);
	jw_uint(w, "p99_ns", v->p99_ns);
	jw_uint(w, "failed", v->failed);
	jw_uint(w, "retry_failed", v->retry_failed);
	jw_object_begin(w, "fabric");
	jw_bool(w, "available", v->counters);
	jw_string(w, "call", rdma_call_name(v->fabric));
	jw_uint(w, "congestion_events", v->congestion_events);
	jw_uint(w, "transport_events", v->transport_events);
	jw_string(w, "top", v->fabric_top);
	jw_object_end(w);
	jw_object_begin(w, "wake");
	jw_uint(w, "count", v->wake_count);
	jw_uint(w, "p99_ns", v->wake_p99_ns);
	jw_double(w, "share_of_excess", v->wake_share);
	jw_object_end(w);
	jw_string(w, "where", v->where);
	jw_uint(w, "where_tail", v->where_tail);
	jw_uint(w, "tail_transfers", v->tail_total);
	jw_string(w, "rule", v->rule);
	jw_object_end(w);
}
