// SPDX-License-Identifier: GPL-2.0
/* A stand-in for libcuda.so.1 exporting the synchronisation calls `explain --cuda` probes:
 * each blocks for CUDA_STANDIN_US microseconds (default 5000), like a host thread waiting
 * for a kernel to finish on the GPU. For tests only. */
#include <stdlib.h>
#include <time.h>

typedef int CUresult;

static void wait_gpu(void)
{
	const char *env = getenv("CUDA_STANDIN_US");
	long us = env ? atol(env) : 5000;
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

__attribute__((visibility("default"), noinline)) CUresult cuStreamSynchronize(void *stream)
{
	(void)stream;
	wait_gpu();
	return 0;
}

__attribute__((visibility("default"), noinline)) CUresult cuEventSynchronize(void *event)
{
	(void)event;
	wait_gpu();
	return 0;
}

__attribute__((visibility("default"), noinline)) CUresult cuCtxSynchronize(void)
{
	wait_gpu();
	return 0;
}
