// SPDX-License-Identifier: GPL-2.0
/* tailtrace's kernel side: one object so the TCP, scheduler and request code share the
 * per-socket state; each concern lives in its own header below. */
#include "kernel_defs.bpf.h"
#include "sock.bpf.h"
#include "nic.bpf.h"
#include "tx.bpf.h"
#include "rx.bpf.h"
#include "framing.bpf.h"
#include "loss.bpf.h"
#include "sched.bpf.h"

char LICENSE[] SEC("license") = "GPL";
