// SPDX-License-Identifier: GPL-2.0
/* The meaning of each RDMA port counter, per provider, with the kernel file each row was read
 * from (paths under the Linux source tree). Only rows whose class is congestion or
 * transport can be evidence in the call (rdma_counters.c); counters of normal operation
 * (traffic volume, ACK coalescing, resources in use) are RCC_OTHER. */
#include <string.h>
#include "rdma/rdma_counters.h"
#include "rdma/rdma_counter_table.h"
#include "lib/util.h"

#define T RCC_TRANSPORT
#define C RCC_CONGESTION
#define O RCC_OTHER

#define RXE    "drivers/infiniband/sw/rxe/rxe_hw_counters.c"
#define MLX5   "drivers/infiniband/hw/mlx5/counters.c"
#define BNXT   "drivers/infiniband/hw/bnxt_re/hw_counters.c"
#define IRDMA  "drivers/infiniband/hw/irdma/verbs.c"
#define EFA    "drivers/infiniband/hw/efa/efa_verbs.c"
#define IBCORE "drivers/infiniband/core/sysfs.c"

static const struct rdma_counter_meaning table[] = {
	/* soft-RoCE: names in rxe_hw_counters.c, increments in rxe_resp.c, rxe_comp.c,
	 * rxe_req.c, rxe_net.c */
	{ RDMA_PROV_RXE, "sent_pkts", O, "packets sent", RXE },
	{ RDMA_PROV_RXE, "rcvd_pkts", O, "packets received", RXE },
	{ RDMA_PROV_RXE, "rdma_sends", O, "RDMA sends", RXE },
	{ RDMA_PROV_RXE, "rdma_recvs", O, "RDMA receives", RXE },
	{ RDMA_PROV_RXE, "ack_deferred", O,
	  "completer work deferred to its task (RXE_CNT_COMPLETER_SCHED): rises with every "
	  "burst of ACKs on a clean run",
	  RXE },
	{ RDMA_PROV_RXE, "duplicate_request", T,
	  "responder got a request it had already executed: the requester retransmitted", RXE },
	{ RDMA_PROV_RXE, "out_of_seq_request", T,
	  "responder got a request past the expected PSN: packets lost before it", RXE },
	{ RDMA_PROV_RXE, "rcvd_seq_err", T, "requester got a sequence-error NAK (loss)", RXE },
	{ RDMA_PROV_RXE, "completer_retry_err", T,
	  "requester retransmitting after a timeout or NAK", RXE },
	{ RDMA_PROV_RXE, "retry_exceeded_err", T, "transport retries exhausted: QP in error", RXE },
	{ RDMA_PROV_RXE, "rcvd_rnr_err", T, "requester got an RNR NAK (receiver not ready)", RXE },
	{ RDMA_PROV_RXE, "send_rnr_err", T, "responder sent an RNR NAK (no receive posted)", RXE },
	{ RDMA_PROV_RXE, "retry_rnr_exceeded_err", T, "RNR retries exhausted: QP in error", RXE },
	{ RDMA_PROV_RXE, "send_err", T, "packet could not be handed to the netdev", RXE },
	{ RDMA_PROV_RXE, "link_downed", T, "the netdev below went down", RXE },

	/* mlx5: names in counters.c, meanings from the PRM's q_counters / cong counters */
	{ RDMA_PROV_MLX5, "rx_write_requests", O, "RDMA WRITE requests received", MLX5 },
	{ RDMA_PROV_MLX5, "rx_read_requests", O, "RDMA READ requests received", MLX5 },
	{ RDMA_PROV_MLX5, "rx_atomic_requests", O, "atomic requests received", MLX5 },
	{ RDMA_PROV_MLX5, "out_of_buffer", T, "packets dropped: no receive WQE (RNR)", MLX5 },
	{ RDMA_PROV_MLX5, "out_of_sequence", T, "packets received out of sequence (loss)", MLX5 },
	{ RDMA_PROV_MLX5, "duplicate_request", T, "duplicate requests received (retransmits)",
	  MLX5 },
	{ RDMA_PROV_MLX5, "rnr_nak_retry_err", T, "RNR NAK retries exhausted", MLX5 },
	{ RDMA_PROV_MLX5, "packet_seq_err", T, "sequence-error NAKs received", MLX5 },
	{ RDMA_PROV_MLX5, "implied_nak_seq_err", T, "implied sequence NAKs (READ/atomic loss)",
	  MLX5 },
	{ RDMA_PROV_MLX5, "local_ack_timeout_err", T, "ACK timeouts of the requester", MLX5 },
	{ RDMA_PROV_MLX5, "req_cqe_error", T, "requester completions with an error", MLX5 },
	{ RDMA_PROV_MLX5, "resp_cqe_error", T, "responder completions with an error", MLX5 },
	{ RDMA_PROV_MLX5, "req_remote_access_errors", T, "remote access errors", MLX5 },
	{ RDMA_PROV_MLX5, "req_remote_invalid_request", T, "remote invalid requests", MLX5 },
	{ RDMA_PROV_MLX5, "roce_adp_retrans", T, "adaptive retransmissions", MLX5 },
	{ RDMA_PROV_MLX5, "roce_adp_retrans_to", T, "adaptive retransmission timeouts", MLX5 },
	{ RDMA_PROV_MLX5, "roce_slow_restart", T, "slow restarts after retransmission", MLX5 },
	{ RDMA_PROV_MLX5, "np_cnp_sent", C, "CNPs sent (ECN-marked packets received)", MLX5 },
	{ RDMA_PROV_MLX5, "np_ecn_marked_roce_packets", C, "ECN-marked RoCE packets received",
	  MLX5 },
	{ RDMA_PROV_MLX5, "rp_cnp_handled", C, "CNPs handled: sender slowed down", MLX5 },
	{ RDMA_PROV_MLX5, "rp_cnp_ignored", C, "CNPs received and ignored", MLX5 },
	{ RDMA_PROV_MLX5, "roce_slow_restart_cnps", C, "CNPs during slow restart", MLX5 },

	/* bnxt_re: names in hw_counters.c */
	{ RDMA_PROV_BNXT_RE, "rx_pkts", O, "packets received", BNXT },
	{ RDMA_PROV_BNXT_RE, "tx_pkts", O, "packets sent", BNXT },
	{ RDMA_PROV_BNXT_RE, "active_qps", O, "QPs in use", BNXT },
	{ RDMA_PROV_BNXT_RE, "to_retransmits", T, "retransmissions after a timeout", BNXT },
	{ RDMA_PROV_BNXT_RE, "seq_err_naks_rcvd", T, "sequence-error NAKs received", BNXT },
	{ RDMA_PROV_BNXT_RE, "max_retry_exceeded", T, "retries exhausted", BNXT },
	{ RDMA_PROV_BNXT_RE, "rnr_naks_rcvd", T, "RNR NAKs received", BNXT },
	{ RDMA_PROV_BNXT_RE, "missing_resp", T, "responses never received", BNXT },
	{ RDMA_PROV_BNXT_RE, "dup_req", T, "duplicate requests received", BNXT },
	{ RDMA_PROV_BNXT_RE, "res_oos_drop_count", T, "out-of-sequence packets dropped", BNXT },
	{ RDMA_PROV_BNXT_RE, "rx_roce_discards", T, "RoCE packets discarded on receive", BNXT },
	{ RDMA_PROV_BNXT_RE, "tx_cnp", C, "CNPs sent", BNXT },
	{ RDMA_PROV_BNXT_RE, "rx_cnp", C, "CNPs received", BNXT },
	{ RDMA_PROV_BNXT_RE, "rx_ecn_marked", C, "ECN-marked packets received", BNXT },

	/* irdma (RoCEv2 and iWARP): names in verbs.c (irdma_hw_stat_names) */
	{ RDMA_PROV_IRDMA, "ip4InReceives", O, "IPv4 packets received", IRDMA },
	{ RDMA_PROV_IRDMA, "ip4InDiscards", T, "IPv4 packets discarded on receive", IRDMA },
	{ RDMA_PROV_IRDMA, "ip6InDiscards", T, "IPv6 packets discarded on receive", IRDMA },
	{ RDMA_PROV_IRDMA, "tcpRetransSegs", T, "iWARP TCP segments retransmitted", IRDMA },
	{ RDMA_PROV_IRDMA, "tcpInProtoErrors", T, "iWARP TCP protocol errors", IRDMA },
	{ RDMA_PROV_IRDMA, "cnpHandled", C, "CNPs handled: sender slowed down", IRDMA },
	{ RDMA_PROV_IRDMA, "cnpIgnored", C, "CNPs ignored", IRDMA },
	{ RDMA_PROV_IRDMA, "cnpSent", C, "CNPs sent", IRDMA },
	{ RDMA_PROV_IRDMA, "RxECNMrkd", C, "ECN-marked packets received", IRDMA },

	/* EFA (SRD): names in efa_verbs.c (efa_port_stats_descs) */
	{ RDMA_PROV_EFA, "tx_pkts", O, "packets sent", EFA },
	{ RDMA_PROV_EFA, "rx_pkts", O, "packets received", EFA },
	{ RDMA_PROV_EFA, "send_wrs", O, "send WRs", EFA },
	{ RDMA_PROV_EFA, "rx_drops", T, "packets dropped on receive", EFA },
	{ RDMA_PROV_EFA, "retrans_pkts", T, "packets retransmitted", EFA },
	{ RDMA_PROV_EFA, "retrans_timeout_events", T, "retransmission timeouts", EFA },
	{ RDMA_PROV_EFA, "unresponsive_remote_events", T, "peers that stopped answering", EFA },
	{ RDMA_PROV_EFA, "rdma_read_wr_err", T, "RDMA READ WRs failed", EFA },
	{ RDMA_PROV_EFA, "rdma_write_wr_err", T, "RDMA WRITE WRs failed", EFA },
	{ RDMA_PROV_EFA, "impaired_remote_conn_events", C,
	  "connections to a peer slowed down by the fabric", EFA },

	/* every device: the IB PMA counters of ports/N/counters (core/sysfs.c) */
	{ RDMA_PROV_ANY, "port_xmit_data", O, "data sent", IBCORE },
	{ RDMA_PROV_ANY, "port_rcv_data", O, "data received", IBCORE },
	{ RDMA_PROV_ANY, "port_xmit_packets", O, "packets sent", IBCORE },
	{ RDMA_PROV_ANY, "port_rcv_packets", O, "packets received", IBCORE },
	{ RDMA_PROV_ANY, "port_xmit_wait", C, "ticks with data to send and no credit", IBCORE },
	{ RDMA_PROV_ANY, "port_xmit_discards", C, "packets discarded: port down or congested",
	  IBCORE },
	{ RDMA_PROV_ANY, "symbol_error", T, "symbol errors on the link", IBCORE },
	{ RDMA_PROV_ANY, "port_rcv_errors", T, "malformed packets received", IBCORE },
	{ RDMA_PROV_ANY, "link_downed", T, "link went down", IBCORE },
	{ RDMA_PROV_ANY, "link_error_recovery", T, "link error recoveries", IBCORE },
	{ RDMA_PROV_ANY, "local_link_integrity_errors", T, "local link integrity errors", IBCORE },
	{ RDMA_PROV_ANY, "port_rcv_remote_physical_errors", T, "packets with a remote EBP",
	  IBCORE },
	{ RDMA_PROV_ANY, "excessive_buffer_overrun_errors", T, "receive buffer overruns", IBCORE },
	{ RDMA_PROV_ANY, "VL15_dropped", T, "management packets dropped", IBCORE },
	{ RDMA_PROV_ANY, "port_rcv_constraint_errors", T, "packets dropped by partition checks",
	  IBCORE },
	{ RDMA_PROV_ANY, "port_xmit_constraint_errors", T, "packets not sent: partition checks",
	  IBCORE },
};

#undef T
#undef C
#undef O

const struct rdma_counter_meaning *rdma_counter_table(size_t *n)
{
	*n = ARRAY_SIZE(table);
	return table;
}

const struct rdma_counter_meaning *rdma_counter_meaning(int provider, const char *name)
{
	const struct rdma_counter_meaning *any = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		if (strcmp(table[i].name, name))
			continue;
		if (table[i].provider == provider)
			return &table[i];
		if (table[i].provider == RDMA_PROV_ANY && !any)
			any = &table[i];
	}
	return any;
}

const char *rdma_provider_name(int provider)
{
	static const char *const names[RDMA_PROV__MAX] = {
		[RDMA_PROV_UNKNOWN] = "unknown", [RDMA_PROV_ANY] = "any",
		[RDMA_PROV_RXE] = "rxe",         [RDMA_PROV_SIW] = "siw",
		[RDMA_PROV_MLX5] = "mlx5",       [RDMA_PROV_BNXT_RE] = "bnxt_re",
		[RDMA_PROV_IRDMA] = "irdma",     [RDMA_PROV_EFA] = "efa",
	};

	return provider >= 0 && provider < RDMA_PROV__MAX ? names[provider] : "unknown";
}

int rdma_provider_of(const char *driver_name, const char *dev_name)
{
	static const struct {
		const char *prefix;
		int provider;
	} drivers[] = { { "mlx5", RDMA_PROV_MLX5 },   { "bnxt", RDMA_PROV_BNXT_RE },
			{ "irdma", RDMA_PROV_IRDMA }, { "ice", RDMA_PROV_IRDMA },
			{ "i40e", RDMA_PROV_IRDMA },  { "efa", RDMA_PROV_EFA } },
	  names[] = { { "rxe", RDMA_PROV_RXE },     { "siw", RDMA_PROV_SIW },
		      { "mlx5_", RDMA_PROV_MLX5 },  { "bnxt_re", RDMA_PROV_BNXT_RE },
		      { "irdma", RDMA_PROV_IRDMA }, { "efa_", RDMA_PROV_EFA } };

	for (size_t i = 0; driver_name && i < ARRAY_SIZE(drivers); i++)
		if (!strncmp(driver_name, drivers[i].prefix, strlen(drivers[i].prefix)))
			return drivers[i].provider;
	for (size_t i = 0; dev_name && i < ARRAY_SIZE(names); i++)
		if (!strncmp(dev_name, names[i].prefix, strlen(names[i].prefix)))
			return names[i].provider;
	return RDMA_PROV_UNKNOWN;
}
