// SPDX-License-Identifier: GPL-2.0
/* One escaping of untrusted strings for terminal output (escape.h). */
#include <stdio.h>
#include "lib/escape.h"

size_t tt_escape(char *out, size_t outlen, const char *in)
{
	size_t need = 0;

	for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
		char tmp[5];
		size_t n;

		if (*p < 0x20 || *p == 0x7f || *p == '\\')
			n = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", *p);
		else {
			tmp[0] = (char)*p;
			tmp[1] = '\0';
			n = 1;
		}
		/* whole escapes only: a cut "\x1" would read as something else */
		if (outlen && need + n < outlen)
			for (size_t i = 0; i < n; i++)
				out[need + i] = tmp[i];
		else if (outlen && need < outlen)
			outlen = need + 1; /* stop writing here */
		need += n;
	}
	if (outlen)
		out[need < outlen ? need : outlen - 1] = '\0';
	return need;
}

const char *tt_esc(const char *in)
{
	static char buf[4][4096];
	static unsigned int next;
	char *b = buf[next++ % 4];

	tt_escape(b, sizeof(buf[0]), in);
	return b;
}
