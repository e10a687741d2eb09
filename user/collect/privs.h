/* SPDX-License-Identifier: GPL-2.0 */
/* Privilege checks made before touching BPF, so a missing capability gets one clear line. */
#ifndef TT_PRIVS_H
#define TT_PRIVS_H

#include <stdbool.h>
#include <linux/types.h>

#define PRIV_BIT(cap) (1ULL << (cap))

/* True when the capability (CAP_*) is in the effective set. */
bool privs_have(int cap);
/* Fails with one line (and exit status 1 from the caller) when privileges are missing. */
bool privs_require(void);
/* Once attached: keeps only the capabilities in keep (PRIV_BIT(CAP_*) ORed), in the
 * effective, permitted and bounding sets; clears the inheritable and ambient sets and sets
 * no-new-privs, so no later execve() gets any back. When CAP_SYS_NICE goes, RLIMIT_NICE is
 * raised to allow nice 0 first (coming back from SCHED_IDLE); where that is refused (no
 * CAP_SYS_RESOURCE), CAP_SYS_NICE is kept instead. Capabilities belong to a
 * thread: call it before starting any thread. Returns 0 or -errno. */
int privs_drop(__u64 keep);
/* The same, keeping exactly `keep` (no CAP_SYS_NICE for a watchdog): for a process that
 * never changes its priority. */
int privs_drop_to(__u64 keep);
/* Whether `probe` returns 0 with the capabilities `caps` out of the effective set (they are
 * put back before returning): tells what a kernel checks after attach. */
bool privs_enough_without(__u64 caps, int (*probe)(void *ctx), void *ctx);

#endif
