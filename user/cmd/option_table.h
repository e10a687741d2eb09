/* SPDX-License-Identifier: GPL-2.0 */
/* The one place a command-line option is declared: its names, its value, the commands that
 * take it and its --help line. The parser's tables (long_opts, shortopts), the OPT_* bits,
 * each command's allowed set and the options part of every --help (so the man pages) are
 * derived from it; tests/unit/test_option_table.c holds the bash completion to it. */
#ifndef TT_OPTION_TABLE_H
#define TT_OPTION_TABLE_H

/* The commands, in the order `tailtrace --help` lists them. X(ID, name) */
#define TT_COMMANDS(X)                                                                             \
	X(PROBE, "probe")                                                                          \
	X(HIST, "hist")                                                                            \
	X(EXPLAIN, "explain")                                                                      \
	X(TOP, "top")                                                                              \
	X(RECORD, "record")                                                                        \
	X(REPORT, "report")                                                                        \
	X(RDMA, "rdma")

enum tt_cmd_id {
#define X(id, name) TT_CMD_##id,
	TT_COMMANDS(X)
#undef X
		TT_NCMDS
};

/* Sets of commands, for the table's `commands` column. */
#define TTC(id)   (1u << TT_CMD_##id)
#define TTC_TRACE (TTC(HIST) | TTC(EXPLAIN) | TTC(TOP) | TTC(RECORD)) /* run the collector */
#define TTC_ALL   ((1u << TT_NCMDS) - 1)

/* X(ID, long name, short letter (0: none), value (NULL: a flag), commands, help).
 * ID names the bit OPT_<ID> and the parser's case OI_<ID> (user/cmd/options.c), where the
 * value is checked. The help line is what every command taking the option shows (a '\n'
 * continues it on the next line, 56 columns each) unless TT_OPTION_HELP_FOR below words it
 * for one command. The rows' order is the order of --help. */
#define TT_OPTIONS(X)                                                                              \
	X(PID, "pid", 'p', "PID", TTC_TRACE | TTC(RDMA), "only sockets used by this process")      \
	X(COMM, "comm", 0, "NAME", TTC_TRACE, "only sockets used by processes with this name")     \
	X(CGROUP, "cgroup", 0, "PATH", TTC_TRACE, "only sockets of this cgroup v2 (and below)")    \
	X(PORT, "port", 0, "N", TTC_TRACE, "local or remote port (repeatable, up to 8)")           \
	X(DEV, "dev", 0, "IFNAME", TTC_TRACE,                                                      \
	  "also time every packet crossing this device\n([NETNS/]IFNAME)")                         \
	X(DURATION, "duration", 'd', "SEC", TTC_TRACE | TTC(RDMA),                                 \
	  "stop after SEC seconds (default: until Ctrl-C)")                                        \
	X(INTERVAL, "interval", 'i', "SEC", TTC_TRACE | TTC(RDMA),                                 \
	  "a report every SEC seconds (default: one at the end)")                                  \
	X(ALIGN, "align", 0, NULL, TTC(HIST) | TTC(EXPLAIN) | TTC(TOP),                            \
	  "end intervals at multiples of SEC on the wall clock\n(UTC), so that instances and "     \
	  "hosts report the same\nspans")                                                          \
	X(COUNT, "count", 0, "N", TTC(TOP) | TTC(RDMA), "stop after N intervals")                  \
	X(STAGE, "stage", 0, "NAME", TTC(HIST),                                                    \
	  "only these stages (repeatable; see docs/stages.md)")                                    \
	X(BY, "by", 0, "KEY", TTC(HIST) | TTC(TOP) | TTC(RECORD) | TT_BY_HOST_CMDS,                \
	  "group by port, raddr, comm, cgroup, pod or none\n(default); pod: the Kubernetes pod "   \
	  "and container\nof the cgroup")                                                          \
	X(ROLE, "role", 0, "ROLE", TTC(HIST) | TTC(EXPLAIN) | TTC(RECORD),                         \
	  "the sockets whose requests are timed: server, client\nor auto (default)")               \
	X(CUDA, "cuda", 0, NULL, TTC(HIST) | TTC(EXPLAIN) | TTC(RECORD),                           \
	  "label off-CPU time inside libcuda cu*Synchronize as\ngpu.wait (libcuda.so.1 from the "  \
	  "usual paths or\n$TAILTRACE_LIBCUDA)")                                                   \
	X(TLS, "tls-uprobes", 0, NULL, TTC(HIST) | TTC(EXPLAIN) | TTC(RECORD),                     \
	  "see the HTTP/1.1 and HTTP/2 framing inside TLS\nconnections: uprobes on OpenSSL's\n"    \
	  "SSL_write/SSL_read(_ex) in the libssl the -p process\nmaps, else the system's "         \
	  "($TAILTRACE_LIBSSL);\nwithout it TLS requests are exchanges")                           \
	X(RDMA_ON, "rdma", 0, NULL, TTC_TRACE | TTC(RDMA),                                         \
	  "also trace the RDMA transfers (verbs work requests,\nUCX operations) of the -p "        \
	  "process, or of every\nprocess (docs/rdma.md)")                                          \
	X(RDMA_PROBE, "rdma-probe", 0, "SPEC", TTC_TRACE | TTC(RDMA),                              \
	  "[ROLE=]LIB:SYMBOL or ROLE=LIB:0xOFFSET (file offset);\nROLE is post_send, post_recv "   \
	  "or poll_cq (repeatable)")                                                               \
	X(RDMA_FULL, "rdma-full", 0, NULL, TTC_TRACE | TTC(RDMA),                                  \
	  "trace every poll call (more overhead, no sampling\nbias)")                              \
	X(RDMA_HOST_WIDE, "rdma-host-wide", 0, NULL, TTC_TRACE | TTC(RDMA),                        \
	  "data-path probes in every process mapping the\nprovider, not only the traced ones\n"    \
	  "(docs/security.md: read its warning)")                                                  \
	X(SYSFS_ROOT, "sysfs-root", 0, "DIR", TTC_TRACE | TTC(RDMA),                               \
	  "read counters from DIR/sys/class/infiniband and\nDIR/ethtool/<netdev> instead of the "  \
	  "live system")                                                                           \
	X(DEBUG_DIR, "debug-dir", 0, "DIR", TTC_TRACE | TTC(RDMA),                                 \
	  "debug files by build-id under DIR/.build-id/\n(default /usr/lib/debug, inside the "     \
	  "process's\nroot first)")                                                                \
	X(BUDGET, "budget", 0, "PCT", TTC_TRACE,                                                   \
	  "keep tailtrace's cost (its programs + its CPU) within\nPCT % of one CPU by tracing a "  \
	  "share of the flows\n(default: all flows)")                                              \
	X(DEEP, "deep", 0, "WHEN", TTC(RECORD),                                                    \
	  "PCT% (default 10%), always or off: how much of the\ntime the per-packet and "           \
	  "scheduler programs\n(each request's split into stages) run: in windows,\nand after "    \
	  "a request slower than twice the recent\np99; every request is timed by socket-level\n"  \
	  "hooks anyway")                                                                          \
	X(OUTPUT, "output", 'o', "DIR", TTC(RECORD) | TTC(REPORT),                                 \
	  "segment directory (created 0700)")                                                      \
	X(MAX_SIZE, "max-size", 0, "SIZE", TTC(RECORD),                                            \
	  "bound on the directory's segments (default 256M)")                                      \
	X(LISTEN, "listen", 0, "ADDR:PORT", TTC(RECORD),                                           \
	  "also serve OpenMetrics at GET /metrics (default host\n127.0.0.1; any other address "    \
	  "only when given)")                                                                      \
	X(HOST, "host", 0, "NAME", TTC(RECORD),                                                    \
	  "the host name segments and metrics (label host)\ncarry (default: the node name, "       \
	  "uname -n)")                                                                             \
	X(FROM, "from", 0, "TIME", TTC(REPORT),                                                    \
	  "from TIME on: RFC 3339 (2024-05-01T12:00:00Z),\n'YYYY-MM-DD HH:MM[:SS]' local time, "   \
	  "unix seconds,\nor relative to now (-10m, -2h, now)")                                    \
	X(TO, "to", 0, "TIME", TTC(REPORT), "up to TIME (excluded), written as for --from")        \
	X(FORMAT, "format", 0, "FMT", TTC(REPORT),                                                 \
	  "text (default), json, folded (flame graph stacks,\nns), svg (an interactive flame "     \
	  "graph for a\nbrowser), pprof (gzip profile.proto), perfetto\n(trace-event JSON of "     \
	  "the slow requests),\nopenmetrics (text exposition)")                                    \
	X(JSON, "json", 'j', NULL,                                                                 \
	  TTC(PROBE) | TTC(HIST) | TTC(EXPLAIN) | TTC(REPORT) | TTC(RDMA), "JSON output")          \
	X(VERBOSE, "verbose", 'v', NULL, TTC_ALL, "libbpf messages on stderr (-vv for debug)")     \
	X(HELP, "help", 'h', NULL, TTC_ALL, "this text")

/* --by host is report's comparison of the recorded hosts, not a way to group traffic: the
 * value host is taken by these commands (bit OPT_BY_HOST), the other values by the rest. */
#define TT_BY_HOST_CMDS TTC(REPORT)

/* X(command, option, value, help): an option's --help line as one command words it. */
#define TT_OPTION_HELP_FOR(X)                                                                      \
	X(PROBE, JSON, NULL, "JSON output (keys documented in\ndocs/kernel-support.md)")           \
	X(HIST, INTERVAL, "SEC", "print every SEC seconds (per-interval numbers)")                 \
	X(HIST, JSON, NULL, "one JSON object per interval (keys in\ndocs/stages.md)")              \
	X(EXPLAIN, RDMA_ON, NULL,                                                                  \
	  "also judge the RDMA transfers (verbs work requests,\nUCX operations) of the -p "        \
	  "process, or of every\nprocess: tail or none, then congestion, transport,\ncompute or "  \
	  "unattributed from fabric counters, failed\ncompletions and waiter wake-ups")            \
	X(EXPLAIN, JSON, NULL, "JSON report (keys in docs/attribution.md)")                        \
	X(TOP, INTERVAL, "SEC", "redraw every SEC seconds (default 1)")                            \
	X(RECORD, DURATION, "SEC", "stop after SEC seconds (default: until\nSIGINT/SIGTERM)")      \
	X(RECORD, INTERVAL, "SEC", "snapshot period (default 10)")                                 \
	X(REPORT, BY, "host", "only the comparison of the hosts (also for one host)")              \
	X(REPORT, OUTPUT, "OUT", "write to OUT instead of standard output")                        \
	X(REPORT, JSON, NULL, "same as --format json")                                             \
	X(RDMA, RDMA_ON, NULL, "taken for the other commands' sake: rdma always does")             \
	X(RDMA, PID, "PID", "trace one process (default: every process using verbs)")              \
	X(RDMA, DURATION, "SEC", "stop after SEC seconds (default: Ctrl-C or the pid\nexits)")     \
	X(RDMA, INTERVAL, "SEC", "print a report every SEC seconds, then the total")               \
	X(RDMA, JSON, NULL, "one JSON object per report (docs/rdma.md)")

#endif
