/* SPDX-License-Identifier: GPL-2.0 */
/* Where a uprobe on a function's entry goes. x86 uprobes emulate a few instructions in the
 * kernel (push of a register, nop, direct jumps, calls and conditional branches) and
 * single-step every other one out of line: a second trap, 10 us on a VM where the first
 * costs 0.5 us. Functions often open with one: endbr64 (every function of a library built
 * with -fcf-protection, as Ubuntu's and Fedora's are), a test of an argument, a counter
 * decremented. When the instructions before the first emulated one change nothing the
 * probe's programs read (the argument registers, the stack pointer, memory when they
 * read it, the return address when a return probe shares the site), the probe goes on
 * that emulated instruction: it sees the same arguments, and the function runs the same. */
#ifndef TT_LIB_UPROBE_ENTRY_H
#define TT_LIB_UPROBE_ENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define ENDBR64_LEN 4
/* How far past the entry a probe may move, and how many instructions it may pass. */
#define UPROBE_SKIP_MAX_BYTES 24
#define UPROBE_SKIP_MAX_INSNS 4
/* Bytes around the entry searched for a branch into the instructions passed over. */
#define UPROBE_BRANCH_WINDOW 65536

/* What the programs on a probe site need unchanged when the probe moves forward. The
 * argument registers and the stack pointer always are. */
enum uprobe_site_flags {
	UPROBE_READS_MEMORY = 1 << 0, /* they read memory through the arguments */
	UPROBE_RETURN = 1 << 1,       /* a return probe shares the site */
};

/* The n bytes at b begin with endbr64 (f3 0f 1e fa). Pure. */
bool insn_is_endbr64(const unsigned char *b, size_t n);
/* How many bytes at the start of a function's code (n bytes at code) a probe with these
 * flags can move past to land on an instruction x86 uprobes emulate: 0 when the entry is
 * one already, or when an instruction before one is not understood or changes what the
 * probe reads. *insns gets the number of instructions passed (may be NULL). x86-64. Pure. */
size_t uprobe_entry_skip(const unsigned char *code, size_t n, unsigned flags, unsigned *insns);
/* Whether bytes at w (wn of them) hold, anywhere, the encoding of a direct jump, call or
 * conditional branch whose target lies in (entry, entry + skip], positions relative to w:
 * a probe moved there would fire on a path that never passed the entry. Data bytes can
 * look like a branch; that only keeps a probe where it was. Pure. */
bool code_branches_into(const unsigned char *w, size_t wn, size_t entry, size_t skip);
/* The offset to probe for the function at file offset off in path: past the instructions
 * uprobe_entry_skip allows when no branch in the UPROBE_BRANCH_WINDOW bytes around it
 * lands among them, on x86-64 builds; off otherwise (or when unreadable). */
__u64 uprobe_entry_offset(const char *path, __u64 off, unsigned flags);
/* ", probed at +N past single-stepped instructions" into buf when probe is past entry,
 * "" otherwise: what attach lines add. Pure. */
void uprobe_moved_note(char *buf, size_t len, __u64 entry, __u64 probe);

#endif
