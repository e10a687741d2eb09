// SPDX-License-Identifier: GPL-2.0
/* Segment decoding for `report` (docs/record-format.md): the header and the frames, whose
 * payloads payload_read.c turns back into snapshots. The decoder trusts no length it reads, skips a
 * torn tail (the interval being written when record died) and says where it stopped. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "record/segment_int.h"

__u64 rec_get_le(const __u8 *p, int n)
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
	h->version = (__u16)rec_get_le(p + 8, 2);
	hl = rec_get_le(p + 10, 2);
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
	if (crc != rec_get_le(p + hl - 4, 4))
		return rec_diag_set(d, -EBADMSG, 0, "%s: corrupt header: CRC mismatch at offset 0",
				    name);
	h->flags = (__u32)rec_get_le(p + 12, 4);
	h->created_ns = rec_get_le(p + 16, 8);
	h->seq = rec_get_le(p + 24, 8);
	h->hist_sub_bits = p[32];
	h->hist_max_log2 = p[33];
	hostlen = rec_get_le(p + 34, 2);
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
	fr->stored = rec_get_le(f + 4, 4);
	fr->rawlen = rec_get_le(f + 8, 4);
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
	if (crc32(crc32(0, f, 12), f + REC_FRAME_HDR, (uInt)fr->stored) != rec_get_le(f + 12, 4)) {
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
