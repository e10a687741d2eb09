// SPDX-License-Identifier: GPL-2.0
/* tailtrace's own cost each interval: the kernel's run-time statistics of its programs
 * (on while this process holds a BPF_ENABLE_STATS fd: the whole run, self_cost.h says
 * why) and its process's CPU time and RSS. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "collect/self_cost.h"
#include "lib/clock.h"

#define STATS_KEEPER_WAIT_MS 5

static int read_prog(int fd, struct prog_stat *out)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	out->runs = info.run_cnt;
	out->run_ns = info.run_time_ns;
	return 0;
}

/* Counts read: every run after this is counted while the statistics stay on. */
static void window_open(struct self_cost *sc, __u64 now)
{
	sc->window_start_ns = now;
	sc->measuring = true;
	for (int i = 0; i < sc->nprogs; i++)
		if (read_prog(sc->prog_fd[i], &sc->opened[i]))
			memset(&sc->opened[i], 0, sizeof(sc->opened[i]));
}

static void stats_off(struct self_cost *sc)
{
	if (sc->stats_fd >= 0)
		close(sc->stats_fd);
	sc->stats_fd = -1;
	if (sc->keeper_on)
		stats_keeper__ask(&sc->keeper, false);
	sc->keeper_on = false;
}

/* What the programs did since the window opened, and the window's length; the counts now
 * are where a window that goes on starts from. */
static void window_read(struct self_cost *sc, __u64 now)
{
	for (int i = 0; i < sc->nprogs; i++) {
		struct prog_stat cur;

		memset(&sc->window[i], 0, sizeof(sc->window[i]));
		if (!sc->measuring || read_prog(sc->prog_fd[i], &cur))
			continue;
		prog_stat_delta(&sc->opened[i], &cur, &sc->window[i]);
		sc->opened[i] = cur;
	}
	sc->window_ns = now > sc->window_start_ns ? now - sc->window_start_ns : 1;
	sc->measured = sc->measuring;
}

/* The keeper's answer to "on", if it came (within wait_ms): the window opens now. */
static void keeper_answered(struct self_cost *sc, int wait_ms)
{
	int r = stats_keeper__answer(&sc->keeper, wait_ms);

	if (r == -EAGAIN)
		return;
	sc->keeper_asked = false;
	sc->keeper_on = r == 1;
	if (sc->keeper_on && !sc->window_ns)
		window_open(sc, mono_ns());
	else if (sc->keeper_on)
		stats_off(sc); /* too late for this period's window */
}

/* A new period: its window opens now when the statistics are on or this process can turn
 * them on, or once the keeper has (self_cost__tick). */
static void period_start(struct self_cost *sc, __u64 now)
{
	bool on = sc->measuring && (sc->stats_fd >= 0 || sc->keeper_on);

	sc->period_ns = now;
	sc->window_ns = 0;
	sc->measured = false;
	sc->measuring = on;
	if (on)
		sc->window_start_ns = now; /* it goes on from the counts window_read took */
	if (on || sc->refused)
		return;
	/* this process, until the capability drop makes it fail: the keeper from then on */
	if (!sc->dropped)
		sc->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	sc->dropped = sc->stats_fd < 0;
	if (sc->stats_fd >= 0)
		window_open(sc, now);
	else if (!sc->keeper_asked && !stats_keeper__ask(&sc->keeper, true))
		sc->keeper_asked = true;
	/* the keeper answers within a few ms unless the host is saturated: then the window
	 * opens at a later tick, and the statistics stay on longer than it */
	if (sc->keeper_asked)
		keeper_answered(sc, STATS_KEEPER_WAIT_MS);
}

/* The counts read, then the statistics off (another holder may keep them on: what they
 * count after the window is not used). */
static void window_close(struct self_cost *sc, __u64 now)
{
	window_read(sc, now);
	stats_off(sc);
	sc->measuring = false;
}

/* The period so far joins the estimates; the next one starts now (a window still open
 * goes on into it). A period whose window never opened (the keeper did not answer in
 * time) is estimated from the last window measured. */
static void period_end(struct self_cost *sc, __u64 now)
{
	__u64 len = now > sc->period_ns ? now - sc->period_ns : 1;

	if (!sc->window_ns)
		window_read(sc, now);
	if (sc->measured) {
		memcpy(sc->last_window, sc->window, sizeof(sc->window));
		sc->last_window_ns = sc->window_ns;
	}
	for (int i = 0; i < sc->nprogs; i++)
		prog_stat_scale_add(&sc->last_window[i], sc->last_window_ns, len, &sc->est[i]);
	period_start(sc, now);
}

int self_cost__init(struct self_cost *sc)
{
	int err = 0;

	memset(sc, 0, sizeof(*sc));
	sc->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	sc->keeper.sock = -1;
	sc->keeper.pid = -1;
	sc->cpu_prev = self_cpu_seconds();
	sc->period_ns = mono_ns();
	if (sc->stats_fd < 0) {
		err = -errno;
		sc->refused = true;
		return err;
	}
	/* Held on for the whole run: one window that never closes, the figures whole. No
	 * keeper is started to turn them off and on each period: every switch flips a
	 * host-wide static key, which patches each inlined bpf_prog_run() site and syncs every
	 * CPU, 5-17 ms of one CPU with preemption off on a 2-vCPU VM (kernel 6.18,
	 * preempt=none). Twice a second, those stalls made the tails tailtrace measures. */
	window_open(sc, sc->period_ns);
	return 0;
}

void self_cost__add_prog(struct self_cost *sc, int prog_fd, const char *name)
{
	int i = sc->nprogs;

	if (i == SELF_PROGS_MAX || prog_fd < 0)
		return;
	/* the hook's name: "tt_tcp_probe" is reported as "tcp_probe" */
	if (!strncmp(name, "tt_", 3))
		name += 3;
	snprintf(sc->name[i], sizeof(sc->name[i]), "%s", name);
	sc->prog_fd[i] = prog_fd;
	if (read_prog(prog_fd, &sc->opened[i]))
		memset(&sc->opened[i], 0, sizeof(sc->opened[i]));
	sc->nprogs++;
}

void self_cost__tick(struct self_cost *sc)
{
	__u64 now = mono_ns();

	if (sc->keeper.sock < 0)
		return; /* refused, or no keeper: one window, the whole run (self_cost__init) */
	if (sc->keeper_asked) {
		keeper_answered(sc, 0);
		now = mono_ns();
	}
	if (sc->measuring && !sc->window_ns && now - sc->window_start_ns >= SELF_STATS_ON_NS)
		window_close(sc, now);
	else if (now - sc->period_ns >= SELF_STATS_PERIOD_NS)
		period_end(sc, now);
}

void prog_stat_delta(const struct prog_stat *prev, const struct prog_stat *cur,
		     struct prog_stat *delta)
{
	/* both counters restart together: judge by the run count, which only grows */
	if (cur->runs < prev->runs || cur->run_ns < prev->run_ns) {
		*delta = *cur;
		return;
	}
	delta->runs = cur->runs - prev->runs;
	delta->run_ns = cur->run_ns - prev->run_ns;
}

void prog_stat_scale_add(const struct prog_stat *seen, __u64 window_ns, __u64 period_ns,
			 struct prog_stat *est)
{
	double f;

	if (!window_ns)
		return; /* nothing was measured: no estimate, rather than a made-up one */
	f = period_ns > window_ns ? (double)period_ns / (double)window_ns : 1;
	est->runs += (__u64)((double)seen->runs * f + 0.5);
	est->run_ns += (__u64)((double)seen->run_ns * f + 0.5);
}

void self_cost__collect(struct self_cost *sc, struct snapshot *s)
{
	double cpu = self_cpu_seconds();

	period_end(sc, mono_ns());
	for (int i = 0; i < sc->nprogs; i++) {
		struct prog_stat d;

		prog_stat_delta(&sc->prev[i], &sc->est[i], &d);
		sc->prev[i] = sc->est[i];
		snapshot__add_prog(s, sc->name[i], d.runs, d.run_ns);
	}
	s->self_cpu_s += cpu > sc->cpu_prev ? cpu - sc->cpu_prev : 0;
	sc->cpu_prev = cpu;
	s->self_rss_kb = self_rss_kb();
}

__u64 self_cost__total_ns(struct self_cost *sc)
{
	__u64 t = 0;

	period_end(sc, mono_ns());
	for (int i = 0; i < sc->nprogs; i++)
		t += sc->est[i].run_ns;
	return t;
}

void self_cost__close(struct self_cost *sc)
{
	stats_off(sc);
	stats_keeper__stop(&sc->keeper);
	sc->nprogs = 0;
}

double self_cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

unsigned long long self_rss_kb(void)
{
	unsigned long long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &pages, &resident) != 2)
		resident = 0;
	fclose(f);
	return resident * (unsigned long long)sysconf(_SC_PAGESIZE) / 1024;
}
