// SPDX-License-Identifier: GPL-2.0
/* tailtrace entry point: dispatches `tailtrace <command>` through one table. */
#include <stdio.h>
#include <string.h>
#include "commands.h"

#ifndef TT_VERSION
#define TT_VERSION "0.1"
#endif

/* Only implemented commands are listed here, and so in --help. */
static const struct tt_cmd cmds[] = {
	{ "probe", cmd_probe, "show what this kernel allows and which hook feeds each stage",
	  "Usage: tailtrace probe [-j] [-v]\n"
	  "\n"
	  "Loads a minimal BPF program of each kind (tp_btf, raw_tp, tracepoint, kprobe,\n"
	  "fentry, uprobe, sockops TX timestamping, tc/tcx, XDP) and reports which work here,\n"
	  "with the errno of those that do not, the tracepoints the stages need, and for\n"
	  "each stage the hook that will feed it.\n"
	  "\n"
	  "  -j, --json     JSON output (keys documented in docs/kernel-support.md)\n"
	  "  -v, --verbose  libbpf messages on stderr (-vv for debug)\n"
	  "\n"
	  "Examples:\n"
	  "  tailtrace probe\n"
	  "  tailtrace probe -j | python3 -m json.tool\n" },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: tailtrace <command> [options]\n"
		   "       tailtrace <command> --help\n"
		   "       tailtrace --version\n\n"
		   "Where is the tail of my inference traffic slow, and why?\n\n"
		   "Commands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-9s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "\nCommon options: -p/--pid PID, --comm NAME, --cgroup PATH, --port N\n"
		   "(repeatable, local or remote), --dev IFNAME, -d/--duration SEC,\n"
		   "-i/--interval SEC, -j/--json, -v/--verbose. Needs root (CAP_BPF, CAP_PERFMON).\n");
}

void cmd_print_help(const char *name)
{
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(cmds[i].name, name))
			fputs(cmds[i].usage, stdout);
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
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(cmds[i].name, argv[1]))
			return cmds[i].run(argc - 1, argv + 1);
	fprintf(stderr, "tailtrace: error: unknown command '%s' (see 'tailtrace --help')\n",
		argv[1]);
	return 2;
}
