// SPDX-License-Identifier: GPL-2.0
/* Unit tests of user/rdma/rdma_counter_table.c and its use by rdma_counters.c: every row
 * says what it means and where it comes from, a device's provider is found from its driver,
 * its name or its counters, and on fabricated soft-RoCE trees a clean run (ack_deferred and
 * traffic rising every window) gives no call while sequence errors give a transport call. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "rdma/rdma_counters.h"
#include "rdma/rdma_counter_table.h"

static char root[PATH_MAX];

static void put(const char *rel, unsigned long long v)
{
	char path[PATH_MAX * 2], cmd[PATH_MAX * 3];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	assert_int_equal(system(cmd), 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%llu\n", v);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/tt_rdma_tab_XXXXXX");
	assert_non_null(mkdtemp(root));
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_rows_have_meaning_and_source(void **state)
{
	bool seen[RDMA_PROV__MAX] = { false };
	size_t n;
	const struct rdma_counter_meaning *t = rdma_counter_table(&n);

	(void)state;
	assert_true(n > 40);
	for (size_t i = 0; i < n; i++) {
		assert_true(t[i].means && strlen(t[i].means) > 5);
		assert_non_null(strstr(t[i].source, "drivers/infiniband/"));
		assert_true(t[i].cls == RCC_OTHER || t[i].cls == RCC_CONGESTION ||
			    t[i].cls == RCC_TRANSPORT);
		seen[t[i].provider] = true;
		/* one row per (provider, name) */
		for (size_t j = i + 1; j < n; j++)
			assert_false(t[j].provider == t[i].provider &&
				     !strcmp(t[j].name, t[i].name));
	}
	assert_true(seen[RDMA_PROV_RXE] && seen[RDMA_PROV_MLX5] && seen[RDMA_PROV_BNXT_RE] &&
		    seen[RDMA_PROV_IRDMA] && seen[RDMA_PROV_EFA] && seen[RDMA_PROV_ANY]);
}

static void test_meanings(void **state)
{
	(void)state;
	/* rxe's completer scheduling is normal operation; its sequence errors are faults */
	assert_int_equal(rdma_counter_class_for(RDMA_PROV_RXE, "ack_deferred", RCS_HW), RCC_OTHER);
	assert_int_equal(rdma_counter_class_for(RDMA_PROV_RXE, "rcvd_seq_err", RCS_HW),
			 RCC_TRANSPORT);
	assert_int_equal(rdma_counter_class_for(RDMA_PROV_RXE, "sent_pkts", RCS_HW), RCC_OTHER);
	/* a known provider's counter without a fault row is not evidence, whatever its name */
	assert_int_equal(rdma_counter_class_for(RDMA_PROV_RXE, "some_new_retry", RCS_HW),
			 RCC_OTHER);
	/* an unknown provider falls back to the name rules */
	assert_int_equal(rdma_counter_class_for(RDMA_PROV_UNKNOWN, "some_new_retry", RCS_HW),
			 RCC_TRANSPORT);
	/* generic PMA rows hold for every provider */
	assert_int_equal(rdma_counter_class_for(RDMA_PROV_SIW, "port_xmit_wait", RCS_PORT),
			 RCC_CONGESTION);
	assert_int_equal(rdma_counter_class_for(RDMA_PROV_MLX5, "np_cnp_sent", RCS_HW),
			 RCC_CONGESTION);
	assert_int_equal(rdma_counter_class_for(RDMA_PROV_EFA, "retrans_pkts", RCS_HW),
			 RCC_TRANSPORT);
	assert_int_equal(rdma_counter_class_for(RDMA_PROV_MLX5, "rx_prio3_pause", RCS_ETHTOOL),
			 RCC_CONGESTION);
	assert_string_equal(rdma_provider_name(RDMA_PROV_BNXT_RE), "bnxt_re");
	assert_int_equal(rdma_provider_of("mlx5_core", "rocep1s0f0"), RDMA_PROV_MLX5);
	assert_int_equal(rdma_provider_of(NULL, "siw_eth0"), RDMA_PROV_SIW);
	assert_int_equal(rdma_provider_of("efa", "rdmap16s27"), RDMA_PROV_EFA);
	assert_int_equal(rdma_provider_of(NULL, "rocep1s0f0"), RDMA_PROV_UNKNOWN);
}

#define RXE_CNT                                                                                    \
	X(sent_pkts)                                                                               \
	X(rcvd_pkts)                                                                               \
	X(ack_deferred)                                                                            \
	X(rcvd_seq_err) X(out_of_seq_request) X(duplicate_request) X(completer_retry_err)

static void write_rxe(const char *dev, const unsigned long long *v)
{
	char rel[256];
	int i = 0;

#define X(n)                                                                                       \
	snprintf(rel, sizeof(rel), "sys/class/infiniband/%s/ports/1/hw_counters/" #n, dev);        \
	put(rel, v[i++]);
	RXE_CNT
#undef X
}

/* A soft-RoCE device named by the user (no "rxe" in it): found by its counters, a clean run
 * rising ack_deferred and traffic every window gives no call, loss gives transport with
 * the sequence counters as evidence. */
static void test_rxe_clean_then_loss(void **state)
{
	unsigned long long v[7] = { 0 };
	struct rdma_counter_set a, b;
	struct rdma_counter_delta d[32];
	struct rdma_call_state *st = calloc(1, sizeof(*st));
	struct rdma_window_call c;
	char msg[256];
	size_t n;

	(void)state;
	assert_non_null(st);
	write_rxe("roce_lab", v);
	assert_int_equal(rdma_counters_read(root, &a, msg, sizeof(msg)), 0);
	for (size_t i = 0; i < a.n; i++)
		assert_int_equal(a.c[i].provider, RDMA_PROV_RXE);
	for (int w = 0; w < 6; w++) {
		/* clean traffic: packets and deferred ACKs, more in some windows than others */
		v[0] += 20000 + (unsigned)w * 7000;
		v[1] += 20000 + (unsigned)w * 7000;
		v[2] += 9000 + (unsigned)w * 4000;
		write_rxe("roce_lab", v);
		assert_int_equal(rdma_counters_read(root, &b, msg, sizeof(msg)), 0);
		n = rdma_counters_delta(&a, &b, d, 32);
		assert_int_equal(n, 7);
		rdma_counters_call(st, d, n, 1.0, &c);
		assert_int_equal(c.call, RDMA_CALL_NONE);
		rdma_counter_set__free(&a);
		a = b;
	}
	/* loss: the responder sees gaps, the requester sequence NAKs and retries */
	v[0] += 20000;
	v[1] += 20000;
	v[2] += 9000;
	v[3] += 40;
	v[4] += 38;
	v[6] += 12;
	write_rxe("roce_lab", v);
	assert_int_equal(rdma_counters_read(root, &b, msg, sizeof(msg)), 0);
	n = rdma_counters_delta(&a, &b, d, 32);
	rdma_counters_call(st, d, n, 1.0, &c);
	assert_int_equal(c.call, RDMA_CALL_TRANSPORT);
	assert_int_equal(c.transport_events, 90);
	assert_int_equal(c.nev, 3);
	assert_string_equal(c.ev[0].name, "rcvd_seq_err");
	assert_string_equal(c.ev[1].name, "out_of_seq_request");
	assert_string_equal(c.ev[2].name, "completer_retry_err");
	rdma_counter_set__free(&a);
	rdma_counter_set__free(&b);
	free(st);
}

/* The driver a device is bound to names its provider, whatever the device is called. */
static void test_provider_from_driver(void **state)
{
	char dir[PATH_MAX + 64], tgt[PATH_MAX + 64], lnk[PATH_MAX * 2], cmd[PATH_MAX * 3];
	struct rdma_counter_set s;
	char msg[256];

	(void)state;
	put("sys/class/infiniband/rocep1s0f0/ports/1/hw_counters/out_of_buffer", 3);
	snprintf(dir, sizeof(dir), "%s/drivers/mlx5_core", root);
	snprintf(tgt, sizeof(tgt), "%s/dev0", root);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' '%s'", dir, tgt);
	assert_int_equal(system(cmd), 0);
	snprintf(lnk, sizeof(lnk), "%s/driver", tgt);
	assert_int_equal(symlink(dir, lnk), 0);
	snprintf(lnk, sizeof(lnk), "%s/sys/class/infiniband/rocep1s0f0/device", root);
	assert_int_equal(symlink(tgt, lnk), 0);
	assert_int_equal(rdma_counters_read(root, &s, msg, sizeof(msg)), 0);
	for (size_t i = 0; i < s.n; i++) {
		if (strcmp(s.c[i].dev, "rocep1s0f0/1"))
			continue;
		assert_int_equal(s.c[i].provider, RDMA_PROV_MLX5);
		assert_int_equal(s.c[i].cls, RCC_TRANSPORT);
	}
	rdma_counter_set__free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_have_meaning_and_source),
		cmocka_unit_test(test_meanings),
		cmocka_unit_test(test_rxe_clean_then_loss),
		cmocka_unit_test(test_provider_from_driver),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
