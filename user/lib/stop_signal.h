/* SPDX-License-Identifier: GPL-2.0 */
/* Ctrl-C and SIGTERM end a command cleanly: the handler only sets a flag (no SA_RESTART,
 * so a blocking poll or sleep returns EINTR) and the command's loop checks it, detaches
 * and prints what it has. */
#ifndef TT_LIB_STOP_SIGNAL_H
#define TT_LIB_STOP_SIGNAL_H

#include <stdbool.h>

/* SIGINT and SIGTERM set the stop flag; SIGPIPE is ignored (a closed pipe is an error
 * from write, not a kill). */
void stop_signal_install(void);
bool stop_requested(void);

#endif
