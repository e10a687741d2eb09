// SPDX-License-Identifier: GPL-2.0
/* Live ibv_contexts of a running process, found in its memory: for processes that opened
 * their device and created their queues before tailtrace started and now only post and
 * poll (inline verbs calls, no exported function is called again). */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "rdma/rdma_scan.h"
#include "rdma/rdma_resolve.h"
#include "lib/clock.h"

/* Index of the executable range holding addr, or -1. */
static int exec_find(const struct rdma_exec_range *r, size_t nr, __u64 addr)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (addr < r[mid].start)
			hi = mid;
		else if (addr >= r[mid].end)
			lo = mid + 1;
		else
			return (int)mid;
	}
	return -1;
}

static __u64 word_at(const __u8 *buf, size_t pos)
{
	__u64 v;

	memcpy(&v, buf + pos, sizeof(v));
	return v;
}

/* The three ops pointers of a candidate at pos: in code of one file, all different. */
static bool ops_plausible(const __u8 *buf, size_t pos, const struct rdma_scan_layout *l,
			  const struct rdma_exec_range *r, size_t nr, __u64 *fn)
{
	int file = -1;

	for (int i = 0; i < RDMA_FN__MAX; i++) {
		int k;

		fn[i] = word_at(buf, pos + l->fn_off[i]);
		k = exec_find(r, nr, fn[i]);
		if (k < 0 || (file >= 0 && r[k].file != file))
			return false;
		file = r[k].file;
		for (int j = 0; j < i; j++)
			if (fn[j] == fn[i])
				return false;
	}
	return true;
}

size_t rdma_scan_buffer(const __u8 *buf, size_t len, __u64 base, const struct rdma_scan_layout *l,
			const struct rdma_exec_range *r, size_t nr, struct rdma_scan_hit *hits,
			size_t max, __u64 *candidates)
{
	__u32 span = l->device_off + 8;
	__u64 lo, hi, dev;
	size_t n = 0;

	if (!nr)
		return 0;
	for (int i = 0; i < RDMA_FN__MAX; i++)
		if (l->fn_off[i] + 8 > span)
			span = l->fn_off[i] + 8;
	lo = r[0].start;
	hi = r[nr - 1].end;
	for (size_t pos = 0; pos + span <= len && n < max; pos += 8) {
		__u64 poll = word_at(buf, pos + l->fn_off[RDMA_FN_POLL_CQ]);
		__u64 fn[RDMA_FN__MAX];

		/* cheap filter first: most words are small numbers or heap pointers */
		if (poll < lo || poll >= hi || exec_find(r, nr, poll) < 0)
			continue;
		if (candidates)
			(*candidates)++;
		dev = word_at(buf, pos + l->device_off);
		if (!dev || (dev & 7) || !ops_plausible(buf, pos, l, r, nr, fn))
			continue;
		hits[n].ctx = base + pos;
		memcpy(hits[n].fn, fn, sizeof(fn));
		n++;
	}
	return n;
}

static bool name_plausible(const __u8 *s, __u32 len)
{
	__u32 i;

	for (i = 0; i < len && s[i]; i++)
		if (s[i] < 0x21 || s[i] > 0x7e)
			return false;
	return i > 0 && i < len;
}

bool rdma_device_plausible(const __u8 *dev, const struct rdma_scan_layout *l)
{
	__s32 node, transport;

	memcpy(&node, dev + l->dev_node_type_off, sizeof(node));
	memcpy(&transport, dev + l->dev_transport_off, sizeof(transport));
	/* enum ibv_node_type and ibv_transport_type: -1 (unknown) up to a few dozen */
	return node >= -1 && node < 64 && transport >= -1 && transport < 64 &&
	       name_plausible(dev + l->dev_name_off, l->dev_name_len) &&
	       name_plausible(dev + l->dev_dev_name_off, l->dev_name_len);
}

static bool device_check(int pid, __u64 ctx, const struct rdma_scan_layout *l)
{
	__u8 dev[1024];
	__u64 addr = 0;
	struct iovec local = { &addr, sizeof(addr) },
		     remote = { (void *)(uintptr_t)(ctx + l->device_off), sizeof(addr) };

	if (l->dev_size > sizeof(dev) || !l->dev_size)
		return false;
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != sizeof(addr))
		return false;
	local = (struct iovec){ dev, l->dev_size };
	remote = (struct iovec){ (void *)(uintptr_t)addr, l->dev_size };
	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)l->dev_size &&
	       rdma_device_plausible(dev, l);
}

static int cmp_range(const void *a, const void *b)
{
	const struct rdma_exec_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Executable file mappings (sorted) and the writable anonymous ones ([heap] first). */
struct scan_maps {
	struct rdma_exec_range exec[RDMA_SCAN_MAX_EXEC];
	size_t nexec;
	struct {
		__u64 start, end;
	} rw[1024];
	size_t nrw;
	char files[64][PATH_MAX];
	int nfiles;
};

static int file_number(struct scan_maps *m, const char *path)
{
	for (int i = 0; i < m->nfiles; i++)
		if (!strcmp(m->files[i], path))
			return i;
	if (m->nfiles == 64)
		return -1;
	snprintf(m->files[m->nfiles], PATH_MAX, "%s", path);
	return m->nfiles++;
}

static void maps_add(struct scan_maps *m, const struct proc_map *pm)
{
	bool anon = !pm->inode && (!pm->path[0] || !strcmp(pm->path, "[heap]"));

	if (pm->perms[2] == 'x' && pm->inode && pm->path[0] == '/' &&
	    m->nexec < RDMA_SCAN_MAX_EXEC) {
		int f = file_number(m, pm->path);

		if (f >= 0)
			m->exec[m->nexec++] = (struct rdma_exec_range){ pm->start, pm->end, f };
	} else if (anon && pm->perms[0] == 'r' && pm->perms[1] == 'w' &&
		   m->nrw < sizeof(m->rw) / sizeof(m->rw[0])) {
		size_t i = m->nrw++;

		/* the main heap first: contexts allocated by the main thread live there */
		if (!strcmp(pm->path, "[heap]") && i) {
			m->rw[i] = m->rw[0];
			i = 0;
		}
		m->rw[i].start = pm->start;
		m->rw[i].end = pm->end;
	}
}

static int maps_read(int pid, struct scan_maps *m)
{
	struct proc_map pm;
	char *line = NULL;
	size_t cap = 0;
	FILE *f;

	f = proc_maps_open(pid);
	if (!f)
		return -errno;
	/* whole lines: a path longer than a buffer cannot split into a forged second line */
	while (!proc_maps_next(f, &line, &cap, &pm))
		maps_add(m, &pm);
	free(line);
	fclose(f);
	qsort(m->exec, m->nexec, sizeof(m->exec[0]), cmp_range);
	return 0;
}

static bool hit_known(const struct rdma_scan_hit *hits, size_t n, __u64 ctx)
{
	for (size_t i = 0; i < n; i++)
		if (hits[i].ctx == ctx)
			return true;
	return false;
}

/* Reads one region chunk by chunk (each chunk overlaps the next by the struct's span so
 * that no position is missed) and scans it. */
static size_t scan_region(int pid, __u64 start, __u64 end, const struct rdma_scan_layout *l,
			  const struct scan_maps *m, __u8 *buf, struct rdma_scan_hit *hits,
			  size_t n, size_t max, struct rdma_scan_stats *st)
{
	const size_t overlap = 4096;

	for (__u64 pos = start; pos < end && n < max; pos += RDMA_SCAN_CHUNK_BYTES) {
		size_t want = (size_t)(end - pos < RDMA_SCAN_CHUNK_BYTES + overlap
					       ? end - pos
					       : RDMA_SCAN_CHUNK_BYTES + overlap);
		struct iovec local = { buf, want }, remote = { (void *)(uintptr_t)pos, want };
		struct rdma_scan_hit found[RDMA_SCAN_MAX_HITS];
		ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		size_t k;

		if (got <= 0) {
			st->bytes_skipped += want;
			continue;
		}
		st->bytes_read += (size_t)got;
		k = rdma_scan_buffer(buf, (size_t)got, pos, l, m->exec, m->nexec, found,
				     RDMA_SCAN_MAX_HITS, &st->candidates);
		for (size_t i = 0; i < k && n < max; i++) {
			if (hit_known(hits, n, found[i].ctx))
				continue;
			if (!device_check(pid, found[i].ctx, l)) {
				st->rejected++;
				continue;
			}
			hits[n++] = found[i];
		}
	}
	return n;
}

int rdma_scan_process(int pid, const struct rdma_scan_layout *l, struct rdma_scan_hit *hits,
		      size_t max, struct rdma_scan_stats *st)
{
	__u64 t0 = mono_ns(), budget = RDMA_SCAN_MAX_BYTES;
	struct scan_maps *m;
	size_t n = 0;
	__u8 *buf;
	int err;

	memset(st, 0, sizeof(*st));
	m = calloc(1, sizeof(*m));
	buf = malloc(RDMA_SCAN_CHUNK_BYTES + 4096);
	if (!m || !buf) {
		free(m);
		free(buf);
		return -ENOMEM;
	}
	err = maps_read(pid, m);
	for (size_t i = 0; !err && i < m->nrw && n < max; i++) {
		__u64 size = m->rw[i].end - m->rw[i].start;

		if (size > RDMA_SCAN_MAX_REGION || size > budget) {
			st->bytes_skipped += size;
			continue;
		}
		budget -= size;
		st->regions++;
		n = scan_region(pid, m->rw[i].start, m->rw[i].end, l, m, buf, hits, n, max, st);
	}
	st->elapsed_ns = mono_ns() - t0;
	free(buf);
	free(m);
	return err ? err : (int)n;
}
