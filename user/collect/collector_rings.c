// SPDX-License-Identifier: GPL-2.0
/* The collector's request rings: one BPF ring buffer per CPU (up to REQ_RINGS_MAX), read
 * through one ring_buffer, each request event handed to the attribution aggregate, the
 * flight recorder and the caller's callback. */
#include <errno.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collect/collector_int.h"
#include "attr/attribution.h"
#include "tailtrace.skel.h"

/* Bytes of each request ring: a power of two (the ring buffer's rule), the budget shared
 * between the rings, each at least REQ_RING_MIN (~900 events, several polls' worth on a
 * busy CPU) and at most REQ_RING_MAX (~15 000 events). The process maps each ring's data
 * twice (for records that wrap), so its RSS grows by up to twice the rings' size. */
__u32 req_ring_size(__u32 nrings)
{
	__u32 size = REQ_RING_MAX;

	while (size > REQ_RING_MIN && (__u64)size * nrings > REQ_RINGS_BUDGET)
		size >>= 1;
	return size;
}

static bool ring_behind(const struct collector *c)
{
	__u64 used, size;

	return collector__backlog(c, &used, &size) && used * 2 >= size;
}

static int on_req_event(void *ctx, void *data, size_t size)
{
	struct collector *c = ctx;
	const struct req_event *ev = data;

	if (size < sizeof(*ev))
		return 0;
	attr_agg__add(c->agg, ev);
	deep_plan_request(&c->deep, ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0);
	if (c->features & COLL_SLOW_REQS)
		slow_keep__offer(&c->slow, ev);
	/* a batch is up to a few thousand events (~1 us each): give way to any other runnable
	 * thread every 64, so a serving thread that wakes behind us waits ~50 us at most, also
	 * while we run at normal priority (at SCHED_IDLE it is preempted anyway). Not while
	 * the ring is half full: on a saturated host each yield costs a whole time slice of
	 * every busy thread, and 64 events per round of slices falls behind. Below half, as the
	 * BPF side wakes us at a quarter, a busy ring still yields. */
	if ((++c->taken & 63) == 0 && !ring_behind(c))
		sched_yield();
	return 0;
}

/* Creates the request rings, puts them in req_rings and reads them all through one
 * ring_buffer. Each ring's consumer and producer positions are also mapped read-only (page
 * 0 and page 1 of the map), so collector__backlog() costs no system call; without them the
 * backlog is unknown. */
int req_rings_setup(struct collector *c)
{
	int outer = bpf_map__fd(c->skel->maps.req_rings);
	long page = sysconf(_SC_PAGESIZE);

	for (__u32 i = 0; i < c->nrings; i++) {
		int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "tt_req_ring", 0, 0, c->ring_size,
					NULL);

		if (fd < 0)
			return -errno;
		c->ring_fds[c->rings_made++] = fd;
		if (bpf_map_update_elem(outer, &i, &fd, BPF_ANY))
			return -errno;
		if (i == 0)
			c->rb = ring_buffer__new(fd, on_req_event, c, NULL);
		else if (ring_buffer__add(c->rb, fd, on_req_event, c))
			return -errno;
		if (!c->rb)
			return -errno;
	}
	for (__u32 i = 0; i < c->nrings; i++) {
		void *cons = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, c->ring_fds[i], 0);
		void *prod = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, c->ring_fds[i], page);

		if (cons == MAP_FAILED || prod == MAP_FAILED) {
			if (cons != MAP_FAILED)
				munmap(cons, (size_t)page);
			if (prod != MAP_FAILED)
				munmap(prod, (size_t)page);
			break;
		}
		c->rb_consumer[i] = cons;
		c->rb_producer[i] = prod;
	}
	return 0;
}

void req_rings_close(struct collector *c)
{
	long page = sysconf(_SC_PAGESIZE);

	ring_buffer__free(c->rb);
	for (__u32 i = 0; i < c->rings_made; i++) {
		if (c->rb_consumer[i]) {
			munmap((void *)c->rb_consumer[i], (size_t)page);
			munmap((void *)c->rb_producer[i], (size_t)page);
		}
		close(c->ring_fds[i]);
	}
}

unsigned int collector__ring_fds(const struct collector *c, const int **fds)
{
	*fds = c->ring_fds;
	return c->rings_made;
}

/* The fullest ring decides: each CPU's events wait in its own ring. */
bool collector__backlog(const struct collector *c, __u64 *used, __u64 *size)
{
	__u64 most = 0;

	if (!c->nrings || !c->rb_consumer[c->nrings - 1])
		return false;
	for (__u32 i = 0; i < c->nrings; i++) {
		unsigned long cons = __atomic_load_n(c->rb_consumer[i], __ATOMIC_ACQUIRE);
		unsigned long prod = __atomic_load_n(c->rb_producer[i], __ATOMIC_ACQUIRE);

		if (prod > cons && prod - cons > most)
			most = prod - cons;
	}
	*used = most;
	*size = c->ring_size;
	return true;
}
