/* SPDX-License-Identifier: MIT */
/*
 * The HTTP/1.0 and 1.1 request heads the [metrics] listener (metrics.c)
 * accepts, and the response heads it sends. Pure: no I/O, no allocation;
 * the caller owns every buffer. Unit tested by tests/unit/test_http.c,
 * fuzzed by tests/fuzz/fuzz_http.c.
 *
 * What is accepted: optional empty lines, then "METHOD SP TARGET SP
 * HTTP/1.x", then header fields "Name: value", then an empty line; lines
 * end in CRLF or a bare LF. The target is origin-form ("/path?query") or
 * absolute-form ("http://host/path"). A request with a body is not served:
 * the listener reads heads only.
 */
#ifndef OOO_HTTP_H
#define OOO_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#define HTTP_HEAD_MAX 8192u  /* a head (request line, fields, the empty line) is at most this long */
#define HTTP_FIELDS_MAX 64u  /* header fields per request */
#define HTTP_METHOD_MAX 16u  /* bytes of a method token */

/* http_parse's result: 0 while the head is incomplete, else an HTTP status */
enum {
	HTTP_MORE = 0,
	HTTP_OK = 200,           /* a complete, well-formed head: *req filled */
	HTTP_BAD_REQUEST = 400,  /* malformed */
	HTTP_NOT_FOUND = 404,
	HTTP_BAD_METHOD = 405,
	HTTP_TOO_LARGE = 413,     /* the request has a body (Content-Length > 0, Transfer-Encoding) */
	HTTP_HEAD_TOO_LARGE = 431, /* no end of head within HTTP_HEAD_MAX bytes, or too many fields */
	HTTP_UNAVAILABLE = 503,  /* not from the parser: the listener's connections are all taken */
	HTTP_BAD_VERSION = 505,  /* HTTP/N.M other than 1.0 and 1.1 */
};

struct http_req {
	char method[HTTP_METHOD_MAX + 1]; /* as sent (methods are case-sensitive) */
	int minor;                        /* HTTP/1.minor: 0 or 1 */
	size_t path_off, path_len;        /* the target's path within buf, without query or fragment */
	size_t head_len;                  /* bytes of the head, its final empty line included */
};

/*
 * Parse the request head at the start of buf (len bytes received so far;
 * bytes after the head are not looked at). *scan is the caller's state
 * for one request: 0 at first, then left as this call set it, so that each
 * call looks only at the new bytes while it searches for the head's end.
 * Returns HTTP_MORE (more bytes needed: len < HTTP_HEAD_MAX), HTTP_OK with
 * *req filled, or the error status the request deserves (400, 413, 431,
 * 505).
 */
int http_parse(const char *buf, size_t len, size_t *scan, struct http_req *req);

/* Whether req (parsed from buf) asks for exactly path: 200, 404 (another path) or 405 (a method other than GET). */
int http_route(const char *buf, const struct http_req *req, const char *path);

/* The reason phrase of status ("Not Found"); "Error" for one this file does not name. */
const char *http_reason(int status);

/*
 * A response head into out: "HTTP/1.1 STATUS REASON", Content-Type,
 * Content-Length body_len, "Connection: close", "Allow: GET" with 405, and
 * the empty line. Returns its length, or -ENOSPC if cap is too small.
 */
int http_response_head(char *out, size_t cap, int status, const char *content_type, size_t body_len);

#endif
