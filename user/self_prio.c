// SPDX-License-Identifier: GPL-2.0
/* SCHED_IDLE for tailtrace's own thread, with a watchdog that restores its priority while
 * it falls behind (self_prio.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include "log.h"
#include "mono_clock.h"
#include "privs.h"
#include "self_prio.h"

bool self_prio_next(struct self_prio_state *s, const struct self_prio_sample *x)
{
	bool filling = x->ring_size && x->backlog * 4 >= x->ring_size;
	bool starved = x->period_ns && x->waited_ns * 2 >= x->period_ns;

	if (!s->boosted) {
		if (filling || starved) {
			s->boosted = true;
			s->boosted_at_ns = x->now_ns;
			s->boosts++;
		}
		return s->boosted;
	}
	if (x->now_ns - s->boosted_at_ns >= SELF_PRIO_HOLD_NS &&
	    !(x->ring_size && x->backlog * 16 >= x->ring_size))
		s->boosted = false;
	return s->boosted;
}

struct self_prio {
	pthread_t thread;
	pid_t tid;			/* the thread whose priority is managed */
	int policy;			/* its normal policy: SCHED_OTHER or SCHED_BATCH */
	int schedstat_fd;		/* its /proc/self/task/TID/schedstat, or -1 */
	self_prio_backlog_fn backlog;
	void *ctx;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	struct self_prio_state st;
};

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

static void *watchdog(void *arg)
{
	struct self_prio *p = arg;
	__u64 last = mono_ns(), waited0 = 0;
	bool have_waited = p->schedstat_fd >= 0 && run_delay_ns(p->schedstat_fd, &waited0);

	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		struct self_prio_sample x = { 0 };
		struct timespec until;
		__u64 waited;
		bool was;

		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += (long)SELF_PRIO_PERIOD_NS;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		while (!p->stop && pthread_cond_timedwait(&p->wake, &p->lock, &until) != ETIMEDOUT)
			;
		if (p->stop)
			break;
		x.now_ns = mono_ns();
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
				/* refused although can_return() said yes (a privilege dropped since):
				 * the thread stays at SCHED_IDLE; say so once and stop trying */
				tt_warn("cannot restore tailtrace's priority: %s", strerror(-r));
				break;
			}
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Coming back from SCHED_IDLE needs CAP_SYS_NICE (or an RLIMIT_NICE allowing nice 0). */
static bool can_return(void)
{
	struct rlimit rl;

	if (privs_have(CAP_SYS_NICE))
		return true;
	return !getrlimit(RLIMIT_NICE, &rl) &&
	       (rl.rlim_cur == RLIM_INFINITY || 20 - (long)rl.rlim_cur <= getpriority(PRIO_PROCESS, 0));
}

static void self_prio_free(struct self_prio *p)
{
	if (p->schedstat_fd >= 0)
		close(p->schedstat_fd);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static void watchdog_join(struct self_prio *p)
{
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
}

struct self_prio *self_prio__start(self_prio_backlog_fn backlog, void *ctx)
{
	pthread_condattr_t ca;
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
	p->tid = (pid_t)syscall(SYS_gettid);
	p->policy = policy;
	p->backlog = backlog;
	p->ctx = ctx;
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)p->tid);
	p->schedstat_fd = open(path, O_RDONLY | O_CLOEXEC);
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->wake, &ca);
	pthread_condattr_destroy(&ca);
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
