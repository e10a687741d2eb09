// SPDX-License-Identifier: GPL-2.0
/* What is derived from the option table (option_table.h) besides the parser's own tables:
 * each command's allowed set and the options part of its --help. */
#include <stdio.h>
#include <string.h>
#include "cmd/options.h"

static const struct opt_row {
	const char *name, *value, *help;
	char letter;
	unsigned int cmds;
} rows[TT_NOPTIONS] = {
#define X(id, name, letter, value, cmds, help) [OI_##id] = { name, value, help, letter, cmds },
	TT_OPTIONS(X)
#undef X
};

static const struct help_for {
	enum tt_cmd_id cmd;
	enum tt_opt_index opt;
	const char *value, *help;
} help_for[] = {
#define X(cmd, opt, value, help) { TT_CMD_##cmd, OI_##opt, value, help },
	TT_OPTION_HELP_FOR(X)
#undef X
};

static const char *const cmd_names[TT_NCMDS] = {
#define X(id, name) [TT_CMD_##id] = name,
	TT_COMMANDS(X)
#undef X
};

const char *opts_cmd_name(enum tt_cmd_id cmd)
{
	return (unsigned int)cmd < TT_NCMDS ? cmd_names[cmd] : NULL;
}

__u64 opts_allowed(enum tt_cmd_id cmd)
{
	unsigned int c = 1u << cmd;
	__u64 set = 0;

	for (int i = 0; i < TT_NOPTIONS; i++) {
		if (!(rows[i].cmds & c))
			continue;
		if (i == OI_BY && (TT_BY_HOST_CMDS & c))
			set |= OPT_BY_HOST;
		else
			set |= 1ULL << i;
	}
	return set;
}

const char *opts_help(enum tt_cmd_id cmd, enum tt_opt_index opt, const char **value)
{
	for (size_t i = 0; i < sizeof(help_for) / sizeof(help_for[0]); i++)
		if (help_for[i].cmd == cmd && help_for[i].opt == opt) {
			*value = help_for[i].value;
			return help_for[i].help;
		}
	*value = rows[opt].value;
	return rows[opt].help;
}

/* The option's name and value as --help starts its line: "  -p, --pid PID". */
#define SPEC_COLS 24

void opts_print_help(FILE *f, enum tt_cmd_id cmd)
{
	for (int i = 0; i < TT_NOPTIONS; i++) {
		const char *value, *help, *nl;
		char spec[64];
		int n;

		if (!(rows[i].cmds & (1u << cmd)))
			continue;
		help = opts_help(cmd, i, &value);
		if (rows[i].letter)
			n = snprintf(spec, sizeof(spec), "  -%c, --%s", rows[i].letter,
				     rows[i].name);
		else
			n = snprintf(spec, sizeof(spec), "      --%s", rows[i].name);
		if (value)
			n += snprintf(spec + n, sizeof(spec) - n, " %s", value);
		/* a long name and value: the help starts on the next line */
		if (n > SPEC_COLS - 2)
			fprintf(f, "%s\n%*s", spec, SPEC_COLS, "");
		else
			fprintf(f, "%-*s", SPEC_COLS, spec);
		while ((nl = strchr(help, '\n'))) {
			fprintf(f, "%.*s\n%*s", (int)(nl - help), help, SPEC_COLS, "");
			help = nl + 1;
		}
		fprintf(f, "%s\n", help);
	}
}
