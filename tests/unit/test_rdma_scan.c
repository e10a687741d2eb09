// SPDX-License-Identifier: GPL-2.0
/* Unit tests of user/rdma/rdma_scan.c: the context search on fabricated memory (decoys
 * that must not match), and on this process's own heap, where a real struct ibv_context
 * is placed at an address the test knows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <infiniband/verbs.h>
#include "rdma/rdma_scan.h"

static const struct rdma_scan_layout layout = {
	.fn_off = { offsetof(struct ibv_context, ops.post_send),
		    offsetof(struct ibv_context, ops.post_recv),
		    offsetof(struct ibv_context, ops.poll_cq) },
	.device_off = offsetof(struct ibv_context, device),
	.dev_size = sizeof(struct ibv_device),
	.dev_node_type_off = offsetof(struct ibv_device, node_type),
	.dev_transport_off = offsetof(struct ibv_device, transport_type),
	.dev_name_off = offsetof(struct ibv_device, name),
	.dev_dev_name_off = offsetof(struct ibv_device, dev_name),
	.dev_name_len = sizeof(((struct ibv_device *)0)->name),
};

static void put_ctx(__u8 *buf, size_t pos, __u64 dev, __u64 ps, __u64 pr, __u64 pc)
{
	memcpy(buf + pos + layout.device_off, &dev, 8);
	memcpy(buf + pos + layout.fn_off[RDMA_FN_POST_SEND], &ps, 8);
	memcpy(buf + pos + layout.fn_off[RDMA_FN_POST_RECV], &pr, 8);
	memcpy(buf + pos + layout.fn_off[RDMA_FN_POLL_CQ], &pc, 8);
}

static void test_buffer_finds_only_real_contexts(void **state)
{
	/* file 0: provider code at 0x7f0000001000..0x7f0000009000 (two ranges); file 1:
	 * another library right after it */
	static const struct rdma_exec_range r[] = {
		{ 0x7f0000001000, 0x7f0000005000, 0 },
		{ 0x7f0000005000, 0x7f0000009000, 0 },
		{ 0x7f0000009000, 0x7f000000a000, 1 },
	};
	struct rdma_scan_hit hits[8];
	__u8 *buf = calloc(1, 16384);
	__u64 cand = 0;
	size_t n;

	(void)state;
	/* decoys: pointers spread over two files, a repeated pointer, no device */
	put_ctx(buf, 1024, 0x5500000010, 0x7f0000001100, 0x7f0000009100, 0x7f0000001300);
	put_ctx(buf, 3072, 0x5500000010, 0x7f0000001100, 0x7f0000001100, 0x7f0000001300);
	put_ctx(buf, 5120, 0, 0x7f0000001100, 0x7f0000001200, 0x7f0000001300);
	put_ctx(buf, 7168, 0x5500000013, 0x7f0000001100, 0x7f0000001200, 0x7f0000001300);
	/* the real one, its functions in both code ranges of file 0 */
	put_ctx(buf, 9216, 0x5500000010, 0x7f0000001100, 0x7f0000006200, 0x7f0000001300);
	/* near the end: the struct would not fit, so it is not considered */
	memcpy(buf + 16384 - 8, &(__u64){ 0x7f0000001300 }, 8);
	n = rdma_scan_buffer(buf, 16384, 0x560000000000, &layout, r, 3, hits, 8, &cand);
	assert_int_equal(n, 1);
	assert_int_equal(hits[0].ctx, 0x560000000000 + 9216);
	assert_int_equal(hits[0].fn[RDMA_FN_POST_RECV], 0x7f0000006200);
	assert_int_equal(hits[0].fn[RDMA_FN_POLL_CQ], 0x7f0000001300);
	assert_true(cand >= 5);
	assert_int_equal(rdma_scan_buffer(buf, 16384, 0x560000000000, &layout, r, 0, hits, 8, NULL),
			 0);
	free(buf);
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	(void)wr;
	(void)bad;
	return 1;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp;
	(void)wr;
	(void)bad;
	return 2;
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	(void)cq;
	(void)n;
	(void)wc;
	return 3;
}

/* Ground truth: a context this process allocated itself, as a provider would. */
static void test_process_finds_own_heap_context(void **state)
{
	static struct ibv_device dev;
	struct ibv_context *ctx = calloc(1, sizeof(*ctx) + 256);
	struct rdma_scan_hit hits[RDMA_SCAN_MAX_HITS];
	struct rdma_scan_stats st;
	bool found = false;
	int n;

	(void)state;
	dev.node_type = IBV_NODE_CA;
	dev.transport_type = IBV_TRANSPORT_IB;
	snprintf(dev.name, sizeof(dev.name), "mlx5_0");
	snprintf(dev.dev_name, sizeof(dev.dev_name), "uverbs0");
	ctx->device = &dev;
	ctx->ops.post_send = fake_post_send;
	ctx->ops.post_recv = fake_post_recv;
	ctx->ops.poll_cq = fake_poll_cq;
	n = rdma_scan_process(getpid(), &layout, hits, RDMA_SCAN_MAX_HITS, &st);
	assert_true(n >= 1);
	for (int i = 0; i < n; i++) {
		if (hits[i].ctx != (__u64)(uintptr_t)ctx)
			continue;
		found = true;
		assert_int_equal(hits[i].fn[RDMA_FN_POST_SEND], (__u64)(uintptr_t)fake_post_send);
		assert_int_equal(hits[i].fn[RDMA_FN_POLL_CQ], (__u64)(uintptr_t)fake_poll_cq);
	}
	assert_true(found);
	assert_true(st.bytes_read > 0 && st.regions > 0);
	/* the same ops behind something that is not a device: rejected */
	dev.name[0] = '\0';
	n = rdma_scan_process(getpid(), &layout, hits, RDMA_SCAN_MAX_HITS, &st);
	for (int i = 0; i < n; i++)
		assert_true(hits[i].ctx != (__u64)(uintptr_t)ctx);
	assert_true(st.rejected >= 1);
	snprintf(dev.name, sizeof(dev.name), "mlx5_0");
	/* once its ops are gone, nothing is left to find there */
	explicit_bzero(&ctx->ops, sizeof(ctx->ops)); /* a plain memset before free() is elided */
	n = rdma_scan_process(getpid(), &layout, hits, RDMA_SCAN_MAX_HITS, &st);
	for (int i = 0; i < n; i++)
		assert_true(hits[i].ctx != (__u64)(uintptr_t)ctx);
	free(ctx);
	assert_int_equal(rdma_scan_process(4194000, &layout, hits, 1, &st), -2 /* ENOENT */);
}

static void test_device_plausible(void **state)
{
	struct ibv_device d;

	(void)state;
	memset(&d, 0, sizeof(d));
	d.node_type = IBV_NODE_CA;
	d.transport_type = IBV_TRANSPORT_IB;
	snprintf(d.name, sizeof(d.name), "ttsi0");
	snprintf(d.dev_name, sizeof(d.dev_name), "uverbs_ttsi0");
	assert_true(rdma_device_plausible((const __u8 *)&d, &layout));
	d.node_type = (enum ibv_node_type)0x41414141;
	assert_false(rdma_device_plausible((const __u8 *)&d, &layout));
	d.node_type = IBV_NODE_CA;
	d.dev_name[3] = '\n';
	assert_false(rdma_device_plausible((const __u8 *)&d, &layout));
	memset(d.dev_name, 'x', sizeof(d.dev_name)); /* no terminating NUL */
	assert_false(rdma_device_plausible((const __u8 *)&d, &layout));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buffer_finds_only_real_contexts),
		cmocka_unit_test(test_process_finds_own_heap_context),
		cmocka_unit_test(test_device_plausible),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
