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
# the reader and everything it reaches, as an archive of instrumented objects: the linker
# takes the modules the fuzzer needs, so a module split or added needs no edit here
# (main.c, the live collector and the RDMA tracer are left out: they need the skeletons)
flags="-g -O1 -std=gnu11 -D_GNU_SOURCE -Ibpf -Iuser"
san="-fsanitize=fuzzer-no-link,address,undefined"
rm -rf "$build/obj" && mkdir -p "$build/obj"
for m in user/lib/*.c user/core/*.c user/attr/*.c user/record/*.c user/export/*.c; do
	clang $flags $san -c "$m" -o "$build/obj/$(basename "${m%.c}").o"
done
ar rcs "$build/libtt-fuzz.a" "$build"/obj/*.o
clang $flags -fsanitize=fuzzer,address,undefined tests/fuzz/fuzz_segment.c \
	"$build/libtt-fuzz.a" -lbpf -lz -lm -o "$build/fuzz_segment"
# seeds: a real multi-frame segment (mode byte 0 = whole segment) and its parts
clang $flags -fsanitize=address,undefined tests/ns/exports_fixture.c "$build/libtt-fuzz.a" \
	-lbpf -lz -lm -o "$build/fixture"
rm -rf "$build/rec"
"$build/fixture" "$build/rec" >/dev/null
for f in "$build"/rec/*.ttrec; do
	{ printf '\0'; head -c 4096 "$f"; } >"$build/corpus/seed-head"
	{ printf '\0'; cat "$f"; } >"$build/corpus/seed-full"
done
cp tests/fuzz/corpus-regress/* "$build/corpus/" 2>/dev/null || true
set +e
# -malloc_limit_mb follows -rss_limit_mb: one allocation past the limit is an oom- artifact.
# -len_control=0: mutations may grow an input to max_len at once; by default libFuzzer
# raises its length cap slowly from the largest seed, and 15 minutes here never got past
# the 31 KB of seed-full
"$build/fuzz_segment" -max_total_time="$secs" -max_len="$max_len" -len_control=0 \
	-rss_limit_mb="$rss_mb" \
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
