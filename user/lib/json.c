// SPDX-License-Identifier: GPL-2.0
/* Streaming JSON writer used by every -j output. */
#include <math.h>
#include "lib/json.h"

void json_print_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

void jw_init(struct json_writer *w, FILE *f, bool pretty)
{
	w->f = f;
	w->depth = 0;
	w->need_comma[0] = false;
	w->pretty = pretty;
}

static void indent(struct json_writer *w)
{
	if (!w->pretty)
		return;
	fputc('\n', w->f);
	for (int i = 0; i < w->depth; i++)
		fputs("  ", w->f);
}

static void prefix(struct json_writer *w, const char *key)
{
	if (w->need_comma[w->depth])
		fputc(',', w->f);
	w->need_comma[w->depth] = true;
	if (w->depth)
		indent(w);
	if (key) {
		json_print_string(w->f, key);
		fputs(w->pretty ? ": " : ":", w->f);
	}
}

static void open(struct json_writer *w, const char *key, char c)
{
	prefix(w, key);
	fputc(c, w->f);
	if (w->depth < JSON_MAX_DEPTH - 1)
		w->depth++;
	w->need_comma[w->depth] = false;
}

static void close_(struct json_writer *w, char c)
{
	bool had = w->need_comma[w->depth];

	if (w->depth)
		w->depth--;
	if (had)
		indent(w);
	fputc(c, w->f);
}

void jw_object_begin(struct json_writer *w, const char *key)
{
	open(w, key, '{');
}
void jw_object_end(struct json_writer *w)
{
	close_(w, '}');
}
void jw_array_begin(struct json_writer *w, const char *key)
{
	open(w, key, '[');
}
void jw_array_end(struct json_writer *w)
{
	close_(w, ']');
}

void jw_string(struct json_writer *w, const char *key, const char *v)
{
	prefix(w, key);
	if (v)
		json_print_string(w->f, v);
	else
		fputs("null", w->f);
}

void jw_uint(struct json_writer *w, const char *key, unsigned long long v)
{
	prefix(w, key);
	fprintf(w->f, "%llu", v);
}

void jw_int(struct json_writer *w, const char *key, long long v)
{
	prefix(w, key);
	fprintf(w->f, "%lld", v);
}

void jw_double(struct json_writer *w, const char *key, double v)
{
	prefix(w, key);
	if (isfinite(v))
		fprintf(w->f, "%.10g", v);
	else
		fputs("null", w->f);
}

void jw_bool(struct json_writer *w, const char *key, bool v)
{
	prefix(w, key);
	fputs(v ? "true" : "false", w->f);
}

void jw_null(struct json_writer *w, const char *key)
{
	prefix(w, key);
	fputs("null", w->f);
}

void jw_finish(struct json_writer *w)
{
	fputc('\n', w->f);
	fflush(w->f);
}
