/* SPDX-License-Identifier: GPL-2.0 */
/* Privilege checks made before touching BPF, so a missing capability gets one clear line. */
#ifndef TT_PRIVS_H
#define TT_PRIVS_H

#include <stdbool.h>

/* Returns 0 when the process has CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN); otherwise
 * -EPERM with the missing capabilities named in `missing`. */
int privs_check(char *missing, unsigned long len);
/* True when the capability (CAP_*) is in the effective set. */
bool privs_have(int cap);
/* Fails with one line (and exit status 1 from the caller) when privileges are missing. */
bool privs_require(void);

#endif
