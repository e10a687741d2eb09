/* SPDX-License-Identifier: GPL-2.0 */
/* --tls-uprobes: finding OpenSSL's libssl (the -p process's mapping, else this host's) and
 * the file offsets of SSL_write, SSL_write_ex, SSL_read and SSL_read_ex in it, resolved
 * from the file's own symbol tables (docs/security.md). */
#ifndef TT_COLLECT_TLS_PROBES_H
#define TT_COLLECT_TLS_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

enum tls_fn {
	TLS_FN_WRITE,
	TLS_FN_WRITE_EX,
	TLS_FN_READ,
	TLS_FN_READ_EX,
	TLS_FN__MAX,
};

/* The library to probe, opened: fd (kept open until the probes are attached), path
 * "/proc/self/fd/N" for libbpf and libelf, shown: the name it has for the user. */
struct tls_lib {
	int fd;
	char path[64];
	char shown[4096];
	__u64 off[TLS_FN__MAX]; /* file offsets; 0: not in this library (the _ex ones before
				   OpenSSL 1.1.1) */
};

const char *tls_fn_name(enum tls_fn fn);
/* True for a mapped file's path that names libssl (libssl.so, libssl.so.3, ...). */
bool tls_is_libssl(const char *path);
/* Finds and opens the libssl of pid (> 0: the file its /proc/PID/maps names, opened below
 * its root), or this host's ($TAILTRACE_LIBSSL, else the usual paths), and resolves the
 * four functions. 0, or -errno with a one-line reason in err. */
int tls_lib_open(int pid, struct tls_lib *lib, char *err, size_t errlen);
void tls_lib_close(struct tls_lib *lib);

#endif
