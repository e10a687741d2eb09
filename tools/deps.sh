#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Installs the Debian packages tailtrace needs to build, test and demo; does nothing when
# all are present. Run as root (make deps, make demo and make test call it).
set -euo pipefail

pkgs=(
	clang llvm libbpf-dev bpftool libelf-dev liblzma-dev zlib1g-dev libcmocka-dev pkg-config
	iproute2 nftables iperf3 ethtool procps psmisc python3 python3-yaml libibverbs-dev xz-utils binutils
	libucx0 ucx-utils
	# the explain judge's third-party server and client (an HTTP server, h2load)
	nginx-light nghttp2-client
	# the install checks: man pages (groff, lexgrog), the service unit (systemd-analyze)
	groff-base man-db systemd
	# the Prometheus checks: promtool, and a real server scraping two recorders
	prometheus curl
	# older kernels in qemu guests (tools/kernels): the emulator, the guest's userland, the
	# initramfs, and the tools that unpack Debian's kernel packages and their modules
	qemu-system-x86 busybox-static cpio kmod zstd debian-archive-keyring
	# the kernel matrix's third-party ping-pong client and server
	sockperf
	# a real gRPC client for loadgen's h2 server (tools/loadgen/grpc_client.py)
	python3-grpcio
	# make image, and the image run as the DaemonSet runs it (tests/ns/test_image.sh):
	# podman, its default seccomp profile (golang-github-containers-common), and runc (crun
	# refuses a host with cgroup v1 and v2 side by side)
	podman golang-github-containers-common runc
	# a real browser for the flame-graph exports (tests/ns/test_flamegraph_viewers.sh):
	# speedscope's page and the SVG export rendered headless
	chromium
	# TLS streams (tests/ns/test_tls_streams.sh): certificates, and the OpenSSL library the
	# Python ssl module and nginx use, which --tls-uprobes probes
	openssl libssl3
)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "tools/deps.sh: missing packages: ${missing[*]} (run as root to install them)" >&2
	exit 1
fi
echo "tools/deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# the package lists may be missing or stale on a fresh machine
apt-get update -qq >/dev/null || apt-get update
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
