/* SPDX-License-Identifier: GPL-2.0 */
/* Per-packet state: the stamp arrays that carry a packet's start time from one hook to the
 * next (qdisc, driver, receive), and the skb fields the packet hooks read. */
#ifndef TT_PACKET_BPF_H
#define TT_PACKET_BPF_H

#include "maps.bpf.h"

/* Per-packet stamps live in direct-mapped, two-way arrays instead of hash
 * maps: a stamp is written and taken millions of times a second, and an LRU hash pays a
 * jhash, a lock and a free-list pop or push each time, where an array slot costs a few
 * loads and stores. An entry is free when its owner field is 0. When both ways of a bucket
 * hold live stamps, the older one is overwritten: it never reaches a sample and shows up
 * in `unmatched_stamps` (inserts - deletes - live, counted by userspace from the mmapped
 * arrays), like an LRU eviction did. */

static __always_inline __u32 stamp_hash(__u64 v)
{
	return (__u32)((v * 0x9E3779B97F4A7C15ULL) >> (64 - STAMP_BUCKET_BITS));
}

/* Per packet (skb address): struct stamp_bucket in tailtrace.h. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, STAMP_BUCKETS);
	__type(key, __u32);
	__type(value, struct stamp_bucket);
} qdisc_stamps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, STAMP_BUCKETS);
	__type(key, __u32);
	__type(value, struct stamp_bucket);
} rx_stamps SEC(".maps");

/* net_dev_start_xmit and net_dev_xmit run back to back on one CPU: a per-CPU slot is
 * enough to time the driver call, no hash needed. */
struct nic_slot {
	__u64 skb;
	__u64 sk; /* the driver may orphan the skb (veth, lo): keep its socket */
	__u64 ts;
	__u64 freed; /* consume_skb saw it freed inside the driver's xmit (tx.ring) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nic_slot);
} nic_slots SEC(".maps");

/* skbs are slab objects at least 256 bytes apart: the low bits carry nothing */
static __always_inline struct stamp_bucket *stamp_bucket_of(void *map, __u64 skb)
{
	__u32 i = stamp_hash(skb >> 8);

	return bpf_map_lookup_elem(map, &i);
}

static __always_inline void stamp_put(void *map, const void *skb_ptr, struct pkt_stamp *st)
{
	__u64 skb = ptr_value(skb_ptr);
	struct stamp_bucket *b = skb ? stamp_bucket_of(map, skb) : NULL;
	struct pkt_stamp *e;
	bool again = false;

	if (!b)
		return;
	/* the same skb crosses several devices (veth pairs, a bridge): restamp in place,
	 * which is not a second insert */
	if (b->e[0].skb == skb) {
		e = &b->e[0];
		again = true;
	} else if (b->e[1].skb == skb) {
		e = &b->e[1];
		again = true;
	} else if (!b->e[0].skb) {
		e = &b->e[0];
	} else if (!b->e[1].skb) {
		e = &b->e[1];
	} else {
		e = b->e[0].ts <= b->e[1].ts ? &b->e[0] : &b->e[1];
	}
	e->ts = st->ts;
	e->len = st->len;
	e->seq = st->seq;
	e->ce = st->ce;
	e->backlog_ns = st->backlog_ns;
	/* the owner last (a compiler barrier; x86 keeps stores in order): a reader on another
	 * CPU that sees it sees the time too. Where stores can be reordered, a reader racing
	 * the writer takes at worst one wrong sample, never a crash. */
	asm volatile("" ::: "memory");
	e->skb = skb;
	if (!again)
		cnt_add(CNT_PKT_INSERTS, 1);
}

static __always_inline bool stamp_take(void *map, const void *skb_ptr, struct pkt_stamp *out)
{
	__u64 skb = ptr_value(skb_ptr);
	struct stamp_bucket *b = skb ? stamp_bucket_of(map, skb) : NULL;
	struct pkt_stamp *e;

	if (!b)
		return false;
	if (b->e[0].skb == skb)
		e = &b->e[0];
	else if (b->e[1].skb == skb)
		e = &b->e[1];
	else
		return false;
	*out = *e;
	if (out->skb != skb)
		return false; /* overwritten between the check and the copy: not ours */
	e->skb = 0;
	cnt_add(CNT_PKT_DELETES, 1);
	/* left by an earlier deep window at an address since reused */
	return out->ts > deep_since_ns;
}

/* In tracepoint programs the skb is a BTF pointer: its fields are plain loads. */
static __always_inline __u32 skb_gso_segs(struct sk_buff *skb)
{
#ifdef TT_NO_KFUNCS
	return BPF_CORE_READ((struct skb_shared_info *)(skb->head + skb->end), gso_segs);
#else
	TT_HDR(struct skb_shared_info, si, skb->head + skb->end);

	return si->gso_segs;
#endif
}

#endif
