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

/* The programs' runs since the last read join their totals. With the statistics refused
 * nothing is counted, whatever another holder of them lets the kernel count. */
static void self_cost__read(struct self_cost *sc)
{
	if (sc->stats_fd < 0)
		return;
	for (int i = 0; i < sc->nprogs; i++) {
		struct prog_stat cur, d;

		if (read_prog(sc->prog_fd[i], &cur))
			continue;
		prog_stat_delta(&sc->read[i], &cur, &d);
		sc->read[i] = cur;
		sc->total[i].runs += d.runs;
		sc->total[i].run_ns += d.run_ns;
	}
}

int self_cost__init(struct self_cost *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->cpu_prev = self_cpu_seconds();
	/* held on until self_cost__close, never switched in between: each switch stalls a CPU
	 * for milliseconds (self_cost.h) */
	sc->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (sc->stats_fd < 0)
		return -errno;
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
	if (read_prog(prog_fd, &sc->read[i]))
		memset(&sc->read[i], 0, sizeof(sc->read[i]));
	sc->nprogs++;
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

void self_cost__collect(struct self_cost *sc, struct snapshot *s)
{
	double cpu = self_cpu_seconds();

	self_cost__read(sc);
	for (int i = 0; i < sc->nprogs; i++) {
		struct prog_stat d;

		prog_stat_delta(&sc->prev[i], &sc->total[i], &d);
		sc->prev[i] = sc->total[i];
		snapshot__add_prog(s, sc->name[i], d.runs, d.run_ns);
	}
	s->self_cpu_s += cpu > sc->cpu_prev ? cpu - sc->cpu_prev : 0;
	sc->cpu_prev = cpu;
	s->self_rss_kb = self_rss_kb();
}

__u64 self_cost__total_ns(struct self_cost *sc)
{
	__u64 t = 0;

	self_cost__read(sc);
	for (int i = 0; i < sc->nprogs; i++)
		t += sc->total[i].run_ns;
	return t;
}

void self_cost__close(struct self_cost *sc)
{
	if (sc->stats_fd >= 0)
		close(sc->stats_fd);
	sc->stats_fd = -1;
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
