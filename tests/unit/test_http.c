/* SPDX-License-Identifier: MIT */
/* daemon/http.c: request heads of the [metrics] listener, their routes and the response heads. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../daemon/admin/http.h"

/* s parsed in one piece; *req filled on HTTP_OK. */
static int parse(const char *s, struct http_req *req)
{
	size_t scan = 0;

	return http_parse(s, strlen(s), &scan, req);
}

/* s parsed as it arrives a byte at a time: every prefix before the end of the head is HTTP_MORE. */
static int parse_bytewise(const char *s, struct http_req *req)
{
	size_t scan = 0, n = strlen(s);
	int r = HTTP_MORE;

	for (size_t i = 1; i <= n && r == HTTP_MORE; i++)
		r = http_parse(s, i, &scan, req);
	return r;
}

static int route(const char *s)
{
	struct http_req req;
	int r = parse(s, &req);

	return r == HTTP_OK ? http_route(s, &req, "/metrics") : r;
}

static void test_valid(void **state)
{
	static const char get11[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9400\r\nUser-Agent: Prometheus/2.45\r\n"
				    "Accept: text/plain;version=0.0.4\r\nAccept-Encoding: gzip\r\n\r\n";
	struct http_req req;

	(void)state;
	assert_int_equal(parse(get11, &req), HTTP_OK);
	assert_string_equal(req.method, "GET");
	assert_int_equal(req.minor, 1);
	assert_int_equal(req.head_len, strlen(get11));
	assert_int_equal(req.path_len, 8);
	assert_memory_equal(get11 + req.path_off, "/metrics", 8);
	assert_int_equal(http_route(get11, &req, "/metrics"), HTTP_OK);
	assert_int_equal(parse_bytewise(get11, &req), HTTP_OK);
	assert_int_equal(req.head_len, strlen(get11));

	/* HTTP/1.0 needs no Host; bare LF line ends; leading empty lines; a body after the head is not looked at */
	assert_int_equal(parse("GET /metrics HTTP/1.0\r\n\r\n", &req), HTTP_OK);
	assert_int_equal(req.minor, 0);
	assert_int_equal(parse_bytewise("\r\n\nGET /metrics HTTP/1.0\n\n", &req), HTTP_OK);
	assert_int_equal(req.head_len, strlen("\r\n\nGET /metrics HTTP/1.0\n\n"));
	assert_int_equal(parse("GET /metrics HTTP/1.0\n\nJUNK", &req), HTTP_OK);
	assert_int_equal(req.head_len, strlen("GET /metrics HTTP/1.0\n\n"));
	/* a query and absolute-form; Content-Length 0 is no body; values may hold obs-text */
	assert_int_equal(route("GET /metrics?x=1 HTTP/1.0\r\n\r\n"), HTTP_OK);
	assert_int_equal(route("GET http://h:9400/metrics HTTP/1.1\r\nHost: h\r\n\r\n"), HTTP_OK);
	assert_int_equal(route("GET /metrics HTTP/1.1\r\nhost:h\r\nContent-Length: 0\r\nX: caf\xc3\xa9\t \r\n\r\n"), HTTP_OK);
	assert_int_equal(route("GET /metrics HTTP/1.0\r\nContent-Length: 0\r\ncontent-length: 0\r\n\r\n"), HTTP_OK);
}

static void test_routes(void **state)
{
	(void)state;
	assert_int_equal(route("GET / HTTP/1.0\r\n\r\n"), HTTP_NOT_FOUND);
	assert_int_equal(route("GET /metrics/ HTTP/1.0\r\n\r\n"), HTTP_NOT_FOUND);
	assert_int_equal(route("GET /metricsx HTTP/1.0\r\n\r\n"), HTTP_NOT_FOUND);
	assert_int_equal(route("GET /Metrics HTTP/1.0\r\n\r\n"), HTTP_NOT_FOUND);
	assert_int_equal(route("OPTIONS * HTTP/1.0\r\n\r\n"), HTTP_NOT_FOUND);
	assert_int_equal(route("POST /metrics HTTP/1.0\r\n\r\n"), HTTP_BAD_METHOD);
	assert_int_equal(route("HEAD /metrics HTTP/1.0\r\n\r\n"), HTTP_BAD_METHOD);
	assert_int_equal(route("get /metrics HTTP/1.0\r\n\r\n"), HTTP_BAD_METHOD); /* methods are case-sensitive */
	assert_int_equal(route("DELETE /other HTTP/1.0\r\n\r\n"), HTTP_NOT_FOUND);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"GET /metrics\r\n\r\n",                    /* no version */
		"GET  /metrics HTTP/1.0\r\n\r\n",          /* two spaces */
		"GET /metrics HTTP/1.0 \r\n\r\n",          /* trailing space */
		"GET metrics HTTP/1.0\r\n\r\n",            /* not origin-form */
		"GET http:///metrics HTTP/1.0\r\n\r\n",    /* absolute-form without a host */
		"G(T /metrics HTTP/1.0\r\n\r\n",           /* not a token */
		"GETTINGTHEMETRICSNOW /metrics HTTP/1.0\r\n\r\n", /* method over HTTP_METHOD_MAX */
		"GET /met\x01rics HTTP/1.0\r\n\r\n",       /* control byte in the target */
		"GET /metrics HTTP/1.x\r\n\r\n",
		"GET /metrics http/1.0\r\n\r\n",
		"GET /metrics HTTP/1.0\rX\r\n\r\n",        /* CR inside a line */
		"GET /metrics HTTP/1.0\r\nNoColon\r\n\r\n",
		"GET /metrics HTTP/1.0\r\n: empty name\r\n\r\n",
		"GET /metrics HTTP/1.0\r\nBad Name: x\r\n\r\n",
		"GET /metrics HTTP/1.0\r\nName : x\r\n\r\n",
		"GET /metrics HTTP/1.0\r\nA: b\r\n folded\r\n\r\n", /* obs-fold */
		"GET /metrics HTTP/1.0\r\nA: b\x7f\r\n\r\n",
		"GET /metrics HTTP/1.0\r\nA: b\0" "c\r\n\r\n",
		"GET /metrics HTTP/1.1\r\n\r\n",           /* 1.1 without Host */
		"GET /metrics HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET /metrics HTTP/1.0\r\nContent-Length: -1\r\n\r\n",
		"GET /metrics HTTP/1.0\r\nContent-Length: 1,1\r\n\r\n",
		"GET /metrics HTTP/1.0\r\nContent-Length: 99999999999999999999999\r\n\r\n",
		"GET /metrics HTTP/1.0\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"\x16\x03\x01\x02\x01\x01\xfc\x03\x03\n\n", /* TLS to a plain listener */
	};
	struct http_req req;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		/* the NUL case: its length is written out */
		size_t n = i == 17 ? strlen(bad[i]) + 1 + strlen(bad[i] + strlen(bad[i]) + 1) : strlen(bad[i]);
		size_t scan = 0;
		int r = http_parse(bad[i], n, &scan, &req);

		if (r != HTTP_BAD_REQUEST)
			fail_msg("case %zu: got %d, want 400", i, r);
	}
	assert_int_equal(parse("GET /metrics HTTP/2.0\r\n\r\n", &req), HTTP_BAD_VERSION);
	assert_int_equal(parse("GET /metrics HTTP/0.9\r\n\r\n", &req), HTTP_BAD_VERSION);
}

static void test_limits(void **state)
{
	char *big = malloc(HTTP_HEAD_MAX + 64);
	struct http_req req;
	size_t n, scan = 0;

	(void)state;
	assert_non_null(big);
	/* a head that has not ended within HTTP_HEAD_MAX bytes */
	n = (size_t)snprintf(big, 64, "GET /metrics HTTP/1.0\r\nX: ");
	memset(big + n, 'a', HTTP_HEAD_MAX + 32 - n);
	big[HTTP_HEAD_MAX + 32] = '\0';
	assert_int_equal(http_parse(big, HTTP_HEAD_MAX - 1, &scan, &req), HTTP_MORE);
	assert_int_equal(http_parse(big, HTTP_HEAD_MAX, &scan, &req), HTTP_HEAD_TOO_LARGE);
	assert_int_equal(parse(big, &req), HTTP_HEAD_TOO_LARGE);
	/* exactly HTTP_HEAD_MAX bytes with its end: served; one more: too large */
	memcpy(big + HTTP_HEAD_MAX - 4, "\r\n\r\n", 4);
	big[HTTP_HEAD_MAX] = '\0';
	assert_int_equal(parse(big, &req), HTTP_OK);
	assert_int_equal(req.head_len, HTTP_HEAD_MAX);
	memmove(big + HTTP_HEAD_MAX - 3, "\r\n\r\n", 5);
	assert_int_equal(parse(big, &req), HTTP_HEAD_TOO_LARGE);
	/* leading empty lines count */
	memset(big, '\n', HTTP_HEAD_MAX);
	big[HTTP_HEAD_MAX] = '\0';
	assert_int_equal(parse(big, &req), HTTP_HEAD_TOO_LARGE);
	/* more than HTTP_FIELDS_MAX fields */
	n = (size_t)sprintf(big, "GET /metrics HTTP/1.0\r\n");
	for (unsigned i = 0; i <= HTTP_FIELDS_MAX; i++)
		n += (size_t)sprintf(big + n, "X%u: y\r\n", i);
	strcpy(big + n, "\r\n");
	assert_int_equal(parse(big, &req), HTTP_HEAD_TOO_LARGE);
	/* HTTP_FIELDS_MAX fields are fine */
	n = (size_t)sprintf(big, "GET /metrics HTTP/1.0\r\n");
	for (unsigned i = 0; i < HTTP_FIELDS_MAX; i++)
		n += (size_t)sprintf(big + n, "X%u: y\r\n", i);
	strcpy(big + n, "\r\n");
	assert_int_equal(parse(big, &req), HTTP_OK);
	/* a body is never read */
	assert_int_equal(parse("GET /metrics HTTP/1.0\r\nContent-Length: 5\r\n\r\nhello", &req), HTTP_TOO_LARGE);
	assert_int_equal(parse("POST /metrics HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", &req),
			 HTTP_TOO_LARGE);
	free(big);
}

static void test_response(void **state)
{
	char out[256];
	int n;

	(void)state;
	n = http_response_head(out, sizeof(out), 200, "text/plain", 1234);
	assert_true(n > 0);
	assert_string_equal(out, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1234\r\n"
				 "Connection: close\r\n\r\n");
	n = http_response_head(out, sizeof(out), 405, "text/plain", 0);
	assert_int_equal(n, (int)strlen(out));
	assert_non_null(strstr(out, "HTTP/1.1 405 Method Not Allowed\r\n"));
	assert_non_null(strstr(out, "\r\nAllow: GET\r\n\r\n"));
	assert_int_equal(http_response_head(out, 20, 200, "text/plain", 0), -ENOSPC);
	assert_string_equal(http_reason(431), "Request Header Fields Too Large");
	assert_string_equal(http_reason(299), "Error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_response),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
