// SPDX-License-Identifier: GPL-2.0
/* Test server for `--cuda`: for every 64-byte request it calls cuStreamSynchronize() from
 * the library given on the command line (the stand-in, or a real libcuda) and answers 64
 * bytes. One thread per connection. Usage: cudasrv LIB ADDR PORT SECONDS */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef int (*sync_fn)(void *);
static sync_fn stream_sync;

static void *serve(void *arg)
{
	int fd = (int)(long)arg;
	char buf[64];

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_WAITALL);

		if (n != (ssize_t)sizeof(buf))
			break;
		stream_sync(NULL);
		if (send(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
			break;
	}
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int one = 1, lfd;
	void *lib;

	if (argc != 5) {
		fprintf(stderr, "usage: cudasrv LIB ADDR PORT SECONDS\n");
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW);
	if (!lib || !(stream_sync = (sync_fn)dlsym(lib, "cuStreamSynchronize"))) {
		fprintf(stderr, "cudasrv: %s\n", dlerror());
		return 1;
	}
	a.sin_port = htons((unsigned short)atoi(argv[3]));
	if (inet_pton(AF_INET, argv[2], &a.sin_addr) != 1)
		return 2;
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 16)) {
		perror("cudasrv: bind");
		return 1;
	}
	alarm((unsigned)atoi(argv[4])); /* bounded: the test never leaves it running */
	for (;;) {
		pthread_t t;
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0)
			continue;
		pthread_create(&t, NULL, serve, (void *)(long)fd);
		pthread_detach(t);
	}
}
