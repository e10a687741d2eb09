// SPDX-License-Identifier: GPL-2.0
/* The program catalogue against the built objects (opened, not loaded: no root needed):
 * every program has its row and every row its program, every event a stage names has a
 * program, and the compat object (no kfuncs) has the same programs, maps and global
 * variables at the same offsets, so one skeleton serves both. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "collect/kernel_caps.h"
#include "core/stages.h"
#include "tailtrace.skel.h"
#include "tailtrace_compat.skel.h"

static struct bpf_object *open_bytes(const void *data, size_t sz, const char *name)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = name);
	struct bpf_object *obj = bpf_object__open_mem(data, sz, &opts);

	assert_non_null(obj);
	return obj;
}

static struct bpf_object *open_main(void)
{
	size_t sz;
	const void *d = tailtrace_bpf__elf_bytes(&sz);

	return open_bytes(d, sz, "tailtrace");
}

static struct bpf_object *open_compat(void)
{
	size_t sz;
	const void *d = tailtrace_compat_bpf__elf_bytes(&sz);

	return open_bytes(d, sz, "tailtrace");
}

static void test_every_program_has_a_row(void **state)
{
	struct bpf_object *obj = open_main();
	const struct feed_row *rows = feed_rows();
	struct bpf_program *p;

	(void)state;
	bpf_object__for_each_program (p, obj) {
		bool found = false;

		for (int i = 0; i < FEED_ROWS && !found; i++)
			found = !strcmp(rows[i].prog, bpf_program__name(p));
		if (!found)
			fail_msg("program %s has no row in bpf/program_catalogue.h",
				 bpf_program__name(p));
	}
	for (int i = 0; i < FEED_ROWS; i++)
		if (!bpf_object__find_program_by_name(obj, rows[i].prog))
			fail_msg("row %d names %s, which the object lacks", i, rows[i].prog);
	bpf_object__close(obj);
}

/* A row's kind is what its program's section says (tp_btf/…, fentry/…, kprobe/…). */
static void test_rows_match_sections(void **state)
{
	static const char *const prefix[FEED__MAX] = {
		[FEED_TP_BTF] = "tp_btf/",         [FEED_FENTRY] = "fentry/",
		[FEED_FEXIT] = "fexit/",           [FEED_KPROBE] = "kprobe/",
		[FEED_KRETPROBE] = "kretprobe/",   [FEED_SOCKOPS] = "sockops",
		[FEED_SOCKOPS_TSTAMP] = "sockops", [FEED_CGROUP_SKB] = "cgroup_skb/",
		[FEED_UPROBE] = "uprobe",          [FEED_RUN] = "raw_tp",
	};
	struct bpf_object *obj = open_main();
	const struct feed_row *rows = feed_rows();

	(void)state;
	for (int i = 0; i < FEED_ROWS; i++) {
		struct bpf_program *p = bpf_object__find_program_by_name(obj, rows[i].prog);
		const char *sec = p ? bpf_program__section_name(p) : "";
		char want[96];

		assert_non_null(p);
		if (strncmp(sec, prefix[rows[i].kind], strlen(prefix[rows[i].kind])) &&
		    !(rows[i].kind == FEED_UPROBE && !strcmp(sec, "uretprobe")))
			fail_msg("%s: section %s, row kind %s", rows[i].prog, sec,
				 feed_kind_name(rows[i].kind));
		/* the attach target is the row's: the event name of a tracepoint, or the
		 * function */
		if (rows[i].kind == FEED_TP_BTF) {
			snprintf(want, sizeof(want), "tp_btf/%s", strchr(rows[i].target, ':') + 1);
			assert_string_equal(sec, want);
		} else if (rows[i].kind >= FEED_FENTRY && rows[i].kind <= FEED_KRETPROBE) {
			snprintf(want, sizeof(want), "%s%s", prefix[rows[i].kind], rows[i].target);
			assert_string_equal(sec, want);
		}
	}
	bpf_object__close(obj);
}

/* Every event a stage needs is fed by at least one row. */
static void test_stage_events_have_programs(void **state)
{
	const struct feed_row *rows = feed_rows();

	(void)state;
	for (int s = 0; s < STAGE__MAX; s++) {
		const struct stage_info *si = stage_info(s);

		for (int t = 0; t < 4 && si->tps[t]; t++) {
			bool found = false;

			for (int i = 0; i < FEED_ROWS && !found; i++)
				found = !strcmp(rows[i].event, si->tps[t]);
			if (!found)
				fail_msg("%s needs %s, which no program feeds", si->name,
					 si->tps[t]);
		}
	}
}

/* Every row feeds something: an event a stage names, or one that feeds a counter or flow
 * state (kernel_caps_tp_feeds), or a program that is no tracepoint's (sockops, cgroup_skb,
 * the flow sweep, the CUDA uprobes). A row nothing reads is a catalogue line to remove. */
static void test_rows_feed_something(void **state)
{
	const struct feed_row *rows = feed_rows();

	(void)state;
	for (int i = 0; i < FEED_ROWS; i++) {
		bool used = rows[i].kind != FEED_TP_BTF && rows[i].kind != FEED_FENTRY &&
			    rows[i].kind != FEED_FEXIT && rows[i].kind != FEED_KPROBE &&
			    rows[i].kind != FEED_KRETPROBE;

		used = used || kernel_caps_tp_feeds(rows[i].event);
		for (int s = 0; s < STAGE__MAX && !used; s++)
			for (int t = 0; t < 4 && stage_info(s)->tps[t] && !used; t++)
				used = !strcmp(stage_info(s)->tps[t], rows[i].event);
		if (!used)
			fail_msg("%s feeds %s, which no stage or counter needs", rows[i].prog,
				 rows[i].event);
	}
}

/* Every stage has a feed: the kernel events it names (each with a row, above), or the RDMA
 * object's uprobes (SF_RDMA, bpf/rdma.bpf.c, attached by user/rdma). */
static void test_every_stage_has_a_feed(void **state)
{
	(void)state;
	for (int s = 0; s < STAGE__MAX; s++) {
		const struct stage_info *si = stage_info(s);

		if (!si->tps[0] && !(si->flags & SF_RDMA))
			fail_msg("stage %s names no kernel event and is not an RDMA stage",
				 si->name);
		if (si->tps[0] && (si->flags & SF_RDMA))
			fail_msg("RDMA stage %s names kernel events no program of the RDMA "
				 "object feeds",
				 si->name);
	}
}

/* The names and offsets of a data section's variables, as one string. */
static void datasec_layout(const struct btf *btf, const char *sec, char *out, size_t len)
{
	__s32 id = btf__find_by_name_kind(btf, sec, BTF_KIND_DATASEC);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_var_secinfo *v;
	size_t off = 0;

	out[0] = 0;
	if (!t)
		return;
	v = btf_var_secinfos(t);
	for (int i = 0; i < btf_vlen(t) && off < len; i++, v++) {
		const struct btf_type *var = btf__type_by_id(btf, v->type);

		off += (size_t)snprintf(out + off, len - off, "%s@%u+%u ",
					btf__name_by_offset(btf, var->name_off), v->offset,
					v->size);
	}
}

static void test_compat_object_same_layout(void **state)
{
	static const char *const secs[] = { ".rodata", ".bss", ".data" };
	struct bpf_object *a = open_main(), *b = open_compat();
	struct bpf_program *p;
	struct bpf_map *m;
	static char la[16384], lb[16384];

	(void)state;
	bpf_object__for_each_program (p, a)
		if (!bpf_object__find_program_by_name(b, bpf_program__name(p)))
			fail_msg("compat object lacks program %s", bpf_program__name(p));
	bpf_object__for_each_program (p, b)
		if (!bpf_object__find_program_by_name(a, bpf_program__name(p)))
			fail_msg("compat object has an extra program %s", bpf_program__name(p));
	bpf_object__for_each_map (m, a)
		if (!bpf_object__find_map_by_name(b, bpf_map__name(m)))
			fail_msg("compat object lacks map %s", bpf_map__name(m));
	for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
		datasec_layout(bpf_object__btf(a), secs[i], la, sizeof(la));
		datasec_layout(bpf_object__btf(b), secs[i], lb, sizeof(lb));
		assert_string_equal(la, lb);
	}
	bpf_object__close(a);
	bpf_object__close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_program_has_a_row),
		cmocka_unit_test(test_rows_match_sections),
		cmocka_unit_test(test_stage_events_have_programs),
		cmocka_unit_test(test_rows_feed_something),
		cmocka_unit_test(test_every_stage_has_a_feed),
		cmocka_unit_test(test_compat_object_same_layout),
	};

	libbpf_set_print(NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
