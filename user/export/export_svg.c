// SPDX-License-Identifier: GPL-2.0
/* The tail profile as a self-contained SVG flame graph: the folded stacks drawn root at the
 * bottom, each level's frames in alphabetical order, widths proportional to tail latency,
 * and an inline script for click-to-zoom, search and hover details, so a server without
 * profiling tools still gives a picture any browser opens. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "export/exports.h"
#include "lib/format.h"

#define SVG_W       1200
#define SVG_PAD     10
#define SVG_FRAME_H 16
#define SVG_FONT    12
/* mean advance of a monospace character at SVG_FONT (0.59 em), for fitting labels */
#define SVG_CHAR_W 7.08
#define SVG_HEAD   64 /* title, subtitle, search box */
#define SVG_FOOT   34 /* details of the frame under the pointer, search result */
#define SVG_LEVELS 5  /* "all", then the four frames of a tail row */
#define SVG_HEIGHT (SVG_HEAD + SVG_LEVELS * SVG_FRAME_H + SVG_FOOT)
/* px: narrower frames (and so all they hold) are left out, which bounds the file at a few
 * thousand frames a level however many stacks the profile holds */
#define SVG_MIN_W 0.1

/* Length of the character at s if it is valid UTF-8 and an XML character that survives in
 * attribute values (no control characters), else 0. */
static size_t utf8_char(const unsigned char *s)
{
	unsigned c = s[0];
	uint32_t cp;
	size_t n;

	if (c < 0x80)
		return c >= 0x20 && c != 0x7f ? 1 : 0;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* the terminating NUL stops here too */
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
		return 0;
	return n;
}

/* Characters xml_put() writes for all of s. */
static size_t xml_chars(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t k = 0;

	while (*p) {
		size_t n = utf8_char(p);

		p += n ? n : 1;
		k++;
	}
	return k;
}

/* Writes up to max characters of s as XML text or a double-quoted attribute value: markup
 * characters as entities, a byte that starts no valid character (not UTF-8, a control
 * character) as U+FFFD, as a browser shows it. */
static void xml_put(FILE *f, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t k = 0; *p && k < max; k++) {
		size_t n = utf8_char(p);

		if (!n) {
			fputs("\xef\xbf\xbd", f);
			p++;
			continue;
		}
		switch (*p) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			fwrite(p, 1, n, f);
		}
		p += n;
	}
}

/* The label a frame w px wide shows: the name, or its start and "..", or nothing when not
 * even three characters fit (the script fits labels the same way after a zoom). */
static void put_label(FILE *f, const char *name, double w)
{
	double fit = (w - 6) / SVG_CHAR_W;
	size_t len = xml_chars(name);

	if (fit < 3)
		return;
	if (len <= (size_t)fit) {
		xml_put(f, name, len);
		return;
	}
	xml_put(f, name, (size_t)fit - 2);
	fputs("..", f);
}

/* A warm colour that depends only on the name, so a frame keeps its colour between
 * pictures. */
static void name_colour(const char *name, unsigned rgb[3])
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	rgb[0] = 205 + h % 50;
	rgb[1] = (h >> 8) % 230;
	rgb[2] = (h >> 16) % 55;
}

struct svg_ctx {
	FILE *f;
	__u64 total;
	unsigned long drawn, omitted;
};

/* One frame: level 0 is "all"; start and ns in nanoseconds of tail latency. */
static void svg_frame(struct svg_ctx *c, int level, const char *name, __u64 start, __u64 ns,
		      __u64 count)
{
	const double scale = (double)(SVG_W - 2 * SVG_PAD) / (double)c->total;
	double x = SVG_PAD + (double)start * scale, w = (double)ns * scale;
	int y = SVG_HEAD + (SVG_LEVELS - 1 - level) * SVG_FRAME_H;
	FILE *f = c->f;
	unsigned rgb[3] = { 200, 200, 200 };
	char dur[32];

	if (w < SVG_MIN_W) {
		c->omitted++;
		return;
	}
	c->drawn++;
	if (level)
		name_colour(name, rgb);
	fmt_duration(dur, sizeof(dur), (double)ns, DUR_FINE);
	fprintf(f, "<g class=\"f\" data-l=\"%d\" data-s=\"%llu\" data-n=\"%llu\" data-name=\"",
		level, (unsigned long long)start, (unsigned long long)ns);
	xml_put(f, name, SIZE_MAX);
	fputs("\"><title>", f);
	xml_put(f, name, SIZE_MAX);
	fprintf(f, " (%s, %llu ns, %llu sample%s, %.2f%%)</title>", dur, (unsigned long long)ns,
		(unsigned long long)count, count == 1 ? "" : "s",
		100.0 * (double)ns / (double)c->total);
	fprintf(f,
		"<rect x=\"%.3f\" y=\"%d\" width=\"%.3f\" height=\"%d\" rx=\"2\" "
		"fill=\"rgb(%u,%u,%u)\"/><text x=\"%.3f\" y=\"%d\">",
		x, y, w, SVG_FRAME_H - 1, rgb[0], rgb[1], rgb[2], x + 3, y + SVG_FRAME_H - 4);
	put_label(f, name, w);
	fputs("</text></g>\n", f);
}

static int cmp_row_ptrs(const void *a, const void *b)
{
	const struct tail_row *x = *(const struct tail_row *const *)a;
	const struct tail_row *y = *(const struct tail_row *const *)b;

	for (int i = 0; i < 4; i++) {
		int c = strcmp(x->frame[i], y->frame[i]);

		if (c)
			return c;
	}
	return 0;
}

/* A frame whose rows are still being added. */
struct open_frame {
	const char *name;
	__u64 start, ns, count;
};

/* Draws the frames of the sorted rows: a frame spans the consecutive rows that share it and
 * all frames below it, as flamegraph.pl merges sorted folded lines. */
static void svg_frames(struct svg_ctx *c, const struct tail_row *const *v, size_t n, __u64 count)
{
	struct open_frame open[4];
	__u64 at = 0;
	int d;

	svg_frame(c, 0, "all", 0, c->total, count);
	for (size_t i = 0; i < n; i++) {
		d = 0;
		if (i) {
			while (d < 4 && !strcmp(v[i - 1]->frame[d], v[i]->frame[d]))
				d++;
			for (int l = 3; l >= d; l--)
				svg_frame(c, l + 1, open[l].name, open[l].start, open[l].ns,
					  open[l].count);
		}
		for (int l = d; l < 4; l++)
			open[l] = (struct open_frame){ .name = v[i]->frame[l], .start = at };
		for (int l = 0; l < 4; l++) {
			open[l].ns += v[i]->ns;
			open[l].count += v[i]->count;
		}
		at += v[i]->ns;
	}
	if (n)
		for (int l = 3; l >= 0; l--)
			svg_frame(c, l + 1, open[l].name, open[l].start, open[l].ns, open[l].count);
}

static const char svg_style[] =
	"<style type=\"text/css\"><![CDATA[\n"
	"text { font-family: monospace; font-size: 12px; fill: #000; }\n"
	"#title { font-size: 17px; }\n"
	".f { cursor: pointer; }\n"
	".f text { pointer-events: none; }\n"
	".f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
	".f.match rect { fill: rgb(230,0,230); }\n"
	".f.dim rect { opacity: 0.5; }\n"
	".hide { display: none; }\n"
	"#unzoom { cursor: pointer; }\n"
	"input { font: 12px monospace; width: 100%; box-sizing: border-box; }\n"
	"]]></style>\n";

/* The script's body (its constants come first). Click a frame: it fills the width, its
 * descendants scale with it, its ancestors are dimmed and the rest hidden. Type in the
 * search box (or open with #s=REGEX): frames whose name matches turn purple, and the share
 * of the total under them (each stack once) shows bottom right. */
static const char svg_script[] =
	"var frames = Array.prototype.slice.call(document.querySelectorAll(\"g.f\"));\n"
	"var root = frames.filter(function (g) { return num(g, \"l\") === 0; })[0];\n"
	"var details = document.getElementById(\"details\");\n"
	"var unzoom = document.getElementById(\"unzoom\");\n"
	"var matched = document.getElementById(\"matched\");\n"
	"var search = document.getElementById(\"search\");\n"
	"function num(g, k) { return Number(g.getAttribute(\"data-\" + k)); }\n"
	"function fit(g, x, w) {\n"
	"\tvar name = g.getAttribute(\"data-name\"), n = Math.floor((w - 6) / CW);\n"
	"\tvar r = g.querySelector(\"rect\"), t = g.querySelector(\"text\");\n"
	"\tr.setAttribute(\"x\", x.toFixed(3));\n"
	"\tr.setAttribute(\"width\", w.toFixed(3));\n"
	"\tt.setAttribute(\"x\", (x + 3).toFixed(3));\n"
	"\tt.textContent = n < 3 ? \"\" : name.length <= n ? name : name.slice(0, n - 2) + "
	"\"..\";\n"
	"}\n"
	"function zoom(z) {\n"
	"\tvar l = num(z, \"l\"), s = num(z, \"s\"), n = num(z, \"n\");\n"
	"\tframes.forEach(function (g) {\n"
	"\t\tvar gl = num(g, \"l\"), gs = num(g, \"s\"), gn = num(g, \"n\");\n"
	"\t\tg.classList.remove(\"hide\", \"dim\");\n"
	"\t\tif (gl >= l && gs >= s && gs + gn <= s + n) {\n"
	"\t\t\tfit(g, PAD + (gs - s) / n * W, gn / n * W);\n"
	"\t\t} else if (gl < l && gs <= s && gs + gn >= s + n) {\n"
	"\t\t\tg.classList.add(\"dim\");\n"
	"\t\t\tfit(g, PAD, W);\n"
	"\t\t} else {\n"
	"\t\t\tg.classList.add(\"hide\");\n"
	"\t\t}\n"
	"\t});\n"
	"\tunzoom.classList.toggle(\"hide\", l === 0);\n"
	"}\n"
	"function find(term) {\n"
	"\tvar re = null, hit = [], end = -1, sum = 0, total = root ? num(root, \"n\") : 0;\n"
	"\tif (term) {\n"
	"\t\ttry { re = new RegExp(term); }\n"
	"\t\tcatch (e) { re = new RegExp(term.replace(/[.*+?^${}()|[\\]\\\\]/g, \"\\\\$&\")); }\n"
	"\t}\n"
	"\tframes.forEach(function (g) {\n"
	"\t\tvar m = re !== null && re.test(g.getAttribute(\"data-name\"));\n"
	"\t\tg.classList.toggle(\"match\", m);\n"
	"\t\tif (m) hit.push(g);\n"
	"\t});\n"
	"\t/* frames nest: a match inside an earlier one is already counted */\n"
	"\thit.sort(function (a, b) { return num(a, \"s\") - num(b, \"s\") || num(a, \"l\") - "
	"num(b, \"l\"); });\n"
	"\thit.forEach(function (g) {\n"
	"\t\tif (num(g, \"s\") >= end) { sum += num(g, \"n\"); end = num(g, \"s\") + num(g, "
	"\"n\"); }\n"
	"\t});\n"
	"\tmatched.textContent = re === null ? \"\" : \"Matched: \" +\n"
	"\t\t(total ? 100 * sum / total : 0).toFixed(2) + \"% (\" + sum + \" ns)\";\n"
	"}\n"
	"var box = document.getElementById(\"frames\");\n"
	"box.addEventListener(\"click\", function (e) {\n"
	"\tvar g = e.target.closest(\"g.f\");\n"
	"\tif (g) zoom(g);\n"
	"});\n"
	"box.addEventListener(\"mouseover\", function (e) {\n"
	"\tvar g = e.target.closest(\"g.f\");\n"
	"\tif (g) details.textContent = g.querySelector(\"title\").textContent;\n"
	"});\n"
	"box.addEventListener(\"mouseout\", function () { details.textContent = \" \"; });\n"
	"unzoom.addEventListener(\"click\", function () { if (root) zoom(root); });\n"
	"if (search) {\n"
	"\tsearch.addEventListener(\"input\", function () { find(search.value); });\n"
	"\tvar h = /[#&]s=([^&]*)/.exec(location.hash);\n"
	"\tif (h) {\n"
	"\t\ttry { search.value = decodeURIComponent(h[1]); }\n"
	"\t\tcatch (e) { search.value = h[1]; }\n"
	"\t\tfind(search.value);\n"
	"\t}\n"
	"}\n"
	"})();\n";

static const char *source_text(enum tail_source s)
{
	switch (s) {
	case TAIL_REQUESTS:
		return "the kept slow requests, split into attribution parts";
	case TAIL_HISTOGRAMS:
		return "each histogram's events at or above its p99 bucket";
	default:
		return "nothing";
	}
}

int export_svg_profile(FILE *f, const struct tail_profile *p, const char *note)
{
	const struct tail_row **v = NULL;
	struct svg_ctx c = { .f = f };
	__u64 count = 0;
	char dur[32];

	if (p->nrows) {
		v = calloc(p->nrows, sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	for (size_t i = 0; i < p->nrows; i++) {
		v[i] = &p->rows[i];
		c.total += p->rows[i].ns;
		count += p->rows[i].count;
	}
	if (p->nrows)
		qsort(v, p->nrows, sizeof(*v), cmp_row_ptrs);

	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\">\n"
		"<!-- tailtrace tail profile: frames all;class;stage;place;process, widths "
		"proportional to tail latency; docs/exports.md -->\n",
		SVG_W, SVG_HEIGHT, SVG_W, SVG_HEIGHT);
	fputs(svg_style, f);
	fprintf(f,
		"<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"rgb(248,248,240)\"/>\n"
		"<text id=\"title\" x=\"%d\" y=\"22\" text-anchor=\"middle\">Tail latency flame "
		"graph</text>\n"
		"<text id=\"subtitle\" x=\"%d\" y=\"40\" text-anchor=\"middle\">",
		SVG_W, SVG_HEIGHT, SVG_W / 2, SVG_W / 2);
	fmt_duration(dur, sizeof(dur), (double)c.total, DUR_FINE);
	fprintf(f, "total %s (%llu ns) over %llu sample%s from %s", dur,
		(unsigned long long)c.total, (unsigned long long)count, count == 1 ? "" : "s",
		source_text(c.total ? p->source : TAIL_NONE));
	if (note && *note) {
		fputs("; ", f);
		xml_put(f, note, SIZE_MAX);
	}
	fprintf(f,
		"</text>\n"
		"<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"22\">Reset zoom</text>\n"
		"<foreignObject x=\"%d\" y=\"6\" width=\"260\" height=\"24\"><input "
		"xmlns=\"http://www.w3.org/1999/xhtml\" id=\"search\" type=\"search\" "
		"placeholder=\"Search frames (regex)\"/></foreignObject>\n"
		"<g id=\"frames\">\n",
		SVG_PAD, SVG_W - SVG_PAD - 260);
	if (c.total)
		svg_frames(&c, v, p->nrows, count);
	else
		fprintf(f,
			"<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no tail latency in this "
			"window</text>\n",
			SVG_W / 2, SVG_HEAD + SVG_LEVELS * SVG_FRAME_H / 2);
	fprintf(f, "</g>\n<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", SVG_PAD,
		SVG_HEIGHT - 20);
	fprintf(f, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"></text>\n",
		SVG_W - SVG_PAD, SVG_HEIGHT - 20);
	fprintf(f, "<text id=\"drawn\" x=\"%d\" y=\"%d\">%lu frames", SVG_PAD, SVG_HEIGHT - 4,
		c.drawn);
	if (c.omitted)
		fprintf(f, "; %lu narrower than %.1f px not drawn", c.omitted, SVG_MIN_W);
	fputs("; click a frame to zoom</text>\n<script type=\"text/ecmascript\"><![CDATA[\n", f);
	fprintf(f, "(function () {\n\"use strict\";\nvar W = %d, PAD = %d, CW = %.2f;\n",
		SVG_W - 2 * SVG_PAD, SVG_PAD, SVG_CHAR_W);
	fputs(svg_script, f);
	fputs("]]></script>\n</svg>\n", f);
	free(v);
	return ferror(f) ? -EIO : 0;
}

int export_svg(FILE *f, const struct snapshot *s)
{
	struct tail_profile p;
	char from[32], to[32], note[96] = "";
	int err;

	err = tail_profile__build(&p, s);
	if (err)
		return err;
	if (s->start_ns && s->end_ns) {
		fmt_utc(from, sizeof(from), s->start_ns);
		fmt_utc(to, sizeof(to), s->end_ns);
		snprintf(note, sizeof(note), "window %s to %s", from, to);
	}
	err = export_svg_profile(f, &p, note);
	tail_profile__free(&p);
	return err;
}
