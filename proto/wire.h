/* SPDX-License-Identifier: MIT */
/*
 * wire: encode and validate ooo protocol messages (include/ooo/proto.h).
 * Shared by libooo and oood; pure functions, no I/O, no allocation.
 */
#ifndef OOO_WIRE_H
#define OOO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ooo/proto.h>

struct wire_msg {
	struct ooo_msg_hdr hdr; /* copy of the header */
	const void *payload;    /* points into the decoded buffer */
	size_t plen;
};

enum wire_dir {
	WIRE_TO_DAEMON, /* requests: what oood accepts */
	WIRE_TO_PEER,   /* replies and notices: what a client accepts */
};

/*
 * Validate a received datagram of `len` bytes travelling in direction `dir`
 * and describe it in *m. Checks the magic, version, length, flags, type and
 * the payload layout of the type (sizes, NUL-terminated strings, list record
 * counts). Returns 0; -OOO_EVERSION when only the version is wrong (m->hdr is
 * filled, so the receiver can answer with the sequence number); or
 * -OOO_EPROTO, with m->hdr filled if the header itself was readable. *why
 * (if not NULL) gets a static reason on error.
 */
int wire_decode(const void *buf, size_t len, enum wire_dir dir, struct wire_msg *m, const char **why);

/* True if the header in *m was read (magic matched and enough bytes). */
bool wire_hdr_valid(const struct wire_msg *m);

/*
 * Build a message in buf (capacity cap): header + payload. Returns the total
 * length, or -EMSGSIZE if it exceeds cap or OOO_MSG_MAX.
 */
ssize_t wire_encode(void *buf, size_t cap, uint16_t type, uint32_t seq, int32_t status, const void *payload,
		    size_t plen);

/*
 * Build an error reply to request type `type` (OOO_MSG_REPLY is added) with
 * negative `status` and a formatted reason. Returns the length or -EMSGSIZE.
 */
ssize_t wire_encode_error(void *buf, size_t cap, uint16_t type, uint32_t seq, int32_t status, const char *fmt,
			  ...) __attribute__((format(printf, 6, 7)));

/* Copy a C string into a fixed field, truncating and always NUL-terminating. */
void wire_strcpy(char *dst, size_t cap, const char *src);

/* Replace every byte outside printable ASCII with '?', in place: peer text goes to logs and terminals. */
void wire_sanitize(char *s);

/* Static name of a message type for logs ("hello", "status"); "unknown" if none. */
const char *wire_type_name(uint16_t type);

/*
 * Text for a status, negative or positive: an OOO_E* code (which strerror
 * knows nothing of: "Unknown error 1006") or an errno value. Never NULL; the
 * string is static. ooo_strerror of libooo, and what oood's logs use for
 * any status that is not a plain errno straight from a system call.
 */
const char *wire_strerror(int err);

#endif /* OOO_WIRE_H */
