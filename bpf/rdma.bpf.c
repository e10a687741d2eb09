// SPDX-License-Identifier: GPL-2.0
/* RDMA verbs data path through uprobes: post -> completion latency per QP/peer/opcode
 * (rdma.wr), completion-channel wake-up latency (rdma.cq_event), and discovery of the
 * provider functions behind a live ibv_context's ops table. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "tailtrace.h"
#include "rdma_types.h"

char LICENSE[] SEC("license") = "GPL";

/* verbs.h offsets, compiled into userspace and frozen here before load */
const volatile struct rdma_layout targ_layout;
/* bpf_ktime_get_ns when userspace attached the first post-side uprobe, 0 before */
__u64 post_attached_ns;
/* Poll generation: userspace adds one each time the poll side starts being watched (a
 * sampling window opens, a poll target attaches). Completions of WRs posted in an earlier
 * generation may have gone unseen. */
__u32 poll_gen;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RDMA_INFLIGHT_MAX);
	__type(key, struct rdma_wr_key);
	__type(value, struct rdma_wr_val);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RDMA_WRSEQ_MAX);
	__type(key, struct rdma_wrid_key);
	__type(value, struct rdma_wr_seq);
} wrseq SEC(".maps");

/* One shared, preallocated copy per key with atomic adds. A per-CPU map would cost
 * RDMA_HIST_MAX * 5.8 KB * CPUs up front, and its non-preallocated variant fails the
 * first inserts (-ENOMEM while the allocator's per-CPU cache refills) - seen here as lost
 * samples. Work requests of one QP mostly complete on one CPU, so contention is low. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RDMA_HIST_MAX);
	__type(key, struct rdma_hist_key);
	__type(value, struct hist);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RC__MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RDMA_QP_MAX);
	__type(key, struct rdma_qp_key);
	__type(value, struct rdma_qp_info);
} qps SEC(".maps");

struct poll_state {
	__u64 ctx;
	__u64 wc;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RDMA_THREADS_MAX);
	__type(key, __u32);
	__type(value, struct poll_state);
} polls SEC(".maps");

struct cqev_state {
	__u64 cq_out;    /* struct ibv_cq ** the caller passed */
	__u64 waking_ns; /* last wake-up of this thread inside the call, 0 if none */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RDMA_THREADS_MAX);
	__type(key, __u32);
	__type(value, struct cqev_state);
} cqevs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RDMA_THREADS_MAX);
	__type(key, __u32);
	__type(value, __u64); /* struct ibv_qp_init_attr * of an ibv_create_qp in progress */
} qp_creates SEC(".maps");

struct ctx_seen_key {
	__u64 ctx;
	__u32 tgid;
	__u32 reserved;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RDMA_CTX_MAX);
	__type(key, struct ctx_seen_key);
	__type(value, __u8);
} ctx_seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16384);
} ctx_events SEC(".maps");

/* template for new histogram entries: too big for the BPF stack */
static struct hist zero_hist;

static __always_inline void count_n(__u32 idx, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &idx);

	if (c)
		__sync_fetch_and_add(c, n);
}

static __always_inline void count(__u32 idx)
{
	count_n(idx, 1);
}

static __always_inline __u64 rd_u64(__u64 base, __u32 off)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (const void *)(base + off));
	return v;
}

static __always_inline __u32 rd_u32(__u64 base, __u32 off)
{
	__u32 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (const void *)(base + off));
	return v;
}

static __always_inline void hist_put(const struct rdma_hist_key *k, __u64 v)
{
	struct hist *h = bpf_map_lookup_elem(&hists, k);
	__u64 slot;
	int err;

	if (!h) {
		err = bpf_map_update_elem(&hists, k, &zero_hist, BPF_NOEXIST);
		if (!err)
			count(RC_HIST_INSERTS);
		else if (err != -17 /* EEXIST: another CPU created it */)
			count(RC_HIST_FAIL);
		h = bpf_map_lookup_elem(&hists, k);
		if (!h)
			return;
	}
	slot = hist_slot(v);
	/* widened before the bound check: verifiers before 6.3 lose a check made on a
	 * zero-extended copy that the index does not use */
	barrier_var(slot);
	if (slot >= HIST_SLOTS)
		return;
	/* an add the compiler knows to be of 0 becomes an atomic OR, which kernels before
	 * 5.12 do not have */
	barrier_var(v);
	/* shared by every CPU */
	__sync_fetch_and_add(&h->slots[slot], 1);
	__sync_fetch_and_add(&h->count, 1);
	__sync_fetch_and_add(&h->sum_ns, v);
	if (v > h->max_ns)
		h->max_ns = v;
}

/* Reports a context once per (process, context): userspace maps its ops pointers to
 * provider library offsets and attaches the data-path uprobes there. */
static __always_inline void ctx_report(__u64 ctx, __u32 source)
{
	struct ctx_seen_key sk = {};
	struct rdma_ctx_event *e;
	__u8 one = 1;

	if (!ctx)
		return;
	sk.ctx = ctx;
	sk.tgid = bpf_get_current_pid_tgid() >> 32;
	if (bpf_map_lookup_elem(&ctx_seen, &sk))
		return;
	e = bpf_ringbuf_reserve(&ctx_events, sizeof(*e), 0);
	if (!e) {
		count(RC_CTX_LOST);
		return; /* not marked seen: the next call on this context retries */
	}
	e->ctx = ctx;
	e->tgid = sk.tgid;
	e->source = source;
	for (int i = 0; i < RDMA_FN__MAX; i++)
		e->fn[i] = rd_u64(ctx, targ_layout.ctx_fn[i]);
	bpf_ringbuf_submit(e, 0);
	count(RC_CTX_EVENTS);
	if (bpf_map_update_elem(&ctx_seen, &sk, &one, BPF_ANY))
		count(RC_CTX_LOST);
}

/* ---- post side: every WR of the chain gets its post time ---- */

/* Stores one signaled WR as the next occurrence of its (queue, wr_id). */
static __always_inline void post_one(const struct rdma_wrid_key *id, struct rdma_wr_val *v)
{
	struct rdma_wr_seq *sq, fresh = {};
	struct rdma_wr_key k = {};
	__u32 gen = poll_gen, n;

	sq = bpf_map_lookup_elem(&wrseq, id);
	if (!sq) {
		/* numbered from the clock (one step per 256 ns), not from 0: the occurrences
		 * of an earlier state of this (queue, wr_id) that completed unseen are still
		 * in the in-flight map until swept, and a new one must not take their keys */
		fresh.head = fresh.tail = fresh.gen_start = (__u32)(v->post_ns >> 8);
		fresh.sync_gen = gen;
		fresh.post_gen = gen;
		bpf_map_update_elem(&wrseq, id, &fresh, BPF_NOEXIST);
		sq = bpf_map_lookup_elem(&wrseq, id);
		if (!sq) {
			count(RC_WRSEQ_FAIL);
			return;
		}
	}
	/* not atomic (kernels before 5.12 have no fetch-and-add with a result): two threads
	 * posting the same wr_id to one queue at the same instant could take one number;
	 * verbs applications post to a queue from one thread or under their own lock */
	n = sq->tail;
	sq->tail = n + 1;
	if (n != sq->head)
		count(RC_INFLIGHT_DUP);
	if (sq->post_gen != gen) {
		sq->post_gen = gen;
		sq->gen_start = n;
	}
	k.id = *id;
	k.seq = n;
	if (!bpf_map_update_elem(&inflight, &k, v, BPF_ANY))
		count(RC_INFLIGHT_INSERTS);
	else
		count(RC_INFLIGHT_FAIL);
}

static __always_inline int post_common(__u64 qp, __u64 wr, bool recv)
{
	struct rdma_qp_info *qi;
	struct rdma_qp_key qk = {};
	struct rdma_wrid_key k = {};
	struct rdma_wr_val v = {};
	__u64 now = bpf_ktime_get_ns();
	__u32 qpn, qpt;
	bool sig_all = false;
	int i;

	count(RC_POST_CALLS);
	qk.ctx = rd_u64(qp, targ_layout.qp_context);
	qk.tgid = bpf_get_current_pid_tgid() >> 32;
	qpn = rd_u32(qp, targ_layout.qp_qp_num);
	qk.qpn = qpn;
	qpt = rd_u32(qp, targ_layout.qp_qp_type);
	qi = bpf_map_lookup_elem(&qps, &qk);
	if (qi) {
		v.peer_qpn = qi->dest_qpn;
		sig_all = qi->sq_sig_all;
	}
	k.ctx = qk.ctx;
	k.tgid = qk.tgid;
	k.qpn_dir = (qpn & 0xffffff) | (recv ? RDMA_DIR_RECV : 0);
	v.post_ns = now;

	for (i = 0; i < RDMA_MAX_WR_PER_POST; i++) {
		if (!wr)
			break;
		count(RC_POST_WRS);
		if (recv) {
			k.wr_id = rd_u64(wr, targ_layout.rwr_wr_id);
			v.opcode = RDMA_OP_RECV;
		} else {
			__u32 flags = rd_u32(wr, targ_layout.swr_send_flags);

			k.wr_id = rd_u64(wr, targ_layout.swr_wr_id);
			v.opcode = rd_u32(wr, targ_layout.swr_opcode) & 0x7f;
			if (qpt == targ_layout.qpt_ud)
				v.peer_qpn = rd_u32(wr, targ_layout.swr_ud_remote_qpn);
			if (!sig_all && !(flags & targ_layout.send_signaled)) {
				/* no completion will come for it: storing it would only churn
				 * the LRU */
				count(RC_UNSIGNALED);
				goto next;
			}
		}
		post_one(&k, &v);
	next:
		wr = rd_u64(wr, recv ? targ_layout.rwr_next : targ_layout.swr_next);
	}
	if (wr)
		count(RC_POST_TRUNC);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(rdma_post_send, void *qp, void *wr)
{
	return post_common((__u64)qp, (__u64)wr, false);
}

SEC("uprobe")
int BPF_KPROBE(rdma_post_recv, void *qp, void *wr)
{
	return post_common((__u64)qp, (__u64)wr, true);
}

/* ---- poll side: the uretprobe reads the wc array the provider filled ---- */

SEC("uprobe")
int BPF_KPROBE(rdma_poll_enter, void *cq, int num_entries, void *wc)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct poll_state st;

	st.ctx = rd_u64((__u64)cq, targ_layout.cq_context);
	st.wc = (__u64)wc;
	if (bpf_map_update_elem(&polls, &tid, &st, BPF_ANY))
		count(RC_THREAD_FAIL);
	return 0;
}

/* The queue's capacity, when ibv_create_qp was seen: 0 unknown. */
static __always_inline __u32 queue_cap(const struct rdma_wrid_key *id)
{
	struct rdma_qp_key qk = {};
	struct rdma_qp_info *qi;

	qk.ctx = id->ctx;
	qk.tgid = id->tgid;
	qk.qpn = id->qpn_dir & 0xffffff;
	qi = bpf_map_lookup_elem(&qps, &qk);
	if (!qi)
		return 0;
	return id->qpn_dir & RDMA_DIR_RECV ? qi->max_recv_wr : qi->max_send_wr;
}

/* Deletes an occurrence that will not be timed. */
static __always_inline void retire(const struct rdma_wrid_key *id, __u32 seq)
{
	struct rdma_wr_key k = {};

	k.id = *id;
	k.seq = seq;
	if (!bpf_map_delete_elem(&inflight, &k))
		count(RC_INFLIGHT_RETIRED);
}

/* Which occurrence of (queue, wr_id) a completion is; false (and *seq unset) when it cannot
 * be known. Bounds: it is not older than head (older ones were matched or are known
 * complete) nor than tail - cap (a queue of cap entries held the newest post and at most
 * cap - 1 before it), and not newer than head + amb nor than tail - 1 (posted before now). */
static __always_inline bool which_occurrence(const struct rdma_wrid_key *id, struct rdma_wr_seq *sq,
					     __u32 *seq)
{
	__u32 gen = poll_gen, cap, lo, hi, old;

	if (sq->sync_gen != gen) {
		/* occurrences posted before this generation may have completed unseen */
		__u32 doubtful =
			sq->post_gen == gen ? sq->gen_start - sq->head : sq->tail - sq->head;

		if ((__s32)doubtful > (__s32)sq->amb)
			sq->amb = doubtful;
		sq->sync_gen = gen;
	}
	lo = sq->head;
	cap = queue_cap(id);
	if (cap && (__s32)(sq->tail - cap - lo) > 0)
		lo = sq->tail - cap;
	hi = sq->head + sq->amb;
	if ((__s32)(hi - (sq->tail - 1)) > 0)
		hi = sq->tail - 1;
	if ((__s32)(lo - sq->head) > 0) {
		/* known complete: their completions went unseen */
		count_n(RC_UNSEEN, lo - sq->head);
		old = sq->head;
		for (int i = 0; i < 8; i++) {
			if (old + i == lo)
				break;
			retire(id, old + i);
		}
	}
	if (hi == lo) {
		*seq = lo;
		sq->head = lo + 1;
		sq->amb = 0;
		return true;
	}
	if ((__s32)(hi - lo) < 0) {
		/* bounds that contradict each other: records of a post the provider refused */
		retire(id, lo);
		sq->head = lo + 1;
		sq->amb = 0;
		return false;
	}
	/* ambiguous: the oldest candidate is complete either way */
	retire(id, lo);
	sq->head = lo + 1;
	sq->amb = hi - lo;
	return false;
}

static __always_inline void complete_one(const struct poll_state *st, __u32 tgid, __u64 wc,
					 __u64 now)
{
	struct rdma_hist_key hk = {};
	struct rdma_wr_key k = {};
	struct rdma_wr_seq *sq;
	struct rdma_wr_val *v = NULL;
	__u32 status, opcode, qpn, seq;

	count(RC_POLL_WCS);
	k.id.ctx = st->ctx;
	k.id.tgid = tgid;
	k.id.wr_id = rd_u64(wc, targ_layout.wc_wr_id);
	status = rd_u32(wc, targ_layout.wc_status);
	opcode = rd_u32(wc, targ_layout.wc_opcode);
	qpn = rd_u32(wc, targ_layout.wc_qp_num) & 0xffffff;
	if (status)
		count(RC_ERRORS);
	/* the wc opcode is only defined for successful completions: an error (a flush,
	 * typically) may belong to either queue, so try the send queue first */
	if (status || !(opcode & targ_layout.wc_recv))
		k.id.qpn_dir = qpn;
	else
		k.id.qpn_dir = qpn | RDMA_DIR_RECV;
	sq = bpf_map_lookup_elem(&wrseq, &k.id);
	if ((!sq || sq->head == sq->tail) && status) {
		k.id.qpn_dir = qpn | RDMA_DIR_RECV;
		sq = bpf_map_lookup_elem(&wrseq, &k.id);
	}
	hk.tgid = tgid;
	hk.qpn = qpn;
	hk.stage = STAGE_RDMA_WR;
	hk.status = status > 255 ? 255 : status;
	if (!sq || sq->head == sq->tail) {
		count(RC_UNMATCHED);
		if (post_attached_ns && now - post_attached_ns < RDMA_PRE_ATTACH_NS)
			count(RC_PRE_ATTACH);
		goto untimed;
	}
	if (!which_occurrence(&k.id, sq, &seq)) {
		count(RC_AMBIGUOUS);
		goto untimed;
	}
	k.seq = seq;
	v = bpf_map_lookup_elem(&inflight, &k);
	if (!v) {
		/* evicted or swept: counted there */
		count(RC_UNMATCHED);
		goto untimed;
	}
	hk.peer_qpn = v->peer_qpn;
	hk.opcode = v->opcode;
	hist_put(&hk, now - v->post_ns);
	if (!bpf_map_delete_elem(&inflight, &k))
		count(RC_INFLIGHT_DELETES);
	if (sq->head == sq->tail)
		bpf_map_delete_elem(&wrseq, &k.id);
	return;
untimed:
	if (status) {
		/* still worth a count by status: latency unknown, recorded as 0 */
		hk.opcode = RDMA_OP_UNKNOWN;
		hist_put(&hk, 0);
	}
	if (sq && sq->head == sq->tail)
		bpf_map_delete_elem(&wrseq, &k.id);
}

SEC("uretprobe")
int BPF_KRETPROBE(rdma_poll_exit, int ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	__u64 now = bpf_ktime_get_ns();
	struct poll_state *stp, st;
	int i;

	stp = bpf_map_lookup_elem(&polls, &tid);
	if (!stp)
		return 0; /* entry happened before the sampling window opened */
	st = *stp;
	bpf_map_delete_elem(&polls, &tid);
	count(RC_POLL_CALLS);
	if (ret <= 0)
		return 0;
	for (i = 0; i < RDMA_MAX_WC_PER_POLL; i++) {
		if (i >= ret)
			break;
		complete_one(&st, id >> 32, st.wc + (__u64)i * targ_layout.wc_size, now);
	}
	if (ret > RDMA_MAX_WC_PER_POLL)
		count(RC_POLL_TRUNC);
	return 0;
}

/* ---- completion channel: wake-up latency ---- */

SEC("uprobe")
int BPF_KPROBE(rdma_cq_event_enter, void *channel, void *cq_out)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct cqev_state st = {};

	ctx_report(rd_u64((__u64)channel, targ_layout.chan_context), RDMA_SRC_CQ_EVENT);
	st.cq_out = (__u64)cq_out;
	if (bpf_map_update_elem(&cqevs, &tid, &st, BPF_ANY))
		count(RC_THREAD_FAIL);
	return 0;
}

/* The kernel waking a thread that sleeps inside ibv_get_cq_event: its channel fd has
 * become readable, i.e. the completion event has been delivered. */
SEC("tp_btf/sched_waking")
int BPF_PROG(rdma_waking, struct task_struct *p)
{
	__u32 tid = p->pid;
	struct cqev_state *st = bpf_map_lookup_elem(&cqevs, &tid);

	if (st)
		st->waking_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(rdma_cq_event_exit, int ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	__u64 now = bpf_ktime_get_ns();
	struct rdma_hist_key hk = {};
	struct cqev_state *stp, st;
	__u64 cq;

	stp = bpf_map_lookup_elem(&cqevs, &tid);
	if (!stp)
		return 0;
	st = *stp;
	bpf_map_delete_elem(&cqevs, &tid);
	if (ret)
		return 0;
	count(RC_CQEV_CALLS);
	if (!st.waking_ns) {
		count(RC_CQEV_IMMEDIATE);
		return 0;
	}
	cq = rd_u64(st.cq_out, 0);
	hk.tgid = id >> 32;
	hk.qpn = cq ? rd_u32(cq, targ_layout.cq_handle) : 0;
	hk.stage = STAGE_RDMA_CQ_EVENT;
	hist_put(&hk, now - st.waking_ns);
	return 0;
}

/* ---- control path: discovery of contexts and per-QP facts ---- */

SEC("uretprobe")
int BPF_KRETPROBE(rdma_open_device_ret, void *vctx)
{
	ctx_report((__u64)vctx, RDMA_SRC_OPEN_DEVICE);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(rdma_create_cq_ret, void *cq)
{
	if (cq)
		ctx_report(rd_u64((__u64)cq, targ_layout.cq_context), RDMA_SRC_CREATE_CQ);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(rdma_ack_cq, void *cq)
{
	if (cq)
		ctx_report(rd_u64((__u64)cq, targ_layout.cq_context), RDMA_SRC_ACK_CQ);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(rdma_create_qp_enter, void *pd, void *init_attr)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 a = (__u64)init_attr;

	if (bpf_map_update_elem(&qp_creates, &tid, &a, BPF_ANY))
		count(RC_THREAD_FAIL);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(rdma_create_qp_ret, void *qp)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct rdma_qp_info info = {};
	struct rdma_qp_key qk = {};
	__u64 *attr;

	attr = bpf_map_lookup_elem(&qp_creates, &tid);
	if (!attr)
		return 0;
	if (qp) {
		qk.ctx = rd_u64((__u64)qp, targ_layout.qp_context);
		qk.tgid = id >> 32;
		qk.qpn = rd_u32((__u64)qp, targ_layout.qp_qp_num) & 0xffffff;
		info.sq_sig_all = rd_u32(*attr, targ_layout.qia_sq_sig_all) != 0;
		/* the provider wrote back what it granted */
		info.max_send_wr = rd_u32(*attr, targ_layout.qia_max_send_wr);
		info.max_recv_wr = rd_u32(*attr, targ_layout.qia_max_recv_wr);
		if (bpf_map_update_elem(&qps, &qk, &info, BPF_ANY))
			count(RC_QP_FAIL);
		ctx_report(qk.ctx, RDMA_SRC_CREATE_QP);
	}
	bpf_map_delete_elem(&qp_creates, &tid);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(rdma_modify_qp, void *qp, void *attr, int mask)
{
	struct rdma_qp_info info = {}, *qi;
	struct rdma_qp_key qk = {};
	__u64 a = (__u64)attr;

	if (!(mask & (targ_layout.mask_dest_qpn | targ_layout.mask_av)))
		return 0;
	qk.ctx = rd_u64((__u64)qp, targ_layout.qp_context);
	qk.tgid = bpf_get_current_pid_tgid() >> 32;
	qk.qpn = rd_u32((__u64)qp, targ_layout.qp_qp_num) & 0xffffff;
	qi = bpf_map_lookup_elem(&qps, &qk);
	if (qi)
		info = *qi;
	if (mask & targ_layout.mask_dest_qpn)
		info.dest_qpn = rd_u32(a, targ_layout.qa_dest_qp_num) & 0xffffff;
	if (mask & targ_layout.mask_av) {
		__u8 global = 0;

		bpf_probe_read_user(&global, 1, (const void *)(a + targ_layout.qa_ah_is_global));
		if (global) {
			bpf_probe_read_user(info.dgid, sizeof(info.dgid),
					    (const void *)(a + targ_layout.qa_ah_dgid));
			info.gid_set = 1;
		}
	}
	if (bpf_map_update_elem(&qps, &qk, &info, BPF_ANY))
		count(RC_QP_FAIL);
	return 0;
}

/* ---- UCX: one level up, for transports that write to the NIC without post_send ---- */
#include "ucx.bpf.h"
