// SPDX-License-Identifier: GPL-2.0
/* Segment decoding for `report` (docs/record-format.md): the header, the frames and their
 * payloads back into snapshots. The decoder trusts no length it reads, skips a torn tail
 * (the interval being written when record died) and says where it stopped. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "record/segment_int.h"
#include "attr/attribution.h"
#include "lib/log.h"
#include "core/stages.h"

static __u64 get_le_raw(const __u8 *p, int n)
{
	__u64 v = 0;

	for (int i = 0; i < n; i++)
		v |= (__u64)p[i] << (8 * i);
	return v;
}

int rec_diag_set(struct rec_diag *d, int err, __u64 off, const char *fmt, ...)
{
	va_list ap;

	d->offset = off;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
	return err;
}

int rec_grow_array(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *n;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < need)
		ncap *= 2;
	n = realloc(*arr, ncap * elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

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
	v = get_le_raw(c->p + c->off, n);
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
	st = stage_by_name(stage);
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
		cols[i] = stage_by_name(name);
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

static bool all_zero(const __u8 *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static int decode_header(const __u8 *p, size_t len, const char *name, struct rec_header *h,
			 size_t *hdr_len, struct rec_diag *d)
{
	size_t hl, hostlen;
	__u32 crc;

	memset(h, 0, sizeof(*h));
	if (len < REC_MAGIC_LEN + 4) {
		/* created but killed before the header was complete */
		if (!memcmp(p, REC_MAGIC, len < REC_MAGIC_LEN ? len : REC_MAGIC_LEN)) {
			d->torn = true;
			return rec_diag_set(d, 0, 0,
					    "%s: header incomplete (%zu bytes), file skipped", name,
					    len);
		}
		return rec_diag_set(d, -ENOTSUP, 0,
				    "%s: not a tailtrace recording (bad magic at offset 0)", name);
	}
	if (memcmp(p, REC_MAGIC, REC_MAGIC_LEN))
		return rec_diag_set(d, -ENOTSUP, 0,
				    "%s: not a tailtrace recording (bad magic at offset 0)", name);
	h->version = (__u16)get_le_raw(p + 8, 2);
	hl = get_le_raw(p + 10, 2);
	if (h->version > REC_VERSION)
		return rec_diag_set(
			d, -EPROTONOSUPPORT, 8,
			"%s: format version %u is newer than this tailtrace reads (%u) at offset 8",
			name, h->version, REC_VERSION);
	if (h->version == 0)
		return rec_diag_set(d, -EBADMSG, 8, "%s: corrupt header: version 0 at offset 8",
				    name);
	if (hl < REC_HDR_FIXED + 4)
		return rec_diag_set(d, -EBADMSG, 10, "%s: corrupt header: length %zu at offset 10",
				    name, hl);
	if (len < hl) {
		d->torn = true;
		return rec_diag_set(d, 0, 0,
				    "%s: header incomplete (%zu of %zu bytes), file skipped", name,
				    len, hl);
	}
	crc = crc32(0, p, (uInt)(hl - 4));
	if (crc != get_le_raw(p + hl - 4, 4))
		return rec_diag_set(d, -EBADMSG, 0, "%s: corrupt header: CRC mismatch at offset 0",
				    name);
	h->flags = (__u32)get_le_raw(p + 12, 4);
	h->created_ns = get_le_raw(p + 16, 8);
	h->seq = get_le_raw(p + 24, 8);
	h->hist_sub_bits = p[32];
	h->hist_max_log2 = p[33];
	hostlen = get_le_raw(p + 34, 2);
	if (REC_HDR_FIXED + hostlen + 4 != hl || hostlen > REC_HOST_MAX)
		return rec_diag_set(d, -EBADMSG, 34,
				    "%s: corrupt header: host length %zu at offset 34", name,
				    hostlen);
	memcpy(h->host, p + REC_HDR_FIXED, hostlen);
	h->host[hostlen] = '\0';
	if (h->flags & ~REC_FLAGS_KNOWN)
		return rec_diag_set(d, -EPROTONOSUPPORT, 12,
				    "%s: unknown format flags 0x%x at offset 12 (newer tailtrace?)",
				    name, h->flags);
	if (!(h->flags & REC_FLAG_ZLIB))
		return rec_diag_set(
			d, -EPROTONOSUPPORT, 12,
			"%s: uncompressed segments are not supported (flags at offset 12)", name);
	if (h->hist_sub_bits != HIST_SUB_BITS || h->hist_max_log2 != HIST_MAX_LOG2)
		return rec_diag_set(
			d, -EPROTONOSUPPORT, 32,
			"%s: histogram geometry %u/%u at offset 32 differs from this build's "
			"%u/%u",
			name, h->hist_sub_bits, h->hist_max_log2, HIST_SUB_BITS, HIST_MAX_LOG2);
	*hdr_len = hl;
	return 0;
}

/* A frame header that passed frame_check(). */
struct frame {
	const __u8 *hdr; /* its first byte; the payload follows the header */
	size_t off;      /* its offset in the segment */
	int type;
	size_t stored, rawlen; /* payload bytes in the file, and decompressed */
};

#define FRAME_TORN 1

/* The frame at off: 0 when its header and CRC are sound, FRAME_TORN when the segment ends
 * in a torn or never-written tail (d says which; the tail is skipped), or -EBADMSG when it
 * is corrupt. */
static int frame_check(const __u8 *p, size_t len, size_t off, const char *name, struct frame *fr,
		       struct rec_diag *d)
{
	size_t left = len - off;
	const __u8 *f = p + off;

	if (left < REC_FRAME_HDR) {
		d->torn = true;
		rec_diag_set(d, 0, off,
			     "%s: torn frame header at offset %zu (%zu bytes), tail skipped", name,
			     off, left);
		return FRAME_TORN;
	}
	fr->hdr = f;
	fr->off = off;
	fr->type = f[0];
	fr->stored = get_le_raw(f + 4, 4);
	fr->rawlen = get_le_raw(f + 8, 4);
	if (fr->type == 0 && all_zero(f, left)) {
		/* the file was extended but the data never reached the disk */
		d->torn = true;
		rec_diag_set(d, 0, off, "%s: zero-filled tail at offset %zu, skipped", name, off);
		return FRAME_TORN;
	}
	if (fr->type == 0 || f[1] || f[2] || f[3] || fr->rawlen > REC_MAX_RAW ||
	    fr->stored > compressBound(REC_MAX_RAW))
		return rec_diag_set(d, -EBADMSG, off, "%s: corrupt frame header at offset %zu",
				    name, off);
	if (fr->stored > left - REC_FRAME_HDR) {
		d->torn = true;
		rec_diag_set(d, 0, off,
			     "%s: torn frame at offset %zu (length %zu beyond end of file), tail "
			     "skipped",
			     name, off, fr->stored);
		return FRAME_TORN;
	}
	if (crc32(crc32(0, f, 12), f + REC_FRAME_HDR, (uInt)fr->stored) != get_le_raw(f + 12, 4)) {
		if (off + REC_FRAME_HDR + fr->stored == len) {
			d->torn = true;
			rec_diag_set(d, 0, off,
				     "%s: torn frame at offset %zu (CRC mismatch in the last "
				     "frame), tail skipped",
				     name, off);
			return FRAME_TORN;
		}
		return rec_diag_set(d, -EBADMSG, off,
				    "%s: corrupt frame at offset %zu (CRC mismatch)", name, off);
	}
	return 0;
}

/* The decompressed payload of fr in a new buffer (*raw, freed by the caller). */
static int frame_inflate(const struct frame *fr, __u8 **raw, const char *name, struct rec_diag *d)
{
	uLongf outlen = fr->rawlen;

	*raw = malloc(fr->rawlen ? fr->rawlen : 1);
	if (!*raw)
		return -ENOMEM;
	if (uncompress(*raw, &outlen, fr->hdr + REC_FRAME_HDR, fr->stored) != Z_OK ||
	    outlen != fr->rawlen)
		return rec_diag_set(d, -EBADMSG, fr->off,
				    "%s: corrupt frame at offset %zu (bad zlib data)", name,
				    fr->off);
	return 0;
}

/* One segment's reading: the interval being assembled (a snapshot frame and the
 * flight-recorder frames after it) and where it goes when complete. */
struct seg_reader {
	const char *name;
	const char *host; /* the segment header's: every interval carries it */
	rec_snapshot_fn fn;
	void *ctx;
	struct rec_diag *d;
	struct snapshot pend;
	bool have;        /* pend holds an interval */
	unsigned flights; /* flight-recorder frames added to pend */
};

/* Hands the pending interval to the callback and frees it. */
static int interval_emit(struct seg_reader *rd)
{
	int err;

	snprintf(rd->pend.host, sizeof(rd->pend.host), "%s", rd->host);
	/* a copied segment's name reaches terminals and labels: no control characters */
	for (char *c = rd->pend.host; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '_';
	err = rd->fn ? rd->fn(&rd->pend, rd->ctx) : 0;

	snapshot__free(&rd->pend);
	rd->have = false;
	rd->flights = 0;
	rd->d->snapshots++;
	return err;
}

/* A snapshot frame completes the interval before it and starts the next. */
static int snapshot_frame(struct seg_reader *rd, const struct frame *fr, const __u8 *raw)
{
	int err;

	if (rd->have && (err = interval_emit(rd)))
		return err;
	err = rec_payload_decode(fr->type, raw, fr->rawlen, &rd->pend);
	rd->have = true;
	if (err == -EBADMSG)
		rec_diag_set(rd->d, err, fr->off, "%s: corrupt frame payload at offset %zu",
			     rd->name, fr->off);
	if (err == -E2BIG)
		rec_diag_set(rd->d, err, fr->off,
			     "%s: the interval at offset %zu holds more than %d %s, the most one "
			     "interval may (docs/record-format.md, \"Limits\")",
			     rd->name, fr->off,
			     rd->pend.ndevs > REC_INTERVAL_DEVS_MAX ? REC_INTERVAL_DEVS_MAX
								    : REC_INTERVAL_HISTS_MAX,
			     rd->pend.ndevs > REC_INTERVAL_DEVS_MAX ? "devices" : "histogram keys");
	return err;
}

/* A flight-recorder frame adds its slow requests to the interval of the snapshot frame
 * before it, which must be the same interval. */
static int flight_frame(struct seg_reader *rd, const struct frame *fr, const __u8 *raw)
{
	struct snapshot *pend = &rd->pend;
	struct snapshot fl;
	int err;

	if (++rd->flights > REC_INTERVAL_FLIGHTS_MAX)
		return rec_diag_set(rd->d, -E2BIG, fr->off,
				    "%s: the interval has more than %d flight-recorder frames at "
				    "offset %zu, the most one interval may (docs/record-format.md, "
				    "\"Limits\")",
				    rd->name, REC_INTERVAL_FLIGHTS_MAX, fr->off);
	snapshot__init(&fl);
	err = rec_payload_decode(fr->type, raw, fr->rawlen, &fl);
	if (!err && (!rd->have || fl.start_ns != pend->start_ns || fl.end_ns != pend->end_ns))
		err = -ENOENT;
	if (!err && fl.nslow) {
		if (rec_grow_array((void **)&pend->slow_reqs, &pend->slow_cap,
				   pend->nslow + fl.nslow, sizeof(*pend->slow_reqs)))
			err = -ENOMEM;
		else
			memcpy(pend->slow_reqs + pend->nslow, fl.slow_reqs,
			       fl.nslow * sizeof(*fl.slow_reqs));
		if (!err)
			pend->nslow += fl.nslow;
	}
	snapshot__free(&fl);
	if (err == -ENOENT)
		return rec_diag_set(rd->d, -EBADMSG, fr->off,
				    "%s: flight-recorder frame at offset %zu has no snapshot "
				    "frame before it",
				    rd->name, fr->off);
	if (err == -EBADMSG)
		rec_diag_set(rd->d, err, fr->off, "%s: corrupt frame payload at offset %zu",
			     rd->name, fr->off);
	return err;
}

/* A NIC frame adds its NAPI and softnet counters to the interval of the snapshot frame
 * before it, which must be the same interval. */
static int nic_frame(struct seg_reader *rd, const struct frame *fr, const __u8 *raw)
{
	struct snapshot *pend = &rd->pend;
	struct snapshot nf;
	const char *what = "NAPI instances";
	int err, max = REC_INTERVAL_NAPI_MAX;

	snapshot__init(&nf);
	err = rec_payload_decode(fr->type, raw, fr->rawlen, &nf);
	if (!err && (!rd->have || nf.start_ns != pend->start_ns || nf.end_ns != pend->end_ns))
		err = -ENOENT;
	for (size_t i = 0; !err && i < nf.nnapi; i++)
		err = snapshot__add_napi(pend, &nf.napi[i].key, &nf.napi[i].c);
	for (size_t i = 0; !err && i < nf.nsoftnet; i++)
		err = snapshot__add_softnet(pend, &nf.softnet[i]);
	if (!err &&
	    (pend->nnapi > REC_INTERVAL_NAPI_MAX || pend->nsoftnet > REC_INTERVAL_SOFTNET_MAX))
		err = -E2BIG;
	if (err == -E2BIG &&
	    (nf.nsoftnet > REC_INTERVAL_SOFTNET_MAX || pend->nsoftnet > REC_INTERVAL_SOFTNET_MAX)) {
		what = "softnet_stat rows";
		max = REC_INTERVAL_SOFTNET_MAX;
	}
	snapshot__free(&nf);
	if (err == -ENOENT)
		return rec_diag_set(rd->d, -EBADMSG, fr->off,
				    "%s: NIC counter frame at offset %zu has no snapshot frame "
				    "before it",
				    rd->name, fr->off);
	if (err == -EBADMSG)
		rec_diag_set(rd->d, err, fr->off, "%s: corrupt frame payload at offset %zu",
			     rd->name, fr->off);
	if (err == -E2BIG)
		rec_diag_set(rd->d, err, fr->off,
			     "%s: the interval at offset %zu holds more than %d %s, the most one "
			     "interval may (docs/record-format.md, \"Limits\")",
			     rd->name, fr->off, max, what);
	return err;
}

int rec_decode(const void *buf, size_t len, const char *name, struct rec_header *hdr,
	       rec_snapshot_fn fn, void *ctx, struct rec_diag *d)
{
	struct seg_reader rd = { .name = name, .fn = fn, .ctx = ctx, .d = d };
	const __u8 *p = buf;
	struct rec_header hdr_local;
	size_t off = 0;
	__u8 *raw = NULL;
	int err;

	memset(d, 0, sizeof(*d));
	if (!hdr)
		hdr = &hdr_local;
	err = decode_header(p, len, name, hdr, &off, d);
	if (err || d->torn)
		return err;
	rd.host = hdr->host;
	snapshot__init(&rd.pend);
	while (off < len) {
		struct frame fr;

		err = frame_check(p, len, off, name, &fr, d);
		if (err == FRAME_TORN) {
			err = 0;
			break;
		}
		if (err)
			goto out;
		if (fr.type == REC_FRAME_SNAPSHOT || fr.type == REC_FRAME_FLIGHT ||
		    fr.type == REC_FRAME_NIC) {
			err = frame_inflate(&fr, &raw, name, d);
			if (!err && fr.type == REC_FRAME_SNAPSHOT)
				err = snapshot_frame(&rd, &fr, raw);
			else if (!err && fr.type == REC_FRAME_FLIGHT)
				err = flight_frame(&rd, &fr, raw);
			else if (!err)
				err = nic_frame(&rd, &fr, raw);
			if (err)
				goto out;
			free(raw);
			raw = NULL;
		}
		/* else a frame type added by a later minor revision: intact, skipped */
		d->frames++;
		off += REC_FRAME_HDR + fr.stored;
	}
	if (rd.have)
		err = interval_emit(&rd);
out:
	free(raw);
	snapshot__free(&rd.pend);
	return err;
}
