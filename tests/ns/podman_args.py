#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The podman run options that give a container what the DaemonSet's pod spec gives it, read
from the YAML (tests/ns/test_image.sh): the container's securityContext, the pod's host
namespaces, the volumes, the memory limit, and the command with its $(VAR) expanded. One
argument a line; a key of securityContext this script does not translate is an error, so
the test cannot pass on a manifest it does not run as written.

Usage: podman_args.py DAEMONSET.yaml PROFILE_DIR MODE NODE_NAME STATE_DIR CGROUP_DIR
MODE: "manifest"; "runtime-default" (the seccomp profile replaced by the runtime's own);
"drop:CAP" (the manifest less one added capability). PROFILE_DIR stands for the kubelet's
seccomp root (a Localhost profile is PROFILE_DIR/localhostProfile); STATE_DIR for the
state volume's host directory; CGROUP_DIR for the host's cgroup v2 tree where the node
has it elsewhere than the manifest's /sys/fs/cgroup (both hierarchies side by side)."""
import re
import sys

import yaml

ds_path, profile_dir, mode, node, state_dir, cgroup_dir = sys.argv[1:7]
ds = yaml.safe_load(open(ds_path))
spec = ds["spec"]["template"]["spec"]
(c,) = spec["containers"]
sc = dict(c["securityContext"])
out = ["--runtime", "runc"]

if spec.pop("hostNetwork", False):
    out += ["--network", "host"]
if spec.pop("hostPID", False):
    out += ["--pid", "host"]

caps = sc.pop("capabilities")
add = list(caps.get("add", []))
if mode.startswith("drop:"):
    add.remove(mode[5:])
for d in caps.get("drop", []):
    out += ["--cap-drop", d.lower()]
for a in add:
    out += ["--cap-add", a.lower()]
if sc.pop("privileged", False):
    out += ["--privileged"]
if sc.pop("allowPrivilegeEscalation", True) is False:
    out += ["--security-opt", "no-new-privileges"]
if sc.pop("readOnlyRootFilesystem", False):
    out += ["--read-only"]
if "runAsUser" in sc:
    out += ["--user", "%d:%d" % (sc.pop("runAsUser"), sc.pop("runAsGroup", 0))]
prof = sc.pop("seccompProfile", None) or spec.get("securityContext", {}).get("seccompProfile")
if mode != "runtime-default":
    assert prof, "the manifest declares no seccomp profile"
    if prof["type"] == "Localhost":
        out += ["--security-opt", "seccomp=%s/%s" % (profile_dir, prof["localhostProfile"])]
    elif prof["type"] == "Unconfined":
        out += ["--security-opt", "seccomp=unconfined"]
    else:
        assert prof["type"] == "RuntimeDefault", prof
if sc:
    sys.exit("podman_args.py: securityContext keys not translated: %s" % sorted(sc))

mem = c.get("resources", {}).get("limits", {}).get("memory")
if mem:
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi)", mem)
    out += ["--memory", "%d%s" % (int(m.group(1)), m.group(2)[0].lower())]

vols = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
for m in c["volumeMounts"]:
    host = vols[m["name"]]
    if m["mountPath"] == "/var/lib/tailtrace":
        host = state_dir
    elif host == "/sys/fs/cgroup":
        host = cgroup_dir
    out += ["-v", "%s:%s%s" % (host, m["mountPath"], ":ro" if m.get("readOnly") else "")]

env = {}
for e in c.get("env", []):
    assert e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName", e
    env[e["name"]] = node
    out += ["--env", "%s=%s" % (e["name"], node)]
cmd = c["command"] + c.get("args", [])
cmd = [re.sub(r"\$\((\w+)\)", lambda x: env[x.group(1)], a) for a in cmd]
out += ["--entrypoint", cmd[0], "IMAGE"] + cmd[1:]
print("\n".join(out))
