#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# --by pod end to end on a real cgroup v2 tree named like the kubelet's (cgroupfs driver:
# kubepods-*/pod<UID>/<container ID>): a server in one "pod" (testbed namespace tt-srv),
# its clients in another (tt-cli), and one more client outside any pod. Every group that
# `hist --by pod -j` prints must be one of the three owners, named as the cgroup tree says:
# the two pods by UID and short container ID, the outsider as "cgroup N" with N the inode
# of its cgroup directory (the cgroup v2 id). The server's first samples come in softirq,
# before its process reads the socket: they too must land in the server's pod. The same
# with --cgroup pointing at the tree, as the DaemonSet runs it (docs/deploy.md).
set -u
. "$(dirname "$0")/../lib.sh"
tt_require_root

mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
[ -n "$mnt" ] || { tt_fail "a cgroup v2 mount"; exit 1; }
top=$mnt/kubepods-tt$$
uid_srv=5b3f0c1e-8d2a-4c61-9f7e-0a1b2c3d4e5f
uid_cli=0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0
cid_srv=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
cid_cli=fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210
cg_srv=$top/pod$uid_srv/$cid_srv
cg_cli=$top/pod$uid_cli/$cid_cli
cg_out=$top/other # a cgroup that is no pod
W=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	"$TESTBED" down >/dev/null 2>&1
	rmdir "$cg_srv" "$cg_cli" "$cg_out" "$top/pod$uid_srv" "$top/pod$uid_cli" "$top" \
		2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$cg_srv" "$cg_cli" "$cg_out" || { tt_fail "a cgroup tree under $mnt"; exit 1; }

tt_testbed_lock
tt_testbed_up
PORT=7451

# in_cgroup DIR CMD...: CMD run as a member of cgroup DIR from its first instruction
in_cgroup() {
	local dir=$1
	shift
	sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$dir" "$@"
}

# traffic SECONDS: a server in the server pod, clients in the client pod and outside
traffic() {
	in_cgroup "$cg_srv" ip netns exec "$TB_NS_SRV" "$LOADGEN" server --listen :: \
		--port "$PORT" --duration $(($1 + 2)) >/dev/null 2>&1 &
	pids+=($!)
	sleep 0.5
	# new connections all along: each accepted socket's first packets come in softirq
	in_cgroup "$cg_cli" bash -c 'end=$((SECONDS + $1))
		while [ $SECONDS -lt $end ]; do
			ip netns exec "$2" "$3" client --connect "$4" --port "$5" --conns 2 \
				--requests 20 --rate 200 --duration 2 >/dev/null 2>&1
		done' _ "$1" "$TB_NS_CLI" "$LOADGEN" "$TB_SRV4" "$PORT" &
	pids+=($!)
	in_cgroup "$cg_out" ip netns exec "$TB_NS_CLI" "$LOADGEN" client --connect "$TB_SRV4" \
		--port "$PORT" --conns 1 --rate 50 --duration "$1" >/dev/null 2>&1 &
	pids+=($!)
}

# groups FILE: the distinct groups of a hist -j output, with their sample counts
groups() {
	python3 -c 'import json,sys,collections
c = collections.Counter()
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        for s in json.loads(line).get("stages", []):
            c[s["group"]] += s["count"]
for g, n in sorted(c.items()):
    print("%s\t%d" % (g, n))' "$1"
}

want_srv="pod $uid_srv container ${cid_srv:0:12}"
want_cli="pod $uid_cli container ${cid_cli:0:12}"
want_out="cgroup $(stat -c %i "$cg_out")"

# check_groups NAME FILE
check_groups() {
	local name=$1 file=$2 g n bad=0 seen_srv=0 seen_cli=0 seen_out=0 found
	found=$(groups "$file")
	while IFS=$'\t' read -r g n; do
		[ -n "$g" ] || continue # no group at all: the checks below say so
		case "$g" in
		"$want_srv") seen_srv=1 ;;
		"$want_cli") seen_cli=1 ;;
		"$want_out") seen_out=1 ;;
		*) bad=1; echo "# $name: unexpected group '$g' ($n samples)" ;;
		esac
	done <<<"$found"
	sed 's/^/# /' <<<"$found"
	tt_check "$name: the server pod's traffic is labelled '$want_srv'" [ $seen_srv = 1 ]
	tt_check "$name: the client pod's traffic is labelled '$want_cli'" [ $seen_cli = 1 ]
	tt_check "$name: the client outside any pod is '$want_out'" [ $seen_out = 1 ]
	tt_check "$name: no other group (no 'cgroup 0' for samples taken in softirq)" [ $bad = 0 ]
}

traffic 5
"$TAILTRACE" hist --by pod --port "$PORT" -d 5 -j >"$W/hist.json" 2>"$W/err" ||
	{ tt_fail "hist --by pod exits 0"; cat "$W/err"; }
wait "${pids[@]}" 2>/dev/null
pids=()
check_groups "hist --by pod" "$W/hist.json"

traffic 5
"$TAILTRACE" hist --by pod --cgroup "$top" --port "$PORT" -d 5 -j >"$W/hist2.json" \
	2>"$W/err2" || { tt_fail "hist --by pod --cgroup TREE exits 0"; cat "$W/err2"; }
wait "${pids[@]}" 2>/dev/null
pids=()
check_groups "hist --by pod --cgroup TREE" "$W/hist2.json"
exit 0
