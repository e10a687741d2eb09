// SPDX-License-Identifier: GPL-2.0
/* Which kernel hooks each stage needs (the catalogue's columns), and whether this kernel
 * has them. Pure, so `probe` and the collector agree and tests can drive it with fake caps. */
#include <stdio.h>
#include <string.h>
#include "collect/kernel_caps.h"
#include "core/stages.h"

void stage_feed_of(const struct kernel_caps *c, enum tt_stage s, struct stage_feed *out)
{
	const struct stage_info *r = stage_info(s);

	memset(out, 0, sizeof(*out));
	out->hook = "none";
	if (!r) {
		snprintf(out->why, sizeof(out->why), "no hook known");
		return;
	}
	out->hook = r->hook;
	if (!c->btf) {
		snprintf(out->why, sizeof(out->why), "no kernel BTF (tp_btf and CO-RE need it)");
		return;
	}
	if (r->kind >= 0 && !c->kinds[r->kind].available) {
		snprintf(out->why, sizeof(out->why), "%s unavailable: %s", probe_kind_name(r->kind),
			 c->kinds[r->kind].detail);
		return;
	}
	for (int t = 0; t < 4 && r->tps[t]; t++) {
		if (!kernel_caps_has_tp(c, r->tps[t])) {
			snprintf(out->why, sizeof(out->why), "tracepoint %s missing", r->tps[t]);
			return;
		}
	}
	out->available = true;
}
