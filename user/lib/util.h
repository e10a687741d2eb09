/* SPDX-License-Identifier: GPL-2.0 */
/* Small helpers every folder uses: the element count of an array and a growable array. */
#ifndef TT_LIB_UTIL_H
#define TT_LIB_UTIL_H

#include <stddef.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Makes room for `need` elements of `elem` bytes in *arr (capacity *cap, in elements),
 * doubling from 16. Returns 0, or -ENOMEM (the array is left as it was) when memory or
 * the size in bytes runs out. */
int array_reserve(void **arr, size_t *cap, size_t need, size_t elem);

/* array_reserve() for a typed pointer: ARRAY_RESERVE(s->rows, s->cap, s->n + 1) */
#define ARRAY_RESERVE(ptr, cap, need) array_reserve((void **)&(ptr), &(cap), (need), sizeof(*(ptr)))

#endif
