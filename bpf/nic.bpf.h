/* SPDX-License-Identifier: GPL-2.0 */
/* The driver and softirq part of the path: rx.backlog (a packet entering the stack ->
 * leaving the per-CPU backlog or GRO), rx.softirq (NET_RX raised -> running on that CPU),
 * tx.ring (the driver took a packet -> its completion freed it), NAPI polls against their
 * budget and BQL stalls. These hooks fire per packet or per softirq: userspace loads them
 * only when a device filter, a port or process filter of a request command or --stage
 * selects them (targ_nic; docs/stages.md). Samples go to per-CPU arrays through place slots;
 * nothing per packet goes through a ring buffer. */
#ifndef TT_NIC_BPF_H
#define TT_NIC_BPF_H

#include "maps.bpf.h"
#include "packet.bpf.h"

/* A packet's start time, keyed by skb address: direct-mapped, one way. A collision
 * overwrites the older stamp (that packet then has no sample); GRO-merged segments never
 * reach the end hook and are overwritten the same way, their time carried by the skb they
 * were merged into. Not counted in unmatched_stamps: these hooks see every packet of a
 * device, most of them not for a traced flow. */
struct nic_stamp {
	__u64 skb;
	__u64 ts;
	__u32 len; /* skb->len when stamped: tells a reused address apart at the end */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, STAMP_BUCKETS);
	__type(key, __u32);
	__type(value, struct nic_stamp);
} backlog_stamps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, STAMP_BUCKETS);
	__type(key, __u32);
	__type(value, struct nic_stamp);
} txring_stamps SEC(".maps");

static __always_inline void nic_stamp_put(void *map, const void *skb_ptr, __u64 ts, __u32 len)
{
	__u64 skb = ptr_value(skb_ptr);
	__u32 i = stamp_hash(skb >> 8);
	struct nic_stamp *e = skb ? bpf_map_lookup_elem(map, &i) : NULL;

	if (!e)
		return;
	e->ts = ts;
	e->len = len;
	asm volatile("" ::: "memory"); /* the owner last, as stamp_put */
	e->skb = skb;
}

/* The stamp of skb_ptr, removed; 0 when there is none. */
static __always_inline __u64 nic_stamp_take(void *map, const void *skb_ptr, __u32 *len)
{
	__u64 skb = ptr_value(skb_ptr), ts;
	__u32 i = stamp_hash(skb >> 8);
	struct nic_stamp *e = skb ? bpf_map_lookup_elem(map, &i) : NULL;

	if (!e || e->skb != skb)
		return 0;
	ts = e->ts;
	*len = e->len;
	e->skb = 0;
	return ts > deep_since_ns ? ts : 0; /* else left by an earlier deep window */
}

/* Per CPU: when NET_RX was raised and not yet run, and the place slots of the places this
 * CPU samples (a place is looked up in place_slots once per CPU, not per packet). */
#define NIC_PLACES 16

struct nic_place {
	__u64 dev; /* struct net_device address, 0 for rx.softirq */
	__u32 ifindex;
	__u16 stage;
	__u16 queue;
	__u32 slot; /* place_hists slot + 1, 0: none yet */
	__u32 pad;
};

struct nic_cpu {
	__u64 raise_ts;
	struct nic_place p[NIC_PLACES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nic_cpu);
} nic_cpu SEC(".maps");

/* Polls per NAPI instance (struct napi_key/napi_count in tailtrace.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 256);
	__type(key, struct napi_key);
	__type(value, struct napi_count);
} napi_counts SEC(".maps");

/* The place's slot the first time this CPU samples it: pending until userspace hands one
 * out (samples meanwhile go to `hists`, keyed by the place). */
static __always_inline struct stage_hist *nic_place_slot(struct nic_place *pl,
							 const struct hist_key *k, __u64 dv)
{
	__u32 *found = bpf_map_lookup_elem(&place_slots, k), slot;

	if (!found) {
		__u32 pending = PLACE_PENDING;

		bpf_map_update_elem(&place_slots, k, &pending, BPF_NOEXIST);
		return NULL;
	}
	if (*found == PLACE_PENDING)
		return NULL;
	slot = *found;
	pl->dev = dv;
	pl->ifindex = k->ifindex;
	pl->stage = k->stage;
	pl->queue = k->queue;
	pl->slot = slot + 1;
	return bpf_map_lookup_elem(&place_hists, &slot);
}

/* One sample of a NIC stage at (device, queue, this CPU); dev NULL for a per-CPU place. */
static __always_inline void nic_sample(struct net_device *dev, __u16 stage, __u16 queue, __u64 v)
{
	struct hist_key k = { .stage = stage, .by = GROUP_NONE, .queue = queue };
	__u64 dv = dev ? ptr_value(dev) : 0;
	struct stage_hist *sh = NULL;
	struct nic_place *pl;
	struct nic_cpu *nc;
	struct dev_key dk;
	__u32 zero = 0, i;

	nc = bpf_map_lookup_elem(&nic_cpu, &zero);
	if (!nc)
		return;
	i = (__u32)((dv >> 10) ^ queue ^ ((__u32)stage << 2)) & (NIC_PLACES - 1);
	pl = &nc->p[i];
	if (pl->slot && pl->dev == dv && pl->stage == stage && pl->queue == queue &&
	    (!dev || pl->ifindex == dev->ifindex)) {
		__u32 slot = pl->slot - 1;

		sh = bpf_map_lookup_elem(&place_hists, &slot);
		if (sh) {
			stage_hist_add(sh, v);
			return;
		}
	}
	k.cpu = (__u16)(bpf_get_smp_processor_id() + 1);
	if (dev) {
		remember_dev(dev, &dk);
		k.ifindex = dk.ifindex;
		k.netns = dk.netns;
	}
	sh = nic_place_slot(pl, &k, dv);
	if (sh)
		stage_hist_add(sh, v);
	else
		hist_update(&k, v);
}

/* ---- rx.backlog ---- */

/* The entry hooks select by device only: the headers of a packet that has not been
 * through GRO may not be in place yet (napi_gro_frags), and a port filter is applied at
 * the end, where tt_netif_receive_skb reads them anyway. */
static __always_inline void rx_backlog_start(const struct sk_buff *skb)
{
	if (targ_ndevs && !dev_selected(skb->dev))
		return;
	nic_stamp_put(&backlog_stamps, skb, bpf_ktime_get_ns(), 0);
}

SEC("tp_btf/netif_rx")
int BPF_PROG(tt_netif_rx, struct sk_buff *skb)
{
	rx_backlog_start(skb);
	return 0;
}

SEC("tp_btf/napi_gro_receive_entry")
int BPF_PROG(tt_napi_gro_receive, const struct sk_buff *skb)
{
	rx_backlog_start(skb);
	return 0;
}

SEC("tp_btf/napi_gro_frags_entry")
int BPF_PROG(tt_napi_gro_frags, const struct sk_buff *skb)
{
	rx_backlog_start(skb);
	return 0;
}

/* At netif_receive_skb (called by tt_netif_receive_skb): the packet's time in the backlog
 * or GRO, 0 if it was not stamped. Sampled here unless a port filter without --dev
 * selects packets: then the caller samples it once the ports matched. The clock reading
 * goes to *now, for the caller's receive stamp: one read a packet, not two. */
static __always_inline __u64 rx_backlog_end(struct sk_buff *skb, __u64 *now_out)
{
	__u64 ts, now;
	__u32 len;

	ts = nic_stamp_take(&backlog_stamps, skb, &len);
	if (!ts)
		return 0;
	now = bpf_ktime_get_ns();
	*now_out = now;
	if (now <= ts)
		return 0;
	if (targ_ndevs || !targ_nports)
		nic_sample(skb->dev, STAGE_RX_BACKLOG, skb->queue_mapping, now - ts);
	return now - ts;
}

/* ---- rx.softirq ---- */

/* Raised again while pending keeps the first time: the wait is the oldest work's. */
SEC("tp_btf/softirq_raise")
int BPF_PROG(tt_softirq_raise, unsigned int vec)
{
	struct nic_cpu *nc;
	__u32 zero = 0;

	if (vec != NET_RX_SOFTIRQ)
		return 0;
	nc = bpf_map_lookup_elem(&nic_cpu, &zero);
	if (nc && !nc->raise_ts)
		nc->raise_ts = bpf_ktime_get_ns();
	return 0;
}

static __always_inline bool in_ksoftirqd(void)
{
	char comm[TT_COMM_LEN];

	bpf_get_current_comm(comm, sizeof(comm));
	return comm[0] == 'k' && comm[1] == 's' && comm[2] == 'o' && comm[3] == 'f' &&
	       comm[4] == 't' && comm[5] == 'i' && comm[6] == 'r' && comm[7] == 'q' &&
	       comm[8] == 'd' && comm[9] == '/';
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(tt_softirq_entry, unsigned int vec)
{
	struct nic_cpu *nc;
	__u32 zero = 0;
	__u64 ts, now;

	if (vec != NET_RX_SOFTIRQ)
		return 0;
	nc = bpf_map_lookup_elem(&nic_cpu, &zero);
	if (!nc || !nc->raise_ts)
		return 0;
	/* cleared first: an interrupt raising NET_RX from here on starts the next wait */
	ts = nc->raise_ts;
	nc->raise_ts = 0;
	now = bpf_ktime_get_ns();
	if (now > ts)
		nic_sample(NULL, STAGE_RX_SOFTIRQ,
			   in_ksoftirqd() ? SOFTIRQ_CTX_KSOFTIRQD : SOFTIRQ_CTX_IRQ, now - ts);
	return 0;
}

/* ---- NAPI budget ---- */

SEC("tp_btf/napi_poll")
int BPF_PROG(tt_napi_poll, struct napi_struct *napi, int work, int budget)
{
	struct net_device *dev = napi->dev;
	struct napi_key k = {};
	struct napi_count *c;

	if (dev) {
		if (!dev_selected(dev))
			return 0;
		k.ifindex = dev->ifindex;
		k.netns = dev->nd_net.net->ns.inum;
		k.napi_id = napi->napi_id;
	} else {
		/* the CPU's backlog (netif_rx devices, RPS): no device of its own */
		k.napi_id = bpf_get_smp_processor_id();
	}
	c = bpf_map_lookup_elem(&napi_counts, &k);
	if (!c) {
		struct napi_count zero = {};

		bpf_map_update_elem(&napi_counts, &k, &zero, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&napi_counts, &k);
		if (!c)
			return 0;
	}
	c->polls++;
	c->work += work > 0 ? work : 0;
	if (work >= budget)
		c->exhausted++;
	return 0;
}

SEC("tp_btf/dql_stall_detected")
int BPF_PROG(tt_dql_stall, unsigned short thrs, unsigned int len)
{
	cnt_add(CNT_BQL_STALLS, 1);
	return 0;
}

/* ---- tx.ring ---- */

/* From tt_net_dev_xmit: the driver accepted the packet. A virtual device that handed it
 * to another device (veth: skb->dev is the peer now) or freed it inside its xmit (the
 * consume program marked the slot) has no ring: no stamp. */
static __always_inline void tx_ring_start(struct nic_slot *slot, struct sk_buff *skb,
					  struct net_device *dev, int rc, __u64 now)
{
	if (rc || slot->freed || skb->dev != dev)
		return;
	nic_stamp_put(&txring_stamps, skb, now, skb->len);
}

/* only the skb: the location argument arrived in 6.3 */
SEC("tp_btf/consume_skb")
int BPF_PROG(tt_consume_skb, struct sk_buff *skb)
{
	struct nic_slot *slot;
	__u32 zero = 0, len;
	__u64 ts, now;

	slot = bpf_map_lookup_elem(&nic_slots, &zero);
	if (slot && slot->skb == (__u64)skb)
		slot->freed = 1; /* freed by the driver's xmit itself */
	ts = nic_stamp_take(&txring_stamps, skb, &len);
	if (!ts || len != skb->len)
		return 0;
	now = bpf_ktime_get_ns();
	if (now > ts)
		nic_sample(skb->dev, STAGE_TX_RING, skb->queue_mapping + 1, now - ts);
	return 0;
}

#endif
