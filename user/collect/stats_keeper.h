/* SPDX-License-Identifier: GPL-2.0 */
/* Turning the kernel's BPF run-time statistics on (BPF_ENABLE_STATS) needs CAP_SYS_ADMIN
 * each time, and a tracing session drops its capabilities once attached. The keeper is a
 * child forked before the drop: it keeps CAP_SYS_ADMIN alone, holds no other descriptor
 * than its end of a socket pair, and turns the statistics on ('1') or off ('0') when its
 * parent asks. It is not dumpable (no ptrace from the unprivileged parent) and dies with
 * its parent (PR_SET_PDEATHSIG) or when the socket closes. */
#ifndef TT_STATS_KEEPER_H
#define TT_STATS_KEEPER_H

#include <stdbool.h>
#include <sys/types.h>

struct stats_keeper {
	int sock;    /* -1: no keeper */
	pid_t pid;   /* the child */
	int pending; /* requests sent, not answered yet */
	int last;    /* its last answer: 1 on, 0 off, -1 refused */
};

/* Forks the keeper; the statistics start off. 0, or -errno (then k->sock is -1). Call it
 * before any thread starts and while CAP_SYS_ADMIN is held. */
int stats_keeper__start(struct stats_keeper *k);
/* Asks for the statistics on or off, without waiting: the collector's thread must not
 * wait for another process on a saturated host. 0, or -errno. */
int stats_keeper__ask(struct stats_keeper *k, bool on);
/* The keeper's answers so far, waiting at most wait_ms for the first: 1 when the last
 * request was done and the statistics are on, 0 off, -EAGAIN while a request is
 * unanswered, -EPERM when the keeper could not, other -errno when it is gone. */
int stats_keeper__answer(struct stats_keeper *k, int wait_ms);
/* Closes the socket (the keeper closes its statistics fd and exits) and reaps it. */
void stats_keeper__stop(struct stats_keeper *k);

#endif
