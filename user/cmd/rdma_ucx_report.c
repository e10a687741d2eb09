// SPDX-License-Identifier: GPL-2.0
/* rdma.ucx_op and rdma.ucx_rtt rows of `tailtrace rdma`, text and JSON. An endpoint is
 * named by its ucp_ep_h address in the process: UCX keeps the peer's identity in private
 * structures. A round's row is the endpoint and operation of the send that opened it. */
#include <stdio.h>
#include <string.h>
#include "cmd/rdma_ucx_report.h"
#include "cmd/stage_report.h"
#include "core/histogram.h"
#include "core/stages.h"
#include "lib/json.h"
#include "lib/format.h"

static const struct hist *row_of(const struct rdma_row *r, bool total)
{
	return total ? &r->total : &r->win;
}

static __u64 ep_of(const struct rdma_hist_key *k)
{
	return (__u64)k->peer_qpn << 32 | k->qpn;
}

static bool ucx_stage(__u16 stage)
{
	return stage == STAGE_RDMA_UCX || stage == STAGE_RDMA_UCX_RTT;
}

static bool ucx_row(const struct rdma_row *r, __u16 stage, bool total, bool errors)
{
	return r->key.stage == stage && !r->key.status == !errors && row_of(r, total)->count;
}

static void text_rows(const struct rdma_read *rd, __u16 stage, bool total)
{
	for (size_t i = 0; i < rd->nrows; i++) {
		const struct rdma_row *r = &rd->rows[i];

		if (!ucx_row(r, stage, total, false))
			continue;
		printf("  %-13s %7u %#17llx %-14s ", stage_info(stage)->name, r->key.tgid,
		       (unsigned long long)ep_of(&r->key), rdma_ucx_op_name(r->key.opcode));
		hist_summary_print_row(stdout, row_of(r, total));
	}
}

void rdma_ucx_print_text(const struct rdma_read *rd, const struct rdma_ucx_info *u, bool total,
			 const __u64 *cnt)
{
	if (!u)
		return;
	text_rows(rd, STAGE_RDMA_UCX, total);
	text_rows(rd, STAGE_RDMA_UCX_RTT, total);
	for (size_t i = 0; i < rd->nrows; i++) {
		const struct rdma_row *r = &rd->rows[i];

		if (ucx_stage(r->key.stage) && ucx_row(r, r->key.stage, total, true))
			printf("  ucx error     %s pid %u ep %#llx %s: %llu failed (status -%u)\n",
			       stage_info(r->key.stage)->name, r->key.tgid,
			       (unsigned long long)ep_of(&r->key), rdma_ucx_op_name(r->key.opcode),
			       (unsigned long long)row_of(r, total)->count, r->key.status);
	}
	printf("  ucx           %llu operations (%llu completed in the call), %llu requests "
	       "completed, %llu receives completed, %llu failed, %llu rounds restarted; "
	       "UCX_TLS %s; %d completion callback%s hooked\n",
	       (unsigned long long)cnt[RC_UCX_OPS], (unsigned long long)cnt[RC_UCX_IMMEDIATE],
	       (unsigned long long)cnt[RC_UCX_COMPLETED], (unsigned long long)cnt[RC_UCX_RECVS],
	       (unsigned long long)cnt[RC_UCX_ERRORS], (unsigned long long)cnt[RC_UCX_RTT_STALE],
	       u->tls, u->ncb, u->ncb == 1 ? "" : "s");
}

/* One stage's rows as key (an array) and key_all (their sum). */
static void json_stage(struct json_writer *w, const struct rdma_read *rd, __u16 stage, bool total,
		       const char *key, const char *key_all)
{
	struct hist all;
	char b[32];

	memset(&all, 0, sizeof(all));
	jw_array_begin(w, key);
	for (size_t i = 0; i < rd->nrows; i++) {
		const struct rdma_row *r = &rd->rows[i];

		if (!ucx_row(r, stage, total, false))
			continue;
		hist_add(&all, row_of(r, total));
		jw_object_begin(w, NULL);
		jw_uint(w, "pid", r->key.tgid);
		snprintf(b, sizeof(b), "0x%llx", (unsigned long long)ep_of(&r->key));
		jw_string(w, "ep", b);
		jw_string(w, "op", rdma_ucx_op_name(r->key.opcode));
		hist_summary_print_json(w, row_of(r, total));
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_object_begin(w, key_all);
	hist_summary_print_json(w, &all);
	jw_object_end(w);
}

static void json_rows(struct json_writer *w, const struct rdma_read *rd, bool total)
{
	char b[32];

	json_stage(w, rd, STAGE_RDMA_UCX, total, "ops", "ops_all");
	json_stage(w, rd, STAGE_RDMA_UCX_RTT, total, "rtt", "rtt_all");
	jw_array_begin(w, "errors");
	for (size_t i = 0; i < rd->nrows; i++) {
		const struct rdma_row *r = &rd->rows[i];

		if (!ucx_stage(r->key.stage) || !ucx_row(r, r->key.stage, total, true))
			continue;
		jw_object_begin(w, NULL);
		jw_string(w, "stage", stage_info(r->key.stage)->name);
		jw_uint(w, "pid", r->key.tgid);
		snprintf(b, sizeof(b), "0x%llx", (unsigned long long)ep_of(&r->key));
		jw_string(w, "ep", b);
		jw_string(w, "op", rdma_ucx_op_name(r->key.opcode));
		jw_int(w, "status", -(int)r->key.status);
		jw_uint(w, "count", row_of(r, total)->count);
		jw_object_end(w);
	}
	jw_array_end(w);
}

void rdma_ucx_json(struct json_writer *w, const struct rdma_read *rd, const struct rdma_ucx_info *u,
		   bool total, const __u64 *cnt)
{
	char b[32];

	if (!u)
		return;
	jw_object_begin(w, "ucx");
	jw_string(w, "lib", u->lib);
	jw_string(w, "tls", u->tls);
	json_rows(w, rd, total);
	jw_uint(w, "operations", cnt[RC_UCX_OPS]);
	jw_uint(w, "immediate", cnt[RC_UCX_IMMEDIATE]);
	jw_uint(w, "completed", cnt[RC_UCX_COMPLETED]);
	jw_uint(w, "receives", cnt[RC_UCX_RECVS]);
	jw_uint(w, "rounds_restarted", cnt[RC_UCX_RTT_STALE]);
	jw_uint(w, "failed", cnt[RC_UCX_ERRORS]);
	jw_uint(w, "replaced", cnt[RC_UCX_REPLACED]);
	jw_uint(w, "inflight_update_fail", cnt[RC_UCX_INFLIGHT_FAIL]);
	jw_uint(w, "callback_events_lost", cnt[RC_UCX_CB_LOST]);
	jw_array_begin(w, "callbacks");
	for (int i = 0; i < u->ncb; i++) {
		jw_object_begin(w, NULL);
		jw_string(w, "path", u->cb[i].path);
		snprintf(b, sizeof(b), "0x%llx", (unsigned long long)u->cb[i].offset);
		jw_string(w, "offset", b);
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_object_end(w);
}
