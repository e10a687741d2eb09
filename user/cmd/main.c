// SPDX-License-Identifier: GPL-2.0
/* tailtrace entry point: dispatches `tailtrace <command>` through one table. */
#include <stdio.h>
#include <string.h>
#include "cmd/commands.h"
#include "cmd/options.h"
#include "version.h" /* generated: $(BUILD)/version.h */
#include "lib/util.h"

/* Each command of TT_COMMANDS (cmd/option_table.h); the options part of its --help comes
 * from the option table, between the description and the examples. */
static const struct tt_cmd cmds[] = {
	{ TT_CMD_PROBE, cmd_probe, "show what this kernel allows and which hook feeds each stage",
	  "Usage: tailtrace probe [-j] [-v]\n"
	  "\n"
	  "Loads a minimal BPF program of each kind (tp_btf, raw_tp, tracepoint, kprobe,\n"
	  "fentry, uprobe, sockops TX timestamping, tc/tcx, XDP) and reports which work here,\n"
	  "with the errno of those that do not, the tracepoints the stages need, and for\n"
	  "each stage the hook that will feed it.\n"
	  "\n"
	  "Examples:\n"
	  "  tailtrace probe\n"
	  "  tailtrace probe -j | python3 -m json.tool\n" },
	{ TT_CMD_HIST, cmd_hist, "per-stage latency histograms of TCP traffic (p50 ... p99.9)",
	  "Usage: tailtrace hist [filters] [-d SEC] [-i SEC [--align]] [--stage NAME ...]\n"
	  "                      [--by KEY] [-j]\n"
	  "\n"
	  "Times each stage of the TCP path of the selected traffic in kernel histograms and\n"
	  "prints count, mean, p50, p90, p99, p99.9 and max per stage and group, with a bucket\n"
	  "chart, retransmissions, drops by reason, and what tailtrace lost or evicted.\n"
	  "\n"
	  "Examples:\n"
	  "  tailtrace hist --port 8000 -d 10\n"
	  "  tailtrace hist --port 8000 --by raddr --stage tx.qdisc --stage tcp.rtt -i 5\n"
	  "  tailtrace hist --dev eth0 --stage tx.qdisc -d 30 -j\n" },
	{ TT_CMD_EXPLAIN, cmd_explain,
	  "why the tail is slow: compute, transport or congestion, and where",
	  "Usage: tailtrace explain [filters] [-d SEC] [-i SEC [--align]]\n"
	  "                         [--role server|client|auto] [--cuda] [--tls-uprobes]\n"
	  "                         [--rdma] [-j]\n"
	  "\n"
	  "Splits each request on the selected TCP connections (inbound then outbound data on\n"
	  "a server socket, the reverse on a client socket; no payload is read) into TCP path\n"
	  "stages and the serving thread's scheduler time, classes them as compute, transport\n"
	  "or congestion, and compares the p99 (and p99.9) requests with the median ones:\n"
	  "verdict first, then the evidence, then the numbers. docs/attribution.md defines it.\n"
	  "\n"
	  "Examples:\n"
	  "  tailtrace explain --port 8000 -d 30\n"
	  "  tailtrace explain --comm vllm --role server -d 60 -j\n"
	  "  tailtrace explain --rdma -p $(pgrep -n nixl_worker) -i 5\n" },
	{ TT_CMD_TOP, cmd_top, "a refreshing per-group table of the main stages' p50/p99",
	  "Usage: tailtrace top [filters] [-i SEC] [--align] [--count N] [-d SEC] [--by KEY]\n"
	  "\n"
	  "Every interval (default 1 s; --align: ending on the wall clock's multiples of it) a\n"
	  "table per group (--by port, raddr, comm, cgroup, pod or none): segment rate (RTT\n"
	  "samples/s), p50 and p99 of tx.sendq, tx.qdisc, tcp.rtt and rx.sockq, timed\n"
	  "retransmissions, then drops and tailtrace's own losses. Redrawn in place on a\n"
	  "terminal, printed as successive blocks otherwise.\n"
	  "\n"
	  "Examples:\n"
	  "  tailtrace top --port 8000 --by raddr\n"
	  "  tailtrace top --comm vllm --by port -i 5 --count 12 > top.log\n" },
	{ TT_CMD_RECORD, cmd_record, "always-on profiling into rotating segment files (see report)",
	  "Usage: tailtrace record -o DIR [-i SEC] [--max-size SIZE] [--listen ADDR:PORT] "
	  "[filters]\n"
	  "                        [--host NAME] [-d SEC] [--by KEY] [--role ROLE] [--cuda]\n"
	  "                        [--tls-uprobes] [--deep always|off|PCT%]\n"
	  "\n"
	  "Every interval appends a snapshot (stage histograms per group, the attribution\n"
	  "aggregate, counters, tailtrace's own CPU and memory, losses) and the slow requests\n"
	  "of the flight recorder to CRC-framed, zlib-compressed segments in DIR (0600 files).\n"
	  "Old segments are deleted to stay under --max-size. kill -9 loses at most the frame\n"
	  "being written. Read them back with `tailtrace report`.\n"
	  "\n"
	  "Examples:\n"
	  "  tailtrace record -o /var/lib/tailtrace --port 8000 --max-size 1G\n"
	  "  tailtrace record -o /tmp/tt -i 5 --listen 127.0.0.1:9464\n" },
	{ TT_CMD_REPORT, cmd_report, "explain or export a recorded time window (record's segments)",
	  "Usage: tailtrace report DIR|FILE... [--from TIME] [--to TIME] [--by host]\n"
	  "                        [--format text|json|folded|svg|pprof|perfetto|openmetrics]\n"
	  "                        [-o OUT] [-j] [-v]\n"
	  "\n"
	  "Merges the intervals `tailtrace record` wrote whose midpoint lies in\n"
	  "[--from, --to) and renders them: the explain report (text, json), or an export\n"
	  "(docs/exports.md). A torn last frame (record killed) is skipped with a warning; a\n"
	  "corrupt frame elsewhere, a foreign file or a newer format is an error naming the\n"
	  "file and byte offset.\n"
	  "\n"
	  "Several hosts (segments copied from each, one DIR per host or mixed): every\n"
	  "interval stays with the host its segment names; the report compares each stage's\n"
	  "p50 and p99 per host and over the fleet (all hosts' events merged), gives each\n"
	  "host's verdict, then each host's own report (text and json only).\n"
	  "\n"
	  "Examples:\n"
	  "  tailtrace report /var/lib/tailtrace --from -10m\n"
	  "  tailtrace report node1/ node2/ node3/ --from -1h --by host\n"
	  "  tailtrace report /var/lib/tailtrace --from '2024-05-01 12:00' --to '2024-05-01 12:30' "
	  "-j\n"
	  "  tailtrace report rec/ --format svg -o tail.svg   # open in a browser\n"
	  "  tailtrace report rec/ --format folded | flamegraph.pl > tail.svg\n"
	  "  tailtrace report rec/ --format pprof -o tail.pb.gz && go tool pprof -http=: "
	  "tail.pb.gz\n"
	  "  tailtrace report rec/ --format perfetto -o slow.json   # open in ui.perfetto.dev\n"
	  "  tailtrace report rec/ --format openmetrics -o w.om &&\n"
	  "    promtool tsdb create-blocks-from openmetrics w.om ./data\n" },
	{ TT_CMD_RDMA, cmd_rdma, "RDMA verbs work-request latency, CQ wake-ups, fabric counters",
	  "Usage: tailtrace rdma [-p PID] [--rdma-probe SPEC]... [--rdma-full]\n"
	  "                      [--sysfs-root DIR] [--debug-dir DIR] [-d SEC] [-i SEC]\n"
	  "                      [--count N] [-j] [-v]\n"
	  "\n"
	  "Times every RDMA work request from ibv_post_send/ibv_post_recv to the ibv_poll_cq\n"
	  "that returns its completion (rdma.wr, per QP, peer QP and opcode), counts error\n"
	  "completions by status, times completion-channel wake-ups (rdma.cq_event), and\n"
	  "per interval reads RoCE/IB hw_counters, port_xmit_wait and PFC pause counters to\n"
	  "call a slow window congestion or transport. The provider's data-path functions are\n"
	  "found in debug files by build-id or .gnu_debugdata, by symbol, from a live\n"
	  "ibv_context's ops table, or from --rdma-probe\n"
	  "(docs/rdma.md). The poll side is traced 200 ms of every second unless --rdma-full.\n"
	  "\n"
	  "Examples:\n"
	  "  tailtrace rdma -p $(pgrep -n vllm) -i 1\n"
	  "  tailtrace rdma -p 4242 --rdma-probe libmlx5.so.1:mlx5_post_send --rdma-full -d 10\n"
	  "  tailtrace rdma -p 4242 --rdma-probe "
	  "poll_cq=/usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so:0x2f1c0\n"
	  "  tailtrace rdma -p 4242 --sysfs-root /tmp/roce-tree -i 1 -j   # fabricated "
	  "counters\n" },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: tailtrace <command> [options]\n"
		   "       tailtrace <command> --help\n"
		   "       tailtrace --version\n\n"
		   "Where is the tail of my inference traffic slow, and why?\n\n"
		   "Commands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		fprintf(f, "  %-9s %s\n", opts_cmd_name(cmds[i].id), cmds[i].summary);
	fprintf(f,
		"\nCommon options: -p/--pid PID, --comm NAME, --cgroup PATH, --port N\n"
		"(repeatable, local or remote), --dev IFNAME, -d/--duration SEC,\n"
		"-i/--interval SEC, -j/--json, -v/--verbose. Needs root (CAP_BPF, CAP_PERFMON).\n");
}

_Static_assert(ARRAY_SIZE(cmds) == TT_NCMDS, "a command of TT_COMMANDS without its row");

void cmd_print_help(enum tt_cmd_id cmd)
{
	const char *usage = "", *ex;

	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		if (cmds[i].id == cmd)
			usage = cmds[i].usage;
	/* the description ends with a blank line before "Examples:" */
	ex = strstr(usage, "\nExamples:\n");
	if (!ex)
		ex = usage + strlen(usage);
	fwrite(usage, 1, (size_t)(ex - usage), stdout);
	fputs("\n", stdout);
	opts_print_help(stdout, cmd);
	if (*ex)
		fputs(ex, stdout);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version") ||
	    !strcmp(argv[1], "version")) {
		printf("tailtrace %s\n", TT_VERSION);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		if (!strcmp(opts_cmd_name(cmds[i].id), argv[1]))
			return cmds[i].run(argc - 1, argv + 1);
	fprintf(stderr, "tailtrace: error: unknown command '%s' (see 'tailtrace --help')\n",
		argv[1]);
	return 2;
}
