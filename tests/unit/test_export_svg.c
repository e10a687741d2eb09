// SPDX-License-Identifier: GPL-2.0
/* Unit tests of export/export_svg.c: the SVG flame graph of a tail profile is well-formed
 * XML whatever the frame names hold (markup characters, quotes, bytes that are not UTF-8,
 * long names), its frames' totals and widths follow the rows, each level is in
 * alphabetical order, narrow frames are left out but still counted in the total. The XML
 * check and the frame reader are written here, independent of the renderer. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export/exports.h"

/* the library's report renderers reference main.c's help printer */
void cmd_print_help(const char *name);
void cmd_print_help(const char *name)
{
	(void)name;
}

static char *render(const struct tail_profile *p, const char *note)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	assert_non_null(f);
	assert_int_equal(export_svg_profile(f, p, note), 0);
	fclose(f);
	return buf;
}

static void add(struct tail_profile *p, const char *a, const char *b, const char *c, const char *d,
		__u64 ns, __u64 count)
{
	struct tail_row *r;

	if (p->nrows == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 8;
		p->rows = realloc(p->rows, p->cap * sizeof(*p->rows));
		assert_non_null(p->rows);
	}
	r = &p->rows[p->nrows++];
	memset(r, 0, sizeof(*r));
	snprintf(r->frame[0], TAIL_FRAME_LEN, "%s", a);
	snprintf(r->frame[1], TAIL_FRAME_LEN, "%s", b);
	snprintf(r->frame[2], TAIL_FRAME_LEN, "%s", c);
	snprintf(r->frame[3], TAIL_FRAME_LEN, "%s", d);
	r->ns = ns;
	r->count = count;
	p->total_ns += ns;
	p->total_count += count;
	p->source = TAIL_REQUESTS;
}

/* --- an XML check strict enough for what an SVG viewer's parser refuses --- */

/* Bytes of the UTF-8 character at s that XML allows (tab, LF, CR or >= 0x20 other than
 * U+FFFE/U+FFFF and surrogates), or 0. */
static int xml_char_len(const unsigned char *s)
{
	int n = s[0] < 0x80             ? 1
		: (s[0] & 0xe0) == 0xc0 ? 2
		: (s[0] & 0xf0) == 0xe0 ? 3
		: (s[0] & 0xf8) == 0xf0 ? 4
					: 0;
	unsigned long cp;

	if (!n)
		return 0;
	cp = n == 1 ? s[0] : s[0] & (0x7f >> n);
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	static const unsigned long min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe ||
	    cp == 0xffff)
		return 0;
	if (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r')
		return 0;
	return n;
}

static bool entity_ok(const char *p)
{
	static const char *const ents[] = { "&lt;", "&gt;", "&amp;", "&quot;", "&apos;" };

	for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]); i++)
		if (!strncmp(p, ents[i], strlen(ents[i])))
			return true;
	return false;
}

static size_t name_len(const char *p)
{
	size_t n = 0;

	while ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z') ||
	       (n && ((p[n] >= '0' && p[n] <= '9') || p[n] == '-' || p[n] == ':' || p[n] == '_')))
		n++;
	return n;
}

/* NULL when doc is well-formed XML with one root element, else what is wrong. */
static const char *xml_check(const char *doc)
{
	const char *stack[32], *p = doc;
	size_t slen[32];
	int depth = 0, roots = 0;

	for (const unsigned char *u = (const unsigned char *)doc; *u;) {
		int n = xml_char_len(u);

		if (!n)
			return "a byte that is not a UTF-8 XML character";
		u += n;
	}
	if (!strncmp(p, "<?xml ", 6)) {
		p = strstr(p, "?>");
		if (!p)
			return "unterminated XML declaration";
		p += 2;
	}
	while (*p) {
		if (!strncmp(p, "<!--", 4)) {
			const char *e = strstr(p + 4, "-->");

			if (!e)
				return "unterminated comment";
			p = e + 3;
		} else if (!strncmp(p, "<![CDATA[", 9)) {
			const char *e = strstr(p + 9, "]]>");

			if (!e || !depth)
				return "bad CDATA section";
			p = e + 3;
		} else if (!strncmp(p, "</", 2)) {
			size_t n = name_len(p + 2);

			if (!depth || n != slen[depth - 1] || strncmp(p + 2, stack[depth - 1], n))
				return "end tag does not match";
			depth--;
			p += 2 + n;
			if (*p++ != '>')
				return "malformed end tag";
		} else if (*p == '<') {
			size_t n = name_len(p + 1);

			if (!n)
				return "'<' that starts no tag";
			if (!depth && roots++)
				return "more than one root element";
			if (depth == 32)
				return "too deep";
			stack[depth] = p + 1;
			slen[depth] = n;
			p += 1 + n;
			for (;;) {
				size_t an;

				while (*p == ' ' || *p == '\n')
					p++;
				if (!strncmp(p, "/>", 2)) {
					p += 2;
					break;
				}
				if (*p == '>') {
					p++;
					depth++;
					break;
				}
				an = name_len(p);
				if (!an || p[an] != '=' || p[an + 1] != '"')
					return "attribute not name=\"value\"";
				for (p += an + 2; *p != '"'; p++) {
					if (!*p || *p == '<')
						return "'<' or end of file in an attribute value";
					if (*p == '&' && !entity_ok(p))
						return "bare '&' in an attribute value";
				}
				p++;
			}
		} else if (*p == '&') {
			if (!entity_ok(p))
				return "bare '&' in text";
			p++;
		} else if (!strncmp(p, "]]>", 3)) {
			return "']]>' in text";
		} else {
			if (!depth && *p != '\n' && *p != ' ')
				return "text outside the root element";
			p++;
		}
	}
	return depth || !roots ? "unclosed element or no root" : NULL;
}

/* --- the frames, read back --- */

struct frame {
	int level;
	__u64 start, ns;
	char name[512], title[768], label[512];
	double x, w;
};

/* The value of attribute attr in the tag that starts at tag, unescaped, into out. */
static bool attr(const char *tag, const char *attr, char *out, size_t len)
{
	char key[32];
	const char *end = strchr(tag, '>'), *p;
	size_t n = 0;

	snprintf(key, sizeof(key), " %s=\"", attr);
	p = strstr(tag, key);
	if (!p || p > end)
		return false;
	for (p += strlen(key); *p != '"' && n + 1 < len; n++) {
		static const struct {
			const char *ent;
			char c;
		} ents[] = { { "&lt;", '<' },
			     { "&gt;", '>' },
			     { "&amp;", '&' },
			     { "&quot;", '"' },
			     { "&apos;", '\'' } };
		bool done = false;

		for (size_t i = 0; i < 5 && !done; i++)
			if (!strncmp(p, ents[i].ent, strlen(ents[i].ent))) {
				out[n] = ents[i].c;
				p += strlen(ents[i].ent);
				done = true;
			}
		if (!done)
			out[n] = *p++;
	}
	out[n] = '\0';
	return true;
}

/* Text between <open> and the next '<', unescaped like an attribute value. */
static void element_text(const char *from, const char *open, char *out, size_t len)
{
	const char *p = strstr(from, open);
	char tmp[1024];

	assert_non_null(p);
	p += strlen(open);
	snprintf(tmp, sizeof(tmp), "<x v=\"%.*s\">", (int)strcspn(p, "<"), p);
	assert_true(attr(tmp, "v", out, len));
}

static size_t read_frames(const char *svg, struct frame *fr, size_t max)
{
	const char *p = svg;
	size_t n = 0;
	char v[64];

	while ((p = strstr(p, "<g class=\"f")) && n < max) {
		struct frame *f = &fr[n++];
		const char *rect;

		memset(f, 0, sizeof(*f));
		assert_true(attr(p, "data-l", v, sizeof(v)));
		f->level = atoi(v);
		assert_true(attr(p, "data-s", v, sizeof(v)));
		f->start = strtoull(v, NULL, 10);
		assert_true(attr(p, "data-n", v, sizeof(v)));
		f->ns = strtoull(v, NULL, 10);
		assert_true(attr(p, "data-name", f->name, sizeof(f->name)));
		element_text(p, "<title>", f->title, sizeof(f->title));
		rect = strstr(p, "<rect ");
		assert_true(attr(rect, "x", v, sizeof(v)));
		f->x = atof(v);
		assert_true(attr(rect, "width", v, sizeof(v)));
		f->w = atof(v);
		element_text(rect, "\">", f->label, sizeof(f->label)); /* the <text> after it */
		p++;
	}
	return n;
}

static const struct frame *find(const struct frame *fr, size_t n, int level, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (fr[i].level == level && !strcmp(fr[i].name, name))
			return &fr[i];
	return NULL;
}

#define DRAW_W 1180.0 /* the width "all" spans, between the 10 px margins */

static void test_totals_widths_and_order(void **state)
{
	struct tail_profile p = { 0 };
	struct frame fr[64];
	const struct frame *f;
	char *svg;
	size_t n;

	(void)state;
	/* given out of order: the renderer sorts as flamegraph.pl sorts folded lines */
	add(&p, "transport", "tcp.rtt", ":8000 <-> 198.18.0.2", "srv[2]", 3000, 3);
	add(&p, "congestion", "tx.qdisc", "veth0 qdisc 1:0", "srv[2]", 5000, 5);
	add(&p, "compute", "sched.runq", "cpu 1", "srv[2]", 1000, 1);
	add(&p, "congestion", "tx.qdisc", "veth0 qdisc 1:0", "cli[1]", 7000, 7);
	add(&p, "compute", "sched.runq", "cpu 0", "srv[2]", 4000, 4);
	svg = render(&p, "window w");
	assert_null(xml_check(svg));
	n = read_frames(svg, fr, 64);
	/* all + 3 classes + 3 stages + 4 places + 5 processes */
	assert_int_equal(n, 16);

	f = find(fr, n, 0, "all");
	assert_non_null(f);
	assert_int_equal(f->ns, 20000);
	assert_string_equal(f->title, "all (20.0us, 20000 ns, 20 samples, 100.00%)");
	assert_non_null(strstr(svg, "total 20.0us (20000 ns) over 20 samples"));
	assert_non_null(strstr(svg, "; window w</text>"));

	f = find(fr, n, 1, "congestion");
	assert_int_equal(f->ns, 12000);
	assert_int_equal(f->start, 5000); /* after compute's 5000 ns */
	assert_string_equal(f->title, "congestion (12.0us, 12000 ns, 12 samples, 60.00%)");
	f = find(fr, n, 3, "veth0 qdisc 1:0");
	assert_int_equal(f->ns, 12000);
	f = find(fr, n, 4, "cli[1]"); /* "cli" before "srv" under the same place */
	assert_int_equal(f->start, 5000);
	assert_int_equal(f->ns, 7000);
	assert_string_equal(f->title, "cli[1] (7.0us, 7000 ns, 7 samples, 35.00%)");
	f = find(fr, n, 3, "cpu 0");
	assert_int_equal(f->start, 0);
	assert_int_equal(f->ns, 4000);
	f = find(fr, n, 1, "transport");
	assert_int_equal(f->start, 17000);
	assert_string_equal(f->title, "transport (3.0us, 3000 ns, 3 samples, 15.00%)");

	for (size_t i = 0; i < n; i++) {
		__u64 kids = 0;
		const struct frame *prev = NULL;

		/* widths and offsets proportional to the totals */
		assert_true(fabs(fr[i].w - fr[i].ns * DRAW_W / 20000) < 0.001);
		assert_true(fabs(fr[i].x - (10 + fr[i].start * DRAW_W / 20000)) < 0.001);
		if (fr[i].level == 4)
			continue;
		/* the children of each frame tile it, in alphabetical order */
		for (int pass = 0; pass < 2; pass++)
			for (size_t j = 0; j < n; j++) {
				const struct frame *c = &fr[j];

				if (c->level != fr[i].level + 1 || c->start < fr[i].start ||
				    c->start >= fr[i].start + fr[i].ns)
					continue;
				if (pass == 0) {
					kids += c->ns;
					continue;
				}
				if (prev && prev->start < c->start)
					assert_true(strcmp(prev->name, c->name) < 0);
				if (prev && prev->start > c->start)
					assert_true(strcmp(prev->name, c->name) > 0);
				prev = c;
			}
		assert_int_equal(kids, fr[i].ns);
	}
	free(svg);
	tail_profile__free(&p);
}

static void test_hostile_names(void **state)
{
	static const struct {
		const char *in, *shown; /* the frame name, and what the SVG holds */
	} names[] = {
		{ "<script>alert(1)</script>", "<script>alert(1)</script>" },
		{ "a&b&amp;c", "a&b&amp;c" },
		{ "q\"uo'te\"", "q\"uo'te\"" },
		{ "end]]>cdata", "end]]>cdata" },
		{ "caf\xc3\xa9 \xf0\x9f\x94\xa5", "caf\xc3\xa9 \xf0\x9f\x94\xa5" },
		{ "bad\xff\xfe", "bad\xef\xbf\xbd\xef\xbf\xbd" },
		{ "cut\xc3", "cut\xef\xbf\xbd" },
		{ "overlong\xc0\xaf", "overlong\xef\xbf\xbd\xef\xbf\xbd" },
		{ "surrogate\xed\xa0\x80", "surrogate\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "nonchar\xef\xbf\xbe", "nonchar\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "ctl\x01\x1b[2J", "ctl\xef\xbf\xbd\xef\xbf\xbd[2J" },
	};
	const size_t nn = sizeof(names) / sizeof(names[0]);
	struct tail_profile p = { 0 };
	struct frame fr[128];
	char longname[TAIL_FRAME_LEN], title[600];
	char *svg;
	size_t n;

	(void)state;
	memset(longname, 'L', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	for (size_t i = 0; i < nn; i++)
		add(&p, "congestion", names[i].in, longname, "<&>", 1000 + i, 1);
	svg = render(&p, "note <&\"\xff>");
	assert_null(xml_check(svg));
	assert_non_null(strstr(svg, "note &lt;&amp;&quot;\xef\xbf\xbd&gt;</text>"));
	n = read_frames(svg, fr, 128);
	for (size_t i = 0; i < nn; i++) {
		const struct frame *f = find(fr, n, 2, names[i].shown);

		assert_non_null(f);
		assert_int_equal(f->ns, 1000 + i);
		snprintf(title, sizeof(title), "%s (", names[i].shown);
		assert_memory_equal(f->title, title, strlen(title));
		/* each stack keeps its own place and process frames */
		assert_non_null(find(fr, n, 4, "<&>"));
	}
	/* the long name is whole in the name and title, cut with ".." in the label */
	for (size_t i = 0; i < n; i++) {
		if (fr[i].level != 3)
			continue;
		assert_string_equal(fr[i].name, longname);
		assert_int_equal(strncmp(fr[i].title, longname, strlen(longname)), 0);
		assert_true(strlen(fr[i].label) < strlen(longname));
		if (fr[i].label[0]) {
			assert_int_equal(strncmp(fr[i].label, longname, strlen(fr[i].label) - 2),
					 0);
			assert_string_equal(fr[i].label + strlen(fr[i].label) - 2, "..");
		}
	}
	/* the negative control: the check refuses what a browser's parser refuses */
	assert_non_null(xml_check("<svg><g data-name=\"a<b\"/></svg>"));
	assert_non_null(xml_check("<svg><title>a & b</title></svg>"));
	assert_non_null(xml_check("<svg><title>a \xff b</title></svg>"));
	assert_non_null(xml_check("<svg><title>a ]]> b</title></svg>"));
	assert_non_null(xml_check("<svg><g></svg>"));
	assert_null(xml_check("<svg><g a=\"&lt;\">x &amp; y</g></svg>"));
	free(svg);
	tail_profile__free(&p);
}

static void test_labels_fit_and_cut_whole_characters(void **state)
{
	struct tail_profile p = { 0 };
	struct frame fr[32];
	const struct frame *f;
	char *svg;
	size_t n;

	(void)state;
	/* 10 % of 1180 px = 118 px: 15 characters fit ((118 - 6) / 7.08) */
	add(&p, "c",
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
	    "p", "x", 100, 1);
	/* 0.2 % = 2.4 px: no label */
	add(&p, "d", "tiny", "p", "x", 2, 1);
	add(&p, "e", "rest", "p", "x", 898, 1);
	svg = render(&p, NULL);
	assert_null(xml_check(svg));
	n = read_frames(svg, fr, 32);
	f = find(fr, n, 1, "c");
	assert_string_equal(f->label, "c");
	f = find(fr, n, 2, "tiny");
	assert_string_equal(f->label, "");
	for (size_t i = 0; i < n; i++)
		if (fr[i].level == 2 && fr[i].ns == 100)
			/* 13 whole "é" and "..": no character cut in two */
			assert_string_equal(
				fr[i].label,
				"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
				"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9..");
	free(svg);
	tail_profile__free(&p);
}

static void test_narrow_frames_left_out_but_counted(void **state)
{
	struct tail_profile p = { 0 };
	struct frame fr[32];
	char *svg;
	size_t n;

	(void)state;
	/* 1 ns of 100 s is 1.2e-8 px wide */
	add(&p, "compute", "sched.runq", "cpu 0", "a[1]", 100000000000ULL, 10);
	add(&p, "transport", "tcp.rtt", "x", "a[1]", 1, 1);
	svg = render(&p, NULL);
	assert_null(xml_check(svg));
	n = read_frames(svg, fr, 32);
	assert_int_equal(n, 5);
	assert_null(find(fr, n, 1, "transport"));
	assert_int_equal(find(fr, n, 0, "all")->ns, 100000000001ULL);
	assert_non_null(strstr(svg, "5 frames; 4 narrower than 0.1 px not drawn"));
	free(svg);
	tail_profile__free(&p);
}

static void test_empty_profile(void **state)
{
	struct tail_profile p = { 0 };
	struct frame fr[4];
	char *svg;

	(void)state;
	svg = render(&p, NULL);
	assert_null(xml_check(svg));
	assert_int_equal(read_frames(svg, fr, 4), 0);
	assert_non_null(strstr(svg, "no tail latency in this window"));
	assert_non_null(strstr(svg, "total 0ns (0 ns) over 0 samples from nothing"));
	free(svg);
}

/* The script is one CDATA section: nothing in it may end it early, and its constants are
 * those the frames were drawn with. */
static void test_script_intact(void **state)
{
	struct tail_profile p = { 0 };
	const char *s, *e;
	char *svg;

	(void)state;
	add(&p, "a", "b", "c", "d", 5, 1);
	svg = render(&p, NULL);
	s = strstr(svg, "<script type=\"text/ecmascript\"><![CDATA[");
	assert_non_null(s);
	e = strstr(s, "]]>");
	assert_non_null(e);
	assert_string_equal(e, "]]></script>\n</svg>\n");
	assert_non_null(strstr(s, "var W = 1180, PAD = 10, CW = 7.08;"));
	free(svg);
	tail_profile__free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_totals_widths_and_order),
		cmocka_unit_test(test_hostile_names),
		cmocka_unit_test(test_labels_fit_and_cut_whole_characters),
		cmocka_unit_test(test_narrow_frames_left_out_but_counted),
		cmocka_unit_test(test_empty_profile),
		cmocka_unit_test(test_script_intact),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
