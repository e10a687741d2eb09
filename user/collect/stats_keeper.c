// SPDX-License-Identifier: GPL-2.0
/* The statistics keeper: a child with CAP_SYS_ADMIN alone that turns the kernel's BPF
 * run-time statistics on and off for its unprivileged parent (stats_keeper.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include "collect/privs.h"
#include "collect/stats_keeper.h"

#define KEEPER_FD 3

/* The parent's BPF maps mapped into memory (stamp arrays, rings): each mapping holds its
 * map, which the keeper must not. */
static void keeper_unmap_bpf(void)
{
	/* a ring per CPU: as many rounds of 64 as it takes (bounded) */
	for (int round = 0; round < 64; round++) {
		FILE *f = fopen("/proc/self/maps", "re");
		unsigned long lo[64], hi[64];
		char line[512];
		int n = 0;

		if (!f)
			return;
		while (n < 64 && fgets(line, sizeof(line), f))
			if (strstr(line, "anon_inode:bpf") &&
			    sscanf(line, "%lx-%lx", &lo[n], &hi[n]) == 2)
				n++;
		fclose(f);
		for (int i = 0; i < n; i++)
			munmap((void *)lo[i], hi[i] - lo[i]);
		if (n < 64)
			return;
	}
}

/* Nothing of the parent's stays open in the keeper: not its BPF links and maps (they would
 * outlive a parent killed first), not its output (a reader waiting for EOF would wait for
 * the keeper too). */
static void keeper_isolate(int sock)
{
	int null;

	if (sock != KEEPER_FD && dup2(sock, KEEPER_FD) != KEEPER_FD)
		_exit(1);
	null = open("/dev/null", O_RDWR);
	for (int fd = 0; fd < KEEPER_FD && null >= 0; fd++)
		dup2(null, fd);
	syscall(SYS_close_range, KEEPER_FD + 1, ~0U, 0);
	keeper_unmap_bpf();
}

static void __attribute__((noreturn)) keeper_main(int sock, pid_t parent)
{
	int stats = -1;
	char c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0); /* the parent is already gone */
	keeper_isolate(sock);
	prctl(PR_SET_NAME, "tt-stats");
	prctl(PR_SET_DUMPABLE, 0);
	/* the terminal's Ctrl-C is for the parent, which then closes the socket */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if (privs_drop_to(PRIV_BIT(CAP_SYS_ADMIN)))
		_exit(1);
	while (read(KEEPER_FD, &c, 1) == 1) {
		if (c == '1' && stats < 0)
			stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
		else if (c == '0' && stats >= 0) {
			close(stats);
			stats = -1;
		}
		c = (c == '1') == (stats >= 0) ? c : 'e';
		if (write(KEEPER_FD, &c, 1) != 1)
			break;
	}
	_exit(0);
}

int stats_keeper__start(struct stats_keeper *k)
{
	pid_t parent = getpid();
	int sv[2];

	k->sock = -1;
	k->pid = -1;
	k->pending = 0;
	k->last = 0;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	k->pid = fork();
	if (k->pid < 0) {
		int err = -errno;

		close(sv[0]);
		close(sv[1]);
		return err;
	}
	if (k->pid == 0) {
		close(sv[0]);
		keeper_main(sv[1], parent);
	}
	close(sv[1]);
	k->sock = sv[0];
	return 0;
}

int stats_keeper__ask(struct stats_keeper *k, bool on)
{
	char c = on ? '1' : '0';

	if (k->sock < 0)
		return -ENOTCONN;
	if (send(k->sock, &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)
		return -errno;
	k->pending++;
	return 0;
}

int stats_keeper__answer(struct stats_keeper *k, int wait_ms)
{
	struct pollfd p = { .fd = k->sock, .events = POLLIN };
	char r;

	if (k->sock < 0)
		return -ENOTCONN;
	if (k->pending > 0 && wait_ms > 0)
		poll(&p, 1, wait_ms);
	while (k->pending > 0) {
		ssize_t n = recv(k->sock, &r, 1, MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return -EAGAIN;
		if (n != 1)
			return n < 0 ? -errno : -EPIPE;
		k->pending--;
		k->last = r == '1' ? 1 : r == '0' ? 0 : -1;
	}
	return k->last < 0 ? -EPERM : k->last;
}

void stats_keeper__stop(struct stats_keeper *k)
{
	if (k->sock >= 0)
		close(k->sock);
	if (k->pid > 0) {
		kill(k->pid, SIGKILL);
		waitpid(k->pid, NULL, 0);
	}
	k->sock = -1;
	k->pid = -1;
}
