#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Writes the man pages (tailtrace(8), tailtrace-CMD(8)) from the binary's --help texts.

The --help texts are the one source (each command's description and examples in
user/cmd/main.c, its options from the option table, user/cmd/option_table.h); this turns
them into roff so the pages say exactly what --help says. tests/ns/test_dist.sh regenerates
the pages and fails when the committed ones in man/ differ: change --help or an option's
row, run `make man`, commit both.

usage: tools/gen-man.py TAILTRACE OUTDIR
"""
import re
import subprocess
import sys

FILES = """\
.SH FILES
.TP
.I /etc/tailtrace/record.conf
options of the tailtrace\\-record service (\\fBTAILTRACE_RECORD_OPTS\\fR)
.TP
.I /var/lib/tailtrace
the service's segment directory (\\fBtailtrace report /var/lib/tailtrace\\fR)
"""

EXIT = """\
.SH EXIT STATUS
0 on success, 1 on a runtime failure (privileges, kernel), 2 on a usage error.
Errors are one line on standard error (\\fBtailtrace: error: ...\\fR), or
\\fB{"error": ...}\\fR on standard output with \\fB\\-j\\fR.
"""


def help_text(binary, *args):
    out = subprocess.run([binary, *args, "--help"], check=True, capture_output=True, text=True)
    return out.stdout


def roff(s):
    """Escapes a line of plain text for roff: backslashes, hyphens, leading control chars."""
    s = s.replace("\\", "\\e").replace("-", "\\-")
    if s.startswith((".", "'")):
        s = "\\&" + s
    return s


def blocks(text):
    """Paragraphs of the help text: lists of lines split at blank lines."""
    out, cur = [], []
    for line in text.rstrip("\n").split("\n"):
        if line.strip():
            cur.append(line)
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


OPT_LINE = re.compile(r"^ {1,8}(-\S.*?)(?: {2,}(\S.*))?$")


def options(block):
    """(spec, description) pairs of an option block; deeper-indented lines continue the
    previous description."""
    opts = []
    for line in block:
        m = OPT_LINE.match(line)
        if m and not line.startswith(" " * 9):
            opts.append([m.group(1).strip(), m.group(2) or ""])
        elif opts:
            opts[-1][1] = (opts[-1][1] + " " + line.strip()).strip()
        else:
            raise SystemExit("gen-man: option text before any option: " + line)
    return opts


def is_option_block(block):
    return all(OPT_LINE.match(l) or l.startswith(" " * 9) for l in block)


def header(name, summary):
    return [
        '.TH %s 8 "" "tailtrace" "System Administration"' % name.upper().replace("-", "\\-"),
        ".SH NAME",
        "%s \\- %s" % (roff(name), roff(summary)),
    ]


def literal(lines):
    return [".nf"] + [roff(l) for l in lines] + [".fi"]


def command_page(binary, cmd, summary):
    bl = blocks(help_text(binary, cmd))
    usage = [re.sub(r"^Usage: ", "", l) for l in bl[0]]
    out = header("tailtrace-" + cmd, summary) + [".SH SYNOPSIS"] + literal(usage)
    out.append(".SH DESCRIPTION")
    body = bl[1:]
    sections = {"Examples:": "EXAMPLES"}
    for b in body:
        if b[0] in sections:
            out.append(".SH " + sections[b[0]])
            out += literal(l[2:] if l.startswith("  ") else l for l in b[1:])
        elif is_option_block(b):
            if ".SH OPTIONS" not in out:
                out.append(".SH OPTIONS")
            for spec, desc in options(b):
                out += [".TP", "\\fB%s\\fR" % roff(spec), roff(desc)]
        else:
            out += [".PP"] + [roff(l.strip()) for l in b]
    out += EXIT.rstrip("\n").split("\n")
    out += [".SH SEE ALSO", "\\fBtailtrace\\fR(8)"]
    return "\n".join(out) + "\n"


def main_page(binary):
    bl = blocks(help_text(binary))
    usage = [re.sub(r"^(Usage:)? +", "", l) for l in bl[0]]
    tagline = " ".join(bl[1])
    cmds = [re.match(r"^  (\S+) +(.*)$", l).groups() for l in bl[2][1:]]
    out = header("tailtrace", "tail latency of inference traffic: where and why")
    out += [".SH SYNOPSIS"] + literal(usage)
    out += [".SH DESCRIPTION", roff(tagline)]
    out.append(".SH COMMANDS")
    for name, summary in cmds:
        out += [".TP", "\\fB%s\\fR" % roff(name), "%s (\\fBtailtrace\\-%s\\fR(8))"
                % (roff(summary), roff(name))]
    out += [".SH COMMON OPTIONS"] + [roff(l) for b in bl[3:] for l in b]
    out += EXIT.rstrip("\n").split("\n") + FILES.rstrip("\n").split("\n")
    out += [".SH SEE ALSO", ",\n".join("\\fBtailtrace\\-%s\\fR(8)" % roff(c) for c, _ in cmds)]
    return "\n".join(out) + "\n", cmds


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__.strip().split("\n")[-1])
    binary, outdir = sys.argv[1:]
    page, cmds = main_page(binary)
    with open(outdir + "/tailtrace.8", "w") as f:
        f.write(page)
    for name, summary in cmds:
        with open("%s/tailtrace-%s.8" % (outdir, name), "w") as f:
            f.write(command_page(binary, name, summary))


if __name__ == "__main__":
    main()
