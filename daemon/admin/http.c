/* SPDX-License-Identifier: MIT */
/* HTTP request heads and response heads for the [metrics] listener: see http.h. */
#include "http.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 tchar: the bytes of a method or a field name */
static bool is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* The bytes a field value may hold: HT, SP, VCHAR, obs-text. */
static bool is_vbyte(unsigned char c)
{
	return c == '\t' || (c >= ' ' && c != 0x7f);
}

/* Leading empty lines (RFC 9112 2.2: a server ignores them): their length, or -1 while one is cut short. */
static long skip_empty(const char *buf, size_t len)
{
	size_t i = 0;

	for (;;) {
		if (i < len && buf[i] == '\n') {
			i++;
		} else if (i < len && buf[i] == '\r') {
			if (i + 1 >= len)
				return -1;
			if (buf[i + 1] != '\n')
				return (long)i; /* the request line's own error */
			i += 2;
		} else {
			return (long)i;
		}
	}
}

/*
 * The end of the head: just past the LF that follows another LF (CR
 * allowed between), searching from *scan. 0 if not there yet (*scan set
 * to where the next search starts).
 */
static size_t head_end(const char *buf, size_t len, size_t start, size_t *scan)
{
	size_t i = *scan > start ? *scan : start;

	for (; i < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (i + 1 < len && buf[i + 1] == '\n')
			return i + 2;
		if (i + 2 < len && buf[i + 1] == '\r' && buf[i + 2] == '\n')
			return i + 3;
		if (i + 2 >= len)
			break; /* the blank line may still come */
	}
	*scan = i < len ? i : len;
	return 0;
}

/* The line at *p (before end): its length without CR LF; *p moves past it. -1: a CR inside it. */
static long next_line(const char *buf, size_t end, size_t *p, size_t *line)
{
	const char *nl = memchr(buf + *p, '\n', end - *p);
	size_t n = (size_t)(nl - (buf + *p)); /* every line of the head ends in LF */

	*line = *p;
	*p += n + 1;
	if (n && buf[*line + n - 1] == '\r')
		n--;
	if (memchr(buf + *line, '\r', n))
		return -1;
	return (long)n;
}

/* The request line l (n bytes) into req. */
static int request_line(const char *buf, size_t l, size_t n, struct http_req *req)
{
	const char *s = buf + l, *sp1, *sp2, *v, *t;
	size_t m, tlen, vlen;

	sp1 = memchr(s, ' ', n);
	if (!sp1)
		return HTTP_BAD_REQUEST;
	m = (size_t)(sp1 - s);
	if (!m || m > HTTP_METHOD_MAX)
		return HTTP_BAD_REQUEST;
	for (size_t i = 0; i < m; i++) {
		if (!is_tchar((unsigned char)s[i]))
			return HTTP_BAD_REQUEST;
	}
	t = sp1 + 1;
	sp2 = memchr(t, ' ', n - m - 1);
	if (!sp2)
		return HTTP_BAD_REQUEST;
	tlen = (size_t)(sp2 - t);
	v = sp2 + 1;
	vlen = n - (size_t)(v - s);
	if (!tlen)
		return HTTP_BAD_REQUEST;
	for (size_t i = 0; i < tlen; i++) {
		if ((unsigned char)t[i] <= ' ' || (unsigned char)t[i] >= 0x7f)
			return HTTP_BAD_REQUEST;
	}
	if (vlen != 8 || memcmp(v, "HTTP/", 5) || v[5] < '0' || v[5] > '9' || v[6] != '.' || v[7] < '0' || v[7] > '9')
		return HTTP_BAD_REQUEST;
	if (v[5] != '1' || (v[7] != '0' && v[7] != '1'))
		return HTTP_BAD_VERSION;
	memcpy(req->method, s, m);
	req->method[m] = '\0';
	req->minor = v[7] - '0';

	/* absolute-form: skip the scheme and the authority */
	if (tlen > 7 && (!strncasecmp(t, "http://", 7) || (tlen > 8 && !strncasecmp(t, "https://", 8)))) {
		const char *a = t + (t[4] == ':' ? 7 : 8), *e = t + tlen;

		while (a < e && *a != '/' && *a != '?' && *a != '#')
			a++;
		if (a == t + (t[4] == ':' ? 7 : 8))
			return HTTP_BAD_REQUEST; /* no host */
		tlen -= (size_t)(a - t);
		t = a;
	} else if (t[0] != '/' && !(tlen == 1 && t[0] == '*')) {
		return HTTP_BAD_REQUEST;
	}
	req->path_off = (size_t)(t - buf);
	req->path_len = 0;
	while (req->path_len < tlen && t[req->path_len] != '?' && t[req->path_len] != '#')
		req->path_len++;
	return HTTP_OK;
}

/* Content-Length's value: 0 and *v, or -1 if it is not a decimal number that fits. */
static int content_length(const char *s, size_t n, uint64_t *v)
{
	*v = 0;
	if (!n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' || *v > (UINT64_MAX - 9) / 10)
			return -1;
		*v = *v * 10 + (uint64_t)(s[i] - '0');
	}
	return 0;
}

int http_parse(const char *buf, size_t len, size_t *scan, struct http_req *req)
{
	uint64_t clen = 0;
	bool have_clen = false, chunked = false;
	unsigned nfields = 0, nhost = 0;
	size_t end, p, l, start;
	long n, lead;
	int r;

	lead = skip_empty(buf, len < HTTP_HEAD_MAX ? len : HTTP_HEAD_MAX);
	if (lead < 0 || (size_t)lead >= len)
		return len >= HTTP_HEAD_MAX ? HTTP_HEAD_TOO_LARGE : HTTP_MORE;
	start = (size_t)lead;
	end = head_end(buf, len < HTTP_HEAD_MAX ? len : HTTP_HEAD_MAX, start, scan);
	if (!end)
		return len >= HTTP_HEAD_MAX ? HTTP_HEAD_TOO_LARGE : HTTP_MORE;

	memset(req, 0, sizeof(*req));
	p = start;
	n = next_line(buf, end, &p, &l);
	if (n < 0)
		return HTTP_BAD_REQUEST;
	r = request_line(buf, l, (size_t)n, req);
	if (r != HTTP_OK)
		return r;
	while ((n = next_line(buf, end, &p, &l)) != 0) {
		const char *f = buf + l, *colon, *v;
		size_t name_len, vlen;

		if (n < 0 || f[0] == ' ' || f[0] == '\t') /* a CR inside, or obs-fold */
			return HTTP_BAD_REQUEST;
		if (++nfields > HTTP_FIELDS_MAX)
			return HTTP_HEAD_TOO_LARGE;
		colon = memchr(f, ':', (size_t)n);
		if (!colon || colon == f)
			return HTTP_BAD_REQUEST;
		name_len = (size_t)(colon - f);
		for (size_t i = 0; i < name_len; i++) {
			if (!is_tchar((unsigned char)f[i]))
				return HTTP_BAD_REQUEST;
		}
		v = colon + 1;
		vlen = (size_t)n - name_len - 1;
		for (size_t i = 0; i < vlen; i++) {
			if (!is_vbyte((unsigned char)v[i]))
				return HTTP_BAD_REQUEST;
		}
		while (vlen && (*v == ' ' || *v == '\t')) {
			v++;
			vlen--;
		}
		while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
			vlen--;
		if (name_len == 4 && !strncasecmp(f, "host", 4)) {
			nhost++;
		} else if (name_len == 14 && !strncasecmp(f, "content-length", 14)) {
			uint64_t c;

			if (content_length(v, vlen, &c) < 0 || (have_clen && c != clen))
				return HTTP_BAD_REQUEST;
			have_clen = true;
			clen = c;
		} else if (name_len == 17 && !strncasecmp(f, "transfer-encoding", 17)) {
			chunked = true;
		}
	}
	/* RFC 9112 3.2: HTTP/1.1 has exactly one Host; none may have more */
	if (nhost > 1 || (req->minor == 1 && nhost != 1))
		return HTTP_BAD_REQUEST;
	if (chunked || clen)
		return HTTP_TOO_LARGE;
	req->head_len = end;
	return HTTP_OK;
}

int http_route(const char *buf, const struct http_req *req, const char *path)
{
	size_t n = strlen(path);

	if (req->path_len != n || memcmp(buf + req->path_off, path, n))
		return HTTP_NOT_FOUND;
	return strcmp(req->method, "GET") ? HTTP_BAD_METHOD : HTTP_OK;
}

const char *http_reason(int status)
{
	switch (status) {
	case HTTP_OK: return "OK";
	case HTTP_BAD_REQUEST: return "Bad Request";
	case HTTP_NOT_FOUND: return "Not Found";
	case HTTP_BAD_METHOD: return "Method Not Allowed";
	case HTTP_TOO_LARGE: return "Content Too Large";
	case HTTP_HEAD_TOO_LARGE: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case HTTP_UNAVAILABLE: return "Service Unavailable";
	case HTTP_BAD_VERSION: return "HTTP Version Not Supported";
	default: return "Error";
	}
}

int http_response_head(char *out, size_t cap, int status, const char *content_type, size_t body_len)
{
	int n = snprintf(out, cap,
			 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n",
			 status, http_reason(status), content_type, body_len,
			 status == HTTP_BAD_METHOD ? "Allow: GET\r\n" : "");

	if (n < 0 || (size_t)n >= cap)
		return -ENOSPC;
	return n;
}
