/* SPDX-License-Identifier: GPL-2.0 */
/* Proof that an address a traced process hands us is the start of a function in a file
 * we opened ourselves: the file behind a /proc/PID/maps entry, opened safely as a regular
 * file of bounded size, and the function starts its own symbol tables and unwind table
 * (.eh_frame_hdr) record. Pure parts (table decoding, lookup) are unit-tested. */
#ifndef TT_RDMA_PROOF_H
#define TT_RDMA_PROOF_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct proc_map;

/* Largest file handed to libelf: providers are a few MiB, debug files tens of MiB */
#define RDMA_ELF_MAX (256ull << 20)

/* 0 when a file of size bytes may be read whole or handed to libelf, else -EFBIG. */
int rdma_size_ok(long long size, unsigned long long cap);

/* Opens the file of mapping m of pid as the process sees it: through /proc/PID/root
 * (openat2 RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS, else a plain open below that root),
 * O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_NOCTTY, and only a regular file with the mapping's
 * inode and at most RDMA_ELF_MAX bytes. pid <= 0 opens m->path on this host. Returns
 * the fd or -errno (-EFTYPE-like -EPERM for a non-regular file, -ESTALE for another
 * inode, -EFBIG over the cap). */
int rdma_map_open(int pid, const struct proc_map *m);
/* "/proc/self/fd/N": the opened file itself, for libbpf and libelf, never its name. */
void rdma_fd_path(int fd, char *buf, size_t len);

/* Function starts of an ELF file, as sorted, unique file offsets. */
struct func_starts {
	__u64 *off;
	size_t n, cap;
};

int func_starts_add(struct func_starts *s, __u64 off);
void func_starts_sort(struct func_starts *s);
bool func_starts_has(const struct func_starts *s, __u64 off);
void func_starts_free(struct func_starts *s);

/* Decodes an .eh_frame_hdr (at virtual address hdr_vaddr) and adds each FDE's initial
 * location (a virtual address) to s. Only the binary search table encoding linkers write
 * (udata4 count, datarel sdata4 pairs) is read. 0, -EINVAL (malformed), -ENOTSUP. */
int eh_frame_hdr_starts(const unsigned char *buf, size_t len, __u64 hdr_vaddr,
			struct func_starts *s);

/* Every function start of the ELF file at path (an fd path): STT_FUNC symbols of
 * .symtab and .dynsym and the unwind table's entries, as file offsets. 0 or -errno. */
int elf_function_starts(const char *path, struct func_starts *s);

#endif
