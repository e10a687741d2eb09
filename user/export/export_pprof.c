// SPDX-License-Identifier: GPL-2.0
/* The tail profile as a gzip-compressed pprof profile.proto, encoded by hand: the message
 * is small and fixed, a protobuf library would be the bigger dependency. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "export/exports.h"
#include "record/record_format.h"

/* profile.proto field numbers (perftools.profiles) */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUETYPE_TYPE = 1,
	VALUETYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	LOCATION_ID = 1,
	LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1,
	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
};

enum { WT_VARINT = 0, WT_LEN = 2 };

static void pb_varint(struct rec_buf *b, __u64 v)
{
	__u8 tmp[10];
	int n = 0;
	__u8 *p;

	do {
		tmp[n] = (__u8)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	if (b->err)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (cap < b->len + n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, tmp, n);
	b->len += n;
}

static void pb_bytes(struct rec_buf *b, int field, const void *data, size_t len)
{
	pb_varint(b, (__u64)field << 3 | WT_LEN);
	pb_varint(b, len);
	if (b->err)
		return;
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		__u8 *p;

		while (cap < b->len + len)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	if (len)
		memcpy(b->p + b->len, data, len);
	b->len += len;
}

static void pb_uint(struct rec_buf *b, int field, __u64 v)
{
	if (!v)
		return; /* proto3: zero is the default and is not written */
	pb_varint(b, (__u64)field << 3 | WT_VARINT);
	pb_varint(b, v);
}

static void pb_msg(struct rec_buf *b, int field, struct rec_buf *sub)
{
	if (sub->err)
		b->err = sub->err;
	pb_bytes(b, field, sub->p, sub->len);
	sub->len = 0;
}

struct strtab {
	char **s;
	size_t n, cap;
};

/* Index of s in the table, added when new. Linear: a profile has a few hundred strings. */
static __s64 str_index(struct strtab *t, const char *s)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->s[i], s))
			return (__s64)i;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **n = realloc(t->s, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->s = n;
		t->cap = cap;
	}
	if (!(t->s[t->n] = strdup(s)))
		return -ENOMEM;
	return (__s64)t->n++;
}

struct func {
	int level;
	__s64 name;
};

static const char *const level_names[4] = { "class", "stage", "place", "process" };

/* One profile being encoded: its string table, one function (and location, same id) per
 * distinct frame at each level, each row's locations, and the encoding buffers. */
struct pprof_build {
	struct strtab st;
	struct func *funcs;
	size_t nfuncs;
	__u64 (*loc)[4];
	__s64 s_lat, s_ns, s_req, s_cnt, s_comment, s_level[4];
	struct rec_buf out, sub, sub2, packed;
};

/* The strings every profile has: the sample and period types, level names, the comment. */
static int intern_fixed_strings(struct pprof_build *b, const struct tail_profile *p)
{
	struct strtab *st = &b->st;
	char comment[128];

	/* the string table starts with "" (index 0), as profile.proto requires */
	if (str_index(st, "") < 0 || (b->s_lat = str_index(st, "tail_latency")) < 0 ||
	    (b->s_ns = str_index(st, "nanoseconds")) < 0 ||
	    (b->s_req = str_index(st, "requests")) < 0 || (b->s_cnt = str_index(st, "count")) < 0)
		return -ENOMEM;
	for (int i = 0; i < 4; i++)
		if ((b->s_level[i] = str_index(st, level_names[i])) < 0)
			return -ENOMEM;
	snprintf(comment, sizeof(comment), "tailtrace tail profile, source: %s",
		 tail_source_name(p->source));
	if ((b->s_comment = str_index(st, comment)) < 0)
		return -ENOMEM;
	return 0;
}

/* One function and one location (same id) per distinct frame at each level. */
static int build_functions(struct pprof_build *b, const struct tail_profile *p)
{
	b->funcs = calloc(p->nrows * 4 + 1, sizeof(*b->funcs));
	b->loc = calloc(p->nrows + 1, sizeof(*b->loc));
	if (!b->funcs || !b->loc)
		return -ENOMEM;
	for (size_t r = 0; r < p->nrows; r++) {
		for (int lv = 0; lv < 4; lv++) {
			__s64 name = str_index(&b->st, p->rows[r].frame[lv]);
			size_t f;

			if (name < 0)
				return -ENOMEM;
			for (f = 0; f < b->nfuncs; f++)
				if (b->funcs[f].level == lv && b->funcs[f].name == name)
					break;
			if (f == b->nfuncs) {
				b->funcs[b->nfuncs].level = lv;
				b->funcs[b->nfuncs].name = name;
				b->nfuncs++;
			}
			b->loc[r][lv] = f + 1;
		}
	}
	return 0;
}

/* The sample types, then one sample per row. */
static void encode_samples(struct pprof_build *b, const struct tail_profile *p)
{
	pb_uint(&b->sub, VALUETYPE_TYPE, (__u64)b->s_lat);
	pb_uint(&b->sub, VALUETYPE_UNIT, (__u64)b->s_ns);
	pb_msg(&b->out, PROFILE_SAMPLE_TYPE, &b->sub);
	pb_uint(&b->sub, VALUETYPE_TYPE, (__u64)b->s_req);
	pb_uint(&b->sub, VALUETYPE_UNIT, (__u64)b->s_cnt);
	pb_msg(&b->out, PROFILE_SAMPLE_TYPE, &b->sub);
	for (size_t r = 0; r < p->nrows; r++) {
		/* leaf first: process, place, stage, class */
		for (int lv = 3; lv >= 0; lv--)
			pb_varint(&b->packed, b->loc[r][lv]);
		pb_msg(&b->sub, SAMPLE_LOCATION_ID, &b->packed);
		pb_varint(&b->packed, p->rows[r].ns);
		pb_varint(&b->packed, p->rows[r].count);
		pb_msg(&b->sub, SAMPLE_VALUE, &b->packed);
		pb_msg(&b->out, PROFILE_SAMPLE, &b->sub);
	}
}

/* Locations, functions, the string table and the profile's own fields. */
static void encode_rest(struct pprof_build *b, const struct snapshot *s)
{
	for (size_t f = 0; f < b->nfuncs; f++) {
		pb_uint(&b->sub, LOCATION_ID, f + 1);
		pb_uint(&b->sub2, LINE_FUNCTION_ID, f + 1);
		pb_msg(&b->sub, LOCATION_LINE, &b->sub2);
		pb_msg(&b->out, PROFILE_LOCATION, &b->sub);
	}
	for (size_t f = 0; f < b->nfuncs; f++) {
		pb_uint(&b->sub, FUNCTION_ID, f + 1);
		pb_uint(&b->sub, FUNCTION_NAME, (__u64)b->funcs[f].name);
		pb_uint(&b->sub, FUNCTION_SYSTEM_NAME, (__u64)b->funcs[f].name);
		pb_uint(&b->sub, FUNCTION_FILENAME, (__u64)b->s_level[b->funcs[f].level]);
		pb_msg(&b->out, PROFILE_FUNCTION, &b->sub);
	}
	for (size_t i = 0; i < b->st.n; i++)
		pb_bytes(&b->out, PROFILE_STRING_TABLE, b->st.s[i], strlen(b->st.s[i]));
	pb_uint(&b->out, PROFILE_TIME_NANOS, s->start_ns);
	pb_uint(&b->out, PROFILE_DURATION_NANOS,
		s->end_ns > s->start_ns ? s->end_ns - s->start_ns : 0);
	pb_uint(&b->sub, VALUETYPE_TYPE, (__u64)b->s_lat);
	pb_uint(&b->sub, VALUETYPE_UNIT, (__u64)b->s_ns);
	pb_msg(&b->out, PROFILE_PERIOD_TYPE, &b->sub);
	pb_uint(&b->out, PROFILE_PERIOD, 1);
	pb_uint(&b->out, PROFILE_COMMENT, (__u64)b->s_comment);
	pb_uint(&b->out, PROFILE_DEFAULT_SAMPLE_TYPE, (__u64)b->s_lat);
}

static int export_pprof_encode(const struct snapshot *s, void **buf, size_t *len)
{
	struct pprof_build b = { 0 };
	struct tail_profile p;
	int err;

	*buf = NULL;
	*len = 0;
	err = tail_profile__build(&p, s);
	if (err)
		return err;
	err = intern_fixed_strings(&b, &p);
	if (!err)
		err = build_functions(&b, &p);
	if (!err) {
		encode_samples(&b, &p);
		encode_rest(&b, s);
		err = b.out.err    ? b.out.err
		      : b.sub.err  ? b.sub.err
		      : b.sub2.err ? b.sub2.err
				   : b.packed.err;
	}
	if (!err) {
		*buf = b.out.p;
		*len = b.out.len;
		b.out.p = NULL;
	}
	rec_buf__free(&b.out);
	rec_buf__free(&b.sub);
	rec_buf__free(&b.sub2);
	rec_buf__free(&b.packed);
	for (size_t i = 0; i < b.st.n; i++)
		free(b.st.s[i]);
	free(b.st.s);
	free(b.funcs);
	free(b.loc);
	tail_profile__free(&p);
	return err;
}

int export_pprof(FILE *f, const struct snapshot *s)
{
	unsigned char out[16384];
	z_stream zs;
	void *buf;
	size_t len;
	int err, zr;

	err = export_pprof_encode(s, &buf, &len);
	if (err)
		return err;
	memset(&zs, 0, sizeof(zs));
	/* windowBits 15 + 16: a gzip wrapper, which is what pprof readers expect */
	if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(buf);
		return -ENOMEM;
	}
	zs.next_in = buf;
	zs.avail_in = (uInt)len;
	do {
		zs.next_out = out;
		zs.avail_out = sizeof(out);
		zr = deflate(&zs, Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			err = -EIO;
			break;
		}
		if (fwrite(out, 1, sizeof(out) - zs.avail_out, f) != sizeof(out) - zs.avail_out) {
			err = -EIO;
			break;
		}
	} while (zr != Z_STREAM_END);
	deflateEnd(&zs);
	free(buf);
	return err;
}
