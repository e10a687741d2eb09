/* SPDX-License-Identifier: GPL-2.0 */
/* Device name lookup across network namespaces: --dev names a device in this namespace or
 * in a named one (/run/netns), and the kernel side needs (netns inode, ifindex). */
#ifndef TT_NETDEV_H
#define TT_NETDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct netdev_ref {
	__u32 ifindex;
	__u32 netns;     /* inode of the network namespace */
	char nsname[64]; /* "" for the current namespace */
};

/* Accepts IFNAME or NSNAME/IFNAME. Returns 0, -ENODEV when no namespace has it, or
 * -EEXIST when the bare name exists in several namespaces (ask for NSNAME/IFNAME). */
int netdev_resolve(const char *spec, struct netdev_ref *out);

/* Whether tx.ring can be seen on a device of this namespace: its driver frees what it sent
 * when the hardware (or the hypervisor) completes it, which a bus device's driver does
 * (a NIC, virtio_net); a virtual device (veth, bridge, vlan, tun, lo, dummy) hands the
 * packet on or frees it inside its xmit. driver gets the driver's name, or "virtual".
 * sysfs_root: "/sys" (another for tests). */
bool netdev_tx_completes(const char *sysfs_root, const char *name, char *driver, size_t len);

#endif
