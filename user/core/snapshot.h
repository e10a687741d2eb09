/* SPDX-License-Identifier: GPL-2.0 */
/* One interval's worth of everything tailtrace measured, as plain structs: what the
 * collector reads from the kernel, what `record` stores and `report` merges. */
#ifndef TT_SNAPSHOT_H
#define TT_SNAPSHOT_H

#include <stddef.h>
#include <linux/types.h>
#include "tailtrace.h"

struct snap_hist {
	struct hist_key key;
	struct hist h; /* CPUs already merged */
};

struct snap_dev {
	struct dev_key key;
	char name[TT_IFNAME_LEN];
};

/* NAPI polls of one instance over the interval (bpf/nic.bpf.h). */
struct snap_napi {
	struct napi_key key;
	struct napi_count c;
};

/* One CPU's /proc/net/softnet_stat counters over the interval (deltas). */
struct snap_softnet {
	__u32 cpu;
	__u32 pad;
	__u64 processed;    /* packets taken off the backlog / NAPI */
	__u64 dropped;      /* the backlog was full (netdev_max_backlog) */
	__u64 time_squeeze; /* net_rx_action ran out of budget or time with work left */
	__u64 received_rps; /* RPS/RFS inter-processor interrupts received */
	__u64 flow_limit;   /* packets dropped by the flow limit */
};

/* One BPF program's work over the interval, by the kernel's accounting (collect/self_cost.h). */
#define SNAP_PROGS_MAX 48
#define SNAP_PROG_NAME 32

struct snap_prog {
	char name[SNAP_PROG_NAME]; /* the hook, e.g. "tcp_probe" */
	__u64 runs;
	__u64 run_ns;
};

/* A host name as record stores it (the segment header's limit, docs/record-format.md). */
#define SNAP_HOST_LEN 256

/* An aggregate a room above core/ keeps in a snapshot (attr/'s attribution aggregate)
 * starts with this: core/ makes, merges and frees it through its ops without including
 * that room's headers (includes point down, docs/design.md). */
struct snapshot_agg_ops {
	void *(*create)(void);
	void (*merge)(void *dst, const void *src);
	void (*destroy)(void *agg);
};
struct snapshot_agg {
	const struct snapshot_agg_ops *ops;
};

struct snapshot {
	__u64 start_ns; /* CLOCK_REALTIME of the interval start */
	__u64 end_ns;
	/* the host that recorded it (record --host, else the node name); "" when unknown */
	char host[SNAP_HOST_LEN];
	struct snap_hist *hists;
	size_t nhists, hists_cap;
	struct snap_dev *devs;
	size_t ndevs, devs_cap;
	__u64 counters[CNT__MAX];
	__u64 drop_reasons[TT_DROP_REASONS];
	__u64 hist_evicted;  /* histogram keys evicted by the LRU map */
	__u64 hist_live;     /* histogram keys present at snapshot time */
	__u64 events_lost;   /* ring buffer events lost (also in counters) */
	__u64 pkt_unmatched; /* per-packet/per-send stamps evicted or never matched */
	/* flight recorder: requests above the adaptive threshold, bounded per interval */
	struct req_event *slow_reqs;
	size_t nslow, slow_cap;
	__u64 slow_cut; /* slow requests not kept because the bound was hit */
	__u64 slow_threshold_ns;
	/* tailtrace's own cost over the interval */
	double self_cpu_s;
	__u64 self_rss_kb;
	struct snap_prog progs[SNAP_PROGS_MAX];
	size_t nprogs;
	/* sampling (--budget, collect/budget.h): share of flows traced in the interval (0: not
	 * sampled, as 1) and the budget in percent of one CPU (0: none). Histograms and
	 * counters are already scaled up; the error sampling puts on each p99 comes from them
	 * (snapshot__p99_error). */
	double sample_rate;
	double budget_pct;
	/* what tailtrace costs with no flow traced (collect/budget.h budget_floor), % of one
	 * CPU; 0: not estimated (the rate has not moved enough) */
	double budget_floor_pct;
	/* the deep tier (collect/deep_plan.h): its duty (1: always on, 0: never), how long it
	 * ran in the interval, of how long (0: not duty-cycled), windows it opened and how
	 * many of them the tail trigger opened */
	double deep_duty, deep_duty_asked; /* --budget may hold the duty below the asked */
	__u64 deep_ns, deep_span_ns;
	__u32 deep_windows, deep_triggered;
	/* opaque mergeable attribution aggregate (user/attr/attribution.h), may be NULL: it
	 * starts with a struct snapshot_agg, through which core/ merges and frees it */
	struct attr_agg *attr;
	/* hash indexes over hists[] and devs[] by key, so adding and merging cost O(1) a key
	 * instead of a scan: change hists/devs only through the functions below */
	struct snap_index *hist_idx, *dev_idx;
	/* the driver/softirq part, when its programs ran (bpf/nic.bpf.h) */
	struct snap_napi *napi;
	size_t nnapi, napi_cap;
	struct snap_softnet *softnet;
	size_t nsoftnet, softnet_cap;
};

void snapshot__init(struct snapshot *s);
void snapshot__free(struct snapshot *s);
/* Adds (merges) a histogram under key: same key -> hist_add, a new key is appended (the
 * order of first appearance is kept). Returns 0 or -ENOMEM. */
int snapshot__add_hist(struct snapshot *s, const struct hist_key *key, const struct hist *h);
/* The histogram of key, a zeroed one appended when key is new; NULL when out of memory. */
struct hist *snapshot__hist(struct snapshot *s, const struct hist_key *key);
/* Adds (sums) a NAPI instance's or a CPU's softnet counters. Return 0 or -ENOMEM. */
int snapshot__add_napi(struct snapshot *s, const struct napi_key *key, const struct napi_count *c);
int snapshot__add_softnet(struct snapshot *s, const struct snap_softnet *row);
/* Adds a device under key; a key already present keeps its first name. 0 or -ENOMEM. */
int snapshot__add_dev(struct snapshot *s, const struct dev_key *key, const char *name);
const char *snapshot__dev_name(const struct snapshot *s, __u32 netns, __u32 ifindex);
/* How every output names a device: its name, or "ifindex N" when the snapshot has none
 * (s may be NULL); and a qdisc handle as tc writes it ("8001:a"). */
void snapshot__dev_label(const struct snapshot *s, __u32 netns, __u32 ifindex, char *buf,
			 size_t len);
void qdisc_label(__u32 handle, char *buf, size_t len);
/* dst += src: histograms by key, counters, devices, slow requests (all of them: bounding is
 * the collector's job per interval, and record/'s rec_window_merge() bounds a report).
 * dst keeps its host name; an unnamed dst takes src's.
 * Linear in src's size: keys are found through dst's indexes. */
/* Adds a program's runs and run time under its name (a merge of intervals sums them). */
void snapshot__add_prog(struct snapshot *s, const char *name, __u64 runs, __u64 run_ns);
/* Runs per second and ns per run of a program's figures (0 when undefined), and the run time
 * of all programs, ns. */
double prog_runs_per_s(const struct snap_prog *p, double seconds);
double prog_ns_per_run(const struct snap_prog *p);
__u64 snap_prog_time_ns(const struct snapshot *s);
/* The share of flows traced: 1 when the snapshot was not sampled. */
double snapshot__sample_rate(const struct snapshot *s);
/* The error sampling (--budget) puts on the p99 of one of s's histograms: hist_p99_error at
 * s's rate, 0 for the driver and softirq stages, which time every packet of the ports. */
double snapshot__hist_p99_error(const struct snapshot *s, const struct snap_hist *sh);
/* Sampled events a histogram needs before its p99's error enters the summary: ten beyond
 * the p99. Fewer, and the p99 is near the largest sample whatever the rate. */
#define SNAP_P99_ERROR_MIN_SEEN 1000
/* The summary of the p99 errors sampling gives: the largest snapshot__hist_p99_error over
 * the histograms with SNAP_P99_ERROR_MIN_SEEN sampled events, computed from s's own
 * histograms (a window of intervals has more samples than any of them), and its stage in
 * *stage (-1: none qualifies, or no sampling). 0 when every flow was traced. */
double snapshot__p99_error(const struct snapshot *s, int *stage);
int snapshot__merge(struct snapshot *dst, const struct snapshot *src);
/* Histogram keys and devices of src that dst does not hold yet (what a merge would add).
 * 0 or -ENOMEM. */
int snapshot__count_new(struct snapshot *dst, const struct snapshot *src, size_t *hists,
			size_t *devs);

#endif
