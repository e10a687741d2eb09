#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Lifecycle, hostile input and least exposure (issue 9):
#  - SIGINT and SIGTERM of hist, explain, top and record: exit 0, and every BPF program,
#    link and map the process held is gone (bpftool prog/link/map, bpftool cgroup tree);
#    kill -9: the same once the kernel has released the fds; no tc filter anywhere changed;
#  - two instances at once on the same port both count every request (against the churn
#    client's own count); stopping one leaves the other attached and counting;
#  - a table of bad inputs for every command: exit 2, nothing on stdout, one line on stderr;
#  - rdma --sysfs-root over a tree of garbage counters (random bytes, huge and negative
#    numbers, symlink loop, /dev/zero, a FIFO): no crash, no hang;
#  - record: segment files 0600 in a 0700 directory; --listen PORT binds loopback only;
#  - without capabilities (setpriv to nobody): a one-line refusal naming them;
#  - the segment fuzzer is wired: `make fuzz` runs tools/fuzz.sh, its crash corpus is
#    replayed by test_record_format, and a short run finds nothing (FUZZ_SECONDS=5).
# Programs of other tailtrace instances (other tests running at the same time) are told
# apart by the ids this process held (/proc/PID/fdinfo), not by name.
set -u
. "$(dirname "$0")/../lib.sh"
. "$TT_ROOT/tools/soak.sh"
tt_require_root
CHURN=${CHURN:-$TT_BUILD/churn}
for b in "$TAILTRACE" "$CHURN"; do
	[ -x "$b" ] || { tt_fail "$(basename "$b") not built ($b)"; exit 1; }
done
for t in bpftool tc ss python3 setpriv; do
	command -v $t >/dev/null || { tt_skip "$(basename "$0")" "$t missing"; exit 0; }
done
TMP=$(mktemp -d)
SPIDS=()
cleanup() {
	local p
	for p in "${SPIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rel_net_down_all
	rm -rf "$TMP"
}
trap cleanup EXIT
rel_net_up lc 50 || { tt_fail "namespaces"; exit 1; }
ip netns exec tt-rel-lc-s "$CHURN" server --listen :: --port 7410 --duration 600 \
	>"$TMP/srv.out" 2>&1 &
SPIDS+=("$!")
sleep 0.3

tc_state() { # every tc filter of every device of the root namespace and of ours
	local ns d
	for ns in "" tt-rel-lc-c tt-rel-lc-s; do
		for d in $(ip ${ns:+-n $ns} -o link show | awk -F': ' '{print $2}' | cut -d@ -f1); do
			tc ${ns:+-n $ns} filter show dev "$d" ingress 2>/dev/null
			tc ${ns:+-n $ns} filter show dev "$d" egress 2>/dev/null
		done
	done
}
# ids_left FILE_PROG FILE_LINK FILE_MAP: how many of the recorded ids still exist, and the
# sockops ids still in the cgroup tree; retried for 5 s (links close asynchronously).
# IDS_WAIT=1: one look, for "still there" checks (waiting for zero would outwait them).
ids_left() {
	local n
	for _ in $(seq 1 "${IDS_WAIT:-50}"); do
		n=$(python3 - "$@" <<'PY'
import json, subprocess, sys
def ids(kind):
    out = subprocess.run(["bpftool", "-j", kind, "show"], capture_output=True, text=True).stdout
    return {o["id"] for o in json.loads(out or "[]")}
left = 0
for f, kind in zip(sys.argv[1:4], ("prog", "link", "map")):
    mine = {int(x) for x in open(f).read().split()}
    left += len(mine & ids(kind))
cg = subprocess.run(["bpftool", "cgroup", "tree"], capture_output=True, text=True).stdout.split()
mine = {x for x in open(sys.argv[1]).read().split()}
left += len(mine & set(cg))
print(left)
PY
)
		[ "$n" = 0 ] && break
		sleep 0.1
	done
	echo "$n"
}
snap_ids() { # PID PREFIX
	rel_ids "$1" prog >"$TMP/$2.prog"
	rel_ids "$1" link >"$TMP/$2.link"
	rel_ids "$1" map >"$TMP/$2.map"
}

tc_state >"$TMP/tc.before"
# ---- clean stops ----
for cmd in hist explain top record; do
	for sig in INT TERM KILL; do
		[ "$sig" = KILL ] && [ "$cmd" != hist ] && [ "$cmd" != record ] && continue
		extra=()
		[ "$cmd" = record ] && extra=(-o "$TMP/rec-$sig" -i 1)
		[ "$cmd" = top ] && extra=(-i 1)
		"$TAILTRACE" "$cmd" --port 7410 -d 120 "${extra[@]}" >"$TMP/$cmd.out" 2>"$TMP/$cmd.err" &
		pid=$!
		if ! tt_wait_attached "$pid"; then
			tt_fail "$cmd did not start: $(head -c 300 "$TMP/$cmd.err")"
			continue
		fi
		snap_ids "$pid" "$cmd"
		np=$(wc -l <"$TMP/$cmd.prog") nl=$(wc -l <"$TMP/$cmd.link")
		ip netns exec tt-rel-lc-c "$CHURN" client --connect 198.19.50.2 --port 7410 \
			--conns 50 >/dev/null 2>&1
		kill -"$sig" "$pid"
		wait "$pid"
		rc=$?
		if [ "$sig" = KILL ]; then
			tt_check "$cmd killed by SIGKILL (status $rc)" [ "$rc" = 137 ]
		else
			tt_check "$cmd exits 0 on SIG$sig (status $rc)" [ "$rc" = 0 ]
		fi
		left=$(ids_left "$TMP/$cmd.prog" "$TMP/$cmd.link" "$TMP/$cmd.map")
		tt_check "$cmd SIG$sig: none of its $np programs, $nl links and maps left (prog/link/map/cgroup tree: $left)" \
			[ "$left" = 0 -a "$np" -gt 10 -a "$nl" -gt 10 ]
	done
done
tc_state >"$TMP/tc.after"
tt_check "no tc filter added or left anywhere" cmp -s "$TMP/tc.before" "$TMP/tc.after"

# ---- two instances ----
# no -d: each stops on its SIGINT, not on a timer a slow run could reach first
"$TAILTRACE" explain -j --role server --port 7410 >"$TMP/a.json" 2>"$TMP/a.err" &
pa=$!
"$TAILTRACE" explain -j --role server --port 7410 >"$TMP/b.json" 2>"$TMP/b.err" &
pb=$!
if tt_wait_attached "$pa" && tt_wait_attached "$pb"; then
	ip netns exec tt-rel-lc-c "$CHURN" client --connect 198.19.50.2 --port 7410 --conns 500 \
		--reqs 2 >"$TMP/c1.json" 2>&1
	sleep 0.3
	kill -INT "$pa"; wait "$pa"; rca=$?
	snap_ids "$pb" b
	ip netns exec tt-rel-lc-c "$CHURN" client --connect 198.19.50.2 --port 7410 --conns 300 \
		--reqs 2 >"$TMP/c2.json" 2>&1
	sleep 0.3
	bl=$(IDS_WAIT=1 ids_left /dev/null "$TMP/b.link" /dev/null)
	kill -INT "$pb"; wait "$pb"; rcb=$?
	e1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["exchanges"])' "$TMP/c1.json")
	e2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["exchanges"])' "$TMP/c2.json")
	ra=$(tt_json "$TMP/a.json" requests) rb=$(tt_json "$TMP/b.json" requests)
	nb=$(wc -l <"$TMP/b.link")
	tt_check "both instances exit 0 ($rca, $rcb)" [ "$rca" = 0 -a "$rcb" = 0 ]
	tt_check "first instance saw every request of its window: $ra = $e1" [ "$ra" = "$e1" ]
	tt_check "second instance still attached after the first stopped ($bl of $nb links)" [ "$bl" = "$nb" ]
	tt_check "second instance saw both windows: $rb = $e1 + $e2" [ "$rb" = $((e1 + e2)) ]
else
	tt_fail "two explain instances did not start: $(head -c 300 "$TMP/a.err" "$TMP/b.err")"
	kill -9 "$pa" "$pb" 2>/dev/null
fi

# ---- hostile command lines: exit 2, one line on stderr, nothing on stdout ----
mkdir -p "$TMP/empty"
bad=(
	"nosuchcmd" "--nosuch" "hist --nosuch" "hist -x" "hist --port" "hist --port 0"
	"hist --port 65536" "hist --port -1" "hist --port 1x" "hist --port 99999999999999999999"
	"hist -p 0" "hist -p abc" "hist -p 4194305" "hist -d 0" "hist -d -1" "hist -d nan"
	"hist -d inf" "hist -d 1e99" "hist -i 0" "hist -i x" "hist --by nope" "hist --role nope"
	"hist --stage nope" "hist --comm 0123456789abcdef" "hist --comm=" "hist --dev 0123456789abcdef0"
	"hist --cgroup /no/such/cgroup" "hist --dev no-such-dev0" "hist extra-arg"
	"hist --port 1 --port 2 --port 3 --port 4 --port 5 --port 6 --port 7 --port 8 --port 9"
	"hist --json=1" "hist -o x" "hist --listen 1" "hist --count 2" "hist --format json"
	"explain --stage tx.qdisc" "explain --by port" "explain --role x" "explain --count 1"
	"top -j" "top --count 0" "top --count -3" "top --role server" "top --stage tcp.rtt"
	"record" "record -o" "record -o $TMP/r --max-size 0" "record -o $TMP/r --max-size 12Q"
	"record -o $TMP/r --max-size -5" "record -o $TMP/r --listen 1.2.3.4.5:80"
	"record -o $TMP/r --listen 127.0.0.1:70000" "record -o $TMP/r --listen [zz]:1"
	"record -o $TMP/r --stage x"
	"report" "report $TMP/empty --from yesterday" "report $TMP/empty --to 2024-13-45T99:00:00Z"
	"report $TMP/empty --format xml" "report $TMP/empty --port 1" "report $TMP/empty extra"
	"rdma -p 0" "rdma --rdma-probe nonsense" "rdma --rdma-probe bogus=lib:sym" "rdma --count 0"
	"rdma --port 1" "rdma --sysfs-root" "probe --port 1" "probe -d 1" "probe extra"
)
nbad=0 badfail=""
for a in "${bad[@]}"; do
	# shellcheck disable=SC2086
	timeout 30 "$TAILTRACE" $a >"$TMP/bad.out" 2>"$TMP/bad.err"
	rc=$?
	lines=$(wc -l <"$TMP/bad.err")
	if [ "$rc" != 2 ] || [ "$lines" != 1 ] || [ -s "$TMP/bad.out" ]; then
		badfail="$badfail [$a: status $rc, $lines lines]"
	fi
	nbad=$((nbad + 1))
done
tt_check "$nbad bad command lines: exit 2, one line on stderr, empty stdout${badfail:+ — failed:$badfail}" \
	[ -z "$badfail" ]
rm -rf "$TMP/r"

# ---- garbage sysfs for rdma ----
g=$TMP/garbage
mkdir -p "$g/sys/class/infiniband/mlx5_0/ports/1/hw_counters" "$g/sys/class/infiniband/mlx5_0/ports/1/counters" \
	"$g/sys/class/infiniband/x/ports/nan" "$g/ethtool/eth0"
head -c 4096 /dev/urandom >"$g/sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent"
echo 99999999999999999999999999 >"$g/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_wait"
echo -- -12 >"$g/sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data"
printf 'rx_pause_ctrl_phy: banana\n\0\0\0: 12\n%5000s\n' x >"$g/ethtool/eth0/stats"
ln -s loop "$g/sys/class/infiniband/mlx5_0/ports/1/hw_counters/loop"
ln -s /dev/zero "$g/sys/class/infiniband/mlx5_0/ports/1/hw_counters/rp_cnp_handled"
echo eth0 >"$g/sys/class/infiniband/mlx5_0/ports/1/gid_attrs_ndev" 2>/dev/null
timeout -s KILL 10 "$TAILTRACE" rdma --sysfs-root "$g" -d 1 -j >"$TMP/rdma.out" 2>"$TMP/rdma.err"
rc=$?
tt_check "rdma --sysfs-root over garbage: no crash or hang (status $rc)" [ "$rc" -lt 128 ]
tt_check "rdma over garbage: stderr bounded ($(wc -l <"$TMP/rdma.err") lines)" [ "$(wc -l <"$TMP/rdma.err")" -le 20 ]
# a FIFO where a counter file should be: the reader must not block on it (sysfs
# attributes are regular files; open non-blocking and refuse anything else)
mkfifo "$g/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data"
timeout -s KILL 10 "$TAILTRACE" rdma --sysfs-root "$g" -d 1 -j >"$TMP/rdma.out" 2>"$TMP/rdma.err"
rc=$?
tt_check "rdma --sysfs-root with a FIFO as a counter: no hang (status $rc)" [ "$rc" -lt 128 ]

# ---- least exposure of record ----
port=19464
ip netns exec tt-rel-lc-s "$TAILTRACE" record -o "$TMP/rec" -i 1 --port 7410 --listen $port -d 60 \
	>"$TMP/rec.out" 2>"$TMP/rec.err" &
pr=$!
tt_wait_attached "$pr"
for _ in $(seq 1 30); do ls "$TMP/rec"/*.ttrec >/dev/null 2>&1 && break; sleep 0.2; done
ls_listen=$(ip netns exec tt-rel-lc-s ss -Hltn "sport = :$port" | awk '{print $4}')
kill -INT "$pr"; wait "$pr"; rc=$?
tt_check "record --listen $port binds loopback only: '$ls_listen'" [ "$ls_listen" = "127.0.0.1:$port" ]
modes=$(stat -c '%a' "$TMP/rec"/* | sort -u | tr '\n' ' ')
tt_check "record writes files 0600 ($modes) in a 0700 directory ($(stat -c %a "$TMP/rec"))" \
	[ "$modes" = "600 " -a "$(stat -c %a "$TMP/rec")" = 700 ]
tt_check "record exits 0 ($rc)" [ "$rc" = 0 ]
# exports carry the same data: report -o creates its file 0600 whatever the umask
(umask 022; "$TAILTRACE" report "$TMP/rec" --format folded -o "$TMP/rep.folded" 2>"$TMP/rep.err")
rc=$?
tt_check "report -o writes its file 0600 under umask 022 ($(stat -c %a "$TMP/rep.folded" 2>&1), status $rc)" \
	[ "$rc" = 0 -a "$(stat -c %a "$TMP/rep.folded" 2>/dev/null)" = 600 ]
# a --listen that cannot bind is refused before anything is loaded or created
ip netns exec tt-rel-lc-s python3 -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 19465)); s.listen(); time.sleep(30)' &
hold=$!
# wait until the port is really held: a fixed sleep lost the race on a loaded machine
for _ in $(seq 1 100); do
	ip netns exec tt-rel-lc-s ss -Hltn "sport = :19465" | grep -q . && break
	sleep 0.1
done
ip netns exec tt-rel-lc-s "$TAILTRACE" record -o "$TMP/rec-refused" --listen 19465 -d 5 \
	>"$TMP/rr.out" 2>"$TMP/rr.err"
rc=$?
kill "$hold" 2>/dev/null; wait "$hold" 2>/dev/null
tt_check "record --listen on a port in use: status $rc (want 2), one line ($(head -c 100 "$TMP/rr.err")), no -o directory made" \
	[ "$rc" = 2 -a "$(wc -l <"$TMP/rr.err")" = 1 -a ! -e "$TMP/rec-refused" ]

# ---- without capabilities ----
for cmd in hist explain top record probe rdma; do
	args=(-d 1)
	[ "$cmd" = probe ] && args=()
	[ "$cmd" = record ] && args=(-o "$TMP/np")
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all \
		"$TAILTRACE" "$cmd" "${args[@]}" >"$TMP/np.out" 2>"$TMP/np.err"
	rc=$?
	named=0; grep -q 'CAP_BPF' "$TMP/np.err" && named=1
	made=0; [ -e "$TMP/np" ] && made=1 # record: refused before its -o directory is made
	tt_check "$cmd as nobody: refused, status $rc, one line naming the capabilities, nothing made: $(head -c 120 "$TMP/np.err")" \
		[ "$rc" != 0 -a "$(wc -l <"$TMP/np.err")" = 1 -a "$named" = 1 -a "$made" = 0 ]
done

# ---- fuzzer wiring ----
tt_check "make fuzz runs tools/fuzz.sh" sh -c "make -C '$TT_ROOT' -n fuzz 2>/dev/null | grep -q tools/fuzz.sh"
tt_check "test_record_format replays tests/fuzz/corpus-regress" \
	grep -q 'tests/fuzz/corpus-regress' "$TT_ROOT/tests/unit/test_record_format.c"
if echo 'int LLVMFuzzerTestOneInput(const char *d, long n){return 0;}' |
	clang -fsanitize=fuzzer -x c - -o "$TMP/f" 2>/dev/null; then
	TT_BUILD="$TMP/fb" FUZZ_SECONDS=5 timeout 180 "$TT_ROOT/tools/fuzz.sh" >"$TMP/fuzz.log" 2>&1
	rc=$?
	# the run's own artifacts, not the checkout's state: a crash is a file libFuzzer wrote
	found=$(find "$TMP/fb/fuzz/artifacts" -type f 2>/dev/null | xargs -r -n1 basename | head -3)
	nart=$(find "$TMP/fb/fuzz/artifacts" -maxdepth 0 -type d 2>/dev/null | wc -l)
	tt_check "tools/fuzz.sh runs 5 s without a crash (status $rc, artifacts: ${found:-none})" \
		[ "$rc" = 0 -a "$nart" = 1 -a -z "$found" ]
else
	tt_skip "tools/fuzz.sh short run" "clang without -fsanitize=fuzzer"
fi
exit 0
