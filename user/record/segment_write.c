// SPDX-License-Identifier: GPL-2.0
/* Segment encoding for `record` (docs/record-format.md): the header, and each interval as
 * a zlib-compressed, CRC-checked snapshot frame and its flight-recorder frames. Every
 * multi-byte field is written byte by byte in little-endian order, never as a raw struct,
 * so padding and host byte order never reach the disk. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "record/segment_int.h"
#include "attr/attribution.h"
#include "core/stages.h"
#include "lib/util.h"

/* The stable record names, from bpf/tailtrace.h's TT_COUNTERS. */
#define COUNTER_RECORD_NAME(id, rec, json) [CNT_##id] = rec,
static const char *const counter_names[CNT__MAX] = { TT_COUNTERS(COUNTER_RECORD_NAME) };

const char *rec_counter_name(int id)
{
	if (id < 0 || id >= CNT__MAX)
		return NULL;
	return counter_names[id];
}

int rec_counter_by_name(const char *name)
{
	for (int i = 0; i < CNT__MAX; i++)
		if (!strcmp(counter_names[i], name))
			return i;
	return -ENOENT;
}

void rec_buf__free(struct rec_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static __u8 *buf_room(struct rec_buf *b, size_t n)
{
	size_t ncap;
	__u8 *p;

	if (b->err)
		return NULL;
	if (b->len + n > b->cap) {
		ncap = b->cap ? b->cap : 256;
		while (ncap < b->len + n)
			ncap *= 2;
		p = realloc(b->p, ncap);
		if (!p) {
			b->err = -ENOMEM;
			return NULL;
		}
		b->p = p;
		b->cap = ncap;
	}
	p = b->p + b->len;
	b->len += n;
	return p;
}

static void put_le(struct rec_buf *b, __u64 v, int n)
{
	__u8 *p = buf_room(b, n);

	for (int i = 0; p && i < n; i++)
		p[i] = (__u8)(v >> (8 * i));
}

static void put_u8(struct rec_buf *b, __u8 v)
{
	put_le(b, v, 1);
}
static void put_u16(struct rec_buf *b, __u16 v)
{
	put_le(b, v, 2);
}
static void put_u32(struct rec_buf *b, __u32 v)
{
	put_le(b, v, 4);
}
static void put_u64(struct rec_buf *b, __u64 v)
{
	put_le(b, v, 8);
}

static void put_bytes(struct rec_buf *b, const void *src, size_t n)
{
	__u8 *p = buf_room(b, n);

	if (p && n)
		memcpy(p, src, n);
}

/* A short string: u8 length then the bytes, no NUL. */
static void put_str8(struct rec_buf *b, const char *s, size_t max)
{
	size_t n = strnlen(s, max);

	if (n > 255)
		n = 255;
	put_u8(b, (__u8)n);
	put_bytes(b, s, n);
}

static void set_le(__u8 *p, __u64 v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (__u8)(v >> (8 * i));
}

int rec_header_encode(struct rec_buf *out, const struct rec_header *h)
{
	size_t start = out->len, hostlen = strnlen(h->host, REC_HOST_MAX);
	__u32 crc;

	put_bytes(out, REC_MAGIC, REC_MAGIC_LEN);
	put_u16(out, h->version ? h->version : REC_VERSION);
	put_u16(out, (__u16)(REC_HDR_FIXED + hostlen + 4));
	put_u32(out, h->flags);
	put_u64(out, h->created_ns);
	put_u64(out, h->seq);
	put_u8(out, h->hist_sub_bits);
	put_u8(out, h->hist_max_log2);
	put_u16(out, (__u16)hostlen);
	put_bytes(out, h->host, hostlen);
	if (out->err)
		return out->err;
	crc = crc32(0, out->p + start, (uInt)(out->len - start));
	put_u32(out, crc);
	return out->err;
}

/* zlib level 1: record compresses every interval on the traced host, where level 6 cost
 * about three times the CPU for about 15 % smaller frames. Readers do not care which. */
#define REC_ZLIB_LEVEL Z_BEST_SPEED

/* Compresses raw into one frame appended to out. */
static int frame_append(struct rec_buf *out, int type, const struct rec_buf *raw)
{
	uLongf clen = compressBound(raw->len);
	size_t start = out->len;
	__u8 *hdr, *payload;
	__u32 crc;

	if (raw->err)
		return raw->err;
	if (raw->len > REC_MAX_RAW)
		return -E2BIG;
	if (!buf_room(out, REC_FRAME_HDR + clen))
		return out->err;
	hdr = out->p + start;
	payload = hdr + REC_FRAME_HDR;
	if (compress2(payload, &clen, raw->p ? raw->p : (const Bytef *)"", raw->len,
		      REC_ZLIB_LEVEL) != Z_OK) {
		out->len = start;
		return -EIO;
	}
	out->len = start + REC_FRAME_HDR + clen;
	hdr[0] = (__u8)type;
	hdr[1] = 0;
	set_le(hdr + 2, 0, 2);
	set_le(hdr + 4, clen, 4);
	set_le(hdr + 8, raw->len, 4);
	crc = crc32(0, hdr, 12);
	crc = crc32(crc, payload, (uInt)clen);
	set_le(hdr + 12, crc, 4);
	return 0;
}

static void put_double(struct rec_buf *b, double d)
{
	__u64 bits;

	memcpy(&bits, &d, sizeof(bits));
	put_u64(b, bits);
}

static void encode_hist(struct rec_buf *b, const struct snap_hist *sh)
{
	const struct stage_info *si = stage_info(sh->key.stage);
	const struct hist *h = &sh->h;
	__u16 nz = 0;

	put_str8(b, si ? si->name : "?", 64);
	put_str8(b, group_by_name(sh->key.by), 64);
	put_u8(b, sh->key.family);
	put_u32(b, sh->key.ifindex);
	put_u32(b, sh->key.qdisc_handle);
	put_u32(b, sh->key.netns);
	put_u32(b, sh->key.tgid);
	put_u64(b, sh->key.id);
	put_bytes(b, sh->key.addr, 16);
	put_bytes(b, sh->key.comm, 16);
	put_u64(b, h->count);
	put_u64(b, h->sum_ns);
	put_u64(b, h->max_ns);
	for (__u32 i = 0; i < HIST_SLOTS; i++)
		nz += h->slots[i] != 0;
	put_u16(b, nz);
	for (__u32 i = 0; i < HIST_SLOTS; i++) {
		if (!h->slots[i])
			continue;
		put_u16(b, (__u16)i);
		put_u64(b, h->slots[i]);
	}
}

/* A named fraction as a whole number of billionths (named scalars are integers). */
static void put_scaled(struct rec_buf *b, const char *name, double v)
{
	put_str8(b, name, 64);
	put_u64(b, v > 0 ? (__u64)(v * 1e9 + 0.5) : 0);
}

static int encode_snapshot(struct rec_buf *b, const struct snapshot *s)
{
	__u16 ndrop = 0;
	void *attr = NULL;
	size_t attr_len = 0;
	int err;

	put_u64(b, s->start_ns);
	put_u64(b, s->end_ns);
	put_u64(b, s->hist_evicted);
	put_u64(b, s->hist_live);
	put_u64(b, s->events_lost);
	put_u64(b, s->slow_cut);
	put_u64(b, s->slow_threshold_ns);
	put_double(b, s->self_cpu_s);
	put_u64(b, s->self_rss_kb);
	put_u16(b, CNT__MAX);
	for (int i = 0; i < CNT__MAX; i++) {
		put_str8(b, rec_counter_name(i), 64);
		put_u64(b, s->counters[i]);
	}
	for (int i = 0; i < TT_DROP_REASONS; i++)
		ndrop += s->drop_reasons[i] != 0;
	put_u16(b, ndrop);
	for (int i = 0; i < TT_DROP_REASONS; i++) {
		if (!s->drop_reasons[i])
			continue;
		put_u16(b, (__u16)i);
		put_u64(b, s->drop_reasons[i]);
	}
	put_u32(b, (__u32)s->ndevs);
	for (size_t i = 0; i < s->ndevs; i++) {
		put_u32(b, s->devs[i].key.netns);
		put_u32(b, s->devs[i].key.ifindex);
		put_str8(b, s->devs[i].name, sizeof(s->devs[i].name));
	}
	put_u32(b, (__u32)s->nhists);
	for (size_t i = 0; i < s->nhists; i++)
		encode_hist(b, &s->hists[i]);
	if (s->attr) {
		err = attr_agg__encode(s->attr, &attr, &attr_len);
		if (err)
			return err;
		if (attr_len > REC_MAX_RAW) {
			free(attr);
			return -E2BIG;
		}
	}
	put_u32(b, (__u32)attr_len);
	put_bytes(b, attr, attr_len);
	free(attr);
	put_u32(b, (__u32)s->nslow);
	/* named scalars: fields added to struct snapshot later go here, readers skip names
	 * they do not know, so no version bump is needed for them */
	put_u16(b, (__u16)(10 + 2 * s->nprogs));
	put_str8(b, "pkt_unmatched", 64);
	put_u64(b, s->pkt_unmatched);
	put_scaled(b, "sample_rate_ppb", s->sample_rate);
	put_scaled(b, "budget_pct_ppb", s->budget_pct);
	put_scaled(b, "budget_floor_pct_ppb", s->budget_floor_pct);
	put_scaled(b, "deep_duty_ppb", s->deep_duty);
	put_scaled(b, "deep_duty_asked_ppb", s->deep_duty_asked);
	put_str8(b, "deep_ns", 64);
	put_u64(b, s->deep_ns);
	put_str8(b, "deep_span_ns", 64);
	put_u64(b, s->deep_span_ns);
	put_str8(b, "deep_windows", 64);
	put_u64(b, s->deep_windows);
	put_str8(b, "deep_triggered", 64);
	put_u64(b, s->deep_triggered);
	for (size_t i = 0; i < s->nprogs; i++) {
		char name[64];

		snprintf(name, sizeof(name), "prog_runs.%s", s->progs[i].name);
		put_str8(b, name, 64);
		put_u64(b, s->progs[i].runs);
		snprintf(name, sizeof(name), "prog_ns.%s", s->progs[i].name);
		put_str8(b, name, 64);
		put_u64(b, s->progs[i].run_ns);
	}
	return b->err;
}

static void encode_event(struct rec_buf *b, const struct req_event *e)
{
	put_u64(b, e->sk_cookie);
	put_u64(b, e->start_ns);
	put_u64(b, e->first_resp_ns);
	put_u64(b, e->end_ns);
	put_u64(b, e->max_gap_ns);
	put_u64(b, e->srtt_ns);
	put_u64(b, e->min_rtt_ns);
	put_u64(b, e->cgroup_id);
	for (int i = 0; i < TT_REQ_STAGES; i++)
		put_u64(b, e->stage_ns[i]);
	put_u32(b, e->tgid);
	put_u32(b, e->tid);
	put_u32(b, e->chunks);
	put_u32(b, e->retrans);
	put_u32(b, e->retrans_rto);
	put_u32(b, e->drops);
	put_u32(b, e->ecn_ce);
	put_u32(b, e->ifindex);
	put_u32(b, e->qdisc_handle);
	put_u32(b, e->netns);
	put_u32(b, e->cpu);
	put_u32(b, e->bytes_in);
	put_u32(b, e->bytes_out);
	put_u16(b, e->lport);
	put_u16(b, e->rport);
	put_u8(b, e->family);
	put_u8(b, e->role);
	put_bytes(b, e->raddr, 16);
	put_bytes(b, e->comm, 16);
}

static int encode_flight(struct rec_buf *b, const struct snapshot *s, size_t from, size_t n)
{
	put_u64(b, s->start_ns);
	put_u64(b, s->end_ns);
	put_u8(b, TT_REQ_STAGES);
	for (int i = 0; i < TT_REQ_STAGES; i++)
		put_str8(b, stage_info(i)->name, 64);
	put_u32(b, (__u32)n);
	for (size_t i = from; i < from + n; i++)
		encode_event(b, &s->slow_reqs[i]);
	/* the trailer: what each request's split and framing depend on beyond the fields
	 * above (readers before it stop at the requests) */
	put_u8(b, REC_EVENT_EXTRA);
	for (size_t i = from; i < from + n; i++) {
		put_u8(b, s->slow_reqs[i].flags);
		put_u8(b, s->slow_reqs[i].proto);
		put_u32(b, s->slow_reqs[i].stream_id);
	}
	return b->err;
}

const char *const rec_napi_cols[REC_NAPI_COLS] = { "polls", "exhausted", "packets" };
const char *const rec_softnet_cols[REC_SOFTNET_COLS] = { "processed", "dropped", "time_squeeze",
							 "received_rps", "flow_limit" };

static void put_columns(struct rec_buf *b, const char *const *cols, __u8 n)
{
	put_u8(b, n);
	for (__u8 i = 0; i < n; i++)
		put_str8(b, cols[i], 64);
}

static int encode_nic(struct rec_buf *b, const struct snapshot *s)
{
	put_u64(b, s->start_ns);
	put_u64(b, s->end_ns);
	put_columns(b, rec_napi_cols, REC_NAPI_COLS);
	put_u32(b, (__u32)s->nnapi);
	for (size_t i = 0; i < s->nnapi; i++) {
		const struct snap_napi *n = &s->napi[i];

		put_u32(b, n->key.netns);
		put_u32(b, n->key.ifindex);
		put_u32(b, n->key.napi_id);
		put_u64(b, n->c.polls);
		put_u64(b, n->c.exhausted);
		put_u64(b, n->c.work);
	}
	put_columns(b, rec_softnet_cols, REC_SOFTNET_COLS);
	put_u32(b, (__u32)s->nsoftnet);
	for (size_t i = 0; i < s->nsoftnet; i++) {
		const struct snap_softnet *r = &s->softnet[i];

		put_u32(b, r->cpu);
		put_u64(b, r->processed);
		put_u64(b, r->dropped);
		put_u64(b, r->time_squeeze);
		put_u64(b, r->received_rps);
		put_u64(b, r->flow_limit);
	}
	return b->err;
}

int rec_interval_encode(struct rec_buf *out, const struct snapshot *s)
{
	struct rec_buf raw = { 0 };
	size_t start = out->len;
	int err;

	err = encode_snapshot(&raw, s);
	if (!err)
		err = frame_append(out, REC_FRAME_SNAPSHOT, &raw);
	/* only when the driver/softirq programs ran: other recordings stay as they were */
	if (!err && (s->nnapi || s->nsoftnet)) {
		raw.len = 0;
		err = encode_nic(&raw, s);
		if (!err)
			err = frame_append(out, REC_FRAME_NIC, &raw);
	}
	for (size_t i = 0; !err && i < s->nslow; i += REC_FLIGHT_PER_FRAME) {
		size_t n =
			s->nslow - i < REC_FLIGHT_PER_FRAME ? s->nslow - i : REC_FLIGHT_PER_FRAME;

		raw.len = 0;
		err = encode_flight(&raw, s, i, n);
		if (!err)
			err = frame_append(out, REC_FRAME_FLIGHT, &raw);
	}
	rec_buf__free(&raw);
	if (err)
		out->len = start;
	return err;
}
