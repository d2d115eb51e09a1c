/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the executor protocol's message check
 * (exec_msg_check, proto/exec_proto.c), what oood runs on every
 * message from an executor (an unprivileged process that handles tenants'
 * input) and the executor on every message from oood. The input is one
 * message.
 *
 * Aborts when an accepted message
 *   - has a header other than the protocol's, or a length other than its own;
 *   - has a payload that does not start right after the header or does not
 *     reach the end of the message;
 *   - is of a type with a fixed payload and its payload has another size,
 *     or a name without its NUL, or a count past its array (exec_hung.n,
 *     exec_partitions.n).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>

#include "../../proto/exec_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ooo_msg_hdr h;
	const void *payload = NULL;
	size_t plen = 0;
	uint16_t type = 0;

	if (exec_msg_check(data, size, &type, &payload, &plen) < 0)
		return 0;
	if (size < sizeof(h))
		abort();
	memcpy(&h, data, sizeof(h));
	if (h.magic != OOO_PROTO_MAGIC || h.version != OOO_PROTO_VERSION || h.len != size || h.flags || h.type != type)
		abort();
	if (payload != data + sizeof(h) || plen != size - sizeof(h))
		abort();
	switch (type) {
	case EXEC_MSG_READY: {
		struct exec_ready r;

		if (plen != sizeof(r))
			abort();
		memcpy(&r, payload, sizeof(r));
		if (!memchr(r.name, 0, sizeof(r.name)) || !memchr(r.reason, 0, sizeof(r.reason)))
			abort();
		break;
	}
	case EXEC_MSG_HUNG:
	case EXEC_MSG_FAULT: {
		struct exec_hung g;

		if (plen != sizeof(g))
			abort();
		memcpy(&g, payload, sizeof(g));
		if (g.n > EXEC_HUNG_MAX)
			abort();
		break;
	}
	case EXEC_MSG_KERNEL_GET: {
		struct exec_kernel_get k;

		if (plen != sizeof(k))
			abort();
		memcpy(&k, payload, sizeof(k));
		if (!memchr(k.name, 0, sizeof(k.name)))
			abort();
		break;
	}
	case EXEC_MSG_PARTITIONS: {
		struct exec_partitions p;

		if (plen != sizeof(p))
			abort();
		memcpy(&p, payload, sizeof(p));
		if (p.n > EXEC_PART_MAX)
			abort();
		for (uint32_t i = 0; i < p.n; i++)
			if (!memchr(p.p[i].klass, 0, sizeof(p.p[i].klass)))
				abort();
		break;
	}
	case EXEC_MSG_ATTACH:
	case EXEC_MSG_DETACH:
		if (plen != sizeof(struct exec_attach))
			abort();
		break;
	case EXEC_MSG_QUEUE:
		if (plen != sizeof(struct exec_queue))
			abort();
		break;
	default:
		break;
	}
	return 0;
}
