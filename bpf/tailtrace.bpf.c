// SPDX-License-Identifier: GPL-2.0
/* tailtrace's kernel side: one object so the TCP, scheduler and request code share the
 * per-socket state; each concern lives in its own header below. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "tailtrace.h"
#include "maps.bpf.h"
#include "flow.bpf.h"
#include "sched.bpf.h"
#include "requests.bpf.h"
#include "sends.bpf.h"
#include "tcp.bpf.h"

char LICENSE[] SEC("license") = "GPL";
