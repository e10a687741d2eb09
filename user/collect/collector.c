// SPDX-License-Identifier: GPL-2.0
/* Loads and attaches the TCP/scheduler/request programs (and detaches them at close).
 * Everything is attached through bpf_links owned by this process, so nothing outlives it,
 * even after kill -9. The request rings are in collector_rings.c, the reading of the maps
 * into snapshots in collector_snapshot.c. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect/collector_int.h"
#include "attr/attribution.h"
#include "collect/budget.h"
#include "collect/cgroup.h"
#include "collect/k8s.h"
#include "lib/log.h"
#include "lib/clock.h"
#include "collect/netdev.h"
#include "lib/denial.h"
#include "core/stages.h"
#include "tailtrace.skel.h"
#include "tailtrace_compat.skel.h"
#include "lib/util.h"

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

/* The driver/softirq programs fire per packet or per softirq on the whole host: they run
 * only when something selects them. A device filter selects its devices; a port or
 * process filter of a request command (explain, record) selects them so a request's
 * backlog wait is seen; --stage naming one of their stages selects them on every device. */
static bool nic_wanted(const struct collector_config *o, unsigned int features)
{
	bool flows = o->nports || o->pid || o->comm[0] || o->cgroup_path[0];

	return o->ndevs || (flows && (features & COLL_REQUESTS)) || o->nic_stages;
}

int collector_fail(char *err, size_t len, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return code;
}

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif
#define NEED(cap)    (1ULL << (cap))
#define NEED_BPF     (NEED(CAP_BPF) | NEED(CAP_SYS_ADMIN))
#define NEED_PERFMON (NEED(CAP_PERFMON) | NEED(CAP_SYS_ADMIN))

/* A step that failed: on EPERM the cause from /proc/self/status (a missing capability, a
 * seccomp filter, a user namespace) in place of strerror, so a container's filter is not
 * taken for a memory limit; else "what failed: strerror (hint)". */
static int fail_step(char *err, size_t len, int code, const char *what, const char *call,
		     const __u64 *needs, int nneeds, const char *hint)
{
	struct proc_status st;
	bool userns;
	char cause[400];

	if (code == -EPERM && !proc_status_self(&st, &userns) &&
	    denial_cause(&st, userns, call, needs, nneeds, cause, sizeof(cause)) > 0)
		return collector_fail(err, len, code, "%s failed: %s", what, cause);
	return collector_fail(err, len, code, "%s failed: %s%s", what, strerror(-code), hint);
}

int collector_add_link(struct collector *c, struct bpf_link *l)
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
		if (stage_info(s)->flags & SF_RDMA)
			continue; /* the RDMA tracer reports its own */
		/* gpu.wait exists only with --cuda (its uprobes then load, or open fails) */
		if (s == STAGE_GPU_WAIT &&
		    !bpf_program__autoload(c->skel->progs.tt_cuda_sync_enter))
			continue;
		if ((stage_info(s)->flags & SF_NIC) && !c->nic)
			continue;
		stage_feed_of(&c->caps, s, &feed);
		if (feed.available)
			continue;
		snprintf(c->why_buf[c->nmissing], sizeof(c->why_buf[0]), "%s", feed.why);
		c->missing_why[c->nmissing] = c->why_buf[c->nmissing];
		c->missing[c->nmissing++] = s;
	}
}

/* User input first, so a typo is a usage error before anything is loaded. *cgfd gets the
 * --cgroup directory, opened (-1 without --cgroup). */
static int check_user_input(const struct collector_config *o, int *cgfd, char *err, size_t errlen,
			    bool *usage)
{
	char path[4096];
	struct statfs sfs;

	if (o->pid && kill((pid_t)o->pid, 0) && errno == ESRCH) {
		*usage = true;
		return collector_fail(err, errlen, -ESRCH, "no process with pid %u", o->pid);
	}
	if (o->cgroup_path[0]) {
		*cgfd = cgroup_open_path(o->cgroup_path, path, sizeof(path));
		if (*cgfd < 0) {
			*usage = true;
			return collector_fail(err, errlen, *cgfd,
					      "cgroup '%s' not found in the cgroup v2 hierarchy",
					      o->cgroup_path);
		}
		/* an absolute path is taken as it is: on a host with both hierarchies, the
		 * tmpfs above the v1 controllers would otherwise fail much later, as EBADF
		 * from the cgroup filter */
		if (fstatfs(*cgfd, &sfs) || sfs.f_type != CGROUP2_SUPER_MAGIC) {
			*usage = true;
			return collector_fail(
				err, errlen, -ENOTDIR,
				"--cgroup '%s' is not a cgroup v2 directory (with cgroup v1 "
				"beside v2, v2 is mounted elsewhere, often at "
				"/sys/fs/cgroup/unified)",
				o->cgroup_path);
		}
	}
	return 0;
}

/* The user's filters and the features into the BPF programs' read-only settings. */
static int set_filters(struct collector *c, const struct collector_config *o, int cgfd, char *err,
		       size_t errlen, bool *usage)
{
	int r;

	for (int i = 0; i < o->ndevs; i++) {
		struct netdev_ref ref;

		r = netdev_resolve(o->devs[i], &ref);
		if (r) {
			*usage = true;
			return collector_fail(
				err, errlen, r,
				r == -EEXIST
					? "device '%s' exists in several network namespaces: "
					  "use NETNS/IFNAME"
					: "unknown device '%s' (not in this or any named netns)",
				o->devs[i]);
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
	c->skel->rodata->targ_requests = c->features & COLL_REQUESTS;
	c->skel->rodata->targ_tls = o->tls_uprobes && (c->features & COLL_REQUESTS);
	c->skel->rodata->targ_sched_hist = c->features & COLL_SCHED_HIST;
	c->nic = nic_wanted(o, c->features);
	c->skel->rodata->targ_nic = c->nic;
	return 0;
}

/* Sizes the histogram maps and request rings from the CPU count, and the buffers that read
 * them. */
static int size_maps(struct collector *c, char *err, size_t errlen)
{
	size_t hist_entries;

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
	if (!c->percpu_buf || !c->stage_buf || !c->stage_prev || !c->place_keys || !c->place_prev)
		return collector_fail(err, errlen, -ENOMEM, "out of memory");
	return 0;
}

/* A catalogue row that names a program the object lacks fails the build here. */
#define TT_PROG_EXISTS(p, ...) (void)s->progs.p;
static inline __attribute__((unused)) void program_rows_exist(struct tailtrace_bpf *s)
{
	TT_PROGRAM_CATALOGUE(TT_PROG_EXISTS)
}

/* Whether a program's flags want it in this session. */
static bool prog_wanted(const struct collector *c, const struct collector_config *o,
			unsigned int flags)
{
	if ((flags & PF_REQUESTS) && !(c->features & COLL_REQUESTS))
		return false;
	if ((flags & PF_NIC) && !c->nic)
		return false;
	if ((flags & PF_CUDA) && !(o->cuda && (c->features & COLL_REQUESTS)))
		return false;
	if ((flags & PF_TLS) && !(o->tls_uprobes && (c->features & COLL_REQUESTS)))
		return false;
	return true;
}

/* Degrade to the stages this kernel can feed: each event through the feed chosen for it
 * (user/collect/feeds.c), every other program left out. */
static void choose_programs(struct collector *c, const struct collector_config *o)
{
	const struct feed_row *rows = feed_rows();
	struct bpf_program *p;

	bpf_object__for_each_program (p, c->skel->obj) {
		bool on = false;

		for (int i = 0; i < FEED_ROWS && !on; i++)
			on = c->caps.feed_on[i] && !strcmp(rows[i].prog, bpf_program__name(p)) &&
			     prog_wanted(c, o, rows[i].flags);
		bpf_program__set_autoload(p, on);
	}
	c->skel->rodata->targ_sk_cookie_helper = c->caps.feat[PFEAT_SK_COOKIE];
	c->skel->rodata->targ_qdisc_at_dev_queue = feeds_flag_on(&c->caps, PF_QDISC_AT_DEVQ);
	for (int i = 0; i < c->caps.nfns; i++)
		if (!strcmp(c->caps.fns[i].name, "tcp_recvmsg") && c->caps.fns[i].nargs > 0)
			c->skel->rodata->targ_recvmsg_nargs = (__u32)c->caps.fns[i].nargs;
	c->sweep = bpf_program__autoload(c->skel->progs.tt_flow_sweep)
			   ? c->skel->progs.tt_flow_sweep
			   : c->skel->progs.tt_flow_sweep_keys;
	if (c->sweep == c->skel->progs.tt_flow_sweep_keys)
		c->sweep_keys = calloc(SWEEP_KEYS_MAX, sizeof(*c->sweep_keys));
}

/* The object for this kernel: with kfuncs from 6.2, else the same programs built without
 * them (bpf/kernel_defs.bpf.h). Both have one layout, so one skeleton serves both. */
static struct tailtrace_bpf *object_open(bool compat)
{
	struct tailtrace_bpf *s;
	int err;

	if (!compat)
		return tailtrace_bpf__open();
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	err = tailtrace_bpf__create_skeleton(s);
	if (!err) {
		s->skeleton->data = (void *)tailtrace_compat_bpf__elf_bytes(&s->skeleton->data_sz);
		err = bpf_object__open_skeleton(s->skeleton, NULL);
	}
	if (err) {
		tailtrace_bpf__destroy(s);
		errno = -err;
		return NULL;
	}
	return s;
}

/* Loads the programs, then what must exist before they attach: the request rings, the
 * stamp arrays' views and the cgroup filter. */
/* The framing programs walk a long segment on in themselves (bpf/framing.bpf.h): each
 * in its own program array, when loaded. */
static int framing_more_setup(struct collector *c, char *err, size_t errlen)
{
	struct bpf_program *const progs[] = { c->skel->progs.tt_skb_egress,
					      c->skel->progs.tt_skb_ingress };
	struct bpf_map *const arrays[] = { c->skel->maps.framing_more_out,
					   c->skel->maps.framing_more_in };
	__u32 zero = 0;

	for (__u32 i = 0; i < ARRAY_SIZE(progs); i++) {
		int fd = bpf_program__autoload(progs[i]) ? bpf_program__fd(progs[i]) : -1;

		if (fd >= 0 && bpf_map_update_elem(bpf_map__fd(arrays[i]), &zero, &fd, 0))
			return collector_fail(err, errlen, -errno, "setting up %s failed: %s",
					      bpf_program__name(progs[i]), strerror(errno));
	}
	return 0;
}

static int load_programs(struct collector *c, int cgfd, char *err, size_t errlen)
{
	int r = tailtrace_bpf__load(c->skel);

	if (r) {
		/* tracing programs want CAP_PERFMON besides CAP_BPF to load */
		const __u64 needs[] = { NEED_BPF, NEED_PERFMON };

		return fail_step(err, errlen, r, "loading the BPF programs", "bpf()", needs,
				 ARRAY_SIZE(needs), " (run with -v for the verifier log)");
	}
	/* before attaching: a request finished with no ring in place would be lost */
	r = req_rings_setup(c);
	if (r)
		return collector_fail(err, errlen, r, "ring buffer setup failed: %s", strerror(-r));
	c->qdisc_stamps = map_view(c->skel->maps.qdisc_stamps);
	c->rx_stamps = map_view(c->skel->maps.rx_stamps);
	if (!c->qdisc_stamps || !c->rx_stamps)
		return collector_fail(err, errlen, -errno, "mapping the stamp arrays failed: %s",
				      strerror(errno));
	if (cgfd >= 0) {
		__u32 zero = 0;

		if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.cgroup_filter), &zero, &cgfd, 0))
			return collector_fail(err, errlen, -errno,
					      "setting the cgroup filter failed: %s",
					      strerror(errno));
	}
	return framing_more_setup(c, err, errlen);
}

/* The cgroup2 root sees every socket; --cgroup narrows it. Without a cgroup v2 hierarchy
 * the cgroup programs stay unattached (returns 0): sockops only tells each connection's
 * side, which the ports tell otherwise (the guess used for connections older than
 * tailtrace), and without cgroup_skb requests are exchanges, not the protocol's framing. */
static int attach_cgroup_root(struct collector *c, struct bpf_program *p, int cgfd)
{
	char cgmnt[512];
	int attach_cgfd = -1, r;

	if (cgfd >= 0) {
		attach_cgfd = dup(cgfd);
	} else if (!cgroup2_mount(cgmnt, sizeof(cgmnt))) {
		attach_cgfd = open(cgmnt, O_RDONLY | O_DIRECTORY);
	}
	if (attach_cgfd < 0) {
		if (log_verbose())
			fprintf(stderr, "no cgroup v2 hierarchy: %s not attached\n",
				bpf_program__name(p));
		return 0;
	}
	r = collector_add_link(c, bpf_program__attach_cgroup(p, attach_cgfd));
	close(attach_cgfd);
	return r;
}

/* An attach that failed, with the system call that made it and what that call needs: the
 * perf-event kinds go through perf_event_open(), the cgroup ones want CAP_NET_ADMIN. */
static int fail_attach(char *err, size_t len, int code, const char *what,
		       const struct bpf_program *p)
{
	const __u64 perf[] = { NEED_PERFMON }, cg[] = { NEED(CAP_NET_ADMIN) },
		    tracing[] = { NEED_BPF, NEED_PERFMON };

	switch (bpf_program__type(p)) {
	case BPF_PROG_TYPE_KPROBE:
	case BPF_PROG_TYPE_TRACEPOINT:
	case BPF_PROG_TYPE_PERF_EVENT:
		return fail_step(err, len, code, what, "perf_event_open()", perf, 1, "");
	case BPF_PROG_TYPE_SOCK_OPS:
	case BPF_PROG_TYPE_CGROUP_SKB:
		return fail_step(err, len, code, what, "bpf()", cg, 1, "");
	default:
		return fail_step(err, len, code, what, "bpf()", tracing, 2, "");
	}
}

/* Every loaded program but the CUDA uprobes (collector_uprobes.c) gets its bpf_link. */
static int attach_programs(struct collector *c, int cgfd, char *err, size_t errlen)
{
	struct bpf_program *p;
	int r;

	bpf_object__for_each_program (p, c->skel->obj) {
		if (!bpf_program__autoload(p))
			continue;
		if (p == c->skel->progs.tt_cuda_sync_enter || p == c->skel->progs.tt_cuda_sync_exit)
			continue;
		if (bpf_program__type(p) == BPF_PROG_TYPE_KPROBE &&
		    !strncmp(bpf_program__name(p), "tt_tls_", 7))
			continue; /* collector_uprobes.c */
		if (p == c->sweep)
			continue; /* run from collector__poll, not attached */
		if (collector_prog_deep(p))
			continue; /* collector_deep.c */
		if (bpf_program__type(p) == BPF_PROG_TYPE_SOCK_OPS ||
		    bpf_program__type(p) == BPF_PROG_TYPE_CGROUP_SKB)
			r = attach_cgroup_root(c, p, cgfd);
		else
			r = collector_add_link(c, bpf_program__attach(p));
		if (r) {
			char what[128];

			snprintf(what, sizeof(what), "attaching %s", bpf_program__name(p));
			return fail_attach(err, errlen, r, what, p);
		}
	}
	return 0;
}

/* The kernel's run-time statistics of every loaded program, from now on. Refused (an old
 * kernel, no CAP_SYS_ADMIN): the figures stay zero, tracing goes on. */
static void follow_costs(struct collector *c)
{
	struct bpf_program *p;

	if (self_cost__init(&c->cost) && log_verbose())
		fprintf(stderr, "BPF run-time statistics unavailable: %s\n", strerror(errno));
	bpf_object__for_each_program (p, c->skel->obj) {
		if (bpf_program__autoload(p) && p != c->sweep)
			self_cost__add_prog(&c->cost, bpf_program__fd(p), bpf_program__name(p));
	}
}

/* --by pod groups are labelled from this host's live cgroup tree (user/collect/k8s.c):
 * the --cgroup directory when given (in a pod with its own cgroup namespace, the host's
 * tree mounted elsewhere, docs/deploy.md), else the cgroup2 mount */
static void label_pods(const struct collector_config *o)
{
	char root[4096];
	int fd = -1;

	if (o->by != GROUP_POD)
		root[0] = '\0';
	else if (o->cgroup_path[0])
		fd = cgroup_open_path(o->cgroup_path, root, sizeof(root));
	else if (cgroup2_mount(root, sizeof(root)))
		root[0] = '\0';
	if (fd >= 0)
		close(fd);
	else if (o->cgroup_path[0])
		root[0] = '\0';
	k8s_labels_root(root[0] ? root : NULL);
}

int collector__open(struct collector **out, const struct collector_config *o, char *err,
		    size_t errlen, bool *usage)
{
	unsigned int features = o->features;
	struct collector *c;
	int cgfd = -1, r;
	bool no_tx_tstamp;

	*usage = false;
	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return collector_fail(err, errlen, -ENOMEM, "out of memory");
	c->features = features;
	c->cost.stats_fd = -1;
	c->agg = attr_agg__new();
	c->slow_out = calloc(SLOW_KEEP_MAX, sizeof(*c->slow_out));
	if (!c->agg || !c->slow_out || slow_keep__init(&c->slow, SLOW_KEEP_MAX)) {
		r = collector_fail(err, errlen, -ENOMEM, "out of memory");
		goto error;
	}
	r = check_user_input(o, &cgfd, err, errlen, usage);
	if (r)
		goto error;
	label_pods(o);
	if (kernel_caps_probe(&c->caps)) {
		r = collector_fail(
			err, errlen, -EINVAL,
			"TAILTRACE_AVOID_FEEDS: unknown feed kind in '%s' (kinds: tp_btf, fentry, "
			"kprobe, kfunc)",
			getenv("TAILTRACE_AVOID_FEEDS"));
		goto error;
	}
	if (!c->caps.btf) {
		r = collector_fail(
			err, errlen, -ENOTSUP,
			"this kernel has no BTF (/sys/kernel/btf/vmlinux): tailtrace needs "
			"CONFIG_DEBUG_INFO_BTF=y");
		goto error;
	}
	c->skel = object_open(c->caps.compat);
	if (!c->skel) {
		r = collector_fail(err, errlen, -errno, "opening the BPF object failed: %s",
				   strerror(errno));
		goto error;
	}
	r = set_filters(c, o, cgfd, err, errlen, usage);
	if (r)
		goto error;
	r = size_maps(c, err, errlen);
	if (r)
		goto error;
	choose_programs(c, o);
	deep_prepare(c, o->deep_duty);
	c->skel->rodata->targ_tx_tstamp = o->deep_duty < 1;
	/* Said once tracing is sure to start: a failed load prints its one error line only. */
	no_tx_tstamp = o->deep_duty < 1 && (features & COLL_REQUESTS) &&
		       !bpf_program__autoload(c->skel->progs.tt_sockops_tstamp);
	r = load_programs(c, cgfd, err, errlen);
	if (!r)
		r = attach_programs(c, cgfd, err, errlen);
	if (!r && (r = deep_open(c)))
		r = fail_attach(err, errlen, r, "attaching the deep tier",
				c->skel->progs.tt_tcp_probe);
	if (!r && o->cuda && (features & COLL_REQUESTS))
		r = collector_attach_cuda(c, o, err, errlen, usage);
	if (!r && o->tls_uprobes && (features & COLL_REQUESTS))
		r = collector_attach_tls(c, o, err, errlen, usage);
	if (r)
		goto error;
	if (cgfd >= 0)
		close(cgfd);
	note_missing(c);
	if (no_tx_tstamp)
		tt_warn("no TX timestamps from sockops here (6.15+, cgroup v2): outside the deep "
			"tier's windows a server's request ends when its last send returns, so "
			"its egress queueing shows in the windows only");
	softnet_baseline(c);
	follow_costs(c);
	budget_open(c, o->budget_pct > 0 ? o->budget_pct : 0);
	c->start_realtime = realtime_ns();
	*out = c;
	return 0;
error:
	if (cgfd >= 0)
		close(cgfd);
	collector__close(c);
	return r;
}

int collector__read_check(void *ctx)
{
	const struct collector *c = ctx;
	__u32 zero = 0;

	if (!bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.counters), &zero, c->stage_buf))
		return 0;
	return -errno;
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

/* Before 5.13 the sweep program cannot walk the map itself: the keys are read first (the
 * sweep deletes some), then go in TT_SWEEP_KEYS a run, as its arguments. */
static void sweep_flows_by_key(struct collector *c)
{
	int fd = bpf_map__fd(c->skel->maps.flows), n = 0;
	__u64 *keys = c->sweep_keys, *prev = NULL;

	while (n < SWEEP_KEYS_MAX && !bpf_map_get_next_key(fd, prev, &keys[n])) {
		prev = &keys[n];
		n++;
	}
	for (int i = 0; i < n; i += TT_SWEEP_KEYS) {
		__u64 batch[TT_SWEEP_KEYS] = { 0 };
		LIBBPF_OPTS(bpf_test_run_opts, run, .ctx_in = batch, .ctx_size_in = sizeof(batch));

		memcpy(batch, keys + i,
		       sizeof(__u64) * (size_t)(n - i < TT_SWEEP_KEYS ? n - i : TT_SWEEP_KEYS));
		if (bpf_prog_test_run_opts(bpf_program__fd(c->sweep), &run) && log_verbose())
			fprintf(stderr, "flow sweep: %s\n", strerror(errno));
	}
}

/* Once a second, the flows of sockets that closed without a close event reaching the
 * programs are deleted (bpf/flow.bpf.h, tt_flow_sweep; counted as closes_unseen). */
static void sweep_flows(struct collector *c)
{
	LIBBPF_OPTS(bpf_test_run_opts, run);
	__u64 now = mono_ns();

	if (now - c->flows_swept_ns < 1000000000ULL)
		return;
	c->flows_swept_ns = now;
	if (c->sweep == c->skel->progs.tt_flow_sweep) {
		if (bpf_prog_test_run_opts(bpf_program__fd(c->sweep), &run) && log_verbose())
			fprintf(stderr, "flow sweep: %s\n", strerror(errno));
		return;
	}
	sweep_flows_by_key(c);
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
	budget_step(c);
	deep_step(c);
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

void collector__close(struct collector *c)
{
	if (!c)
		return;
	req_rings_close(c);
	self_cost__close(&c->cost);
	budget_close(c);
	deep_close(c);
	for (int i = 0; i < c->nlinks; i++)
		bpf_link__destroy(c->links[i]);
	for (int i = 0; i < c->ntls_links; i++)
		uprobe_attacher__detach(&c->up, c->tls_links[i]);
	uprobe_attacher__free(&c->up);
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
	free(c->softnet_prev);
	free(c->sweep_keys);
	free(c);
}
