#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Fetches Debian's cloud kernels (vmlinuz, config and the modules the guests need) into a
# cache, through a private apt configuration that leaves the system's apt untouched.
#
# usage: tools/kernels/fetch.sh [--refresh] [--quiet] [--generic] KERNEL...
#   KERNEL: 5.10 (bullseye), 6.1 (bookworm), 6.12 (bookworm-backports), newest
#   (trixie-backports), or all. The version is the one the suite's linux-image-cloud-amd64
#   depends on now; the package lists are refreshed at most once a day (--refresh: now).
#   --generic: Debian's generic flavour (linux-image-amd64) instead, which has soft-RoCE
#   (rdma_rxe) and soft-iWARP (siw); it also keeps those, ib_uverbs and virtio_net, and
#   fetches the RDMA userland the guests run (perftest and the libraries of it this host
#   lacks, from this host's Debian release) into <cache>/rdma-userland/.
# env: TT_KERNEL_CACHE (default /var/cache/tailtrace-kernels), TT_KERNEL_MODULES (the
#   modules to keep, with their dependencies; default below).
# Cache layout, per series: <cache>/<series>/{vmlinuz,release,version,config,modules/}
#   (<cache>/<series>-generic/ with --generic) where modules/ holds the decompressed .ko
#   files and modules/load their insmod order.
# Prints "<series> <release> <version> <vmlinuz>" per kernel (none with --quiet).
set -euo pipefail

cache=${TT_KERNEL_CACHE:-/var/cache/tailtrace-kernels}
# what the test scenarios use: veth pairs, shaping and loss qdiscs, tc BPF and mirred to
# ifb, nftables' numgen drops, bridges; all are modules in the cloud flavour
modules=${TT_KERNEL_MODULES:-veth dummy bridge ifb sch_ingress sch_tbf sch_htb sch_netem sch_fq \
sch_fq_codel sch_prio cls_bpf cls_matchall cls_u32 cls_flower act_bpf act_mirred act_gact nf_tables \
nft_numgen}
# the generic flavour's RDMA stacks and the NIC they run over (siw: when it loads)
rdma_modules="rdma_rxe siw ib_uverbs virtio_net virtio_pci"
# the userland packages (this host's release) whose files the soft-RoCE guest needs
# beside the host's libibverbs, librdmacm and providers
rdma_packages="perftest libibumad3 libpci3"
refresh=0 quiet=0 generic=0
me=tools/kernels/fetch.sh

die() {
	echo "$me: error: $*" >&2
	exit 1
}
warn() { echo "$me: warning: $*" >&2; }

suite_of() {
	case $1 in
	5.10) echo bullseye ;;
	6.1) echo bookworm ;;
	6.12) echo bookworm-backports ;;
	newest) echo trixie-backports ;;
	*) return 1 ;;
	esac
}

series=()
while [ $# -gt 0 ]; do
	case $1 in
	--refresh) refresh=1 ;;
	--quiet | -q) quiet=1 ;;
	--generic) generic=1 ;;
	-h | --help)
		sed -n '3,21s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	all) series+=(5.10 6.1 6.12 newest) ;;
	-*) die "unknown option $1" ;;
	*)
		suite_of "$1" >/dev/null || die "unknown kernel '$1' (one of 5.10 6.1 6.12 newest all)"
		series+=("$1")
		;;
	esac
	shift
done
[ ${#series[@]} -gt 0 ] || die "no kernel given (one of 5.10 6.1 6.12 newest all)"
for t in apt-get apt-cache dpkg-deb depmod modprobe xz zstd flock; do
	command -v "$t" >/dev/null || die "$t is missing (run tools/deps.sh)"
done

# The system's Debian mirror: the first deb source whose URI ends in /debian, from the
# deb822 .sources files or the one-line .list files (snapshot or proxy mirrors included).
mirror() {
	local f
	{
		for f in /etc/apt/sources.list.d/*.sources; do
			[ -r "$f" ] || continue
			awk 'BEGIN { RS = ""; FS = "\n" }
			{
				uris = ""; deb = 0; on = 1
				for (i = 1; i <= NF; i++) {
					if ($i ~ /^URIs:/) { uris = $i; sub(/^URIs:[ \t]*/, "", uris) }
					else if ($i ~ /^Types:/ && $i ~ /[ \t]deb([ \t]|$)/) deb = 1
					else if (tolower($i) ~ /^enabled:[ \t]*no/) on = 0
				}
				if (deb && on) { n = split(uris, u, /[ \t]+/); for (j = 1; j <= n; j++) print u[j] }
			}' "$f"
		done
		for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
			[ -r "$f" ] || continue
			sed -n -e 's/\[[^]]*\]//' -e 's/^[ \t]*deb[ \t]\+\([^ \t]\+\).*/\1/p' "$f"
		done
	} | grep -m1 -E '/debian/?$' | sed 's|/$||'
}

mkdir -p "$cache" || die "cannot create $cache"
exec 9>"$cache/.lock"
flock 9

apt_dir=$cache/apt
lists_stamp=$apt_dir/updated
flavour=cloud-amd64 sfx=""
if [ "$generic" -eq 1 ]; then
	flavour=amd64 sfx=-generic
	modules="$modules $rdma_modules"
fi
host_suite=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
want_modules=$(echo "$modules" | tr -s ' \t\n' '\n' | sed '/^$/d' | sort -u)

# A series needs no apt at all while it was resolved against lists younger than a day,
# with the same module list: the common case of every test run.
fresh() {
	local d=$cache/$1$sfx
	[ "$refresh" -eq 0 ] && [ -s "$d/vmlinuz" ] && [ -s "$d/modules/load" ] &&
		[ -n "$(find "$lists_stamp" -mmin -1440 2>/dev/null)" ] &&
		[ "$d/resolved" -nt "$lists_stamp" ] &&
		[ "$(cat "$d/modules.want" 2>/dev/null)" = "$want_modules" ]
}

need_apt=0
for s in "${series[@]}"; do fresh "$s" || need_apt=1; done
userland=$cache/rdma-userland
userland_fresh() {
	[ "$refresh" -eq 0 ] && [ -x "$userland/root/usr/bin/ib_write_lat" ] &&
		[ "$(cat "$userland/packages" 2>/dev/null)" = "$host_suite $rdma_packages" ]
}
if [ "$generic" -eq 1 ]; then
	[ -n "$host_suite" ] || die "cannot read this host's Debian release (VERSION_CODENAME in /etc/os-release)"
	userland_fresh || need_apt=1
fi

if [ "$need_apt" -eq 1 ]; then
	uri=$(mirror) || true
	[ -n "$uri" ] || die "no Debian source (a URI ending in /debian) in /etc/apt"
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
	src=$apt_dir/sources.list
	new_src=$(for s in bullseye bookworm bookworm-backports trixie-backports; do
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $s main"
	done
	# the RDMA userland of --generic comes from this host's own release
	case $host_suite in
	bullseye | bookworm | bookworm-backports | trixie-backports | "") ;;
	*) echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $host_suite main" ;;
	esac)
	if [ "$(cat "$src" 2>/dev/null)" != "$new_src" ]; then
		echo "$new_src" >"$src"
		rm -f "$lists_stamp"
	fi
	# root's apt drops to _apt for downloads, which may not reach a cache under /work
	apt_opts=(-o "Dir::Etc::sourcelist=$src" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$apt_dir/lists"
		-o "Dir::Cache=$apt_dir/cache" -o Debug::NoLocking=1 -o APT::Sandbox::User=root -q)
	if [ "$refresh" -eq 1 ] || [ -z "$(find "$lists_stamp" -mmin -1440 2>/dev/null)" ]; then
		[ "$quiet" -eq 1 ] || echo "$me: updating the package lists from $uri" >&2
		# apt-get update exits 0 when a source failed ("W: Failed to fetch"): read its log
		apt-get "${apt_opts[@]}" update >"$apt_dir/update.log" 2>&1 || true
		err=$(grep -m1 -E '^(E:|W: (Failed to fetch|Some index files failed))' "$apt_dir/update.log" || true)
		if [ -z "$err" ]; then
			touch "$lists_stamp"
		elif compgen -G "$apt_dir/lists/*_Packages*" >/dev/null; then
			# offline: the kernels resolved before stay usable, and the next try is tomorrow
			# rather than a network timeout in every test run
			warn "apt-get update failed ($err); using the lists of $(date -r "$apt_dir/lists" +%F)"
			touch "$lists_stamp"
		else
			die "apt-get update failed: $err"
		fi
	fi
fi

# depends PKG=VER: the package names a package depends on, one a line
depends() {
	apt-cache "${apt_opts[@]}" show "$1" 2>/dev/null | sed -n '0,/^Depends:/s/^Depends: //p' |
		sed -e 's/[,|]/\n/g' | sed -e 's/(.*//' -e 's/[ \t]//g' -e '/^$/d'
}

# fetch_one SERIES: resolves the suite's current cloud kernel and unpacks what is missing.
fetch_one() {
	local s=$1 suite dir meta dep v ver rel img tmp root mdir base m line f name
	suite=$(suite_of "$s")
	dir=$cache/$s$sfx
	fresh "$s" && return 0
	meta=$(apt-cache "${apt_opts[@]}" show "linux-image-$flavour/$suite" 2>/dev/null) ||
		die "$s: linux-image-$flavour not found in $suite (see $apt_dir/update.log)"
	ver=$(echo "$meta" | sed -n '0,/^Version:/s/^Version: //p')
	dep=$(echo "$meta" | sed -n '0,/^Depends:/s/^Depends: //p' | tr ',' '\n' |
		grep -m1 -E "^[[:space:]]*linux-image-[0-9][^ ]*-$flavour" || true)
	img=$(echo "$dep" | sed -n 's/^[ \t]*\(linux-image-[^ \t]*\).*/\1/p')
	# the exact version the metapackage wants (a binNMU'd metapackage has its own)
	v=$(echo "$dep" | sed -n 's/.*(= \([^)]*\)).*/\1/p')
	[ -n "$v" ] && ver=$v
	if [ -z "$ver" ] || [ -z "$img" ]; then
		die "$s: cannot read the kernel package from linux-image-$flavour/$suite"
	fi
	rel=${img#linux-image-}
	if [ -s "$dir/vmlinuz" ] && [ "$(cat "$dir/version" 2>/dev/null)" = "$ver" ] &&
		[ "$(cat "$dir/release" 2>/dev/null)" = "$rel" ] &&
		[ "$(cat "$dir/modules.want" 2>/dev/null)" = "$want_modules" ] && [ -s "$dir/modules/load" ]; then
		touch "$dir/resolved"
		return 0
	fi
	[ "$quiet" -eq 1 ] || echo "$me: $s: downloading $img $ver from $suite" >&2
	tmp=$(mktemp -d "$cache/.tmp.XXXXXX")
	# newer kernels split the image package: vmlinuz in linux-binary, the modules in
	# linux-modules, config and modules.builtin in linux-base
	local pkgs=("$img=$ver")
	while read -r f; do
		case $f in
		linux-binary-"$rel" | linux-modules-"$rel" | linux-base-"$rel") pkgs+=("$f=$ver") ;;
		esac
	done < <(depends "$img=$ver")
	if ! (cd "$tmp" && apt-get "${apt_opts[@]}" download "${pkgs[@]}" >download.log 2>&1); then
		f=$(grep -m1 -E '^(E|W):' "$tmp/download.log" || tail -1 "$tmp/download.log")
		rm -rf "$tmp"
		die "$s: apt-get download ${pkgs[*]} failed: $f"
	fi
	root=$tmp/root
	for f in "$tmp"/*.deb; do dpkg-deb -x "$f" "$root"; done
	if [ -d "$root/usr/lib/modules/$rel" ]; then base=$root/usr; else base=$root; fi
	mdir=$base/lib/modules/$rel
	mkdir -p "$tmp/new/modules"
	for f in "$root/boot/vmlinuz-$rel" "$mdir/vmlinuz"; do
		[ -s "$f" ] && cp "$f" "$tmp/new/vmlinuz" && break
	done
	for f in "$root/boot/config-$rel" "$mdir/config"; do
		[ -s "$f" ] && cp "$f" "$tmp/new/config" && break
	done
	[ -s "$tmp/new/vmlinuz" ] || {
		rm -rf "$tmp"
		die "$s: no vmlinuz in ${pkgs[*]}"
	}
	depmod -b "$base" "$rel" 2>"$tmp/depmod.log" || {
		rm -rf "$tmp"
		die "$s: depmod failed: $(head -1 "$tmp/depmod.log")"
	}
	# modprobe gives each module's dependencies first; -C /dev/null keeps the host's
	# modprobe.d out. busybox insmod in the guest cannot decompress: store plain .ko files.
	: >"$tmp/new/modules/load"
	local -A seen=()
	for m in $want_modules; do
		if ! out=$(modprobe -C /dev/null --show-depends -d "$base" -S "$rel" "$m" 2>&1); then
			warn "$s: module $m not found in $rel"
			continue
		fi
		while read -r line; do
			case $line in
			insmod\ *) f=${line#insmod } f=${f%% *} ;;
			*) continue ;; # builtin
			esac
			name=$(basename "$f")
			name=${name%.xz} name=${name%.zst} name=${name%.gz}
			[ -n "${seen[$name]:-}" ] && continue
			seen[$name]=1
			case $f in
			*.xz) xz -dc "$f" ;;
			*.zst) zstd -qdc "$f" ;;
			*.gz) gzip -dc "$f" ;;
			*) cat "$f" ;;
			esac >"$tmp/new/modules/$name"
			# as systemd's modprobe.d on real hosts: no ifb0/dummy0 until a test adds one
			case $name in
			ifb.ko) name="$name numifbs=0" ;;
			dummy.ko) name="$name numdummies=0" ;;
			esac
			echo "$name" >>"$tmp/new/modules/load"
		done <<<"$out"
	done
	echo "$rel" >"$tmp/new/release"
	echo "$ver" >"$tmp/new/version"
	echo "$want_modules" >"$tmp/new/modules.want"
	touch "$tmp/new/resolved"
	# swap in one rename so that a guest starting now sees the old or the new kernel
	rm -rf "$dir.old"
	[ -e "$dir" ] && mv "$dir" "$dir.old"
	mv "$tmp/new" "$dir"
	rm -rf "$dir.old" "$tmp"
}

# fetch_userland: perftest and the libraries it needs that this host lacks, unpacked
# (not installed) under <cache>/rdma-userland/root
fetch_userland() {
	local tmp f p pkgs=()
	userland_fresh && return 0
	for p in $rdma_packages; do pkgs+=("$p/$host_suite"); done
	[ "$quiet" -eq 1 ] || echo "$me: downloading $rdma_packages from $host_suite" >&2
	tmp=$(mktemp -d "$cache/.tmp.XXXXXX")
	if ! (cd "$tmp" && apt-get "${apt_opts[@]}" download "${pkgs[@]}" >download.log 2>&1); then
		f=$(grep -m1 -E '^(E|W):' "$tmp/download.log" || tail -1 "$tmp/download.log")
		rm -rf "$tmp"
		die "apt-get download $rdma_packages failed: $f"
	fi
	for f in "$tmp"/*.deb; do dpkg-deb -x "$f" "$tmp/root"; done
	rm -rf "$tmp/root/usr/share"
	[ -x "$tmp/root/usr/bin/ib_write_lat" ] || {
		rm -rf "$tmp"
		die "no ib_write_lat in perftest"
	}
	echo "$host_suite $rdma_packages" >"$tmp/packages"
	rm -rf "$userland.old"
	[ -e "$userland" ] && mv "$userland" "$userland.old"
	mkdir -p "$userland"
	mv "$tmp/root" "$tmp/packages" "$userland/"
	rm -rf "$userland.old" "$tmp"
}

for s in "${series[@]}"; do
	fetch_one "$s"
	[ "$quiet" -eq 1 ] || echo "$s$sfx $(cat "$cache/$s$sfx/release") $(cat "$cache/$s$sfx/version") $cache/$s$sfx/vmlinuz"
done
[ "$generic" -eq 0 ] || fetch_userland
