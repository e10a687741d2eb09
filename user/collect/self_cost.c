// SPDX-License-Identifier: GPL-2.0
/* tailtrace's own cost each interval: the kernel's run-time statistics of its programs
 * (on while this process holds a BPF_ENABLE_STATS fd, a window at the start of every
 * period; self_cost.h says why) and its process's CPU time and RSS. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "collect/self_cost.h"
#include "lib/clock.h"

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

/* The statistics on: by this process while it holds CAP_SYS_ADMIN, by the keeper after. */
static bool stats_on(struct self_cost *sc)
{
	if (sc->stats_fd >= 0 || sc->keeper_on)
		return true;
	sc->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (sc->stats_fd >= 0)
		return true;
	sc->keeper_on = !stats_keeper__set(&sc->keeper, true);
	return sc->keeper_on;
}

static void stats_off(struct self_cost *sc)
{
	if (sc->stats_fd >= 0)
		close(sc->stats_fd);
	sc->stats_fd = -1;
	if (sc->keeper_on)
		stats_keeper__set(&sc->keeper, false);
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
	sc->window_ns = now > sc->period_ns ? now - sc->period_ns : 1;
}

/* A new period, its window open: the statistics on (unless they still are), then the
 * counts read, so that every run after the read is counted. */
static void period_start(struct self_cost *sc, __u64 now)
{
	bool was_on = sc->measuring && (sc->stats_fd >= 0 || sc->keeper_on);

	sc->period_ns = now;
	sc->window_ns = 0;
	/* a period the statistics could not be turned on for adds nothing to the figures */
	sc->measuring = !sc->refused && stats_on(sc);
	if (!sc->measuring || was_on)
		return;
	for (int i = 0; i < sc->nprogs; i++)
		if (read_prog(sc->prog_fd[i], &sc->opened[i]))
			memset(&sc->opened[i], 0, sizeof(sc->opened[i]));
}

/* The counts read, then the statistics off (another holder may keep them on: what they
 * count after the window is not used). */
static void window_close(struct self_cost *sc, __u64 now)
{
	window_read(sc, now);
	stats_off(sc);
}

/* The period so far joins the estimates; the next one starts now (a window still open
 * goes on into it). */
static void period_end(struct self_cost *sc, __u64 now)
{
	__u64 len = now > sc->period_ns ? now - sc->period_ns : 1;

	if (!sc->window_ns)
		window_read(sc, now);
	for (int i = 0; i < sc->nprogs; i++)
		prog_stat_scale_add(&sc->window[i], sc->window_ns, len, &sc->est[i]);
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
	if (sc->stats_fd < 0) {
		err = -errno;
		sc->refused = true;
	} else if (stats_keeper__start(&sc->keeper)) {
		/* no keeper (fork refused): the statistics stay on for the whole run, the
		 * figures whole, every program paying for them */
		sc->measuring = true;
		sc->period_ns = mono_ns();
		return 0;
	}
	period_start(sc, mono_ns());
	return err;
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
	__u64 now = mono_ns(), in = now - sc->period_ns;

	if (sc->keeper.sock < 0)
		return; /* refused, or no keeper: one window, the whole run (self_cost__init) */

	if (!sc->window_ns && in >= SELF_STATS_ON_NS)
		window_close(sc, now);
	else if (sc->window_ns && in >= SELF_STATS_PERIOD_NS)
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
