/* SPDX-License-Identifier: GPL-2.0 */
/* TX timestamping on connections established before tailtrace attached. */
#ifndef TT_ARM_EXISTING_H
#define TT_ARM_EXISTING_H

struct bpf_program;

struct arm_existing_result {
	unsigned int netns_walked;	/* namespaces the iterator ran in */
	unsigned int netns_failed;	/* found but not entered or not iterated */
};

/* Runs the iter/tcp program once in every network namespace of a process or of
 * /run/netns; it arms the selected connections itself and counts them in its globals.
 * 0, or a negative errno when the iterator cannot run at all. */
int arm_existing_connections(struct bpf_program *iter_prog, struct arm_existing_result *res);

#endif
