#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The record service's sandbox is enough for record: run `tailtrace record` the way
# dist/systemd/tailtrace-record.service confines it (its capability bounding set read
# from the unit, no new privileges, a read-only root file system with only the state
# directory writable, the options file's TAILTRACE_RECORD_OPTS) and check that it
# attaches, writes segments, serves /metrics and stops cleanly on SIGTERM. This machine
# has no systemd as PID 1, so setpriv and a private mount namespace stand in for it.
set -u
. "$(dirname "$0")/../lib.sh"
tt_require_root

unit=$TT_ROOT/dist/systemd/tailtrace-record.service
work=$(mktemp -d)
state=$work/state
mkdir -m 0700 "$state"
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

caps=$(tt_unit_caps "$unit")
tt_check "unit's bounding set read ($caps)" test -n "$caps"
eval "$(grep '^TAILTRACE_RECORD_OPTS=' "$TT_ROOT/dist/systemd/record.conf")"
port=$((19000 + RANDOM % 1000))
opts=${TAILTRACE_RECORD_OPTS/--listen 127.0.0.1:9464/--listen 127.0.0.1:$port}
opts=${opts/--interval 10/--interval 1}

# the state directory stays writable (its own mount); everything else is read-only
# shellcheck disable=SC2016,SC2086
unshare --mount --propagation private sh -c '
	mount --bind "$1" "$1" && mount -o remount,bind,ro / || exit 99
	caps=$2
	shift 2
	exec setpriv --no-new-privs --bounding-set "-all,$caps" --inh-caps -all -- "$@"
' _ "$state" "$caps" "$TAILTRACE" record -o "$state" $opts -d 8 >"$work/out" 2>"$work/err" &
pid=$!
if tt_wait_attached "$pid" 300; then
	tt_ok "record attaches inside the sandbox"
else
	cat "$work/err"
	tt_fail "record attaches inside the sandbox"
fi
pcaps=$(awk '/^CapBnd/ { print $2 }' /proc/$(pgrep -P "$pid" -n || echo "$pid")/status 2>/dev/null)
tt_check "its bounding set is the unit's ($(capsh --decode="${pcaps:-0}" 2>/dev/null | cut -d= -f2))" \
	test "$(capsh --decode="${pcaps:-0}" 2>/dev/null | cut -d= -f2 | tr ',' '\n' | sort | xargs)" = \
	"$(echo "$caps" | tr ',' '\n' | sed 's/^+/cap_/' | sort | xargs)"
sleep 2.5
got=$(curl -s -m 2 "http://127.0.0.1:$port/metrics" | grep -c '^tailtrace_')
tt_check "it serves /metrics from the sandbox ($got samples)" test "${got:-0}" -gt 0
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
tt_check "SIGTERM ends it with status 0 (got $rc)" test "$rc" = 0
nseg=$(find "$state" -name 'seg-*.ttrec' | wc -l)
tt_check "it wrote $nseg segment(s) into the state directory" test "$nseg" -gt 0
"$TAILTRACE" report "$state" -j >"$work/rep.json" 2>"$work/rep.err"
tt_check "report reads them ($(tt_json "$work/rep.json" window.intervals 2>/dev/null) intervals)" \
	test "$(tt_json "$work/rep.json" window.intervals 2>/dev/null || echo 0)" -gt 0
if grep -qiE "error|denied|read-only" "$work/err"; then
	cat "$work/err"
	tt_fail "no permission error on stderr"
else
	tt_ok "no permission error on stderr"
fi

# --- record --rdma in the same sandbox: the unit's set is enough for it. It has no
# CAP_SYS_ADMIN, which Linux 6.16 asks of the uprobe PMU: there the uprobes (control hooks
# at start, the data path once the app opens its device, after the drop) go through tracefs
app=$TT_BUILD/rdma/rdma_app
if [ -x "$app" ]; then
	state2=$work/state2
	mkdir -m 0700 "$state2"
	"$app" --wrs 2000 --go-open "$work/go-open" --go-post "$work/go-post" \
		--out "$work/app.json" >/dev/null 2>&1 &
	apid=$!
	# shellcheck disable=SC2016
	unshare --mount --propagation private sh -c '
		mount --bind "$1" "$1" && mount -o remount,bind,ro / || exit 99
		caps=$2
		shift 2
		exec setpriv --no-new-privs --bounding-set "-all,$caps" --inh-caps -all -- "$@"
	' _ "$state2" "$caps" "$TAILTRACE" record -o "$state2" --rdma -p "$apid" --rdma-full \
		-i 1 -d 4 >"$work/rout" 2>"$work/rerr" &
	pid=$!
	for _ in $(seq 600); do grep -q "watching" "$work/rerr" && break; sleep 0.1; done
	touch "$work/go-open"
	for _ in $(seq 200); do grep -q "poll_cq at" "$work/rerr" && break; sleep 0.1; done
	rcaps=
	for p in $pid $(pgrep -P "$pid"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = tailtrace ] &&
			rcaps=$(awk '/^CapEff/ { print $2 }' "/proc/$p/status") && break
	done
	touch "$work/go-post"
	wait "$apid"
	wait "$pid"
	rc=$?
	pid=
	sed 's/^/# /' "$work/rerr" | head -8
	tt_check "record --rdma -p in the sandbox: data path attached after the drop, exit 0 (got $rc)" \
		sh -c "[ $rc -eq 0 ] && grep -q 'poll_cq at' '$work/rerr' && ! grep -q 'cannot attach' '$work/rerr'"
	tt_check "record --rdma -p: CapEff ${rcaps:-?} once attached: no CAP_SYS_ADMIN, nothing outside the unit's set" \
		sh -c "[ -n '$rcaps' ] && [ \$(((0x$rcaps >> 21) & 1)) -eq 0 ] && [ \$((0x$rcaps & ~((1 << 39) | (1 << 38) | (1 << 19) | (1 << 23)))) -eq 0 ]"
	tt_check "record --rdma: no uprobe event left in tracefs" \
		sh -c '! grep -q "tailtrace_" /sys/kernel/tracing/uprobe_events 2>/dev/null'
else
	tt_skip "record --rdma in the sandbox" "$app not built"
fi
exit 0
