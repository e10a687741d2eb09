// SPDX-License-Identifier: GPL-2.0
/* The stage table, expanded from bpf/stage_catalogue.h: behind docs/stages.md, `probe`
 * and every output. */
#include <errno.h>
#include <string.h>
#include "core/stages.h"
#include "probe.bpf.h"

#define STAGE_ROW(sid, nm, cls, fl, knd, tracepoints, hk, dsc, tst)                                \
	[STAGE_##sid] = { .id = STAGE_##sid,                                                       \
			  .name = nm,                                                              \
			  .class = CLASS_##cls,                                                    \
			  .flags = fl,                                                             \
			  .kind = knd,                                                             \
			  .tps = tracepoints,                                                      \
			  .hook = hk,                                                              \
			  .desc = dsc,                                                             \
			  .test = tst },

static const struct stage_info stages[STAGE__MAX] = { TT_STAGE_CATALOGUE(STAGE_ROW) };

/* request events carry per-stage times for the stages before the RDMA ones; the stages
 * after them (per CPU or per device, never inside one request) cost a request nothing */
_Static_assert(STAGE_RDMA_WR == TT_REQ_STAGES && STAGE_RDMA_CQ_EVENT == STAGE_RDMA_WR + 1 &&
		       STAGE_RDMA_UCX == STAGE_RDMA_CQ_EVENT + 1,
	       "the RDMA stages follow the request stages in bpf/stage_catalogue.h");

const struct stage_info *stage_info(enum tt_stage id)
{
	if ((unsigned)id >= STAGE__MAX)
		return NULL;
	return &stages[id];
}

bool stage_flow_sampled(enum tt_stage id, bool devs)
{
	const struct stage_info *si = stage_info(id);

	if (si && (si->flags & SF_NIC))
		return false;
	/* with --dev the place stages left (tx.qdisc, tx.nic) time every packet there */
	return !(devs && si && (si->flags & SF_PLACE_DEV));
}

int stage_by_name(const char *name)
{
	for (int i = 0; i < STAGE__MAX; i++)
		if (!strcmp(stages[i].name, name))
			return i;
	return -ENOENT;
}

/* Names a stage had in recordings before it was renamed: segments keep stages by name. */
static const struct {
	const char *old;
	int stage;
} renamed[] = {
	{ "rdma.ucx", STAGE_RDMA_UCX }, /* an operation's issue to its request's completion */
};

int stage_by_recorded_name(const char *name)
{
	int s = stage_by_name(name);

	for (size_t i = 0; s < 0 && i < sizeof(renamed) / sizeof(renamed[0]); i++)
		if (!strcmp(renamed[i].old, name))
			s = renamed[i].stage;
	return s;
}

int stages_with(unsigned int flags, int *out, int max)
{
	int n = 0;

	for (int i = 0; i < STAGE__MAX && n < max; i++)
		if ((stages[i].flags & flags) == flags)
			out[n++] = i;
	return n;
}

const char *class_name(enum tt_class c)
{
	static const char *const names[CLASS__MAX] = {
#define X(id, name) [CLASS_##id] = name,
		TT_CLASSES(X)
#undef X
	};

	return (unsigned)c < CLASS__MAX ? names[c] : "?";
}

static const char *const group_names[GROUP__MAX] = { "none", "port",   "raddr",
						     "comm", "cgroup", "pod" };

const char *group_by_name(enum tt_group_by by)
{
	return (unsigned)by < GROUP__MAX ? group_names[by] : "?";
}

int group_by_parse(const char *s)
{
	for (int i = 0; i < GROUP__MAX; i++)
		if (!strcmp(group_names[i], s))
			return i;
	return -EINVAL;
}
