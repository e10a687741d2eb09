/* SPDX-License-Identifier: GPL-2.0 */
/* How tailtrace writes a duration and a date for a person: one function each, so every
 * output agrees. */
#ifndef TT_LIB_FORMAT_H
#define TT_LIB_FORMAT_H

#include <stddef.h>
#include <linux/types.h>

enum dur_style {
	DUR_TABLE, /* table cells: 0.5us, 12.3us, 4.56ms, 1.23s */
	DUR_FINE,  /* down to ns: 500ns, 12.3us, 4.56ms, 1.234s */
	DUR_PROSE, /* sentences: 12 us, 4.6 ms, 1.23 s */
};

/* ns as a duration in the given style, cut to fit buf */
void fmt_duration(char *buf, size_t len, double ns, enum dur_style style);
/* A CLOCK_REALTIME time in ns as ISO 8601 UTC (2026-12-02T14:05:09Z); "-" for 0. */
void fmt_utc(char *buf, size_t len, __u64 ns);

#endif
