/* SPDX-License-Identifier: GPL-2.0 */
/* Finding RDMA data-path functions in libraries: --rdma-probe spec parsing, ELF
 * .symtab/.dynsym lookup (symbol versions honoured) and mapping a runtime address of a
 * process to (file, file offset) through /proc/PID/maps. No BPF here: unit-tested. */
#ifndef TT_RDMA_RESOLVE_H
#define TT_RDMA_RESOLVE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include "rdma_types.h"

/* One --rdma-probe: [ROLE=]LIB:SYMBOL or [ROLE=]LIB:0xOFFSET. ROLE is post_send,
 * post_recv or poll_cq (enum rdma_fn); it may be left out for a symbol whose name says it
 * (mlx5_post_send, rxe_poll_cq, ...). OFFSET is a file offset, as uprobes take. */
struct rdma_probe_spec {
	int role;           /* enum rdma_fn */
	char lib[PATH_MAX]; /* as given: a path, or a file name to look for */
	char symbol[256];   /* empty when an offset was given */
	__u64 offset;
	bool has_offset;
};

const char *rdma_fn_name(int fn);
/* enum rdma_fn for "post_send", "post_recv", "poll_cq"; -EINVAL otherwise. */
int rdma_fn_parse(const char *s);
/* enum rdma_fn a provider's symbol name suggests, or -ENOENT. */
int rdma_fn_from_symbol(const char *sym);
/* Returns 0 or -EINVAL with a one-line reason in err. */
int rdma_spec_parse(const char *s, struct rdma_probe_spec *out, char *err, size_t errlen);

/* File offset of the function `name` in an ELF file: .symtab first (static functions,
 * unstripped builds), then .dynsym, where the default version (name@@VER) wins over
 * hidden compat versions (name@VER). Returns 0, -ENOENT (no such function), -ENOTUNIQ
 * (two different definitions), -ENOEXEC (not ELF) or -errno of open(). *from_symtab (may
 * be NULL) says which table answered. */
int elf_find_function(const char *path, const char *name, __u64 *file_off, bool *from_symtab);
/* Whether the ELF file has a .symtab section (0/1), or -errno. */
int elf_has_symtab(const char *path);

/* One line of /proc/PID/maps. */
struct proc_map {
	__u64 start, end, pgoff;
	__u64 inode;
	char perms[5];
	char path[PATH_MAX]; /* empty for anonymous mappings */
};

/* Parses one maps line; 0, -EINVAL, or -ENAMETOOLONG for a path of PATH_MAX or more. */
int proc_map_parse(const char *line, struct proc_map *m);
/* The next parsable line of a maps stream, read whole with getline (*line, *cap: its
 * buffer, freed by the caller). 0 or -ENOENT at the end. */
int proc_maps_next(FILE *maps, char **line, size_t *cap, struct proc_map *m);
/* Finds the file mapping holding addr in a maps stream: fills *m and the file offset
 * addr corresponds to. Returns 0, -ENOENT (no mapping, or an anonymous one: JIT code). */
int proc_maps_find(FILE *maps, __u64 addr, struct proc_map *m, __u64 *file_off);
FILE *proc_maps_open(int pid);
/* proc_maps_find over /proc/PID/maps. Opening the file is rdma_map_open's (rdma_proof.h). */
int rdma_addr_to_file(int pid, __u64 addr, struct proc_map *m, __u64 *file_off);
/* Resolves a library named in a spec: a path is taken as is (a regular file); a bare file
 * name is looked up among the files mapped by pid (pid > 0, opened through its root),
 * then in the usual library directories; "libfoo.so" also matches "libfoo.so.1.2.3".
 * Returns 0 with the file open in *fd (path: its name, to show), or -ENOENT. */
int rdma_find_library(int pid, const char *lib, char *path, size_t pathlen, int *fd);
/* The first library mapped by pid (or, pid 0, found in the library directories under
 * the name fallback) that defines the function sym: where an exported verbs entry point
 * lives in this process. Returns 0, the file offset and the file open in *fd, or -ENOENT. */
int rdma_find_exported(int pid, const char *sym, const char *fallback, char *path, size_t pathlen,
		       __u64 *file_off, int *fd);

/* libelf on a checked file: opened O_NONBLOCK, a regular file of at most RDMA_ELF_MAX
 * bytes (errno EFBIG over it, ENOEXEC for anything else). */
typedef struct Elf Elf;
Elf *elf_open_checked(const char *path, int *fd);
int elf_vaddr_to_offset(Elf *e, __u64 vaddr, __u64 *off);

#endif
