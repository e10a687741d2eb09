// SPDX-License-Identifier: GPL-2.0
/* Common command flow: options, privileges, collector, interval loop, clean stop. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <linux/capability.h>
#include "cmd/commands.h"
#include "lib/log.h"
#include "collect/deep_plan.h"
#include "collect/privs.h"
#include "rdma/rdma_tracer.h"
#include "collect/self_prio.h"
#include "cmd/session.h"
#include "core/stages.h"
#include "lib/clock.h"
#include "lib/stop_signal.h"

static bool ring_backlog(void *coll, __u64 *used, __u64 *size)
{
	return collector__backlog(coll, used, size);
}

/* The options into the collector's configuration. The deep tier runs all the time for
 * the looks on demand (hist, explain, top), a share of it for record, which runs always
 * (--deep says otherwise). */
static void collector_config_of(const struct tt_opts *o, enum tt_cmd_id cmd, unsigned int features,
				struct collector_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->features = features;
	cfg->pid = o->pid;
	memcpy(cfg->comm, o->comm, sizeof(cfg->comm));
	memcpy(cfg->cgroup_path, o->cgroup_path, sizeof(cfg->cgroup_path));
	memcpy(cfg->ports, o->ports, sizeof(cfg->ports));
	cfg->nports = o->nports;
	memcpy(cfg->devs, o->devs, sizeof(cfg->devs));
	cfg->ndevs = o->ndevs;
	cfg->by = o->by;
	cfg->role = o->role;
	for (int i = 0; i < o->nstages; i++) {
		const struct stage_info *si = stage_info(o->stages[i]);

		cfg->nic_stages |= si && (si->flags & SF_NIC);
	}
	cfg->cuda = o->cuda;
	cfg->tls_uprobes = o->tls_uprobes;
	cfg->budget_pct = o->budget_pct > 0 ? o->budget_pct : 0;
	if (o->deep_duty >= 0)
		cfg->deep_duty = o->deep_duty;
	else
		cfg->deep_duty = cmd == TT_CMD_RECORD ? DEEP_DUTY_DEFAULT : 1;
}

/* Connections that predate tailtrace: what could not be armed is said once (tx.sendq and
 * tx.ack would silently lack them), what was armed only with -v. */
int session_start(struct session *s, enum tt_cmd_id cmd, int argc, char **argv,
		  unsigned int features, session_features_fn features_of)
{
	enum tt_stage miss[STAGE__MAX];
	const char *why[STAGE__MAX];
	struct collector_config cfg;
	char err[512];
	bool usage;
	int r, n;

	memset(s, 0, sizeof(*s));
	r = opts_parse(&s->o, argc, argv, opts_allowed(cmd), err, sizeof(err));
	if (r == 1) {
		cmd_print_help(cmd);
		return 0;
	}
	log_setup(s->o.json, s->o.verbose);
	if (r < 0) {
		tt_error("%s", err);
		return 2;
	}
	if (s->o.nargs) {
		tt_error("unexpected argument '%s' (see 'tailtrace %s --help')", s->o.args[0],
			 opts_cmd_name(cmd));
		return 2;
	}
	/* top has an interval of its own (1 s); the others print once without -i */
	if (s->o.align && s->o.interval_s <= 0 && cmd != TT_CMD_TOP) {
		tt_error("--align needs -i SEC: the interval whose grid it keeps");
		return 2;
	}
	if (!privs_require())
		return 1;
	stop_signal_install();
	if (features_of)
		features |= features_of(&s->o);
	collector_config_of(&s->o, cmd, features, &cfg);
	r = collector__open(&s->coll, &cfg, err, sizeof(err), &usage);
	if (r) {
		tt_error("%s", err);
		return usage ? 2 : 1;
	}
	if (s->o.seen & OPT_RDMA) {
		r = rdma_tracer__open(&s->o, stderr, &s->rdma, err, sizeof(err));
		if (r) {
			tt_error("%s", err);
			collector__close(s->coll);
			s->coll = NULL;
			return r == -EINVAL ? 2 : 1;
		}
	}
	n = collector__unavailable(s->coll, miss, why, STAGE__MAX);
	for (int i = 0; i < n; i++)
		tt_warn("stage %s unavailable on this kernel: %s", stage_info(miss[i])->name,
			why[i]);
	s->started = mono_s();
	return -1;
}

/* What the run still needs once attached. Reading maps and rings, and running the flow
 * sweep (BPF_PROG_TEST_RUN), go through file descriptors already open and need none.
 * RDMA discovery attaches uprobes to processes that start later: what `rdma` keeps
 * (rdma_privs_after_attach(): no CAP_SYS_ADMIN; the kernels that ask it of the uprobe PMU
 * get their uprobes through tracefs). */
static __u64 privs_to_keep(const struct session *s)
{
	/* --rdma: what attaching to processes that start later needs, as for `rdma` */
	return s->rdma ? rdma_privs_after_attach(s->rdma) : 0;
}

/* Kernels before 6.5 check CAP_BPF (or CAP_SYS_ADMIN) on every bpf() call while
 * kernel.unprivileged_bpf_disabled is set, map reads on an open fd included: there the
 * drop keeps CAP_BPF, or no histogram could be read after attach. Tried, not guessed. */
static __u64 bpf_reads_need(struct session *s)
{
	if (privs_enough_without(PRIV_BIT(CAP_BPF) | PRIV_BIT(CAP_SYS_ADMIN), collector__read_check,
				 s->coll))
		return 0;
	if (log_verbose())
		fprintf(stderr, "this kernel checks CAP_BPF on map reads: kept after attach\n");
	return PRIV_BIT(CAP_BPF);
}

int session_settle(struct session *s)
{
	unsigned int nfds;
	const int *fds;
	int r = privs_drop(privs_to_keep(s) | bpf_reads_need(s));

	if (r)
		tt_warn("cannot drop privileges after attaching: %s", strerror(-r));
	/* from here on the work is ours, not the service's: it waits for idle CPU time */
	nfds = collector__ring_fds(s->coll, &fds);
	s->prio = self_prio__start(ring_backlog, s->coll, fds, nfds);
	return r;
}

static double session_elapsed(const struct session *s)
{
	return mono_s() - s->started;
}

/* The first interval boundary on CLOCK_MONOTONIC: one interval from now, or with --align
 * the next multiple of the interval on the wall clock (so that instances and hosts report
 * the same spans; the first interval is then shorter). */
static double session_first_boundary(const struct session *s, double interval_s)
{
	double now = mono_s(), wall = (double)realtime_ns() / 1e9;

	if (interval_s <= 0)
		return now + 1e9;
	if (!s->o.align)
		return now + interval_s;
	return now + (interval_s - fmod(wall, interval_s));
}

/* Waits (consuming request events) until the interval boundary `end`, the end of -d, or a
 * signal. Returns false when the session should stop after this interval. */
static bool session_wait(struct session *s, double end)
{
	if (s->o.duration_s > 0 && s->started + s->o.duration_s < end)
		end = s->started + s->o.duration_s;
	while (!stop_requested()) {
		double left = end - mono_s();

		if (left <= 0)
			break;
		session_poll(s, left > 0.1 ? 100 : (int)(left * 1000) + 1);
	}
	if (stop_requested())
		return false;
	return !(s->o.duration_s > 0 && mono_s() >= s->started + s->o.duration_s - 1e-3);
}

void session_poll(struct session *s, int timeout_ms)
{
	if (s->rdma) {
		/* RDMA discovery and its sampling window want attention every few ms */
		if (timeout_ms > 20)
			timeout_ms = 20;
		rdma_tracer__poll(s->rdma, 0);
	}
	collector__poll(s->coll, timeout_ms);
}

int session_snapshot(struct session *s, struct snapshot *snap)
{
	int r = collector__snapshot(s->coll, snap);

	if (!r && s->rdma)
		r = rdma_tracer__collect(s->rdma, snap);
	return r;
}

int session_run(struct session *s, double interval_s, long count, session_emit_fn emit, void *ctx)
{
	double last = 0, boundary = session_first_boundary(s, interval_s);
	bool more = true;
	int r = 0;

	for (long i = 0; more && !r; i++) {
		struct snapshot snap;
		double now;

		more = session_wait(s, boundary) && (!count || i + 1 < count);
		/* a fixed grid: the time a snapshot takes does not push later boundaries; one
		 * that took longer than an interval skips the boundaries it missed */
		do
			boundary += interval_s > 0 ? interval_s : 1e9;
		while (boundary <= mono_s());
		snapshot__init(&snap);
		r = session_snapshot(s, &snap);
		now = session_elapsed(s);
		if (!r)
			emit(s, &snap, now - last, !more, ctx);
		last = now;
		snapshot__free(&snap);
	}
	session_end(s);
	return r ? 1 : 0;
}

void session_end(struct session *s)
{
	self_prio__stop(s->prio);
	s->prio = NULL;
	rdma_tracer__close(s->rdma);
	s->rdma = NULL;
	collector__close(s->coll);
	s->coll = NULL;
}
