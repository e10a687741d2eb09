// SPDX-License-Identifier: GPL-2.0
/* SCHED_IDLE for tailtrace's own thread, with a watchdog that restores its priority while
 * it falls behind (self_prio.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include "lib/log.h"
#include "lib/clock.h"
#include "collect/privs.h"
#include "collect/self_prio.h"

bool self_prio_next(struct self_prio_state *s, const struct self_prio_sample *x)
{
	bool filling = x->ring_size && x->backlog * 4 >= x->ring_size;
	bool starved = x->period_ns && x->waited_ns * 2 >= x->period_ns;
	bool squeezed = x->period_ns && x->waited_ns * 4 >= x->period_ns;
	bool was_boosted = s->boosted;

	if (x->ring_woke) {
		/* the ring just passed a quarter and woke its reader too: give the reader a
		 * busy period to take it before judging */
		s->busy = true;
		s->unsettled_ns = x->now_ns;
		return s->boosted;
	}
	if (!s->boosted) {
		if (filling || starved) {
			s->boosted = true;
			s->boosted_at_ns = x->now_ns;
			s->boosts++;
		}
	} else if (x->now_ns - s->boosted_at_ns >= SELF_PRIO_HOLD_NS &&
		   !(x->ring_size && x->backlog * 16 >= x->ring_size)) {
		s->boosted = false;
	}
	if (was_boosted || s->boosted || squeezed) {
		s->busy = true;
		s->unsettled_ns = x->now_ns;
	} else if (s->busy && x->now_ns - s->unsettled_ns >= SELF_PRIO_CALM_NS) {
		s->busy = false;
	}
	return s->boosted;
}

__u64 self_prio_period_ns(const struct self_prio_state *s)
{
	return s->busy ? SELF_PRIO_BUSY_NS : SELF_PRIO_QUIET_NS;
}

struct self_prio {
	pthread_t thread;
	pid_t tid;        /* the thread whose priority is managed */
	int policy;       /* its normal policy: SCHED_OTHER or SCHED_BATCH */
	int schedstat_fd; /* its /proc/self/task/TID/schedstat, or -1 */
	int stop_fd;      /* eventfd, readable once the watchdog is to stop */
	int ring_ep;      /* epoll: stop_fd, and the rings edge-triggered; or -1 */
	self_prio_backlog_fn backlog;
	void *ctx;
	struct self_prio_state st;
};

enum wake { WAKE_TIME, WAKE_RING, WAKE_STOP };

/* Time the thread has waited on a run queue so far (schedstat's second field). */
static bool run_delay_ns(int fd, __u64 *out)
{
	char buf[128], *end;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return false;
	buf[n] = 0;
	/* "on_cpu waited slices": strtoull, as sscanf's setup cost more than the read */
	strtoull(buf, &end, 10);
	if (end == buf || *end != ' ')
		return false;
	*out = strtoull(end, &end, 10);
	return *end == ' ' || *end == '\n';
}

static int set_policy(pid_t tid, int policy)
{
	struct sched_param sp = { 0 };

	return sched_setscheduler(tid, policy, &sp) ? -errno : 0;
}

/* Waits until `until` (mono_ns), for the stop, and with `rings` for a ring's wakeup. The
 * rings are edge-triggered: one wakeup from the kernel wakes the watchdog once, however
 * long their data waits for the reader. */
static enum wake wait_until(struct self_prio *p, __u64 until, bool rings)
{
	for (;;) {
		__u64 now = mono_ns();
		struct epoll_event ev[4];
		struct pollfd stop = { .fd = p->stop_fd, .events = POLLIN };
		bool ring = false;
		int ms, n;

		if (now >= until)
			return WAKE_TIME;
		ms = (int)((until - now + 999999) / 1000000);
		if (!rings) {
			n = poll(&stop, 1, ms);
			if (n > 0)
				return WAKE_STOP;
		} else {
			n = epoll_wait(p->ring_ep, ev, 4, ms);
			for (int i = 0; i < n; i++) {
				if (ev[i].data.fd == p->stop_fd)
					return WAKE_STOP;
				ring = true;
			}
			if (ring)
				return WAKE_RING;
		}
		if (n < 0 && errno != EINTR)
			return WAKE_STOP; /* cannot wait: better stop watching than spin */
	}
}

static void *watchdog(void *arg)
{
	struct self_prio *p = arg;
	__u64 last = mono_ns(), waited0 = 0;
	bool have_waited = p->schedstat_fd >= 0 && run_delay_ns(p->schedstat_fd, &waited0);

	for (;;) {
		struct self_prio_sample x = { 0 };
		enum wake w;
		__u64 waited;
		bool was;

		w = wait_until(p, mono_ns() + self_prio_period_ns(&p->st),
			       p->ring_ep >= 0 && !p->st.busy);
		if (w == WAKE_STOP)
			break;
		x.now_ns = mono_ns();
		if (w == WAKE_RING) {
			x.ring_woke = true;
			self_prio_next(&p->st, &x);
			continue;
		}
		x.period_ns = x.now_ns - last;
		last = x.now_ns;
		if (have_waited && run_delay_ns(p->schedstat_fd, &waited)) {
			x.waited_ns = waited - waited0;
			waited0 = waited;
		}
		if (p->backlog && !p->backlog(p->ctx, &x.backlog, &x.ring_size))
			x.backlog = x.ring_size = 0;
		was = p->st.boosted;
		if (self_prio_next(&p->st, &x) != was) {
			int r = set_policy(p->tid, p->st.boosted ? p->policy : SCHED_IDLE);

			if (r && p->st.boosted) {
				/* refused although can_return() said yes (a privilege dropped
				 * since): the thread stays at SCHED_IDLE; say so once and stop
				 * trying */
				tt_warn("cannot restore tailtrace's priority: %s", strerror(-r));
				break;
			}
		}
	}
	return NULL;
}

/* Coming back from SCHED_IDLE needs CAP_SYS_NICE (or an RLIMIT_NICE allowing nice 0). */
static bool can_return(void)
{
	struct rlimit rl;

	if (privs_have(CAP_SYS_NICE))
		return true;
	return !getrlimit(RLIMIT_NICE, &rl) &&
	       (rl.rlim_cur == RLIM_INFINITY ||
		20 - (long)rl.rlim_cur <= getpriority(PRIO_PROCESS, 0));
}

static void self_prio_free(struct self_prio *p)
{
	if (p->schedstat_fd >= 0)
		close(p->schedstat_fd);
	if (p->ring_ep >= 0)
		close(p->ring_ep);
	if (p->stop_fd >= 0)
		close(p->stop_fd);
	free(p);
}

static void watchdog_join(struct self_prio *p)
{
	__u64 one = 1;

	if (write(p->stop_fd, &one, sizeof(one)) != sizeof(one))
		tt_warn("cannot stop the priority watchdog: %s", strerror(errno));
	pthread_join(p->thread, NULL);
}

/* The stop eventfd, and the epoll that also watches the rings (none: ring_ep stays -1). */
static int wake_setup(struct self_prio *p, const int *wake_fds, unsigned int nwake_fds)
{
	struct epoll_event ev = { .events = EPOLLIN };

	p->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (p->stop_fd < 0)
		return -1;
	if (!nwake_fds)
		return 0;
	p->ring_ep = epoll_create1(EPOLL_CLOEXEC);
	ev.data.fd = p->stop_fd;
	if (p->ring_ep < 0 || epoll_ctl(p->ring_ep, EPOLL_CTL_ADD, p->stop_fd, &ev))
		return -1;
	for (unsigned int i = 0; i < nwake_fds; i++) {
		ev.events = EPOLLIN | EPOLLET;
		ev.data.fd = wake_fds[i];
		if (epoll_ctl(p->ring_ep, EPOLL_CTL_ADD, wake_fds[i], &ev))
			return -1;
	}
	return 0;
}

struct self_prio *self_prio__start(self_prio_backlog_fn backlog, void *ctx, const int *wake_fds,
				   unsigned int nwake_fds)
{
	sigset_t all, old;
	struct self_prio *p;
	char path[64];
	int policy = sched_getscheduler(0), nice, r;

	errno = 0;
	nice = getpriority(PRIO_PROCESS, 0);
	if ((policy != SCHED_OTHER && policy != SCHED_BATCH) || errno || nice < 0 || !can_return())
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->stop_fd = p->ring_ep = -1;
	p->tid = (pid_t)syscall(SYS_gettid);
	p->policy = policy;
	p->backlog = backlog;
	p->ctx = ctx;
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)p->tid);
	p->schedstat_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (wake_setup(p, wake_fds, nwake_fds)) {
		self_prio_free(p);
		return NULL;
	}
	/* the watchdog is created before the demotion, so it keeps the normal policy; with
	 * every signal blocked, so SIGINT/SIGTERM still interrupt the main thread's wait */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&p->thread, NULL, watchdog, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		self_prio_free(p);
		return NULL;
	}
	pthread_setname_np(p->thread, "tailtrace-prio");
	if (set_policy(p->tid, SCHED_IDLE)) {
		watchdog_join(p);
		self_prio_free(p);
		return NULL;
	}
	return p;
}

void self_prio__stop(struct self_prio *p)
{
	if (!p)
		return;
	watchdog_join(p);
	set_policy(p->tid, p->policy);
	if (log_verbose())
		fprintf(stderr, "tailtrace went back to normal priority %llu time(s) to keep up\n",
			(unsigned long long)p->st.boosts);
	self_prio_free(p);
}
