/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for daemon/http.c, which parses what any local process
 * sends to the [metrics] listener. The input is parsed whole, then again
 * as it would arrive in pieces (the first byte picks the piece size).
 *
 * Aborts when
 *   - the result is not HTTP_MORE or one of the statuses http.h names;
 *   - HTTP_MORE comes for HTTP_HEAD_MAX bytes or more;
 *   - an accepted head is empty, longer than the input or HTTP_HEAD_MAX,
 *     does not end in an empty line, has a method that is not a short
 *     token or a path outside the head;
 *   - parsing in pieces ends differently from parsing in one go.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/admin/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const char *buf, size_t len, int r, const struct http_req *req)
{
	switch (r) {
	case HTTP_MORE:
		if (len >= HTTP_HEAD_MAX)
			abort();
		return;
	case HTTP_BAD_REQUEST: case HTTP_TOO_LARGE: case HTTP_HEAD_TOO_LARGE: case HTTP_BAD_VERSION:
		return;
	case HTTP_OK:
		break;
	default:
		abort();
	}
	if (!req->head_len || req->head_len > len || req->head_len > HTTP_HEAD_MAX || buf[req->head_len - 1] != '\n')
		abort();
	if (req->head_len < 2 || (buf[req->head_len - 2] != '\n' && buf[req->head_len - 2] != '\r'))
		abort();
	if (!req->method[0] || strlen(req->method) > HTTP_METHOD_MAX || (req->minor != 0 && req->minor != 1))
		abort();
	if (req->path_off + req->path_len > req->head_len)
		abort();
	r = http_route(buf, req, "/metrics");
	if (r != HTTP_OK && r != HTTP_NOT_FOUND && r != HTTP_BAD_METHOD)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_req whole, part;
	size_t scan = 0, step, n;
	int r, rp = HTTP_MORE;
	char *buf;

	if (size > 2 * HTTP_HEAD_MAX)
		return 0;
	/* a copy of exactly size bytes, so that reads past it are caught */
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	r = http_parse(buf, size, &scan, &whole);
	check(buf, size, r, &whole);
	step = size ? (unsigned char)buf[0] % 64 + 1 : 1;
	scan = 0;
	for (n = 0; rp == HTTP_MORE && n < size;) {
		n = n + step < size ? n + step : size;
		rp = http_parse(buf, n, &scan, &part);
		check(buf, n, rp, &part);
	}
	if (size && rp != r)
		abort();
	if (r == HTTP_OK && (part.head_len != whole.head_len || strcmp(part.method, whole.method) ||
			     part.path_off != whole.path_off || part.path_len != whole.path_len))
		abort();
	free(buf);
	return 0;
}
