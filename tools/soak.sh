#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Soak: tailtrace `record` (and optionally `hist`) under connection and process churn for
# SOAK_SECONDS (default 600), sampling tailtrace's RSS and the occupancy of its bounded
# kernel maps (flows, hists, qdisc/rx stamps, threads) every SOAK_SAMPLE seconds. Prints
# one table line per sample and a closing JSON summary (SOAK_JSON=FILE also writes it):
# start/end RSS, max occupancy per map, connections and processes run, the counters
# tailtrace reported. tests/ns/test_soak.sh runs a short version and asserts on it;
# docs/reliability.md holds the figures of the full one.
#
# Also a library: sourced (`. tools/soak.sh`) it only defines the helpers the reliability
# tests share: namespaces tt-rel-* (198.19.0.0/16, 2001:db8:99::/48), tailtrace start and
# attach wait, the BPF object ids a process holds, map occupancy.
#
# Root only; all traffic stays inside the tt-rel-* namespaces it creates.
set -u

REL_ROOT=${TT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
REL_BUILD=${TT_BUILD:-$REL_ROOT/build}
# tt_wait_attached and the other shared test helpers
declare -F tt_wait_attached >/dev/null || . "$REL_ROOT/tests/lib.sh"
TAILTRACE=${TAILTRACE:-$REL_BUILD/tailtrace}
CHURN=${CHURN:-$REL_BUILD/churn}
REL_TAGS=()

# rel_net_up TAG N: namespaces tt-rel-TAG-c (client, 198.19.N.1, 2001:db8:99:N::1) and
# tt-rel-TAG-s (server, 198.19.N.2, 2001:db8:99:N::2) joined by a veth pair rel-TAG-c /
# rel-TAG-s. The client also owns 198.19.(N+100).0/24... as AnyIP (any source address in
# 198.19.(100+N).0/24 can be bound without assigning it), routed back by the server.
rel_net_up() {
	local tag=$1 n=$2 c=tt-rel-$1-c s=tt-rel-$1-s
	rel_net_down "$tag"
	ip netns add "$c" && ip netns add "$s" || return 1
	REL_TAGS+=("$tag")
	ip link add "rel-$tag-c" netns "$c" type veth peer name "rel-$tag-s" netns "$s" || return 1
	ip -n "$c" addr add "198.19.$n.1/24" dev "rel-$tag-c"
	ip -n "$s" addr add "198.19.$n.2/24" dev "rel-$tag-s"
	ip -n "$c" addr add "2001:db8:99:$n::1/64" dev "rel-$tag-c" nodad
	ip -n "$s" addr add "2001:db8:99:$n::2/64" dev "rel-$tag-s" nodad
	for ns in "$c" "$s"; do
		ip -n "$ns" link set lo up
		ip netns exec "$ns" sysctl -qw net.ipv4.tcp_tw_reuse=1 \
			net.ipv4.ip_local_port_range="1024 65000" net.core.somaxconn=65535 \
			net.ipv4.tcp_max_syn_backlog=65535 >/dev/null
	done
	ip -n "$c" link set "rel-$tag-c" up
	ip -n "$s" link set "rel-$tag-s" up
	ip -n "$c" route add local "198.19.$((100 + n)).0/24" dev lo
	ip -n "$s" route add "198.19.$((100 + n)).0/24" via "198.19.$n.1"
	ip -n "$c" -6 route add local "2001:db8:99:$((100 + n))::/64" dev lo
	ip -n "$s" -6 route add "2001:db8:99:$((100 + n))::/64" via "2001:db8:99:$n::1"
	ip netns exec "$c" sysctl -qw net.ipv6.ip_nonlocal_bind=1 >/dev/null
	# wait for carrier on both ends so the first SYN is not lost
	for _ in $(seq 1 50); do
		ip -n "$c" link show "rel-$tag-c" | grep -q LOWER_UP &&
			ip -n "$s" link show "rel-$tag-s" | grep -q LOWER_UP && return 0
		sleep 0.1
	done
	return 1
}

rel_net_down() {
	local ns
	for ns in "tt-rel-$1-c" "tt-rel-$1-s"; do
		[ -e "/run/netns/$ns" ] || continue
		# end what still runs in it (only processes of this namespace)
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	done
}

rel_net_down_all() {
	local tag
	for tag in "${REL_TAGS[@]}"; do rel_net_down "$tag"; done
	REL_TAGS=()
}

# rel_ids PID KIND: the ids of the BPF objects (prog, map or link) the process holds fds of.
rel_ids() {
	local pid=$1 kind=$2 f
	for f in /proc/"$pid"/fdinfo/*; do
		sed -n "s/^${kind}_id:[[:space:]]*\([0-9]*\)/\1/p" "$f" 2>/dev/null
	done | sort -un
}

# rel_map_id PID NAME: id of the map called NAME (bpftool truncates names to 15 chars)
# among the maps the process holds.
rel_map_id() {
	local pid=$1 name=$2 id
	for id in $(rel_ids "$pid" map); do
		if bpftool map show id "$id" 2>/dev/null | grep -q " name ${name:0:15} "; then
			echo "$id"
			return 0
		fi
	done
	return 1
}

# rel_map_count ID...: number of keys in each map (walked with BPF_MAP_GET_NEXT_KEY through
# the bpf(2) syscall: bpftool's dump prints every per-CPU value, far too slow here); for
# the stamp arrays, the number of live stamps.
rel_map_count() {
	python3 - "$@" <<'EOF'
import ctypes, ctypes.util, os, sys
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
NR_BPF = {"x86_64": 321, "aarch64": 280}.get(os.uname().machine, 321)
BPF_MAP_GET_NEXT_KEY, BPF_MAP_GET_FD_BY_ID, BPF_OBJ_GET_INFO_BY_FD = 4, 14, 15
def bpf(cmd, attr):
    r = libc.syscall(NR_BPF, cmd, ctypes.byref(attr), ctypes.sizeof(attr))
    return r, ctypes.get_errno()
out = []
for mid in sys.argv[1:]:
    attr = (ctypes.c_uint8 * 128)()
    ctypes.c_uint32.from_buffer(attr, 0).value = int(mid)
    fd, e = bpf(BPF_MAP_GET_FD_BY_ID, attr)
    if fd < 0:
        out.append("-1"); continue
    info = (ctypes.c_uint8 * 256)()
    attr = (ctypes.c_uint8 * 128)()
    ctypes.c_uint32.from_buffer(attr, 0).value = fd
    ctypes.c_uint32.from_buffer(attr, 4).value = 256
    ctypes.c_uint64.from_buffer(attr, 8).value = ctypes.addressof(info)
    bpf(BPF_OBJ_GET_INFO_BY_FD, attr)
    mtype = ctypes.c_uint32.from_buffer(info, 0).value
    ksize = ctypes.c_uint32.from_buffer(info, 8).value
    vsize = ctypes.c_uint32.from_buffer(info, 12).value
    nent = ctypes.c_uint32.from_buffer(info, 16).value
    if mtype == 2 and ctypes.c_uint32.from_buffer(info, 20).value & 1024:
        # a stamp array (BPF_F_MMAPABLE): buckets of two ways, each starting with its
        # owner (the skb address), 0 when free: count the live ways
        import mmap
        length = (vsize * nent + mmap.PAGESIZE - 1) // mmap.PAGESIZE * mmap.PAGESIZE
        m = mmap.mmap(fd, length, mmap.MAP_SHARED, mmap.PROT_READ)
        half = vsize // 2
        n = sum(1 for i in range(nent) for w in (0, half)
                if m[i * vsize + w:i * vsize + w + 8] != bytes(8))
        m.close(); os.close(fd)
        out.append(str(n)); continue
    key = (ctypes.c_uint8 * ksize)(); nxt = (ctypes.c_uint8 * ksize)()
    n, first = 0, True
    while n < 10_000_000:
        attr = (ctypes.c_uint8 * 128)()
        ctypes.c_uint32.from_buffer(attr, 0).value = fd
        ctypes.c_uint64.from_buffer(attr, 8).value = 0 if first else ctypes.addressof(key)
        ctypes.c_uint64.from_buffer(attr, 16).value = ctypes.addressof(nxt)
        r, e = bpf(BPF_MAP_GET_NEXT_KEY, attr)
        if r < 0:
            break
        ctypes.memmove(key, nxt, ksize); first = False; n += 1
    os.close(fd)
    out.append(str(n))
print(" ".join(out))
EOF
}

# rel_rss_kb PID: resident set of the process in KiB.
rel_rss_kb() {
	awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0
}

# globals of soak_main, for its EXIT trap
tmp="" tpid="" cpid="" fpid="" spid=""
soak_cleanup() {
	local p
	for p in $cpid $fpid $spid; do kill "$p" 2>/dev/null; done
	[ -n "$tpid" ] && kill -INT "$tpid" 2>/dev/null && wait "$tpid" 2>/dev/null
	wait 2>/dev/null
	rel_net_down soak
	[ -n "$tmp" ] && rm -rf "$tmp"
}

soak_main() {
	local secs=${SOAK_SECONDS:-600} every=${SOAK_SAMPLE:-10} port=${SOAK_PORT:-7300}
	local n=${SOAK_NET:-30} out=${SOAK_JSON:-}
	local t0 t elapsed maps ids names=(flows hists qdisc_stamps rx_stamps threads)
	local -a rss_samples=()
	[ "$(id -u)" -eq 0 ] || { echo "soak: needs root" >&2; return 1; }
	for b in "$TAILTRACE" "$CHURN"; do
		[ -x "$b" ] || { echo "soak: $b not built (make)" >&2; return 1; }
	done
	tmp=$(mktemp -d) tpid="" cpid="" fpid="" spid=""
	trap 'soak_cleanup' EXIT
	rel_net_up soak "$n" || { echo "soak: network namespaces failed" >&2; return 1; }
	ip netns exec tt-rel-soak-s "$CHURN" server --listen 198.19.$n.2 --port "$port" \
		--nports 8 --duration $((secs + 60)) >"$tmp/server.out" 2>&1 &
	spid=$!
	# record is the always-on mode: requests, slow requests, rotation, metrics
	"$TAILTRACE" record -o "$tmp/rec" -i 5 --max-size 4M --port "$port" --port $((port + 1)) \
		--port $((port + 2)) --port $((port + 3)) --port $((port + 4)) --port $((port + 5)) \
		--port $((port + 6)) --port $((port + 7)) -d $((secs + 30)) \
		>"$tmp/record.out" 2>"$tmp/record.err" &
	tpid=$!
	tt_wait_attached "$tpid" || { echo "soak: record did not start:" >&2;
		cat "$tmp/record.err" >&2; return 1; }
	maps=""
	for m in "${names[@]}"; do
		ids=$(rel_map_id "$tpid" "$m") || ids=0
		maps="$maps $ids"
	done
	# connection churn: many short connections (distinct source addresses, 8 ports), one
	# exchange each; process churn: one process per connection alongside
	ip netns exec tt-rel-soak-c "$CHURN" client --connect 198.19.$n.2 --port "$port" \
		--nports 8 --src-base 198.19.$((100 + n)).1 --src-count 250 --parallel 64 \
		--duration "$secs" >"$tmp/churn.json" 2>"$tmp/churn.err" &
	cpid=$!
	ip netns exec tt-rel-soak-c "$CHURN" client --connect 198.19.$n.2 --port "$port" \
		--nports 8 --fork --parallel 8 --reqs 3 --duration "$secs" \
		>"$tmp/fork.json" 2>"$tmp/fork.err" &
	fpid=$!
	t0=$SECONDS
	printf '%6s %9s %7s %7s %7s %7s %7s %7s\n' t_s rss_kb flows hists tx_st qd_st rx_st \
		threads >&2
	: >"$tmp/samples"
	while kill -0 "$cpid" 2>/dev/null || kill -0 "$fpid" 2>/dev/null; do
		sleep "$every"
		elapsed=$((SECONDS - t0))
		local rss counts
		rss=$(rel_rss_kb "$tpid")
		counts=$(rel_map_count $maps)
		echo "$elapsed $rss $counts" >>"$tmp/samples"
		printf '%6s %9s %7s %7s %7s %7s %7s %7s\n' "$elapsed" "$rss" $counts >&2
		[ $((SECONDS - t0)) -gt $((secs + 60)) ] && break
	done
	wait "$cpid" "$fpid" 2>/dev/null
	cpid="" fpid=""
	sleep 2
	# after the churn: what is left in the maps (the flows of closed sockets must be gone)
	local after
	after=$(rel_map_count $maps)
	kill -INT "$tpid"
	wait "$tpid"
	local trc=$?
	tpid=""
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	spid=""
	"$TAILTRACE" report "$tmp/rec" -j >"$tmp/report.json" 2>"$tmp/report.err"
	python3 - "$tmp" "$secs" "$trc" "$after" "$out" <<'EOF'
import json, os, sys
tmp, secs, trc, after, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
names = ["flows", "hists", "qdisc_stamps", "rx_stamps", "threads"]
rows = [list(map(int, l.split())) for l in open(f"{tmp}/samples") if l.strip()]
def j(p):
    try:
        return json.loads(open(p).read().strip().splitlines()[-1])
    except Exception:
        return {}
churn, fork = j(f"{tmp}/churn.json"), j(f"{tmp}/fork.json")
rep = {}
try:
    rep = json.load(open(f"{tmp}/report.json"))
except Exception:
    pass
recsize = sum(os.path.getsize(os.path.join(f"{tmp}/rec", f)) for f in os.listdir(f"{tmp}/rec"))
# the first sample is the warm-up: RSS growth is measured from it
s = {
    "seconds": secs,
    "record_exit": trc,
    "samples": len(rows),
    "rss_kb_first": rows[0][1] if rows else 0,
    "rss_kb_last": rows[-1][1] if rows else 0,
    "rss_kb_max": max((r[1] for r in rows), default=0),
    "rss_kb_mid": rows[len(rows) // 2][1] if rows else 0,
    "max_occupancy": {n: max((r[2 + i] for r in rows), default=0) for i, n in enumerate(names)},
    "after_churn": dict(zip(names, map(int, after.split()))),
    "connections": churn.get("conns", 0) + fork.get("conns", 0),
    "connections_failed": churn.get("failed", 0) + fork.get("failed", 0),
    "processes": fork.get("conns", 0) + fork.get("failed", 0),
    "exchanges": churn.get("exchanges", 0) + fork.get("exchanges", 0),
    "record_dir_bytes": recsize,
    "report": {
        "intervals": rep.get("window", {}).get("intervals"),
        "requests": (rep.get("attribution") or {}).get("requests"),
        "hist_evicted": rep.get("hist_evicted"),
        "events_lost": rep.get("events_lost"),
        "counters": {k: v for k, v in rep.get("counters", {}).items()
                     if k.endswith(("_fail", "_lost", "inserts", "deletes"))},
    },
}
txt = json.dumps(s)
print(txt)
if out:
    open(out, "w").write(txt + "\n")
EOF
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	soak_main "$@"
fi
