/* SPDX-License-Identifier: GPL-2.0 */
/* Maps, load-time settings and the small helpers every tailtrace BPF program shares:
 * histogram update, counters, per-socket flow state and filters. */
#ifndef TT_MAPS_BPF_H
#define TT_MAPS_BPF_H

#include "kernel_defs.bpf.h"

/* Set through the skeleton's rodata before load. */
const volatile __u16 targ_ports[TT_MAX_PORTS] = {};
const volatile __u32 targ_nports = 0;
const volatile __u32 targ_tgid = 0;
const volatile char targ_comm[TT_COMM_LEN] = {};
const volatile bool targ_filter_comm = false;
const volatile bool targ_filter_cgroup = false;
const volatile __u32 targ_devs[TT_MAX_DEVS] = {};      /* ifindexes from --dev */
const volatile __u32 targ_dev_netns[TT_MAX_DEVS] = {}; /* ... and their network namespace inodes */
const volatile __u32 targ_ndevs = 0;
const volatile __u8 targ_by = GROUP_NONE;
const volatile __u8 targ_role = ROLE_AUTO;     /* --role: the side whose requests are kept */
const volatile bool targ_requests = false;     /* stream per-request events */
const volatile bool targ_sched_hist = false;   /* per-request sched.* histograms (hist) */
const volatile bool targ_nic = false;          /* driver/softirq stages (bpf/nic.bpf.h) */
const volatile __u32 targ_nrings = 1;          /* entries of req_rings */
const volatile __u64 targ_ring_wake = 1 << 20; /* unread bytes that wake userspace early */
/* What this kernel offers, probed by userspace (user/collect/kernel_caps.c) */
const volatile bool targ_sk_cookie_helper = true; /* bpf_get_socket_cookie(sk) in tracing */
/* no qdisc:qdisc_enqueue (before 5.13): a packet's qdisc wait starts at net:net_dev_queue */
const volatile bool targ_qdisc_at_dev_queue = false;
/* tcp_recvmsg's arguments (5 from 5.19, 6 before), for the kprobe that reads its flags */
const volatile __u32 targ_recvmsg_nargs = 5;
/* --tls-uprobes: the TLS library's calls carry the plaintext framing (bpf/tls.bpf.h) */
const volatile bool targ_tls = false;
/* the sockops program asks traced connections for TX timestamps (record's duty cycle) */
const volatile bool targ_tx_tstamp = false;

/* Per-CPU histograms; max_entries is sized by userspace from the CPU count. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct hist_key);
	__type(value, struct hist);
} hists SEC(".maps");

/* Ungrouped samples of stages without a place (`--by` unset: tcp.rtt, rx.*, tx.sendq,
 * tx.ack, req.*): per-CPU and cumulative, indexed by stage; userspace takes the
 * difference between snapshots. The hot path then costs an inlined array load instead of
 * hashing a 72-byte key. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAGE__MAX);
	__type(key, __u32);
	__type(value, struct stage_hist);
} stage_hists SEC(".maps");

/* Bumped by userspace at each snapshot: stage_hists' max_ns restarts in a new epoch. */
volatile __u64 hist_epoch;

/* --budget samples by flow: a socket is traced when the hash of its address is at most
 * this (~0: every socket). Userspace lowers and raises it (user/collect/budget.c). */
volatile __u32 sample_threshold = ~0u;
/* ... and draws the sample anew now and then with a new salt (user/collect/budget.h):
 * over a run every flow is in it for its share of the time, so a few unlike flows (or a
 * few flows at all) do not decide what the sample shows. */
volatile __u64 sample_salt;

/* The deep tier: the per-packet and scheduler programs (PF_DEEP in program_catalogue.h),
 * attached while deep_gen is odd. Userspace (user/collect/collector_deep.c) attaches them,
 * then sets deep_since_ns and bumps deep_gen; it bumps deep_gen before it detaches them.
 * A flow, a thread or a request from another generation holds state the detached
 * programs never finished: it starts over (flow_deep_sync). Without a duty cycle deep_gen
 * stays 1: always deep. */
volatile __u32 deep_gen = 1;
volatile __u64 deep_since_ns;

static __always_inline bool deep_on(void)
{
	return deep_gen & 1;
}

/* Fibonacci hashing of the socket's address and the salt: its top bits are uniform
 * whatever the slab layout, so a threshold keeps an unbiased share of sockets. Same hash
 * in user/collect/budget.h. */
static __always_inline bool flow_in_sample(__u64 addr)
{
	return (__u32)(((addr ^ sample_salt) * 0x9E3779B97F4A7C15ULL) >> 32) <= sample_threshold;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TT_DROP_REASONS);
	__type(key, __u32);
	__type(value, __u64);
} drop_reasons SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct dev_key);
	__type(value, struct dev_name);
} devnames SEC(".maps");

/* --cgroup: index 0 holds the cgroup fd; bpf_current_task_under_cgroup covers
 * descendants. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_filter SEC(".maps");

/* Request events: one ring buffer per CPU (CPU id modulo targ_nrings). A ring that two
 * CPUs write makes every reservation take its lock and producer position from the other
 * CPU's cache, which cost ~100 ns a request boundary here; a ring per CPU keeps them
 * local. Userspace sizes and creates the rings before attaching. */
struct req_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct req_ring);
} req_rings SEC(".maps");

/* A zero histogram to create new keys from (too large for the BPF stack). */
static const struct hist zero_hist;

static __always_inline void cnt_add(__u32 idx, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &idx);

	if (c)
		*c += n;
}

static __always_inline void hist_add_sample(struct hist *h, __u64 v)
{
	/* widened before the bound check: a check on a zero-extended copy that the index
	 * does not use is lost on verifiers before 6.3 ("unbounded memory access") */
	__u64 slot = hist_slot(v);

	barrier_var(slot);
	if (slot < HIST_SLOTS)
		h->slots[slot]++;
	h->count++;
	h->sum_ns += v;
}

static __always_inline void hist_update(const struct hist_key *key, __u64 v)
{
	struct hist *h = bpf_map_lookup_elem(&hists, key);

	if (!h) {
		long err = bpf_map_update_elem(&hists, key, &zero_hist, BPF_NOEXIST);

		if (!err)
			cnt_add(CNT_HIST_INSERTS, 1);
		else if (err != -17 /* EEXIST: another CPU created it */)
			cnt_add(CNT_HIST_UPDATE_FAIL, 1);
		h = bpf_map_lookup_elem(&hists, key);
		if (!h)
			return;
	}
	hist_add_sample(h, v);
	if (v > h->max_ns)
		h->max_ns = v;
}

/* A sample into a cumulative per-CPU slot; its max_ns restarts with each epoch. */
static __always_inline void stage_hist_add(struct stage_hist *sh, __u64 v)
{
	__u64 epoch = hist_epoch;

	hist_add_sample(&sh->h, v);
	if (sh->max_epoch != epoch) {
		sh->max_epoch = epoch;
		sh->h.max_ns = v;
	} else if (v > sh->h.max_ns) {
		sh->h.max_ns = v;
	}
}

/* A sample without a group or a place: one array slot per stage, no key to hash. A global
 * function, so the verifier checks it once and not at each of its call sites (inlined in
 * the send ring's loops they were most of tt_tcp_probe's 950k instructions on 5.10). */
__noinline int stage_hist_update(__u32 stage, __u64 v)
{
	struct stage_hist *sh = bpf_map_lookup_elem(&stage_hists, &stage);

	if (sh)
		stage_hist_add(sh, v);
	return 0;
}

static __always_inline bool port_selected(__u16 lport, __u16 rport)
{
	if (!targ_nports)
		return true;
	for (int i = 0; i < TT_MAX_PORTS; i++) {
		if (i >= targ_nports)
			break;
		if (targ_ports[i] == lport || targ_ports[i] == rport)
			return true;
	}
	return false;
}

/* ifindexes repeat across network namespaces: a device is (netns inode, ifindex). */
static __always_inline bool dev_selected(struct net_device *dev)
{
	__u32 ifindex, netns;

	if (!targ_ndevs)
		return true;
	ifindex = dev->ifindex;
	netns = dev->nd_net.net->ns.inum;
	for (int i = 0; i < 8; i++) {
		if (i >= targ_ndevs)
			break;
		if (targ_devs[i] == ifindex && targ_dev_netns[i] == netns)
			return true;
	}
	return false;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ptr_scratch SEC(".maps");

/* The verifier allows no arithmetic on a kernel pointer but adding and subtracting; the
 * same pointer stored in a map value and loaded back is a plain number to hash. */
static __always_inline __u64 ptr_value(const void *p)
{
	__u32 zero = 0;
	__u64 *slot = bpf_map_lookup_elem(&ptr_scratch, &zero);

	if (!slot)
		return 0;
	*(volatile __u64 *)slot = (__u64)p;
	return *(volatile __u64 *)slot;
}

/* Devices recently seen by this CPU: the place of every packet is looked up once per
 * device, not per packet (the name lookup is a hash and the netns a pointer chase). */
#define DEV_CACHE_SLOTS 16

struct dev_cache_entry {
	__u64 dev; /* struct net_device address */
	struct dev_key dk;
	/* place_hists slots of this device's places, + 1 (0: not assigned yet) */
	__u32 nic_slot;
	__u32 qdisc_handle;
	__u32 qdisc_slot;
	__u32 pad;
};

struct dev_cache {
	struct dev_cache_entry e[DEV_CACHE_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dev_cache);
} dev_cache SEC(".maps");

/* The device's place (netns, ifindex) in *dk, and its cache entry (NULL if none). */
static __always_inline struct dev_cache_entry *remember_dev(struct net_device *dev,
							    struct dev_key *dk)
{
	struct dev_name name = {};
	struct dev_cache_entry *ce = NULL;
	struct dev_cache *dc;
	__u32 zero = 0;
	__u64 dv;

	dk->ifindex = dev->ifindex; /* a BTF pointer in every caller: a plain load */
	dc = bpf_map_lookup_elem(&dev_cache, &zero);
	dv = ptr_value(dev);
	if (dc) {
		/* net_devices are large allocations: bits above 10 tell them apart */
		ce = &dc->e[(dv >> 10) & (DEV_CACHE_SLOTS - 1)];
		/* the ifindex check catches a freed device's address reused by a new one */
		if (ce->dev == dv && ce->dk.ifindex == dk->ifindex) {
			dk->netns = ce->dk.netns;
			return ce;
		}
	}
	dk->netns = dev->nd_net.net->ns.inum;
	if (ce) {
		ce->dev = dv;
		ce->dk = *dk;
		ce->nic_slot = 0;
		ce->qdisc_handle = 0;
		ce->qdisc_slot = 0;
	}
	if (!bpf_map_lookup_elem(&devnames, dk)) {
		bpf_probe_read_kernel_str(name.name, sizeof(name.name), dev->name);
		bpf_map_update_elem(&devnames, dk, &name, BPF_NOEXIST);
	}
	return ce;
}

/* Ungrouped samples of stages with a place (tx.qdisc, tx.nic): one per-CPU array slot per
 * (stage, device, qdisc), so a packet costs no hash of the 72-byte key. Userspace hands the
 * slots out: a place seen for the first time is entered in place_slots as pending, its
 * samples go through `hists` until userspace gives it a slot (within ~200 ms; never, when
 * the slots are used up), and each CPU then keeps the slot with the device in dev_cache. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 64); /* sized by userspace from the CPU count */
	__type(key, __u32);
	__type(value, struct stage_hist);
} place_hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct hist_key);
	__type(value, __u32); /* slot in place_hists, or PLACE_PENDING */
} place_slots SEC(".maps");

/* A sample in `hists` under the place's key (a global function, as below). */
__noinline int place_key_sample(__u32 stage, __u32 ifindex, __u32 netns, __u32 handle, __u64 v)
{
	struct hist_key k = { .stage = (__u16)stage, .by = GROUP_NONE };

	k.ifindex = ifindex;
	k.netns = netns;
	k.qdisc_handle = handle;
	hist_update(&k, v);
	return 0;
}

/* A place's slot + 1 once userspace gave it one; until then (0) the sample goes to `hists`
 * under the place's key. A global function: checked once by the verifier, not in each
 * iteration of tt_qdisc_dequeue's loop (runs only until this CPU caches the slot). */
__noinline __u32 place_slot_or_sample(__u32 stage, __u32 ifindex, __u32 netns, __u32 handle,
				      __u64 v)
{
	struct hist_key k = { .stage = (__u16)stage, .by = GROUP_NONE };
	__u32 *found;

	k.ifindex = ifindex;
	k.netns = netns;
	k.qdisc_handle = handle;
	found = bpf_map_lookup_elem(&place_slots, &k);
	if (!found) {
		__u32 pending = PLACE_PENDING;

		bpf_map_update_elem(&place_slots, &k, &pending, BPF_NOEXIST);
	}
	if (!found || *found == PLACE_PENDING) {
		place_key_sample(stage, ifindex, netns, handle, v);
		return 0;
	}
	return *found + 1;
}

static __always_inline void place_sample(struct dev_cache_entry *ce, const struct dev_key *dk,
					 __u16 stage, __u32 handle, __u64 v)
{
	struct stage_hist *sh;
	__u32 slot = 0;

	if (ce) {
		if (stage == STAGE_TX_NIC)
			slot = ce->nic_slot;
		else if (ce->qdisc_handle == handle)
			slot = ce->qdisc_slot;
	}
	if (!slot) {
		slot = place_slot_or_sample(stage, dk->ifindex, dk->netns, handle, v);
		if (!slot)
			return;
		if (ce && stage == STAGE_TX_NIC) {
			ce->nic_slot = slot;
		} else if (ce) {
			ce->qdisc_handle = handle;
			ce->qdisc_slot = slot;
		}
	}
	slot--;
	sh = bpf_map_lookup_elem(&place_hists, &slot);
	if (sh)
		stage_hist_add(sh, v);
	else
		place_key_sample(stage, dk->ifindex, dk->netns, handle, v);
}

#endif
