# SPDX-License-Identifier: GPL-2.0
# Helpers for the TCP stage tests (tests/ns/test_tcp_*.sh): run `tailtrace hist -j` in the
# background around a workload, read stage rows and counters out of its JSON, and sample the
# kernel's own figures (tc -s qdisc backlog and sent packets, ss -ti srtt, nstat) while the
# workload runs. Sourced after tests/lib.sh; needs $TMP.

declare -A TCP_HIST_PID=()

# tcp_hist_start NAME ARGS...: `tailtrace hist -j ARGS` until tcp_hist_stop NAME (SIGINT),
# JSON in $TMP/NAME.json, stderr in $TMP/NAME.err. Returns once the programs are attached
# (its bpf_link fds stop growing), or 1 if it exited or did not attach within 20 s.
tcp_hist_start() {
	local name=$1; shift
	timeout -s INT --kill-after=5 120 "$TAILTRACE" hist -j "$@" \
		>"$TMP/$name.json" 2>"$TMP/$name.err" &
	local tpid=$! child=""
	TCP_HIST_PID[$name]=$tpid
	# the programs are held by tailtrace, the child of timeout
	for _ in $(seq 1 50); do
		kill -0 "$tpid" 2>/dev/null || return 1
		child=$(pgrep -P "$tpid" | head -1)
		[ -n "$child" ] && break
		sleep 0.1
	done
	[ -n "$child" ] && tt_wait_attached "$child" 200
}

# tcp_hist_stop NAME: SIGINT (the final JSON is written), wait, return its exit status.
tcp_hist_stop() {
	local pid=${TCP_HIST_PID[$1]:-}
	[ -n "$pid" ] || return 1
	kill -INT "$pid" 2>/dev/null
	wait "$pid"
	local rc=$?
	unset "TCP_HIST_PID[$1]"
	return $rc
}

tcp_hist_kill_all() {
	local n
	for n in "${!TCP_HIST_PID[@]}"; do
		kill -INT "${TCP_HIST_PID[$n]}" 2>/dev/null
		wait "${TCP_HIST_PID[$n]}" 2>/dev/null
	done
	TCP_HIST_PID=()
}

# tcp_stage FILE STAGE GROUP_REGEX FIELD [PLACE_REGEX]: one figure of the rows of STAGE
# whose group (and place) match. FIELD is count, mean_us, max_us, or p50_us, p90_us,
# p99_us, p999_us: with one matching row its own value, with several the merged buckets'
# nearest-rank value (bucket midpoint). Prints "none" when no row matches.
tcp_stage() {
	python3 - "$@" <<'EOF'
import json, re, sys
f, stage, grp, field = sys.argv[1:5]
place = sys.argv[5] if len(sys.argv) > 5 else None
try:
    d = json.load(open(f))
except Exception:
    print("none"); sys.exit(0)
rows = [r for r in d.get("stages", []) if r["name"] == stage and re.search(grp, r["group"])
        and (place is None or re.search(place, r["place"] or ""))]
if not rows:
    print("none"); sys.exit(0)
if field == "count":
    print(sum(r["count"] for r in rows)); sys.exit(0)
if len(rows) == 1:
    print(rows[0][field]); sys.exit(0)
n = sum(r["count"] for r in rows)
if field == "mean_us":
    print(sum(r["mean_us"] * r["count"] for r in rows) / n); sys.exit(0)
if field == "max_us":
    print(max(r["max_us"] for r in rows)); sys.exit(0)
q = {"p50_us": 50, "p90_us": 90, "p99_us": 99, "p999_us": 99.9}[field]
b = {}
for r in rows:
    for lo, hi, c in r["buckets"]:
        b[(lo, hi)] = b.get((lo, hi), 0) + c
rank = -(-int(q * 10) * n // 1000)
seen = 0
for (lo, hi), c in sorted(b.items()):
    seen += c
    if seen >= rank:
        print((lo + (hi if hi is not None else lo)) / 2 / 1000.0); break
EOF
}

# tcp_groups FILE STAGE: the distinct groups that have rows of STAGE ("all" rows included).
tcp_groups() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join(sorted({r["group"].replace(" ", "_") for r in d["stages"] if sys.argv[2] in ("*", r["name"])})))' "$1" "$2" 2>/dev/null
}

# tcp_counter FILE KEY: one of the "counters" (drop_reasons excluded).
tcp_counter() {
	python3 -c 'import json, sys
try:
    print(json.load(open(sys.argv[1]))["counters"][sys.argv[2]])
except Exception:
    print("none")' "$1" "$2"
}

# tcp_qdisc_root NS DEV FIELD: a figure of the root qdisc of NS/DEV from `tc -s -j`:
# packets (sent), bytes, drops, backlog (bytes), qlen.
tcp_qdisc_root() {
	ip netns exec "$1" tc -s -j qdisc show dev "$2" 2>/dev/null | python3 -c 'import json, sys
for q in json.load(sys.stdin):
    if q.get("root"):
        print(q.get(sys.argv[1], "none")); break
else:
    print("none")' "$3"
}

# tcp_backlog_sampler NS DEV OUT STOPFILE: root-qdisc backlog bytes every ~50 ms until
# STOPFILE exists (at most 30 s). Text parsing: one fork of tc per sample.
tcp_backlog_sampler() {
	local i
	for i in $(seq 1 600); do
		[ -e "$4" ] && break
		ip netns exec "$1" tc -s qdisc show dev "$2" | awk '
			/^qdisc .* root/ { root = 1; next }
			/^qdisc/ { root = 0 }
			root && /backlog/ { v = $2; m = 1
				if (v ~ /Mb$/) m = 1048576; else if (v ~ /Kb$/) m = 1024
				sub(/[KM]?b$/, "", v); print v * m; exit }'
		sleep 0.05
	done >"$3"
}

# tcp_ss_sampler NS FILTER OUT STOPFILE: the srtt (ms) of every connection `ss -tin FILTER`
# shows, one line "srtt" per connection per sample, every ~100 ms until STOPFILE exists.
tcp_ss_sampler() {
	local i
	for i in $(seq 1 300); do
		[ -e "$4" ] && break
		# shellcheck disable=SC2086 # FILTER is an ss filter expression (several words)
		ip netns exec "$1" ss -tinH $2 | grep -o ' rtt:[0-9.]*' | cut -d: -f2
		sleep 0.1
	done >"$3"
}

# tcp_retrans_segs NS: the namespace's Tcp RetransSegs (absolute, history untouched).
tcp_retrans_segs() {
	ip netns exec "$1" nstat -asz TcpRetransSegs 2>/dev/null | awk '$1 == "TcpRetransSegs" { print $2; f = 1 }
		END { if (!f) print "none" }'
}

# tcp_nstat_all NS: every absolute counter of the namespace, "NAME VALUE" lines.
tcp_nstat_all() {
	ip netns exec "$1" nstat -asz 2>/dev/null | awk '$1 !~ /^#/ { print $1, $2 }'
}

# tcp_quantile FILE Q: nearest-rank Q-quantile (0..1) of the numbers in FILE, or "none".
tcp_quantile() {
	sort -g "$1" | awk -v q="$2" '{ v[++n] = $1 } END {
		if (!n) { print "none"; exit }
		r = int(q * n); if (r < q * n) r++; if (r < 1) r = 1; print v[r] }'
}

tcp_mean() {
	awk '{ s += $1; n++ } END { if (n) printf "%.3f\n", s / n; else print "none" }' "$1"
}

# tcp_ratio_ok A B TOL: A and B are numbers and |A - B| <= TOL * B.
tcp_ratio_ok() {
	case "$1$2" in *none*|"") return 1;; esac
	tt_within "$1" "$2" "$3"
}

# tcp_fmt_ms US: microseconds as "12.34ms".
tcp_fmt_ms() {
	case "$1" in none|"") echo "none"; return;; esac
	awk -v v="$1" 'BEGIN { printf "%.2fms", v / 1000 }'
}
