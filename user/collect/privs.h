/* SPDX-License-Identifier: GPL-2.0 */
/* Privilege checks made before touching BPF, so a missing capability gets one clear line. */
#ifndef TT_PRIVS_H
#define TT_PRIVS_H

#include <stdbool.h>

/* True when the capability (CAP_*) is in the effective set. */
bool privs_have(int cap);
/* Fails with one line (and exit status 1 from the caller) when privileges are missing. */
bool privs_require(void);

#endif
