#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# What `make install` ships, checked against what it describes: the man pages say what
# --help says (regenerated and compared), bash completion offers exactly the options each
# command accepts, `make install DESTDIR=` installs the expected files, and
# `systemd-analyze verify` accepts the service. Needs no root.
set -u
. "$(dirname "$0")/../lib.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ ! -x "$TAILTRACE" ]; then
	tt_fail "build/tailtrace exists (run make first)"
	exit 1
fi
cmds=$("$TAILTRACE" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z]*\) .*/\1/p')
tt_check "tailtrace --help lists commands ($(echo $cmds))" test -n "$cmds"

# --- man pages ---
mkdir "$work/man"
if "$TT_ROOT/tools/gen-man.py" "$TAILTRACE" "$work/man" 2>"$work/gen.err" &&
	diff -r "$TT_ROOT/man" "$work/man" >"$work/man.diff"; then
	tt_ok "man/ is what tools/gen-man.py writes from --help ($(ls "$work/man" | wc -l) pages)"
else
	cat "$work/gen.err"; head -20 "$work/man.diff"
	tt_fail "man/ is what tools/gen-man.py writes from --help (run 'make man' and commit)"
fi
missing=""
for c in $cmds; do
	page=$TT_ROOT/man/tailtrace-$c.8
	[ -f "$page" ] || { missing+=" $c(no page)"; continue; }
	# every long option --help names appears in the rendered page
	for o in $("$TAILTRACE" "$c" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
		MANWIDTH=200 man -l "$page" 2>/dev/null | grep -qF -- "$o" || missing+=" $c:$o"
	done
done
tt_check "every command has a page naming every option of its --help${missing:+ (missing:$missing)}" \
	test -z "$missing"
warn=$(for f in "$TT_ROOT"/man/*.8; do groff -man -Tutf8 -ww -z "$f" 2>&1; done)
tt_check "groff renders the pages without warnings${warn:+: $warn}" test -z "$warn"
bad=$(for f in "$TT_ROOT"/man/*.8; do lexgrog "$f" >/dev/null 2>&1 || echo "$f"; done)
tt_check "lexgrog (mandb/whatis) parses every NAME section${bad:+ (not: $bad)}" test -z "$bad"

# --- bash completion ---
# the options a command accepts: each long option of the option table, tried on the
# command; the parser rejects one that does not apply before it looks at --help
all_long=$(sed -n "s/^\tX([A-Z_]*, \"\([a-z-]*\)\", \(0\|'.'\), .*/--\1/p" \
	"$TT_ROOT/user/cmd/option_table.h")
tt_check "option_table.h's long options read ($(echo $all_long | wc -w) options)" \
	test "$(echo $all_long | wc -w)" -gt 10
complete_words() { # WORDS...: what the completion offers for the last word
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _tailtrace
		printf "%s\n" "${COMPREPLY[@]}"' _ "$TT_ROOT/dist/bash-completion/tailtrace" "$@" |
		sort -u
}
mismatch=""
for c in $cmds; do
	# a value no option takes, and host: report's --by takes host only
	accepted=$(for o in $all_long; do
		for v in x host; do
			"$TAILTRACE" "$c" "$o" "$v" --help 2>&1 >/dev/null |
				grep -qE "unknown option|does not apply" || { echo "$o"; break; }
		done
	done | sort -u)
	offered=$(complete_words tailtrace "$c" -- | grep -- '^--')
	[ "$accepted" = "$offered" ] ||
		mismatch+=" $c:[$(comm -3 <(echo "$accepted") <(echo "$offered") | tr -d '\t' | xargs)]"
done
tt_check "completion offers exactly the long options each command accepts${mismatch:+ (differ:$mismatch)}" \
	test -z "$mismatch"
tt_check "completion: first word completes the commands" \
	test "$(complete_words tailtrace '' | grep -v -- '^--' | xargs)" = "$(echo $cmds | xargs -n1 | sort | xargs)"
stages=$(grep -o '^X([A-Z_0-9]*, "[^"]*"' "$TT_ROOT/bpf/stage_catalogue.h" | sed 's/.*"\(.*\)"/\1/' | sort)
tt_check "completion: --stage offers the catalogue's $(echo $stages | wc -w) stages" \
	test "$(complete_words tailtrace hist --stage '')" = "$stages"
by_err=$("$TAILTRACE" hist --by nope 2>&1 | sed -n 's/.*(\(.*\)).*/\1/p' | tr -d ',' | xargs -n1 | sort | xargs)
tt_check "completion: --by offers what the parser accepts ($by_err)" \
	test "$(complete_words tailtrace top --by '' | xargs)" = "$by_err"
fmt_err=$("$TAILTRACE" report --format nope x 2>&1 | sed -n 's/.*(\(.*\)).*/\1/p' | tr -d ',' | xargs -n1 | sort | xargs)
tt_check "completion: report --format offers what the parser accepts ($fmt_err)" \
	test -n "$fmt_err" -a "$(complete_words tailtrace report --format '' | xargs)" = "$fmt_err"

# --- make install ---
dest=$work/dest
make -s -C "$TT_ROOT" BUILD="$TT_BUILD" install DESTDIR="$dest" prefix=/usr >"$work/install.log" 2>&1
got=$(cd "$dest" 2>/dev/null && find . -type f | sed 's|^\./|/|' | sort)
want=$( (echo /usr/sbin/tailtrace /usr/share/bash-completion/completions/tailtrace \
	/usr/lib/systemd/system/tailtrace-record.service /etc/tailtrace/record.conf \
	/usr/share/tailtrace/prometheus/tailtrace.rules.yml \
	/usr/share/tailtrace/grafana/tailtrace-dashboard.json /usr/share/tailtrace/seccomp/tailtrace.json
	ls "$TT_ROOT/man" | sed 's|^|/usr/share/man/man8/|') | xargs -n1 | sort)
if [ "$got" = "$want" ]; then
	tt_ok "make install DESTDIR= installs the binary, $(ls "$TT_ROOT/man" | wc -l) man pages, completion, unit, options, rules, dashboard, seccomp profile"
else
	cat "$work/install.log"; diff <(echo "$want") <(echo "$got")
	tt_fail "make install DESTDIR= installs the expected files"
fi
unit=$dest/usr/lib/systemd/system/tailtrace-record.service
tt_check "installed unit runs /usr/sbin/tailtrace with /etc/tailtrace/record.conf" \
	grep -q '^ExecStart=/usr/sbin/tailtrace record -o ${STATE_DIRECTORY} $TAILTRACE_RECORD_OPTS$' "$unit"
echo "keep me" >"$dest/etc/tailtrace/record.conf"
make -s -C "$TT_ROOT" BUILD="$TT_BUILD" install DESTDIR="$dest" prefix=/usr >/dev/null 2>&1
tt_check "a second make install keeps the edited options file" \
	grep -qx "keep me" "$dest/etc/tailtrace/record.conf"
# the shipped options parse as record options (usage errors exit 2 before any BPF)
eval "$(grep '^TAILTRACE_RECORD_OPTS=' "$TT_ROOT/dist/systemd/record.conf")"
# shellcheck disable=SC2086
"$TAILTRACE" record -o "$work/x" $TAILTRACE_RECORD_OPTS --help >/dev/null 2>"$work/opts.err"
tt_check "the shipped TAILTRACE_RECORD_OPTS parse ($TAILTRACE_RECORD_OPTS)" test ! -s "$work/opts.err"

# --- Kubernetes DaemonSet: the unit's capabilities, the mounts record needs ---
ds=$TT_ROOT/dist/kubernetes/tailtrace-daemonset.yaml
tt_check "DaemonSet: capabilities = the unit's bounding set, host tree, BTF and tracefs (as the unit) mounted, args parse" \
	python3 - "$ds" "$TT_ROOT/dist/systemd/tailtrace-record.service" "$TAILTRACE" <<'PY'
import re, subprocess, sys, yaml
ds = yaml.safe_load(open(sys.argv[1]))
unit_caps = re.search(r"^CapabilityBoundingSet=(.*)$", open(sys.argv[2]).read(), re.M).group(1)
spec = ds["spec"]["template"]["spec"]
c = spec["containers"][0]
sc = c["securityContext"]
assert sorted(sc["capabilities"]["add"]) == sorted(x[4:] for x in unit_caps.split()), sc
assert sc["capabilities"]["drop"] == ["ALL"] and not sc["privileged"]
assert sc["readOnlyRootFilesystem"] and not sc["allowPrivilegeEscalation"]
assert spec["hostNetwork"] and spec["hostPID"]
vols = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
mounts = {m["mountPath"]: vols[m["name"]] for m in c["volumeMounts"]}
assert mounts["/sys/kernel/btf"] == "/sys/kernel/btf", mounts
# --rdma's uprobes go through tracefs where the kernel asks CAP_SYS_ADMIN of the uprobe PMU:
# writable in both, or in neither
unit_rw = "ReadWritePaths=-/sys/kernel/tracing" in open(sys.argv[2]).read()
ro = {m["mountPath"]: m.get("readOnly", False) for m in c["volumeMounts"]}
assert unit_rw == (mounts.get("/sys/kernel/tracing") == "/sys/kernel/tracing" and
                   not ro["/sys/kernel/tracing"]), (unit_rw, mounts)
args = c["args"]
assert mounts[args[args.index("--cgroup") + 1]] == "/sys/fs/cgroup", mounts
assert args[args.index("-o") + 1] in mounts, "the state directory is a volume"
r = subprocess.run([sys.argv[3], "record"] + args + ["--help"], capture_output=True, text=True)
assert r.returncode == 0 and not r.stderr, r.stderr
PY

# --- systemd ---
if command -v systemd-analyze >/dev/null; then
	# a real prefix (no DESTDIR): verify checks that ExecStart's binary and the man pages exist
	real=$work/real
	make -s -C "$TT_ROOT" BUILD="$TT_BUILD" install prefix="$real" sysconfdir="$real/etc" \
		>/dev/null 2>&1
	runit=$real/lib/systemd/system/tailtrace-record.service
	if MANPATH=$real/share/man systemd-analyze verify "$runit" >"$work/verify.log" 2>&1 &&
		[ ! -s "$work/verify.log" ]; then
		tt_ok "systemd-analyze verify: no error, no warning"
	else
		cat "$work/verify.log"
		tt_fail "systemd-analyze verify: no error, no warning"
	fi
	# negative control: a misspelt directive is reported
	sed 's/^ProtectSystem=strict/ProtectSystm=strict/' "$runit" >"$work/bad.service"
	MANPATH=$real/share/man systemd-analyze verify "$work/bad.service" >"$work/bad.log" 2>&1
	tt_check "systemd-analyze verify flags a misspelt directive (the check has teeth)" \
		grep -q "ProtectSystm" "$work/bad.log"
	level=$(systemd-analyze security --offline=yes --root="$dest" tailtrace-record.service \
		2>/dev/null | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
	tt_check "systemd-analyze security: exposure ${level:-?} <= 3.0 (hardened)" \
		awk -v l="${level:-99}" 'BEGIN { exit !(l <= 3.0) }'
else
	tt_skip "systemd-analyze verify" "systemd-analyze not installed"
fi
exit 0
