/* SPDX-License-Identifier: GPL-2.0 */
/* What the segment files share and nothing outside user/record/ uses. */
#ifndef TT_SEGMENT_INT_H
#define TT_SEGMENT_INT_H

#include <stddef.h>
#include <linux/types.h>
#include "record/record_format.h"

/* The n-byte little-endian number at p (segment_read.c). */
__u64 rec_get_le(const __u8 *p, int n);
/* Sets d's message and offset; returns err, so a caller can return it at once. */
int rec_diag_set(struct rec_diag *d, int err, __u64 off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Grows *arr, of elem-byte elements, to hold need (capacity doubling). 0 or -ENOMEM. */
int rec_grow_array(void **arr, size_t *cap, size_t need, size_t elem);

/* The named columns of a NIC frame (docs/record-format.md): names, not positions, so a
 * later build can add a column that an older reader skips. */
#define REC_NAPI_COLS    3 /* polls, exhausted, packets */
#define REC_SOFTNET_COLS 5 /* processed, dropped, time_squeeze, received_rps, flow_limit */
extern const char *const rec_napi_cols[REC_NAPI_COLS];
extern const char *const rec_softnet_cols[REC_SOFTNET_COLS];

#endif
