/* SPDX-License-Identifier: GPL-2.0 */
/* Scheduler view of the threads that serve traced sockets: cumulative run-queue wait,
 * on-CPU and off-CPU time per thread from sched_switch/sched_wakeup, so a request can take
 * deltas over its own interval. Only threads seen on traced sockets are tracked. */
#ifndef TT_SCHED_BPF_H
#define TT_SCHED_BPF_H

#include "flow.bpf.h"

enum thread_state {
	TH_ONCPU,
	TH_RUNNABLE, /* woken or preempted, waiting for a CPU */
	TH_BLOCKED,
	TH_UNKNOWN, /* the scheduler programs were detached since: known at its next switch */
};

struct thread {
	__u64 runq_ns, oncpu_ns, offcpu_ns, gpu_ns;
	__u64 since;     /* start of the current state */
	__u64 gpu_since; /* inside a CUDA sync call since (0 = not) */
	__u32 state;
	__u32 cpu;
	__u32 deep_gen; /* the deep tier's generation its state is of */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct thread);
} threads SEC(".maps");

/* Pre-filter in front of `threads`: sched_switch, sched_wakeup and sched_process_exit run
 * for every thread on the machine, and for an untracked thread the hash lookup (or delete)
 * that misses was most of their cost. thread_buckets[tid & mask] counts the tracked threads
 * whose tid falls in that slot; an array lookup is inlined by the verifier, so an untracked
 * thread costs a load. The count is raised before the insert (lowered again if the insert
 * fails) and lowered after the delete, so it is never below the number of tracked threads
 * in the slot: a zero is a certain miss. Threads the LRU evicts leave their count behind
 * (they are not deleted at exit): a wasted hash lookup later, never a missed thread. */
#define THREAD_BUCKETS 65536 /* 512 KiB (8-byte slots); 4x the LRU: few false positives */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, THREAD_BUCKETS);
	__type(key, __u32);
	__type(value, __u32);
} thread_buckets SEC(".maps");

static __always_inline __u32 *thread_bucket(__u32 tid)
{
	__u32 i = tid & (THREAD_BUCKETS - 1);

	return bpf_map_lookup_elem(&thread_buckets, &i);
}

/* The thread may be tracked: its slot is not empty. */
static __always_inline bool thread_maybe_tracked(__u32 *bucket)
{
	return bucket && *bucket;
}

/* Start tracking the current thread (it just used a traced socket, so it is on CPU). */
static __always_inline void thread_track_current(__u32 tid)
{
	struct thread t = {};
	__u32 *bucket;
	long err;

	/* only requests use thread state; without them nothing would delete it */
	if (!targ_requests)
		return;
	bucket = thread_bucket(tid);
	if (!bucket)
		return;
	if (*bucket && bpf_map_lookup_elem(&threads, &tid))
		return;
	t.state = deep_on() ? TH_ONCPU : TH_UNKNOWN;
	t.deep_gen = deep_gen;
	t.since = bpf_ktime_get_ns();
	t.cpu = bpf_get_smp_processor_id();
	/* count first: a switch of this thread between the insert and the count (the program
	 * can be preempted) must not skip it */
	__sync_fetch_and_add(bucket, 1);
	err = bpf_map_update_elem(&threads, &tid, &t, BPF_NOEXIST);
	if (!err) {
		cnt_add(CNT_THREAD_INSERTS, 1);
		return;
	}
	__sync_fetch_and_add(bucket, -1);
	if (err != -17 /* EEXIST */)
		cnt_add(CNT_SCHED_UPDATE_FAIL, 1);
}

/* Close the current state period at `now`. */
static __always_inline void thread_account(struct thread *t, __u64 now)
{
	__u64 d = now > t->since ? now - t->since : 0;

	if (t->deep_gen != deep_gen) {
		/* its state is from before the scheduler programs were detached (or while
		 * they were): nothing is known of the time since */
		t->deep_gen = deep_gen;
		t->state = TH_UNKNOWN;
		d = 0;
	}
	switch (t->state) {
	case TH_UNKNOWN:
		break;
	case TH_ONCPU:
		t->oncpu_ns += d;
		break;
	case TH_RUNNABLE:
		t->runq_ns += d;
		break;
	default:
		t->offcpu_ns += d;
		if (t->gpu_since)
			t->gpu_ns += d;
	}
	t->since = now;
}

/* Cumulative counters as of `now`, including the period in progress. */
static __always_inline bool thread_mark(__u32 tid, __u64 now, struct sched_mark *m)
{
	struct thread *t = bpf_map_lookup_elem(&threads, &tid);

	if (!t)
		return false;
	thread_account(t, now);
	m->runq = t->runq_ns;
	m->oncpu = t->oncpu_ns;
	m->offcpu = t->offcpu_ns;
	m->gpu = t->gpu_ns;
	return true;
}

static __always_inline void handle_switch(bool preempt, struct task_struct *prev,
					  struct task_struct *next, unsigned int prev_state)
{
	__u32 prev_tid = prev->pid, next_tid = next->pid;
	bool prev_maybe = thread_maybe_tracked(thread_bucket(prev_tid));
	bool next_maybe = thread_maybe_tracked(thread_bucket(next_tid));
	struct thread *t;
	__u64 now;

	if (!prev_maybe && !next_maybe)
		return;
	/* the clock first, as before the filter: read after the hash lookups it cost more */
	now = bpf_ktime_get_ns();
	if (prev_maybe) {
		t = bpf_map_lookup_elem(&threads, &prev_tid);
		if (t) {
			thread_account(t, now);
			t->state =
				(prev_state == TASK_RUNNING || preempt) ? TH_RUNNABLE : TH_BLOCKED;
		}
	}
	if (next_maybe) {
		t = bpf_map_lookup_elem(&threads, &next_tid);
		if (t) {
			thread_account(t, now);
			t->state = TH_ONCPU;
			t->cpu = bpf_get_smp_processor_id();
		}
	}
}

SEC("tp_btf/sched_switch")
int BPF_PROG(tt_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	handle_switch(preempt, prev, next, prev_state);
	return 0;
}

/* task_struct.state became __state in 5.14 */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

/* Before 5.18 the event has no prev_state: the task's state, read as the kernel does. A
 * thread not yet tracked is not read at all. */
SEC("tp_btf/sched_switch")
int BPF_PROG(tt_sched_switch_nostate, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	unsigned int state = 0;

	if (!preempt && thread_maybe_tracked(thread_bucket(prev->pid))) {
		if (bpf_core_field_exists(prev->__state))
			state = BPF_CORE_READ(prev, __state);
		else
			state = (unsigned int)BPF_CORE_READ((struct task_struct___pre514 *)prev,
							    state);
	}
	handle_switch(preempt, prev, next, state);
	return 0;
}

static __always_inline void on_wakeup(struct task_struct *p)
{
	__u32 tid = p->pid;
	struct thread *t;

	if (!thread_maybe_tracked(thread_bucket(tid)))
		return;
	t = bpf_map_lookup_elem(&threads, &tid);
	if (!t || t->state != TH_BLOCKED)
		return;
	thread_account(t, bpf_ktime_get_ns());
	t->state = TH_RUNNABLE;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(tt_sched_wakeup, struct task_struct *p)
{
	on_wakeup(p);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(tt_sched_exit, struct task_struct *p)
{
	__u32 tid = p->pid;
	__u32 *bucket = thread_bucket(tid);

	if (!thread_maybe_tracked(bucket))
		return 0;
	if (!bpf_map_delete_elem(&threads, &tid)) {
		__sync_fetch_and_add(bucket, -1);
		cnt_add(CNT_THREAD_DELETES, 1);
	}
	return 0;
}

/* --cuda: off-CPU time inside libcuda's synchronisation calls is GPU wait. Attached by
 * userspace to cuStreamSynchronize, cuEventSynchronize and cuCtxSynchronize. */
SEC("uprobe")
int tt_cuda_sync_enter(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct thread *t = bpf_map_lookup_elem(&threads, &tid);

	if (t)
		t->gpu_since = bpf_ktime_get_ns();
	return 0;
}

SEC("uretprobe")
int tt_cuda_sync_exit(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct thread *t = bpf_map_lookup_elem(&threads, &tid);

	if (t) {
		thread_account(t, bpf_ktime_get_ns());
		t->gpu_since = 0;
	}
	return 0;
}

/* The thread doing I/O on a traced flow gets its scheduler state tracked; a flow asks again
 * only when its thread changes (or its state was found gone), not at every send and read. */
static __always_inline void flow_track_thread(struct flow *f, __u32 tid)
{
	if (f->tracked_tid == tid)
		return;
	thread_track_current(tid);
	f->tracked_tid = tid;
}

#endif
