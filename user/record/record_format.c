// SPDX-License-Identifier: GPL-2.0
/* Segment encoding and decoding for `record`/`report`: every multi-byte field is written
 * byte by byte in little-endian order, never as a raw struct, so padding and host byte
 * order never reach the disk. The decoder trusts no length it reads. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <zlib.h>
#include "record/record_format.h"
#include "attr/attribution.h"
#include "lib/log.h"
#include "core/stages.h"

static const char *const counter_names[] = {
	[CNT_RETRANS] = "retrans",
	[CNT_RETRANS_RTO] = "retrans_rto",
	[CNT_RETRANS_FAST] = "retrans_fast",
	[CNT_RETRANS_TLP] = "retrans_tlp",
	[CNT_RETRANS_OTHER] = "retrans_other",
	[CNT_RETRANS_UNTIMED] = "retrans_untimed",
	[CNT_RETRANS_SYNACK] = "retrans_synack",
	[CNT_DROPS] = "drops",
	[CNT_ECN_CE] = "ecn_ce",
	[CNT_QDISC_PKTS] = "qdisc_pkts",
	[CNT_QDISC_DROPS] = "qdisc_drops",
	[CNT_HIST_INSERTS] = "hist_inserts",
	[CNT_HIST_UPDATE_FAIL] = "hist_update_fail",
	[CNT_FLOW_UPDATE_FAIL] = "flow_update_fail",
	[CNT_PKT_INSERTS] = "pkt_inserts",
	[CNT_PKT_UPDATE_FAIL] = "pkt_update_fail",
	[CNT_PKT_DELETES] = "pkt_deletes",
	[CNT_EVENTS_LOST] = "events_lost",
	[CNT_SCHED_UPDATE_FAIL] = "sched_update_fail",
	[CNT_THREAD_INSERTS] = "thread_inserts",
	[CNT_THREAD_DELETES] = "thread_deletes",
	[CNT_SENDS_UNTIMED] = "sends_untimed",
	[CNT_RETRANS_UNSEEN] = "retrans_unseen",
	[CNT_CLOSES_UNSEEN] = "closes_unseen",
};
/* A new counter must get a stable name here before it can be recorded; the size check
 * catches one added at the end, test_record_format catches a gap in the middle. */
_Static_assert(sizeof(counter_names) / sizeof(counter_names[0]) == CNT__MAX,
	       "every enum tt_counter needs a name in counter_names");

const char *rec_counter_name(int id)
{
	if (id < 0 || id >= CNT__MAX)
		return NULL;
	return counter_names[id] ? counter_names[id] : "unnamed";
}

int rec_counter_by_name(const char *name)
{
	for (int i = 0; i < CNT__MAX; i++)
		if (counter_names[i] && !strcmp(counter_names[i], name))
			return i;
	return -ENOENT;
}

/* ---- writing ---- */

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

static void put_u8(struct rec_buf *b, __u8 v) { put_le(b, v, 1); }
static void put_u16(struct rec_buf *b, __u16 v) { put_le(b, v, 2); }
static void put_u32(struct rec_buf *b, __u32 v) { put_le(b, v, 4); }
static void put_u64(struct rec_buf *b, __u64 v) { put_le(b, v, 8); }

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

static __u64 get_le_raw(const __u8 *p, int n)
{
	__u64 v = 0;

	for (int i = 0; i < n; i++)
		v |= (__u64)p[i] << (8 * i);
	return v;
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
	put_u16(b, 1);
	put_str8(b, "pkt_unmatched", 64);
	put_u64(b, s->pkt_unmatched);
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
	for (size_t i = 0; !err && i < s->nslow; i += REC_FLIGHT_PER_FRAME) {
		size_t n = s->nslow - i < REC_FLIGHT_PER_FRAME ? s->nslow - i
							      : REC_FLIGHT_PER_FRAME;

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

/* ---- reading ---- */

struct cur {
	const __u8 *p;
	size_t len, off;
	bool bad;	/* a read went past the end: the payload is malformed */
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

static __u8 get_u8(struct cur *c) { return (__u8)get_le(c, 1); }
static __u16 get_u16(struct cur *c) { return (__u16)get_le(c, 2); }
static __u32 get_u32(struct cur *c) { return (__u32)get_le(c, 4); }
static __u64 get_u64(struct cur *c) { return get_le(c, 8); }

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

static int grow_array(void **arr, size_t *cap, size_t need, size_t elem)
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

#define HIST_REC_MIN (2 + 1 + 16 + 8 + 32 + 24 + 2)	/* smallest encoded histogram */

static int decode_hist(struct cur *c, struct snapshot *s)
{
	char stage[256], by[256];
	struct snap_hist sh;
	__u16 nz;
	int st, gb;

	memset(&sh, 0, sizeof(sh));
	get_str8(c, stage, sizeof(stage));
	get_str8(c, by, sizeof(by));
	sh.key.family = get_u8(c);
	sh.key.ifindex = get_u32(c);
	sh.key.qdisc_handle = get_u32(c);
	sh.key.netns = get_u32(c);
	sh.key.tgid = get_u32(c);
	sh.key.id = get_u64(c);
	get_bytes(c, sh.key.addr, 16);
	get_bytes(c, sh.key.comm, 16);
	sh.h.count = get_u64(c);
	sh.h.sum_ns = get_u64(c);
	sh.h.max_ns = get_u64(c);
	nz = get_u16(c);
	for (__u16 i = 0; i < nz && !c->bad; i++) {
		__u16 slot = get_u16(c);
		__u64 v = get_u64(c);

		if (slot >= HIST_SLOTS)
			return -EBADMSG;
		sh.h.slots[slot] = v;
	}
	if (c->bad)
		return -EBADMSG;
	st = stage_by_name(stage);
	gb = group_by_parse(by);
	/* a stage this build does not know (recorded by a newer one) cannot be shown */
	if (st < 0 || gb < 0)
		return 0;
	sh.key.stage = (__u16)st;
	sh.key.by = (__u8)gb;
	if (grow_array((void **)&s->hists, &s->hists_cap, s->nhists + 1, sizeof(*s->hists)))
		return -ENOMEM;
	s->hists[s->nhists++] = sh;
	return 0;
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
				"by this version, skipped", (unsigned long long)s->start_ns);
		}
		c->off += attr_len;
	}
	(void)get_u32(c); /* slow requests announced; fewer arrive when the tail was torn */
	n = get_u16(c);
	for (__u32 i = 0; i < n && !c->bad; i++) {
		__u64 v;

		get_str8(c, name, sizeof(name));
		v = get_u64(c);
		if (!strcmp(name, "pkt_unmatched"))
			s->pkt_unmatched = v;
	}
	return c->bad ? -EBADMSG : 0;
}

#define EVENT_REC_FIXED (8 * 8 + 13 * 4 + 2 * 2 + 2 + 32)

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
	if (c->bad || n > remaining(c) / (EVENT_REC_FIXED + 8u * ncols))
		return -EBADMSG;
	if (grow_array((void **)&s->slow_reqs, &s->slow_cap, s->nslow + n, sizeof(*s->slow_reqs)))
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
	default:
		return -EINVAL;
	}
}

static int diag(struct rec_diag *d, int err, __u64 off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int diag(struct rec_diag *d, int err, __u64 off, const char *fmt, ...)
{
	va_list ap;

	d->offset = off;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
	return err;
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
			return diag(d, 0, 0, "%s: header incomplete (%zu bytes), file skipped",
				    name, len);
		}
		return diag(d, -ENOTSUP, 0, "%s: not a tailtrace recording (bad magic at offset 0)",
			    name);
	}
	if (memcmp(p, REC_MAGIC, REC_MAGIC_LEN))
		return diag(d, -ENOTSUP, 0, "%s: not a tailtrace recording (bad magic at offset 0)",
			    name);
	h->version = (__u16)get_le_raw(p + 8, 2);
	hl = get_le_raw(p + 10, 2);
	if (h->version > REC_VERSION)
		return diag(d, -EPROTONOSUPPORT, 8,
			    "%s: format version %u is newer than this tailtrace reads (%u) at offset 8",
			    name, h->version, REC_VERSION);
	if (h->version == 0)
		return diag(d, -EBADMSG, 8, "%s: corrupt header: version 0 at offset 8", name);
	if (hl < REC_HDR_FIXED + 4)
		return diag(d, -EBADMSG, 10, "%s: corrupt header: length %zu at offset 10", name,
			    hl);
	if (len < hl) {
		d->torn = true;
		return diag(d, 0, 0, "%s: header incomplete (%zu of %zu bytes), file skipped",
			    name, len, hl);
	}
	crc = crc32(0, p, (uInt)(hl - 4));
	if (crc != get_le_raw(p + hl - 4, 4))
		return diag(d, -EBADMSG, 0, "%s: corrupt header: CRC mismatch at offset 0", name);
	h->flags = (__u32)get_le_raw(p + 12, 4);
	h->created_ns = get_le_raw(p + 16, 8);
	h->seq = get_le_raw(p + 24, 8);
	h->hist_sub_bits = p[32];
	h->hist_max_log2 = p[33];
	hostlen = get_le_raw(p + 34, 2);
	if (REC_HDR_FIXED + hostlen + 4 != hl || hostlen > REC_HOST_MAX)
		return diag(d, -EBADMSG, 34, "%s: corrupt header: host length %zu at offset 34",
			    name, hostlen);
	memcpy(h->host, p + REC_HDR_FIXED, hostlen);
	h->host[hostlen] = '\0';
	if (h->flags & ~REC_FLAGS_KNOWN)
		return diag(d, -EPROTONOSUPPORT, 12,
			    "%s: unknown format flags 0x%x at offset 12 (newer tailtrace?)", name,
			    h->flags);
	if (!(h->flags & REC_FLAG_ZLIB))
		return diag(d, -EPROTONOSUPPORT, 12,
			    "%s: uncompressed segments are not supported (flags at offset 12)",
			    name);
	if (h->hist_sub_bits != HIST_SUB_BITS || h->hist_max_log2 != HIST_MAX_LOG2)
		return diag(d, -EPROTONOSUPPORT, 32,
			    "%s: histogram geometry %u/%u at offset 32 differs from this build's "
			    "%u/%u", name, h->hist_sub_bits, h->hist_max_log2, HIST_SUB_BITS,
			    HIST_MAX_LOG2);
	*hdr_len = hl;
	return 0;
}

int rec_decode(const void *buf, size_t len, const char *name, struct rec_header *hdr,
	       rec_snapshot_fn fn, void *ctx, struct rec_diag *d)
{
	const __u8 *p = buf;
	struct rec_header hdr_local;
	struct snapshot pend;
	bool have = false;
	size_t off = 0;
	__u8 *raw = NULL;
	int err;

	memset(d, 0, sizeof(*d));
	if (!hdr)
		hdr = &hdr_local;
	err = decode_header(p, len, name, hdr, &off, d);
	if (err || d->torn)
		return err;
	snapshot__init(&pend);
	while (off < len) {
		size_t left = len - off, stored, rawlen;
		const __u8 *f = p + off;
		struct snapshot fl;
		uLongf outlen;
		int type;

		if (left < REC_FRAME_HDR) {
			d->torn = true;
			diag(d, 0, off, "%s: torn frame header at offset %zu (%zu bytes), tail skipped",
			     name, off, left);
			break;
		}
		type = f[0];
		stored = get_le_raw(f + 4, 4);
		rawlen = get_le_raw(f + 8, 4);
		if (type == 0 && all_zero(f, left)) {
			/* the file was extended but the data never reached the disk */
			d->torn = true;
			diag(d, 0, off, "%s: zero-filled tail at offset %zu, skipped", name, off);
			break;
		}
		if (type == 0 || f[1] || f[2] || f[3] || rawlen > REC_MAX_RAW ||
		    stored > compressBound(REC_MAX_RAW)) {
			err = diag(d, -EBADMSG, off, "%s: corrupt frame header at offset %zu", name,
				   off);
			goto out;
		}
		if (stored > left - REC_FRAME_HDR) {
			d->torn = true;
			diag(d, 0, off,
			     "%s: torn frame at offset %zu (length %zu beyond end of file), tail "
			     "skipped", name, off, stored);
			break;
		}
		if (crc32(crc32(0, f, 12), f + REC_FRAME_HDR, (uInt)stored) !=
		    get_le_raw(f + 12, 4)) {
			if (off + REC_FRAME_HDR + stored == len) {
				d->torn = true;
				diag(d, 0, off, "%s: torn frame at offset %zu (CRC mismatch in the "
				     "last frame), tail skipped", name, off);
				break;
			}
			err = diag(d, -EBADMSG, off, "%s: corrupt frame at offset %zu (CRC mismatch)",
				   name, off);
			goto out;
		}
		if (type != REC_FRAME_SNAPSHOT && type != REC_FRAME_FLIGHT) {
			/* a frame type added by a later minor revision: intact, skip it */
			off += REC_FRAME_HDR + stored;
			d->frames++;
			continue;
		}
		raw = malloc(rawlen ? rawlen : 1);
		if (!raw) {
			err = -ENOMEM;
			goto out;
		}
		outlen = rawlen;
		if (uncompress(raw, &outlen, f + REC_FRAME_HDR, stored) != Z_OK ||
		    outlen != rawlen) {
			err = diag(d, -EBADMSG, off, "%s: corrupt frame at offset %zu (bad zlib data)",
				   name, off);
			goto out;
		}
		if (type == REC_FRAME_SNAPSHOT) {
			if (have) {
				err = fn ? fn(&pend, ctx) : 0;
				snapshot__free(&pend);
				have = false;
				d->snapshots++;
				if (err)
					goto out;
			}
			err = rec_payload_decode(type, raw, rawlen, &pend);
			have = true;
		} else {
			snapshot__init(&fl);
			err = rec_payload_decode(type, raw, rawlen, &fl);
			if (!err && (!have || fl.start_ns != pend.start_ns ||
				     fl.end_ns != pend.end_ns))
				err = -ENOENT;
			for (size_t i = 0; !err && i < fl.nslow; i++) {
				if (grow_array((void **)&pend.slow_reqs, &pend.slow_cap,
					       pend.nslow + 1, sizeof(*pend.slow_reqs)))
					err = -ENOMEM;
				else
					pend.slow_reqs[pend.nslow++] = fl.slow_reqs[i];
			}
			snapshot__free(&fl);
			if (err == -ENOENT) {
				err = diag(d, -EBADMSG, off, "%s: flight-recorder frame at offset %zu "
					   "has no snapshot frame before it", name, off);
				goto out;
			}
		}
		if (err == -EBADMSG)
			diag(d, err, off, "%s: corrupt frame payload at offset %zu", name, off);
		if (err)
			goto out;
		free(raw);
		raw = NULL;
		d->frames++;
		off += REC_FRAME_HDR + stored;
	}
	if (have) {
		err = fn ? fn(&pend, ctx) : 0;
		d->snapshots++;
	}
out:
	free(raw);
	snapshot__free(&pend);
	return err;
}

int rec_read_file(const char *path, rec_snapshot_fn fn, void *ctx, struct rec_diag *d)
{
	struct stat st;
	__u8 *buf = NULL;
	size_t got = 0;
	int fd, err;

	memset(d, 0, sizeof(*d));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		return diag(d, err, 0, "%s: %s", path, strerror(-err));
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return diag(d, -EINVAL, 0, "%s: not a regular file", path);
	}
	/* segments are bounded by --max-size / 8; reading whole keeps the decoder pure */
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return diag(d, -ENOMEM, 0, "%s: out of memory", path);
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	err = rec_decode(buf, got, path, NULL, fn, ctx, d);
	free(buf);
	return err;
}

long long rec_segment_seq(const char *name)
{
	size_t n = strlen(name), sl = strlen(REC_SUFFIX);
	long long seq = 0;
	const char *p;

	/* seg-<16 hex digits>-<anything>.ttrec */
	if (n < 4 + 16 + sl || strncmp(name, "seg-", 4) || strcmp(name + n - sl, REC_SUFFIX))
		return -EINVAL;
	for (p = name + 4; p < name + 20; p++) {
		int v = (*p >= '0' && *p <= '9') ? *p - '0' :
			(*p >= 'a' && *p <= 'f') ? *p - 'a' + 10 : -1;

		if (v < 0)
			return -EINVAL;
		seq = seq * 16 + v;
		if (seq < 0)
			return -EINVAL;
	}
	return seq;
}

static int cmp_seq(const void *a, const void *b)
{
	long long x = rec_segment_seq(*(char *const *)a), y = rec_segment_seq(*(char *const *)b);

	return x < y ? -1 : x > y;
}

void rec_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int rec_list_segments(const char *dir, char ***names, size_t *n)
{
	char **v = NULL;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	DIR *dp;

	*names = NULL;
	*n = 0;
	dp = opendir(dir);
	if (!dp)
		return -errno;
	while ((de = readdir(dp))) {
		if (rec_segment_seq(de->d_name) < 0)
			continue;
		if (grow_array((void **)&v, &cap, cnt + 1, sizeof(*v)) ||
		    !(v[cnt] = strdup(de->d_name))) {
			closedir(dp);
			rec_names_free(v, cnt);
			return -ENOMEM;
		}
		cnt++;
	}
	closedir(dp);
	if (cnt)
		qsort(v, cnt, sizeof(*v), cmp_seq);
	*names = v;
	*n = cnt;
	return 0;
}

int rec_read_path(const char *path, rec_snapshot_fn fn, void *ctx, struct rec_diag *d)
{
	struct rec_diag fd;
	unsigned long frames = 0, snaps = 0;
	bool torn = false;
	struct stat st;
	char **names;
	size_t n;
	int err;

	memset(d, 0, sizeof(*d));
	if (stat(path, &st)) {
		err = -errno;
		return diag(d, err, 0, "%s: %s", path, strerror(-err));
	}
	if (!S_ISDIR(st.st_mode)) {
		err = rec_read_file(path, fn, ctx, d);
		if (!err && d->torn)
			tt_warn("warning: %s", d->msg);
		return err;
	}
	err = rec_list_segments(path, &names, &n);
	if (err)
		return diag(d, err, 0, "%s: %s", path, strerror(-err));
	for (size_t i = 0; i < n; i++) {
		char full[4096];

		snprintf(full, sizeof(full), "%s/%s", path, names[i]);
		err = rec_read_file(full, fn, ctx, &fd);
		frames += fd.frames;
		snaps += fd.snapshots;
		if (err) {
			*d = fd;
			break;
		}
		if (fd.torn) {
			/* only the segment being written when record died can be torn */
			tt_warn("warning: %s", fd.msg);
			torn = true;
		}
	}
	rec_names_free(names, n);
	if (!err)
		d->torn = torn;
	d->frames = frames;
	d->snapshots = snaps;
	return err;
}

/* ---- time window ---- */

static int parse_uint(const char **s, int ndigits, int *out)
{
	int v = 0;

	for (int i = 0; i < ndigits; i++) {
		if ((*s)[i] < '0' || (*s)[i] > '9')
			return -EINVAL;
		v = v * 10 + ((*s)[i] - '0');
	}
	*s += ndigits;
	*out = v;
	return 0;
}

/* Seconds since the epoch of a UTC broken-down time (no time zone database involved). */
static long long days_from_civil(int y, int m, int d)
{
	long long era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int parse_fraction(const char **s, double *frac)
{
	double scale = 0.1;

	*frac = 0;
	if (**s != '.' && **s != ',')
		return 0;
	(*s)++;
	if (**s < '0' || **s > '9')
		return -EINVAL;
	while (**s >= '0' && **s <= '9') {
		*frac += (**s - '0') * scale;
		scale /= 10;
		(*s)++;
	}
	return 0;
}

static int parse_datetime(const char *s, __u64 *out_ns)
{
	int Y, M, D, h = 0, m = 0, sec = 0, oh, om;
	bool zone = false;
	long long secs, offset = 0;
	double frac = 0;
	struct tm tm;

	if (parse_uint(&s, 4, &Y) || *s++ != '-' || parse_uint(&s, 2, &M) || *s++ != '-' ||
	    parse_uint(&s, 2, &D))
		return -EINVAL;
	if (*s == 'T' || *s == 't' || *s == ' ') {
		s++;
		if (parse_uint(&s, 2, &h) || *s++ != ':' || parse_uint(&s, 2, &m))
			return -EINVAL;
		if (*s == ':') {
			s++;
			if (parse_uint(&s, 2, &sec) || parse_fraction(&s, &frac))
				return -EINVAL;
		}
	}
	if (*s == 'Z' || *s == 'z') {
		zone = true;
		s++;
	} else if (*s == '+' || *s == '-') {
		int sign = *s++ == '-' ? -1 : 1;

		if (parse_uint(&s, 2, &oh))
			return -EINVAL;
		if (*s == ':')
			s++;
		if (parse_uint(&s, 2, &om) || oh > 23 || om > 59)
			return -EINVAL;
		zone = true;
		offset = sign * (oh * 3600LL + om * 60LL);
	}
	if (*s || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
		return -EINVAL;
	if (zone) {
		secs = days_from_civil(Y, M, D) * 86400 + h * 3600LL + m * 60LL + sec - offset;
	} else {
		memset(&tm, 0, sizeof(tm));
		tm.tm_year = Y - 1900;
		tm.tm_mon = M - 1;
		tm.tm_mday = D;
		tm.tm_hour = h;
		tm.tm_min = m;
		tm.tm_sec = sec;
		tm.tm_isdst = -1;
		secs = mktime(&tm);
		if (secs == -1)
			return -EINVAL;
	}
	if (secs < 0)
		return -EINVAL;
	*out_ns = (__u64)secs * 1000000000ULL + (__u64)(frac * 1e9 + 0.5);
	return 0;
}

int rec_parse_time(const char *s, __u64 now_ns, __u64 *out_ns)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	if (!strcmp(s, "now")) {
		*out_ns = now_ns;
		return 0;
	}
	if (s[0] == '-') {
		double mult;

		errno = 0;
		v = strtod(s + 1, &end);
		if (errno || end == s + 1 || v < 0 || s[1] == '-' || s[1] == '+')
			return -EINVAL;
		if (!strcmp(end, "s") || !*end)
			mult = 1;
		else if (!strcmp(end, "m") || !strcmp(end, "min"))
			mult = 60;
		else if (!strcmp(end, "h"))
			mult = 3600;
		else if (!strcmp(end, "d"))
			mult = 86400;
		else
			return -EINVAL;
		v *= mult * 1e9;
		if (v > (double)now_ns)
			return -EINVAL;
		*out_ns = now_ns - (__u64)v;
		return 0;
	}
	if (strlen(s) >= 10 && s[4] == '-')
		return parse_datetime(s, out_ns);
	if (s[0] == '@')
		s++;
	{
		unsigned long long secs;
		double frac;
		const char *q;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		errno = 0;
		secs = strtoull(s, &end, 10);
		q = end;
		if (errno || secs > 18000000000ULL || parse_fraction(&q, &frac) || *q)
			return -EINVAL;
		*out_ns = secs * 1000000000ULL + (__u64)(frac * 1e9 + 0.5);
	}
	return 0;
}

bool rec_in_window(const struct snapshot *s, __u64 from_ns, __u64 to_ns)
{
	__u64 mid = s->start_ns + (s->end_ns > s->start_ns ? (s->end_ns - s->start_ns) / 2 : 0);

	return mid >= from_ns && mid < to_ns;
}
