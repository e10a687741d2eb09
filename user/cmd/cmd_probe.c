// SPDX-License-Identifier: GPL-2.0
/* `tailtrace probe`: what this kernel allows and which hook feeds each stage. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/commands.h"
#include "lib/json.h"
#include "collect/kernel_caps.h"
#include "collect/netdev.h"
#include "lib/log.h"
#include "cmd/options.h"
#include "collect/privs.h"
#include "rdma/rdma_tracer.h"
#include "core/stages.h"

static const char *const tstamp_names[PT__MAX] = { "SENDMSG", "SCHED", "SND_SW", "SND_HW", "ACK" };

/* What a tracepoint feeds: the stages of the catalogue that need it, or what the programs
 * use it for beyond stages. */
static void tp_feeds(const char *tp, char *buf, size_t len)
{
	const char *extra = kernel_caps_tp_feeds(tp);
	size_t off = 0;

	buf[0] = 0;
	for (int s = 0; s < STAGE__MAX && off < len; s++) {
		const struct stage_info *si = stage_info(s);

		for (int t = 0; t < 4 && si->tps[t]; t++) {
			if (strcmp(si->tps[t], tp))
				continue;
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? " " : "",
						si->name);
			break;
		}
	}
	if (extra && off < len)
		snprintf(buf + off, len - off, "%s%s", off ? " " : "", extra);
}

static const char *const feature_names[PFEAT__MAX] = {
	[PFEAT_SK_COOKIE] = "bpf_get_socket_cookie(sk)",
	[PFEAT_FOR_EACH] = "bpf_for_each_map_elem",
};

/* Where tx.ring can be seen: the devices of this namespace whose driver completes what it
 * sent (collect/netdev.h). */
static void print_devices_text(void)
{
	struct dirent *de;
	DIR *d = opendir("/sys/class/net");

	if (!d)
		return;
	printf("\ndevices (tx.ring is seen where the driver completes transmissions):\n");
	while ((de = readdir(d))) {
		char drv[64];
		bool yes;

		if (de->d_name[0] == '.')
			continue;
		yes = netdev_tx_completes("/sys", de->d_name, drv, sizeof(drv));
		printf("  %-16s %-12s tx.ring %s\n", de->d_name, drv,
		       yes ? "yes" : "no (a virtual device hands packets on)");
	}
	closedir(d);
}

static void print_devices_json(struct json_writer *w)
{
	struct dirent *de;
	DIR *d = opendir("/sys/class/net");

	jw_array_begin(w, "devices");
	while (d && (de = readdir(d))) {
		char drv[64];
		bool yes;

		if (de->d_name[0] == '.')
			continue;
		yes = netdev_tx_completes("/sys", de->d_name, drv, sizeof(drv));
		jw_object_begin(w, NULL);
		jw_string(w, "name", de->d_name);
		jw_string(w, "driver", drv);
		jw_bool(w, "tx_ring", yes);
		jw_object_end(w);
	}
	jw_array_end(w);
	if (d)
		closedir(d);
}

static void print_json(const struct kernel_caps *c, const struct rdma_support *rs)
{
	const char *events[FEED_ROWS];
	int nev;
	struct json_writer w;
	struct stage_feed feed;

	jw_init(&w, stdout, true);
	jw_object_begin(&w, NULL);
	jw_string(&w, "kernel", c->release);
	jw_bool(&w, "btf", c->btf);
	jw_bool(&w, "tracefs", c->tracefs);
	jw_bool(&w, "tracefs_mounted_by_tailtrace", c->tracefs_mounted_by_us);
	jw_object_begin(&w, "hooks");
	for (int k = 0; k < PK__MAX; k++) {
		jw_object_begin(&w, probe_kind_name(k));
		jw_bool(&w, "available", c->kinds[k].available);
		if (c->kinds[k].available)
			jw_null(&w, "errno");
		else
			jw_int(&w, "errno", c->kinds[k].err);
		jw_string(&w, "detail", c->kinds[k].detail);
		jw_object_end(&w);
	}
	jw_object_end(&w);
	jw_object_begin(&w, "tx_timestamping_callbacks");
	for (int i = 0; i < PT__MAX; i++)
		jw_bool(&w, tstamp_names[i], c->tstamp_cb[i]);
	jw_object_end(&w);
	jw_array_begin(&w, "tracepoints");
	for (int i = 0; i < c->ntps; i++) {
		char feeds[256];

		tp_feeds(c->tps[i].name, feeds, sizeof(feeds));
		jw_object_begin(&w, NULL);
		jw_string(&w, "name", c->tps[i].name);
		jw_bool(&w, "tp_btf", c->tps[i].btf);
		jw_bool(&w, "tracefs", c->tps[i].tracefs);
		jw_string(&w, "feeds", feeds);
		jw_object_end(&w);
	}
	jw_array_end(&w);
	jw_object_begin(&w, "helpers");
	for (int f = 0; f < PFEAT__MAX; f++)
		jw_bool(&w, feature_names[f], c->feat[f]);
	jw_bool(&w, "bpf_rdonly_cast", c->kfunc_rdonly_cast);
	jw_object_end(&w);
	jw_string(&w, "object", c->compat ? "compat" : "kfuncs");
	jw_array_begin(&w, "events");
	nev = feed_events(events, FEED_ROWS);
	for (int i = 0; i < nev; i++) {
		char desc[256];
		bool ok = feed_event(c, events[i], desc, sizeof(desc));

		jw_object_begin(&w, NULL);
		jw_string(&w, "event", events[i]);
		jw_bool(&w, "available", ok);
		if (ok) {
			jw_string(&w, "feed", desc);
			jw_null(&w, "reason");
		} else {
			jw_null(&w, "feed");
			jw_string(&w, "reason", desc);
		}
		jw_object_end(&w);
	}
	jw_array_end(&w);
	jw_array_begin(&w, "stages");
	for (int s = 0; s < STAGE__MAX; s++) {
		stage_feed_of(c, s, &feed);
		jw_object_begin(&w, NULL);
		jw_string(&w, "stage", stage_info(s)->name);
		jw_string(&w, "class", class_name(stage_info(s)->class));
		jw_bool(&w, "available", feed.available);
		jw_string(&w, "hook", feed.hook);
		jw_string(&w, "feeds", feed.feeds);
		if (feed.available)
			jw_null(&w, "reason");
		else
			jw_string(&w, "reason", feed.why);
		jw_object_end(&w);
	}
	jw_array_end(&w);
	print_devices_json(&w);
	rdma_support__json(rs, &w); /* the "rdma" object */
	jw_object_end(&w);
	jw_finish(&w);
}

static void print_text(const struct kernel_caps *c, const struct rdma_support *rs)
{
	const char *events[FEED_ROWS];
	int nev;
	struct stage_feed feed;

	printf("kernel      %s\n", c->release);
	printf("BTF         %s\n", c->btf ? "yes (/sys/kernel/btf/vmlinux)" : "NO");
	printf("tracefs     %s\n",
	       c->tracefs ? (c->tracefs_mounted_by_us ? "yes (mounted now)" : "yes")
			  : "no (mount -t tracefs nodev /sys/kernel/tracing)");
	printf("\nhook kinds (loaded, attached and fired here):\n");
	for (int k = 0; k < PK__MAX; k++)
		printf("  %-24s %-4s %s\n", probe_kind_name(k),
		       c->kinds[k].available ? "yes" : "no", c->kinds[k].detail);
	printf("\ntracepoints:\n");
	for (int i = 0; i < c->ntps; i++) {
		char feeds[256];

		tp_feeds(c->tps[i].name, feeds, sizeof(feeds));
		printf("  %-28s tp_btf %-3s tracefs %-3s  %s\n", c->tps[i].name,
		       c->tps[i].btf ? "yes" : "no", c->tps[i].tracefs ? "yes" : "no", feeds);
	}
	printf("\nhelpers:\n");
	for (int f = 0; f < PFEAT__MAX; f++)
		printf("  %-28s %s\n", feature_names[f], c->feat[f] ? "yes" : "no");
	printf("  %-28s %s, %s\n", "bpf_rdonly_cast", c->kfunc_rdonly_cast ? "yes" : "no",
	       c->compat ? "compat object (header reads are probe reads)" : "object with kfuncs");
	printf("\nevents (the feed chosen for each, cheapest first: tp_btf, fentry, kprobe):\n");
	nev = feed_events(events, FEED_ROWS);
	for (int i = 0; i < nev; i++) {
		char desc[256];
		bool ok = feed_event(c, events[i], desc, sizeof(desc));

		printf("  %-28s %-4s %s\n", events[i], ok ? "yes" : "no", desc);
	}
	printf("\nstages:\n");
	for (int s = 0; s < STAGE__MAX; s++) {
		stage_feed_of(c, s, &feed);
		printf("  %-14s %-10s %-4s %s%s%s\n", stage_info(s)->name,
		       class_name(stage_info(s)->class), feed.available ? "yes" : "no",
		       feed.available ? (feed.feeds[0] ? feed.feeds : feed.hook) : "",
		       feed.available ? "" : "-- ", feed.available ? "" : feed.why);
	}
	print_devices_text();
	printf("\n");
	rdma_support__print(rs, stdout);
}

int cmd_probe(int argc, char **argv)
{
	struct kernel_caps caps;
	struct rdma_support rs;
	struct tt_opts o;
	char err[256];
	int r;

	r = opts_parse(&o, argc, argv, opts_allowed(TT_CMD_PROBE), err, sizeof(err));
	if (r == 1) {
		cmd_print_help(TT_CMD_PROBE);
		return 0;
	}
	log_setup(o.json, o.verbose);
	if (r < 0) {
		tt_error("%s", err);
		return 2;
	}
	if (o.nargs) {
		tt_error("unexpected argument '%s'", o.args[0]);
		return 2;
	}
	if (!privs_require())
		return 1;
	if (kernel_caps_probe(&caps)) {
		tt_error("TAILTRACE_AVOID_FEEDS: unknown feed kind in '%s' (kinds: tp_btf, fentry, "
			 "kprobe, kfunc)",
			 getenv("TAILTRACE_AVOID_FEEDS"));
		return 2;
	}
	rdma_support_probe(NULL, &rs);
	if (o.json)
		print_json(&caps, &rs);
	else
		print_text(&caps, &rs);
	return 0;
}
