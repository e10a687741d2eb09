#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Writes dist/seccomp/tailtrace.json: a container runtime's default seccomp profile (the
containers/podman one, /usr/share/containers/seccomp.json) resolved for the capabilities
the DaemonSet grants, plus the system calls tailtrace needs beyond it, nothing more.

Resolved, because the runtimes read a Localhost profile differently: podman and CRI-O
understand the default's conditional rules (includes/excludes: caps, arches), containerd
reads the file as the OCI runtime spec's LinuxSeccomp and ignores them, which would keep an
allow and an errno rule for the same call. The written profile has only what both read:
defaultAction, defaultErrnoRet, architectures and rules of names, action, errnoRet, args.
Rules for other architectures are kept (a name a kernel does not have is skipped); the
architectures are x86-64's and arm64's families (libseccomp refuses to mix byte orders in
one filter, so the big-endian ones of the default cannot be listed beside them).

Usage: tools/gen-seccomp.py DEFAULT.json DAEMONSET.yaml > dist/seccomp/tailtrace.json
(tests/ns/test_image.sh checks that the shipped file is what this writes.)"""
import json
import sys

import yaml

# What tailtrace calls that the default refuses without CAP_SYS_ADMIN, each with why
EXTRA = {
    "bpf": "loading and attaching the programs, reading the maps",
    "perf_event_open": "attaching tracepoint programs and uprobes (--cuda, --rdma)",
}

# the native architectures the profile covers (Makefile: x86, arm64)
ARCHES = ("SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64")


def main():
    default = json.load(open(sys.argv[1]))
    ds = yaml.safe_load(open(sys.argv[2]))
    sc = ds["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    assert sc["capabilities"]["drop"] == ["ALL"], "the profile is resolved for drop: [ALL]"
    caps = {"CAP_" + c for c in sc["capabilities"]["add"]}
    arches = []
    for a in default.get("archMap", []):
        if a["architecture"] in ARCHES:
            arches += [a["architecture"]] + a.get("subArchitectures", [])
    rules = []
    for r in default["syscalls"]:
        inc, exc = r.get("includes") or {}, r.get("excludes") or {}
        if not set(inc.get("caps", [])) <= caps or set(exc.get("caps", [])) & caps:
            continue
        if inc.get("minKernel") or exc.get("arches") or exc.get("minKernel"):
            sys.exit("gen-seccomp: a rule condition this script does not resolve: %r" % r)
        names = [n for n in r["names"] if not (r["action"] != "SCMP_ACT_ALLOW" and n in EXTRA)]
        if not names:
            continue
        out = {"names": names, "action": r["action"]}
        if r.get("errnoRet") is not None:
            out["errnoRet"] = r["errnoRet"]
        if r.get("args"):
            out["args"] = r["args"]
        rules.append(out)
    rules.append({"names": sorted(EXTRA), "action": "SCMP_ACT_ALLOW"})
    prof = {"defaultAction": default["defaultAction"]}
    if default.get("defaultErrnoRet") is not None:
        prof["defaultErrnoRet"] = default["defaultErrnoRet"]
    prof["architectures"] = arches
    prof["syscalls"] = rules
    json.dump(prof, sys.stdout, indent=1)
    sys.stdout.write("\n")


main()
