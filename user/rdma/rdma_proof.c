// SPDX-License-Identifier: GPL-2.0
/* Where a function starts, proven from a file tailtrace opened itself (rdma_proof.h): an
 * address read from a traced process is only a hint, so it is attached to only when it
 * equals one of these starts. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/openat2.h>
#include "rdma/rdma_proof.h"
#include "rdma/rdma_resolve.h"

int rdma_size_ok(long long size, unsigned long long cap)
{
	return size >= 0 && (unsigned long long)size <= cap ? 0 : -EFBIG;
}

void rdma_fd_path(int fd, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* O_NONBLOCK: a FIFO or device named by a mapping must not block or act on the open */
#define SAFE_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)

static int open_in_root(int pid, const char *path)
{
	char root[64], full[PATH_MAX + 64];
	struct open_how how = {
		.flags = SAFE_FLAGS,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int rfd, fd;

	if (pid <= 0)
		return open(path, SAFE_FLAGS);
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -1;
	fd = (int)syscall(SYS_openat2, rfd, path, &how, sizeof(how));
	close(rfd);
	if (fd >= 0 || errno != ENOSYS)
		return fd;
	/* before 5.6: below the root by name; the fstat checks below still hold */
	snprintf(full, sizeof(full), "%s%s", root, path);
	return open(full, SAFE_FLAGS | O_NOFOLLOW);
}

int rdma_map_open(int pid, const struct proc_map *m)
{
	struct stat st;
	int fd, err;

	if (!m->inode || m->path[0] != '/')
		return -ENOENT;
	fd = open_in_root(pid, m->path);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		err = -errno;
	else if (!S_ISREG(st.st_mode))
		err = -EPERM;
	else if (st.st_ino != m->inode)
		err = -ESTALE;
	else
		err = rdma_size_ok(st.st_size, RDMA_ELF_MAX);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int func_starts_add(struct func_starts *s, __u64 off)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		__u64 *v = realloc(s->off, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->off = v;
		s->cap = cap;
	}
	s->off[s->n++] = off;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

void func_starts_sort(struct func_starts *s)
{
	size_t j = 0;

	if (!s->n)
		return;
	qsort(s->off, s->n, sizeof(*s->off), cmp_u64);
	for (size_t i = 1; i < s->n; i++)
		if (s->off[i] != s->off[j])
			s->off[++j] = s->off[i];
	s->n = j + 1;
}

bool func_starts_has(const struct func_starts *s, __u64 off)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->off[mid] == off)
			return true;
		if (s->off[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

void func_starts_free(struct func_starts *s)
{
	free(s->off);
	memset(s, 0, sizeof(*s));
}

static __s32 rd_s32(const unsigned char *p)
{
	__u32 v;

	memcpy(&v, p, 4);
	return (__s32)v;
}

/* DWARF pointer encodings (the LSB Core spec's .eh_frame_hdr) */
#define PE_UDATA4  0x03
#define PE_SDATA4  0x0b
#define PE_UDATA8  0x04
#define PE_SDATA8  0x0c
#define PE_DATAREL 0x30
#define PE_OMIT    0xff

int eh_frame_hdr_starts(const unsigned char *buf, size_t len, __u64 hdr_vaddr,
			struct func_starts *s)
{
	size_t pos = 4, ptr_len;
	__u32 count;
	int err;

	if (len < 4 || buf[0] != 1)
		return -EINVAL;
	if (buf[1] == PE_OMIT || buf[2] == PE_OMIT || buf[3] == PE_OMIT)
		return -ENOTSUP;
	switch (buf[1] & 0x0f) {
	case PE_UDATA4:
	case PE_SDATA4:
		ptr_len = 4;
		break;
	case PE_UDATA8:
	case PE_SDATA8:
		ptr_len = 8;
		break;
	default:
		return -ENOTSUP;
	}
	if (buf[2] != PE_UDATA4 || buf[3] != (PE_DATAREL | PE_SDATA4))
		return -ENOTSUP;
	pos += ptr_len;
	if (len < pos + 4)
		return -EINVAL;
	memcpy(&count, buf + pos, 4);
	pos += 4;
	if (count > (len - pos) / 8)
		return -EINVAL;
	for (__u32 i = 0; i < count; i++, pos += 8) {
		err = func_starts_add(s, hdr_vaddr + (__s64)rd_s32(buf + pos));
		if (err)
			return err;
	}
	return 0;
}

static int add_symbols(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct func_starts *s)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	__u64 off;

	if (!d)
		return 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;

		if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value ||
		    GELF_ST_TYPE(sym.st_info) != STT_FUNC)
			continue;
		if (!elf_vaddr_to_offset(e, sym.st_value, &off) && func_starts_add(s, off))
			return -ENOMEM;
	}
	return 0;
}

int elf_function_starts(const char *path, struct func_starts *s)
{
	struct func_starts eh = { 0 };
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int fd, err = 0;
	__u64 off;
	Elf *e;

	e = elf_open_checked(path, &fd);
	if (!e)
		return -errno;
	if (elf_getshdrstrndx(e, &shstrndx))
		shstrndx = 0;
	while (!err && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) {
			err = add_symbols(e, scn, &sh, s);
			continue;
		}
		name = shstrndx ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
		if (sh.sh_type != SHT_PROGBITS || !name || strcmp(name, ".eh_frame_hdr"))
			continue;
		d = elf_getdata(scn, NULL);
		/* a malformed table proves nothing: its starts are not taken */
		if (d && d->d_buf && !eh_frame_hdr_starts(d->d_buf, d->d_size, sh.sh_addr, &eh))
			for (size_t i = 0; !err && i < eh.n; i++)
				if (!elf_vaddr_to_offset(e, eh.off[i], &off))
					err = func_starts_add(s, off);
	}
	func_starts_free(&eh);
	elf_end(e);
	close(fd);
	func_starts_sort(s);
	return err;
}
