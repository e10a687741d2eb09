#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds every tests/unit/test_*.c with AddressSanitizer + UndefinedBehaviorSanitizer
# against sanitized objects of user/*/*.c (cmd/main.c aside) in $TT_BUILD/asan, runs each, and
# prints TAP: "ok N - asan test_X" / "not ok N - ...". A module or test that does not
# compile, link or pass is "not ok", never skipped: new test files are picked up by name.
#
#   tools/sanitize.sh [test_name ...]   (default: every tests/unit/test_*.c)
#   TT_JOBS=N  parallel jobs (default: all CPUs)   CC=clang  another compiler
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TT_BUILD:-$root/build}
out=$build/asan
cc=${CC:-cc}
jobs=${TT_JOBS:-$(nproc 2>/dev/null || echo 2)}
export TT_ROOT=$root TT_BUILD=$build

san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
# -O1 -g: usable stacks in the reports. No -Werror: the normal build enforces warnings,
# this run is about memory and undefined behaviour.
cflags="-O1 -g -Wall -Wextra -std=gnu11 -D_GNU_SOURCE -I$root/bpf -I$root/user -I$build $san"
ldlibs="-lcmocka -lbpf -lelf -llzma -lz -lm -lpthread -ldl"

cd "$root" || exit 1
mkdir -p "$out/user" "$out/tests/unit" || exit 1
# objects built with other flags or another compiler are not reused
stamp="$cc $cflags"
if [ "$(cat "$out/flags" 2>/dev/null)" != "$stamp" ]; then
	rm -f "$out"/user/*.o "$out"/tests/unit/test_*
	printf '%s\n' "$stamp" >"$out/flags"
fi
# tests that find helpers next to their binary (build/tests/unit/x -> build/rdma/) find
# them from build/asan/tests/unit/x too
for d in "$build"/*/; do
	d=$(basename "$d")
	case "$d" in asan|tests|user) continue;; esac
	[ -e "$out/$d" ] || ln -s "../$d" "$out/$d"
done

# Skeleton headers some modules include: made by the main Makefile when missing (needs
# clang and bpftool); if that fails, those modules fail to compile below and say so.
for skel in $(grep -ho '"[a-z_0-9]*\.skel\.h"' user/*/*.c | tr -d '"' | sort -u); do
	[ -f "$build/$skel" ] || make -s BUILD="$build" "$build/$skel" >"$out/$skel.log" 2>&1
done

# newest header: an object or test older than it is rebuilt
newest=$(ls -t user/*/*.h bpf/*.h "$build"/*.skel.h 2>/dev/null | head -1)

compile_module() { # user/dir/x.c
	local src=$1 obj
	obj=$out/user/$(basename "${1%.c}").o
	if [ -f "$obj" ] && [ "$obj" -nt "$src" ] && { [ -z "$newest" ] || [ "$obj" -nt "$newest" ]; }; then
		return 0
	fi
	rm -f "$obj"
	$cc $cflags -c "$src" -o "$obj" >"$obj.log" 2>&1 || { rm -f "$obj"; return 1; }
}

build_test() { # tests/unit/test_x.c
	local src=$1 bin
	bin=$out/tests/unit/$(basename "${1%.c}")
	if [ -x "$bin" ] && [ "$bin" -nt "$src" ] && [ "$bin" -nt "$out/libtt-asan.a" ] &&
	   { [ -z "$newest" ] || [ "$bin" -nt "$newest" ]; }; then
		return 0
	fi
	rm -f "$bin"
	$cc $cflags "$src" "$out/libtt-asan.a" $ldlibs -o "$bin" >"$bin.build.log" 2>&1 ||
		{ rm -f "$bin"; return 1; }
}

run_test() { # test_x
	local bin=$out/tests/unit/$1
	[ -x "$bin" ] || return 0
	ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		timeout --kill-after=10 "${TT_SAN_TIMEOUT:-300}" "$bin" >"$bin.run.log" 2>&1
	echo $? >"$bin.rc"
}
export -f compile_module build_test run_test
export cc cflags ldlibs out newest

modules=()
for m in user/*/*.c; do
	[ "$m" = user/cmd/main.c ] || modules+=("$m")
done
if [ $# -gt 0 ]; then
	tests=()
	for t in "$@"; do tests+=("tests/unit/${t%.c}.c"); done
else
	tests=(tests/unit/test_*.c)
fi

printf '%s\n' "${modules[@]}" | xargs -P "$jobs" -I{} bash -c 'compile_module {}'
objs=()
for m in "${modules[@]}"; do
	o=$out/user/$(basename "${m%.c}").o
	[ -f "$o" ] && objs+=("$o")
done
# the archive lets each test link only the modules it needs, so a module that failed
# to compile fails the tests that need it, not all of them
members=$(printf '%s\n' "${objs[@]}")
if [ ! -f "$out/libtt-asan.a" ] || [ "$members" != "$(cat "$out/members" 2>/dev/null)" ] ||
   [ -n "$(find "${objs[@]}" -newer "$out/libtt-asan.a" 2>/dev/null | head -1)" ]; then
	rm -f "$out/libtt-asan.a"
	ar rcs "$out/libtt-asan.a" "${objs[@]}"
	printf '%s\n' "$members" >"$out/members"
fi
printf '%s\n' "${tests[@]}" | xargs -P "$jobs" -I{} bash -c '[ -f {} ] && build_test {}'
rm -f "$out"/tests/unit/*.rc
printf '%s\n' "${tests[@]}" | xargs -P "$jobs" -I{} bash -c 'run_test $(basename {} .c)'

n=0 fails=0
san_err='ERROR: (Address|Leak)Sanitizer|runtime error:'
show_tail() { tail -n "${2:-40}" "$1" 2>/dev/null | sed 's/^/# /'; }
# a module that compiles is no test result, only one that does not (it fails the run)
broken=()
for m in "${modules[@]}"; do
	[ -f "$out/user/$(basename "${m%.c}").o" ] || broken+=("$m")
done
echo "1..$(( ${#tests[@]} + ${#broken[@]} ))"
echo "# asan: $(( ${#modules[@]} - ${#broken[@]} )) of ${#modules[@]} modules compiled"
for m in "${broken[@]}"; do
	n=$((n + 1))
	echo "not ok $n - asan compile $m"
	show_tail "$out/user/$(basename "${m%.c}").o.log" 20
	fails=$((fails + 1))
done
for t in "${tests[@]}"; do
	n=$((n + 1))
	name=$(basename "${t%.c}")
	bin=$out/tests/unit/$name
	if [ ! -f "$t" ]; then
		echo "not ok $n - asan $name (no $t)"
		fails=$((fails + 1))
	elif [ ! -x "$bin" ]; then
		echo "not ok $n - asan $name (does not compile or link with user/*/*.c)"
		show_tail "$bin.build.log" 20
		fails=$((fails + 1))
	else
		rc=$(cat "$bin.rc" 2>/dev/null || echo 255)
		cases=$(sed -n 's/^\[==========\] \([0-9]*\) test(s) run.*/\1/p' "$bin.run.log" | head -1)
		if [ "$rc" -eq 0 ] && ! grep -qE "$san_err" "$bin.run.log"; then
			echo "ok $n - asan $name (${cases:-?} cases)"
		else
			echo "not ok $n - asan $name (exit $rc)"
			if grep -qE "$san_err" "$bin.run.log"; then
				# the report's head: what, where, and the stack that did it
				awk -v re="$san_err" '$0 ~ re { on = 1 } /^Shadow bytes/ { exit } on && n++ < 30' "$bin.run.log" |
					sed 's/^/# /'
			else
				grep -E '^\[  (ERROR|FAILED)  \]' "$bin.run.log" | head -20 | sed 's/^/# /'
				show_tail "$bin.run.log" 20
			fi
			fails=$((fails + 1))
		fi
	fi
done
echo "# sanitizers: $((n - fails)) ok, $fails not ok (logs in $out)"
[ "$fails" -eq 0 ]
