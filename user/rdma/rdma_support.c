// SPDX-License-Identifier: GPL-2.0
/* What RDMA tracing this host supports (libibverbs, providers and their symbols, devices,
 * uprobes), for `tailtrace probe`. */
#include <dirent.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "rdma/rdma_tracer.h"
#include "rdma/rdma_resolve.h"
#include "lib/json.h"
#include "lib/util.h"

void rdma_support_probe(const char *root, struct rdma_support *s)
{
	static const char *const prov_dirs[] = { "/usr/lib/x86_64-linux-gnu/libibverbs",
						 "/usr/lib/aarch64-linux-gnu/libibverbs",
						 "/usr/lib64/libibverbs", "/usr/lib/libibverbs" };
	char path[PATH_MAX * 2];
	struct stat st;
	struct dirent *de;
	__u64 off;
	DIR *d;
	int fd;

	memset(s, 0, sizeof(*s));
	s->verbs_header = true;
	if (!rdma_find_library(0, "libibverbs.so.1", s->libibverbs_path, sizeof(s->libibverbs_path),
			       &fd)) {
		s->libibverbs = true;
		s->libibverbs_exports =
			!elf_find_function(s->libibverbs_path, "ibv_open_device", &off, NULL);
		close(fd);
	}
	for (size_t i = 0; i < ARRAY_SIZE(prov_dirs); i++) {
		d = opendir(prov_dirs[i]);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			if (!strstr(de->d_name, ".so"))
				continue;
			snprintf(path, sizeof(path), "%s/%s", prov_dirs[i], de->d_name);
			if (s->nproviders < 8)
				snprintf(s->providers[s->nproviders], sizeof(s->providers[0]),
					 "%.63s", de->d_name);
			s->nproviders++;
			if (elf_has_symtab(path) == 1)
				s->nproviders_symtab++;
		}
		closedir(d);
		break; /* one multiarch directory is the system's */
	}
	snprintf(path, sizeof(path), "%s/sys/class/infiniband",
		 root && strcmp(root, "/") ? root : "");
	d = opendir(path);
	if (d) {
		while ((de = readdir(d)))
			if (de->d_name[0] != '.')
				s->ndevices++;
		closedir(d);
	}
	s->uprobe = !stat("/sys/bus/event_source/devices/uprobe/type", &st);
}

void rdma_support__print(const struct rdma_support *s, FILE *f)
{
	fprintf(f, "rdma:\n");
	fprintf(f, "  libibverbs        %s\n", s->libibverbs ? s->libibverbs_path : "not found");
	fprintf(f, "  ops-table path    %s\n",
		s->libibverbs_exports ? "yes (ibv_open_device/ibv_create_qp hooks)"
				      : "no (libibverbs missing or exports nothing)");
	fprintf(f, "  providers         %d (%d with .symtab: symbol path)", s->nproviders,
		s->nproviders_symtab);
	for (int i = 0; i < s->nproviders && i < 8; i++)
		fprintf(f, "%s%s", i ? ", " : ": ", s->providers[i]);
	fprintf(f, "\n  devices           %d under /sys/class/infiniband%s\n", s->ndevices,
		s->ndevices ? "" : " (counters unavailable)");
	fprintf(f, "  uprobes           %s\n", s->uprobe ? "yes" : "no");
}

void rdma_support__json(const struct rdma_support *s, struct json_writer *w)
{
	jw_object_begin(w, "rdma");
	jw_bool(w, "libibverbs", s->libibverbs);
	if (s->libibverbs)
		jw_string(w, "libibverbs_path", s->libibverbs_path);
	jw_bool(w, "ops_table_discovery", s->libibverbs_exports);
	jw_int(w, "providers", s->nproviders);
	jw_int(w, "providers_with_symtab", s->nproviders_symtab);
	jw_array_begin(w, "provider_libs");
	for (int i = 0; i < s->nproviders && i < 8; i++)
		jw_string(w, NULL, s->providers[i]);
	jw_array_end(w);
	jw_int(w, "devices", s->ndevices);
	jw_bool(w, "uprobe", s->uprobe);
	jw_object_end(w);
}
