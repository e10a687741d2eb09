/* SPDX-License-Identifier: GPL-2.0 */
/* tailtrace's own work (taking request events, attribution, snapshots, encoding) runs at
 * SCHED_IDLE, so it never holds a CPU that a thread of the traced service wakes up to
 * want: the kernel preempts an idle-policy thread as soon as any normal thread becomes
 * runnable. A watchdog thread puts it back to its normal priority while it falls behind
 * (the request ring filling up, or the thread starved of CPU), so a saturated host costs
 * no events. The watchdog looks every 250 ms while all is calm and every 50 ms once
 * something is not: on this kind of VM each wakeup of a thread costs ~45 us of CPU, so
 * looking 20 times a second on a quiet host was a third of tailtrace's fixed cost. The
 * ring waking its reader at a quarter full wakes the watchdog too (edge-triggered), so a
 * burst that fills the ring between two looks is not missed. */
#ifndef TT_SELF_PRIO_H
#define TT_SELF_PRIO_H

#include <stdbool.h>
#include <linux/types.h>

#define SELF_PRIO_QUIET_NS 250000000ULL  /* how often the watchdog looks while all is calm */
#define SELF_PRIO_BUSY_NS  50000000ULL   /* ... and while it is not */
#define SELF_PRIO_CALM_NS  1000000000ULL /* calm this long before looking less often */
#define SELF_PRIO_HOLD_NS  1000000000ULL /* normal priority lasts at least this long */

/* What the watchdog saw in one period. */
struct self_prio_sample {
	__u64 now_ns;    /* CLOCK_MONOTONIC */
	__u64 backlog;   /* bytes waiting in the request ring */
	__u64 ring_size; /* its size (0: no ring) */
	__u64 waited_ns; /* time the thread was runnable but not running, this period */
	__u64 period_ns; /* length of the period */
	bool ring_woke;  /* woken by a ring's wakeup, before the period ended: the
			  * fields above are not measured (only now_ns is) */
};

struct self_prio_state {
	bool boosted; /* at normal priority now */
	__u64 boosted_at_ns;
	__u64 boosts;       /* times it went back to normal priority */
	bool busy;          /* looking every SELF_PRIO_BUSY_NS */
	__u64 unsettled_ns; /* when something was last not calm */
};

/* Pure decision, one call per period: true when the thread should run at its normal
 * priority. Boost when the ring is a quarter full or the thread waited for a CPU more
 * than half the period; go back to idle after SELF_PRIO_HOLD_NS once the ring is below a
 * sixteenth. Also picks the next period: busy (SELF_PRIO_BUSY_NS) from a ring's wakeup,
 * a boost or a wait over a quarter of the period, until SELF_PRIO_CALM_NS without any. */
bool self_prio_next(struct self_prio_state *s, const struct self_prio_sample *x);
/* How long the watchdog waits before it looks again. */
__u64 self_prio_period_ns(const struct self_prio_state *s);

struct self_prio;
/* Reports the ring's fill level; returns false when it is not known. */
typedef bool (*self_prio_backlog_fn)(void *ctx, __u64 *used, __u64 *size);

/* Moves the calling thread to SCHED_IDLE and starts its watchdog, which also wakes when
 * one of wake_fds (the request rings) signals readable. Does nothing (returns NULL) when
 * the thread does not run SCHED_OTHER/SCHED_BATCH at nice >= 0 (the user chose its
 * priority), or when it could not come back from SCHED_IDLE (no CAP_SYS_NICE). */
struct self_prio *self_prio__start(self_prio_backlog_fn backlog, void *ctx, const int *wake_fds,
				   unsigned int nwake_fds);
/* Back to normal priority for good, watchdog stopped (-v logs how often it restored
 * the priority). NULL is fine. */
void self_prio__stop(struct self_prio *p);

#endif
