/* SPDX-License-Identifier: GPL-2.0 */
/* The live collector: loads bpf/tailtrace.bpf.c with the user's filters, attaches what this
 * kernel supports (through bpf_links only), and turns map contents and request events into
 * snapshots. The only module that talks to the kernel for the TCP/sched stages. */
#ifndef TT_COLLECTOR_H
#define TT_COLLECTOR_H

#include <stdbool.h>
#include "tailtrace.h"
#include "core/snapshot.h"
#include "collect/kernel_caps.h"

struct collector;

enum collector_feature {
	COLL_REQUESTS = 1u << 0,   /* request segmentation + scheduler view (explain, record) */
	COLL_SLOW_REQS = 1u << 1,  /* keep slow requests for the flight recorder */
	COLL_SCHED_HIST = 1u << 2, /* per-request sched.* histograms (hist --stage sched.*) */
};

/* What a collector traces and keeps: the commands fill it from their options
 * (cmd/session.c), so the collector knows no command line. */
struct collector_config {
	unsigned int features; /* COLL_* */
	/* which traffic: a process (tgid, 0 any), a comm, a cgroup v2 directory, ports
	 * (local or remote), devices ([NETNS/]IFNAME) */
	__u32 pid;
	char comm[TT_COMM_LEN];
	char cgroup_path[4096];
	__u16 ports[TT_MAX_PORTS];
	int nports;
	char devs[TT_MAX_DEVS][80];
	int ndevs;
	int by;            /* enum tt_group_by: the histograms' groups */
	int role;          /* enum tt_role: the side whose requests are kept */
	bool nic_stages;   /* a stage of the driver/softirq programs was asked for (SF_NIC) */
	bool cuda;         /* uprobes on libcuda's syncs (with COLL_REQUESTS) */
	bool tls_uprobes;  /* uprobes on libssl's reads and writes (with COLL_REQUESTS) */
	double budget_pct; /* % of one CPU, 0: none */
	double deep_duty;  /* the deep tier's share of the time: 1 always, 0 never */
};

/* Opens, loads and attaches. On failure returns a negative errno with a one-line reason in
 * err; *usage is set when the cause was the user's input (exit status 2). */
int collector__open(struct collector **out, const struct collector_config *cfg, char *err,
		    size_t errlen, bool *usage);
/* Stages this kernel could not feed, with the reason, for one stderr line each. */
/* One map read through an open fd: 0, or -errno (EPERM where the kernel wants CAP_BPF for
 * it). The ctx is the collector. */
int collector__read_check(void *ctx);
int collector__unavailable(const struct collector *c, enum tt_stage *stages, const char **why,
			   int max);

/* Consumes request events; returns number consumed or negative errno (-EINTR ok). */
int collector__poll(struct collector *c, int timeout_ms);
/* Bytes of request events waiting in the ring buffer, and its size; false if unknown.
 * Safe to call from another thread. */
bool collector__backlog(const struct collector *c, __u64 *used, __u64 *size);
/* The request rings' fds (readable once the BPF side wakes their reader); their count. */
unsigned int collector__ring_fds(const struct collector *c, const int **fds);
/* Moves everything measured since the last call into s (initialised by the caller):
 * histograms (CPUs merged, keys deleted from the kernel maps), counter deltas, drop
 * reasons, device names, evictions, the attribution aggregate and slow requests. */
int collector__snapshot(struct collector *c, struct snapshot *s);
void collector__close(struct collector *c);

#endif
