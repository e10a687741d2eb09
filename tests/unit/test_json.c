// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the JSON writer: its output is parsed back by a strict RFC 8259 reader
 * written here, and the tree read back must be the tree that was written. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/json.h"
#include "lib/util.h"

#include "json_reader.h"

/* The reader is the judge, so it must refuse what is not JSON. */
static void test_reader_is_strict(void **state)
{
	static const char *const bad[] = {
		"",        "{",   "[1 2]", "{\"a\":1,}", "[1,]", "{\"a\"}", "{a:1}",     "\"\x01\"",
		"\"\\x\"", "NaN", "nan",   "inf",        "-",    "01",      "1.",        ".5",
		"1e",      "+1",  "[1]]",  "{} {}",      "tru",  "\"open",  "\"\\u00\"", "'s'",
	};
	static const char *const good[] = {
		"{}",
		"[]",
		"0",
		"-0",
		"1.5e-3",
		"\"\\u001f\"",
		"[null,true,false]",
		" {\"a\" : [ 1 , {} ] }\n",
		"\"\\/\"",
	};
	struct jv *v;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		v = jv_parse(bad[i], strlen(bad[i]));
		if (v)
			fail_msg("reader accepted %s", bad[i]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		v = jv_parse(good[i], strlen(good[i]));
		if (!v)
			fail_msg("reader refused %s", good[i]);
		jv_free(v);
	}
}

/* ---- capturing the writer's output ---- */

struct cap {
	char *buf;
	size_t len;
	FILE *f;
	struct json_writer w;
};

static void cap_open(struct cap *c, bool pretty)
{
	memset(c, 0, sizeof(*c));
	c->f = open_memstream(&c->buf, &c->len);
	assert_non_null(c->f);
	jw_init(&c->w, c->f, pretty);
}

static struct jv *cap_close_parse(struct cap *c)
{
	struct jv *v;

	fclose(c->f);
	v = jv_parse(c->buf, c->len);
	if (!v)
		fail_msg("writer output is not valid JSON: %s", c->buf);
	return v;
}

static void test_compact_exact(void **state)
{
	struct cap c;
	struct jv *v;

	(void)state;
	cap_open(&c, false);
	jw_object_begin(&c.w, NULL);
	jw_string(&c.w, "name", "tx.qdisc");
	jw_uint(&c.w, "count", 3);
	jw_int(&c.w, "delta", -7);
	jw_bool(&c.w, "ok", true);
	jw_bool(&c.w, "bad", false);
	jw_null(&c.w, "place");
	jw_array_begin(&c.w, "buckets");
	jw_array_begin(&c.w, NULL);
	jw_uint(&c.w, NULL, 16);
	jw_uint(&c.w, NULL, 17);
	jw_array_end(&c.w);
	jw_array_begin(&c.w, NULL);
	jw_array_end(&c.w);
	jw_object_begin(&c.w, NULL);
	jw_object_end(&c.w);
	jw_array_end(&c.w);
	jw_object_begin(&c.w, "empty");
	jw_object_end(&c.w);
	jw_double(&c.w, "half", 0.5);
	jw_object_end(&c.w);
	jw_finish(&c.w);
	v = cap_close_parse(&c);
	assert_string_equal(c.buf, "{\"name\":\"tx.qdisc\",\"count\":3,\"delta\":-7,\"ok\":true,"
				   "\"bad\":false,\"place\":null,\"buckets\":[[16,17],[],{}],"
				   "\"empty\":{},\"half\":0.5}\n");
	jv_free(v);
	free(c.buf);
}

static void test_pretty_same_tree(void **state)
{
	struct cap c;
	struct jv *v, *b;

	(void)state;
	cap_open(&c, true);
	jw_object_begin(&c.w, NULL);
	jw_string(&c.w, "a", "x");
	jw_array_begin(&c.w, "list");
	for (int i = 0; i < 3; i++) {
		jw_object_begin(&c.w, NULL);
		jw_uint(&c.w, "i", (unsigned)i);
		jw_array_begin(&c.w, "e");
		jw_array_end(&c.w);
		jw_object_end(&c.w);
	}
	jw_array_end(&c.w);
	jw_object_begin(&c.w, "o");
	jw_object_end(&c.w);
	jw_object_end(&c.w);
	jw_finish(&c.w);
	v = cap_close_parse(&c);
	/* pretty output is several lines, indented, and still the same tree */
	assert_non_null(strstr(c.buf, "\n  \"a\": \"x\""));
	assert_int_equal(v->t, J_OBJ);
	assert_int_equal(v->n, 3);
	b = jv_get(v, "list");
	assert_non_null(b);
	assert_int_equal(b->t, J_ARR);
	assert_int_equal(b->n, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_true(jv_get(b->items[i], "i")->num == (double)i);
		assert_int_equal(jv_get(b->items[i], "e")->n, 0);
	}
	assert_int_equal(jv_get(v, "o")->t, J_OBJ);
	jv_free(v);
	free(c.buf);
}

static void test_escaping_round_trip(void **state)
{
	static const char *const strs[] = {
		"plain",         "",
		"quote\"inside", "back\\slash",
		"\\\"",          "new\nline",
		"tab\tcr\r",     "\x01\x02\x1f",
		"\b\f",          "del\x7f",
		"slash/",        "utf8 \xc2\xb5s \xe2\x86\x92",
		"}{][,:",        "ends with backslash\\",
	};
	char all[32];
	struct cap c;
	struct jv *v, *arr;

	(void)state;
	for (int i = 1; i < 32; i++)
		all[i - 1] = (char)i;
	all[31] = 0;
	cap_open(&c, false);
	jw_object_begin(&c.w, NULL);
	jw_array_begin(&c.w, "s");
	for (size_t i = 0; i < ARRAY_SIZE(strs); i++)
		jw_string(&c.w, NULL, strs[i]);
	jw_string(&c.w, NULL, all);
	jw_array_end(&c.w);
	/* keys go through the same escaping */
	jw_uint(&c.w, "k\"e\\y\n", 1);
	jw_object_end(&c.w);
	jw_finish(&c.w);
	v = cap_close_parse(&c);
	for (size_t i = 0; i < c.len - 1; i++)
		if ((unsigned char)c.buf[i] < 0x20)
			fail_msg("raw control character 0x%02x at %zu", c.buf[i], i);
	arr = jv_get(v, "s");
	assert_non_null(arr);
	assert_int_equal(arr->n, ARRAY_SIZE(strs) + 1);
	for (size_t i = 0; i < ARRAY_SIZE(strs); i++) {
		assert_int_equal(arr->items[i]->t, J_STR);
		assert_int_equal(arr->items[i]->len, strlen(strs[i]));
		assert_string_equal(arr->items[i]->text, strs[i]);
	}
	assert_string_equal(arr->items[arr->n - 1]->text, all);
	assert_non_null(jv_get(v, "k\"e\\y\n"));
	jv_free(v);
	free(c.buf);
}

static void test_print_string(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	json_print_string(f, "a\"b\\c\n\x01");
	fputc(' ', f);
	json_print_string(f, NULL);
	fclose(f);
	assert_string_equal(buf, "\"a\\\"b\\\\c\\n\\u0001\" \"\"");
	free(buf);
}

static void test_nonfinite_is_null(void **state)
{
	static const double finite[] = { 0.0,   -0.0,    1.5,        -2.25, 1e-300, 5e-324,
					 1e300, 1.5e308, 123456.789, 0.1,   3e21 };
	struct cap c;
	struct jv *v, *nf, *fi;

	(void)state;
	cap_open(&c, false);
	jw_object_begin(&c.w, NULL);
	jw_array_begin(&c.w, "nonfinite");
	jw_double(&c.w, NULL, NAN);
	jw_double(&c.w, NULL, -NAN);
	jw_double(&c.w, NULL, INFINITY);
	jw_double(&c.w, NULL, -INFINITY);
	jw_array_end(&c.w);
	jw_array_begin(&c.w, "finite");
	for (size_t i = 0; i < ARRAY_SIZE(finite); i++)
		jw_double(&c.w, NULL, finite[i]);
	jw_array_end(&c.w);
	jw_double(&c.w, "key", NAN);
	jw_object_end(&c.w);
	jw_finish(&c.w);
	v = cap_close_parse(&c);
	nf = jv_get(v, "nonfinite");
	assert_int_equal(nf->n, 4);
	for (size_t i = 0; i < nf->n; i++)
		assert_int_equal(nf->items[i]->t, J_NULL);
	assert_int_equal(jv_get(v, "key")->t, J_NULL);
	fi = jv_get(v, "finite");
	assert_int_equal(fi->n, ARRAY_SIZE(finite));
	for (size_t i = 0; i < fi->n; i++) {
		double want = finite[i], got = fi->items[i]->num;

		assert_int_equal(fi->items[i]->t, J_NUM);
		/* %.10g: ten significant digits */
		if (fabs(got - want) > fabs(want) * 1e-9)
			fail_msg("%.17g written as %s", want, fi->items[i]->text);
	}
	jv_free(v);
	free(c.buf);
}

static void test_integer_limits(void **state)
{
	struct cap c;
	struct jv *v;

	(void)state;
	cap_open(&c, false);
	jw_array_begin(&c.w, NULL);
	jw_uint(&c.w, NULL, ~0ULL);
	jw_int(&c.w, NULL, INT64_MIN);
	jw_int(&c.w, NULL, INT64_MAX);
	jw_uint(&c.w, NULL, 0);
	jw_array_end(&c.w);
	jw_finish(&c.w);
	v = cap_close_parse(&c);
	assert_string_equal(c.buf, "[18446744073709551615,-9223372036854775808,"
				   "9223372036854775807,0]\n");
	jv_free(v);
	free(c.buf);
}

static void test_null_string_value(void **state)
{
	struct cap c;
	struct jv *v;

	(void)state;
	cap_open(&c, false);
	jw_object_begin(&c.w, NULL);
	jw_string(&c.w, "s", NULL);
	jw_object_end(&c.w);
	jw_finish(&c.w);
	v = cap_close_parse(&c);
	assert_int_equal(jv_get(v, "s")->t, J_NULL);
	jv_free(v);
	free(c.buf);
}

/* ---- random trees: what is written is what is read ---- */

static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1DULL;
}

/* gen_* writes a random tree; check_* replays the same random sequence over the tree the
 * reader built and expects the same shape and values. */
static void gen_value(struct json_writer *w, const char *key, int depth, int max_depth);

static void gen_items(struct json_writer *w, bool obj, int depth, int max_depth)
{
	int n = (int)(rnd() % 4);
	char key[16];

	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		gen_value(w, obj ? key : NULL, depth + 1, max_depth);
	}
}

static void gen_value(struct json_writer *w, const char *key, int depth, int max_depth)
{
	unsigned kind = (unsigned)(rnd() % (depth < max_depth ? 7 : 5));
	char s[8];

	switch (kind) {
	case 0:
		jw_uint(w, key, rnd() % 1000000);
		break;
	case 1:
		jw_int(w, key, -(long long)(rnd() % 1000));
		break;
	case 2:
		jw_bool(w, key, rnd() & 1);
		break;
	case 3:
		for (int i = 0; i < 7; i++)
			s[i] = (char)(1 + rnd() % 126);
		s[7] = 0;
		jw_string(w, key, s);
		break;
	case 4:
		jw_null(w, key);
		break;
	case 5:
		jw_array_begin(w, key);
		gen_items(w, false, depth, max_depth);
		jw_array_end(w);
		break;
	default:
		jw_object_begin(w, key);
		gen_items(w, true, depth, max_depth);
		jw_object_end(w);
	}
}

static void check_value(const struct jv *v, int depth, int max_depth);

static void check_items(const struct jv *v, bool obj, int depth, int max_depth)
{
	size_t n = rnd() % 4;
	char key[16];

	assert_int_equal(v->t, obj ? J_OBJ : J_ARR);
	assert_int_equal(v->n, n);
	for (size_t i = 0; i < n; i++) {
		if (obj) {
			snprintf(key, sizeof(key), "k%zu", i);
			assert_string_equal(v->keys[i], key);
		}
		check_value(v->items[i], depth + 1, max_depth);
	}
}

static void check_value(const struct jv *v, int depth, int max_depth)
{
	unsigned kind = (unsigned)(rnd() % (depth < max_depth ? 7 : 5));
	char s[8];
	uint64_t x;

	switch (kind) {
	case 0:
		x = rnd() % 1000000;
		assert_int_equal(v->t, J_NUM);
		assert_true(v->num == (double)x);
		break;
	case 1:
		x = rnd() % 1000;
		assert_int_equal(v->t, J_NUM);
		assert_true(v->num == -(double)x);
		break;
	case 2:
		assert_int_equal(v->t, J_BOOL);
		assert_int_equal(v->b, (bool)(rnd() & 1));
		break;
	case 3:
		for (int i = 0; i < 7; i++)
			s[i] = (char)(1 + rnd() % 126);
		s[7] = 0;
		assert_int_equal(v->t, J_STR);
		assert_string_equal(v->text, s);
		break;
	case 4:
		assert_int_equal(v->t, J_NULL);
		break;
	case 5:
		check_items(v, false, depth, max_depth);
		break;
	default:
		check_items(v, true, depth, max_depth);
	}
}

static void random_trees(int max_depth)
{
	for (uint64_t seed = 1; seed <= 300; seed++) {
		for (int pretty = 0; pretty < 2; pretty++) {
			struct cap c;
			struct jv *v;

			cap_open(&c, pretty);
			rng = seed * 0x9e3779b97f4a7c15ULL;
			jw_object_begin(&c.w, NULL);
			gen_items(&c.w, true, 0, max_depth);
			jw_object_end(&c.w);
			jw_finish(&c.w);
			v = cap_close_parse(&c);
			rng = seed * 0x9e3779b97f4a7c15ULL;
			check_items(v, true, 0, max_depth);
			jv_free(v);
			free(c.buf);
		}
	}
}

static void test_random_trees(void **state)
{
	(void)state;
	/* the writer keeps comma state for JSON_MAX_DEPTH levels: the root plus
	 * JSON_MAX_DEPTH - 2 nested containers */
	random_trees(JSON_MAX_DEPTH - 2);
}

/* Deeper than the comma stack: each level [i, {"d": [...]}, i] still reads back. */
static void test_deep_chain(void **state)
{
	const int levels = 3 * JSON_MAX_DEPTH;
	struct cap c;
	struct jv *v, *cur;

	(void)state;
	for (int pretty = 0; pretty < 2; pretty++) {
		cap_open(&c, pretty);
		for (int i = 0; i < levels; i++) {
			jw_array_begin(&c.w, i ? "d" : NULL);
			jw_uint(&c.w, NULL, (unsigned)i);
			jw_object_begin(&c.w, NULL);
		}
		for (int i = levels - 1; i >= 0; i--) {
			jw_object_end(&c.w);
			jw_uint(&c.w, NULL, (unsigned)i);
			jw_array_end(&c.w);
		}
		jw_finish(&c.w);
		v = cap_close_parse(&c);
		cur = v;
		for (int i = 0; i < levels; i++) {
			assert_int_equal(cur->t, J_ARR);
			assert_int_equal(cur->n, 3);
			assert_true(cur->items[0]->num == i && cur->items[2]->num == i);
			assert_int_equal(cur->items[1]->t, J_OBJ);
			if (i + 1 < levels)
				cur = jv_get(cur->items[1], "d");
			else
				assert_int_equal(cur->items[1]->n, 0);
			assert_non_null(cur);
		}
		jv_free(v);
		free(c.buf);
	}
}

/* Two documents written one after the other with one writer re-initialised. */
static void test_documents_in_sequence(void **state)
{
	struct cap c;
	char *nl;

	(void)state;
	cap_open(&c, false);
	for (int i = 0; i < 2; i++) {
		jw_init(&c.w, c.f, false);
		jw_object_begin(&c.w, NULL);
		jw_uint(&c.w, "i", (unsigned)i);
		jw_object_end(&c.w);
		jw_finish(&c.w);
	}
	fclose(c.f);
	assert_string_equal(c.buf, "{\"i\":0}\n{\"i\":1}\n");
	nl = strchr(c.buf, '\n');
	assert_non_null(nl);
	free(c.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reader_is_strict),
		cmocka_unit_test(test_compact_exact),
		cmocka_unit_test(test_pretty_same_tree),
		cmocka_unit_test(test_escaping_round_trip),
		cmocka_unit_test(test_print_string),
		cmocka_unit_test(test_nonfinite_is_null),
		cmocka_unit_test(test_integer_limits),
		cmocka_unit_test(test_null_string_value),
		cmocka_unit_test(test_random_trees),
		cmocka_unit_test(test_deep_chain),
		cmocka_unit_test(test_documents_in_sequence),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
