// SPDX-License-Identifier: GPL-2.0
/* Unit tests of user/rdma/rdma_counters.c on fabricated sysfs/ethtool trees (no root, no RDMA
 * hardware): reading, garbage and missing files, window deltas and the
 * congestion-vs-transport call. */
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

static char root[PATH_MAX];
static char msg[256];

static void mkdirs(const char *path)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(tmp, 0755);
		*p = '/';
	}
	mkdir(tmp, 0755);
}

static void put(const char *rel, const char *content)
{
	char path[PATH_MAX * 2], dir[PATH_MAX * 2];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	mkdirs(dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static void putu(const char *rel, unsigned long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu\n", v);
	put(rel, buf);
}

#define HW "sys/class/infiniband/mlx5_0/ports/1/hw_counters/"
#define PC "sys/class/infiniband/mlx5_0/ports/1/counters/"

static void make_tree(void)
{
	putu(HW "np_cnp_sent", 10);
	putu(HW "rp_cnp_handled", 4);
	putu(HW "np_ecn_marked_roce_packets", 20);
	putu(HW "out_of_sequence", 0);
	putu(HW "local_ack_timeout_err", 1);
	putu(HW "rx_write_requests", 100000);
	putu(PC "port_xmit_wait", 500);
	putu(PC "port_rcv_data", 123456789);
	put("sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "eth2\n");
	put("sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/1", "eth2\n");
	put("ethtool/eth2", "NIC statistics:\n"
			    "     rx_packets: 12345\n"
			    "     rx_prio3_pause: 7\n"
			    "     rx_prio3_pause_duration: 300\n"
			    "     tx_prio3_pause: 2\n");
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/tt_rdma_cnt_XXXXXX");
	assert_non_null(mkdtemp(root));
	make_tree();
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static const struct rdma_counter *get(const struct rdma_counter_set *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->c[i].name, name))
			return &s->c[i];
	return NULL;
}

static void test_read_tree(void **state)
{
	struct rdma_counter_set s;
	const struct rdma_counter *c;

	(void)state;
	assert_int_equal(rdma_counters_read(root, &s, msg, sizeof(msg)), 0);
	assert_int_equal(s.ndevs, 1);
	assert_int_equal(s.nports, 1);
	assert_int_equal(s.nnetdevs, 1); /* eth2 twice in ndevs/ is one netdev */
	assert_int_equal(s.nwarn_total, 0);
	c = get(&s, "np_cnp_sent");
	assert_non_null(c);
	assert_int_equal(c->value, 10);
	assert_string_equal(c->dev, "mlx5_0/1");
	assert_int_equal(c->source, RCS_HW);
	assert_int_equal(c->cls, RCC_CONGESTION);
	c = get(&s, "port_xmit_wait");
	assert_non_null(c);
	assert_int_equal(c->source, RCS_PORT);
	assert_int_equal(c->cls, RCC_CONGESTION);
	assert_int_equal(get(&s, "out_of_sequence")->cls, RCC_TRANSPORT);
	assert_int_equal(get(&s, "rx_write_requests")->cls, RCC_OTHER);
	c = get(&s, "rx_prio3_pause");
	assert_non_null(c);
	assert_int_equal(c->value, 7);
	assert_string_equal(c->dev, "eth2");
	assert_int_equal(c->source, RCS_ETHTOOL);
	assert_int_equal(get(&s, "rx_prio3_pause_duration")->value, 300);
	assert_null(get(&s, "rx_packets")); /* only pause counters from ethtool */
	assert_int_equal(s.n, 8 + 3);
	rdma_counter_set__free(&s);
}

static void test_missing_root_and_devices(void **state)
{
	struct rdma_counter_set s;
	char empty[PATH_MAX + 64];

	(void)state;
	msg[0] = '\0';
	assert_int_equal(rdma_counters_read("/nonexistent/tt", &s, msg, sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, "/nonexistent/tt/sys/class/infiniband"));
	assert_null(strchr(msg, '\n'));
	rdma_counter_set__free(&s);
	/* the class directory exists but holds no device */
	snprintf(empty, sizeof(empty), "%s/empty/sys/class/infiniband", root);
	mkdirs(empty);
	snprintf(empty, sizeof(empty), "%s/empty", root);
	assert_int_equal(rdma_counters_read(empty, &s, msg, sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, "no RDMA devices"));
	rdma_counter_set__free(&s);
}

static void test_garbage_values_warn(void **state)
{
	struct rdma_counter_set s;

	(void)state;
	put(HW "np_cnp_sent", "not-a-number\n");
	put(HW "rp_cnp_handled", "");
	put(HW "out_of_sequence", "12 34\n");
	put("sys/class/infiniband/mlx5_1/README", "a device without ports\n");
	assert_int_equal(rdma_counters_read(root, &s, msg, sizeof(msg)), 0);
	assert_null(get(&s, "np_cnp_sent"));
	assert_null(get(&s, "rp_cnp_handled"));
	assert_null(get(&s, "out_of_sequence"));
	assert_int_equal(s.ndevs, 1);
	assert_int_equal(s.nwarn_total, 4);
	for (unsigned int i = 0; i < s.nwarn; i++)
		assert_null(strchr(s.warn[i], '\n'));
	rdma_counter_set__free(&s);
	snprintf(msg, sizeof(msg), "rm -rf '%.200s/sys/class/infiniband/mlx5_1'", root);
	assert_int_equal(system(msg), 0);
	make_tree();
}

static void test_missing_ethtool_file(void **state)
{
	char path[PATH_MAX + 32];
	struct rdma_counter_set s;

	(void)state;
	snprintf(path, sizeof(path), "%s/ethtool/eth2", root);
	unlink(path);
	assert_int_equal(rdma_counters_read(root, &s, msg, sizeof(msg)), 0);
	assert_null(get(&s, "rx_prio3_pause"));
	assert_int_equal(s.nwarn_total, 1);
	assert_non_null(strstr(s.warn[0], "eth2"));
	assert_non_null(get(&s, "np_cnp_sent"));
	rdma_counter_set__free(&s);
	make_tree();
}

static void test_netdev_from_device_net(void **state)
{
	char path[PATH_MAX + 64];
	struct rdma_counter_set s;

	(void)state;
	/* no gid_attrs (InfiniBand link layer, older kernels): the PCI device's net/ */
	snprintf(path, sizeof(path), "rm -rf '%s/sys/class/infiniband/mlx5_0/ports/1/gid_attrs'",
		 root);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/mlx5_0/device/net/ib0", root);
	mkdirs(path);
	put("ethtool/ib0", "     rx_pause_ctrl_phy: 9\n");
	assert_int_equal(rdma_counters_read(root, &s, msg, sizeof(msg)), 0);
	assert_non_null(get(&s, "rx_pause_ctrl_phy"));
	assert_string_equal(get(&s, "rx_pause_ctrl_phy")->dev, "ib0");
	rdma_counter_set__free(&s);
	make_tree();
}

static void test_ethtool_parse(void **state)
{
	struct rdma_counter_set s = { 0 };

	(void)state;
	assert_int_equal(rdma_ethtool_parse("NIC statistics:\n"
					    "     rx_prio0_pause: 1\n"
					    "     tx_pause_ctrl_phy: 18446744073709551615\n"
					    "     rx_prio1_pause: garbage\n"
					    "no colon here\n"
					    "     rx_crc_errors: 4",
					    "eth0", &s),
			 2);
	assert_int_equal(s.c[1].value, 18446744073709551615ull);
	rdma_counter_set__free(&s);
}

static void read_set(struct rdma_counter_set *s)
{
	assert_int_equal(rdma_counters_read(root, s, msg, sizeof(msg)), 0);
}

static const struct rdma_counter_delta *dget(const struct rdma_counter_delta *d, size_t n,
					     const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(d[i].c->name, name))
			return &d[i];
	return NULL;
}

static void test_delta_and_reset(void **state)
{
	struct rdma_counter_set a, b;
	struct rdma_counter_delta d[64];
	size_t n;

	(void)state;
	read_set(&a);
	putu(HW "np_cnp_sent", 60);
	putu(PC "port_xmit_wait", 100); /* went backwards: counter reset */
	putu(HW "new_counter_this_window", 5);
	read_set(&b);
	n = rdma_counters_delta(&a, &b, d, 64);
	assert_int_equal(n, a.n); /* the new counter has no baseline */
	assert_null(dget(d, n, "new_counter_this_window"));
	assert_int_equal(dget(d, n, "np_cnp_sent")->delta, 50);
	assert_false(dget(d, n, "np_cnp_sent")->reset);
	assert_true(dget(d, n, "port_xmit_wait")->reset);
	assert_int_equal(dget(d, n, "port_xmit_wait")->delta, 100);
	assert_int_equal(dget(d, n, "rx_write_requests")->delta, 0);
	assert_int_equal(rdma_counters_delta(&a, &b, NULL, 0), n);
	rdma_counter_set__free(&a);
	rdma_counter_set__free(&b);
	make_tree();
}

/* d[] with one entry per named counter; values are the deltas */
static size_t mk_deltas(struct rdma_counter *cs, struct rdma_counter_delta *d,
			const char *const *names, const __u64 *deltas, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		memset(&cs[i], 0, sizeof(cs[i]));
		snprintf(cs[i].dev, sizeof(cs[i].dev), "mlx5_0/1");
		snprintf(cs[i].name, sizeof(cs[i].name), "%s", names[i]);
		cs[i].cls = (__u8)rdma_counter_class(names[i]);
		d[i].c = &cs[i];
		d[i].delta = deltas[i];
		d[i].reset = false;
	}
	return n;
}

static void test_call(void **state)
{
	static const char *const names[] = { "np_cnp_sent", "rx_prio3_pause", "out_of_sequence",
					     "local_ack_timeout_err", "rx_write_requests" };
	struct rdma_call_state *st = calloc(1, sizeof(*st));
	struct rdma_counter cs[5];
	struct rdma_counter_delta d[5];
	struct rdma_window_call c;
	__u64 quiet[5] = { 10, 5, 0, 0, 100000 };

	(void)state;
	assert_non_null(st);
	/* first window: anything that moves rises */
	mk_deltas(cs, d, names, quiet, 5);
	rdma_counters_call(st, d, 5, 1.0, &c);
	assert_int_equal(c.call, RDMA_CALL_CONGESTION);
	/* a steady level becomes the baseline: no call */
	for (int i = 0; i < 5; i++)
		rdma_counters_call(st, d, 5, 1.0, &c);
	assert_int_equal(c.call, RDMA_CALL_NONE);
	assert_int_equal(c.nev, 0);
	/* CNPs triple, pauses burst: congestion, largest delta first */
	{
		__u64 v[5] = { 30, 400, 0, 0, 100000 };

		mk_deltas(cs, d, names, v, 5);
		rdma_counters_call(st, d, 5, 1.0, &c);
		assert_int_equal(c.call, RDMA_CALL_CONGESTION);
		assert_int_equal(c.nev, 2);
		assert_string_equal(c.ev[0].name, "rx_prio3_pause");
		assert_string_equal(c.ev[1].name, "np_cnp_sent");
		assert_int_equal(c.congestion_events, 430);
	}
	/* back to quiet, then a transport problem only */
	mk_deltas(cs, d, names, quiet, 5);
	for (int i = 0; i < 8; i++)
		rdma_counters_call(st, d, 5, 1.0, &c);
	{
		__u64 v[5] = { 10, 5, 3, 1, 100000 };

		mk_deltas(cs, d, names, v, 5);
		rdma_counters_call(st, d, 5, 1.0, &c);
		assert_int_equal(c.call, RDMA_CALL_TRANSPORT);
		assert_int_equal(c.transport_events, 4);
	}
	/* both at once */
	{
		__u64 v[5] = { 500, 5, 50, 0, 100000 };

		mk_deltas(cs, d, names, v, 5);
		rdma_counters_call(st, d, 5, 1.0, &c);
		assert_int_equal(c.call, RDMA_CALL_BOTH);
	}
	/* traffic counters never make a call */
	{
		__u64 v[5] = { 0, 0, 0, 0, 99999999 };
		struct rdma_call_state *fresh = calloc(1, sizeof(*fresh));

		mk_deltas(cs, d, names, v, 5);
		rdma_counters_call(fresh, d, 5, 1.0, &c);
		assert_int_equal(c.call, RDMA_CALL_NONE);
		free(fresh);
	}
	/* rates, not counts: the same delta over a 10x longer window is quieter */
	{
		struct rdma_call_state *s2 = calloc(1, sizeof(*s2));
		__u64 v[5] = { 10, 0, 0, 0, 0 };

		mk_deltas(cs, d, names, v, 5);
		rdma_counters_call(s2, d, 5, 1.0, &c);
		rdma_counters_call(s2, d, 5, 1.0, &c);
		v[0] = 50;
		mk_deltas(cs, d, names, v, 5);
		rdma_counters_call(s2, d, 5, 10.0, &c);
		assert_int_equal(c.call, RDMA_CALL_NONE);
		free(s2);
	}
	free(st);
}

static void test_class_names(void **state)
{
	(void)state;
	assert_int_equal(rdma_counter_class("packet_seq_err"), RCC_TRANSPORT);
	assert_int_equal(rdma_counter_class("roce_slow_restart_cnps"), RCC_CONGESTION);
	assert_int_equal(rdma_counter_class("tx_prio5_pause_duration"), RCC_CONGESTION);
	assert_int_equal(rdma_counter_class("rx_atomic_requests"), RCC_OTHER);
	assert_string_equal(rdma_call_name(RDMA_CALL_BOTH), "congestion+transport");
	assert_string_equal(rdma_counter_class_name(RCC_TRANSPORT), "transport");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_tree),
		cmocka_unit_test(test_missing_root_and_devices),
		cmocka_unit_test(test_garbage_values_warn),
		cmocka_unit_test(test_missing_ethtool_file),
		cmocka_unit_test(test_netdev_from_device_net),
		cmocka_unit_test(test_ethtool_parse),
		cmocka_unit_test(test_delta_and_reset),
		cmocka_unit_test(test_call),
		cmocka_unit_test(test_class_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
