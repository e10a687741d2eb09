/* SPDX-License-Identifier: GPL-2.0 */
/* What each RDMA port counter means, per provider: the one table the congestion-vs-transport
 * call reads. A counter is evidence only when its row says it counts a fault. */
#ifndef TT_RDMA_COUNTER_TABLE_H
#define TT_RDMA_COUNTER_TABLE_H

#include <stddef.h>

/* Providers with rows of their own; RDMA_PROV_ANY rows hold for every device (the IB
 * PMA counters of ports/N/counters, the PFC pause counters of ethtool). */
enum rdma_provider {
	RDMA_PROV_UNKNOWN,
	RDMA_PROV_ANY,
	RDMA_PROV_RXE,
	RDMA_PROV_SIW,
	RDMA_PROV_MLX5,
	RDMA_PROV_BNXT_RE,
	RDMA_PROV_IRDMA,
	RDMA_PROV_EFA,
	RDMA_PROV__MAX,
};

struct rdma_counter_meaning {
	int provider; /* enum rdma_provider */
	const char *name;
	int cls;            /* enum rdma_cnt_class: RCC_OTHER for normal operation */
	const char *means;  /* one line */
	const char *source; /* kernel file that defines and increments it */
};

/* The row for (provider, name): the provider's own first, then RDMA_PROV_ANY's; NULL when
 * neither has one. */
const struct rdma_counter_meaning *rdma_counter_meaning(int provider, const char *name);
/* The whole table (tests, docs). */
const struct rdma_counter_meaning *rdma_counter_table(size_t *n);
const char *rdma_provider_name(int provider);
/* The provider behind a device: from the kernel driver its device is bound to
 * (driver_name, e.g. "mlx5_core"; may be NULL), else from the device name's prefix
 * ("rxe0", "siw_eth0", "mlx5_0", "bnxt_re0", "irdma0", "efa_0"). */
int rdma_provider_of(const char *driver_name, const char *dev_name);

#endif
