// SPDX-License-Identifier: GPL-2.0
/* Durations and dates for people (lib/format.h). */
#include <stdio.h>
#include <time.h>
#include "lib/format.h"

void fmt_duration(char *buf, size_t len, double ns, enum dur_style style)
{
	switch (style) {
	case DUR_PROSE:
		if (ns >= 1e9)
			snprintf(buf, len, "%.2f s", ns / 1e9);
		else if (ns >= 1e6)
			snprintf(buf, len, "%.1f ms", ns / 1e6);
		else
			snprintf(buf, len, "%.0f us", ns / 1e3);
		return;
	case DUR_FINE:
		if (ns < 1e3) {
			snprintf(buf, len, "%.0fns", ns);
			return;
		}
		if (ns >= 1e9) {
			snprintf(buf, len, "%.3fs", ns / 1e9);
			return;
		}
		break;
	case DUR_TABLE:
		if (ns >= 1e9) {
			snprintf(buf, len, "%.2fs", ns / 1e9);
			return;
		}
		break;
	}
	if (ns >= 1e6)
		snprintf(buf, len, "%.2fms", ns / 1e6);
	else
		snprintf(buf, len, "%.1fus", ns / 1e3);
}

void fmt_utc(char *buf, size_t len, __u64 ns)
{
	time_t t = (time_t)(ns / 1000000000ULL);
	struct tm tm;

	if (!ns || !gmtime_r(&t, &tm)) {
		snprintf(buf, len, "-");
		return;
	}
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
