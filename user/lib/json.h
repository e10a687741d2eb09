/* SPDX-License-Identifier: GPL-2.0 */
/* A small streaming JSON writer: enough for tailtrace's outputs, with correct escaping
 * and commas handled by a nesting stack. */
#ifndef TT_JSON_H
#define TT_JSON_H

#include <stdbool.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json_writer {
	FILE *f;
	int depth;
	bool need_comma[JSON_MAX_DEPTH];
	bool pretty;
};

void json_print_string(FILE *f, const char *s);
void jw_init(struct json_writer *w, FILE *f, bool pretty);
void jw_object_begin(struct json_writer *w, const char *key); /* key NULL inside arrays */
void jw_object_end(struct json_writer *w);
void jw_array_begin(struct json_writer *w, const char *key);
void jw_array_end(struct json_writer *w);
void jw_string(struct json_writer *w, const char *key, const char *v);
void jw_uint(struct json_writer *w, const char *key, unsigned long long v);
void jw_int(struct json_writer *w, const char *key, long long v);
void jw_double(struct json_writer *w, const char *key, double v); /* NaN/inf -> null */
void jw_bool(struct json_writer *w, const char *key, bool v);
void jw_null(struct json_writer *w, const char *key);
/* Ends the document with a newline. */
void jw_finish(struct json_writer *w);

#endif
