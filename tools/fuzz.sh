#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds the segment-reader fuzzer (clang -fsanitize=fuzzer,address) and runs it for a
# bounded time (FUZZ_SECONDS, default 60) on inputs up to FUZZ_MAX_LEN bytes (default
# 1 MiB) under an RSS limit (FUZZ_RSS_MB, default 1024: the reader's limits in
# docs/record-format.md plus the sanitizers' own memory). Seeds: a recording written by
# the fixture and tests/fuzz/corpus-regress. Crashes, leaks, timeouts and out-of-memory
# inputs are copied into tests/fuzz/corpus-regress, which test_record_format replays on
# every test run, and fail the run alike.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TT_BUILD:-$root/build}/fuzz
secs=${FUZZ_SECONDS:-60}
max_len=${FUZZ_MAX_LEN:-1048576}
rss_mb=${FUZZ_RSS_MB:-1024}
# an input at the reader's limits takes seconds under ASan on a busy 2-CPU machine: the
# timeout finds hangs, not slow-but-bounded inputs
timeout=${FUZZ_TIMEOUT:-30}
mkdir -p "$build/corpus" "$build/artifacts" "$root/tests/fuzz/corpus-regress"
# an earlier run's findings are in tests/fuzz/corpus-regress already: only this run's count
rm -f "$build"/artifacts/*
cd "$root"
src="user/record/segment_write.c user/record/segment_read.c user/record/segment_files.c
     user/record/segment_window.c user/core/snapshot.c user/core/histogram.c user/core/stages.c
     user/attr/attr_split.c user/attr/attr_place.c user/attr/attr_aggregate.c user/attr/attr_codec.c
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
# -malloc_limit_mb follows -rss_limit_mb: one allocation past the limit is an oom- artifact
"$build/fuzz_segment" -max_total_time="$secs" -max_len="$max_len" -rss_limit_mb="$rss_mb" \
	-timeout="$timeout" -artifact_prefix="$build/artifacts/" "$build/corpus"
rc=$?
set -e
found=0
for a in "$build"/artifacts/crash-* "$build"/artifacts/leak-* "$build"/artifacts/timeout-* \
	"$build"/artifacts/oom-*; do
	[ -f "$a" ] || continue
	cp "$a" tests/fuzz/corpus-regress/
	echo "fuzz: kept $(basename "$a") in tests/fuzz/corpus-regress"
	found=1
done
[ $found = 0 ] && [ $rc = 0 ]
