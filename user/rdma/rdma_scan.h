/* SPDX-License-Identifier: GPL-2.0 */
/* Finding the live ibv_contexts of a process that set up its device before tailtrace
 * started: its writable anonymous memory is read (process_vm_readv) and searched for a
 * struct ibv_context whose ops.post_send, ops.post_recv and ops.poll_cq all point into
 * the code of one mapped file - the provider's data path. No BPF here: unit-tested. */
#ifndef TT_RDMA_SCAN_H
#define TT_RDMA_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "rdma_types.h"

/* Bounds of one scan: whatever is beyond them is counted in rdma_scan_stats, not read. */
#define RDMA_SCAN_MAX_BYTES   (256ull << 20) /* writable memory read per process */
#define RDMA_SCAN_MAX_REGION  (64ull << 20)  /* larger single mappings are skipped */
#define RDMA_SCAN_MAX_EXEC    512            /* executable file mappings considered */
#define RDMA_SCAN_MAX_HITS    16             /* contexts reported */
#define RDMA_SCAN_CHUNK_BYTES (1u << 20)

/* An executable mapping of a file; file numbers the distinct files. */
struct rdma_exec_range {
	__u64 start, end;
	int file;
};

/* Where a context's three ops pointers sit in struct ibv_context (offsetof), and the
 * offset of ctx->device, which a live context never has NULL. */
struct rdma_scan_layout {
	__u32 fn_off[RDMA_FN__MAX];
	__u32 device_off;
	/* struct ibv_device, which ctx->device points at: read and checked too, since other
	 * libraries (UCX's) keep structures with three code pointers at the same offsets */
	__u32 dev_size, dev_node_type_off, dev_transport_off, dev_name_off, dev_dev_name_off;
	__u32 dev_name_len;
};

struct rdma_scan_hit {
	__u64 ctx;              /* address of the struct ibv_context in the process */
	__u64 fn[RDMA_FN__MAX]; /* its ops pointers (runtime addresses) */
};

struct rdma_scan_stats {
	__u64 bytes_read;
	__u64 bytes_skipped; /* over the budget, too large a region, or unreadable */
	__u64 regions;
	__u64 candidates; /* words that looked like a code pointer at the poll_cq slot */
	__u64 rejected;   /* ops that looked right, device that did not */
	__u64 elapsed_ns;
};

/* Searches buf (the process's memory at address base, 8-aligned) for contexts: the three
 * ops pointers lie in executable mappings of one file (ranges sorted by start) and
 * differ from each other, and the device pointer is set and aligned. Positions whose
 * struct would run past len are not considered. Returns the number of hits stored (at
 * most max); *candidates (may be NULL) is incremented per word that passed the first
 * filter. */
size_t rdma_scan_buffer(const __u8 *buf, size_t len, __u64 base, const struct rdma_scan_layout *l,
			const struct rdma_exec_range *r, size_t nr, struct rdma_scan_hit *hits,
			size_t max, __u64 *candidates);

/* Whether dev (l->dev_size bytes read at ctx->device) looks like a struct ibv_device:
 * node and transport types within their enums, name and dev_name non-empty, printable
 * and NUL-terminated. */
bool rdma_device_plausible(const __u8 *dev, const struct rdma_scan_layout *l);

/* Reads pid's writable anonymous memory ([heap] first) within the bounds above and
 * returns the contexts whose device is plausible in hits (at most max, duplicates removed). Returns
 * the number found or -errno (no such process, no permission). */
int rdma_scan_process(int pid, const struct rdma_scan_layout *l, struct rdma_scan_hit *hits,
		      size_t max, struct rdma_scan_stats *st);

#endif
