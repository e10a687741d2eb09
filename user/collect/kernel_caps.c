// SPDX-License-Identifier: GPL-2.0
/* Probes the running kernel by loading, attaching and firing one minimal program of each
 * hook kind (bpf/probe.bpf.c): availability is observed, never guessed from the version. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "collect/kernel_caps.h"
#include "collect/cgroup.h"
#include "core/stages.h"
#include "probe.skel.h"
#include "lib/log.h"
#include "lib/util.h"

#define TRACEFS_MAGIC 0x74726163

static const char *const kind_names[PK__MAX] = {
	[PK_TP_BTF] = "tp_btf",
	[PK_RAW_TP] = "raw_tp",
	[PK_TRACEPOINT] = "tracepoint",
	[PK_KPROBE] = "kprobe",
	[PK_FENTRY] = "fentry",
	[PK_UPROBE] = "uprobe",
	[PK_SOCKOPS_TSTAMP] = "sockops_tx_timestamping",
	[PK_TC] = "tc",
	[PK_XDP] = "xdp",
};

/* Tracepoints the programs use beyond those the stage catalogue names (tp_btf needs
 * btf_trace_<event> in vmlinux BTF), and what each feeds. */
static const struct {
	const char *name;
	const char *feeds;
} extra_tps[] = {
	{ "tcp:tcp_retransmit_synack", "counters.retransmits_synack" },
	{ "sock:inet_sock_set_state", "flow state (every TCP stage)" },
	{ "tcp:tcp_destroy_sock", "flow state (every TCP stage)" },
	{ "skb:kfree_skb", "counters.drops, qdisc_drops" },
	{ "sched:sched_process_exit", "thread state (sched.*)" },
	{ "net:napi_gro_frags_entry", "rx.backlog (drivers using napi_gro_frags)" },
	{ "napi:dql_stall_detected", "counters.bql_stalls (6.10+)" },
};

const char *kernel_caps_tp_feeds(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(extra_tps); i++)
		if (!strcmp(extra_tps[i].name, name))
			return extra_tps[i].feeds;
	return NULL;
}

static bool listed(const char **names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

/* The tracepoints the programs attach to and the stages name, each once. */
static int needed_tps(const char **out, int max)
{
	const struct feed_row *rows = feed_rows();
	int n = 0;

	for (int i = 0; i < FEED_ROWS && n < max; i++)
		if (rows[i].kind == FEED_TP_BTF && !listed(out, n, rows[i].target))
			out[n++] = rows[i].target;
	for (int s = 0; s < STAGE__MAX; s++) {
		const struct stage_info *si = stage_info(s);

		for (int t = 0; t < 4 && si->tps[t] && n < max; t++)
			if (strchr(si->tps[t], ':') && !listed(out, n, si->tps[t]))
				out[n++] = si->tps[t];
	}
	return n;
}

/* The kernel functions the fentry, fexit and kprobe programs attach to, each once. */
static int needed_fns(const char **out, int max)
{
	const struct feed_row *rows = feed_rows();
	int n = 0;

	for (int i = 0; i < FEED_ROWS && n < max; i++) {
		enum feed_kind k = rows[i].kind;

		if ((k == FEED_FENTRY || k == FEED_FEXIT || k == FEED_KPROBE ||
		     k == FEED_KRETPROBE) &&
		    !listed(out, n, rows[i].target))
			out[n++] = rows[i].target;
	}
	return n;
}

/* Parameters of a FUNC_PROTO type id (following a pointer or typedef first), -1 if it is
 * none. */
static int proto_params(const struct btf *btf, __s32 id)
{
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;

	while (t && (btf_is_ptr(t) || btf_is_typedef(t)))
		t = btf__type_by_id(btf, t->type);
	return t && btf_is_func_proto(t) ? btf_vlen(t) : -1;
}

/* A tracepoint's arguments: its btf_trace_<event> typedef is a pointer to a function whose
 * first parameter is the probe's data pointer. */
static int tp_nargs(const struct btf *btf, const char *event)
{
	char name[128];
	int n;

	snprintf(name, sizeof(name), "btf_trace_%s", event);
	n = proto_params(btf, btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF));
	return n > 0 ? n - 1 : -1;
}

static void find_fn(const struct btf *btf, struct fn_need *f)
{
	__s32 id = btf ? btf__find_by_name_kind(btf, f->name, BTF_KIND_FUNC) : -1;

	f->btf = id > 0;
	f->nargs = f->btf ? proto_params(btf, btf__type_by_id(btf, id)->type) : -1;
}

const char *probe_kind_name(enum probe_kind k)
{
	return (unsigned)k < PK__MAX ? kind_names[k] : "?";
}

bool kernel_caps_has_tp(const struct kernel_caps *c, const char *name)
{
	for (int i = 0; i < c->ntps; i++)
		if (!strcmp(c->tps[i].name, name))
			return c->tps[i].btf;
	return false;
}

/* A function for the uprobe probe to hit: noinline and used, so it exists in the binary. */
__attribute__((noinline, used)) int tt_probe_uprobe_target(int x)
{
	asm volatile("" ::: "memory");
	return x + 1;
}

/* File offset of a function of this executable, from /proc/self/maps: works even when
 * the binary is stripped. */
static long self_func_offset(void *fn, char *path, size_t pathlen)
{
	unsigned long addr = (unsigned long)fn, lo, hi, off;
	char line[512], perm[8], file[256];
	FILE *f = fopen("/proc/self/maps", "r");
	long res = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		file[0] = 0;
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %255s", &lo, &hi, perm, &off, file) < 4)
			continue;
		if (addr >= lo && addr < hi && perm[2] == 'x') {
			res = (long)(addr - lo + off);
			snprintf(path, pathlen, "%s", file);
			break;
		}
	}
	fclose(f);
	return res;
}

static void set_only(struct probe_bpf *skel, struct bpf_program *keep)
{
	struct bpf_program *p;

	bpf_object__for_each_program (p, skel->obj)
		bpf_program__set_autoload(p, p == keep);
}

static void result_err(struct hook_result *r, int err, const char *what)
{
	r->available = false;
	r->err = err < 0 ? -err : err;
	snprintf(r->detail, sizeof(r->detail), "%s: %s", what, strerror(r->err));
}

/* A loopback TCP exchange on a port the sockops probe filters on. */
static int loopback_exchange(int lfd)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	char buf[256] = { 0 };
	int c, s, err = 0;

	if (getsockname(lfd, (struct sockaddr *)&a, &alen))
		return -errno;
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0)
		return -errno;
	if (connect(c, (struct sockaddr *)&a, sizeof(a))) {
		err = -errno;
		close(c);
		return err;
	}
	s = accept(lfd, NULL, NULL);
	if (s < 0) {
		err = -errno;
		close(c);
		return err;
	}
	for (int i = 0; i < 3 && !err; i++) {
		if (send(c, buf, sizeof(buf), 0) != sizeof(buf) ||
		    recv(s, buf, sizeof(buf), MSG_WAITALL) != sizeof(buf))
			err = -EIO;
		usleep(2000);
	}
	usleep(20000); /* let the ACKs arrive */
	close(s);
	close(c);
	return err;
}

static struct bpf_program *probe_prog(struct probe_bpf *skel, enum probe_kind kind)
{
	switch (kind) {
	case PK_TP_BTF:
		return skel->progs.probe_tp_btf;
	case PK_RAW_TP:
		return skel->progs.probe_raw_tp;
	case PK_TRACEPOINT:
		return skel->progs.probe_tracepoint;
	case PK_KPROBE:
		return skel->progs.probe_kprobe;
	case PK_FENTRY:
		return skel->progs.probe_fentry;
	case PK_UPROBE:
		return skel->progs.probe_uprobe;
	case PK_SOCKOPS_TSTAMP:
		return skel->progs.probe_sockops;
	case PK_TC:
		return skel->progs.probe_tc;
	case PK_XDP:
		return skel->progs.probe_xdp;
	default:
		return NULL;
	}
}

/* A loopback listener; its fd, or -1 with r set. With skel (before load), the sockops
 * probe watches its port. */
static int loopback_listener(struct probe_bpf *skel, struct hook_result *r)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 4) ||
	    getsockname(lfd, (struct sockaddr *)&a, &alen)) {
		result_err(r, errno, "loopback listener");
		if (lfd >= 0)
			close(lfd);
		return -1;
	}
	if (skel)
		skel->rodata->targ_port = ntohs(a.sin_port);
	return lfd;
}

/* The steps below return true once r holds the verdict, false to judge by the hit count. */

/* tc and XDP: one synthetic IPv4 frame through BPF_PROG_TEST_RUN. */
static bool run_on_packet(struct bpf_program *prog, struct hook_result *r)
{
	unsigned char pkt[64] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, topts, .data_in = pkt, .data_size_in = sizeof(pkt),
		    .repeat = 1);

	pkt[12] = 0x08; /* ethertype IPv4 */
	if (bpf_prog_test_run_opts(bpf_program__fd(prog), &topts)) {
		result_err(r, errno, "test run");
		return true;
	}
	return false;
}

/* A uprobe on a function of this binary, which is then called. */
static bool fire_uprobe(struct bpf_program *prog, struct hook_result *r, struct bpf_link **link)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uopts);
	char path[256];
	long off = self_func_offset((void *)tt_probe_uprobe_target, path, sizeof(path));

	if (off < 0) {
		result_err(r, (int)off, "locate target");
		return true;
	}
	*link = bpf_program__attach_uprobe_opts(prog, getpid(), path, (size_t)off, &uopts);
	if (!*link) {
		result_err(r, errno, "attach");
		return true;
	}
	for (volatile int i = 0; i < 3; i = tt_probe_uprobe_target(i))
		;
	return false;
}

/* sockops on this process's cgroup, a loopback exchange, and which timestamping callbacks
 * fired (c->tstamp_cb). Always settles r. */
static void fire_sockops(struct kernel_caps *c, struct probe_bpf *skel, struct bpf_program *prog,
			 int lfd, struct bpf_link **link, int *cgfd)
{
	struct hook_result *r = &c->kinds[PK_SOCKOPS_TSTAMP];
	int err;

	*cgfd = cgroup_open_self();
	if (*cgfd < 0) {
		result_err(r, *cgfd, "cgroup v2 of this process");
		return;
	}
	*link = bpf_program__attach_cgroup(prog, *cgfd);
	if (!*link) {
		result_err(r, errno, "attach to cgroup");
		return;
	}
	err = loopback_exchange(lfd);
	if (err) {
		result_err(r, err, "loopback exchange");
		return;
	}
	for (int i = 0; i < PT__MAX; i++)
		c->tstamp_cb[i] = skel->bss->tstamp_hits[i] > 0;
	if (!c->tstamp_cb[PT_SENDMSG]) {
		r->available = false;
		r->err = EOPNOTSUPP;
		snprintf(r->detail, sizeof(r->detail),
			 "loaded and attached, but TSTAMP_SENDMSG_CB never fired");
		return;
	}
	r->available = true;
	snprintf(r->detail, sizeof(r->detail), "fired: SENDMSG%s%s%s%s",
		 c->tstamp_cb[PT_SCHED] ? " SCHED" : "", c->tstamp_cb[PT_SND_SW] ? " SND_SW" : "",
		 c->tstamp_cb[PT_SND_HW] ? " SND_HW" : "", c->tstamp_cb[PT_ACK] ? " ACK" : "");
}

/* Tracing programs: attached where libbpf's section says, then given time to fire. The
 * kprobe and fentry probes sit on tcp_sendmsg: a loopback exchange makes them fire. */
static bool fire_attached(struct probe_bpf *skel, struct bpf_program *prog, enum probe_kind kind,
			  struct hook_result *r, struct bpf_link **link)
{
	*link = bpf_program__attach(prog);
	if (!*link) {
		result_err(r, errno, "attach");
		return true;
	}
	if (kind == PK_KPROBE || kind == PK_FENTRY) {
		int lfd = loopback_listener(NULL, r), err;

		if (lfd < 0)
			return true;
		err = loopback_exchange(lfd);
		close(lfd);
		if (err) {
			result_err(r, err, "loopback exchange");
			return true;
		}
	}
	for (int i = 0; i < 50 && !skel->bss->hits[kind]; i++)
		usleep(2000); /* context switches happen while we sleep */
	return false;
}

/* Fires one loaded probe program and settles c->kinds[kind]. lfd: the loopback listener
 * the sockops program watches (PK_SOCKOPS_TSTAMP only). */
static void probe_fire(struct kernel_caps *c, struct probe_bpf *skel, enum probe_kind kind, int lfd)
{
	struct hook_result *r = &c->kinds[kind];
	struct bpf_program *prog = probe_prog(skel, kind);
	struct bpf_link *link = NULL;
	int cgfd = -1;
	bool settled;

	switch (kind) {
	case PK_TC:
	case PK_XDP:
		settled = run_on_packet(prog, r);
		break;
	case PK_UPROBE:
		settled = fire_uprobe(prog, r, &link);
		break;
	case PK_SOCKOPS_TSTAMP:
		fire_sockops(c, skel, prog, lfd, &link, &cgfd);
		settled = true;
		break;
	default:
		settled = fire_attached(skel, prog, kind, r, &link);
	}
	if (!settled && skel->bss->hits[kind]) {
		r->available = true;
		snprintf(r->detail, sizeof(r->detail), "%s",
			 kind == PK_TC || kind == PK_XDP ? "loaded and ran (BPF_PROG_TEST_RUN)"
							 : "loaded, attached and fired");
	} else if (!settled) {
		r->available = false;
		r->err = ENODATA;
		snprintf(r->detail, sizeof(r->detail), "loaded and attached but never fired");
	}
	bpf_link__destroy(link);
	if (cgfd >= 0)
		close(cgfd);
}

/* One hook kind in an object of its own: what a kernel that refuses some kind needs, so
 * that one refusal does not hide the others. */
static void probe_one(struct kernel_caps *c, enum probe_kind kind)
{
	struct hook_result *r = &c->kinds[kind];
	struct bpf_program *prog;
	struct probe_bpf *skel;
	int err, lfd = -1;

	skel = probe_bpf__open();
	if (!skel) {
		result_err(r, errno, "open");
		return;
	}
	prog = probe_prog(skel, kind);
	if (!prog)
		goto out;
	set_only(skel, prog);
	if (kind == PK_SOCKOPS_TSTAMP) {
		lfd = loopback_listener(skel, r);
		if (lfd < 0)
			goto out;
	}
	err = probe_bpf__load(skel);
	if (err) {
		result_err(r, err, "load");
		goto out;
	}
	probe_fire(c, skel, kind, lfd);
out:
	if (lfd >= 0)
		close(lfd);
	probe_bpf__destroy(skel);
}

/* The probe program of a feature (probe.bpf.c). */
static struct bpf_program *feature_prog(struct probe_bpf *skel, enum probe_feature f)
{
	return f == PFEAT_SK_COOKIE ? skel->progs.feat_sk_cookie : skel->progs.feat_for_each;
}

/* Every kind and feature in one object: libbpf parses vmlinux BTF once per object and
 * that was most of the time to start, once a kind. A program the kernel refuses is named
 * by libbpf (log_catch_failed_prog): its kind or feature is settled as refused and the
 * others are loaded again without it, one object a refusal. Returns false when a load
 * fails without naming a probe program: then each kind and feature is probed alone. */
static bool probe_all_at_once(struct kernel_caps *c)
{
	bool refused[PK__MAX + PFEAT__MAX] = { false };
	char culprit[128];

	for (int round = 0; round <= PK__MAX + PFEAT__MAX; round++) {
		struct probe_bpf *skel = probe_bpf__open();
		struct hook_result unused;
		int lfd, err = -1, hit = -1;

		if (!skel)
			return false;
		for (int k = 0; k < PK__MAX; k++)
			bpf_program__set_autoload(probe_prog(skel, k), !refused[k]);
		for (int f = 0; f < PFEAT__MAX; f++)
			bpf_program__set_autoload(feature_prog(skel, f), !refused[PK__MAX + f]);
		lfd = loopback_listener(skel, &unused);
		if (lfd >= 0) {
			log_catch_failed_prog(culprit, sizeof(culprit));
			err = probe_bpf__load(skel);
			log_catch_failed_prog(NULL, 0);
		}
		if (!err) {
			for (int k = 0; k < PK__MAX; k++)
				if (!refused[k])
					probe_fire(c, skel, k, lfd);
			for (int f = 0; f < PFEAT__MAX; f++)
				c->feat[f] = !refused[PK__MAX + f];
		}
		for (int k = 0; k < PK__MAX && err && lfd >= 0; k++)
			if (!strcmp(culprit, bpf_program__name(probe_prog(skel, k))))
				hit = k;
		for (int f = 0; f < PFEAT__MAX && err && lfd >= 0; f++)
			if (!strcmp(culprit, bpf_program__name(feature_prog(skel, f))))
				hit = PK__MAX + f;
		if (lfd >= 0)
			close(lfd);
		probe_bpf__destroy(skel);
		if (!err)
			return true;
		if (hit < 0 || refused[hit])
			return false;
		refused[hit] = true;
		if (hit < PK__MAX)
			result_err(&c->kinds[hit], err, "load");
	}
	return false;
}

/* Whether the verifier accepts a program calling the feature's helper (loaded, never
 * attached). */
static bool probe_feature(enum probe_feature f)
{
	struct probe_bpf *skel = probe_bpf__open();
	bool ok;

	if (!skel)
		return false;
	set_only(skel, feature_prog(skel, f));
	ok = !probe_bpf__load(skel);
	probe_bpf__destroy(skel);
	return ok;
}

static bool tracefs_mounted(const char *path)
{
	struct statfs s;

	return !statfs(path, &s) && (unsigned long)s.f_type == TRACEFS_MAGIC;
}

int kernel_caps_probe(struct kernel_caps *c)
{
	const char *tps[CAPS_MAX_TPS], *fns[CAPS_MAX_FNS];
	struct utsname u;
	struct btf *btf;
	int ntps;

	memset(c, 0, sizeof(*c));
	if (!uname(&u))
		snprintf(c->release, sizeof(c->release), "%s", u.release);
	c->btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
	c->tracefs = tracefs_mounted("/sys/kernel/tracing");
	if (!c->tracefs && !mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL)) {
		c->tracefs = tracefs_mounted("/sys/kernel/tracing");
		c->tracefs_mounted_by_us = c->tracefs;
	}
	btf = c->btf ? btf__load_vmlinux_btf() : NULL;
	ntps = needed_tps(tps, CAPS_MAX_TPS);
	for (int i = 0; i < ntps; i++) {
		struct tp_need *t = &c->tps[c->ntps++];
		char path[256];
		const char *ev = strchr(tps[i], ':') + 1;

		t->name = tps[i];
		t->nargs = btf ? tp_nargs(btf, ev) : -1;
		t->btf = t->nargs >= 0;
		snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%.*s/%s",
			 (int)(ev - tps[i] - 1), tps[i], ev);
		t->tracefs = c->tracefs && access(path, F_OK) == 0;
	}
	c->nfns = needed_fns(fns, CAPS_MAX_FNS);
	for (int i = 0; i < c->nfns; i++) {
		c->fns[i].name = fns[i];
		find_fn(btf, &c->fns[i]);
	}
	c->kfunc_rdonly_cast =
		btf && btf__find_by_name_kind(btf, "bpf_rdonly_cast", BTF_KIND_FUNC) > 0;
	btf__free(btf);
	if (!probe_all_at_once(c)) {
		for (int k = 0; k < PK__MAX; k++)
			probe_one(c, k);
		for (int f = 0; f < PFEAT__MAX; f++)
			c->feat[f] = probe_feature(f);
	}
	/* TAILTRACE_AVOID_FEEDS picks the next feed where one exists (the tests use it to
	 * run the kprobe feeds where fentry works); checked by the caller */
	if (feed_kinds_parse(getenv("TAILTRACE_AVOID_FEEDS"), &c->avoid_kinds))
		return -EINVAL;
	c->compat = !c->kfunc_rdonly_cast || (c->avoid_kinds & FEED_AVOID_KFUNCS);
	feeds_choose(c);
	return 0;
}
