#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The image of `make image` run as the DaemonSet runs it: podman with runc, and from
# dist/kubernetes/tailtrace-daemonset.yaml (tests/ns/podman_args.py) the container's
# securityContext (capabilities, no new privileges, read-only root, user), its seccomp
# profile (the shipped dist/seccomp/tailtrace.json, checked to be what
# tools/gen-seccomp.py makes of the runtime's default), host network and PID namespaces,
# volumes, memory limit and command. record must attach, serve /metrics, label the
# traffic of a server in a kubelet-named pod cgroup with that pod, and on SIGTERM leave
# segments whose requests match the load generator's count. Then what goes wrong: under
# the runtime's default seccomp profile, and with each of the capabilities record cannot
# do without dropped, one error line naming the cause; without an optional one it records.
set -u
. "$(dirname "$0")/../lib.sh"
tt_require_root

ds=$TT_ROOT/dist/kubernetes/tailtrace-daemonset.yaml
default_profile=/usr/share/containers/seccomp.json
if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
	"$TT_ROOT/tools/deps.sh" >/dev/null 2>&1
fi
if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
	tt_skip "the image under podman" "podman or runc not installable (tools/deps.sh)"
	exit 0
fi
if [ ! -x "$TAILTRACE" ] || [ ! -x "$LOADGEN" ]; then
	tt_fail "build/tailtrace and build/loadgen exist (run make first)"
	exit 1
fi

W=$(mktemp -d)
img=localhost/tailtrace-test:$$
name=tt-image-$$
mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
top=$mnt/kubepods-tt$$
uid=3c9a1f7e-5b2d-4e8a-9c61-7d0e1f2a3b4c
cid=89abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567
cg=$top/pod$uid/$cid
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	podman rm -f "$name" >/dev/null 2>&1
	podman rmi -f "$img" >/dev/null 2>&1
	"$TESTBED" down >/dev/null 2>&1
	rmdir "$cg" "$top/pod$uid" "$top" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT

# --- the seccomp profile: what the generator makes of this runtime's default ---
if "$TT_ROOT/tools/gen-seccomp.py" "$default_profile" "$ds" >"$W/profile.json" 2>"$W/gen.err" &&
	cmp -s "$W/profile.json" "$TT_ROOT/dist/seccomp/tailtrace.json"; then
	tt_ok "dist/seccomp/tailtrace.json is $default_profile for the manifest's capabilities plus bpf, perf_event_open"
else
	cat "$W/gen.err"; diff "$TT_ROOT/dist/seccomp/tailtrace.json" "$W/profile.json" | head
	tt_fail "dist/seccomp/tailtrace.json is what tools/gen-seccomp.py writes (run it and commit)"
fi

# --- the image ---
if "$TT_ROOT/tools/image.sh" "$TAILTRACE" "$img" >"$W/image.log" 2>&1; then
	tt_ok "tools/image.sh (make image) builds $(cat "$W/image.log")"
else
	cat "$W/image.log"
	tt_fail "tools/image.sh (make image) builds the image"
	exit 1
fi

# the options of the manifest's pod; the host's cgroup v2 tree stands for /sys/fs/cgroup
# where v1 controllers are mounted there (this machine: v2 at /sys/fs/cgroup/unified)
state=$W/state
mkdir -p "$state" "$cg"
port=$((20000 + $$ % 20000))
node=node-$$
# run_args MODE: the podman run arguments, the image and its command, one a line; the
# recording interval shortened to 1 s and the metrics on a loopback port of ours
run_args() {
	local a prev=""
	python3 "$TT_ROOT/tests/ns/podman_args.py" "$ds" "$TT_ROOT/dist/seccomp" "$1" "$node" \
		"$state" "$mnt" | while IFS= read -r a; do
		case $prev in
		--interval) a=1 ;;
		--listen) a=127.0.0.1:$port ;;
		esac
		[ "$a" = IMAGE ] && a=$img
		printf '%s\n' "$a"
		prev=$a
	done
}
# runc: crun refuses this VM's cgroup layout; the VM forbids raising these limits
limits=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
mapfile -t args < <(run_args manifest)
if [ ${#args[@]} -lt 10 ]; then
	tt_fail "podman_args.py reads the manifest"
	exit 1
fi
echo "# podman run ${args[*]}"

tt_testbed_lock
tt_testbed_up
PORT=7461

# --- record as deployed, on a pod's traffic ---
podman run -d --name "$name" "${limits[@]}" "${args[@]}" >/dev/null 2>"$W/run.err"
cpid=$(podman inspect --format '{{.State.Pid}}' "$name" 2>/dev/null)
if [ -n "$cpid" ] && [ "$cpid" != 0 ] && tt_wait_attached "$cpid"; then
	tt_ok "record attached in the container (pid $cpid on the host: hostPID)"
else
	cat "$W/run.err"; podman logs "$name" 2>&1 | tail -5
	tt_fail "record attached in the container"
	exit 1
fi
sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$cg" \
	ip netns exec "$TB_NS_SRV" "$LOADGEN" server --listen :: --port "$PORT" --duration 12 \
	>/dev/null 2>&1 &
pids+=($!)
sleep 0.5
ip netns exec "$TB_NS_CLI" "$LOADGEN" client --connect "$TB_SRV4" --port "$PORT" --conns 2 \
	--rate 200 --duration 4 --json "$W/client.json" >/dev/null 2>&1
sent=$(tt_json "$W/client.json" requests)
sleep 1.5 # one more interval: the last requests in a snapshot
curl -s --max-time 5 "http://127.0.0.1:$port/metrics" >"$W/metrics" 2>/dev/null
group="pod $uid container ${cid:0:12}"
tt_check "/metrics served on the host's network: tailtrace families for host=\"$node\"" \
	grep -q "^tailtrace_.*host=\"$node\"" "$W/metrics"
tt_check "/metrics labels the server pod's traffic group=\"$group\"" \
	grep -q "group=\"$group\"" "$W/metrics"
podman stop --time 10 "$name" >/dev/null 2>&1
rc=$(podman inspect --format '{{.State.ExitCode}}' "$name" 2>/dev/null)
podman logs "$name" >"$W/record.log" 2>&1
podman rm -f "$name" >/dev/null 2>&1
tt_check "SIGTERM (podman stop): record flushes and exits 0 (exit ${rc:-?})" [ "${rc:-x}" = 0 ]
nseg=$(ls "$state"/seg-*.ttrec 2>/dev/null | wc -l)
tt_check "segments written to the state volume ($nseg)" [ "$nseg" -gt 0 ]
"$TAILTRACE" report "$state" --format json >"$W/report.json" 2>"$W/report.err"
got=$(tt_json "$W/report.json" attribution.roles.server 2>/dev/null)
tt_check "the segments hold the server's requests: ${got:-?} against the load generator's ${sent:-?}" \
	eval '[ "${sent:-0}" -ge 200 ] && tt_within "${got:-0}" "$sent" 0.02'
[ -s "$W/report.err" ] && sed 's/^/# report: /' "$W/report.err"

# brief MODE [ARGS...]: record run briefly under MODE; its exit status, and its stderr
# in $W/err
brief() {
	local mode=$1 a
	shift
	mapfile -t a < <(run_args "$mode")
	podman run --rm "${limits[@]}" "${a[@]}" "$@" >/dev/null 2>"$W/err"
}

# --- the runtime's default seccomp profile: bpf() refused, the line says seccomp ---
brief runtime-default
rc=$?
sed 's/^/# /' "$W/err"
tt_check "under the runtime's default seccomp profile: exit 1, one line, naming the seccomp filter" \
	eval '[ $rc = 1 ] && [ "$(wc -l <"$W/err")" = 1 ] &&
		grep -q "error: loading the BPF programs failed: bpf() is blocked by a seccomp filter (Seccomp: 2" "$W/err"'
# with -v, libbpf's guess (RLIMIT_MEMLOCK, the kernel's config) gives way to the cause too
brief runtime-default -v
grep -v '^libbpf: \(prog\|map\) ' "$W/err" | grep -i 'memlock\|refused' | sed 's/^/# /'
tt_check "with -v: no 'RLIMIT_MEMLOCK is set to big enough value' from libbpf, the seccomp filter named once in its place" \
	eval '! grep -q "big enough value" "$W/err" &&
		[ "$(grep -c "^libbpf: a trivial BPF program was refused: bpf() is blocked by a seccomp filter" "$W/err")" = 1 ]'

# --- each capability dropped in turn: the ones record cannot do without are named; without
# any other it records ---
required=" BPF PERFMON NET_ADMIN "
for cap in $(python3 -c 'import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))["spec"]["template"]["spec"]["containers"][0]
print(" ".join(c["securityContext"]["capabilities"]["add"]))' "$ds"); do
	rm -f "$state"/seg-*
	if [[ $required == *" $cap "* ]]; then
		brief "drop:$cap"
		rc=$?
		sed 's/^/# /' "$W/err"
		tt_check "without CAP_$cap: exit 1, one line naming it" \
			eval '[ $rc = 1 ] && [ "$(wc -l <"$W/err")" = 1 ] &&
				grep -q "error: CAP_$cap is missing (CapEff [0-9a-f]*)" "$W/err"'
	else
		brief "drop:$cap" --duration 2
		rc=$?
		sed 's/^/# /' "$W/err"
		tt_check "without CAP_$cap: record runs (exit $rc) and writes segments" \
			eval '[ $rc = 0 ] && ls "$state"/seg-* >/dev/null 2>&1'
	fi
done
exit 0
