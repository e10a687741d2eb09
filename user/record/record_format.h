/* SPDX-License-Identifier: GPL-2.0 */
/* The on-disk format of `record` segments (docs/record-format.md): encoding snapshots into
 * CRC-checked, zlib-compressed frames and decoding them back, torn tails tolerated.
 * segment_write.c encodes, segment_read.c decodes, segment_files.c reads files and
 * directories, segment_window.c the --from/--to window; recorder.c writes the files. */
#ifndef TT_RECORD_FORMAT_H
#define TT_RECORD_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "core/snapshot.h"

#define REC_MAGIC       "TTRECSEG" /* 8 bytes, no NUL on disk */
#define REC_MAGIC_LEN   8
#define REC_VERSION     1
#define REC_SUFFIX      ".ttrec"
#define REC_FLAG_ZLIB   0x1u /* frame payloads are zlib streams (always set in v1) */
#define REC_FLAGS_KNOWN REC_FLAG_ZLIB
#define REC_HDR_FIXED   36 /* header bytes before the host name */
#define REC_HOST_MAX    255
#define REC_FRAME_HDR   16
#define REC_MAX_RAW     (64u << 20) /* largest decompressed payload a reader accepts */
/* a segment is closed once it passes --max-size / 8, and never grows past this */
#define REC_SEGMENT_MAX (1ll << 30)
/* the largest file a reader reads whole: a full segment and one more frame */
#define REC_SEGMENT_READ_MAX (REC_SEGMENT_MAX + 2ll * REC_MAX_RAW)
#define REC_FLIGHT_PER_FRAME 512 /* slow requests per flight-recorder frame */
/* bytes per request in a flight frame's trailer (flags, proto, stream_id); a reader takes
 * the first ones it knows of a longer trailer */
#define REC_EVENT_EXTRA 6

/* What a reader holds, so that a crafted segment (zlib inflates ~1000:1, and a histogram
 * key decodes to ~5.9 KB) cannot make `report` allocate gigabytes. Past a limit reading
 * stops with an error naming it (docs/record-format.md, "Limits"). An interval: */
#define REC_INTERVAL_HISTS_MAX   8192 /* distinct histogram keys (~48 MB); record's map: 4096 */
#define REC_INTERVAL_DEVS_MAX    4096 /* devices; the kernel's device-name map holds 1024 */
#define REC_INTERVAL_FLIGHTS_MAX 16   /* flight-recorder frames; record writes one (≤ 256) */
#define REC_INTERVAL_NAPI_MAX    512  /* NAPI instances; the kernel's napi_counts map: 256 */
#define REC_INTERVAL_SOFTNET_MAX 1024 /* softnet_stat rows (CPUs); collect/softnet.h reads 1024 */
/* Everything one report merges (rec_window_merge): */
#define REC_REPORT_HISTS_MAX   32768      /* distinct histogram keys (~192 MB) */
#define REC_REPORT_DEVS_MAX    4096       /* distinct devices */
#define REC_REPORT_SLOW_MAX    (1u << 18) /* slow requests (~73 MB; ~3 h at 256 a 10 s interval) */
#define REC_REPORT_NAPI_MAX    4096       /* distinct NAPI instances */
#define REC_REPORT_SOFTNET_MAX 4096       /* distinct CPUs of softnet_stat rows */

enum rec_frame_type {
	REC_FRAME_SNAPSHOT = 1,
	REC_FRAME_FLIGHT = 2,
	/* NAPI polls and softnet_stat rows of the interval; readers that predate it skip it
	 * as an unknown intact frame */
	REC_FRAME_NIC = 3,
};

struct rec_header {
	__u16 version;
	__u32 flags;
	__u64 created_ns;   /* CLOCK_REALTIME */
	__u64 seq;          /* segment sequence number in its directory */
	__u8 hist_sub_bits; /* histogram geometry the slot numbers refer to */
	__u8 hist_max_log2;
	char host[REC_HOST_MAX + 1];
};

/* A growable byte buffer; err sticks at -ENOMEM after the first failed growth. */
struct rec_buf {
	__u8 *p;
	size_t len, cap;
	int err;
};

void rec_buf__free(struct rec_buf *b);

/* Where a reader stopped and why. */
struct rec_diag {
	char msg[512];        /* error or warning text, names the file and byte offset */
	__u64 offset;         /* byte offset of the bad frame or header */
	bool torn;            /* a torn tail was skipped (warning, not an error) */
	unsigned long frames; /* frames decoded */
	unsigned long snapshots;
};

/* Called once per decoded interval with its slow requests attached. The snapshot is freed
 * by the reader after the call; a non-zero return stops reading and is returned. */
typedef int (*rec_snapshot_fn)(const struct snapshot *s, void *ctx);

/* Encoding (pure): the segment header, and one interval as a snapshot frame followed by
 * its flight-recorder frames. Return 0 or a negative errno. */
int rec_header_encode(struct rec_buf *out, const struct rec_header *h);
int rec_interval_encode(struct rec_buf *out, const struct snapshot *s);

/* Decodes a whole segment held in memory. name is used in messages. Returns 0 (check
 * d->torn for a skipped tail), -EBADMSG for a corrupt frame or header, -EPROTONOSUPPORT for
 * a future version or unknown required flag, -ENOTSUP for a foreign file (bad magic),
 * -ENOMEM, or the callback's value. Never reads outside buf. */
int rec_decode(const void *buf, size_t len, const char *name, struct rec_header *hdr,
	       rec_snapshot_fn fn, void *ctx, struct rec_diag *d);

/* Decodes one frame payload (already decompressed) into s: exposed for the fuzzer and the
 * tests. A flight or NIC payload's interval is returned in s->start_ns/end_ns. */
int rec_payload_decode(int type, const void *buf, size_t len, struct snapshot *s);

/* Reads one segment file, or every *.ttrec segment of a directory in sequence order.
 * Torn tails are reported with tt_warn() and skipped; the first error stops. */
int rec_read_file(const char *path, rec_snapshot_fn fn, void *ctx, struct rec_diag *d);
int rec_read_path(const char *path, rec_snapshot_fn fn, void *ctx, struct rec_diag *d);

/* Segment file names in dir (basenames, sorted by sequence). Free with rec_names_free.
 * Only regular files: anything else named like a segment (a FIFO, a symlink, a directory)
 * is skipped with a warning naming it. The _at form lists the directory open at dirfd
 * (dir is used in messages). 0 or -errno. */
int rec_list_segments(const char *dir, char ***names, size_t *n);
int rec_list_segments_at(int dirfd, const char *dir, char ***names, size_t *n);
void rec_names_free(char **names, size_t n);
/* Sequence number from a segment name; -EINVAL when the name is not one of ours, -ERANGE
 * when its sequence is above REC_SEQ_MAX (record never gets there: such a name was planted
 * and is ignored, so the sequence cannot overflow). */
#define REC_SEQ_MAX ((1ULL << 62) - 1)
long long rec_segment_seq(const char *name);

/* Time arguments of `report --from/--to`: RFC 3339 ("2024-05-01T12:00:00Z", offsets and
 * fractions allowed), "YYYY-MM-DD HH:MM[:SS]" in local time, unix seconds ("1714564800"
 * or "@1714564800.5"), or relative to now ("-10m", "-2h", "-30s", "-1d", "now").
 * Returns 0 or -EINVAL. */
int rec_parse_time(const char *s, __u64 now_ns, __u64 *out_ns);
/* A snapshot belongs to [from, to) when the midpoint of its interval does: adjacent
 * windows partition a recording, no interval is counted twice. */
bool rec_in_window(const struct snapshot *s, __u64 from_ns, __u64 to_ns);
/* dst += src for a report: -E2BIG, with msg naming the limit, and dst unchanged when dst
 * would then hold more than lim allows (NULL: the REC_REPORT_*_MAX); else 0 or -ENOMEM. */
struct rec_limits {
	size_t hists, devs, slow, napi, softnet;
};
int rec_window_merge(struct snapshot *dst, const struct snapshot *src, const struct rec_limits *lim,
		     char *msg, size_t len);

/* ---- writing side of `record` (user/record/recorder.c) ----
 * Segments seg-<seq 16 hex>-<UTC creation>.ttrec in one directory (created 0700 if
 * missing), each opened O_CREAT|O_EXCL mode 0600. A new segment starts when the current
 * one would grow past max_size / 8; the oldest segments are deleted so the directory's
 * segments stay within max_size (0 = REC_DEFAULT_MAX_SIZE). Each append is one write() of
 * whole frames followed by fdatasync(), so a crash loses at most the interval being
 * written and readers skip its torn frame. */
#define REC_DEFAULT_MAX_SIZE (256ULL << 20)
#define REC_MIN_SEGMENT      (4ULL << 10)

struct recorder;

/* host: the name each segment header carries (NULL: gethostname(), the node name). */
struct recorder *recorder__open(const char *dir, __u64 max_size, const char *host, char *err,
				size_t errlen);
/* Appends one interval (snapshot frame + its flight-recorder frames). 0 or -errno; on a
 * failed write the partial frame is truncated away and the segment stays readable. */
int recorder__append(struct recorder *r, const struct snapshot *s);
/* fsync of the current segment and the directory. */
int recorder__flush(struct recorder *r);
/* Flushes and closes; NULL is fine. */
void recorder__close(struct recorder *r);
/* Bytes of all segments in the directory, and the current segment's path. */
__u64 recorder__usage(const struct recorder *r);
const char *recorder__current_path(const struct recorder *r);
/* Times the directory was found removed and made again since the last call (the segments
 * that were in it went with it). */
unsigned recorder__take_remade(struct recorder *r);

/* Stable names of the global counters (enum tt_counter), used in files and exports. */
const char *rec_counter_name(int id);
int rec_counter_by_name(const char *name);

#endif
