/* SPDX-License-Identifier: GPL-2.0 */
/* Escaping of strings that come from other processes (comm, paths, labels) before they
 * reach a terminal: control characters, DEL and backslash become \xNN, so a name cannot
 * move the cursor, retitle the window or forge an output line. */
#ifndef TT_ESCAPE_H
#define TT_ESCAPE_H

#include <stddef.h>

/* Writes in escaped into out (always terminated when outlen > 0, cut at a whole escape).
 * Returns the length the whole escaped string needs, like snprintf. */
size_t tt_escape(char *out, size_t outlen, const char *in);
/* tt_escape into one of a few rotating static buffers (4 KiB each, cut beyond): for one
 * log or output line; not thread-safe. */
const char *tt_esc(const char *in);

#endif
