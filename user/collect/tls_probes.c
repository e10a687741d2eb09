// SPDX-License-Identifier: GPL-2.0
/* --tls-uprobes: libssl found and its functions resolved (tls_probes.h). The file is
 * opened as the RDMA tracer opens a provider (rdma_map_open: below the process's root,
 * a regular file of the mapping's inode), and every offset comes from that file's symbol
 * tables, never from anything the traced process says. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "collect/tls_probes.h"
#include "lib/escape.h"
#include "rdma/rdma_proof.h"
#include "rdma/rdma_resolve.h"

static const char *const fn_names[TLS_FN__MAX] = {
	[TLS_FN_WRITE] = "SSL_write",
	[TLS_FN_WRITE_EX] = "SSL_write_ex",
	[TLS_FN_READ] = "SSL_read",
	[TLS_FN_READ_EX] = "SSL_read_ex",
};

const char *tls_fn_name(enum tls_fn fn)
{
	return fn < TLS_FN__MAX ? fn_names[fn] : "?";
}

bool tls_is_libssl(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libssl.so", 9) && (base[9] == '\0' || base[9] == '.');
}

/* The libssl mapping of pid. */
static int find_in_maps(int pid, struct proc_map *m)
{
	FILE *maps = proc_maps_open(pid);
	size_t cap = 0;
	char *line = NULL;
	int r = -ENOENT;

	if (!maps)
		return -errno;
	while (!proc_maps_next(maps, &line, &cap, m)) {
		if (m->path[0] == '/' && m->inode && tls_is_libssl(m->path)) {
			r = 0;
			break;
		}
	}
	free(line);
	fclose(maps);
	return r;
}

/* This host's libssl: $TAILTRACE_LIBSSL, else the first of the usual paths. */
static int find_on_host(struct proc_map *m)
{
	static const char *const paths[] = { "/usr/lib/x86_64-linux-gnu/libssl.so.3",
					     "/usr/lib/aarch64-linux-gnu/libssl.so.3",
					     "/usr/lib64/libssl.so.3",
					     "/usr/lib/x86_64-linux-gnu/libssl.so.1.1",
					     "/usr/lib/aarch64-linux-gnu/libssl.so.1.1",
					     "/usr/lib64/libssl.so.1.1" };
	const char *env = getenv("TAILTRACE_LIBSSL");
	struct stat st;

	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) + 1; i++) {
		const char *p = i == 0 ? env : paths[i - 1];

		if (!p || !*p)
			continue;
		if (stat(p, &st)) {
			if (i == 0)
				return -errno; /* the path asked for */
			continue;
		}
		if (strlen(p) >= sizeof(m->path))
			return -ENAMETOOLONG;
		strcpy(m->path, p);
		m->inode = st.st_ino;
		return 0;
	}
	return -ENOENT;
}

int tls_lib_open(int pid, struct tls_lib *lib, char *err, size_t errlen)
{
	struct proc_map m;
	int r;

	memset(lib, 0, sizeof(*lib));
	lib->fd = -1;
	r = pid > 0 ? find_in_maps(pid, &m) : find_on_host(&m);
	if (r) {
		if (pid > 0)
			snprintf(err, errlen,
				 "--tls-uprobes: process %d maps no libssl (a statically linked or "
				 "other TLS library is not covered): %s",
				 pid, strerror(-r));
		else
			snprintf(err, errlen,
				 "--tls-uprobes: libssl not found (set TAILTRACE_LIBSSL=PATH): %s",
				 strerror(-r));
		return r;
	}
	tt_escape(lib->shown, sizeof(lib->shown), m.path);
	r = rdma_map_open(pid > 0 ? pid : 0, &m);
	if (r < 0) {
		snprintf(err, errlen, "--tls-uprobes: cannot open %s: %s", lib->shown,
			 strerror(-r));
		return r;
	}
	lib->fd = r;
	rdma_fd_path(lib->fd, lib->path, sizeof(lib->path));
	for (int i = 0; i < TLS_FN__MAX; i++) {
		r = elf_find_function(lib->path, fn_names[i], &lib->off[i], NULL);
		if (r == -ENOENT && (i == TLS_FN_WRITE_EX || i == TLS_FN_READ_EX)) {
			lib->off[i] = 0;
			continue;
		}
		if (r || !lib->off[i]) {
			snprintf(err, errlen, "--tls-uprobes: %s not found in %s: %s", fn_names[i],
				 lib->shown, strerror(r ? -r : ENOENT));
			tls_lib_close(lib);
			return r ? r : -ENOENT;
		}
	}
	return 0;
}

void tls_lib_close(struct tls_lib *lib)
{
	if (lib->fd >= 0)
		close(lib->fd);
	lib->fd = -1;
}
