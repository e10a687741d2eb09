#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds the segment-reader fuzzer (clang -fsanitize=fuzzer,address) and runs it for a
# bounded time (FUZZ_SECONDS, default 60). Seeds: a recording written by the fixture and
# tests/fuzz/corpus-regress. Crashes are copied into tests/fuzz/corpus-regress, which
# test_record_format replays on every test run. Exits non-zero when a crash was found.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TT_BUILD:-$root/build}/fuzz
secs=${FUZZ_SECONDS:-60}
mkdir -p "$build/corpus" "$build/artifacts" "$root/tests/fuzz/corpus-regress"
cd "$root"
src="user/record/segment_write.c user/record/segment_read.c user/record/segment_files.c
     user/core/snapshot.c user/core/histogram.c user/core/stages.c user/attr/attr_split.c
     user/attr/attr_place.c user/attr/attr_aggregate.c user/attr/attr_codec.c
     user/attr/attr_analysis.c user/lib/log.c user/lib/json.c"
flags="-g -O1 -std=gnu11 -D_GNU_SOURCE -Ibpf -Iuser -fsanitize=fuzzer,address,undefined"
clang $flags tests/fuzz/fuzz_segment.c $src -lbpf -lz -lm -o "$build/fuzz_segment"
# seeds: a real multi-frame segment (mode byte 0 = whole segment) and its parts
clang -g -O1 -std=gnu11 -D_GNU_SOURCE -Ibpf -Iuser tests/ns/exports_fixture.c \
	$src user/record/recorder.c -lbpf -lz -lm -o "$build/fixture"
rm -rf "$build/rec"
"$build/fixture" "$build/rec" >/dev/null
for f in "$build"/rec/*.ttrec; do
	{ printf '\0'; head -c 4096 "$f"; } >"$build/corpus/seed-head"
	{ printf '\0'; cat "$f"; } >"$build/corpus/seed-full"
done
cp tests/fuzz/corpus-regress/* "$build/corpus/" 2>/dev/null || true
set +e
"$build/fuzz_segment" -max_total_time="$secs" -max_len=65536 -timeout=10 \
	-artifact_prefix="$build/artifacts/" "$build/corpus"
rc=$?
set -e
found=0
for a in "$build"/artifacts/crash-* "$build"/artifacts/leak-* "$build"/artifacts/timeout-*; do
	[ -f "$a" ] || continue
	cp "$a" tests/fuzz/corpus-regress/
	echo "fuzz: kept $(basename "$a") in tests/fuzz/corpus-regress"
	found=1
done
[ $found = 0 ] && [ $rc = 0 ]
