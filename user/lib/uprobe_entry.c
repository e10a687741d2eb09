// SPDX-License-Identifier: GPL-2.0
/* A function entry's uprobe placed after a leading endbr64 (uprobe_entry.h). */
#include <fcntl.h>
#include <unistd.h>
#include "lib/uprobe_entry.h"

bool insn_is_endbr64(const unsigned char *b, size_t n)
{
	return n >= ENDBR64_LEN && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa;
}

__u64 uprobe_entry_offset(const char *path, __u64 off)
{
#if defined(__x86_64__)
	unsigned char b[ENDBR64_LEN];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return off;
	n = pread(fd, b, sizeof(b), (off_t)off);
	close(fd);
	if (n == (ssize_t)sizeof(b) && insn_is_endbr64(b, sizeof(b)))
		return off + ENDBR64_LEN;
#else
	(void)path;
#endif
	return off;
}
