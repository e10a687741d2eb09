/* SPDX-License-Identifier: GPL-2.0 */
/* The report of several hosts' recordings (`report DIR1 DIR2 ...`): each stage's p50 and
 * p99 per host next to the fleet's, each host's verdict, then (unless compare_only, i.e.
 * --by host) each host's own report under its name. Pure: windows in, text out. */
#ifndef TT_HOST_REPORT_H
#define TT_HOST_REPORT_H

#include <stdbool.h>
#include <stdio.h>
#include "record/host_window.h"

/* fleet: host_set__fleet() of hs; sources: the paths given, for the heading. */
int host_report_print_text(FILE *f, const struct host_set *hs, const struct snapshot *fleet,
			   char *const *sources, int nsources, bool compare_only);
int host_report_print_json(FILE *f, const struct host_set *hs, const struct snapshot *fleet,
			   char *const *sources, int nsources, bool compare_only);

#endif
