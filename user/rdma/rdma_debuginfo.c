// SPDX-License-Identifier: GPL-2.0
/* Static function names of stripped provider libraries from a debug file found by
 * build-id or from .gnu_debugdata (MiniDebugInfo). The debug files of a container are
 * its own files: they are opened with openat2(RESOLVE_IN_ROOT) below /proc/PID/root, so a
 * symlink there cannot lead out of it, and the decompressed MiniDebugInfo is bounded. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "rdma/rdma_debuginfo.h"
#include "rdma/rdma_proof.h"

struct rdma_debug_syms {
	int lib_fd, dbg_fd;
	Elf *lib, *dbg;
	void *dbg_mem; /* the decompressed .gnu_debugdata elf_memory() reads */
	const char *how;
	char source[4200]; /* /proc/PID/root + a path */
};

/* Every file goes to libelf through here: a regular file within RDMA_ELF_MAX, or none
 * (libelf would read a device or a FIFO, or map a sparse file of any size). */
static Elf *elf_from_fd(int fd)
{
	struct stat st;
	Elf *e;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || rdma_size_ok(st.st_size, RDMA_ELF_MAX))
		return NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e && elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		e = NULL;
	}
	return e;
}

static int build_id_of(Elf *e, unsigned char *id, size_t max)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		GElf_Nhdr nh;
		Elf_Data *d;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((char *)d->d_buf + name_off, "GNU", 4))
				continue;
			if (!nh.n_descsz || nh.n_descsz > max)
				return -ENOENT;
			memcpy(id, (char *)d->d_buf + desc_off, nh.n_descsz);
			return (int)nh.n_descsz;
		}
	}
	return -ENOENT;
}

int elf_build_id(const char *path, unsigned char *id, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), n;
	Elf *e;

	if (fd < 0)
		return -errno;
	e = elf_from_fd(fd);
	n = e ? build_id_of(e, id, max) : -ENOEXEC;
	if (e)
		elf_end(e);
	close(fd);
	return n;
}

void rdma_build_id_path(const unsigned char *id, size_t len, const char *root, char *out,
			size_t outlen)
{
	char hex[2 * RDMA_BUILD_ID_MAX + 1];
	size_t n = len < RDMA_BUILD_ID_MAX ? len : RDMA_BUILD_ID_MAX;

	for (size_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	hex[2 * n] = '\0';
	snprintf(out, outlen, "%s/.build-id/%.2s/%s.debug", root, hex, n ? hex + 2 : "");
}

static bool has_symtab(Elf *e)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			return true;
	return false;
}

/* The debug file at path (inside the root dirfd when root >= 0), kept when its build-id
 * is lib's and it has a .symtab. */
static int try_debug_file(struct rdma_debug_syms *d, int root, const char *path,
			  const unsigned char *id, int idlen)
{
	unsigned char got[RDMA_BUILD_ID_MAX];
	int fd;
	Elf *e;

	struct stat st;

	/* O_NONBLOCK: a FIFO planted at the name must not block the open */
	if (root >= 0) {
		struct open_how how = {
			.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK,
			.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
		};

		fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOENT;
	}
	e = elf_from_fd(fd);
	if (!e || build_id_of(e, got, sizeof(got)) != idlen || memcmp(got, id, (size_t)idlen) ||
	    !has_symtab(e)) {
		if (e)
			elf_end(e);
		close(fd);
		return -ENOENT;
	}
	d->dbg_fd = fd;
	d->dbg = e;
	d->how = "debug-file";
	return 0;
}

static int find_debug_file(struct rdma_debug_syms *d, int pid, const char *root, int in_root)
{
	unsigned char id[RDMA_BUILD_ID_MAX];
	char path[4096];
	int idlen = build_id_of(d->lib, id, sizeof(id));

	if (idlen <= 0)
		return -ENOENT;
	if (pid > 0 && in_root) {
		char proot[64];
		int rfd, err;

		snprintf(proot, sizeof(proot), "/proc/%d/root", pid);
		rfd = open(proot, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (rfd >= 0) {
			rdma_build_id_path(id, (size_t)idlen, root, path, sizeof(path));
			err = try_debug_file(d, rfd, path, id, idlen);
			close(rfd);
			if (!err) {
				snprintf(d->source, sizeof(d->source), "%s%s", proot, path);
				return 0;
			}
		}
	}
	rdma_build_id_path(id, (size_t)idlen, root, path, sizeof(path));
	if (try_debug_file(d, -1, path, id, idlen))
		return -ENOENT;
	snprintf(d->source, sizeof(d->source), "%s", path);
	return 0;
}

/* xz-decompresses in into a buffer of at most RDMA_DEBUGDATA_MAX bytes. */
static int unxz(const void *in, size_t inlen, void **out, size_t *outlen)
{
	lzma_stream s = LZMA_STREAM_INIT;
	size_t cap = inlen * 4 > 65536 ? inlen * 4 : 65536;
	unsigned char *buf = NULL;
	lzma_ret r;

	if (lzma_stream_decoder(&s, RDMA_DEBUGDATA_MAX, 0) != LZMA_OK)
		return -ENOMEM;
	s.next_in = in;
	s.avail_in = inlen;
	do {
		if (!buf || !s.avail_out) {
			unsigned char *n;
			size_t used = buf ? (size_t)(s.next_out - buf) : 0;

			if (buf)
				cap *= 2;
			if (cap > RDMA_DEBUGDATA_MAX)
				cap = RDMA_DEBUGDATA_MAX;
			if (used == cap || !(n = realloc(buf, cap))) {
				r = LZMA_MEMLIMIT_ERROR;
				break;
			}
			buf = n;
			s.next_out = buf + used;
			s.avail_out = cap - used;
		}
		r = lzma_code(&s, LZMA_FINISH);
	} while (r == LZMA_OK);
	if (r != LZMA_STREAM_END) {
		lzma_end(&s);
		free(buf);
		return r == LZMA_MEMLIMIT_ERROR || r == LZMA_MEM_ERROR ? -E2BIG : -EBADMSG;
	}
	*outlen = (size_t)(s.next_out - buf);
	*out = buf;
	lzma_end(&s);
	return 0;
}

static int find_debugdata(struct rdma_debug_syms *d, const char *lib)
{
	Elf_Scn *scn = NULL;
	size_t shstr;

	if (elf_getshdrstrndx(d->lib, &shstr))
		return -ENOENT;
	while ((scn = elf_nextscn(d->lib, scn))) {
		const char *name;
		GElf_Shdr sh;
		Elf_Data *data;
		size_t len;
		void *mem;
		Elf *e;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(name = elf_strptr(d->lib, shstr, sh.sh_name)) ||
		    strcmp(name, ".gnu_debugdata"))
			continue;
		data = elf_rawdata(scn, NULL);
		if (!data || !data->d_buf || unxz(data->d_buf, data->d_size, &mem, &len))
			return -ENOENT;
		e = elf_memory(mem, len);
		if (!e || elf_kind(e) != ELF_K_ELF || !has_symtab(e)) {
			if (e)
				elf_end(e);
			free(mem);
			return -ENOENT;
		}
		d->dbg = e;
		d->dbg_mem = mem;
		d->how = "gnu-debugdata";
		snprintf(d->source, sizeof(d->source), "%s [.gnu_debugdata]", lib);
		return 0;
	}
	return -ENOENT;
}

int rdma_debug_open(const char *lib, int pid, const char *debug_root, int in_root,
		    struct rdma_debug_syms **out)
{
	struct rdma_debug_syms *d = calloc(1, sizeof(*d));

	*out = NULL;
	if (!d)
		return -ENOMEM;
	d->dbg_fd = -1;
	d->lib_fd = open(lib, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (d->lib_fd < 0) {
		int e = -errno;

		free(d);
		return e;
	}
	d->lib = elf_from_fd(d->lib_fd);
	if (!d->lib ||
	    (find_debug_file(d, pid, debug_root ? debug_root : RDMA_DEBUG_ROOT, in_root) &&
	     find_debugdata(d, lib))) {
		rdma_debug_close(d);
		return -ENOENT;
	}
	*out = d;
	return 0;
}

static int lib_vaddr_to_offset(Elf *e, __u64 vaddr, __u64 *off)
{
	size_t n;

	if (elf_getphdrnum(e, &n))
		return -ENOENT;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

int rdma_debug_find(const struct rdma_debug_syms *d, const char *name, __u64 *file_off)
{
	Elf_Scn *scn = NULL;
	bool found = false;
	__u64 vaddr = 0;

	while ((scn = elf_nextscn(d->dbg, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			const char *sn;
			GElf_Sym s;

			if (!gelf_getsym(data, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    s.st_shndx == SHN_UNDEF || !s.st_value)
				continue;
			sn = elf_strptr(d->dbg, sh.sh_link, s.st_name);
			if (!sn || strcmp(sn, name))
				continue;
			if (found && vaddr != s.st_value)
				return -ENOTUNIQ;
			vaddr = s.st_value;
			found = true;
		}
	}
	/* placed with the library's own headers: the code is there, not in the debug file */
	return found ? lib_vaddr_to_offset(d->lib, vaddr, file_off) : -ENOENT;
}

const char *rdma_debug_how(const struct rdma_debug_syms *d)
{
	return d->how;
}

const char *rdma_debug_source(const struct rdma_debug_syms *d)
{
	return d->source;
}

void rdma_debug_close(struct rdma_debug_syms *d)
{
	if (!d)
		return;
	if (d->dbg)
		elf_end(d->dbg);
	free(d->dbg_mem);
	if (d->dbg_fd >= 0)
		close(d->dbg_fd);
	if (d->lib)
		elf_end(d->lib);
	if (d->lib_fd >= 0)
		close(d->lib_fd);
	free(d);
}
