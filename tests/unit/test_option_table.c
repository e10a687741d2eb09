// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the option table (user/cmd/option_table.h): its rows are well formed, each
 * command accepts the options it always did, --help shows every option a command takes, and
 * the bash completion offers exactly the table's options per command. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmd/options.h"
#include "lib/util.h"

static const struct row {
	const char *id, *name, *value, *help;
	char letter;
	unsigned int cmds;
} rows[] = {
#define X(id, name, letter, value, cmds, help) { #id, name, value, help, letter, cmds },
	TT_OPTIONS(X)
#undef X
};

static const struct help_for {
	int cmd, opt;
	const char *value, *help;
} help_for[] = {
#define X(cmd, opt, value, help) { TT_CMD_##cmd, OI_##opt, value, help },
	TT_OPTION_HELP_FOR(X)
#undef X
};

/* Each line of a help text fits the 56 columns right of the options' names. */
static void assert_help_fits(const char *what, const char *help)
{
	const char *p = help;

	if (!help || !*help)
		fail_msg("%s has no help line", what);
	while (*p) {
		size_t n = strcspn(p, "\n");

		if (n == 0 || n > 56)
			fail_msg("%s: help line of %zu columns (1 to 56): %.*s", what, n, (int)n,
				 p);
		p += n + (p[n] == '\n');
	}
}

static void test_rows_well_formed(void **state)
{
	(void)state;
	assert_int_equal(ARRAY_SIZE(rows), TT_NOPTIONS);
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		const struct row *r = &rows[i];

		assert_help_fits(r->name, r->help);
		if (strlen(r->name) < 2 ||
		    strspn(r->name, "abcdefghijklmnopqrstuvwxyz-") != strlen(r->name))
			fail_msg("--%s: long names are lower case words and dashes", r->name);
		if (!r->cmds || (r->cmds & ~TTC_ALL))
			fail_msg("--%s: no command, or one that does not exist", r->name);
		if (r->value && strspn(r->value, "ABCDEFGHIJKLMNOPQRSTUVWXYZ:") != strlen(r->value))
			fail_msg("--%s: a value is named in capitals (%s)", r->name, r->value);
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(rows[j].name, r->name))
				fail_msg("--%s declared twice", r->name);
			if (r->letter && rows[j].letter == r->letter)
				fail_msg("-%c is both --%s and --%s", r->letter, rows[j].name,
					 r->name);
		}
	}
}

/* A command's wording of an option is for an option it takes, and fits too. */
static void test_help_for_well_formed(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(help_for); i++) {
		const struct help_for *h = &help_for[i];

		assert_help_fits(rows[h->opt].name, h->help);
		if (!(rows[h->opt].cmds & (1u << h->cmd)))
			fail_msg("help for --%s in '%s', which does not take it", rows[h->opt].name,
				 opts_cmd_name(h->cmd));
		if (!h->value != !rows[h->opt].value)
			fail_msg("help for --%s in '%s' gives a flag a value or a value none",
				 rows[h->opt].name, opts_cmd_name(h->cmd));
		for (size_t j = 0; j < i; j++)
			if (help_for[j].cmd == h->cmd && help_for[j].opt == h->opt)
				fail_msg("two help lines for --%s in '%s'", rows[h->opt].name,
					 opts_cmd_name(h->cmd));
	}
}

/* What each command accepted when every command listed its own bits: the table must keep
 * it (-h and -v, OPT_ALWAYS, go everywhere). */
static void test_command_sets_kept(void **state)
{
	static const __u64 was[TT_NCMDS] = {
		[TT_CMD_PROBE] = OPT_JSON,
		[TT_CMD_HIST] = OPT_FILTERS | OPT_RDMA | OPT_DURATION | OPT_INTERVAL | OPT_ALIGN |
				OPT_BUDGET | OPT_JSON | OPT_STAGE | OPT_BY | OPT_ROLE | OPT_CUDA |
				OPT_TLS,
		[TT_CMD_EXPLAIN] = OPT_FILTERS | OPT_RDMA | OPT_DURATION | OPT_INTERVAL |
				   OPT_ALIGN | OPT_BUDGET | OPT_JSON | OPT_ROLE | OPT_CUDA |
				   OPT_TLS,
		[TT_CMD_TOP] = OPT_FILTERS | OPT_RDMA | OPT_DURATION | OPT_INTERVAL | OPT_ALIGN |
			       OPT_BUDGET | OPT_BY | OPT_COUNT,
		[TT_CMD_RECORD] = OPT_FILTERS | OPT_RDMA | OPT_DURATION | OPT_INTERVAL |
				  OPT_BUDGET | OPT_OUTPUT | OPT_MAX_SIZE | OPT_LISTEN | OPT_ROLE |
				  OPT_CUDA | OPT_TLS | OPT_BY | OPT_HOST | OPT_DEEP,
		[TT_CMD_REPORT] = OPT_FROM_TO | OPT_FORMAT | OPT_OUTPUT | OPT_JSON | OPT_BY_HOST,
		[TT_CMD_RDMA] =
			OPT_PID | OPT_DURATION | OPT_INTERVAL | OPT_COUNT | OPT_JSON | OPT_RDMA,
	};
	static const char *const names[TT_NCMDS] = { "probe",  "hist",   "explain", "top",
						     "record", "report", "rdma" };

	(void)state;
	for (int c = 0; c < TT_NCMDS; c++) {
		__u64 got = opts_allowed(c);

		assert_string_equal(opts_cmd_name(c), names[c]);
		assert_int_equal(got & OPT_ALWAYS, OPT_ALWAYS);
		if ((got & ~OPT_ALWAYS) != was[c])
			fail_msg("'%s' accepts 0x%llx, was 0x%llx", names[c],
				 (unsigned long long)(got & ~OPT_ALWAYS),
				 (unsigned long long)was[c]);
	}
	assert_null(opts_cmd_name(TT_NCMDS));
}

/* `tailtrace CMD --help` names every option the command takes with its value, and only
 * those; every line fits 80 columns. */
static void test_help_lists_the_commands_options(void **state)
{
	(void)state;
	for (int c = 0; c < TT_NCMDS; c++) {
		char *text = NULL, *line, *save = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		__u64 shown = 0;

		assert_non_null(f);
		opts_print_help(f, c);
		fclose(f);
		for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char spec[80];
			const char *value, *name;

			if (strlen(line) > 80)
				fail_msg("'%s' --help: line over 80 columns: %s", opts_cmd_name(c),
					 line);
			if (line[2] != '-' && line[6] != '-')
				continue; /* a help line's continuation */
			for (int i = 0; i < TT_NOPTIONS; i++) {
				opts_help(c, i, &value);
				snprintf(spec, sizeof(spec), "--%s%s%s", rows[i].name,
					 value ? " " : "", value ? value : "");
				name = strstr(line, "--");
				if (name && !strncmp(name, spec, strlen(spec)) &&
				    (name[strlen(spec)] == ' ' || name[strlen(spec)] == '\0'))
					shown |= 1ULL << i;
			}
		}
		free(text);
		for (int i = 0; i < TT_NOPTIONS; i++)
			if (!!(shown & (1ULL << i)) != !!(rows[i].cmds & (1u << c)))
				fail_msg("'%s' --help %s --%s", opts_cmd_name(c),
					 shown & (1ULL << i) ? "shows" : "lacks", rows[i].name);
	}
}

/* dist/bash-completion/tailtrace, found from $TT_ROOT, the current directory or the test
 * binary (build/tests/unit/x -> the repository). */
static FILE *open_completion(void)
{
	static const char rel[] = "dist/bash-completion/tailtrace";
	char path[PATH_MAX + 64], exe[PATH_MAX];
	const char *root = getenv("TT_ROOT");
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root ? root : ".", rel);
	if ((f = fopen(path, "r")))
		return f;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	snprintf(path, sizeof(path), "%s/../../../%s", dirname(exe), rel);
	return fopen(path, "r");
}

#define MAX_VARS 16

struct shell_vars {
	char name[MAX_VARS][80], value[MAX_VARS][1024];
	int n;
};

/* The words of a completion list with its $_tailtrace_* variables expanded, as the option
 * bits they name (0 when a word is no option of the table). */
static __u64 list_bits(const struct shell_vars *v, const char *list, const char *where)
{
	char buf[2048], *w, *save = NULL;
	__u64 bits = 0;

	snprintf(buf, sizeof(buf), "%s", list);
	for (w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		int i, k;

		if (w[0] == '$') {
			for (k = 0; k < v->n && strcmp(v->name[k], w + 1); k++)
				;
			if (k == v->n)
				fail_msg("%s: %s is not set", where, w);
			bits |= list_bits(v, v->value[k], where);
			continue;
		}
		for (i = 0; i < TT_NOPTIONS; i++)
			if (!strncmp(w, "--", 2) && !strcmp(w + 2, rows[i].name))
				break;
		if (i == TT_NOPTIONS)
			fail_msg("%s offers %s, no option of the table", where, w);
		bits |= 1ULL << i;
	}
	return bits;
}

/* The completion's `[cmd]="--a --b $_tailtrace_x"` lists (plus _tailtrace_common, offered
 * to every command) are each command's options in the table. */
static void test_completion_matches_table(void **state)
{
	static struct shell_vars vars;
	__u64 offered[TT_NCMDS] = { 0 }, common = 0;
	unsigned int listed = 0;
	char line[2048];
	FILE *f = open_completion();

	(void)state;
	if (!f)
		fail_msg(
			"dist/bash-completion/tailtrace not found (set TT_ROOT to the repository)");
	while (fgets(line, sizeof(line), f)) {
		char name[64], value[1024];
		int c;

		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "_tailtrace_%63[a-z_]=\"%1023[^\"]\"", name, value) == 2 &&
		    vars.n < MAX_VARS) {
			snprintf(vars.name[vars.n], sizeof(vars.name[0]), "_tailtrace_%s", name);
			snprintf(vars.value[vars.n++], sizeof(vars.value[0]), "%s", value);
			if (!strcmp(name, "common"))
				common = list_bits(&vars, value, "_tailtrace_common");
		} else if (sscanf(line, "\t[%63[a-z]]=\"%1023[^\"]\"", name, value) == 2) {
			for (c = 0; c < TT_NCMDS && strcmp(opts_cmd_name(c), name); c++)
				;
			if (c == TT_NCMDS)
				fail_msg("completion lists options of '%s', no command", name);
			offered[c] = list_bits(&vars, value, name);
			listed |= 1u << c;
		}
	}
	fclose(f);
	assert_int_not_equal(common, 0);
	for (int c = 0; c < TT_NCMDS; c++) {
		__u64 want = 0;

		if (!(listed & (1u << c)))
			fail_msg("completion has no list for '%s'", opts_cmd_name(c));
		for (int i = 0; i < TT_NOPTIONS; i++)
			if (rows[i].cmds & (1u << c))
				want |= 1ULL << i;
		if ((offered[c] | common) != want)
			fail_msg("completion of '%s' offers 0x%llx, the table says 0x%llx",
				 opts_cmd_name(c), (unsigned long long)(offered[c] | common),
				 (unsigned long long)want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_well_formed),
		cmocka_unit_test(test_help_for_well_formed),
		cmocka_unit_test(test_command_sets_kept),
		cmocka_unit_test(test_help_lists_the_commands_options),
		cmocka_unit_test(test_completion_matches_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
