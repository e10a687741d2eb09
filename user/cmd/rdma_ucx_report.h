/* SPDX-License-Identifier: GPL-2.0 */
/* The UCX part of `tailtrace rdma`'s reports: UCP operation latency (rdma.ucx_op) and
 * round trips (rdma.ucx_rtt) per process, endpoint and operation, failures by status,
 * and what the UCX hooks counted. */
#ifndef TT_CMD_RDMA_UCX_REPORT_H
#define TT_CMD_RDMA_UCX_REPORT_H

#include <stdbool.h>
#include <linux/types.h>
#include "rdma/rdma_tracer.h"

struct json_writer;

/* total: the rows' run-long histograms, else the interval's; cnt: counters to show. */
void rdma_ucx_print_text(const struct rdma_read *rd, const struct rdma_ucx_info *u, bool total,
			 const __u64 *cnt);
void rdma_ucx_json(struct json_writer *w, const struct rdma_read *rd, const struct rdma_ucx_info *u,
		   bool total, const __u64 *cnt);

#endif
