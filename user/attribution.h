/* SPDX-License-Identifier: GPL-2.0 */
/* Per-request attribution into compute, transport and congestion, and the tail-vs-median
 * verdict. Pure code over struct req_event (bpf/tailtrace.h); docs/attribution.md defines
 * the model. The aggregate is mergeable so `record`/`report` can answer any time window. */
#ifndef TT_ATTRIBUTION_H
#define TT_ATTRIBUTION_H

#include <stddef.h>
#include <linux/types.h>
#include "tailtrace.h"

struct attr_agg; /* opaque, mergeable */

struct attr_agg *attr_agg__new(void);
void attr_agg__free(struct attr_agg *a);
void attr_agg__add(struct attr_agg *a, const struct req_event *ev);
void attr_agg__merge(struct attr_agg *dst, const struct attr_agg *src);
/* Versioned, self-describing byte encoding for record segments; decode validates all
 * lengths and returns -EINVAL (never crashes) on corrupt input. */
int attr_agg__encode(const struct attr_agg *a, void **buf, size_t *len);
int attr_agg__decode(struct attr_agg **out, const void *buf, size_t len);

#endif
