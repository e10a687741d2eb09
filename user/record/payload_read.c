// SPDX-License-Identifier: GPL-2.0
/* A frame's payload back into a snapshot (docs/record-format.md): the interval's
 * histograms, counters and attribution, the flight recorder's slow requests, the NIC
 * tables. Every length read is checked against what is left (struct cur). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "record/segment_int.h"
#include "attr/attribution.h"
#include "core/stages.h"
#include "lib/log.h"

struct cur {
	const __u8 *p;
	size_t len, off;
	bool bad; /* a read went past the end: the payload is malformed */
};

static __u64 get_le(struct cur *c, int n)
{
	__u64 v;

	if (c->bad || c->len - c->off < (size_t)n) {
		c->bad = true;
		return 0;
	}
	v = rec_get_le(c->p + c->off, n);
	c->off += n;
	return v;
}

static __u8 get_u8(struct cur *c)
{
	return (__u8)get_le(c, 1);
}
static __u16 get_u16(struct cur *c)
{
	return (__u16)get_le(c, 2);
}
static __u32 get_u32(struct cur *c)
{
	return (__u32)get_le(c, 4);
}
static __u64 get_u64(struct cur *c)
{
	return get_le(c, 8);
}

static void get_bytes(struct cur *c, void *dst, size_t n)
{
	if (c->bad || c->len - c->off < n) {
		c->bad = true;
		memset(dst, 0, n);
		return;
	}
	memcpy(dst, c->p + c->off, n);
	c->off += n;
}

/* Reads a str8 into dst (NUL-terminated, truncated to dstlen - 1). */
static void get_str8(struct cur *c, char *dst, size_t dstlen)
{
	size_t n = get_u8(c), keep = n < dstlen - 1 ? n : dstlen - 1;

	if (c->bad || c->len - c->off < n) {
		c->bad = true;
		dst[0] = '\0';
		return;
	}
	memcpy(dst, c->p + c->off, keep);
	dst[keep] = '\0';
	c->off += n;
}

static size_t remaining(const struct cur *c)
{
	return c->bad ? 0 : c->len - c->off;
}

#define HIST_REC_MIN (2 + 1 + 16 + 8 + 32 + 24 + 2) /* smallest encoded histogram */

/* The histogram key of a record; false when its stage or grouping is unknown here. */
static bool decode_hist_key(struct cur *c, struct hist_key *k)
{
	char stage[256], by[256];
	int st, gb;

	memset(k, 0, sizeof(*k));
	get_str8(c, stage, sizeof(stage));
	get_str8(c, by, sizeof(by));
	k->family = get_u8(c);
	k->ifindex = get_u32(c);
	k->qdisc_handle = get_u32(c);
	k->netns = get_u32(c);
	k->tgid = get_u32(c);
	k->id = get_u64(c);
	get_bytes(c, k->addr, 16);
	get_bytes(c, k->comm, 16);
	st = stage_by_recorded_name(stage);
	gb = group_by_parse(by);
	k->stage = (__u16)(st < 0 ? 0 : st);
	k->by = (__u8)(gb < 0 ? 0 : gb);
	return st >= 0 && gb >= 0;
}

/* One histogram record, added to the interval's histogram of its key: a key seen twice is
 * merged, not appended, so ~100 bytes of input (less behind zlib) cannot each cost a
 * 5.9 KB histogram. */
static int decode_hist(struct cur *c, struct snapshot *s)
{
	struct hist_key k;
	struct hist *h = NULL;
	__u64 count, sum, max;
	bool known;
	__u16 nz;

	known = decode_hist_key(c, &k);
	count = get_u64(c);
	sum = get_u64(c);
	max = get_u64(c);
	nz = get_u16(c);
	if (c->bad || (size_t)nz * 10 > remaining(c))
		return -EBADMSG;
	/* a stage this build does not know (recorded by a newer one) cannot be shown */
	if (known) {
		if (!(h = snapshot__hist(s, &k)))
			return -ENOMEM;
		if (s->nhists > REC_INTERVAL_HISTS_MAX)
			return -E2BIG;
		h->count += count;
		h->sum_ns += sum;
		if (max > h->max_ns)
			h->max_ns = max;
	}
	for (__u16 i = 0; i < nz; i++) {
		__u16 slot = get_u16(c);
		__u64 v = get_u64(c);

		if (slot >= HIST_SLOTS)
			return -EBADMSG;
		if (h)
			h->slots[slot] += v;
	}
	return c->bad ? -EBADMSG : 0;
}

/* A named scalar of the snapshot frame; names this build does not know are skipped. */
static void named_scalar(struct snapshot *s, const char *name, __u64 v)
{
	if (!strcmp(name, "pkt_unmatched"))
		s->pkt_unmatched = v;
	else if (!strcmp(name, "sample_rate_ppb"))
		s->sample_rate = (double)v / 1e9;
	else if (!strcmp(name, "budget_pct_ppb"))
		s->budget_pct = (double)v / 1e9;
	else if (!strcmp(name, "budget_floor_pct_ppb"))
		s->budget_floor_pct = (double)v / 1e9;
	else if (!strcmp(name, "deep_duty_ppb"))
		s->deep_duty = (double)v / 1e9;
	else if (!strcmp(name, "deep_duty_asked_ppb"))
		s->deep_duty_asked = (double)v / 1e9;
	else if (!strcmp(name, "deep_ns"))
		s->deep_ns = v;
	else if (!strcmp(name, "deep_span_ns"))
		s->deep_span_ns = v;
	else if (!strcmp(name, "deep_windows"))
		s->deep_windows = v > UINT32_MAX ? UINT32_MAX : (__u32)v;
	else if (!strcmp(name, "deep_triggered"))
		s->deep_triggered = v > UINT32_MAX ? UINT32_MAX : (__u32)v;
	else if (!strncmp(name, "prog_runs.", 10))
		snapshot__add_prog(s, name + 10, v, 0);
	else if (!strncmp(name, "prog_ns.", 8))
		snapshot__add_prog(s, name + 8, 0, v);
}

static int decode_snapshot(struct cur *c, struct snapshot *s)
{
	char name[256];
	__u32 n, attr_len;
	__u64 bits;
	int err;

	s->start_ns = get_u64(c);
	s->end_ns = get_u64(c);
	s->hist_evicted = get_u64(c);
	s->hist_live = get_u64(c);
	s->events_lost = get_u64(c);
	s->slow_cut = get_u64(c);
	s->slow_threshold_ns = get_u64(c);
	bits = get_u64(c);
	memcpy(&s->self_cpu_s, &bits, sizeof(bits));
	s->self_rss_kb = get_u64(c);
	n = get_u16(c);
	for (__u32 i = 0; i < n && !c->bad; i++) {
		__u64 v;
		int id;

		get_str8(c, name, sizeof(name));
		v = get_u64(c);
		id = rec_counter_by_name(name);
		if (id >= 0)
			s->counters[id] += v;
	}
	n = get_u16(c);
	for (__u32 i = 0; i < n && !c->bad; i++) {
		__u16 reason = get_u16(c);
		__u64 v = get_u64(c);

		/* reasons beyond the tracked range are summed in the last slot, as in BPF */
		s->drop_reasons[reason < TT_DROP_REASONS ? reason : TT_DROP_REASONS - 1] += v;
	}
	n = get_u32(c);
	if (n > remaining(c) / 9)
		return -EBADMSG;
	for (__u32 i = 0; i < n && !c->bad; i++) {
		struct dev_key k;

		k.netns = get_u32(c);
		k.ifindex = get_u32(c);
		get_str8(c, name, 16);
		if (!c->bad && (err = snapshot__add_dev(s, &k, name)))
			return err;
		if (s->ndevs > REC_INTERVAL_DEVS_MAX)
			return -E2BIG;
	}
	n = get_u32(c);
	if (n > remaining(c) / HIST_REC_MIN)
		return -EBADMSG;
	for (__u32 i = 0; i < n && !c->bad; i++)
		if ((err = decode_hist(c, s)))
			return err;
	attr_len = get_u32(c);
	if (c->bad || attr_len > remaining(c))
		return -EBADMSG;
	if (attr_len) {
		/* the blob passed the frame CRC: a decode failure means an attribution
		 * encoding this build does not read, which loses attribution, not the frame */
		if (attr_agg__decode(&s->attr, c->p + c->off, attr_len)) {
			s->attr = NULL;
			tt_warn("warning: attribution data of the interval at %llu not readable "
				"by this version, skipped",
				(unsigned long long)s->start_ns);
		}
		c->off += attr_len;
	}
	(void)get_u32(c); /* slow requests announced; fewer arrive when the tail was torn */
	n = get_u16(c);
	for (__u32 i = 0; i < n && !c->bad; i++) {
		__u64 v;

		get_str8(c, name, sizeof(name));
		v = get_u64(c);
		named_scalar(s, name, v);
	}
	return c->bad ? -EBADMSG : 0;
}

#define EVENT_REC_FIXED (8 * 8 + 13 * 4 + 2 * 2 + 2 + 32)

/* The trailer after a flight frame's n requests: per request its flags, protocol and
 * HTTP/2 stream (REC_EVENT_EXTRA bytes or more). A frame written before the trailer ends
 * at the requests: they keep zero there. */
static int decode_flight_extra(struct cur *c, struct req_event *e, __u32 n)
{
	__u8 len;

	if (!remaining(c))
		return 0;
	len = get_u8(c);
	if (len < REC_EVENT_EXTRA || (size_t)n * len > remaining(c))
		return -EBADMSG;
	for (__u32 i = 0; i < n; i++) {
		e[i].flags = get_u8(c);
		e[i].proto = get_u8(c);
		e[i].stream_id = get_u32(c);
		for (__u8 k = REC_EVENT_EXTRA; k < len; k++)
			(void)get_u8(c);
	}
	return c->bad ? -EBADMSG : 0;
}

static int decode_flight(struct cur *c, struct snapshot *s)
{
	int cols[256];
	char name[256];
	__u32 n;
	__u8 ncols;

	s->start_ns = get_u64(c);
	s->end_ns = get_u64(c);
	ncols = get_u8(c);
	for (int i = 0; i < ncols; i++) {
		get_str8(c, name, sizeof(name));
		cols[i] = stage_by_recorded_name(name);
		if (cols[i] >= TT_REQ_STAGES)
			cols[i] = -1;
	}
	n = get_u32(c);
	if (c->bad || n > REC_FLIGHT_PER_FRAME || n > remaining(c) / (EVENT_REC_FIXED + 8u * ncols))
		return -EBADMSG;
	if (rec_grow_array((void **)&s->slow_reqs, &s->slow_cap, s->nslow + n,
			   sizeof(*s->slow_reqs)))
		return -ENOMEM;
	for (__u32 i = 0; i < n && !c->bad; i++) {
		struct req_event *e = &s->slow_reqs[s->nslow];

		memset(e, 0, sizeof(*e));
		e->sk_cookie = get_u64(c);
		e->start_ns = get_u64(c);
		e->first_resp_ns = get_u64(c);
		e->end_ns = get_u64(c);
		e->max_gap_ns = get_u64(c);
		e->srtt_ns = get_u64(c);
		e->min_rtt_ns = get_u64(c);
		e->cgroup_id = get_u64(c);
		for (int j = 0; j < ncols; j++) {
			__u64 v = get_u64(c);

			if (cols[j] >= 0)
				e->stage_ns[cols[j]] = v;
		}
		e->tgid = get_u32(c);
		e->tid = get_u32(c);
		e->chunks = get_u32(c);
		e->retrans = get_u32(c);
		e->retrans_rto = get_u32(c);
		e->drops = get_u32(c);
		e->ecn_ce = get_u32(c);
		e->ifindex = get_u32(c);
		e->qdisc_handle = get_u32(c);
		e->netns = get_u32(c);
		e->cpu = get_u32(c);
		e->bytes_in = get_u32(c);
		e->bytes_out = get_u32(c);
		e->lport = get_u16(c);
		e->rport = get_u16(c);
		e->family = get_u8(c);
		e->role = get_u8(c);
		get_bytes(c, e->raddr, 16);
		get_bytes(c, e->comm, 16);
		if (!c->bad)
			s->nslow++;
	}
	return c->bad ? -EBADMSG : decode_flight_extra(c, s->slow_reqs + s->nslow - n, n);
}

/* Column names of a NIC frame section mapped to the known ones (-1: a later column,
 * skipped). Returns the column count. */
static int nic_columns(struct cur *c, const char *const *known, int nknown, int cols[256])
{
	char name[256];
	int n = get_u8(c);

	for (int i = 0; i < n; i++) {
		get_str8(c, name, sizeof(name));
		cols[i] = -1;
		for (int k = 0; k < nknown; k++)
			if (!strcmp(name, known[k]))
				cols[i] = k;
	}
	return n;
}

/* Reads one row's n columns into v[] by their known index. */
static void nic_row(struct cur *c, const int *cols, int n, __u64 *v)
{
	for (int i = 0; i < n; i++) {
		__u64 x = get_u64(c);

		if (cols[i] >= 0)
			v[cols[i]] = x;
	}
}

static int decode_nic(struct cur *c, struct snapshot *s)
{
	int cols[256], ncols, err;
	__u32 n;

	s->start_ns = get_u64(c);
	s->end_ns = get_u64(c);
	ncols = nic_columns(c, rec_napi_cols, REC_NAPI_COLS, cols);
	n = get_u32(c);
	if (c->bad || n > remaining(c) / (12 + 8u * ncols))
		return -EBADMSG;
	for (__u32 i = 0; i < n && !c->bad; i++) {
		struct napi_key k = { 0 };
		__u64 v[REC_NAPI_COLS] = { 0 };
		struct napi_count cnt;

		k.netns = get_u32(c);
		k.ifindex = get_u32(c);
		k.napi_id = get_u32(c);
		nic_row(c, cols, ncols, v);
		cnt = (struct napi_count){ .polls = v[0], .exhausted = v[1], .work = v[2] };
		if (!c->bad && (err = snapshot__add_napi(s, &k, &cnt)))
			return err;
		if (s->nnapi > REC_INTERVAL_NAPI_MAX)
			return -E2BIG;
	}
	ncols = nic_columns(c, rec_softnet_cols, REC_SOFTNET_COLS, cols);
	n = get_u32(c);
	if (c->bad || n > remaining(c) / (4 + 8u * ncols))
		return -EBADMSG;
	for (__u32 i = 0; i < n && !c->bad; i++) {
		struct snap_softnet r = { 0 };
		__u64 v[REC_SOFTNET_COLS] = { 0 };

		r.cpu = get_u32(c);
		nic_row(c, cols, ncols, v);
		r.processed = v[0];
		r.dropped = v[1];
		r.time_squeeze = v[2];
		r.received_rps = v[3];
		r.flow_limit = v[4];
		if (!c->bad && (err = snapshot__add_softnet(s, &r)))
			return err;
		if (s->nsoftnet > REC_INTERVAL_SOFTNET_MAX)
			return -E2BIG;
	}
	return c->bad ? -EBADMSG : 0;
}

int rec_payload_decode(int type, const void *buf, size_t len, struct snapshot *s)
{
	struct cur c = { .p = buf, .len = len };

	switch (type) {
	case REC_FRAME_SNAPSHOT:
		return decode_snapshot(&c, s);
	case REC_FRAME_FLIGHT:
		return decode_flight(&c, s);
	case REC_FRAME_NIC:
		return decode_nic(&c, s);
	default:
		return -EINVAL;
	}
}
