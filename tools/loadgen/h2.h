/* SPDX-License-Identifier: GPL-2.0 */
/* HTTP/2 framing and HPACK as far as loadgen's h2c/gRPC mode needs (RFC 9113, RFC 7541). */
#ifndef TT_LOADGEN_H2_H
#define TT_LOADGEN_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define H2_PREFACE     "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define H2_PREFACE_LEN 24
#define H2_HDR_LEN     9
#define H2_DEF_WINDOW  65535
#define H2_DEF_FRAME   16384
#define H2_MAX_WINDOW  0x7fffffff
#define GRPC_PREFIX    5 /* compressed flag, u32 big-endian length */

enum h2_type {
	H2_DATA = 0,
	H2_HEADERS = 1,
	H2_PRIORITY = 2,
	H2_RST_STREAM = 3,
	H2_SETTINGS = 4,
	H2_PUSH_PROMISE = 5,
	H2_PING = 6,
	H2_GOAWAY = 7,
	H2_WINDOW_UPDATE = 8,
	H2_CONTINUATION = 9,
};
#define H2_F_END_STREAM  0x1
#define H2_F_ACK         0x1
#define H2_F_END_HEADERS 0x4
#define H2_F_PADDED      0x8
#define H2_F_PRIORITY    0x20

enum h2_setting {
	H2_S_HEADER_TABLE_SIZE = 1,
	H2_S_ENABLE_PUSH = 2,
	H2_S_MAX_CONCURRENT_STREAMS = 3,
	H2_S_INITIAL_WINDOW_SIZE = 4,
	H2_S_MAX_FRAME_SIZE = 5,
	H2_S_MAX_HEADER_LIST_SIZE = 6,
};

struct h2_frame {
	uint32_t len;
	uint8_t type, flags;
	uint32_t sid;
};

void h2_put_hdr(uint8_t *p, uint32_t len, uint8_t type, uint8_t flags, uint32_t sid);
void h2_get_hdr(const uint8_t *p, struct h2_frame *f);
static inline void h2_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}
static inline uint32_t h2_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
/* a frame's payload without its padding (and the priority fields of HEADERS); -1 when the
 * padding is longer than the frame */
int h2_unpad(const struct h2_frame *f, const uint8_t **p, uint32_t *len);
/* one SETTINGS entry (6 bytes) / a WINDOW_UPDATE frame (13 bytes) at p; bytes written */
size_t h2_put_setting(uint8_t *p, uint16_t id, uint32_t v);
size_t h2_put_window_update(uint8_t *p, uint32_t sid, uint32_t inc);

/* HPACK decoding: static table, dynamic table with eviction, integers, literal strings.
 * Huffman-coded strings are refused (-ENOTSUP): loadgen and grpcio do not send them; a
 * proxy does (nginx's grpc_pass). With huff_opaque they are passed on still coded, for a
 * reader that ignores the fields' values (the server): the table then counts their coded
 * lengths, never longer than the decoded ones (an encoder codes only what it shortens), so
 * it evicts no earlier than the encoder and every index the encoder sends stays valid. */
struct hpack_ent {
	char *name, *value;
	size_t nlen, vlen;
};
struct hpack_dec {
	struct hpack_ent *ent; /* oldest first */
	size_t n, cap;
	size_t size, max_size; /* RFC 7541 4.1 sizes: name + value + 32 */
	size_t settings_max;   /* what we advertised (SETTINGS_HEADER_TABLE_SIZE) */
	bool huff_opaque;      /* Huffman-coded strings passed on coded (above) */
};
typedef void (*hpack_cb)(void *arg, const char *name, size_t nlen, const char *value, size_t vlen);
void hpack_dec_init(struct hpack_dec *d, size_t table_size);
void hpack_dec_free(struct hpack_dec *d);
int hpack_decode(struct hpack_dec *d, const uint8_t *p, size_t n, hpack_cb cb, void *arg);

/* HPACK encoding: "literal header field without indexing, new name", no Huffman; and one
 * static-table index. Bytes written; the caller gives room (at most 11 + nlen + vlen). */
size_t hpack_put_literal(uint8_t *p, const char *name, const char *value);
size_t hpack_put_indexed(uint8_t *p, unsigned idx);

#endif
