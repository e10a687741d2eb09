#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make deb` with Debian's tooling: the package builds (debhelper, Debian's hardening
# flags, unit tests in dh_auto_test), lintian reports no error, it holds what `make
# install` installs, and dpkg installs it, `tailtrace probe` runs from /usr/sbin, the
# installed unit's command serves /metrics, and dpkg --purge leaves none of its files.
# Root: it installs the package on this machine, and purges it again (a skip, so a
# failure under CI, when a tailtrace that no package owns is already in /usr/sbin).
# About a minute; `make deb-check` runs it alone.
set -u
. "$(dirname "$0")/../lib.sh"
tt_require_root

work=$(mktemp -d)
trap 'dpkg -s tailtrace >/dev/null 2>&1 && dpkg --purge tailtrace >/dev/null 2>&1; rm -rf "$work"' EXIT
if ! command -v dh >/dev/null || ! command -v lintian >/dev/null; then
	# a fresh machine needs the package lists first
	{ DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		debhelper lintian || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends debhelper lintian; }; } \
		>"$work/apt.log" 2>&1
fi
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
listing=$(dpkg-deb -c "$deb")
for f in usr/sbin/tailtrace lib/systemd/system/tailtrace-record.service etc/tailtrace/record.conf \
	usr/share/man/man8/tailtrace-record.8.gz usr/share/bash-completion/completions/tailtrace \
	usr/share/tailtrace/prometheus/tailtrace.rules.yml; do
	grep -q " \./$f$" <<<"$listing" || missing+=" $f"
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
# The installed service, started as its installed unit says (this machine has no systemd
# as PID 1: setpriv stands in for its bounding set and no-new-privs, as in
# tests/ns/test_service_sandbox.sh): the ExecStart line with the installed options file,
# on a free port, scraped once it attached.
unit=/lib/systemd/system/tailtrace-record.service
[ -f "$unit" ] || unit=/usr/lib/systemd/system/tailtrace-record.service
exec_line=$(sed -n 's/^ExecStart=//p' "$unit")
caps=$(tt_unit_caps "$unit")
eval "$(grep '^TAILTRACE_RECORD_OPTS=' /etc/tailtrace/record.conf)"
port=$((19000 + RANDOM % 1000))
STATE_DIRECTORY=$work/state
mkdir -m 0700 "$STATE_DIRECTORY"
TAILTRACE_RECORD_OPTS=${TAILTRACE_RECORD_OPTS/127.0.0.1:9464/127.0.0.1:$port}
cmd=${exec_line//'${STATE_DIRECTORY}'/$STATE_DIRECTORY}
cmd=${cmd//'$TAILTRACE_RECORD_OPTS'/$TAILTRACE_RECORD_OPTS}
# shellcheck disable=SC2086
setpriv --no-new-privs --bounding-set "-all,$caps" --inh-caps -all -- $cmd \
	>"$work/svc.out" 2>"$work/svc.err" &
svc=$!
got=0
for _ in $(seq 1 60); do
	got=$(curl -s -m 2 "http://127.0.0.1:$port/metrics" 2>/dev/null | grep -c '^tailtrace_')
	[ "${got:-0}" -gt 0 ] && break
	sleep 0.5
done
tt_check "the installed unit's command ($cmd) serves /metrics ($got samples)" test "${got:-0}" -gt 0
kill -TERM "$svc" 2>/dev/null
wait "$svc"
rc=$?
tt_check "SIGTERM stops it with status 0 (got $rc)" test "$rc" = 0
[ "$rc" = 0 ] || cat "$work/svc.err"

files=$(dpkg -L tailtrace | while read -r f; do [ -f "$f" ] && echo "$f"; done)
dpkg --purge tailtrace >"$work/purge.log" 2>&1
left=$(for f in $files; do [ -e "$f" ] && echo "$f"; done)
tt_check "dpkg --purge removes all $(echo $files | wc -w) files${left:+ (left: $left)}" test -z "$left"
exit 0
