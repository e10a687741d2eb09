// SPDX-License-Identifier: GPL-2.0
/* A function entry's uprobe placed on its first instruction x86 uprobes emulate
 * (uprobe_entry.h): a small decoder of the instructions functions open with. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "lib/uprobe_entry.h"

/* Register numbers as x86-64 encodes them. */
enum { X86_RAX, X86_RCX, X86_RDX, X86_RBX, X86_RSP, X86_RBP, X86_RSI, X86_RDI, X86_R8, X86_R9 };

/* Registers a probe's programs read at a function entry: the six integer arguments
 * (System V) and the stack pointer (arguments past the sixth, the return address). */
#define PROTECTED_REGS                                                                             \
	((1u << X86_RDI) | (1u << X86_RSI) | (1u << X86_RDX) | (1u << X86_RCX) | (1u << X86_R8) |  \
	 (1u << X86_R9) | (1u << X86_RSP))

enum insn_kind {
	INSN_UNKNOWN,  /* not understood: the probe stays where it is */
	INSN_EMULATED, /* the kernel emulates it: a cheap place for the probe */
	INSN_STEPPED,  /* single-stepped, effects known: a probe may pass it */
};

struct insn {
	enum insn_kind kind;
	size_t len;
	unsigned writes; /* registers written, bit per register number */
	bool mem_write;
};

bool insn_is_endbr64(const unsigned char *b, size_t n)
{
	return n >= ENDBR64_LEN && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa;
}

/* A register operand: 8-bit operands without a REX prefix name ah..bh as 4..7, which are
 * parts of rax..rbx. */
static unsigned reg_bit(unsigned r, bool byte_op, bool rex)
{
	if (byte_op && !rex && r >= 4 && r < 8)
		r -= 4;
	return 1u << r;
}

struct modrm {
	unsigned mod, reg, rm; /* reg and rm with their REX extensions */
};

/* Decodes a ModRM byte and whatever SIB and displacement follow it at b[*p]. */
static bool modrm_parse(const unsigned char *b, size_t n, size_t *p, unsigned rex, struct modrm *m)
{
	size_t disp = 0;
	unsigned v;

	if (*p >= n)
		return false;
	v = b[(*p)++];
	m->mod = v >> 6;
	m->reg = ((v >> 3) & 7) | (rex & 4 ? 8 : 0);
	m->rm = (v & 7) | (rex & 1 ? 8 : 0);
	if (m->mod != 3) {
		if ((v & 7) == 4) { /* SIB */
			if (*p >= n)
				return false;
			if (m->mod == 0 && (b[*p] & 7) == 5)
				disp = 4;
			(*p)++;
		} else if (m->mod == 0 && (v & 7) == 5) {
			disp = 4; /* rip-relative */
		}
		disp += m->mod == 1 ? 1 : m->mod == 2 ? 4 : 0;
	}
	*p += disp;
	return *p <= n;
}

/* Destination r/m: a register written, or memory. */
static void write_rm(struct insn *in, const struct modrm *m, bool byte_op, unsigned rex)
{
	if (m->mod == 3)
		in->writes |= reg_bit(m->rm, byte_op, rex);
	else
		in->mem_write = true;
}

/* Decodes one instruction of the kinds functions open with; anything else is
 * INSN_UNKNOWN. */
static struct insn insn_decode(const unsigned char *b, size_t n)
{
	struct insn in = { .kind = INSN_UNKNOWN };
	size_t p = 0, imm = 0;
	bool opsz = false, byte_op;
	unsigned rex = 0, op, alu;
	struct modrm m;

	if (insn_is_endbr64(b, n)) {
		in.kind = INSN_STEPPED;
		in.len = ENDBR64_LEN;
		return in;
	}
	if (p < n && b[p] == 0x66)
		opsz = true, p++;
	if (p < n && (b[p] & 0xf0) == 0x40)
		rex = b[p++];
	if (p >= n)
		return in;
	op = b[p++];
	byte_op = !(op & 1);
	in.kind = INSN_STEPPED;
	if (op < 0x40 && (op & 7) <= 3) { /* add, or, adc, sbb, and, sub, xor, cmp */
		if (!modrm_parse(b, n, &p, rex, &m))
			goto unknown;
		alu = op >> 3;
		if (alu != 7) {
			if (op & 2)
				in.writes |= reg_bit(m.reg, byte_op, rex);
			else
				write_rm(&in, &m, byte_op, rex);
		}
	} else if (op < 0x40 && ((op & 7) == 4 || (op & 7) == 5)) { /* the same on al/eax, imm */
		imm = (op & 7) == 4 ? 1 : opsz ? 2 : 4;
		if ((op >> 3) != 7)
			in.writes |= 1u << X86_RAX;
	} else if (op == 0x80 || op == 0x81 || op == 0x83) { /* the same, r/m and imm */
		if (!modrm_parse(b, n, &p, rex, &m))
			goto unknown;
		imm = op == 0x81 ? (opsz ? 2 : 4) : 1;
		if ((m.reg & 7) != 7)
			write_rm(&in, &m, op == 0x80, rex);
	} else if (op == 0x84 || op == 0x85) { /* test */
		if (!modrm_parse(b, n, &p, rex, &m))
			goto unknown;
	} else if (op == 0x88 || op == 0x89) { /* mov r/m, reg */
		if (!modrm_parse(b, n, &p, rex, &m))
			goto unknown;
		write_rm(&in, &m, byte_op, rex);
	} else if (op == 0x8a || op == 0x8b || op == 0x8d) { /* mov reg, r/m; lea */
		if (!modrm_parse(b, n, &p, rex, &m) || (op == 0x8d && m.mod == 3))
			goto unknown;
		in.writes |= reg_bit(m.reg, op == 0x8a, rex);
	} else if (op == 0xa8 || op == 0xa9) { /* test al/eax, imm */
		imm = op == 0xa8 ? 1 : opsz ? 2 : 4;
	} else if (op >= 0xb0 && op <= 0xbf) { /* mov reg, imm */
		imm = op < 0xb8 ? 1 : rex & 8 ? 8 : opsz ? 2 : 4;
		in.writes |= reg_bit((op & 7) | (rex & 1 ? 8 : 0), op < 0xb8, rex);
	} else if (op == 0xc6 || op == 0xc7 || op == 0xf6 || op == 0xf7) {
		/* mov r/m, imm (/0); test r/m, imm (/0 of f6, f7): the others divide, multiply */
		if (!modrm_parse(b, n, &p, rex, &m) || (m.reg & 7) != 0)
			goto unknown;
		imm = byte_op ? 1 : opsz ? 2 : 4;
		if (op == 0xc6 || op == 0xc7)
			write_rm(&in, &m, byte_op, rex);
	} else if (op == 0x0f && p < n) {
		op = b[p++];
		if (op == 0xb6 || op == 0xb7 || op == 0xbe || op == 0xbf ||
		    (op >= 0x40 && op <= 0x4f)) { /* movzx, movsx, cmov */
			if (!modrm_parse(b, n, &p, rex, &m))
				goto unknown;
			in.writes |= reg_bit(m.reg, false, rex);
		} else if (op == 0x1f) { /* nop r/m */
			if (!modrm_parse(b, n, &p, rex, &m))
				goto unknown;
			in.kind = INSN_EMULATED;
		} else if (op >= 0x80 && op <= 0x8f && !opsz) { /* jcc rel32 */
			in.kind = INSN_EMULATED;
			imm = 4;
		} else {
			goto unknown;
		}
	} else if (op >= 0x50 && op <= 0x57 && !opsz) { /* push reg */
		in.kind = INSN_EMULATED;
	} else if (op == 0x90 && !opsz && !(rex & 1)) { /* nop; with REX.B it is xchg r8, rax */
		in.kind = INSN_EMULATED;
	} else if ((op >= 0x70 && op <= 0x7f) || op == 0xeb) { /* jcc, jmp rel8 */
		in.kind = INSN_EMULATED;
		imm = 1;
	} else if ((op == 0xe8 || op == 0xe9) && !opsz) { /* call, jmp rel32 */
		in.kind = INSN_EMULATED;
		imm = 4;
	} else {
		goto unknown;
	}
	in.len = p + imm;
	if (in.len > n)
		goto unknown;
	return in;
unknown:
	in.kind = INSN_UNKNOWN;
	return in;
}

size_t uprobe_entry_skip(const unsigned char *code, size_t n, unsigned flags, unsigned *insns)
{
	size_t at = 0;

	if (insns)
		*insns = 0;
	for (unsigned i = 0; i <= UPROBE_SKIP_MAX_INSNS && at < n; i++) {
		struct insn in = insn_decode(code + at, n - at);

		if (in.kind == INSN_EMULATED) {
			if (insns)
				*insns = i;
			return at;
		}
		if (in.kind != INSN_STEPPED || i == UPROBE_SKIP_MAX_INSNS)
			break;
		if (in.writes & PROTECTED_REGS)
			break;
		/* memory the programs read, or the return address a return probe replaces */
		if (in.mem_write && (flags & (UPROBE_READS_MEMORY | UPROBE_RETURN)))
			break;
		at += in.len;
		if (at > UPROBE_SKIP_MAX_BYTES)
			break;
	}
	return 0;
}

/* Target of a rel8 or rel32 branch encoded at w[i], or -1. */
static long branch_target(const unsigned char *w, size_t wn, size_t i)
{
	unsigned char c = w[i];
	__s32 d32;

	if (((c >= 0x70 && c <= 0x7f) || (c >= 0xe0 && c <= 0xe3) || c == 0xeb) && i + 2 <= wn)
		return (long)i + 2 + (signed char)w[i + 1];
	if ((c == 0xe8 || c == 0xe9) && i + 5 <= wn) {
		d32 = (__s32)((__u32)w[i + 1] | (__u32)w[i + 2] << 8 | (__u32)w[i + 3] << 16 |
			      (__u32)w[i + 4] << 24);
		return (long)i + 5 + d32;
	}
	if (c == 0x0f && i + 6 <= wn && w[i + 1] >= 0x80 && w[i + 1] <= 0x8f) {
		d32 = (__s32)((__u32)w[i + 2] | (__u32)w[i + 3] << 8 | (__u32)w[i + 4] << 16 |
			      (__u32)w[i + 5] << 24);
		return (long)i + 6 + d32;
	}
	return -1;
}

bool code_branches_into(const unsigned char *w, size_t wn, size_t entry, size_t skip)
{
	for (size_t i = 0; i < wn; i++) {
		long t = branch_target(w, wn, i);

		if (t > (long)entry && t <= (long)(entry + skip))
			return true;
	}
	return false;
}

__u64 uprobe_entry_offset(const char *path, __u64 off, unsigned flags)
{
#if defined(__x86_64__)
	size_t before = off < UPROBE_BRANCH_WINDOW / 2 ? off : UPROBE_BRANCH_WINDOW / 2, skip;
	unsigned char *w = malloc(UPROBE_BRANCH_WINDOW);
	ssize_t n = -1;
	int fd;

	if (!w)
		return off;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = pread(fd, w, UPROBE_BRANCH_WINDOW, (off_t)(off - before));
		close(fd);
	}
	skip = 0;
	if (n > (ssize_t)before) {
		skip = uprobe_entry_skip(w + before, (size_t)n - before, flags, NULL);
		if (skip && code_branches_into(w, (size_t)n, before, skip))
			skip = 0;
	}
	free(w);
	return off + skip;
#else
	(void)path;
	(void)flags;
	return off;
#endif
}

void uprobe_moved_note(char *buf, size_t len, __u64 entry, __u64 probe)
{
	if (probe > entry)
		snprintf(buf, len, ", probed at +%llu past single-stepped instructions",
			 (unsigned long long)(probe - entry));
	else if (len)
		buf[0] = '\0';
}
