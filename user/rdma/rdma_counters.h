/* SPDX-License-Identifier: GPL-2.0 */
/* RoCE/InfiniBand port counters and PFC pause counters of the RDMA netdevs: reading a
 * (possibly fabricated) sysfs tree, per-window deltas, and the congestion-vs-transport
 * call for a window. Pure over a root directory, so tests build fake trees. */
#ifndef TT_RDMA_COUNTERS_H
#define TT_RDMA_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

enum rdma_cnt_class {
	RCC_OTHER,      /* traffic volume, informational */
	RCC_CONGESTION, /* ECN marks, CNPs, PFC pauses, xmit wait */
	RCC_TRANSPORT,  /* sequence errors, timeouts, retries, link errors */
};

enum rdma_cnt_source {
	RCS_HW,      /* ports/N/hw_counters/NAME (RoCE, vendor) */
	RCS_PORT,    /* ports/N/counters/NAME (IB PMA: port_xmit_wait, ...) */
	RCS_ETHTOOL, /* ethtool -S of the port's netdev (PFC pause) */
};

struct rdma_counter {
	char dev[64]; /* "mlx5_0/1" for hw/port counters, netdev name for ethtool */
	char name[64];
	__u8 source;   /* enum rdma_cnt_source */
	__u8 cls;      /* enum rdma_cnt_class */
	__u8 provider; /* enum rdma_provider (rdma_counter_table.h) of its device */
	__u64 value;
};

#define RDMA_CNT_WARN_MAX 8
struct rdma_counter_set {
	struct rdma_counter *c;
	size_t n, cap;
	unsigned int ndevs, nports, nnetdevs;
	/* problems met while reading (garbage values, unreadable files): kept short */
	char warn[RDMA_CNT_WARN_MAX][192];
	unsigned int nwarn, nwarn_total;
};

struct rdma_counter_delta {
	const struct rdma_counter *c; /* points into the newer set */
	__u64 delta;
	bool reset; /* went backwards (driver reload, wrap): delta is the new value */
};

/* How ethtool statistics are obtained: the SIOCETHTOOL ioctl on the live host, or the
 * text file <root>/ethtool/<netdev> (`ethtool -S` output) under a fabricated root. */
typedef int (*rdma_ethtool_fn)(const char *netdev, struct rdma_counter_set *set);

/* By name alone: the class for a device whose provider is not known. */
enum rdma_cnt_class rdma_counter_class(const char *name);
/* The class of a counter of a device of provider (enum rdma_provider): the row of
 * rdma_counter_table.c, and RCC_OTHER for a counter the provider's rows do not list as a
 * fault; by name (rdma_counter_class) for an unknown provider. */
enum rdma_cnt_class rdma_counter_class_for(int provider, const char *name, int source);
const char *rdma_counter_class_name(enum rdma_cnt_class c);
const char *rdma_counter_source_name(enum rdma_cnt_source s);

/* Reads every device and port under <root>/sys/class/infiniband (root NULL or "/" is the
 * live system), their hw_counters/ and counters/, and the pause counters of the netdevs
 * behind each port. Returns 0 (possibly with warnings in set->warn), or -ENOENT with a
 * one-line reason in msg when there is no RDMA device at all. */
int rdma_counters_read(const char *root, struct rdma_counter_set *set, char *msg, size_t msglen);
void rdma_counter_set__free(struct rdma_counter_set *set);
/* Adds the pause counters found in `ethtool -S` text to set under dev. Returns how many. */
int rdma_ethtool_parse(const char *text, const char *dev, struct rdma_counter_set *set);

/* Deltas of cur against prev, for counters present in both; returns the count written
 * to out (at most max; out may be NULL to count). */
size_t rdma_counters_delta(const struct rdma_counter_set *prev, const struct rdma_counter_set *cur,
			   struct rdma_counter_delta *out, size_t max);

/* The congestion-vs-transport call for one window. A counter "rises" when its rate in
 * the window exceeds RDMA_RISE_FACTOR times its running baseline rate (an EWMA over the
 * previous windows) by at least RDMA_RISE_MIN events; the first window has no baseline,
 * so any increase rises. */
#define RDMA_RISE_FACTOR  2.0
#define RDMA_RISE_MIN     1
#define RDMA_BASELINE_MAX 512
#define RDMA_EVIDENCE_MAX 6

enum rdma_call {
	RDMA_CALL_NONE, /* no counter rose */
	RDMA_CALL_CONGESTION,
	RDMA_CALL_TRANSPORT,
	RDMA_CALL_BOTH,
};

struct rdma_call_state {
	struct {
		__u64 hash;
		double rate; /* events per second */
	} base[RDMA_BASELINE_MAX];
	size_t nbase;
	unsigned int windows;
};

struct rdma_evidence {
	char dev[64];
	char name[64];
	__u8 cls;
	__u8 provider; /* enum rdma_provider */
	__u64 delta;
	double baseline_per_s;
};

struct rdma_window_call {
	enum rdma_call call;
	__u64 congestion_events, transport_events;  /* sums of risen counters' deltas */
	struct rdma_evidence ev[RDMA_EVIDENCE_MAX]; /* the risen counters, largest first */
	size_t nev;
};

const char *rdma_call_name(enum rdma_call c);
/* Judges one window of window_s seconds and folds it into the baseline. */
void rdma_counters_call(struct rdma_call_state *st, const struct rdma_counter_delta *d, size_t n,
			double window_s, struct rdma_window_call *out);

#endif
