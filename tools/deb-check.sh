#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make deb` with Debian's tooling: the package builds (debhelper, Debian's hardening
# flags, unit tests in dh_auto_test), lintian reports no error, it holds what `make
# install` installs, and dpkg installs it, `tailtrace probe` runs from /usr/sbin, and
# dpkg --purge leaves none of its files. Root: it installs the package on this machine
# (skipped when a tailtrace that no package owns is already in /usr/sbin).
set -u
. "$(dirname "$0")/../tests/lib.sh"
tt_require_root

work=$(mktemp -d)
trap 'dpkg -s tailtrace >/dev/null 2>&1 && dpkg --purge tailtrace >/dev/null 2>&1; rm -rf "$work"' EXIT
for t in dh lintian; do
	command -v $t >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends debhelper lintian >"$work/apt.log" 2>&1
done
if ! command -v dh >/dev/null || ! command -v lintian >/dev/null; then
	tt_skip "make deb" "debhelper or lintian not installable"
	exit 0
fi
if [ -e /usr/sbin/tailtrace ] && ! dpkg -S /usr/sbin/tailtrace >/dev/null 2>&1; then
	tt_skip "make deb" "/usr/sbin/tailtrace exists and belongs to no package"
	exit 0
fi

if make -C "$TT_ROOT" BUILD="$work/b" deb >"$work/deb.log" 2>&1; then
	tt_ok "make deb builds $(cd "$work/b" && ls tailtrace_*.deb)"
else
	tail -30 "$work/deb.log"
	tt_fail "make deb builds"
	exit 1
fi
deb=$(ls "$work"/b/tailtrace_*_*.deb | grep -v dbgsym)
tt_check "dh_auto_test ran the unit tests ($(grep -o '^[0-9]* passed, 0 failed' "$work/deb.log"))" \
	grep -q '^[0-9]* passed, 0 failed' "$work/deb.log"
lintian --tag-display-limit 0 "$deb" >"$work/lintian.log" 2>&1
errs=$(grep -c '^E:' "$work/lintian.log")
tt_check "lintian: no error ($errs; $(grep -c '^W:' "$work/lintian.log") warnings)" test "$errs" = 0
[ "$errs" = 0 ] || cat "$work/lintian.log"
for f in usr/sbin/tailtrace lib/systemd/system/tailtrace-record.service etc/tailtrace/record.conf \
	usr/share/man/man8/tailtrace-record.8.gz usr/share/bash-completion/completions/tailtrace \
	usr/share/tailtrace/prometheus/tailtrace.rules.yml; do
	dpkg-deb -c "$deb" | grep -q " \./$f$" || missing+=" $f"
done
tt_check "the package holds the binary, unit, options, man pages, completion, rules${missing:+ (missing:$missing)}" \
	test -z "${missing:-}"
tt_check "/etc/tailtrace/record.conf is a conffile" \
	bash -c 'dpkg-deb -e "$1" "$2/ctl" && grep -qx /etc/tailtrace/record.conf "$2/ctl/conffiles"' _ \
	"$deb" "$work"

if dpkg -i "$deb" >"$work/dpkg.log" 2>&1; then
	tt_ok "dpkg -i installs it"
else
	cat "$work/dpkg.log"
	tt_fail "dpkg -i installs it"
fi
/usr/sbin/tailtrace probe -j >"$work/probe.json" 2>"$work/probe.err"
tt_check "the installed tailtrace probe runs (exit $?)" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' \
	"$work/probe.json"
files=$(dpkg -L tailtrace | while read -r f; do [ -f "$f" ] && echo "$f"; done)
dpkg --purge tailtrace >"$work/purge.log" 2>&1
left=$(for f in $files; do [ -e "$f" ] && echo "$f"; done)
tt_check "dpkg --purge removes all $(echo $files | wc -w) files${left:+ (left: $left)}" test -z "$left"
exit 0
