// SPDX-License-Identifier: GPL-2.0
/* libFuzzer harness for the segment reader (tools/fuzz.sh builds and runs it). The first
 * byte picks the entry point: whole segments (header, framing, CRC, zlib) merged into one
 * window as `report` does, with its limits, or a raw snapshot / flight-recorder + NIC payload,
 * which the CRC would otherwise keep the fuzzer from reaching. Memory is part of the
 * contract: tools/fuzz.sh runs this under an RSS limit. */
#include <stddef.h>
#include <stdint.h>
#include "record/record_format.h"

/* The report's limits, smaller: the same code paths, and an input at the limits still
 * runs in seconds under ASan on a busy 2-CPU machine (the histogram limit costs 5.9 KB a
 * key). The interval limits are the real ones. */
static const struct rec_limits fuzz_limits = {
	.hists = 4096,
	.devs = REC_REPORT_DEVS_MAX,
	.slow = 1u << 16,
	.napi = REC_REPORT_NAPI_MAX,
	.softnet = REC_REPORT_SOFTNET_MAX,
};

static int merge_window(const struct snapshot *s, void *ctx)
{
	char msg[256];

	return rec_window_merge(ctx, s, &fuzz_limits, msg, sizeof(msg));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rec_diag d;
	struct snapshot s;

	if (size < 1)
		return 0;
	snapshot__init(&s);
	switch (data[0] % 3) {
	case 0:
		rec_decode(data + 1, size - 1, "fuzz", NULL, merge_window, &s, &d);
		break;
	case 1:
		rec_payload_decode(REC_FRAME_SNAPSHOT, data + 1, size - 1, &s);
		break;
	default:
		/* the NIC payload shares the entry point, so the corpus keeps its meaning */
		rec_payload_decode(REC_FRAME_FLIGHT, data + 1, size - 1, &s);
		snapshot__free(&s);
		snapshot__init(&s);
		rec_payload_decode(REC_FRAME_NIC, data + 1, size - 1, &s);
		break;
	}
	snapshot__free(&s);
	return 0;
}
