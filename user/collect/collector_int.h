/* SPDX-License-Identifier: GPL-2.0 */
/* The collector's insides, shared by collector.c (open, attach, close), collector_rings.c
 * (request ring buffers) and collector_snapshot.c (maps into a snapshot). Not for other
 * modules: they use collect/collector.h. */
#ifndef TT_COLLECTOR_INT_H
#define TT_COLLECTOR_INT_H

#include <bpf/libbpf.h>
#include "collect/collector.h"
#include "collect/budget.h"
#include "collect/deep_plan.h"
#include "attr/slow_keep.h"
#include "collect/self_cost.h"
#include "core/histogram.h"
#include "lib/uprobe_attach.h"

#define SLOW_KEEP_MAX   256 /* flight-recorder requests kept per snapshot */
#define MAX_LINKS       64
#define MAX_DEEP_LINKS  32
#define HIST_MAP_BUDGET (96u << 20) /* bytes of per-CPU histogram memory at most */
#define PLACE_BUDGET    (16u << 20) /* ... of it for the place_hists array */
#define REQ_RINGS_MAX   64          /* request rings: one per CPU, CPUs beyond share */
#define REQ_RINGS_BUDGET                                                                           \
	(8u << 20) /* bytes of request rings, all together (a minimum                              \
		    * ring each beyond 32 CPUs) */
#define REQ_RING_MIN (256u << 10)
#define REQ_RING_MAX (4u << 20)

struct tailtrace_bpf;
struct attr_agg;

/* --budget (collector_budget.c) */
struct budget_state {
	double pct;         /* % of one CPU, 0: off */
	double rate;        /* share of flows traced now */
	double lowest;      /* lowest rate since the last snapshot */
	double last_s;      /* CLOCK_MONOTONIC of the last step */
	__u64 prog_ns_prev; /* programs' run time then */
	double cpu_prev;    /* ... and the process's CPU */
	double cost_pct;    /* the last measured cost */
	/* the last BUDGET_FLOOR_STEPS steps' rate and cost, and the last fit made of them: kept
	 * while the rate holds still (budget_fit_steps) */
	double step_rate[BUDGET_FLOOR_STEPS], step_cost[BUDGET_FLOOR_STEPS];
	__u32 nsteps;
	struct budget_fit fit;
	__u64 salt;              /* the sample's draw now (flow_in_sample) */
	double drawn_s;          /* CLOCK_MONOTONIC of that draw */
	struct snapshot pending; /* measured at earlier rates in this interval, scaled up */
	/* record's deep tier under the budget: the cost of a step with it running and without
	 * (moving averages, < 0 while unknown), and when its duty was last lowered to 0 */
	double cost_deep, cost_shallow;
	double deep_cut_s;
};

/* flows the key-walking sweep looks at per run: the rest wait for the next one */
#define SWEEP_KEYS_MAX 8192

struct collector {
	struct tailtrace_bpf *skel;
	struct bpf_link *links[MAX_LINKS];
	int nlinks;
	struct uprobe_attacher up;         /* --tls-uprobes: PMU, else tracefs */
	struct bpf_link *tls_links[2 * 4]; /* ... entry and return of SSL_write/read(_ex) */
	int ntls_links;
	struct ring_buffer *rb;
	int ring_fds[REQ_RINGS_MAX]; /* req_rings' entries, created after load */
	__u32 nrings, rings_made;
	__u32 ring_size;
	struct kernel_caps caps;
	unsigned int features;
	int ncpus;
	size_t hist_stride;
	void *percpu_buf;
	size_t stage_stride;
	void *stage_buf;             /* one stage_hists entry, all CPUs */
	struct hist *stage_prev;     /* cumulative stage_hists sums at the last snapshot */
	struct hist_key *place_keys; /* place of each place_hists slot handed out */
	struct hist *place_prev;     /* ... and its cumulative sums at the last snapshot */
	__u32 nplaces, place_max;
	__u64 places_checked_ns;   /* CLOCK_MONOTONIC of the last slot assignment pass */
	__u64 flows_swept_ns;      /* ... of the last tt_flow_sweep run */
	struct bpf_program *sweep; /* tt_flow_sweep, or tt_flow_sweep_keys before 5.13 */
	bool no_lookup_delete;     /* hash maps cannot be read and deleted at once (< 5.14) */
	__u64 *sweep_keys;         /* the latter's key buffer (SWEEP_KEYS_MAX) */
	/* read-only maps of the stamp arrays */
	const struct stamp_bucket *qdisc_stamps, *rx_stamps;
	/* read-only maps of each request ring's consumer and producer positions */
	const unsigned long *rb_consumer[REQ_RINGS_MAX], *rb_producer[REQ_RINGS_MAX];
	__u64 prev_counters[CNT__MAX];
	__u64 prev_drops[TT_DROP_REASONS];
	__u64 user_deleted; /* histogram keys this process deleted after reading */
	__u64 prev_evicted;
	__u64 prev_thread_evicted;
	__u64 prev_stream_evicted;
	__u64 prev_unmatched;
	struct attr_agg *agg;
	struct slow_keep slow;      /* the flight recorder's slow requests */
	struct req_event *slow_out; /* room for one interval's */
	__u64 taken;                /* request events taken */
	enum tt_stage missing[STAGE__MAX];
	const char *missing_why[STAGE__MAX];
	char why_buf[STAGE__MAX][256];
	int nmissing;
	__u64 start_realtime;
	bool nic;                          /* the driver/softirq programs run (bpf/nic.bpf.h) */
	struct snap_softnet *softnet_prev; /* softnet_stat at the last snapshot */
	int nsoftnet_prev;
	struct self_cost cost; /* its programs' run time and its own CPU, per interval */
	struct budget_state bud;
	/* the deep tier (collector_deep.c) */
	struct deep_plan deep;
	struct bpf_link *deep_links[MAX_DEEP_LINKS];
	int ndeep_links;
	bool deep_attached;
};

/* collector.c: err gets the message, code is returned; a link kept till close */
int collector_fail(char *err, size_t len, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int collector_add_link(struct collector *c, struct bpf_link *l);

/* collector_uprobes.c: --cuda and --tls-uprobes (*usage: the library was not found) */
int collector_attach_cuda(struct collector *c, const struct collector_config *o, char *err,
			  size_t errlen, bool *usage);
int collector_attach_tls(struct collector *c, const struct collector_config *o, char *err,
			 size_t errlen, bool *usage);

/* collector_rings.c */
__u32 req_ring_size(__u32 nrings);
int req_rings_setup(struct collector *c);
void req_rings_close(struct collector *c);

/* collector_snapshot.c */
void assign_place_slots(struct collector *c);
/* The collector's first softnet_stat reading, the base of the first interval's deltas. */
void softnet_baseline(struct collector *c);
/* Histograms, counters and drop reasons since the last read, scaled up by the sampling
 * rate in force, merged into dst; cur gets the counters' totals, *nkeys the live keys. */
int collect_sampled(struct collector *c, struct snapshot *dst, __u64 *cur, size_t *nkeys);

/* collector_deep.c: the deep tier's programs, attached by the plan (deep_plan.h) */
bool collector_prog_deep(const struct bpf_program *p);
/* Before load: the plan, duty 1 always deep, 0 never. */
void deep_prepare(struct collector *c, double duty);
/* After the other programs attached: the first window. 0 or -errno. */
int deep_open(struct collector *c);
void deep_step(struct collector *c);
/* Into the snapshot: how long the tier ran since the last call, of how long. */
void deep_collect(struct collector *c, struct snapshot *s);
void deep_close(struct collector *c);

/* collector_budget.c */
void budget_open(struct collector *c, double pct);
void budget_step(struct collector *c);
void budget_scale(const struct collector *c, struct snapshot *t);
int budget_finish(struct collector *c, struct snapshot *s);
void budget_close(struct collector *c);

#endif
