/* SPDX-License-Identifier: GPL-2.0 */
/* Diagnostics: one error line ("tailtrace: error: ..." or {"error": ...} under -j),
 * and libbpf's own messages only with -v. */
#ifndef TT_LOG_H
#define TT_LOG_H

#include <stdbool.h>
#include <stddef.h>

void log_setup(bool json, int verbose);
void tt_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tt_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool log_verbose(void);
/* From now on, the name of the first program libbpf says failed to relocate or load goes
 * into name (emptied here); len 0 stops. */
void log_catch_failed_prog(char *name, size_t len);

#endif
