/* SPDX-License-Identifier: GPL-2.0 */
/* Entry points of the CLI commands, dispatched from main.c's table. Each returns the
 * process exit status: 0 ok, 1 runtime failure (privileges, kernel), 2 usage error. */
#ifndef TT_COMMANDS_H
#define TT_COMMANDS_H

#include "cmd/option_table.h"

struct tt_cmd {
	enum tt_cmd_id id;
	int (*run)(int argc, char **argv);
	const char *summary;
	/* `tailtrace CMD --help` but the options (from the option table): the synopsis, the
	 * description, then "Examples:" */
	const char *usage;
};

int cmd_probe(int argc, char **argv);
int cmd_rdma(int argc, char **argv);
int cmd_hist(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* `tailtrace CMD --help` text for a command, printed by each command on -h. */
void cmd_print_help(enum tt_cmd_id cmd);

#endif
