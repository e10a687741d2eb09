// SPDX-License-Identifier: GPL-2.0
/* Unit tests of netdev_tx_completes() (user/collect/netdev.c) over a made-up sysfs: a bus
 * device's driver completes transmissions (tx.ring), a virtual device does not. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collect/netdev.h"

static void test_tx_completes(void **state)
{
	char root[] = "/tmp/tt-sysfs-XXXXXX", drv[64];

	(void)state;
	assert_non_null(mkdtemp(root));
	{
		char cmd[1024];

		snprintf(cmd, sizeof(cmd),
			 "mkdir -p %s/class/net/eth9/device %s/class/net/veth0 "
			 "%s/bus/pci/drivers/ixgbe"
			 " && ln -s %s/bus/pci/drivers/ixgbe %s/class/net/eth9/device/driver",
			 root, root, root, root, root);
		assert_int_equal(system(cmd), 0);
	}
	assert_true(netdev_tx_completes(root, "eth9", drv, sizeof(drv)));
	assert_string_equal(drv, "ixgbe");
	assert_false(netdev_tx_completes(root, "veth0", drv, sizeof(drv)));
	assert_string_equal(drv, "virtual");
	assert_false(netdev_tx_completes(root, "nosuch", drv, sizeof(drv)));
	/* a name that would walk out of class/net is refused */
	assert_false(netdev_tx_completes(root, "../../bus", drv, sizeof(drv)));
	assert_false(netdev_tx_completes(root, "..", drv, sizeof(drv)));
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
		assert_int_equal(system(cmd), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tx_completes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
