// SPDX-License-Identifier: GPL-2.0
/* libFuzzer harness for the segment reader (tools/fuzz.sh builds and runs it). The first
 * byte picks the entry point: whole segments (header, framing, CRC, zlib), or a raw
 * snapshot / flight-recorder payload, which the CRC would otherwise keep the fuzzer from
 * reaching. */
#include <stddef.h>
#include <stdint.h>
#include "record/record_format.h"

static int sink(const struct snapshot *s, void *ctx)
{
	(void)ctx;
	/* touch what a report would read */
	return s->nhists > 1000000 ? 1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rec_diag d;
	struct snapshot s;

	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		rec_decode(data + 1, size - 1, "fuzz", NULL, sink, NULL, &d);
		break;
	case 1:
		snapshot__init(&s);
		rec_payload_decode(REC_FRAME_SNAPSHOT, data + 1, size - 1, &s);
		snapshot__free(&s);
		break;
	default:
		snapshot__init(&s);
		rec_payload_decode(REC_FRAME_FLIGHT, data + 1, size - 1, &s);
		snapshot__free(&s);
		break;
	}
	return 0;
}
