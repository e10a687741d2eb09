// SPDX-License-Identifier: GPL-2.0
/* Flight-recorder requests as Chrome trace-event JSON (opens in Perfetto UI and
 * chrome://tracing): one track per request, its attribution parts as complete events. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "export/exports.h"
#include "attr/attribution.h"
#include "lib/json.h"

/* Trace-event timestamps are microseconds, and viewers turn a fractional one into ns
 * through a double (times 1000, truncated or rounded by version): a child ending in the same
 * nanosecond as its parent could then end 1 ns after it, which they draw as an improperly
 * nested slice. Complete events are therefore laid on whole microseconds (exact in any
 * double): a request from the microsecond of its start to that of its end, rounded
 * outwards, its parts between boundaries rounded to the nearest microsecond inside it. The
 * exact ns figures are in args. */
static __u64 us_floor(__u64 ns)
{
	return ns / 1000;
}

static __u64 us_ceil(__u64 ns)
{
	return (ns + 999) / 1000;
}

/* An instant's time with exact ns decimals (instants nest in nothing). */
static void print_us(FILE *f, __u64 ns)
{
	fprintf(f, "%llu.%03llu", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
}

/* ts and dur of a complete event from whole microseconds */
static void print_span(FILE *f, __u64 from_us, __u64 to_us)
{
	fprintf(f, ",\"ts\":%llu,\"dur\":%llu", (unsigned long long)from_us,
		(unsigned long long)(to_us - from_us));
}

static int cmp_start(const void *a, const void *b)
{
	const struct req_event *x = *(const struct req_event *const *)a;
	const struct req_event *y = *(const struct req_event *const *)b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->sk_cookie < y->sk_cookie ? -1 : x->sk_cookie > y->sk_cookie;
}

static void comm_of(const struct req_event *e, char *buf, size_t len)
{
	char c[TT_COMM_LEN + 1];

	memcpy(c, e->comm, TT_COMM_LEN);
	c[TT_COMM_LEN] = '\0';
	snprintf(buf, len, "%s[%u]", c[0] ? c : "?", e->tgid);
}

static void peer_of(const struct req_event *e, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(e->family == AF_INET6 ? AF_INET6 : AF_INET, e->raddr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	if (e->family == AF_INET6)
		snprintf(buf, len, "[%s]:%u", a, e->rport);
	else
		snprintf(buf, len, "%s:%u", a, e->rport);
}

static void event_head(FILE *f, bool *first, const char *ph, const char *name, const char *cat,
		       __u32 pid, __u64 tid)
{
	fputs(*first ? "\n" : ",\n", f);
	*first = false;
	fprintf(f, "{\"ph\":\"%s\",\"name\":", ph);
	json_print_string(f, name);
	if (cat) {
		fputs(",\"cat\":", f);
		json_print_string(f, cat);
	}
	fprintf(f, ",\"pid\":%u,\"tid\":%llu", pid, (unsigned long long)tid);
}

/* The process's name (first of its requests) and the request's own track name and order. */
static void print_track_names(FILE *f, bool *first, const struct req_event *const *reqs, size_t i,
			      __u32 pid, __u64 tid, __u64 dur)
{
	const struct req_event *e = reqs[i];
	char buf[160], peer[64];

	/* sorted by process, then start: a process's requests are adjacent */
	if (!i || reqs[i - 1]->tgid != e->tgid) {
		comm_of(e, buf, sizeof(buf));
		event_head(f, first, "M", "process_name", NULL, pid, 0);
		fputs(",\"args\":{\"name\":", f);
		json_print_string(f, buf);
		fputs("}}", f);
	}
	peer_of(e, peer, sizeof(peer));
	snprintf(buf, sizeof(buf), "request %zu :%u %s %s (%.3f ms)", i + 1, e->lport,
		 e->role == ROLE_CLIENT ? "->" : "<-", peer, dur / 1e6);
	event_head(f, first, "M", "thread_name", NULL, pid, tid);
	fputs(",\"args\":{\"name\":", f);
	json_print_string(f, buf);
	fputs("}}", f);
	event_head(f, first, "M", "thread_sort_index", NULL, pid, tid);
	fprintf(f, ",\"args\":{\"sort_index\":%zu}}", i + 1);
}

/* The request's slice, with everything the request event knows as args. */
static void print_request_slice(FILE *f, bool *first, const struct req_event *e, __u32 pid,
				__u64 tid, __u64 dur)
{
	event_head(f, first, "X", "request", "request", pid, tid);
	print_span(f, us_floor(e->start_ns), us_ceil(e->start_ns + dur));
	fprintf(f,
		",\"args\":{\"latency_ns\":%llu,\"start_ns\":%llu,\"ttft_ns\":%llu,"
		"\"max_gap_ns\":%llu,\"bytes_in\":%u,\"bytes_out\":%u,\"chunks\":%u,\"retrans\":%u,"
		"\"retrans_rto\":%u,\"drops\":%u,\"ecn_ce\":%u,\"srtt_ns\":%llu,"
		"\"min_rtt_ns\":%llu,\"thread\":%u,\"cpu\":%u,\"sk_cookie\":%llu,\"role\":\"%s\","
		"\"loss_recovery\":%s,\"overlap\":%s,\"streamed\":%s,\"stream_id\":%u,"
		"\"partial\":%s}}",
		(unsigned long long)dur, (unsigned long long)e->start_ns,
		(unsigned long long)(e->first_resp_ns > e->start_ns ? e->first_resp_ns - e->start_ns
								    : 0),
		(unsigned long long)e->max_gap_ns, e->bytes_in, e->bytes_out, e->chunks, e->retrans,
		e->retrans_rto, e->drops, e->ecn_ce, (unsigned long long)e->srtt_ns,
		(unsigned long long)e->min_rtt_ns, e->tid, e->cpu, (unsigned long long)e->sk_cookie,
		e->role == ROLE_CLIENT ? "client" : "server",
		e->flags & REQ_F_LOSS_RECOVERY ? "true" : "false",
		e->flags & REQ_F_OVERLAP ? "true" : "false",
		e->flags & REQ_F_STREAM ? "true" : "false", e->stream_id,
		e->flags & REQ_F_PARTIAL ? "true" : "false");
}

/* Parts carry accumulated time, not when it happened: the attribution split sums to the
 * request's latency exactly, so laid end to end from the start they fill the request's
 * track; args say so. Each boundary is rounded to the nearest microsecond and kept inside
 * the request's slice, so the parts nest in it and touch without overlapping; a part of
 * under a microsecond may get no slice of its own. */
static void print_parts(FILE *f, bool *first, const struct req_event *e, __u32 pid, __u64 tid,
			__u64 dur)
{
	__u64 from = us_floor(e->start_ns), hi = us_ceil(e->start_ns + dur), at = e->start_ns;
	struct attr_split sp;

	attr_split_request(e, &sp);
	for (int part = 0; part < ATTR_PARTS; part++) {
		const struct attr_part_info *pi = attr_part_info(part);
		__u64 ns = sp.part_ns[part], to;

		if (!ns || !pi)
			continue;
		at += ns;
		to = (at + 500) / 1000;
		to = to < from ? from : to > hi ? hi : to;
		if (to == from)
			continue;
		event_head(f, first, "X", pi->stage, attr_class_name(pi->class), pid, tid);
		print_span(f, from, to);
		fprintf(f, ",\"args\":{\"part_ns\":%llu,\"placement\":\"accumulated\"}}",
			(unsigned long long)ns);
		from = to;
	}
}

int export_perfetto(FILE *f, const struct snapshot *s)
{
	const struct req_event **reqs;
	bool first = true;

	reqs = malloc((s->nslow ? s->nslow : 1) * sizeof(*reqs));
	if (!reqs)
		return -ENOMEM;
	for (size_t i = 0; i < s->nslow; i++)
		reqs[i] = &s->slow_reqs[i];
	qsort(reqs, s->nslow, sizeof(*reqs), cmp_start);

	fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"source\":\"tailtrace flight recorder\","
	      "\"clock\":\"CLOCK_MONOTONIC\",\"requests\":",
	      f);
	fprintf(f, "%zu,\"cut\":%llu},\"traceEvents\":[", s->nslow,
		(unsigned long long)s->slow_cut);
	for (size_t i = 0; i < s->nslow; i++) {
		const struct req_event *e = reqs[i];
		/* pid = the serving process; every request gets its own track (tid) so
		 * overlapping requests never share one */
		__u32 pid = e->tgid ? e->tgid : 1;
		__u64 tid = i + 1, dur = e->end_ns > e->start_ns ? e->end_ns - e->start_ns : 0;

		print_track_names(f, &first, reqs, i, pid, tid, dur);
		print_request_slice(f, &first, e, pid, tid, dur);
		print_parts(f, &first, e, pid, tid, dur);
		if (e->first_resp_ns > e->start_ns && e->first_resp_ns <= e->start_ns + dur) {
			event_head(f, &first, "i", "first response byte", "request", pid, tid);
			fputs(",\"s\":\"t\",\"ts\":", f);
			print_us(f, e->first_resp_ns);
			fputc('}', f);
		}
	}
	fputs("\n]}\n", f);
	free(reqs);
	return ferror(f) ? -EIO : 0;
}
