/* SPDX-License-Identifier: MIT */
/* gRPC's message framing and status text (grpc_frame.h). Pure. */
#include <errno.h>
#include <string.h>

#include "grpc_frame.h"

void grpc_frame_prefix(uint8_t p[GRPC_PREFIX], size_t len)
{
	p[0] = 0;
	p[1] = (uint8_t)(len >> 24);
	p[2] = (uint8_t)(len >> 16);
	p[3] = (uint8_t)(len >> 8);
	p[4] = (uint8_t)len;
}

ssize_t grpc_frame_next(const uint8_t *buf, size_t n, size_t max, const uint8_t **msg, size_t *len)
{
	uint32_t l;

	if (n < GRPC_PREFIX)
		return 0;
	if (buf[0] == 1)
		return -ENOTSUP;
	if (buf[0] != 0)
		return -EPROTO;
	l = (uint32_t)buf[1] << 24 | (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 8 | buf[4];
	if (l > max)
		return -EMSGSIZE;
	if (n - GRPC_PREFIX < l)
		return 0;
	*msg = buf + GRPC_PREFIX;
	*len = l;
	return (ssize_t)(GRPC_PREFIX + l);
}

size_t grpc_pct_encode(const char *in, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	if (!cap)
		return 0;
	for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
		if (*p >= 0x20 && *p <= 0x7e && *p != '%') {
			if (o + 1 >= cap)
				break;
			out[o++] = (char)*p;
		} else {
			if (o + 3 >= cap)
				break;
			out[o++] = '%';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		}
	}
	out[o] = 0;
	return o;
}

int grpc_method(const char *path, size_t path_len, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(names[i]) == path_len && !memcmp(names[i], path, path_len))
			return (int)i;
	return -1;
}
