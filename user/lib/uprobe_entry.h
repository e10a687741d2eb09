/* SPDX-License-Identifier: GPL-2.0 */
/* Where a uprobe on a function's entry goes. Functions built with -fcf-protection (as
 * Ubuntu's and Fedora's libraries are) begin with endbr64, an instruction x86 uprobes do
 * not emulate: every hit then single-steps it out of line, a second trap into the kernel.
 * endbr64 changes no register, flag or memory, so a probe right after it sees the same
 * arguments, stack pointer and return address (a return probe too), and nothing can reach
 * the instruction after it without passing it (no jump targets the middle of an entry):
 * the probe goes there. */
#ifndef TT_LIB_UPROBE_ENTRY_H
#define TT_LIB_UPROBE_ENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define ENDBR64_LEN 4

/* The n bytes at b begin with endbr64 (f3 0f 1e fa). Pure. */
bool insn_is_endbr64(const unsigned char *b, size_t n);
/* The offset to probe for the function at file offset off in path: off + ENDBR64_LEN when
 * it begins with endbr64 on an x86-64 build, off otherwise (or when unreadable). */
__u64 uprobe_entry_offset(const char *path, __u64 off);

#endif
