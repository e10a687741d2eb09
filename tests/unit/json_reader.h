/* SPDX-License-Identifier: GPL-2.0 */
/* A strict JSON reader for the unit tests (test side: small, no recovery): the judge of
 * what the JSON writer and the reports print. Included by the tests that parse JSON. */
#ifndef TT_TEST_JSON_READER_H
#define TT_TEST_JSON_READER_H

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum jt { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	enum jt t;
	bool b;
	double num;
	char *text;        /* J_NUM: the token; J_STR: decoded UTF-8 */
	size_t len;        /* J_STR: decoded length (may hold NULs from \u0000) */
	struct jv **items; /* J_ARR, J_OBJ */
	char **keys;       /* J_OBJ */
	size_t n;
};

struct jp {
	const char *p, *end;
	int depth;
};

static struct jv *jv_parse_value(struct jp *j);

static void jv_free(struct jv *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		jv_free(v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->text);
	free(v);
}

static void ws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int hex4(const char *s, unsigned *out)
{
	*out = 0;
	for (int i = 0; i < 4; i++) {
		if (!isxdigit((unsigned char)s[i]))
			return -1;
		*out = *out * 16 + (unsigned)(isdigit((unsigned char)s[i])
						      ? s[i] - '0'
						      : (tolower(s[i]) - 'a' + 10));
	}
	return 0;
}

/* Decodes a string token into malloc'ed UTF-8; NULL when malformed. */
static char *jv_parse_string(struct jp *j, size_t *len)
{
	char *out = malloc((size_t)(j->end - j->p) + 1);
	size_t n = 0;

	if (!out || j->p >= j->end || *j->p != '"')
		goto bad;
	j->p++;
	while (j->p < j->end && *j->p != '"') {
		unsigned char c = (unsigned char)*j->p++;
		unsigned u;

		if (c < 0x20)
			goto bad; /* raw control characters are not allowed */
		if (c != '\\') {
			out[n++] = (char)c;
			continue;
		}
		if (j->p >= j->end)
			goto bad;
		c = (unsigned char)*j->p++;
		switch (c) {
		case '"':
		case '\\':
		case '/':
			out[n++] = (char)c;
			break;
		case 'b':
			out[n++] = '\b';
			break;
		case 'f':
			out[n++] = '\f';
			break;
		case 'n':
			out[n++] = '\n';
			break;
		case 'r':
			out[n++] = '\r';
			break;
		case 't':
			out[n++] = '\t';
			break;
		case 'u':
			if (j->end - j->p < 4 || hex4(j->p, &u) || u >= 0x80)
				goto bad; /* the writer only escapes ASCII controls */
			j->p += 4;
			out[n++] = (char)u;
			break;
		default:
			goto bad;
		}
	}
	if (j->p >= j->end)
		goto bad;
	j->p++;
	out[n] = 0;
	*len = n;
	return out;
bad:
	free(out);
	return NULL;
}

static bool jv_number_token(struct jp *j)
{
	const char *p = j->p;

	if (p < j->end && *p == '-')
		p++;
	if (p >= j->end || !isdigit((unsigned char)*p))
		return false;
	if (*p == '0')
		p++;
	else
		while (p < j->end && isdigit((unsigned char)*p))
			p++;
	if (p < j->end && *p == '.') {
		p++;
		if (p >= j->end || !isdigit((unsigned char)*p))
			return false;
		while (p < j->end && isdigit((unsigned char)*p))
			p++;
	}
	if (p < j->end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < j->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= j->end || !isdigit((unsigned char)*p))
			return false;
		while (p < j->end && isdigit((unsigned char)*p))
			p++;
	}
	j->p = p;
	return true;
}

static bool jv_push(struct jv *v, struct jv *item, char *key)
{
	struct jv **items = realloc(v->items, (v->n + 1) * sizeof(*items));

	if (!items)
		return false;
	v->items = items;
	if (v->t == J_OBJ) {
		char **keys = realloc(v->keys, (v->n + 1) * sizeof(*keys));

		if (!keys)
			return false;
		v->keys = keys;
		v->keys[v->n] = key;
	}
	v->items[v->n++] = item;
	return true;
}

static struct jv *jv_parse_container(struct jp *j, struct jv *v, char close)
{
	j->p++;
	ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		return v;
	}
	for (;;) {
		char *key = NULL;
		struct jv *item;
		size_t klen;

		ws(j);
		if (v->t == J_OBJ) {
			if (!(key = jv_parse_string(j, &klen)))
				goto bad;
			ws(j);
			if (j->p >= j->end || *j->p != ':') {
				free(key);
				goto bad;
			}
			j->p++;
		}
		item = jv_parse_value(j);
		if (!item || !jv_push(v, item, key)) {
			free(key);
			jv_free(item);
			goto bad;
		}
		ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == close) {
			j->p++;
			return v;
		}
		goto bad;
	}
bad:
	jv_free(v);
	return NULL;
}

static struct jv *jv_parse_value(struct jp *j)
{
	struct jv *v = calloc(1, sizeof(*v));
	const char *start;

	if (!v || ++j->depth > 200)
		goto bad;
	ws(j);
	if (j->p >= j->end)
		goto bad;
	start = j->p;
	switch (*j->p) {
	case '{':
		v->t = J_OBJ;
		v = jv_parse_container(j, v, '}');
		j->depth--;
		return v;
	case '[':
		v->t = J_ARR;
		v = jv_parse_container(j, v, ']');
		j->depth--;
		return v;
	case '"':
		v->t = J_STR;
		if (!(v->text = jv_parse_string(j, &v->len)))
			goto bad;
		break;
	case 't':
	case 'f':
	case 'n': {
		static const char *const words[] = { "true", "false", "null" };

		for (int i = 0; i < 3; i++) {
			size_t l = strlen(words[i]);

			if ((size_t)(j->end - j->p) >= l && !strncmp(j->p, words[i], l)) {
				v->t = i == 2 ? J_NULL : J_BOOL;
				v->b = i == 0;
				j->p += l;
				j->depth--;
				return v;
			}
		}
		goto bad;
	}
	default:
		if (!jv_number_token(j))
			goto bad;
		v->t = J_NUM;
		v->text = strndup(start, (size_t)(j->p - start));
		v->num = strtod(v->text, NULL);
	}
	j->depth--;
	return v;
bad:
	jv_free(v);
	return NULL;
}

/* Parses one document that must fill the whole buffer (a trailing newline allowed). */
static struct jv *jv_parse(const char *s, size_t len)
{
	struct jp j = { s, s + len, 0 };
	struct jv *v = jv_parse_value(&j);

	ws(&j);
	if (v && j.p != j.end) {
		jv_free(v);
		return NULL;
	}
	return v;
}

static struct jv *jv_get(const struct jv *o, const char *key)
{
	for (size_t i = 0; o && o->t == J_OBJ && i < o->n; i++)
		if (!strcmp(o->keys[i], key))
			return o->items[i];
	return NULL;
}

#endif
