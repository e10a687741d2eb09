// SPDX-License-Identifier: GPL-2.0
/* RDMA fabric counters from sysfs and ethtool, window deltas, and the congestion vs
 * transport call. Reads only under a root directory so tests run on fabricated trees. */
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include "rdma/rdma_counters.h"
#include "rdma/rdma_counter_table.h"
#include "lib/util.h"

/* Exact names first: some transport counters contain words of the congestion list. */
static const char *const transport_names[] = {
	"out_of_sequence",
	"packet_seq_err",
	"local_ack_timeout_err",
	"implied_nak_seq_err",
	"duplicate_request",
	"rnr_nak_retry_err",
	"out_of_buffer",
	"req_cqe_error",
	"req_cqe_flush_error",
	"resp_cqe_error",
	"resp_cqe_flush_error",
	"req_remote_access_errors",
	"req_remote_invalid_request",
	"resp_local_length_error",
	"resp_remote_access_errors",
	"rx_icrc_encapsulated",
	"roce_adp_retrans",
	"roce_adp_retrans_to",
	"roce_slow_restart",
	"roce_slow_restart_trans",
	"req_rnr_retries_exceeded",
	"req_transport_retries_exceeded",
	"rx_read_requests_err",
	"symbol_error",
	"port_rcv_errors",
	"link_downed",
	"link_error_recovery",
	"local_link_integrity_errors",
	"port_rcv_remote_physical_errors",
	"excessive_buffer_overrun_errors",
	"VL15_dropped",
	"port_rcv_constraint_errors",
	"port_xmit_constraint_errors",
	/* rxe/siw style names */
	"retry_exceeded_err",
	"send_rnr_err",
	"rcvd_seq_err",
	"retry_rnr_exceeded_err",
	"completer_retry_err",
	"rcvd_rnr_err",
	"link_downed",
};

static const char *const congestion_names[] = {
	"np_cnp_sent",
	"np_ecn_marked_roce_packets",
	"rp_cnp_handled",
	"rp_cnp_ignored",
	"roce_slow_restart_cnps",
	"port_xmit_wait",
	"port_xmit_discards",
	"rx_ecn_marked",
	"tx_cnp",
	"rx_cnp",
};

enum rdma_cnt_class rdma_counter_class(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(transport_names); i++)
		if (!strcmp(name, transport_names[i]))
			return RCC_TRANSPORT;
	for (size_t i = 0; i < ARRAY_SIZE(congestion_names); i++)
		if (!strcmp(name, congestion_names[i]))
			return RCC_CONGESTION;
	/* PFC: rx_prio3_pause, tx_pause_ctrl_phy, rx_prio3_pause_duration, ... */
	if (strstr(name, "pause") || strstr(name, "_cnp") || strstr(name, "ecn_marked"))
		return RCC_CONGESTION;
	if (strstr(name, "timeout") || strstr(name, "seq_err") || strstr(name, "retry"))
		return RCC_TRANSPORT;
	return RCC_OTHER;
}

enum rdma_cnt_class rdma_counter_class_for(int provider, const char *name, int source)
{
	const struct rdma_counter_meaning *m;

	if (source == RCS_ETHTOOL) /* only PFC pause counters are kept from ethtool */
		return RCC_CONGESTION;
	if (provider == RDMA_PROV_UNKNOWN)
		return rdma_counter_class(name);
	/* a known provider: a counter is evidence only if its row says it counts a fault */
	m = rdma_counter_meaning(provider, name);
	return m ? (enum rdma_cnt_class)m->cls : RCC_OTHER;
}

const char *rdma_counter_class_name(enum rdma_cnt_class c)
{
	switch (c) {
	case RCC_CONGESTION:
		return "congestion";
	case RCC_TRANSPORT:
		return "transport";
	default:
		return "other";
	}
}

const char *rdma_counter_source_name(enum rdma_cnt_source s)
{
	switch (s) {
	case RCS_HW:
		return "hw_counters";
	case RCS_PORT:
		return "counters";
	default:
		return "ethtool";
	}
}

const char *rdma_call_name(enum rdma_call c)
{
	switch (c) {
	case RDMA_CALL_CONGESTION:
		return "congestion";
	case RDMA_CALL_TRANSPORT:
		return "transport";
	case RDMA_CALL_BOTH:
		return "congestion+transport";
	default:
		return "none";
	}
}

static void warn(struct rdma_counter_set *set, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void warn(struct rdma_counter_set *set, const char *fmt, ...)
{
	va_list ap;

	if (set->nwarn < RDMA_CNT_WARN_MAX) {
		va_start(ap, fmt);
		vsnprintf(set->warn[set->nwarn++], sizeof(set->warn[0]), fmt, ap);
		va_end(ap);
	}
	set->nwarn_total++;
}

/* snprintf for paths: vsnprintf, so a too-long name is an error, not a silent cut */
static int pathf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int add(struct rdma_counter_set *set, const char *dev, const char *name, int source,
	       __u64 value)
{
	struct rdma_counter *c;

	if (set->n == set->cap) {
		size_t ncap = set->cap ? set->cap * 2 : 64;
		struct rdma_counter *n = realloc(set->c, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		set->c = n;
		set->cap = ncap;
	}
	c = &set->c[set->n++];
	memset(c, 0, sizeof(*c));
	snprintf(c->dev, sizeof(c->dev), "%s", dev);
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->source = (__u8)source;
	c->cls = (__u8)rdma_counter_class(name);
	c->value = value;
	return 0;
}

void rdma_counter_set__free(struct rdma_counter_set *set)
{
	free(set->c);
	memset(set, 0, sizeof(*set));
}

/* A counter file holds one unsigned decimal number (and a newline). */
static int parse_value(const char *s, __u64 *v)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	while (*end == ' ' || *end == '\n' || *end == '\t')
		end++;
	return *end ? -EINVAL : 0;
}

/* Opens a counter file for reading only if it is a regular file: a FIFO or device in a
 * (possibly hostile) --sysfs-root tree must not block or stream forever. */
static FILE *fopen_regular(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	FILE *f;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

static int read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen_regular(path);
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return (int)n;
}

static void read_dir_counters(struct rdma_counter_set *set, const char *dir, const char *dev,
			      int source)
{
	char path[PATH_MAX], buf[64];
	struct dirent *de;
	DIR *d = opendir(dir);
	__u64 v;

	if (!d)
		return; /* not every device has hw_counters (or counters) */
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (pathf(path, sizeof(path), "%s/%s", dir, de->d_name))
			continue;
		if (read_small(path, buf, sizeof(buf)) < 0) {
			/* some counters are write-only or need a privilege: say so, go on */
			warn(set, "cannot read %s/%s", dev, de->d_name);
			continue;
		}
		if (parse_value(buf, &v)) {
			warn(set, "ignored %s/%s: not a counter value", dev, de->d_name);
			continue;
		}
		if (add(set, dev, de->d_name, source, v))
			break;
	}
	closedir(d);
}

int rdma_ethtool_parse(const char *text, const char *dev, struct rdma_counter_set *set)
{
	const char *p = text;
	int added = 0;

	while (p && *p) {
		const char *eol = strchr(p, '\n');
		char line[256], name[128];
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		unsigned long long v;
		char *colon;

		if (len >= sizeof(line))
			len = sizeof(line) - 1;
		memcpy(line, p, len);
		line[len] = '\0';
		p = eol ? eol + 1 : NULL;
		colon = strrchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		if (sscanf(line, " %127s", name) != 1 || !strstr(name, "pause"))
			continue;
		if (sscanf(colon + 1, " %llu", &v) != 1)
			continue;
		if (!add(set, dev, name, RCS_ETHTOOL, v))
			added++;
	}
	return added;
}

/* SIOCETHTOOL: string set size, names, then values, keeping the pause counters. */
static int ethtool_ioctl(const char *netdev, struct rdma_counter_set *set)
{
	/* the header and the one data word it returns (a flexible array) */
	__u64 ssi_buf[(sizeof(struct ethtool_sset_info) + sizeof(__u32) + 7) / 8] = { 0 };
	struct ethtool_sset_info *ssi = (struct ethtool_sset_info *)ssi_buf;
	struct ethtool_gstrings *strs = NULL;
	struct ethtool_stats *st = NULL;
	struct ifreq ifr = { 0 };
	int fd, err = 0;
	__u32 n;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%.*s", IFNAMSIZ - 1, netdev);
	ssi->cmd = ETHTOOL_GSSET_INFO;
	ssi->sset_mask = 1ull << ETH_SS_STATS;
	ifr.ifr_data = (void *)ssi;
	if (ioctl(fd, SIOCETHTOOL, &ifr) || !ssi->sset_mask) {
		err = -EOPNOTSUPP;
		goto out;
	}
	n = ssi->data[0];
	strs = calloc(1, sizeof(*strs) + (size_t)n * ETH_GSTRING_LEN);
	st = calloc(1, sizeof(*st) + (size_t)n * sizeof(__u64));
	if (!strs || !st) {
		err = -ENOMEM;
		goto out;
	}
	strs->cmd = ETHTOOL_GSTRINGS;
	strs->string_set = ETH_SS_STATS;
	strs->len = n;
	ifr.ifr_data = (void *)strs;
	if (ioctl(fd, SIOCETHTOOL, &ifr)) {
		err = -errno;
		goto out;
	}
	st->cmd = ETHTOOL_GSTATS;
	st->n_stats = n;
	ifr.ifr_data = (void *)st;
	if (ioctl(fd, SIOCETHTOOL, &ifr)) {
		err = -errno;
		goto out;
	}
	for (__u32 i = 0; i < n && i < st->n_stats; i++) {
		char name[ETH_GSTRING_LEN + 1];

		memcpy(name, strs->data + (size_t)i * ETH_GSTRING_LEN, ETH_GSTRING_LEN);
		name[ETH_GSTRING_LEN] = '\0';
		if (strstr(name, "pause"))
			add(set, netdev, name, RCS_ETHTOOL, st->data[i]);
	}
out:
	free(strs);
	free(st);
	close(fd);
	return err;
}

static bool seen_netdev(const struct rdma_counter_set *set, char (*seen)[IFNAMSIZ], int nseen,
			const char *nd)
{
	(void)set;
	for (int i = 0; i < nseen; i++)
		if (!strcmp(seen[i], nd))
			return true;
	return false;
}

/* The netdevs behind a port: gid_attrs/ndevs/N (RoCE), else the PCI device's net/. */
static int port_netdevs(const char *ibdir, const char *port, char (*out)[IFNAMSIZ], int max)
{
	char path[PATH_MAX], buf[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	pathf(path, sizeof(path), "%s/ports/%s/gid_attrs/ndevs", ibdir, port);
	d = opendir(path);
	if (d) {
		while ((de = readdir(d)) && n < max) {
			char f[PATH_MAX + 300];
			bool dup = false;

			if (de->d_name[0] == '.')
				continue;
			if (pathf(f, sizeof(f), "%s/%s", path, de->d_name))
				continue;
			if (read_small(f, buf, sizeof(buf)) <= 0)
				continue;
			buf[strcspn(buf, "\n")] = '\0';
			if (!buf[0] || strlen(buf) >= IFNAMSIZ)
				continue;
			for (int i = 0; i < n; i++)
				dup |= !strcmp(out[i], buf);
			if (!dup)
				snprintf(out[n++], IFNAMSIZ, "%s", buf);
		}
		closedir(d);
	}
	if (n)
		return n;
	pathf(path, sizeof(path), "%s/device/net", ibdir);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max)
		if (de->d_name[0] != '.' && strlen(de->d_name) < IFNAMSIZ)
			snprintf(out[n++], IFNAMSIZ, "%s", de->d_name);
	closedir(d);
	return n;
}

/* A fabricated tree's ethtool statistics: ROOT/ethtool/NETDEV, `ethtool -S` text. */
static void read_ethtool_file(const char *root, const char *nd, struct rdma_counter_set *set)
{
	char f[PATH_MAX * 2], *text;
	FILE *fp;
	long len;

	pathf(f, sizeof(f), "%s/ethtool/%s", root, nd);
	fp = fopen_regular(f);
	if (!fp) {
		warn(set, "%s: no ethtool statistics (%s missing)", nd, f);
		return;
	}
	fseek(fp, 0, SEEK_END);
	len = ftell(fp);
	rewind(fp);
	text = len >= 0 && len < (1 << 20) ? calloc(1, (size_t)len + 1) : NULL;
	if (text && fread(text, 1, (size_t)len, fp) == (size_t)len)
		rdma_ethtool_parse(text, nd, set);
	free(text);
	fclose(fp);
}

/* Netdevs already read, so a netdev behind several ports counts once. */
struct netdev_seen {
	char name[32][IFNAMSIZ];
	int n;
};

/* One port's hw_counters and counters, then the ethtool statistics of its netdevs. */
static void read_port(struct rdma_counter_set *set, const char *ibdir, const char *ibdev,
		      const char *port, const char *root, bool live, struct netdev_seen *seen)
{
	char dev[64], dir[PATH_MAX * 2], nds[8][IFNAMSIZ];
	int nnd;

	set->nports++;
	snprintf(dev, sizeof(dev), "%.40s/%.16s", ibdev, port);
	pathf(dir, sizeof(dir), "%s/ports/%s/hw_counters", ibdir, port);
	read_dir_counters(set, dir, dev, RCS_HW);
	pathf(dir, sizeof(dir), "%s/ports/%s/counters", ibdir, port);
	read_dir_counters(set, dir, dev, RCS_PORT);
	nnd = port_netdevs(ibdir, port, nds, 8);
	for (int i = 0; i < nnd; i++) {
		if (seen_netdev(set, seen->name, seen->n, nds[i]) || seen->n == 32)
			continue;
		/* port_netdevs keeps names under IFNAMSIZ: the precision only tells the
		 * compiler so */
		snprintf(seen->name[seen->n++], IFNAMSIZ, "%.*s", IFNAMSIZ - 1, nds[i]);
		set->nnetdevs++;
		if (!live)
			read_ethtool_file(root, nds[i], set);
		else if (ethtool_ioctl(nds[i], set))
			warn(set, "%s: no ethtool statistics (SIOCETHTOOL failed)", nds[i]);
	}
}

/* The provider of <ibdir>: the driver its parent device is bound to, else the device's
 * name, else its counters (rxe devices take any name `rdma link add` gives them, and have
 * no parent device). */
static int device_provider(const char *ibdir, const char *dev, const struct rdma_counter_set *set,
			   size_t first)
{
	char link[PATH_MAX + 32], target[PATH_MAX];
	const char *drv = NULL;
	ssize_t n;
	int p;

	if (!pathf(link, sizeof(link), "%s/device/driver", ibdir) &&
	    (n = readlink(link, target, sizeof(target) - 1)) > 0) {
		target[n] = '\0';
		drv = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
	}
	p = rdma_provider_of(drv, dev);
	if (p != RDMA_PROV_UNKNOWN)
		return p;
	for (size_t i = first; i < set->n; i++)
		if (set->c[i].source == RCS_HW && !strcmp(set->c[i].name, "ack_deferred"))
			return RDMA_PROV_RXE;
	return RDMA_PROV_UNKNOWN;
}

int rdma_counters_read(const char *root, struct rdma_counter_set *set, char *msg, size_t msglen)
{
	char base[PATH_MAX], ibdir[PATH_MAX + 256], dir[PATH_MAX * 2];
	struct netdev_seen seen = { .n = 0 };
	bool live = !root || !strcmp(root, "/") || !root[0];
	struct dirent *de, *pe;
	size_t first;
	DIR *d, *pd;
	int prov;

	memset(set, 0, sizeof(*set));
	pathf(base, sizeof(base), "%s/sys/class/infiniband", live ? "" : root);
	d = opendir(base);
	if (!d) {
		snprintf(msg, msglen, "no RDMA devices: %s %s", base,
			 errno == ENOENT ? "does not exist" : strerror(errno));
		return -ENOENT;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (pathf(ibdir, sizeof(ibdir), "%s/%s", base, de->d_name))
			continue;
		pathf(dir, sizeof(dir), "%s/ports", ibdir);
		pd = opendir(dir);
		if (!pd) {
			warn(set, "%s: no ports directory", de->d_name);
			continue;
		}
		set->ndevs++;
		first = set->n;
		while ((pe = readdir(pd)))
			if (pe->d_name[0] != '.')
				read_port(set, ibdir, de->d_name, pe->d_name, root, live, &seen);
		closedir(pd);
		prov = device_provider(ibdir, de->d_name, set, first);
		for (size_t i = first; i < set->n; i++) {
			set->c[i].provider = (__u8)prov;
			set->c[i].cls = (__u8)rdma_counter_class_for(prov, set->c[i].name,
								     set->c[i].source);
		}
	}
	closedir(d);
	if (!set->ndevs) {
		snprintf(msg, msglen, "no RDMA devices under %s", base);
		return -ENOENT;
	}
	return 0;
}

static const struct rdma_counter *find(const struct rdma_counter_set *s,
				       const struct rdma_counter *c, size_t hint)
{
	/* sets read twice from the same tree come in the same order: try the hint first */
	if (hint < s->n && s->c[hint].source == c->source && !strcmp(s->c[hint].name, c->name) &&
	    !strcmp(s->c[hint].dev, c->dev))
		return &s->c[hint];
	for (size_t i = 0; i < s->n; i++)
		if (s->c[i].source == c->source && !strcmp(s->c[i].name, c->name) &&
		    !strcmp(s->c[i].dev, c->dev))
			return &s->c[i];
	return NULL;
}

size_t rdma_counters_delta(const struct rdma_counter_set *prev, const struct rdma_counter_set *cur,
			   struct rdma_counter_delta *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < cur->n; i++) {
		const struct rdma_counter *p = find(prev, &cur->c[i], i);

		if (!p)
			continue; /* appeared in this window: no baseline yet */
		if (out && n < max) {
			out[n].c = &cur->c[i];
			out[n].reset = cur->c[i].value < p->value;
			out[n].delta = out[n].reset ? cur->c[i].value : cur->c[i].value - p->value;
		}
		n++;
		if (out && n >= max)
			break;
	}
	return n;
}

static __u64 key_hash(const struct rdma_counter *c)
{
	__u64 h = 1469598103934665603ull ^ c->source;

	for (const char *p = c->dev; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h = (h ^ '/') * 1099511628211ull;
	for (const char *p = c->name; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return h;
}

static double *baseline(struct rdma_call_state *st, __u64 h, bool *fresh)
{
	for (size_t i = 0; i < st->nbase; i++)
		if (st->base[i].hash == h) {
			*fresh = false;
			return &st->base[i].rate;
		}
	*fresh = true;
	if (st->nbase == RDMA_BASELINE_MAX)
		return NULL;
	st->base[st->nbase].hash = h;
	st->base[st->nbase].rate = 0;
	return &st->base[st->nbase++].rate;
}

void rdma_counters_call(struct rdma_call_state *st, const struct rdma_counter_delta *d, size_t n,
			double window_s, struct rdma_window_call *out)
{
	bool cong = false, trans = false;

	memset(out, 0, sizeof(*out));
	if (window_s <= 0)
		window_s = 1;
	for (size_t i = 0; i < n; i++) {
		const struct rdma_counter *c = d[i].c;
		double rate = (double)d[i].delta / window_s, *base, before;
		bool fresh, rose;

		if (c->cls == RCC_OTHER)
			continue;
		base = baseline(st, key_hash(c), &fresh);
		before = base && !fresh ? *base : 0;
		rose = d[i].delta >= RDMA_RISE_MIN && rate > RDMA_RISE_FACTOR * before;
		/* slow EWMA: a sustained level becomes the baseline within a few windows */
		if (base)
			*base = fresh ? rate : 0.7 * *base + 0.3 * rate;
		if (!rose)
			continue;
		if (c->cls == RCC_CONGESTION) {
			cong = true;
			out->congestion_events += d[i].delta;
		} else {
			trans = true;
			out->transport_events += d[i].delta;
		}
		/* keep the largest deltas as evidence */
		size_t pos = out->nev < RDMA_EVIDENCE_MAX ? out->nev++ : RDMA_EVIDENCE_MAX;

		while (pos > 0 && out->ev[pos - 1].delta < d[i].delta) {
			if (pos < RDMA_EVIDENCE_MAX)
				out->ev[pos] = out->ev[pos - 1];
			pos--;
		}
		if (pos < RDMA_EVIDENCE_MAX) {
			struct rdma_evidence *e = &out->ev[pos];

			snprintf(e->dev, sizeof(e->dev), "%s", c->dev);
			snprintf(e->name, sizeof(e->name), "%s", c->name);
			e->cls = c->cls;
			e->provider = c->provider;
			e->delta = d[i].delta;
			e->baseline_per_s = before;
		}
	}
	st->windows++;
	out->call = cong && trans ? RDMA_CALL_BOTH
		    : cong        ? RDMA_CALL_CONGESTION
		    : trans       ? RDMA_CALL_TRANSPORT
				  : RDMA_CALL_NONE;
}
