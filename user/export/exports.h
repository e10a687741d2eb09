/* SPDX-License-Identifier: GPL-2.0 */
/* Renderers of a (merged) snapshot into the formats other tools read: folded stacks, an SVG
 * flame graph, pprof, Chrome trace-event JSON, OpenMetrics text; docs/exports.md says how
 * to open each. */
#ifndef TT_EXPORTS_H
#define TT_EXPORTS_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>
#include "core/snapshot.h"

/* The tail profile behind folded and pprof: tail latency weighted by
 * class -> stage -> place -> process. */
enum tail_source {
	TAIL_NONE,
	TAIL_REQUESTS,   /* flight-recorder requests, each split into attribution
			  * parts (attr_split_request) that sum to its latency */
	TAIL_HISTOGRAMS, /* no requests kept: per histogram, the time of events at or
			  * above that histogram's p99 bucket */
};

#define TAIL_FRAME_LEN 64

struct tail_row {
	char frame[4][TAIL_FRAME_LEN]; /* class, stage, place, process (root first) */
	__u64 ns;                      /* tail latency */
	__u64 count;                   /* requests (or events) contributing */
};

struct tail_profile {
	enum tail_source source;
	struct tail_row *rows; /* sorted by frames, unique */
	size_t nrows, cap;
	__u64 total_ns, total_count;
};

/* Frame text shared by the exports: where (device and qdisc, or "cpu N") and who
 * ("comm[tgid]", "port 8000", ...). Characters that break line formats become '_'. */
void export_place_label(const struct snapshot *s, const struct hist_key *k, char *buf, size_t len);
void export_group_label(const struct hist_key *k, char *buf, size_t len);

/* Distinct stacks a tail profile holds (~71 MB): past it tail_profile__build() returns
 * -E2BIG (docs/record-format.md, "Limits"). */
#define TAIL_ROWS_MAX (1u << 18)

int tail_profile__build(struct tail_profile *p, const struct snapshot *s);
void tail_profile__free(struct tail_profile *p);
const char *tail_source_name(enum tail_source s);

/* `frame;frame;frame;frame value` lines, value in nanoseconds, root frame first. */
int export_folded(FILE *f, const struct snapshot *s);

/* The tail profile as a self-contained SVG flame graph (inline script: click to zoom, search,
 * hover details); export_svg_profile() draws a profile already built, note (escaped, may be
 * NULL) ends the subtitle. Frames narrower than 0.1 px are left out. */
int export_svg(FILE *f, const struct snapshot *s);
int export_svg_profile(FILE *f, const struct tail_profile *p, const char *note);

/* pprof profile.proto, gzip-compressed (what `go tool pprof` reads). */
int export_pprof(FILE *f, const struct snapshot *s);

/* Chrome trace-event JSON of the flight-recorder requests, one track per request. */
int export_perfetto(FILE *f, const struct snapshot *s);

/* OpenMetrics 1.0 text exposition, ending in "# EOF". timestamp_ns 0 = no timestamps;
 * otherwise every sample carries it (for backfilling a report window). */
int export_openmetrics(FILE *f, const struct snapshot *s, __u64 timestamp_ns);
/* The same without the closing "# EOF", for a caller that adds families of its own. */
int export_openmetrics_families(FILE *f, const struct snapshot *s, __u64 timestamp_ns);
/* Every series carries host="s->host" (escaped) when the snapshot names its host: the
 * label set of a sample without other labels, "{host=\"...\"}", or "" without a host. */
void export_openmetrics_host_label(const struct snapshot *s, char *buf, size_t len);

/* Bucket upper bounds of tailtrace_stage_latency_seconds, in ns: 2^k - 1 for
 * k = OM_BUCKET_LOG2_MIN..OM_BUCKET_LOG2_MAX; values are integral ns, so "<= 2^k - 1 ns"
 * is exactly the count of the histogram slots below 2^k. */
#define OM_BUCKET_LOG2_MIN 8
#define OM_BUCKET_LOG2_MAX 40

/* The explain report of a merged window (user/cmd/cmd_report.c): attribution when the window has
 * requests, per-stage histogram summaries, the tail profile, counters and self cost.
 * source names the recording; intervals is how many were merged. */
int report_print_text(FILE *f, const struct snapshot *s, const char *source,
		      unsigned long intervals);
int report_print_json(FILE *f, const struct snapshot *s, const char *source,
		      unsigned long intervals);
/* The keys of report_print_json() into an object the caller has open (a host's report
 * inside a multi-host one). 0 or -errno. */
struct json_writer;
int report_json_keys(struct json_writer *w, const struct snapshot *s, const char *source,
		     unsigned long intervals);

/* Minimal HTTP/1.1 server for `record --listen`: GET /metrics returns the OpenMetrics
 * text of everything recorded since start (cumulative, as Prometheus expects). The text is
 * rendered by http_metrics__update() in the caller's thread; a serving thread
 * (http_metrics__start()) or the caller's own loop (http_metrics__serve()) answers with
 * the text last rendered. Limits (docs/exports.md): HTTP_MAX_CLIENTS connections, a full
 * table evicts the one that made progress least recently, 1 s for the request head and
 * 5 s for the whole exchange, HTTP_MAX_SERIES histogram series. */
#define HTTP_MAX_SERIES 2048 /* twice the kernel's histogram map: churn can add keys */
#define HTTP_MAX_DEVS   256
#define HTTP_MAX_NAPI   1024 /* NAPI instances: four times the kernel's napi_counts map */
struct http_metrics;

/* listen: "PORT", ":PORT", "HOST:PORT" or "[V6]:PORT"; HOST defaults to 127.0.0.1.
 * Binding a non-loopback address is allowed but is the caller's explicit choice. */
struct http_metrics *http_metrics__open(const char *listen, char *err, size_t errlen);
/* Adds one interval to the cumulative totals served (histograms, counters, devices) and
 * renders them. Keys past HTTP_MAX_SERIES / HTTP_MAX_NAPI / HTTP_MAX_DEVS are not added:
 * the histograms' and NAPI instances' are counted in
 * tailtrace_listen_series_over_limit_total. */
int http_metrics__update(struct http_metrics *h, const struct snapshot *interval);
/* The host="NAME" label of every series served (record --host, else the node name);
 * renders again so that no scrape sees the series without it. 0 or -errno. */
int http_metrics__set_host(struct http_metrics *h, const char *host);
/* Starts the serving thread, at the normal scheduling policy even when the caller runs
 * SCHED_IDLE (needs CAP_SYS_NICE or an RLIMIT_NICE allowing nice 0; without, the thread
 * serves at the caller's policy). Returns 0 or -errno; after it, do not call serve(). */
int http_metrics__start(struct http_metrics *h);
/* Accepts and answers connections for up to timeout_ms (0: only what is ready). Returns
 * the number of responses completed, or -errno; -EINTR when a signal arrived. */
int http_metrics__serve(struct http_metrics *h, int timeout_ms);
/* The listening socket, for a caller that runs its own poll(): when readable, call
 * http_metrics__serve(h, 0). Clients in progress are served by later serve() calls. */
int http_metrics__fd(const struct http_metrics *h);
/* Port actually bound (useful with port 0). */
int http_metrics__port(const struct http_metrics *h);
/* Connections closed so far to make room for a new one (serving side's count). */
unsigned long long http_metrics__evicted(const struct http_metrics *h);
/* Stops the serving thread, closes every connection. NULL is fine. */
void http_metrics__close(struct http_metrics *h);

/* The answer to a request head (pure, for tests): 200 for GET or HEAD of /metrics (a
 * query string allowed), 400 when the request line is malformed (empty, white space
 * only, no path), 405 for another method, 404 for another path. *head is true for HEAD. */
int http_request_status(const char *req, bool *head);

#endif
