/* SPDX-License-Identifier: MIT */
/*
 * gRPC's framing over HTTP/2, the part that is not HTTP/2 itself: each
 * message in a DATA stream is a 5-byte prefix (1 byte "compressed" flag,
 * 4 bytes big-endian length) and then the message; the call's status
 * travels in the trailers grpc-status and grpc-message, the latter
 * percent-encoded. Pure: no I/O, no allocation; fuzzed (tests/fuzz/fuzz_grpc.c).
 */
#ifndef OOO_TOOLS_K8S_GRPC_FRAME_H
#define OOO_TOOLS_K8S_GRPC_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GRPC_PREFIX 5u
/* The largest message either side accepts: gRPC's default receive limit. */
#define GRPC_MSG_MAX (4u << 20)

/* gRPC status codes used here */
enum {
	GRPC_OK = 0,
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_UNIMPLEMENTED = 12,
	GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14,
};

/* Write the prefix of an uncompressed message of len bytes (len <= UINT32_MAX) into p. */
void grpc_frame_prefix(uint8_t p[GRPC_PREFIX], size_t len);

/*
 * Find the first whole message in buf[0, n). Returns the bytes it takes,
 * prefix included (> 0), with *msg pointing into buf and *len its length;
 * 0 when buf does not yet hold a whole message (*msg, *len untouched);
 * -EMSGSIZE when its length exceeds max; -ENOTSUP when its compressed
 * flag is set (no compression is negotiated, so a peer must not set it)
 * or is neither 0 nor 1 (-EPROTO).
 */
ssize_t grpc_frame_next(const uint8_t *buf, size_t n, size_t max, const uint8_t **msg, size_t *len);

/*
 * grpc-message's encoding: bytes outside 0x20..0x7e and '%' become %XX.
 * Writes at most cap bytes, NUL included, cutting the text rather than an
 * escape; returns the length written (without the NUL). cap 0 writes nothing.
 */
size_t grpc_pct_encode(const char *in, char *out, size_t cap);

/*
 * The method of a request path "/PACKAGE.SERVICE/METHOD": the index of path
 * in names[0, n) (full paths), or -1 when it is none of them.
 */
int grpc_method(const char *path, size_t path_len, const char *const *names, size_t n);

#endif
