/* SPDX-License-Identifier: GPL-2.0 */
/* Names of a stripped library's static functions, where distributions keep them: a
 * separate debug file found by the library's build-id under a debug root
 * (DEBUG_ROOT/.build-id/xx/yyyy.debug, the layout of Debian's -dbgsym packages), or the
 * library's own .gnu_debugdata section (MiniDebugInfo: an xz-compressed ELF whose .symtab
 * lists the functions .dynsym does not). No BPF here: unit-tested. */
#ifndef TT_RDMA_DEBUGINFO_H
#define TT_RDMA_DEBUGINFO_H

#include <stddef.h>
#include <linux/types.h>

#define RDMA_DEBUG_ROOT "/usr/lib/debug"
/* .gnu_debugdata is a few KiB to a few MiB; anything larger is not taken */
#define RDMA_DEBUGDATA_MAX (64u << 20)
#define RDMA_BUILD_ID_MAX  64

struct rdma_debug_syms;

/* The build-id (NT_GNU_BUILD_ID) of an ELF file: its length, or -ENOENT (none), -ENOEXEC
 * (not ELF), -errno of open(). */
int elf_build_id(const char *path, unsigned char *id, size_t max);
/* The path of a build-id under a debug root: ROOT/.build-id/xx/yyyy.debug. */
void rdma_build_id_path(const unsigned char *id, size_t len, const char *root, char *out,
			size_t outlen);

/* Opens the symbols of lib (a path this process can open). First the debug file named by
 * lib's build-id: with pid > 0 and in_root, under debug_root as the process sees it
 * (resolved inside /proc/PID/root, never leaving it), then under debug_root here; a file
 * whose build-id differs is not taken. Then lib's .gnu_debugdata. 0 with *out, -ENOENT
 * when lib has neither, or -errno. */
int rdma_debug_open(const char *lib, int pid, const char *debug_root, int in_root,
		    struct rdma_debug_syms **out);
/* File offset in lib of the function name (from the debug symbols' .symtab, placed with
 * lib's own program headers). 0, -ENOENT or -ENOTUNIQ. */
int rdma_debug_find(const struct rdma_debug_syms *d, const char *name, __u64 *file_off);
/* "debug-file" or "gnu-debugdata" (static strings), and where the symbols came from. */
const char *rdma_debug_how(const struct rdma_debug_syms *d);
const char *rdma_debug_source(const struct rdma_debug_syms *d);
void rdma_debug_close(struct rdma_debug_syms *d);

#endif
