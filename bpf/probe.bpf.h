/* SPDX-License-Identifier: GPL-2.0 */
/* Hook kinds `tailtrace probe` tries, shared by probe.bpf.c and user/collect/kernel_caps.c. */
#ifndef TT_PROBE_H
#define TT_PROBE_H

enum probe_kind {
	PK_TP_BTF,
	PK_RAW_TP,
	PK_TRACEPOINT,
	PK_KPROBE,
	PK_FENTRY,
	PK_UPROBE,
	PK_SOCKOPS_TSTAMP,
	PK_TC,
	PK_XDP,
	PK__MAX,
};

/* Helpers a program needs beyond its hook kind: each is loaded (not attached) once to see
 * whether the verifier accepts the call. */
enum probe_feature {
	PFEAT_SK_COOKIE, /* bpf_get_socket_cookie() on a socket in tracing programs (5.12+) */
	PFEAT_FOR_EACH,  /* bpf_for_each_map_elem() (5.13+) */
	PFEAT__MAX,
};

/* What the sockops TX timestamping probe saw fire, indexed by callback. */
enum probe_tstamp_cb {
	PT_SENDMSG,
	PT_SCHED,
	PT_SND_SW,
	PT_SND_HW,
	PT_ACK,
	PT__MAX,
};

#endif
