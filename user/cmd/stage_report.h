/* SPDX-License-Identifier: GPL-2.0 */
/* Renders a snapshot's stage histograms and counters as text or JSON (the `hist` contract,
 * also used by `report`). Pure: snapshot in, text out. */
#ifndef TT_STAGE_REPORT_H
#define TT_STAGE_REPORT_H

#include <stdbool.h>
#include <stdio.h>
#include "lib/json.h"
#include "core/snapshot.h"

struct stage_report_opts {
	const int *stages; /* selected stages (enum tt_stage); NULL = the default set */
	int nstages;
	double duration_s;
	bool chart; /* text: draw a bucket chart under each row */
};

/* Group and place labels of a histogram key ("port 7000", "dev eth0 qdisc 1:0"). */
void stage_report_group(const struct hist_key *k, char *buf, size_t len);
void stage_report_place(const struct snapshot *s, const struct hist_key *k, char *buf, size_t len);
/* Name of a kernel drop reason (SKB_DROP_REASON_*), from vmlinux BTF when available. */
const char *drop_reason_name(unsigned int reason, char *buf, size_t len);
bool stage_report_selected(const struct stage_report_opts *ro, int stage);

/* A duration for tables: "850ns", "12.5us", "3.20ms", "1.250s". */
/* count, mean_ns, p50_ns ... max_ns, overflow of one histogram into an open object. */
/* One row: count, mean, p50, p90, p99, p99.9 and max, durations down to ns (rdma). */
void hist_summary_print_row(FILE *f, const struct hist *h);
void hist_summary_print_json(struct json_writer *w, const struct hist *h);
/* Writes the "duration_s", "stages" and "counters" keys into an open JSON object. */
void stage_report_print_json(const struct snapshot *s, const struct stage_report_opts *ro,
			     struct json_writer *w);
void stage_report_counters_print_json(const struct snapshot *s, struct json_writer *w);
void stage_report_print_text(const struct snapshot *s, const struct stage_report_opts *ro, FILE *f);
void stage_report_counters_print_text(const struct snapshot *s, FILE *f);
/* nic_report.c: NAPI polls against their budget per device and queue, BQL stalls and the
 * per-CPU softnet_stat counters of the interval; nothing when the driver/softirq
 * programs did not run. */
void nic_report_text(const struct snapshot *s, double duration_s, FILE *f);
void nic_report_json(const struct snapshot *s, double duration_s, struct json_writer *w);
/* tailtrace's own cost: its CPU and RSS, each program's events per second and ns per event
 * (the kernel's accounting), the sampling rate in force and its p99 error ("self"). Also
 * part of the counters' output above. */
void stage_report_self_print_text(const struct snapshot *s, FILE *f);
void stage_report_self_print_json(const struct snapshot *s, struct json_writer *w);

#endif
