// SPDX-License-Identifier: GPL-2.0
/* HTTP/2 frame helpers and an HPACK decoder (static and dynamic tables, no Huffman). */
#include "h2.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void h2_put_hdr(uint8_t *p, uint32_t len, uint8_t type, uint8_t flags, uint32_t sid)
{
	p[0] = (uint8_t)(len >> 16);
	p[1] = (uint8_t)(len >> 8);
	p[2] = (uint8_t)len;
	p[3] = type;
	p[4] = flags;
	h2_put32(p + 5, sid & 0x7fffffffu);
}

void h2_get_hdr(const uint8_t *p, struct h2_frame *f)
{
	f->len = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
	f->type = p[3];
	f->flags = p[4];
	f->sid = h2_get32(p + 5) & 0x7fffffffu;
}

int h2_unpad(const struct h2_frame *f, const uint8_t **p, uint32_t *len)
{
	uint32_t pad = 0;

	if ((f->type == H2_DATA || f->type == H2_HEADERS) && (f->flags & H2_F_PADDED)) {
		if (*len < 1)
			return -1;
		pad = (*p)[0];
		(*p)++;
		(*len)--;
	}
	if (f->type == H2_HEADERS && (f->flags & H2_F_PRIORITY)) {
		if (*len < 5)
			return -1;
		*p += 5;
		*len -= 5;
	}
	if (pad > *len)
		return -1;
	*len -= pad;
	return 0;
}

size_t h2_put_setting(uint8_t *p, uint16_t id, uint32_t v)
{
	p[0] = (uint8_t)(id >> 8);
	p[1] = (uint8_t)id;
	h2_put32(p + 2, v);
	return 6;
}

size_t h2_put_window_update(uint8_t *p, uint32_t sid, uint32_t inc)
{
	h2_put_hdr(p, 4, H2_WINDOW_UPDATE, 0, sid);
	h2_put32(p + H2_HDR_LEN, inc & 0x7fffffffu);
	return H2_HDR_LEN + 4;
}

/* RFC 7541 Appendix A */
static const char *const static_table[][2] = {
	{ ":authority", "" },
	{ ":method", "GET" },
	{ ":method", "POST" },
	{ ":path", "/" },
	{ ":path", "/index.html" },
	{ ":scheme", "http" },
	{ ":scheme", "https" },
	{ ":status", "200" },
	{ ":status", "204" },
	{ ":status", "206" },
	{ ":status", "304" },
	{ ":status", "400" },
	{ ":status", "404" },
	{ ":status", "500" },
	{ "accept-charset", "" },
	{ "accept-encoding", "gzip, deflate" },
	{ "accept-language", "" },
	{ "accept-ranges", "" },
	{ "accept", "" },
	{ "access-control-allow-origin", "" },
	{ "age", "" },
	{ "allow", "" },
	{ "authorization", "" },
	{ "cache-control", "" },
	{ "content-disposition", "" },
	{ "content-encoding", "" },
	{ "content-language", "" },
	{ "content-length", "" },
	{ "content-location", "" },
	{ "content-range", "" },
	{ "content-type", "" },
	{ "cookie", "" },
	{ "date", "" },
	{ "etag", "" },
	{ "expect", "" },
	{ "expires", "" },
	{ "from", "" },
	{ "host", "" },
	{ "if-match", "" },
	{ "if-modified-since", "" },
	{ "if-none-match", "" },
	{ "if-range", "" },
	{ "if-unmodified-since", "" },
	{ "last-modified", "" },
	{ "link", "" },
	{ "location", "" },
	{ "max-forwards", "" },
	{ "proxy-authenticate", "" },
	{ "proxy-authorization", "" },
	{ "range", "" },
	{ "referer", "" },
	{ "refresh", "" },
	{ "retry-after", "" },
	{ "server", "" },
	{ "set-cookie", "" },
	{ "strict-transport-security", "" },
	{ "transfer-encoding", "" },
	{ "user-agent", "" },
	{ "vary", "" },
	{ "via", "" },
	{ "www-authenticate", "" },
};
#define STATIC_N (sizeof(static_table) / sizeof(static_table[0]))

void hpack_dec_init(struct hpack_dec *d, size_t table_size)
{
	memset(d, 0, sizeof(*d));
	d->max_size = d->settings_max = table_size;
}

static void drop_oldest(struct hpack_dec *d)
{
	struct hpack_ent *e = &d->ent[0];

	d->size -= e->nlen + e->vlen + 32;
	free(e->name);
	free(e->value);
	memmove(d->ent, d->ent + 1, (d->n - 1) * sizeof(*d->ent));
	d->n--;
}

void hpack_dec_free(struct hpack_dec *d)
{
	while (d->n)
		drop_oldest(d);
	free(d->ent);
	memset(d, 0, sizeof(*d));
}

static void evict_to(struct hpack_dec *d, size_t max)
{
	while (d->n && d->size > max)
		drop_oldest(d);
}

static int table_add(struct hpack_dec *d, const char *n, size_t nl, const char *v, size_t vl)
{
	size_t sz = nl + vl + 32;
	char *cn, *cv;

	if (sz > d->max_size) { /* RFC 7541 4.4: empties the table, adds nothing */
		evict_to(d, 0);
		return 0;
	}
	/* copies first: n may point into an entry that the eviction frees */
	cn = malloc(nl + 1);
	cv = malloc(vl + 1);
	if (!cn || !cv) {
		free(cn);
		free(cv);
		return -ENOMEM;
	}
	memcpy(cn, n, nl);
	memcpy(cv, v, vl);
	cn[nl] = cv[vl] = 0;
	evict_to(d, d->max_size - sz);
	if (d->n == d->cap) {
		size_t nc = d->cap ? d->cap * 2 : 16;
		struct hpack_ent *ne = realloc(d->ent, nc * sizeof(*ne));
		if (!ne) {
			free(cn);
			free(cv);
			return -ENOMEM;
		}
		d->ent = ne;
		d->cap = nc;
	}
	d->ent[d->n++] = (struct hpack_ent){ .name = cn, .value = cv, .nlen = nl, .vlen = vl };
	d->size += sz;
	return 0;
}

/* index (1-based, static then dynamic newest first) -> name and value */
static int lookup(const struct hpack_dec *d, uint64_t idx, const char **n, size_t *nl,
		  const char **v, size_t *vl)
{
	if (idx == 0)
		return -EPROTO;
	if (idx <= STATIC_N) {
		*n = static_table[idx - 1][0];
		*v = static_table[idx - 1][1];
		*nl = strlen(*n);
		*vl = strlen(*v);
		return 0;
	}
	idx -= STATIC_N + 1;
	if (idx >= d->n)
		return -EPROTO;
	const struct hpack_ent *e = &d->ent[d->n - 1 - idx];
	*n = e->name;
	*nl = e->nlen;
	*v = e->value;
	*vl = e->vlen;
	return 0;
}

static int get_int(const uint8_t **p, const uint8_t *end, int prefix, uint64_t *out)
{
	uint64_t mask = (1u << prefix) - 1, v;
	int m = 0;

	if (*p >= end)
		return -EPROTO;
	v = **p & mask;
	(*p)++;
	if (v < mask) {
		*out = v;
		return 0;
	}
	while (*p < end && m <= 28) {
		uint8_t b = *(*p)++;
		v += (uint64_t)(b & 0x7f) << m;
		m += 7;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -EPROTO;
}

static int get_str(const struct hpack_dec *d, const uint8_t **p, const uint8_t *end, const char **s,
		   size_t *len)
{
	uint64_t l;
	bool huff;

	if (*p >= end)
		return -EPROTO;
	huff = **p & 0x80;
	if (get_int(p, end, 7, &l))
		return -EPROTO;
	if (l > (uint64_t)(end - *p))
		return -EPROTO;
	if (huff && !d->huff_opaque)
		return -ENOTSUP;
	*s = (const char *)*p;
	*len = (size_t)l;
	*p += l;
	return 0;
}

/* Long by the five representations of RFC 7541 section 6, each a few lines. */
int hpack_decode(struct hpack_dec *d, const uint8_t *p, size_t n, hpack_cb cb, void *arg)
{
	const uint8_t *end = p + n;
	int rc;

	while (p < end) {
		const char *name, *value;
		size_t nl, vl;
		uint64_t idx;
		uint8_t b = *p;

		if (b & 0x80) { /* indexed field */
			if ((rc = get_int(&p, end, 7, &idx)) ||
			    (rc = lookup(d, idx, &name, &nl, &value, &vl)))
				return rc;
			cb(arg, name, nl, value, vl);
			continue;
		}
		if ((b & 0xe0) == 0x20) { /* dynamic table size update */
			if ((rc = get_int(&p, end, 5, &idx)))
				return rc;
			if (idx > d->settings_max)
				return -EPROTO;
			d->max_size = (size_t)idx;
			evict_to(d, d->max_size);
			continue;
		}
		bool incr = (b & 0xc0) == 0x40;
		if ((rc = get_int(&p, end, incr ? 6 : 4, &idx)))
			return rc;
		if (idx) { /* indexed name */
			const char *dv;
			size_t dvl;
			if ((rc = lookup(d, idx, &name, &nl, &dv, &dvl)))
				return rc;
		} else if ((rc = get_str(d, &p, end, &name, &nl))) {
			return rc;
		}
		if ((rc = get_str(d, &p, end, &value, &vl)))
			return rc;
		cb(arg, name, nl, value, vl);
		if (incr && (rc = table_add(d, name, nl, value, vl)))
			return rc;
	}
	return 0;
}

static size_t put_int(uint8_t *p, uint8_t first, int prefix, size_t v)
{
	size_t mask = ((size_t)1 << prefix) - 1, o = 1;

	if (v < mask) {
		p[0] = (uint8_t)(first | v);
		return 1;
	}
	p[0] = (uint8_t)(first | mask);
	for (v -= mask; v >= 128; v >>= 7)
		p[o++] = (uint8_t)(0x80 | (v & 0x7f));
	p[o++] = (uint8_t)v;
	return o;
}

size_t hpack_put_literal(uint8_t *p, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value), o = 0;

	p[o++] = 0x00; /* without indexing, new name */
	o += put_int(p + o, 0, 7, nl);
	memcpy(p + o, name, nl);
	o += nl;
	o += put_int(p + o, 0, 7, vl);
	memcpy(p + o, value, vl);
	return o + vl;
}

size_t hpack_put_indexed(uint8_t *p, unsigned idx)
{
	return put_int(p, 0x80, 7, idx);
}
