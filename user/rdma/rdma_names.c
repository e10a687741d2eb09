// SPDX-License-Identifier: GPL-2.0
/* Names of verbs work-request opcodes and completion statuses, as `tailtrace rdma` and the
 * exports print them. */
#include <infiniband/verbs.h>
#include "rdma/rdma_tracer.h"
#include "lib/util.h"

const char *rdma_opcode_name(__u8 op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
		return "RDMA_WRITE";
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return "RDMA_WRITE_IMM";
	case IBV_WR_SEND:
		return "SEND";
	case IBV_WR_SEND_WITH_IMM:
		return "SEND_IMM";
	case IBV_WR_RDMA_READ:
		return "RDMA_READ";
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return "ATOMIC_CAS";
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return "ATOMIC_FAA";
	case IBV_WR_LOCAL_INV:
		return "LOCAL_INV";
	case IBV_WR_BIND_MW:
		return "BIND_MW";
	case IBV_WR_SEND_WITH_INV:
		return "SEND_INV";
	case IBV_WR_TSO:
		return "TSO";
	case RDMA_OP_RECV:
		return "RECV";
	case RDMA_OP_UNKNOWN:
		return "UNKNOWN";
	default:
		return "OTHER";
	}
}

const char *rdma_status_name(__u8 status)
{
	/* libibverbs' ibv_wc_status_str() would need linking libibverbs: names kept here */
	static const char *const names[] = {
		"SUCCESS",
		"LOC_LEN_ERR",
		"LOC_QP_OP_ERR",
		"LOC_EEC_OP_ERR",
		"LOC_PROT_ERR",
		"WR_FLUSH_ERR",
		"MW_BIND_ERR",
		"BAD_RESP_ERR",
		"LOC_ACCESS_ERR",
		"REM_INV_REQ_ERR",
		"REM_ACCESS_ERR",
		"REM_OP_ERR",
		"RETRY_EXC_ERR",
		"RNR_RETRY_EXC_ERR",
		"LOC_RDD_VIOL_ERR",
		"REM_INV_RD_REQ_ERR",
		"REM_ABORT_ERR",
		"INV_EECN_ERR",
		"INV_EEC_STATE_ERR",
		"FATAL_ERR",
		"RESP_TIMEOUT_ERR",
		"GENERAL_ERR",
		"TM_ERR",
		"TM_RNDV_INCOMPLETE",
	};

	return status < ARRAY_SIZE(names) ? names[status] : "UNKNOWN_STATUS";
}

const char *rdma_ucx_op_name(__u8 op)
{
	static const char *const names[UCX_OP__MAX] = {
		[UCX_OP_PUT] = "PUT",
		[UCX_OP_GET] = "GET",
		[UCX_OP_TAG_SEND] = "TAG_SEND",
		[UCX_OP_AM_SEND] = "AM_SEND",
		[UCX_OP_STREAM_SEND] = "STREAM_SEND",
		[UCX_OP_TAG_RECV] = "TAG_RECV",
		[UCX_OP_STREAM_RECV] = "STREAM_RECV",
	};

	return op < UCX_OP__MAX && names[op] ? names[op] : "OTHER";
}
