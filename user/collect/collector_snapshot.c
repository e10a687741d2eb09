// SPDX-License-Identifier: GPL-2.0
/* The collector's reading side: moves what the BPF maps measured since the last call into
 * a struct snapshot (histograms, counter deltas, losses, device names) together with the
 * attribution aggregate and slow requests the request rings fed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect/collector_int.h"
#include "collect/softnet.h"
#include "attr/attribution.h"
#include "tailtrace.skel.h"
#include "lib/util.h"
#include "lib/clock.h"

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
void assign_place_slots(struct collector *c)
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

/* Entries present in a map (for the "inserted - deleted - present" eviction count). */
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

/* Grouped histograms from the `hists` hash: every key, then each read and deleted. *nkeys
 * gets the number of keys found (the map's live entries). */
static int collect_hash_hists(struct collector *c, struct snapshot *s, size_t *nkeys_out)
{
	int hfd = bpf_map__fd(c->skel->maps.hists);
	struct hist_key key, next, *keys = NULL;
	size_t nkeys = 0, cap = 0;
	struct hist merged;
	void *prev = NULL;
	int err = 0;

	while (!bpf_map_get_next_key(hfd, prev, &next)) {
		if (ARRAY_RESERVE(keys, cap, nkeys + 1)) {
			free(keys);
			return -ENOMEM;
		}
		keys[nkeys++] = next;
		key = next;
		prev = &key;
	}
	for (size_t i = 0; i < nkeys; i++) {
		/* read and delete atomically: nothing counted between the two is lost. Before
		 * 5.14 a hash map cannot: read, then delete (a sample that lands between the
		 * two is lost) */
		if (!c->no_lookup_delete &&
		    bpf_map_lookup_and_delete_elem(hfd, &keys[i], c->percpu_buf)) {
			if (errno == ENOENT)
				continue;
			c->no_lookup_delete = true;
		}
		if (c->no_lookup_delete && (bpf_map_lookup_elem(hfd, &keys[i], c->percpu_buf) ||
					    bpf_map_delete_elem(hfd, &keys[i])))
			continue;
		c->user_deleted++;
		memset(&merged, 0, sizeof(merged));
		hist_merge_percpu(&merged, c->percpu_buf, c->ncpus, c->hist_stride);
		if (merged.count && (err = snapshot__add_hist(s, &keys[i], &merged)))
			break;
	}
	free(keys);
	*nkeys_out = nkeys;
	return err;
}

/* Counter and drop-reason deltas since the last snapshot; cur gets the counters' totals. */
static void collect_counters(struct collector *c, struct snapshot *s, __u64 *cur)
{
	__u64 drops[TT_DROP_REASONS];

	sum_percpu_array(bpf_map__fd(c->skel->maps.counters), CNT__MAX, cur, c->ncpus);
	/* a delta like every counter: snapshots of successive intervals are summed */
	s->events_lost += cur[CNT_EVENTS_LOST] - c->prev_counters[CNT_EVENTS_LOST];
	for (int i = 0; i < CNT__MAX; i++) {
		s->counters[i] += cur[i] - c->prev_counters[i];
		c->prev_counters[i] = cur[i];
	}
	sum_percpu_array(bpf_map__fd(c->skel->maps.drop_reasons), TT_DROP_REASONS, drops, c->ncpus);
	for (int i = 0; i < TT_DROP_REASONS; i++) {
		s->drop_reasons[i] += drops[i] - c->prev_drops[i];
		c->prev_drops[i] = drops[i];
	}
}

/* Every key created and not deleted by us is gone only if the LRU evicted it, or is still
 * in the map (created after the walk of collect_hash_hists: read next time). A key created
 * between the counter read and the count is live but not yet inserted: the total may not
 * run backwards, or the unsigned delta would wrap. */
static void count_hist_evictions(struct collector *c, struct snapshot *s, const __u64 *cur,
				 size_t nkeys)
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

/* Tracked threads the same way (inserted - deleted at exit - live), but threads exit while
 * we count: take the count only when no insert or delete happened during it. */
static void count_thread_evictions(struct collector *c, struct snapshot *s)
{
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
}

/* HTTP/2 streams the LRU map let go before they ended (inserted - ended - live), only
 * when requests are traced (the map is empty otherwise). */
static void count_stream_evictions(struct collector *c, struct snapshot *s, const __u64 *cur)
{
	__u64 live, done, evicted;

	if (!cur[CNT_STREAM_INSERTS])
		return;
	live = map_count(c->skel->maps.h2_streams);
	done = cur[CNT_STREAM_DELETES] + live;
	evicted = cur[CNT_STREAM_INSERTS] > done ? cur[CNT_STREAM_INSERTS] - done : 0;
	if (evicted > c->prev_stream_evicted) {
		s->hist_evicted += evicted - c->prev_stream_evicted;
		c->prev_stream_evicted = evicted;
	}
}

/* Per-packet stamps never matched: overwritten in a full bucket or left by packets we did
 * not see leave (reported as lost, never silently). */
static void count_unmatched_stamps(struct collector *c, struct snapshot *s, const __u64 *cur)
{
	__u64 pkt_live = live_stamps(c);
	__u64 ins = cur[CNT_PKT_INSERTS], del = cur[CNT_PKT_DELETES] + pkt_live;
	__u64 unmatched = ins > del ? ins - del : 0;

	/* per interval, like the other counters, and never backwards (see above) */
	if (unmatched > c->prev_unmatched) {
		s->pkt_unmatched += unmatched - c->prev_unmatched;
		c->prev_unmatched = unmatched;
	}
}

/* Device names (kept in the kernel map: devices seen once stay named). */
static void collect_devnames(struct collector *c, struct snapshot *s)
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

/* The attribution aggregate and slow requests move into the snapshot; a fresh aggregate
 * takes their place (NULL when out of memory). */
static void move_requests(struct collector *c, struct snapshot *s)
{
	__u64 slow_cut = 0, slow_threshold = 0;
	size_t nslow;

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
		if (ARRAY_RESERVE(s->slow_reqs, s->slow_cap, s->nslow + 1))
			break;
		s->slow_reqs[s->nslow++] = c->slow_out[i];
	}
	if (c->features & COLL_SLOW_REQS) {
		s->slow_cut += slow_cut;
		s->slow_threshold_ns = slow_threshold;
	}
}

/* NAPI poll counts since the last snapshot: each instance read and deleted at once. */
static int collect_napi(struct collector *c, struct snapshot *s)
{
	int fd = bpf_map__fd(c->skel->maps.napi_counts);
	struct napi_key key, next;
	struct napi_count *vals = calloc((size_t)c->ncpus, sizeof(*vals));
	int err = 0;

	if (!vals)
		return -ENOMEM;
	/* bounded: instances deleted here come back at their next poll */
	for (__u32 i = 0; !err && i < 2 * bpf_map__max_entries(c->skel->maps.napi_counts) &&
			  !bpf_map_get_next_key(fd, NULL, &next);
	     i++) {
		struct napi_count sum = { 0 };

		key = next;
		if (bpf_map_lookup_and_delete_elem(fd, &key, vals))
			break;
		for (int cpu = 0; cpu < c->ncpus; cpu++) {
			sum.polls += vals[cpu].polls;
			sum.exhausted += vals[cpu].exhausted;
			sum.work += vals[cpu].work;
		}
		if (sum.polls)
			err = snapshot__add_napi(s, &key, &sum);
		/* the key is gone: the walk starts again from the first key */
	}
	free(vals);
	return err;
}

/* /proc/net/softnet_stat now, cumulative; NULL when unreadable. */
static struct snap_softnet *softnet_now(int *n)
{
	struct snap_softnet *rows = calloc(SOFTNET_MAX_CPUS, sizeof(*rows));
	FILE *f = fopen("/proc/net/softnet_stat", "r");

	*n = 0;
	if (rows && f)
		*n = softnet_parse(f, rows, SOFTNET_MAX_CPUS);
	if (f)
		fclose(f);
	return rows;
}

void softnet_baseline(struct collector *c)
{
	free(c->softnet_prev);
	c->softnet_prev = softnet_now(&c->nsoftnet_prev);
}

/* The per-CPU softnet counters over the same interval as the histograms. */
static int collect_softnet(struct collector *c, struct snapshot *s)
{
	struct snap_softnet *cur;
	int n, err;

	if (!c->softnet_prev)
		return 0;
	cur = softnet_now(&n);
	if (!cur)
		return -ENOMEM;
	err = softnet_delta(s, c->softnet_prev, c->nsoftnet_prev, cur, n);
	c->nsoftnet_prev = n;
	free(cur);
	return err;
}

/* Histograms, counters and drop reasons since the last read, scaled up by the sampling
 * rate in force, merged into dst. */
int collect_sampled(struct collector *c, struct snapshot *dst, __u64 *cur, size_t *nkeys)
{
	struct snapshot t;
	int err;

	snapshot__init(&t);
	err = collect_hash_hists(c, &t, nkeys);
	if (!err)
		err = collect_array_hists(c, &t);
	collect_counters(c, &t, cur);
	budget_scale(c, &t);
	if (!err)
		err = snapshot__merge(dst, &t);
	snapshot__free(&t);
	return err;
}

int collector__snapshot(struct collector *c, struct snapshot *s)
{
	__u64 cur[CNT__MAX];
	size_t nkeys = 0;
	int err;

	/* the ring buffer first, so requests finished before now land in this snapshot */
	ring_buffer__consume(c->rb);
	err = collect_sampled(c, s, cur, &nkeys);
	if (!err)
		err = budget_finish(c, s);
	if (err)
		return err;
	count_hist_evictions(c, s, cur, nkeys);
	count_thread_evictions(c, s);
	count_stream_evictions(c, s, cur);
	count_unmatched_stamps(c, s, cur);
	collect_devnames(c, s);
	/* softnet_stat is a file read, no program: every snapshot has it */
	err = c->nic ? collect_napi(c, s) : 0;
	if (!err)
		err = collect_softnet(c, s);
	if (err)
		return err;
	move_requests(c, s);
	self_cost__collect(&c->cost, s);
	deep_collect(c, s);
	if (!s->start_ns)
		s->start_ns = c->start_realtime;
	s->end_ns = realtime_ns();
	c->start_realtime = s->end_ns;
	return c->agg ? 0 : -ENOMEM;
}
