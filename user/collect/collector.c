// SPDX-License-Identifier: GPL-2.0
/* Loads and attaches the TCP/scheduler/request programs and reads their maps into
 * snapshots. Everything is attached through bpf_links owned by this process, so nothing
 * outlives it, even after kill -9. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect/collector.h"
#include "attr/attribution.h"
#include "collect/cgroup.h"
#include "core/histogram.h"
#include "lib/log.h"
#include "lib/clock.h"
#include "collect/netdev.h"
#include "attr/slow_keep.h"
#include "core/stages.h"
#include "tailtrace.skel.h"

#define SLOW_KEEP_MAX 256	/* flight-recorder requests kept per snapshot */
#define MAX_LINKS 64
#define HIST_MAP_BUDGET (96u << 20)	/* bytes of per-CPU histogram memory at most */
#define PLACE_BUDGET (16u << 20)	/* ... of it for the place_hists array */
#define REQ_RINGS_MAX 64		/* request rings: one per CPU, CPUs beyond share */
#define REQ_RINGS_BUDGET (8u << 20)	/* bytes of request rings, all together (a minimum
					 * ring each beyond 32 CPUs) */
#define REQ_RING_MIN (256u << 10)
#define REQ_RING_MAX (4u << 20)

struct collector {
	struct tailtrace_bpf *skel;
	struct bpf_link *links[MAX_LINKS];
	int nlinks;
	struct ring_buffer *rb;
	int ring_fds[REQ_RINGS_MAX];	/* req_rings' entries, created after load */
	__u32 nrings, rings_made;
	__u32 ring_size;
	struct kernel_caps caps;
	unsigned int features;
	int ncpus;
	size_t hist_stride;
	void *percpu_buf;
	size_t stage_stride;
	void *stage_buf;		/* one stage_hists entry, all CPUs */
	struct hist *stage_prev;	/* cumulative stage_hists sums at the last snapshot */
	struct hist_key *place_keys;	/* place of each place_hists slot handed out */
	struct hist *place_prev;	/* ... and its cumulative sums at the last snapshot */
	__u32 nplaces, place_max;
	__u64 places_checked_ns;	/* CLOCK_MONOTONIC of the last slot assignment pass */
	__u64 flows_swept_ns;		/* ... of the last tt_flow_sweep run */
	/* read-only maps of the stamp arrays */
	const struct stamp_bucket *qdisc_stamps, *rx_stamps;
	/* read-only maps of each request ring's consumer and producer positions */
	const unsigned long *rb_consumer[REQ_RINGS_MAX], *rb_producer[REQ_RINGS_MAX];
	__u64 prev_counters[CNT__MAX];
	__u64 prev_drops[TT_DROP_REASONS];
	__u64 user_deleted;		/* histogram keys this process deleted after reading */
	__u64 prev_evicted;
	__u64 prev_thread_evicted;
	__u64 prev_unmatched;
	struct attr_agg *agg;
	struct slow_keep slow;		/* the flight recorder's slow requests */
	struct req_event *slow_out;	/* room for one interval's */
	__u64 taken;			/* request events taken */
	collector_req_cb cb;
	void *cb_ctx;
	enum tt_stage missing[STAGE__MAX];
	const char *missing_why[STAGE__MAX];
	char why_buf[STAGE__MAX][128];
	int nmissing;
	__u64 start_realtime;
};

static size_t map_view_len(const struct bpf_map *map)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = (size_t)bpf_map__value_size(map) * bpf_map__max_entries(map);

	return (len + page - 1) / page * page;
}

/* A read-only view of a BPF_F_MMAPABLE array: counting its live entries then costs no
 * system call per entry. */
static const void *map_view(const struct bpf_map *map)
{
	void *p = mmap(NULL, map_view_len(map), PROT_READ, MAP_SHARED, bpf_map__fd(map), 0);

	return p == MAP_FAILED ? NULL : p;
}

static void map_unview(const struct bpf_map *map, const void *p)
{
	if (p)
		munmap((void *)p, map_view_len(map));
}

/* Bytes of each request ring: a power of two (the ring buffer's rule), the budget shared
 * between the rings, each at least REQ_RING_MIN (~900 events, several polls' worth on a
 * busy CPU) and at most REQ_RING_MAX (~15 000 events). The process maps each ring's data
 * twice (for records that wrap), so its RSS grows by up to twice the rings' size. */
static __u32 req_ring_size(__u32 nrings)
{
	__u32 size = REQ_RING_MAX;

	while (size > REQ_RING_MIN && (__u64)size * nrings > REQ_RINGS_BUDGET)
		size >>= 1;
	return size;
}

/* Creates the request rings, puts them in req_rings and reads them all through one
 * ring_buffer. Each ring's consumer and producer positions are also mapped read-only (page
 * 0 and page 1 of the map), so collector__backlog() costs no system call; without them the
 * backlog is unknown. */
static int req_rings_setup(struct collector *c, ring_buffer_sample_fn fn)
{
	int outer = bpf_map__fd(c->skel->maps.req_rings);
	long page = sysconf(_SC_PAGESIZE);

	for (__u32 i = 0; i < c->nrings; i++) {
		int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "tt_req_ring", 0, 0, c->ring_size, NULL);

		if (fd < 0)
			return -errno;
		c->ring_fds[c->rings_made++] = fd;
		if (bpf_map_update_elem(outer, &i, &fd, BPF_ANY))
			return -errno;
		if (i == 0)
			c->rb = ring_buffer__new(fd, fn, c, NULL);
		else if (ring_buffer__add(c->rb, fd, fn, c))
			return -errno;
		if (!c->rb)
			return -errno;
	}
	for (__u32 i = 0; i < c->nrings; i++) {
		void *cons = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, c->ring_fds[i], 0);
		void *prod = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, c->ring_fds[i], page);

		if (cons == MAP_FAILED || prod == MAP_FAILED) {
			if (cons != MAP_FAILED)
				munmap(cons, (size_t)page);
			if (prod != MAP_FAILED)
				munmap(prod, (size_t)page);
			break;
		}
		c->rb_consumer[i] = cons;
		c->rb_producer[i] = prod;
	}
	return 0;
}

static void req_rings_close(struct collector *c)
{
	long page = sysconf(_SC_PAGESIZE);

	ring_buffer__free(c->rb);
	for (__u32 i = 0; i < c->rings_made; i++) {
		if (c->rb_consumer[i]) {
			munmap((void *)c->rb_consumer[i], (size_t)page);
			munmap((void *)c->rb_producer[i], (size_t)page);
		}
		close(c->ring_fds[i]);
	}
}

unsigned int collector__ring_fds(const struct collector *c, const int **fds)
{
	*fds = c->ring_fds;
	return c->rings_made;
}

/* The fullest ring decides: each CPU's events wait in its own ring. */
bool collector__backlog(const struct collector *c, __u64 *used, __u64 *size)
{
	__u64 most = 0;

	if (!c->nrings || !c->rb_consumer[c->nrings - 1])
		return false;
	for (__u32 i = 0; i < c->nrings; i++) {
		unsigned long cons = __atomic_load_n(c->rb_consumer[i], __ATOMIC_ACQUIRE);
		unsigned long prod = __atomic_load_n(c->rb_producer[i], __ATOMIC_ACQUIRE);

		if (prod > cons && prod - cons > most)
			most = prod - cons;
	}
	*used = most;
	*size = c->ring_size;
	return true;
}

/* Which tracepoint each tp_btf program needs; programs of absent hooks are not loaded. */
static const struct {
	const char *prog;
	const char *tp;
	bool requests_only;
} prog_hooks[] = {
	{ "tt_tcp_sendmsg", "tcp:tcp_sendmsg_locked", false },
	{ "tt_sock_send_length", "sock:sock_send_length", false },
	{ "tt_net_dev_queue", "net:net_dev_queue", false },
	{ "tt_qdisc_enqueue", "qdisc:qdisc_enqueue", false },
	{ "tt_qdisc_dequeue", "qdisc:qdisc_dequeue", false },
	{ "tt_net_dev_start_xmit", "net:net_dev_start_xmit", false },
	{ "tt_net_dev_xmit", "net:net_dev_xmit", false },
	{ "tt_netif_receive_skb", "net:netif_receive_skb", false },
	{ "tt_tcp_probe", "tcp:tcp_probe", false },
	{ "tt_sk_data_ready", "sock:sk_data_ready", false },
	{ "tt_sock_recv_length", "sock:sock_recv_length", false },
	{ "tt_tcp_retransmit_skb", "tcp:tcp_retransmit_skb", false },
	{ "tt_tcp_retransmit_synack", "tcp:tcp_retransmit_synack", false },
	{ "tt_kfree_skb", "skb:kfree_skb", false },
	{ "tt_inet_sock_set_state", "sock:inet_sock_set_state", false },
	{ "tt_tcp_destroy_sock", "tcp:tcp_destroy_sock", false },
	{ "tt_sched_switch", "sched:sched_switch", true },
	{ "tt_sched_wakeup", "sched:sched_wakeup", true },
	{ "tt_sched_exit", "sched:sched_process_exit", true },
};

static const char *const cuda_syncs[] = { "cuStreamSynchronize", "cuEventSynchronize",
					  "cuCtxSynchronize" };

static int fail(char *err, size_t len, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t len, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return code;
}

static bool ring_behind(const struct collector *c)
{
	__u64 used, size;

	return collector__backlog(c, &used, &size) && used * 2 >= size;
}

static int on_req_event(void *ctx, void *data, size_t size)
{
	struct collector *c = ctx;
	const struct req_event *ev = data;

	if (size < sizeof(*ev))
		return 0;
	attr_agg__add(c->agg, ev);
	if (c->features & COLL_SLOW_REQS)
		slow_keep__offer(&c->slow, ev);
	if (c->cb)
		c->cb(ev, c->cb_ctx);
	/* a batch is up to a few thousand events (~1 us each): give way to any other runnable
	 * thread every 64, so a serving thread that wakes behind us waits ~50 us at most, also
	 * while we run at normal priority (at SCHED_IDLE it is preempted anyway). Not while
	 * the ring is half full: on a saturated host each yield costs a whole time slice of
	 * every busy thread, and 64 events per round of slices falls behind. Below half, as the
	 * BPF side wakes us at a quarter, a busy ring still yields. */
	if ((++c->taken & 63) == 0 && !ring_behind(c))
		sched_yield();
	return 0;
}

static const char *find_libcuda(void)
{
	static const char *const paths[] = { "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
					     "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
					     "/usr/lib64/libcuda.so.1", "/usr/local/cuda/lib64/libcuda.so.1",
					     "/usr/lib/wsl/lib/libcuda.so.1" };
	const char *env = getenv("TAILTRACE_LIBCUDA");

	if (env && *env)
		return access(env, R_OK) ? NULL : env;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (!access(paths[i], R_OK))
			return paths[i];
	return NULL;
}

static int add_link(struct collector *c, struct bpf_link *l)
{
	if (!l)
		return -errno;
	if (c->nlinks == MAX_LINKS) {
		bpf_link__destroy(l);
		return -E2BIG;
	}
	c->links[c->nlinks++] = l;
	return 0;
}

static void note_missing(struct collector *c)
{
	struct stage_feed feed;

	for (int s = 0; s < STAGE__MAX; s++) {
		if (s == STAGE_RDMA_WR || s == STAGE_RDMA_CQ_EVENT)
			continue; /* the RDMA tracer reports its own */
		if (s == STAGE_GPU_WAIT && !c->skel->rodata->targ_requests)
			continue;
		stage_feed_of(&c->caps, s, &feed);
		if (feed.available)
			continue;
		snprintf(c->why_buf[c->nmissing], sizeof(c->why_buf[0]), "%s", feed.why);
		c->missing_why[c->nmissing] = c->why_buf[c->nmissing];
		c->missing[c->nmissing++] = s;
	}
}

int collector__open(struct collector **out, const struct tt_opts *o, unsigned int features,
		    char *err, size_t errlen, bool *usage)
{
	struct collector *c;
	struct bpf_program *p;
	char path[4096], cgmnt[512];
	int cgfd = -1, attach_cgfd = -1, r;
	size_t hist_entries;

	*usage = false;
	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return fail(err, errlen, -ENOMEM, "out of memory");
	c->features = features;
	c->agg = attr_agg__new();
	c->slow_out = calloc(SLOW_KEEP_MAX, sizeof(*c->slow_out));
	if (!c->agg || !c->slow_out || slow_keep__init(&c->slow, SLOW_KEEP_MAX)) {
		r = fail(err, errlen, -ENOMEM, "out of memory");
		goto error;
	}
	/* user input first, so a typo is a usage error before anything is loaded */
	if (o->pid && kill((pid_t)o->pid, 0) && errno == ESRCH) {
		*usage = true;
		r = fail(err, errlen, -ESRCH, "no process with pid %u", o->pid);
		goto error;
	}
	if (o->cgroup_path[0]) {
		cgfd = cgroup_open_path(o->cgroup_path, path, sizeof(path));
		if (cgfd < 0) {
			*usage = true;
			r = fail(err, errlen, cgfd, "cgroup '%s' not found in the cgroup v2 hierarchy",
				 o->cgroup_path);
			goto error;
		}
	}
	c->skel = tailtrace_bpf__open();
	if (!c->skel) {
		r = fail(err, errlen, -errno, "opening the BPF object failed: %s", strerror(errno));
		goto error;
	}
	for (int i = 0; i < o->ndevs; i++) {
		struct netdev_ref ref;

		r = netdev_resolve(o->devs[i], &ref);
		if (r) {
			*usage = true;
			r = fail(err, errlen, r,
				 r == -EEXIST ? "device '%s' exists in several network namespaces: "
						"use NETNS/IFNAME"
					      : "unknown device '%s' (not in this or any named netns)",
				 o->devs[i]);
			goto error;
		}
		c->skel->rodata->targ_devs[i] = ref.ifindex;
		c->skel->rodata->targ_dev_netns[i] = ref.netns;
	}
	c->skel->rodata->targ_ndevs = o->ndevs;
	for (int i = 0; i < o->nports; i++)
		c->skel->rodata->targ_ports[i] = o->ports[i];
	c->skel->rodata->targ_nports = o->nports;
	c->skel->rodata->targ_tgid = o->pid;
	if (o->comm[0]) {
		memcpy((char *)c->skel->rodata->targ_comm, o->comm, sizeof(o->comm));
		c->skel->rodata->targ_filter_comm = true;
	}
	c->skel->rodata->targ_filter_cgroup = cgfd >= 0;
	c->skel->rodata->targ_by = o->by;
	c->skel->rodata->targ_role = o->role;
	c->skel->rodata->targ_requests = features & COLL_REQUESTS;
	c->skel->rodata->targ_sched_hist = features & COLL_SCHED_HIST;

	kernel_caps_probe(&c->caps);
	if (!c->caps.btf) {
		r = fail(err, errlen, -ENOTSUP,
			 "this kernel has no BTF (/sys/kernel/btf/vmlinux): tailtrace needs "
			 "CONFIG_DEBUG_INFO_BTF=y");
		goto error;
	}
	c->ncpus = libbpf_num_possible_cpus();
	if (c->ncpus < 1)
		c->ncpus = 1;
	c->hist_stride = (sizeof(struct hist) + 7) & ~(size_t)7;
	hist_entries = HIST_MAP_BUDGET / (c->hist_stride * (size_t)c->ncpus);
	if (hist_entries > 4096)
		hist_entries = 4096;
	if (hist_entries < 64)
		hist_entries = 64;
	bpf_map__set_max_entries(c->skel->maps.hists, (__u32)hist_entries);
	c->percpu_buf = calloc((size_t)c->ncpus, c->hist_stride);
	c->stage_stride = (sizeof(struct stage_hist) + 7) & ~(size_t)7;
	c->stage_buf = calloc((size_t)c->ncpus, c->stage_stride);
	c->stage_prev = calloc(STAGE__MAX, sizeof(*c->stage_prev));
	/* place slots: a small share of the histogram budget, at most 64 places */
	c->place_max = (__u32)(PLACE_BUDGET / (c->stage_stride * (size_t)c->ncpus));
	if (c->place_max > 64)
		c->place_max = 64;
	if (c->place_max < 4)
		c->place_max = 4;
	bpf_map__set_max_entries(c->skel->maps.place_hists, c->place_max);
	c->nrings = c->ncpus < REQ_RINGS_MAX ? (__u32)c->ncpus : REQ_RINGS_MAX;
	c->ring_size = req_ring_size(c->nrings);
	bpf_map__set_max_entries(c->skel->maps.req_rings, c->nrings);
	/* the inner template keeps its 1 MiB: the kernel matches inner ring buffers by type
	 * and flags only (and libbpf 1.1 cannot resize an inner map before load) */
	c->skel->rodata->targ_nrings = c->nrings;
	c->skel->rodata->targ_ring_wake = c->ring_size / 4;
	c->place_keys = calloc(c->place_max, sizeof(*c->place_keys));
	c->place_prev = calloc(c->place_max, sizeof(*c->place_prev));
	if (!c->percpu_buf || !c->stage_buf || !c->stage_prev || !c->place_keys ||
	    !c->place_prev) {
		r = fail(err, errlen, -ENOMEM, "out of memory");
		goto error;
	}

	/* degrade to the stages this kernel can feed: leave out programs whose hook is absent */
	for (size_t i = 0; i < sizeof(prog_hooks) / sizeof(prog_hooks[0]); i++) {
		p = bpf_object__find_program_by_name(c->skel->obj, prog_hooks[i].prog);
		if (!p)
			continue;
		if (!kernel_caps_has_tp(&c->caps, prog_hooks[i].tp) ||
		    (prog_hooks[i].requests_only && !(features & COLL_REQUESTS)))
			bpf_program__set_autoload(p, false);
	}
	if (!o->cuda || !(features & COLL_REQUESTS) || !c->caps.kinds[PK_UPROBE].available) {
		bpf_program__set_autoload(c->skel->progs.tt_cuda_sync_enter, false);
		bpf_program__set_autoload(c->skel->progs.tt_cuda_sync_exit, false);
	}
	r = tailtrace_bpf__load(c->skel);
	if (r) {
		r = fail(err, errlen, r, "loading the BPF programs failed: %s (run with -v for the "
			 "verifier log)", strerror(-r));
		goto error;
	}
	/* before attaching: a request finished with no ring in place would be lost */
	r = req_rings_setup(c, on_req_event);
	if (r) {
		r = fail(err, errlen, r, "ring buffer setup failed: %s", strerror(-r));
		goto error;
	}
	c->qdisc_stamps = map_view(c->skel->maps.qdisc_stamps);
	c->rx_stamps = map_view(c->skel->maps.rx_stamps);
	if (!c->qdisc_stamps || !c->rx_stamps) {
		r = fail(err, errlen, -errno, "mapping the stamp arrays failed: %s",
			 strerror(errno));
		goto error;
	}
	if (cgfd >= 0) {
		__u32 zero = 0;

		if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.cgroup_filter), &zero, &cgfd, 0)) {
			r = fail(err, errlen, -errno, "setting the cgroup filter failed: %s",
				 strerror(errno));
			goto error;
		}
	}
	bpf_object__for_each_program(p, c->skel->obj) {
		if (!bpf_program__autoload(p))
			continue;
		if (p == c->skel->progs.tt_cuda_sync_enter || p == c->skel->progs.tt_cuda_sync_exit)
			continue;
		if (p == c->skel->progs.tt_flow_sweep)
			continue; /* run from collector__poll, not attached */
		if (p == c->skel->progs.tt_sockops) {
			/* the cgroup2 root sees every socket; --cgroup narrows it */
			if (cgfd >= 0) {
				attach_cgfd = dup(cgfd);
			} else if (!cgroup2_mount(cgmnt, sizeof(cgmnt))) {
				attach_cgfd = open(cgmnt, O_RDONLY | O_DIRECTORY);
			}
			if (attach_cgfd < 0) {
				/* it only tells each connection's side, which the ports tell
				 * otherwise (the guess used for connections older than tailtrace) */
				if (log_verbose())
					fprintf(stderr, "no cgroup v2 hierarchy: the side of each "
						"connection is guessed from its ports\n");
				continue;
			}
			r = add_link(c, bpf_program__attach_cgroup(p, attach_cgfd));
			close(attach_cgfd);
			attach_cgfd = -1;
		} else {
			r = add_link(c, bpf_program__attach(p));
		}
		if (r) {
			r = fail(err, errlen, r, "attaching %s failed: %s", bpf_program__name(p),
				 strerror(-r));
			goto error;
		}
	}
	if (o->cuda && (features & COLL_REQUESTS)) {
		const char *lib = find_libcuda();

		if (!lib) {
			*usage = true;
			r = fail(err, errlen, -ENOENT,
				 "--cuda: libcuda.so.1 not found (set TAILTRACE_LIBCUDA=PATH)");
			goto error;
		}
		for (size_t i = 0; i < sizeof(cuda_syncs) / sizeof(cuda_syncs[0]); i++) {
			LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = cuda_syncs[i]);
			pid_t pid = o->pid ? (pid_t)o->pid : -1;

			uo.retprobe = false;
			r = add_link(c, bpf_program__attach_uprobe_opts(
						c->skel->progs.tt_cuda_sync_enter, pid, lib, 0, &uo));
			if (!r) {
				uo.retprobe = true;
				r = add_link(c, bpf_program__attach_uprobe_opts(
							c->skel->progs.tt_cuda_sync_exit, pid, lib, 0,
							&uo));
			}
			if (r) {
				r = fail(err, errlen, r, "--cuda: attaching to %s in %s failed: %s",
					 cuda_syncs[i], lib, strerror(-r));
				goto error;
			}
		}
	}
	if (cgfd >= 0)
		close(cgfd);
	note_missing(c);
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		c->start_realtime = (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
	}
	*out = c;
	return 0;
error:
	if (cgfd >= 0)
		close(cgfd);
	collector__close(c);
	return r;
}

int collector__unavailable(const struct collector *c, enum tt_stage *stages, const char **why,
			   int max)
{
	int n = c->nmissing < max ? c->nmissing : max;

	for (int i = 0; i < n; i++) {
		stages[i] = c->missing[i];
		why[i] = c->missing_why[i];
	}
	return n;
}

const struct kernel_caps *collector__caps(const struct collector *c)
{
	return &c->caps;
}

void collector__set_req_cb(struct collector *c, collector_req_cb cb, void *ctx)
{
	c->cb = cb;
	c->cb_ctx = ctx;
}

static void assign_place_slots(struct collector *c);

/* Once a second, the flows of sockets that closed without a close event reaching the
 * programs are deleted (bpf/flow.bpf.h, tt_flow_sweep; counted as closes_unseen). */
static void sweep_flows(struct collector *c)
{
	LIBBPF_OPTS(bpf_test_run_opts, run);
	__u64 now = mono_ns();

	if (now - c->flows_swept_ns < 1000000000ULL)
		return;
	c->flows_swept_ns = now;
	if (bpf_prog_test_run_opts(bpf_program__fd(c->skel->progs.tt_flow_sweep), &run) &&
	    log_verbose())
		fprintf(stderr, "flow sweep: %s\n", strerror(errno));
}

int collector__poll(struct collector *c, int timeout_ms)
{
	/* the BPF side wakes us only when the buffer is filling (BPF_RB_NO_WAKEUP): after the
	 * timeout, take what arrived without a wake-up */
	int n = ring_buffer__poll(c->rb, timeout_ms), m;

	if (n < 0 && n != -EINTR)
		return n;
	m = ring_buffer__consume(c->rb);
	sweep_flows(c);
	/* new places get their array slot within ~200 ms, not only at the next snapshot: a
	 * one-shot `hist` has a single snapshot, at the end */
	if (c->nplaces < c->place_max) {
		__u64 now = mono_ns();

		if (now - c->places_checked_ns >= 200000000ULL) {
			c->places_checked_ns = now;
			assign_place_slots(c);
		}
	}
	return (n > 0 ? n : 0) + (m > 0 ? m : 0);
}

/* Sums each entry of a per-CPU array of __u64 over the CPUs: one batched lookup for all
 * entries (the drop reasons are 128, read every snapshot), one lookup an entry where the
 * kernel has no batch for the map. */
static int sum_percpu_array(int fd, __u32 n, __u64 *out, int ncpus)
{
	__u64 *vals = calloc((size_t)n * (size_t)ncpus, sizeof(__u64));
	__u32 *keys = calloc(n, sizeof(__u32)), count = n, next;
	int r;

	if (!vals || !keys) {
		free(vals);
		free(keys);
		return -ENOMEM;
	}
	memset(out, 0, n * sizeof(*out));
	r = bpf_map_lookup_batch(fd, NULL, &next, keys, vals, &count, NULL);
	if ((!r || r == -ENOENT) && count == n) {
		for (__u32 i = 0; i < count; i++) {
			if (keys[i] >= n)
				continue;
			for (int cpu = 0; cpu < ncpus; cpu++)
				out[keys[i]] += vals[(size_t)i * ncpus + cpu];
		}
	} else {
		for (__u32 i = 0; i < n; i++) {
			if (bpf_map_lookup_elem(fd, &i, vals))
				continue;
			for (int cpu = 0; cpu < ncpus; cpu++)
				out[i] += vals[cpu];
		}
	}
	free(vals);
	free(keys);
	return 0;
}

/* Entries present in a map (for the "inserted - deleted - present" eviction count). */
/* Stamps written and not yet taken. Entries change under us: a count, not a snapshot. */
static __u64 live_stamps(const struct collector *c)
{
	__u64 n = 0;

	for (__u32 i = 0; i < STAMP_BUCKETS; i++) {
		for (int w = 0; w < 2; w++) {
			n += __atomic_load_n(&c->qdisc_stamps[i].e[w].skb, __ATOMIC_RELAXED) != 0;
			n += __atomic_load_n(&c->rx_stamps[i].e[w].skb, __ATOMIC_RELAXED) != 0;
		}
	}
	return n;
}

/* One slot of a cumulative per-CPU stage_hist array: the samples since the last snapshot,
 * added to the snapshot under `key`. The epoch was bumped just before, so each CPU's max_ns
 * of the old epoch covers exactly the samples since the previous bump. */
static int collect_array_slot(struct collector *c, int fd, __u32 slot, __u64 epoch,
			      struct hist *prev, const struct hist_key *key, struct snapshot *s)
{
	struct hist cur, delta;
	__u64 max_hint = 0;

	if (bpf_map_lookup_elem(fd, &slot, c->stage_buf))
		return 0;
	memset(&cur, 0, sizeof(cur));
	for (int cpu = 0; cpu < c->ncpus; cpu++) {
		const struct stage_hist *sh =
			(const void *)((const char *)c->stage_buf + (size_t)cpu * c->stage_stride);

		hist_add(&cur, &sh->h);
		if (sh->max_epoch == epoch && sh->h.max_ns > max_hint)
			max_hint = sh->h.max_ns;
	}
	hist_interval(&delta, &cur, prev, max_hint);
	*prev = cur;
	return delta.count ? snapshot__add_hist(s, key, &delta) : 0;
}

/* Places seen since the last snapshot wait in place_slots as pending: give each a slot of
 * place_hists while there are free ones (the rest stay in `hists`). */
static void assign_place_slots(struct collector *c)
{
	int fd = bpf_map__fd(c->skel->maps.place_slots);
	struct hist_key key, next, *prev = NULL;
	__u32 v;

	while (c->nplaces < c->place_max && !bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v) || v != PLACE_PENDING)
			continue;
		v = c->nplaces;
		if (bpf_map_update_elem(fd, &key, &v, BPF_EXIST))
			continue;
		c->place_keys[c->nplaces++] = key;
	}
}

/* Ungrouped stages from the per-CPU arrays: stage_hists (no place) and place_hists. */
static int collect_array_hists(struct collector *c, struct snapshot *s)
{
	int sfd = bpf_map__fd(c->skel->maps.stage_hists);
	int pfd = bpf_map__fd(c->skel->maps.place_hists);
	__u64 epoch = __atomic_fetch_add(&c->skel->bss->hist_epoch, 1, __ATOMIC_SEQ_CST);
	int err = 0;

	for (__u32 stage = 0; stage < STAGE__MAX && !err; stage++) {
		struct hist_key key = { .stage = (__u16)stage, .by = GROUP_NONE };

		err = collect_array_slot(c, sfd, stage, epoch, &c->stage_prev[stage], &key, s);
	}
	for (__u32 i = 0; i < c->nplaces && !err; i++)
		err = collect_array_slot(c, pfd, i, epoch, &c->place_prev[i], &c->place_keys[i], s);
	assign_place_slots(c);
	return err;
}

static __u64 map_count(const struct bpf_map *map)
{
	size_t key_size = bpf_map__key_size(map);
	int fd = bpf_map__fd(map);
	unsigned char key[64], next[64];
	void *prev = NULL;
	__u64 n = 0;

	if (key_size > sizeof(key))
		return 0;
	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, key_size);
		prev = key;
		n++;
	}
	return n;
}

int collector__snapshot(struct collector *c, struct snapshot *s)
{
	int hfd = bpf_map__fd(c->skel->maps.hists);
	struct hist_key key, next, *keys = NULL;
	size_t nkeys = 0, cap = 0;
	__u64 cur[CNT__MAX], drops[TT_DROP_REASONS], pkt_live;
	__u64 slow_cut = 0, slow_threshold = 0;
	struct hist merged;
	struct timespec ts;
	void *prev = NULL;
	size_t nslow;
	int err = 0;

	/* the ring buffer first, so requests finished before now land in this snapshot */
	ring_buffer__consume(c->rb);
	while (!bpf_map_get_next_key(hfd, prev, &next)) {
		if (nkeys == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct hist_key *nk = realloc(keys, ncap * sizeof(*keys));

			if (!nk) {
				free(keys);
				return -ENOMEM;
			}
			keys = nk;
			cap = ncap;
		}
		keys[nkeys++] = next;
		key = next;
		prev = &key;
	}
	for (size_t i = 0; i < nkeys; i++) {
		/* read and delete atomically: nothing counted between the two is lost */
		if (bpf_map_lookup_and_delete_elem(hfd, &keys[i], c->percpu_buf))
			continue;
		c->user_deleted++;
		memset(&merged, 0, sizeof(merged));
		hist_merge_percpu(&merged, c->percpu_buf, c->ncpus, c->hist_stride);
		if (merged.count && (err = snapshot__add_hist(s, &keys[i], &merged)))
			break;
	}
	free(keys);
	if (!err)
		err = collect_array_hists(c, s);
	if (err)
		return err;

	sum_percpu_array(bpf_map__fd(c->skel->maps.counters), CNT__MAX, cur, c->ncpus);
	/* a delta like every counter: snapshots of successive intervals are summed */
	s->events_lost += cur[CNT_EVENTS_LOST] - c->prev_counters[CNT_EVENTS_LOST];
	for (int i = 0; i < CNT__MAX; i++) {
		s->counters[i] += cur[i] - c->prev_counters[i];
		c->prev_counters[i] = cur[i];
	}
	sum_percpu_array(bpf_map__fd(c->skel->maps.drop_reasons), TT_DROP_REASONS, drops,
			 c->ncpus);
	for (int i = 0; i < TT_DROP_REASONS; i++) {
		s->drop_reasons[i] += drops[i] - c->prev_drops[i];
		c->prev_drops[i] = drops[i];
	}
	/* every key created and not deleted by us is gone only if the LRU evicted it, or is
	 * still in the map (created after the walk above: read next time). A key created
	 * between the counter read and the count is live but not yet inserted: the total may
	 * not run backwards, or the unsigned delta would wrap. */
	{
		__u64 inserts = cur[CNT_HIST_INSERTS];
		__u64 gone = c->user_deleted + map_count(c->skel->maps.hists);
		__u64 evicted = inserts > gone ? inserts - gone : 0;

		if (evicted > c->prev_evicted) {
			s->hist_evicted += evicted - c->prev_evicted;
			c->prev_evicted = evicted;
		}
		s->hist_live = nkeys;
	}
	/* tracked threads the same way (inserted - deleted at exit - live), but threads exit
	 * while we count: take the count only when no insert or delete happened during it */
	for (int attempt = 0; attempt < 4; attempt++) {
		__u64 before[CNT__MAX], after[CNT__MAX], live, evicted;

		sum_percpu_array(bpf_map__fd(c->skel->maps.counters), CNT__MAX, before, c->ncpus);
		live = map_count(c->skel->maps.threads);
		sum_percpu_array(bpf_map__fd(c->skel->maps.counters), CNT__MAX, after, c->ncpus);
		if (before[CNT_THREAD_INSERTS] != after[CNT_THREAD_INSERTS] ||
		    before[CNT_THREAD_DELETES] != after[CNT_THREAD_DELETES])
			continue;
		live += after[CNT_THREAD_DELETES];
		evicted = after[CNT_THREAD_INSERTS] > live ? after[CNT_THREAD_INSERTS] - live : 0;
		if (evicted > c->prev_thread_evicted) {
			s->hist_evicted += evicted - c->prev_thread_evicted;
			c->prev_thread_evicted = evicted;
		}
		break;
	}
	/* per-packet stamps never matched: overwritten in a full bucket or left by packets we
	 * did not see leave (reported as lost, never silently) */
	pkt_live = live_stamps(c);
	{
		__u64 ins = cur[CNT_PKT_INSERTS], del = cur[CNT_PKT_DELETES] + pkt_live;
		__u64 unmatched = ins > del ? ins - del : 0;

		/* per interval, like the other counters, and never backwards (see above) */
		if (unmatched > c->prev_unmatched) {
			s->pkt_unmatched += unmatched - c->prev_unmatched;
			c->prev_unmatched = unmatched;
		}
	}
	/* device names (kept in the kernel map: devices seen once stay named) */
	{
		int dfd = bpf_map__fd(c->skel->maps.devnames);
		struct dev_key dk, dn, *dprev = NULL;
		struct dev_name name;

		while (!bpf_map_get_next_key(dfd, dprev, &dn)) {
			if (!bpf_map_lookup_elem(dfd, &dn, &name)) {
				name.name[sizeof(name.name) - 1] = 0;
				snapshot__add_dev(s, &dn, name.name);
			}
			dk = dn;
			dprev = &dk;
		}
	}
	/* attribution aggregate and slow requests move into the snapshot */
	if (s->attr) {
		attr_agg__merge(s->attr, c->agg);
		attr_agg__free(c->agg);
	} else {
		s->attr = c->agg;
	}
	c->agg = attr_agg__new();
	nslow = (c->features & COLL_SLOW_REQS)
			? slow_keep__take(&c->slow, c->slow_out, &slow_cut, &slow_threshold)
			: 0;
	for (size_t i = 0; i < nslow; i++) {
		if (s->nslow == s->slow_cap) {
			size_t ncap = s->slow_cap ? s->slow_cap * 2 : 64;
			struct req_event *n = realloc(s->slow_reqs, ncap * sizeof(*n));

			if (!n)
				break;
			s->slow_reqs = n;
			s->slow_cap = ncap;
		}
		s->slow_reqs[s->nslow++] = c->slow_out[i];
	}
	if (c->features & COLL_SLOW_REQS) {
		s->slow_cut += slow_cut;
		s->slow_threshold_ns = slow_threshold;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	if (!s->start_ns)
		s->start_ns = c->start_realtime;
	s->end_ns = (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
	c->start_realtime = s->end_ns;
	return c->agg ? 0 : -ENOMEM;
}

void collector__close(struct collector *c)
{
	if (!c)
		return;
	req_rings_close(c);
	for (int i = 0; i < c->nlinks; i++)
		bpf_link__destroy(c->links[i]);
	if (c->skel) {
		map_unview(c->skel->maps.qdisc_stamps, c->qdisc_stamps);
		map_unview(c->skel->maps.rx_stamps, c->rx_stamps);
	}
	tailtrace_bpf__destroy(c->skel);
	attr_agg__free(c->agg);
	slow_keep__free(&c->slow);
	free(c->slow_out);
	free(c->percpu_buf);
	free(c->stage_buf);
	free(c->stage_prev);
	free(c->place_keys);
	free(c->place_prev);
	free(c);
}
