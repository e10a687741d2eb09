// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the stage catalogue: names are a stable, unique contract that parses back
 * to the same stage, and names and classes match docs/stages.md and docs/attribution.md. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/stages.h"
#include "lib/util.h"

static const char *const groups[] = { "tx", "rx", "tcp", "sched", "gpu", "req", "rdma" };

/* True when name starts with a stage group and a dot. */
static bool in_stage_group(const char *name)
{
	const char *dot = strchr(name, '.');

	for (size_t g = 0; dot && g < ARRAY_SIZE(groups); g++)
		if (strlen(groups[g]) == (size_t)(dot - name) &&
		    !strncmp(groups[g], name, (size_t)(dot - name)))
			return true;
	return false;
}

static void test_names_unique_and_well_formed(void **state)
{
	(void)state;
	for (int i = 0; i < STAGE__MAX; i++) {
		const struct stage_info *si = stage_info(i);
		const char *dot;

		assert_non_null(si);
		assert_non_null(si->name);
		assert_non_null(si->desc);
		assert_true(si->desc[0] != 0);
		/* "group.event": lowercase, digits and '_' around exactly one dot */
		dot = strchr(si->name, '.');
		assert_non_null(dot);
		assert_null(strchr(dot + 1, '.'));
		assert_true(dot > si->name && dot[1] != 0);
		for (const char *p = si->name; *p; p++)
			assert_true(p == dot || islower((unsigned char)*p) ||
				    isdigit((unsigned char)*p) || *p == '_');
		if (!in_stage_group(si->name))
			fail_msg("stage %s in no known group", si->name);
		for (int j = 0; j < i; j++)
			if (!strcmp(stage_info(j)->name, si->name))
				fail_msg("stages %d and %d are both named %s", j, i, si->name);
	}
}

static void test_by_name_round_trip(void **state)
{
	(void)state;
	for (int i = 0; i < STAGE__MAX; i++) {
		assert_int_equal(stage_info(i)->id, i);
		assert_int_equal(stage_by_name(stage_info(i)->name), i);
	}
	assert_int_equal(stage_by_name("tx.qdisc"), STAGE_TX_QDISC);
	assert_int_equal(stage_by_name("tcp.rtt"), STAGE_TCP_RTT);
	assert_int_equal(stage_by_name("rdma.cq_event"), STAGE_RDMA_CQ_EVENT);
	assert_int_equal(stage_by_name("rdma.ucx_op"), STAGE_RDMA_UCX);
	assert_int_equal(stage_by_name("rdma.ucx_rtt"), STAGE_RDMA_UCX_RTT);
	assert_int_equal(stage_by_name(""), -ENOENT);
	assert_int_equal(stage_by_name("tx"), -ENOENT);
	assert_int_equal(stage_by_name("tx.qdisc "), -ENOENT);
	assert_int_equal(stage_by_name("TX.QDISC"), -ENOENT);
	assert_int_equal(stage_by_name("tx.qdisc.x"), -ENOENT);
	assert_int_equal(stage_by_name("app.other"), -ENOENT); /* an attribution part */
	assert_null(stage_info(STAGE__MAX));
	assert_null(stage_info((enum tt_stage) - 1));
}

/* docs/attribution.md: which class each stage's time counts towards. */
static void test_classes(void **state)
{
	static const struct {
		const char *name;
		enum tt_class c;
	} want[] = {
		{ "sched.oncpu", CLASS_COMPUTE },
		{ "sched.runq", CLASS_COMPUTE },
		{ "sched.offcpu", CLASS_COMPUTE },
		{ "gpu.wait", CLASS_COMPUTE },
		{ "rx.sockq", CLASS_COMPUTE },
		{ "rx.stack", CLASS_TRANSPORT },
		/* a packet waiting for the NET_RX softirq waits for the host's CPU */
		{ "rx.backlog", CLASS_COMPUTE },
		{ "rx.softirq", CLASS_COMPUTE },
		{ "tx.ring", CLASS_TRANSPORT },
		{ "tx.nic", CLASS_TRANSPORT },
		{ "tx.qdisc", CLASS_CONGESTION },
		{ "tx.sendq", CLASS_CONGESTION },
		/* base part transport, inflation above the minimum congestion */
		{ "tcp.rtt", CLASS_SPLIT },
		{ "req.latency", CLASS_REQUEST },
		{ "req.ttft", CLASS_REQUEST },
		{ "req.gap", CLASS_REQUEST },
	};
	int seen = 0;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		int id = stage_by_name(want[i].name);

		assert_true(id >= 0);
		if (stage_info(id)->class != want[i].c)
			fail_msg("%s is %s, docs say %s", want[i].name,
				 class_name(stage_info(id)->class), class_name(want[i].c));
	}
	/* tcp.retrans is transport unless queue evidence makes it congestion */
	assert_int_equal(stage_info(STAGE_TCP_RETRANS)->class, CLASS_TRANSPORT);
	/* every stage has a real class, and only req.* are request totals */
	for (int i = 0; i < STAGE__MAX; i++) {
		const struct stage_info *si = stage_info(i);

		assert_true((unsigned)si->class < CLASS__MAX);
		assert_int_equal(si->class == CLASS_REQUEST, !strncmp(si->name, "req.", 4));
		if (si->class == CLASS_REQUEST)
			seen++;
	}
	assert_int_equal(seen, 3);
}

/* docs/stages.md, found from $TT_ROOT, the current directory or the test binary
 * (build/tests/unit/x -> the repository). */
static FILE *open_stages_doc(void)
{
	char path[PATH_MAX + 32], exe[PATH_MAX];
	const char *root = getenv("TT_ROOT");
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/docs/stages.md", root ? root : ".");
	if ((f = fopen(path, "r")))
		return f;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	snprintf(path, sizeof(path), "%s/../../../docs/stages.md", dirname(exe));
	return fopen(path, "r");
}

/* Every table row of docs/stages.md that starts with a stage name: the stage exists, and
 * the first word of the row's last cell (when the table has a class column) is its class;
 * every stage of the catalogue is documented. */
static void test_docs_stages_table(void **state)
{
	bool documented[STAGE__MAX] = { false };
	char line[4096];
	FILE *f = open_stages_doc();
	int rows = 0;

	(void)state;
	if (!f)
		fail_msg("docs/stages.md not found (set TT_ROOT to the repository)");
	while (fgets(line, sizeof(line), f)) {
		char name[64], *end, *last, *cls;
		const struct stage_info *si;
		int id, cells = 0;

		if (strncmp(line, "| `", 3))
			continue;
		end = strchr(line + 3, '`');
		if (!end || end - (line + 3) >= (long)sizeof(name))
			continue;
		memcpy(name, line + 3, (size_t)(end - (line + 3)));
		name[end - (line + 3)] = 0;
		if (!in_stage_group(name))
			continue; /* a JSON key or counter table, not a stage */
		id = stage_by_name(name);
		if (id < 0)
			fail_msg("docs/stages.md documents %s, which is no stage", name);
		si = stage_info(id);
		documented[id] = true;
		rows++;
		for (char *p = line; *p; p++)
			cells += *p == '|';
		if (cells <= 3)
			continue; /* stage | meaning: no class column (the req.* table) */
		for (int t = 0; t < 4 && si->tps[t]; t++) {
			char quoted[80];

			snprintf(quoted, sizeof(quoted), "`%s`", si->tps[t]);
			if (!strstr(line, quoted))
				fail_msg("docs/stages.md: the %s row does not name tracepoint %s",
					 name, si->tps[t]);
		}
		*strrchr(line, '|') = 0;
		last = strrchr(line, '|') + 1;
		cls = strtok(last, " (");
		if (!cls || strcmp(cls, class_name(si->class)))
			fail_msg("docs/stages.md: %s is %s, the catalogue says %s", name,
				 cls ? cls : "(none)", class_name(si->class));
	}
	fclose(f);
	assert_true(rows >= STAGE__MAX);
	for (int i = 0; i < STAGE__MAX; i++)
		if (!documented[i])
			fail_msg("stage %s is not in docs/stages.md", stage_info(i)->name);
}

/* The test a catalogue row names exists (paths are relative to the repository). */
static void test_catalogue_tests_exist(void **state)
{
	char path[PATH_MAX + 64], exe[PATH_MAX];
	const char *root = getenv("TT_ROOT");
	ssize_t n;

	(void)state;
	if (!root) {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		assert_true(n > 0);
		exe[n] = 0;
		snprintf(path, sizeof(path), "%s/../../..", dirname(exe));
		root = strdup(path);
	}
	for (int i = 0; i < STAGE__MAX; i++) {
		const struct stage_info *si = stage_info(i);

		if (!si->test)
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, si->test);
		if (access(path, R_OK))
			fail_msg("stage %s: its test %s does not exist", si->name, si->test);
	}
}

/* The command stage sets come from the flags: hist's defaults are the TCP path stages and
 * RDMA; the request and scheduler stages are opt-in. */
static void test_stage_sets(void **state)
{
	int ids[STAGE__MAX], n;

	(void)state;
	n = stages_with(SF_DEFAULT, ids, STAGE__MAX);
	assert_int_equal(n, 15);
	assert_int_equal(ids[0], STAGE_TX_SENDQ);
	assert_int_equal(ids[n - 1], STAGE_TX_RING);
	/* the driver/softirq stages: shown by default once their programs run, which a
	 * filter or --stage decides */
	n = stages_with(SF_NIC, ids, STAGE__MAX);
	assert_int_equal(n, 3);
	assert_int_equal(ids[0], STAGE_RX_BACKLOG);
	n = stages_with(SF_REQUESTS | SF_SCHED, ids, STAGE__MAX);
	assert_int_equal(n, 4);
	assert_int_equal(ids[0], STAGE_SCHED_RUNQ);
	assert_int_equal(stages_with(SF_PLACE_DEV, ids, 1), 1);
	/* the RDMA object's stages are the rdma.* ones, which the collector leaves to it */
	n = stages_with(SF_RDMA, ids, STAGE__MAX);
	assert_int_equal(n, 4);
	for (int i = 0; i < n; i++)
		assert_memory_equal(stage_info(ids[i])->name, "rdma.", 5);
	/* flow sampling thins every stage but the driver/softirq ones and, with --dev, the
	 * ones placed on a device (their packets are any flow's) */
	for (int i = 0; i < STAGE__MAX; i++) {
		const struct stage_info *si = stage_info(i);

		assert_int_equal(stage_flow_sampled(i, false), !(si->flags & SF_NIC));
		assert_int_equal(stage_flow_sampled(i, true),
				 !(si->flags & (SF_NIC | SF_PLACE_DEV)));
	}
	assert_false(stage_flow_sampled(STAGE_TX_QDISC, true));
	assert_false(stage_flow_sampled(STAGE_TX_NIC, true));
	assert_true(stage_flow_sampled(STAGE_TX_SENDQ, true));
	for (int i = 0; i < STAGE__MAX; i++) {
		const struct stage_info *si = stage_info(i);

		/* a stage fed by the request programs is not shown by default */
		assert_false((si->flags & SF_REQUESTS) && (si->flags & SF_DEFAULT));
		assert_non_null(si->hook);
		assert_non_null(si->desc);
	}
}

static void test_class_names(void **state)
{
	(void)state;
	assert_string_equal(class_name(CLASS_COMPUTE), "compute");
	assert_string_equal(class_name(CLASS_TRANSPORT), "transport");
	assert_string_equal(class_name(CLASS_CONGESTION), "congestion");
	assert_string_equal(class_name(CLASS_SPLIT), "split");
	assert_string_equal(class_name(CLASS_REQUEST), "request");
	assert_string_equal(class_name(CLASS__MAX), "?");
	assert_string_equal(class_name((enum tt_class) - 1), "?");
}

static void test_group_by(void **state)
{
	static const char *const names[GROUP__MAX] = {
		[GROUP_NONE] = "none", [GROUP_PORT] = "port",     [GROUP_RADDR] = "raddr",
		[GROUP_COMM] = "comm", [GROUP_CGROUP] = "cgroup", [GROUP_POD] = "pod",
	};

	(void)state;
	for (int g = 0; g < GROUP__MAX; g++) {
		assert_string_equal(group_by_name(g), names[g]);
		assert_int_equal(group_by_parse(names[g]), g);
	}
	assert_string_equal(group_by_name(GROUP__MAX), "?");
	assert_int_equal(group_by_parse("pid"), -EINVAL);
	assert_int_equal(group_by_parse(""), -EINVAL);
	assert_int_equal(group_by_parse("Port"), -EINVAL);
	assert_int_equal(group_by_parse("?"), -EINVAL);
}

/* A recording made before a stage was renamed still reads its rows. */
static void test_recorded_names(void **state)
{
	(void)state;
	assert_true(stage_by_name("rdma.ucx") < 0);
	assert_int_equal(stage_by_recorded_name("rdma.ucx"), STAGE_RDMA_UCX);
	assert_int_equal(stage_by_recorded_name("tx.qdisc"), STAGE_TX_QDISC);
	assert_true(stage_by_recorded_name("no.such") < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recorded_names),
		cmocka_unit_test(test_names_unique_and_well_formed),
		cmocka_unit_test(test_by_name_round_trip),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_docs_stages_table),
		cmocka_unit_test(test_catalogue_tests_exist),
		cmocka_unit_test(test_stage_sets),
		cmocka_unit_test(test_class_names),
		cmocka_unit_test(test_group_by),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
