/* SPDX-License-Identifier: GPL-2.0 */
/* What a kretprobe cannot see: its function's arguments. The entry kprobe keeps them per
 * thread (a send or receive may sleep, and another thread may run meanwhile) until the
 * return takes them. Only the kprobe feeds use it (bpf/program_catalogue.h). */
#ifndef TT_STASH_BPF_H
#define TT_STASH_BPF_H

#include "maps.bpf.h"

enum io_kind {
	IO_SEND,
	IO_RECV,
};

struct io_stash_key {
	__u32 tid;
	__u32 kind; /* enum io_kind */
};

struct io_stash {
	__u64 sk;
	__u32 flags;
	__u32 pad;
};

/* one entry per thread inside a send or receive: an LRU, since a thread killed inside the
 * call never returns through the kretprobe */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct io_stash_key);
	__type(value, struct io_stash);
} io_stash SEC(".maps");

static __always_inline void io_stash_put(enum io_kind kind, void *sk, __u32 flags)
{
	struct io_stash_key k = { .tid = (__u32)bpf_get_current_pid_tgid(), .kind = kind };
	struct io_stash v = { .sk = (__u64)sk, .flags = flags };

	if (bpf_map_update_elem(&io_stash, &k, &v, BPF_ANY))
		cnt_add(CNT_FLOW_UPDATE_FAIL, 1);
}

static __always_inline bool io_stash_take(enum io_kind kind, struct io_stash *out)
{
	struct io_stash_key k = { .tid = (__u32)bpf_get_current_pid_tgid(), .kind = kind };
	struct io_stash *v = bpf_map_lookup_elem(&io_stash, &k);

	if (!v)
		return false;
	*out = *v;
	bpf_map_delete_elem(&io_stash, &k);
	return true;
}

#endif
