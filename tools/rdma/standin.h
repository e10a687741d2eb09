/* SPDX-License-Identifier: GPL-2.0 */
/* Control API of the stand-in verbs provider (libttstandin.so): lets the test application
 * decide when and how each work request completes. Everything else the application
 * reaches through the real infiniband/verbs.h, exactly as it would with rdma-core. */
#ifndef TT_STANDIN_H
#define TT_STANDIN_H

#include <stdint.h>
#include <infiniband/verbs.h>

/* The next WR posted on qp with this wr_id completes delay_ns after its post, with
 * status (IBV_WC_SUCCESS or an error). WRs without a plan complete immediately. */
int ttsi_plan(struct ibv_qp *qp, uint64_t wr_id, uint64_t delay_ns, enum ibv_wc_status status);
/* From now on each queue of qp completes its WRs in the order they were posted, as an RC
 * queue of real hardware does (by default the stand-in completes each WR at its planned
 * time, out of order). */
void ttsi_qp_in_order(struct ibv_qp *qp);
/* CLOCK_MONOTONIC ns at which the provider last signalled cq's completion channel. */
uint64_t ttsi_cq_last_event_ns(struct ibv_cq *cq);

#endif
