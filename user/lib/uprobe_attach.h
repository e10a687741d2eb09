/* SPDX-License-Identifier: GPL-2.0 */
/* Attaching a uprobe once capabilities are dropped. Linux 6.16 asks CAP_SYS_ADMIN again of
 * perf_event_open of the uprobe PMU (ba677dbe77af, "perf: Revert to requiring CAP_SYS_ADMIN
 * for uprobes", taken into the stable kernels; EACCES without it, whatever the pid: a
 * uprobe placed mid-instruction corrupts the process), where 5.8 to 6.15 took CAP_PERFMON.
 * The same uprobe made through tracefs's uprobe_events is guarded by that file's mode
 * (root's, 0640), and its tracepoint by CAP_PERFMON: when the PMU refuses, the probe is made
 * there instead, one event per attachment (a BPF program attached to a tracepoint runs for
 * every perf event on it, so two processes must not share one), named
 * tailtrace_<our pid>/u<n> and deleted when its link goes. */
#ifndef TT_LIB_UPROBE_ATTACH_H
#define TT_LIB_UPROBE_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <bpf/libbpf.h>

struct uprobe_tracefs_event {
	struct bpf_link *link;
	unsigned int seq; /* the event is tailtrace_<pid>/u<seq> */
};

struct uprobe_attacher {
	struct uprobe_tracefs_event *ev; /* the live tracefs events */
	size_t nev, cap;
	unsigned int seq;
	bool pmu_refused; /* the PMU said EACCES/EPERM once: tracefs from then on */
};

/* A uprobe (ret: a return probe) of program p on path at file offset off, firing in pid
 * only (-1: every process): through the PMU, else through tracefs. NULL with errno set. */
struct bpf_link *uprobe_attacher__attach(struct uprobe_attacher *a, struct bpf_program *p, int pid,
					 const char *path, size_t off, bool ret);
/* Destroys a link of uprobe_attacher__attach (NULL: nothing) and deletes its tracefs event. */
void uprobe_attacher__detach(struct uprobe_attacher *a, struct bpf_link *l);
/* Frees the bookkeeping; every link must be detached first. */
void uprobe_attacher__free(struct uprobe_attacher *a);
/* Deletes the tracefs events of tailtrace processes that are gone (killed before they could
 * delete theirs). One still in use (a tailtrace alive in another pid namespace) cannot be
 * deleted: the kernel answers EBUSY. Returns how many were tried. */
int uprobe_tracefs_sweep(void);

#endif
