// SPDX-License-Identifier: GPL-2.0
/* Where the RDMA data path lives: spec parsing, ELF symbol lookup and /proc/PID/maps
 * address mapping, kept free of BPF so the unit tests check them against ground truth
 * (the test binary's own functions and mappings). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "rdma/rdma_resolve.h"
#include "rdma/rdma_proof.h"
#include "lib/util.h"

static const char *const fn_names[RDMA_FN__MAX] = {
	[RDMA_FN_POST_SEND] = "post_send",
	[RDMA_FN_POST_RECV] = "post_recv",
	[RDMA_FN_POLL_CQ] = "poll_cq",
};

const char *rdma_fn_name(int fn)
{
	return fn >= 0 && fn < RDMA_FN__MAX ? fn_names[fn] : "?";
}

int rdma_fn_parse(const char *s)
{
	for (int i = 0; i < RDMA_FN__MAX; i++)
		if (!strcmp(s, fn_names[i]))
			return i;
	return -EINVAL;
}

int rdma_fn_from_symbol(const char *sym)
{
	/* srq receives complete with the receiving QP's number: not correlatable here */
	if (strstr(sym, "srq"))
		return -ENOENT;
	for (int i = 0; i < RDMA_FN__MAX; i++)
		if (strstr(sym, fn_names[i]))
			return i;
	return -ENOENT;
}

static int fail(char *err, size_t errlen, const char *fmt, const char *arg)
{
	snprintf(err, errlen, fmt, arg);
	return -EINVAL;
}

int rdma_spec_parse(const char *s, struct rdma_probe_spec *out, char *err, size_t errlen)
{
	const char *eq, *colon, *what;
	char role[16];

	memset(out, 0, sizeof(*out));
	out->role = -1;
	/* a role prefix is only taken as such when it names a role: paths may hold '=' */
	eq = strchr(s, '=');
	if (eq && (size_t)(eq - s) < sizeof(role)) {
		memcpy(role, s, (size_t)(eq - s));
		role[eq - s] = '\0';
		if (rdma_fn_parse(role) >= 0) {
			out->role = rdma_fn_parse(role);
			s = eq + 1;
		}
	}
	colon = strrchr(s, ':');
	if (!colon || colon == s || !colon[1])
		return fail(err, errlen,
			    "invalid --rdma-probe '%s' (expected [ROLE=]LIB:SYMBOL or "
			    "[ROLE=]LIB:0xOFFSET)",
			    s);
	if ((size_t)(colon - s) >= sizeof(out->lib))
		return fail(err, errlen, "--rdma-probe library path too long: '%s'", s);
	memcpy(out->lib, s, (size_t)(colon - s));
	out->lib[colon - s] = '\0';
	what = colon + 1;
	if (!strncmp(what, "0x", 2) || !strncmp(what, "0X", 2)) {
		char *end;

		errno = 0;
		out->offset = strtoull(what + 2, &end, 16);
		if (errno || end == what + 2 || *end)
			return fail(err, errlen, "invalid offset in --rdma-probe '%s'", s);
		out->has_offset = true;
		if (out->role < 0)
			return fail(err, errlen,
				    "--rdma-probe '%s': an offset needs a role, e.g. "
				    "post_send=LIB:0x1a2b (post_send, post_recv, poll_cq)",
				    s);
		return 0;
	}
	if (strlen(what) >= sizeof(out->symbol))
		return fail(err, errlen, "--rdma-probe symbol too long: '%s'", s);
	for (const char *p = what; *p; p++)
		if (!(*p == '_' || *p == '.' || *p == '@' || (*p >= '0' && *p <= '9') ||
		      (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
			return fail(err, errlen, "invalid symbol name in --rdma-probe '%s'", s);
	strcpy(out->symbol, what);
	if (out->role < 0)
		out->role = rdma_fn_from_symbol(what);
	if (out->role < 0)
		return fail(err, errlen,
			    "--rdma-probe '%s': cannot tell what the symbol is; prefix a role "
			    "(post_send=, post_recv=, poll_cq=)",
			    s);
	return 0;
}

/* ---- ELF ---- */

int elf_vaddr_to_offset(Elf *e, __u64 vaddr, __u64 *off)
{
	size_t n;

	if (elf_getphdrnum(e, &n))
		return -ENOEXEC;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_memsz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

Elf *elf_open_checked(const char *path, int *fd)
{
	struct stat st;
	Elf *e;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	/* O_NONBLOCK: a FIFO or device given as a library must not block the open */
	*fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (*fd < 0)
		return NULL;
	if (fstat(*fd, &st) || !S_ISREG(st.st_mode) || rdma_size_ok(st.st_size, RDMA_ELF_MAX)) {
		int err = !S_ISREG(st.st_mode) ? ENOEXEC : EFBIG;

		close(*fd);
		*fd = -1;
		errno = err;
		return NULL;
	}
	e = elf_begin(*fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(*fd);
		*fd = -1;
		errno = ENOEXEC;
		return NULL;
	}
	return e;
}

/* Looks in one symbol table; versym (may be NULL) marks hidden compat versions. */
static int search_table(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, Elf_Data *versym,
			const char *name, __u64 *vaddr)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	bool found = false, found_hidden = false;
	__u64 hidden_addr = 0;

	if (!d)
		return -ENOENT;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym s;
		const char *sn;

		if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		if (GELF_ST_TYPE(s.st_info) != STT_FUNC)
			continue;
		sn = elf_strptr(e, sh->sh_link, s.st_name);
		if (!sn || strcmp(sn, name))
			continue;
		if (versym) {
			GElf_Versym v;

			if (gelf_getversym(versym, (int)i, &v) && (v & 0x8000)) {
				found_hidden = true;
				hidden_addr = s.st_value;
				continue;
			}
		}
		if (found && *vaddr != s.st_value)
			return -ENOTUNIQ;
		*vaddr = s.st_value;
		found = true;
	}
	if (!found && found_hidden) {
		/* only a compat version exists: that is what callers bind to */
		*vaddr = hidden_addr;
		found = true;
	}
	return found ? 0 : -ENOENT;
}

int elf_find_function(const char *path, const char *name, __u64 *file_off, bool *from_symtab)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Shdr sh_sym, sh_dyn;
	Elf_Data *versym = NULL;
	__u64 vaddr = 0;
	int fd, err = -ENOENT;
	Elf *e;

	e = elf_open_checked(path, &fd);
	if (!e)
		return -errno;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			symtab = scn;
			sh_sym = sh;
		} else if (sh.sh_type == SHT_DYNSYM) {
			dynsym = scn;
			sh_dyn = sh;
		} else if (sh.sh_type == SHT_GNU_versym) {
			versym = elf_getdata(scn, NULL);
		}
	}
	if (symtab) {
		err = search_table(e, symtab, &sh_sym, NULL, name, &vaddr);
		if (!err && from_symtab)
			*from_symtab = true;
	}
	if (err == -ENOENT && dynsym) {
		err = search_table(e, dynsym, &sh_dyn, versym, name, &vaddr);
		if (!err && from_symtab)
			*from_symtab = false;
	}
	if (!err)
		err = elf_vaddr_to_offset(e, vaddr, file_off);
	elf_end(e);
	close(fd);
	return err;
}

int elf_has_symtab(const char *path)
{
	Elf_Scn *scn = NULL;
	int fd, has = 0;
	Elf *e;

	e = elf_open_checked(path, &fd);
	if (!e)
		return -errno;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			has = 1;
	}
	elf_end(e);
	close(fd);
	return has;
}

/* ---- /proc/PID/maps ---- */

int proc_map_parse(const char *line, struct proc_map *m)
{
	unsigned long long start, end, pgoff, inode;
	unsigned int dmaj, dmin;
	char perms[8];
	int pos = 0;
	size_t n;

	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu%n", &start, &end, perms, &pgoff, &dmaj,
		   &dmin, &inode, &pos) != 7 ||
	    start >= end || strlen(perms) != 4)
		return -EINVAL;
	m->start = start;
	m->end = end;
	m->pgoff = pgoff;
	m->inode = inode;
	memcpy(m->perms, perms, 5);
	line += pos;
	while (*line == ' ' || *line == '\t')
		line++;
	n = strcspn(line, "\n");
	/* a path this long cannot be opened anyway; cut, it would name another file */
	if (n >= sizeof(m->path))
		return -ENAMETOOLONG;
	memcpy(m->path, line, n);
	m->path[n] = '\0';
	return 0;
}

int proc_maps_next(FILE *maps, char **line, size_t *cap, struct proc_map *m)
{
	/* getline: a line is read whole whatever its length, so a long path cannot split
	 * into a second, forged line */
	while (getline(line, cap, maps) > 0)
		if (!proc_map_parse(*line, m))
			return 0;
	return -ENOENT;
}

int proc_maps_find(FILE *maps, __u64 addr, struct proc_map *m, __u64 *file_off)
{
	char *line = NULL;
	size_t cap = 0;
	int err = -ENOENT;

	while (!proc_maps_next(maps, &line, &cap, m)) {
		if (addr < m->start || addr >= m->end)
			continue;
		/* anonymous memory, [vdso], or a file that was deleted/replaced */
		if (m->inode && m->path[0] == '/') {
			*file_off = addr - m->start + m->pgoff;
			err = 0;
		}
		break;
	}
	free(line);
	return err;
}

FILE *proc_maps_open(int pid)
{
	char mp[64];

	snprintf(mp, sizeof(mp), "/proc/%d/maps", pid);
	return fopen(mp, "re");
}

int rdma_addr_to_file(int pid, __u64 addr, struct proc_map *m, __u64 *file_off)
{
	FILE *f = proc_maps_open(pid);
	int err;

	if (!f)
		return -errno;
	err = proc_maps_find(f, addr, m, file_off);
	fclose(f);
	return err;
}

static const char *const lib_dirs[] = {
	"/usr/lib/x86_64-linux-gnu",
	"/lib/x86_64-linux-gnu",
	"/usr/lib/aarch64-linux-gnu",
	"/lib/aarch64-linux-gnu",
	"/usr/lib64",
	"/lib64",
	"/usr/lib",
	"/lib",
	"/usr/local/lib",
	"/usr/lib/x86_64-linux-gnu/libibverbs",
	"/usr/lib/aarch64-linux-gnu/libibverbs",
	"/usr/lib64/libibverbs",
};

static bool name_matches(const char *file, const char *want)
{
	const char *base = strrchr(file, '/');
	size_t n = strlen(want);

	base = base ? base + 1 : file;
	/* "libmlx5.so" names "libmlx5.so.1" and "libmlx5.so.1.24.44.0" too */
	return !strcmp(base, want) || (!strncmp(base, want, n) && base[n] == '.');
}

/* Opens a library file of this host (a path or a library directory's entry), as a
 * regular file. */
static int open_host_file(const char *path)
{
	struct proc_map m = { .inode = 1 };
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode) || strlen(path) >= sizeof(m.path))
		return -ENOENT;
	m.inode = st.st_ino;
	strcpy(m.path, path);
	return rdma_map_open(0, &m);
}

int rdma_find_library(int pid, const char *lib, char *path, size_t pathlen, int *fd)
{
	if (strchr(lib, '/')) {
		*fd = open_host_file(lib);
		if (*fd < 0)
			return -ENOENT;
		snprintf(path, pathlen, "%s", lib);
		return 0;
	}
	if (pid > 0) {
		FILE *f = proc_maps_open(pid);
		struct proc_map m;
		char *line = NULL;
		size_t cap = 0;

		*fd = -1;
		while (f && *fd < 0 && !proc_maps_next(f, &line, &cap, &m))
			if (m.inode && m.path[0] == '/' && name_matches(m.path, lib) &&
			    (*fd = rdma_map_open(pid, &m)) >= 0)
				snprintf(path, pathlen, "%s", m.path);
		free(line);
		if (f)
			fclose(f);
		if (*fd >= 0)
			return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(lib_dirs); i++) {
		snprintf(path, pathlen, "%s/%s", lib_dirs[i], lib);
		*fd = open_host_file(path);
		if (*fd >= 0)
			return 0;
	}
	return -ENOENT;
}

int rdma_find_exported(int pid, const char *sym, const char *fallback, char *path, size_t pathlen,
		       __u64 *file_off, int *fd)
{
	char last[PATH_MAX] = "", fdp[32];
	struct proc_map m;
	char *line = NULL;
	size_t cap = 0;
	FILE *f;

	if (pid <= 0) {
		if (!fallback || rdma_find_library(0, fallback, path, pathlen, fd))
			return -ENOENT;
		rdma_fd_path(*fd, fdp, sizeof(fdp));
		if (!elf_find_function(fdp, sym, file_off, NULL))
			return 0;
		close(*fd);
		*fd = -1;
		return -ENOENT;
	}
	f = proc_maps_open(pid);
	if (!f)
		return -errno;
	*fd = -1;
	while (!proc_maps_next(f, &line, &cap, &m)) {
		if (!m.inode || m.path[0] != '/' || !strcmp(m.path, last))
			continue;
		snprintf(last, sizeof(last), "%s", m.path);
		*fd = rdma_map_open(pid, &m);
		if (*fd < 0)
			continue;
		rdma_fd_path(*fd, fdp, sizeof(fdp));
		if (!elf_find_function(fdp, sym, file_off, NULL)) {
			snprintf(path, pathlen, "%s", m.path);
			break;
		}
		close(*fd);
		*fd = -1;
	}
	free(line);
	fclose(f);
	return *fd >= 0 ? 0 : -ENOENT;
}
