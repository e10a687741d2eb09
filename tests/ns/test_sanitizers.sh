#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Every unit test again under AddressSanitizer + UndefinedBehaviorSanitizer (TAP lines
# from tools/sanitize.sh). Needs no root; it lives here because tests/run.sh runs the
# executable scripts of tests/bpf and tests/ns.
exec "$(dirname "$0")/../../tools/sanitize.sh" "$@"
