/* SPDX-License-Identifier: MIT */
/*
 * The executor protocol's message check (exec_proto.h), apart from the
 * executor so that oood links it and tests/fuzz/fuzz_exec fuzzes it.
 */
#include <string.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>

#include "exec_proto.h"

int exec_msg_check(const void *buf, size_t len, uint16_t *type, const void **payload, size_t *plen)
{
	struct ooo_msg_hdr h;

	if (len < sizeof(h))
		return -OOO_EPROTO;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != OOO_PROTO_MAGIC || h.version != OOO_PROTO_VERSION || h.len != len || h.flags)
		return -OOO_EPROTO;
	*type = h.type;
	*payload = (const char *)buf + sizeof(h);
	*plen = len - sizeof(h);
	switch (h.type) {
	case EXEC_MSG_READY: {
		struct exec_ready r;
		if (*plen != sizeof(r))
			return -OOO_EPROTO;
		memcpy(&r, *payload, sizeof(r));
		if (!memchr(r.name, 0, sizeof(r.name)) || !memchr(r.reason, 0, sizeof(r.reason)))
			return -OOO_EPROTO;
		return 0;
	}
	case EXEC_MSG_PING:
	case EXEC_MSG_PING | OOO_MSG_REPLY:
		return *plen <= 64 ? 0 : -OOO_EPROTO;
	case EXEC_MSG_ALLOC:
	case EXEC_MSG_FREE:
	case EXEC_MSG_IMPORT:
		return *plen == sizeof(struct exec_mem_req) ? 0 : -OOO_EPROTO;
	case EXEC_MSG_ATTACH:
	case EXEC_MSG_DETACH:
		return *plen == sizeof(struct exec_attach) ? 0 : -OOO_EPROTO;
	case EXEC_MSG_QUEUE:
		return *plen == sizeof(struct exec_queue) ? 0 : -OOO_EPROTO;
	case EXEC_MSG_MODULE_LOAD:
	case EXEC_MSG_MODULE_UNLOAD:
		return *plen == sizeof(struct exec_module) ? 0 : -OOO_EPROTO;
	case EXEC_MSG_HOST_MAP:
	case EXEC_MSG_HOST_UNMAP:
		return *plen == sizeof(struct exec_host) ? 0 : -OOO_EPROTO;
	case EXEC_MSG_KERNEL_GET: {
		struct exec_kernel_get k;
		if (*plen != sizeof(k))
			return -OOO_EPROTO;
		memcpy(&k, *payload, sizeof(k));
		return memchr(k.name, 0, sizeof(k.name)) ? 0 : -OOO_EPROTO;
	}
	case EXEC_MSG_HUNG:
	case EXEC_MSG_FAULT: {
		struct exec_hung hg;
		if (*plen != sizeof(hg))
			return -OOO_EPROTO;
		memcpy(&hg, *payload, sizeof(hg));
		return hg.n <= EXEC_HUNG_MAX ? 0 : -OOO_EPROTO;
	}
	case EXEC_MSG_PARTITIONS: {
		struct exec_partitions p;
		if (*plen != sizeof(p))
			return -OOO_EPROTO;
		memcpy(&p, *payload, sizeof(p));
		if (p.n > EXEC_PART_MAX)
			return -OOO_EPROTO;
		for (uint32_t i = 0; i < p.n; i++)
			if (!memchr(p.p[i].klass, 0, sizeof(p.p[i].klass)))
				return -OOO_EPROTO;
		return 0;
	}
	case EXEC_MSG_PARTITIONS | OOO_MSG_REPLY: {
		struct exec_partitions_reply r;
		if (*plen != sizeof(r))
			return -OOO_EPROTO;
		memcpy(&r, *payload, sizeof(r));
		return r.n <= EXEC_PART_MAX && memchr(r.reason, 0, sizeof(r.reason)) ? 0 : -OOO_EPROTO;
	}
	case EXEC_MSG_KERNEL_GET | OOO_MSG_REPLY: {
		struct exec_kernel_reply k;
		if (*plen != sizeof(k))
			return -OOO_EPROTO;
		memcpy(&k, *payload, sizeof(k));
		return memchr(k.reason, 0, sizeof(k.reason)) ? 0 : -OOO_EPROTO;
	}
	case EXEC_MSG_ALLOC | OOO_MSG_REPLY:
	case EXEC_MSG_FREE | OOO_MSG_REPLY:
	case EXEC_MSG_IMPORT | OOO_MSG_REPLY:
	case EXEC_MSG_ATTACH | OOO_MSG_REPLY:
	case EXEC_MSG_DETACH | OOO_MSG_REPLY:
	case EXEC_MSG_QUEUE | OOO_MSG_REPLY:
	case EXEC_MSG_MODULE_LOAD | OOO_MSG_REPLY:
	case EXEC_MSG_MODULE_UNLOAD | OOO_MSG_REPLY:
	case EXEC_MSG_HOST_MAP | OOO_MSG_REPLY:
	case EXEC_MSG_HOST_UNMAP | OOO_MSG_REPLY: {
		struct exec_mem_reply r;
		if (*plen != sizeof(r))
			return -OOO_EPROTO;
		memcpy(&r, *payload, sizeof(r));
		return memchr(r.reason, 0, sizeof(r.reason)) ? 0 : -OOO_EPROTO;
	}
	default:
		return -OOO_EPROTO;
	}
}
