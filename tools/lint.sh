#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make lint`: every C file as clang-format (.clang-format) writes it, and the userspace
# code free of clang's warnings too (the build has gcc's -Werror; clang warns on other
# things), and includes in user/ pointing down the pipeline (tools/check-includes.sh).
# Prints TAP, so tests/run.sh counts it; exits non-zero on any finding.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TT_BUILD:-$root/build}
cd "$root" || exit 1

files=$(ls bpf/*.c bpf/*.h user/*/*.c user/*/*.h tests/unit/*.c tests/unit/*.h \
	tests/bpf/*.c tests/fuzz/*.c tests/ns/*.c tools/*/*.c tools/*/*.h 2>/dev/null)
echo "1..3"
bad=$(for f in $files; do clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f"; done)
if [ -z "$bad" ]; then
	echo "ok 1 - clang-format: $(echo "$files" | wc -w) files as .clang-format writes them"
else
	echo "not ok 1 - clang-format: $(echo "$bad" | wc -l) files differ (run make format):"
	echo "$bad" | sed 's/^/#   /'
fi
# the skeletons some modules include are build outputs: clang needs them to exist
warn=$(for f in user/*/*.c; do
	clang -fsyntax-only -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE -Ibpf -Iuser \
		-I"$build" "$f" 2>&1
done)
if [ -z "$warn" ]; then
	echo "ok 2 - clang -Wall -Wextra: user/ has no warnings"
else
	echo "not ok 2 - clang -Wall -Wextra: user/ has warnings:"
	echo "$warn" | head -40 | sed 's/^/#   /'
fi
if inc=$(tools/check-includes.sh); then
	echo "ok 3 - includes in user/ point down (docs/design.md)"
else
	echo "not ok 3 - wrong-way includes in user/ (docs/design.md):"
	echo "$inc" | sed 's/^/#   /'
fi
[ -z "$bad" ] && [ -z "$warn" ] && [ -z "$inc" ]
