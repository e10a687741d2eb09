/* SPDX-License-Identifier: GPL-2.0 */
/* What every tailtrace BPF header starts from: the kernel's types (vmlinux.h, from BTF),
 * libbpf's helpers, the structs shared with userspace, and the few kernel constants that
 * are macros, which BTF does not carry. */
#ifndef TT_KERNEL_DEFS_BPF_H
#define TT_KERNEL_DEFS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "tailtrace.h"

#define AF_INET      2
#define AF_INET6     10
#define ETH_P_IP     0x0800
#define ETH_P_IPV6   0x86DD
#define IPPROTO_TCP  6
#define TASK_RUNNING 0

/* TCP states (include/net/tcp_states.h) */
#define TCP_FIN_WAIT1_STATE  4
#define TCP_CLOSE_STATE      7
#define TCP_CLOSE_WAIT_STATE 8

/* TCP header flag bits (tcp_skb_cb.tcp_flags) */
#define TCPHDR_FIN 0x01
#define TCPHDR_ACK 0x10

/* TT_HDR(type, name, ptr): `name` points at the kernel object at `ptr` as `type`.
 * From 6.2 a kernel pointer is retyped without a helper call (bpf_rdonly_cast): the
 * verifier inlines the kfunc and each field is one load the JIT guards against faults (a
 * faulting load reads 0), where bpf_probe_read_kernel() costs a call and a copy. Older
 * kernels have no such kfunc, and an object that names one does not load there at all:
 * the compat object (built with TT_NO_KFUNCS, chosen at run time) copies the object with
 * a probe read instead, which also reads 0 where it faults. */
#ifdef TT_NO_KFUNCS
#define TT_HDR(type, name, ptr)                                                                    \
	type name##__copy = {};                                                                    \
	type *name = &name##__copy;                                                                \
	bpf_probe_read_kernel(name, sizeof(type), (const void *)(ptr))
#else
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
#define TT_HDR(type, name, ptr)                                                                    \
	type *name = (type *)bpf_rdonly_cast((ptr), bpf_core_type_id_kernel(type))
#endif

/* Whether a program was handed typed (BTF) pointers (tp_btf, fentry) or raw addresses
 * (kprobe): its fields are plain loads in the first case, probe reads in the second. The
 * callers pass a constant, so each program keeps one of the two. */
#define TT_READ(btf, ptr, field) ((btf) ? (ptr)->field : BPF_CORE_READ(ptr, field))
#define TT_READ_BITFIELD(btf, ptr, field)                                                          \
	((btf) ? BPF_CORE_READ_BITFIELD(ptr, field) : BPF_CORE_READ_BITFIELD_PROBED(ptr, field))

#endif
