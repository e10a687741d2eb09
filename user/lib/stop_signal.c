// SPDX-License-Identifier: GPL-2.0
/* The stop flag of lib/stop_signal.h. */
#include <signal.h>
#include <string.h>
#include "lib/stop_signal.h"

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
	(void)sig;
	stop_flag = 1;
}

void stop_signal_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

bool stop_requested(void)
{
	return stop_flag != 0;
}
