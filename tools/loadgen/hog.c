// SPDX-License-Identifier: GPL-2.0
/* loadgen hog: a plain busy loop at normal priority, bounded in time, for the testbed's
 * cpu fault (run-queue delay for the server). */
#include "loadgen.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

int hog_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "duration", 1, 0, 'd' },
		{ "name", 1, 0, 'n' },
		{ "help", 0, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	double duration = 600;
	const char *name = "tt-hog";
	int opt;
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'd':
			duration = atof(optarg);
			break;
		case 'n':
			name = optarg;
			break;
		default:
			fprintf(stderr,
				"usage: loadgen hog [--duration S (default 600)] [--name COMM]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	set_comm(name);
	lg_install_signals();
	uint64_t end = now_ns() + (uint64_t)(duration * 1e9);
	volatile uint64_t x = 0;
	while (!lg_stop && now_ns() < end)
		for (int i = 0; i < 100000; i++)
			x += (uint64_t)i * 2654435761u;
	return 0;
}
