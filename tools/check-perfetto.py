#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks a Chrome trace-event JSON file (tailtrace report --format perfetto) the way trace
viewers read it: on every track (pid, tid) the complete ("X") events must nest properly,
each either inside another or after it, never partly overlapping. Timestamps are compared
both exactly (decimal microseconds, as written) and as a viewer converts them (a double
times 1000, truncated to integer ns, as Perfetto's JSON importer does), so a slice that
only rounding pushes past its parent fails too. Prints one line per bad pair and exits 1
on any; 0 with a summary line otherwise.

    tools/check-perfetto.py TRACE.json [--min-events N]
"""
import json
import sys
from decimal import Decimal


def ns_exact(v):
    return int(Decimal(str(v)) * 1000)


def ns_double(v):
    return int(float(v) * 1000)


def check(events, conv):
    tracks = {}
    for e in events:
        if e.get("ph") != "X":
            continue
        s = conv(e["ts"])
        d = conv(e.get("dur", 0))
        tracks.setdefault((e["pid"], e["tid"]), []).append((s, s + d, e.get("name", "?")))
    bad = []
    for key, sl in tracks.items():
        # parents first: by start, then the longer first
        sl.sort(key=lambda x: (x[0], -(x[1] - x[0])))
        stack = []
        for s, end, name in sl:
            while stack and stack[-1][1] <= s:
                stack.pop()
            if stack and end > stack[-1][1]:
                p = stack[-1]
                bad.append(f"pid {key[0]} tid {key[1]}: '{name}' [{s}, {end}) ns overlaps "
                           f"'{p[2]}' [{p[0]}, {p[1]}) without nesting")
            stack.append((s, end, name))
    return tracks, bad


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 2
    min_events = 0
    if "--min-events" in args:
        i = args.index("--min-events")
        min_events = int(args[i + 1])
        del args[i:i + 2]
    try:
        doc = json.load(open(args[0]))
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
    except (OSError, ValueError, KeyError) as e:
        print(f"check-perfetto: {args[0]}: not a trace-event file: {e}", file=sys.stderr)
        return 1
    bad = []
    for conv in (ns_exact, ns_double):
        tracks, b = check(events, conv)
        bad += [f"({conv.__name__}) {x}" for x in b]
    nx = sum(len(v) for v in tracks.values())
    for line in bad[:20]:
        print(line)
    if bad:
        print(f"check-perfetto: {len(bad)} improperly nested slices in {args[0]}")
        return 1
    if nx < min_events:
        print(f"check-perfetto: {args[0]}: {nx} complete events, fewer than {min_events}")
        return 1
    print(f"check-perfetto: {nx} complete events on {len(tracks)} tracks, all nested")
    return 0


if __name__ == "__main__":
    sys.exit(main())
