/* SPDX-License-Identifier: MIT */
#include "wire.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <ooo/ooo.h>

_Static_assert(sizeof(struct ooo_msg_hdr) == 24, "header layout is ABI");
_Static_assert(sizeof(struct ooo_msg_hello) == 72, "hello layout is ABI");
_Static_assert(sizeof(struct ooo_msg_hello_reply) % 8 == 0, "no tail padding");
_Static_assert(sizeof(struct ooo_msg_status) % 8 == 0, "no tail padding");
_Static_assert(sizeof(struct ooo_tenant_rec) % 8 == 0, "no tail padding");
_Static_assert(sizeof(struct ooo_session_rec) % 8 == 0, "no tail padding");
_Static_assert(sizeof(struct ooo_device_rec) % 8 == 0, "no tail padding");
_Static_assert(sizeof(struct ooo_device_rec) != sizeof(struct ooo_tenant_rec) &&
		       sizeof(struct ooo_device_rec) != sizeof(struct ooo_session_rec),
	       "check_list tells records apart by size");
_Static_assert(sizeof(struct ooo_sched_rec) % 8 == 0, "no tail padding");
_Static_assert(sizeof(struct ooo_sched_rec) != sizeof(struct ooo_device_rec) &&
		       sizeof(struct ooo_sched_rec) != sizeof(struct ooo_tenant_rec) &&
		       sizeof(struct ooo_sched_rec) != sizeof(struct ooo_session_rec),
	       "check_list tells records apart by size");
_Static_assert(sizeof(struct ooo_part_gpu_rec) % 8 == 0, "no tail padding");
_Static_assert(sizeof(struct ooo_part_gpu_rec) != sizeof(struct ooo_sched_rec) &&
		       sizeof(struct ooo_part_gpu_rec) != sizeof(struct ooo_device_rec) &&
		       sizeof(struct ooo_part_gpu_rec) != sizeof(struct ooo_tenant_rec) &&
		       sizeof(struct ooo_part_gpu_rec) != sizeof(struct ooo_session_rec) &&
		       sizeof(struct ooo_part_gpu_rec) != sizeof(struct ooo_proc_rec) &&
		       sizeof(struct ooo_part_gpu_rec) != sizeof(struct ooo_lease_rec),
	       "check_list tells records apart by size");
_Static_assert(OOO_MSG_MAX >= sizeof(struct ooo_msg_hdr) + sizeof(struct ooo_msg_status), "status fits");

/* The OOO_E* codes' text, by code - OOO_EPROTO. */
static const char *const ooo_errors[] = {
	[OOO_EPROTO - OOO_EPROTO] = "Protocol error between libooo and oood",
	[OOO_EVERSION - OOO_EPROTO] = "libooo and oood speak different protocol versions",
	[OOO_EDENIED - OOO_EPROTO] = "The ooo policy does not admit this user",
	[OOO_ELIMIT - OOO_EPROTO] = "An ooo resource limit was reached",
	[OOO_ESHUTDOWN - OOO_EPROTO] = "oood is shutting down",
	[OOO_EREVOKED - OOO_EPROTO] = "A policy reload revoked this session",
	[OOO_ENODEV - OOO_EPROTO] = "No usable GPU",
	[OOO_EDEVRESET - OOO_EPROTO] = "The GPU executor was restarted",
	[OOO_EFAULT - OOO_EPROTO] = "A kernel faulted on the GPU",
	[OOO_ECLOSED - OOO_EPROTO] = "oood closed the session",
	[OOO_ENOTADMIN - OOO_EPROTO] = "Not an ooo administrator",
	[OOO_EHUNG - OOO_EPROTO] = "A kernel ran past the GPU's time limit",
};
_Static_assert(sizeof(ooo_errors) / sizeof(ooo_errors[0]) == OOO_EMAX - OOO_EPROTO, "every OOO_E code has a text");

const char *wire_strerror(int err)
{
	const char *s;

	if (err == INT_MIN)
		return "Unknown error";
	if (err < 0)
		err = -err;
	if (err == 0)
		return "Success";
	if (err >= OOO_EPROTO && err < OOO_EMAX)
		return ooo_errors[err - OOO_EPROTO] ? ooo_errors[err - OOO_EPROTO] : "Unknown ooo error";
	s = strerrordesc_np(err);
	return s ? s : "Unknown error";
}

static bool has_nul(const char *field, size_t cap)
{
	return memchr(field, '\0', cap) != NULL;
}

#define FIELD_OK(p, f) has_nul((p)->f, sizeof((p)->f))

bool wire_hdr_valid(const struct wire_msg *m)
{
	return m->hdr.magic == OOO_PROTO_MAGIC;
}

const char *wire_type_name(uint16_t type)
{
	switch (type & ~OOO_MSG_REPLY) {
	case OOO_MSG_HELLO: return "hello";
	case OOO_MSG_PING: return "ping";
	case OOO_MSG_BYE: return "bye";
	case OOO_MSG_NOTICE: return "notice";
	case OOO_MSG_BUF_ALLOC: return "buffer alloc";
	case OOO_MSG_BUF_FREE: return "buffer free";
	case OOO_MSG_BUF_EXPORT: return "buffer export";
	case OOO_MSG_ATTACH: return "attach";
	case OOO_MSG_QUEUE_CREATE: return "queue create";
	case OOO_MSG_QUEUE_DESTROY: return "queue destroy";
	case OOO_MSG_MODULE_LOAD: return "module load";
	case OOO_MSG_MODULE_UNLOAD: return "module unload";
	case OOO_MSG_KERNEL_GET: return "kernel get";
	case OOO_MSG_HOST_ALLOC: return "host alloc";
	case OOO_MSG_HOST_FREE: return "host free";
	case OOO_MSG_STATUS: return "status";
	case OOO_MSG_TENANTS: return "tenants";
	case OOO_MSG_SESSIONS: return "sessions";
	case OOO_MSG_RELOAD: return "reload";
	case OOO_MSG_DEVICES: return "devices";
	case OOO_MSG_SCHED: return "sched";
	case OOO_MSG_TELEMETRY: return "telemetry";
	case OOO_MSG_PROCS: return "procs";
	case OOO_MSG_TRACE: return "trace";
	case OOO_MSG_LEASE: return "lease";
	case OOO_MSG_LEASES: return "leases";
	case OOO_MSG_EVICT: return "evict";
	case OOO_MSG_MPS: return "mps";
	case OOO_MSG_MPS_RUN: return "mps run";
	case OOO_MSG_PARTITIONS: return "partitions";
	case OOO_MSG_PARTITION_SET: return "partition set";
	case OOO_MSG_PARDON: return "pardon";
	default: return "unknown";
	}
}

_Static_assert(OOO_MODULE_MAX_BYTES == 256u << 20, "check_request's module load reason says 256 MiB");

/* Refuse the message with `text` (a static reason) when cond holds. */
#define REFUSE_IF(cond, text)                                                                              \
	do {                                                                                               \
		if (cond) {                                                                                \
			*why = text;                                                                       \
			return -OOO_EPROTO;                                                                \
		}                                                                                          \
	} while (0)

/*
 * A request's payload must be a T, called `what` in the reason. Checked
 * before its fields: a payload of the right size with a bad field is refused
 * for that field, never as "the wrong size".
 */
#define REQ_SIZE(T, what) REFUSE_IF(n != sizeof(T), what " payload has the wrong size")

/* A request's payload, as the daemon accepts it. Each refusal names what is wrong, one thing at a time. */
static int check_request(const struct wire_msg *m, const char **why)
{
	const void *p = m->payload;
	size_t n = m->plen;

	REFUSE_IF(m->hdr.status != 0, "request with a non-zero status");
	switch (m->hdr.type) {
	case OOO_MSG_HELLO: {
		const struct ooo_msg_hello *h = p;
		REQ_SIZE(*h, "hello");
		REFUSE_IF(h->flags, "hello with unknown flags");
		REFUSE_IF(h->reserved, "hello reserved field must be 0");
		REFUSE_IF(!FIELD_OK(h, name), "hello name is not NUL-terminated");
		return 0;
	}
	case OOO_MSG_PING:
		REFUSE_IF(n > OOO_PING_MAX, "ping payload larger than OOO_PING_MAX");
		return 0;
	case OOO_MSG_BUF_ALLOC: {
		const struct ooo_msg_buf_alloc *a = p;
		REQ_SIZE(*a, "buffer alloc");
		REFUSE_IF(a->flags, "buffer alloc with unknown flags");
		return 0;
	}
	case OOO_MSG_ATTACH: {
		const struct ooo_msg_attach *a = p;
		REQ_SIZE(*a, "attach");
		REFUSE_IF(a->flags, "attach with unknown flags");
		return 0;
	}
	case OOO_MSG_QUEUE_CREATE: {
		const struct ooo_msg_queue_create *q = p;
		REQ_SIZE(*q, "queue create");
		REFUSE_IF(q->flags, "queue create with unknown flags");
		REFUSE_IF(q->reserved, "queue create reserved field must be 0");
		REFUSE_IF(q->priority < -1 || q->priority > 99, "queue create priority out of range (-1..99)");
		return 0;
	}
	case OOO_MSG_MODULE_LOAD: {
		const struct ooo_msg_module_load *l = p;
		REQ_SIZE(*l, "module load");
		REFUSE_IF(l->flags, "module load with unknown flags");
		REFUSE_IF(!l->len || l->len > OOO_MODULE_MAX_BYTES, "module load length is 0 or over 256 MiB");
		REFUSE_IF(!l->kind || l->kind > OOO_MODULE_CUDA_C, "module load of an unknown kind");
		return 0;
	}
	case OOO_MSG_HOST_ALLOC:
	case OOO_MSG_HOST_FREE: {
		const struct ooo_msg_host *h = p;
		REQ_SIZE(*h, "host region");
		REFUSE_IF(h->reserved, "host region reserved field must be 0");
		return 0;
	}
	case OOO_MSG_MODULE_UNLOAD:
		REQ_SIZE(struct ooo_msg_module, "module");
		return 0;
	case OOO_MSG_KERNEL_GET: {
		const struct ooo_msg_kernel_get *k = p;
		REQ_SIZE(*k, "kernel get");
		REFUSE_IF(!FIELD_OK(k, name) || !k->name[0], "kernel get name is empty or not NUL-terminated");
		return 0;
	}
	case OOO_MSG_QUEUE_DESTROY: {
		const struct ooo_msg_queue *q = p;
		REQ_SIZE(*q, "queue");
		REFUSE_IF(q->reserved, "queue reserved field must be 0");
		return 0;
	}
	case OOO_MSG_BUF_FREE:
	case OOO_MSG_BUF_EXPORT:
		REQ_SIZE(struct ooo_msg_buf_ref, "buffer reference");
		return 0;
	case OOO_MSG_TRACE: {
		const struct ooo_msg_trace *t = p;
		REQ_SIZE(*t, "trace");
		REFUSE_IF(t->op != OOO_TRACE_ADD && t->op != OOO_TRACE_REMOVE, "trace op is neither add nor remove");
		REFUSE_IF(!t->pid || t->pid > 0x7fffffffu, "trace pid out of range");
		return 0;
	}
	case OOO_MSG_LEASE: {
		const struct ooo_msg_lease_req *l = p;
		REQ_SIZE(*l, "lease");
		REFUSE_IF(l->flags, "lease with unknown flags");
		REFUSE_IF(l->sm_pct > 100, "lease share over 100%");
		REFUSE_IF(l->priority > OOO_LEASE_PRIO_BELOW, "lease priority out of range (0..2)");
		REFUSE_IF(!FIELD_OK(l, class_name) || !FIELD_OK(l, cmd), "lease: a string is not NUL-terminated");
		return 0;
	}
	case OOO_MSG_EVICT: {
		const struct ooo_msg_evict *e = p;
		REQ_SIZE(*e, "evict");
		REFUSE_IF(!e->pid || e->pid > 0x7fffffffu, "evict pid out of range");
		REFUSE_IF(e->grace_ms > 600000, "evict grace over 600000 ms");
		return 0;
	}
	case OOO_MSG_MPS_RUN: {
		const struct ooo_msg_mps_run *r = p;
		REQ_SIZE(*r, "mps run");
		REFUSE_IF(!FIELD_OK(r, line), "mps run line is not NUL-terminated");
		return 0;
	}
	case OOO_MSG_PARDON: {
		const struct ooo_msg_pardon *r = p;
		REQ_SIZE(*r, "pardon");
		REFUSE_IF(r->reserved, "pardon reserved field must be 0");
		return 0;
	}
	case OOO_MSG_PARTITION_SET: {
		const struct ooo_msg_partition_set *r = p;
		REQ_SIZE(*r, "partition set");
		REFUSE_IF(!FIELD_OK(r, class_name), "partition set class name is not NUL-terminated");
		REFUSE_IF(r->reset > 1, "partition set reset is neither 0 nor 1");
		REFUSE_IF(r->reset && r->sms, "partition set reset with SMs");
		return 0;
	}
	case OOO_MSG_BYE:
	case OOO_MSG_STATUS:
	case OOO_MSG_RELOAD:
	case OOO_MSG_TELEMETRY:
	case OOO_MSG_MPS:
		REFUSE_IF(n != 0, "unexpected payload");
		return 0;
	case OOO_MSG_TENANTS:
	case OOO_MSG_SESSIONS:
	case OOO_MSG_DEVICES:
	case OOO_MSG_SCHED:
	case OOO_MSG_PROCS:
	case OOO_MSG_LEASES:
	case OOO_MSG_PARTITIONS: {
		const struct ooo_msg_list_req *r = p;
		REQ_SIZE(*r, "list request");
		REFUSE_IF(r->reserved, "list request reserved field must be 0");
		return 0;
	}
	default:
		*why = "unknown request type";
		return -OOO_EPROTO;
	}
}

static int check_list(const struct wire_msg *m, size_t rec_size, const char **why)
{
	const struct ooo_msg_list *l = m->payload;
	const char *rec;

	if (m->plen < sizeof(*l)) {
		*why = "list reply shorter than its header";
		return -OOO_EPROTO;
	}
	if (l->rec_size != rec_size || l->count > l->total || l->offset > l->total - l->count ||
	    (m->plen - sizeof(*l)) != (size_t)l->count * rec_size) {
		*why = "list reply record count does not match its size";
		return -OOO_EPROTO;
	}
	rec = (const char *)(l + 1);
	for (uint32_t i = 0; i < l->count; i++, rec += rec_size) {
		if (rec_size == sizeof(struct ooo_sched_rec)) {
			struct ooo_sched_rec sr;
			memcpy(&sr, rec, sizeof(sr));
			if (sr.have > 1 || sr.c.nclasses > OOO_SCHED_CLASSES || sr.c.npartitions > OOO_SCHED_PARTITIONS)
				goto bad_rec;
			for (uint32_t k = 0; k < OOO_SCHED_CLASSES; k++)
				if (!FIELD_OK(&sr.c.classes[k], name))
					goto bad;
			for (uint32_t k = 0; k < OOO_SCHED_PARTITIONS; k++)
				if (!FIELD_OK(&sr.c.parts[k], name))
					goto bad;
		} else if (rec_size == sizeof(struct ooo_part_gpu_rec)) {
			struct ooo_part_gpu_rec pg;
			memcpy(&pg, rec, sizeof(pg));
			if (pg.n > OOO_PART_MAX)
				goto bad_rec;
			if (!FIELD_OK(&pg, reason))
				goto bad;
			for (uint32_t k = 0; k < OOO_PART_MAX; k++)
				if (!FIELD_OK(&pg.p[k], class_name))
					goto bad;
		} else if (rec_size == sizeof(struct ooo_device_rec)) {
			struct ooo_device_rec d;
			memcpy(&d, rec, sizeof(d));
			if (!FIELD_OK(&d, name) || !FIELD_OK(&d, reason))
				goto bad;
		} else if (rec_size == sizeof(struct ooo_proc_rec)) {
			struct ooo_proc_rec pr;
			memcpy(&pr, rec, sizeof(pr));
			if (!FIELD_OK(&pr, comm))
				goto bad;
		} else if (rec_size == sizeof(struct ooo_lease_rec)) {
			struct ooo_lease_rec lr;
			memcpy(&lr, rec, sizeof(lr));
			if (!FIELD_OK(&lr, class_name) || !FIELD_OK(&lr, cmd))
				goto bad;
		} else if (rec_size == sizeof(struct ooo_tenant_rec)) {
			struct ooo_tenant_rec t;
			memcpy(&t, rec, sizeof(t));
			if (!FIELD_OK(&t, class_name) || !FIELD_OK(&t, key))
				goto bad;
		} else {
			struct ooo_session_rec s;
			memcpy(&s, rec, sizeof(s));
			if (!FIELD_OK(&s, name) || !FIELD_OK(&s, class_name) || !FIELD_OK(&s, domain) ||
			    !FIELD_OK(&s, tenant_key))
				goto bad;
		}
	}
	return 0;
bad:
	*why = "list record string is not NUL-terminated";
	return -OOO_EPROTO;
bad_rec:
	*why = "list record count field out of range";
	return -OOO_EPROTO;
}

#define EXACT(T)                                                                                           \
	do {                                                                                               \
		if (n != sizeof(T)) {                                                                      \
			*why = "reply payload has the wrong size";                                         \
			return -OOO_EPROTO;                                                                \
		}                                                                                          \
	} while (0)

/* A reply or notice, as a client accepts it. */
static int check_to_peer(const struct wire_msg *m, const char **why)
{
	const void *p = m->payload;
	size_t n = m->plen;
	uint16_t type = m->hdr.type;

	if (type == OOO_MSG_NOTICE) {
		const struct ooo_msg_notice *no = p;
		EXACT(*no);
		if (!FIELD_OK(no, msg)) {
			*why = "notice text is not NUL-terminated";
			return -OOO_EPROTO;
		}
		return 0;
	}
	if (!(type & OOO_MSG_REPLY)) {
		*why = "daemon sent a request";
		return -OOO_EPROTO;
	}
	type &= ~OOO_MSG_REPLY;
	if (m->hdr.status > 0) {
		*why = "reply with a positive status";
		return -OOO_EPROTO;
	}
	if (m->hdr.status < 0) {
		const struct ooo_msg_error *e = p;
		EXACT(*e);
		if (!FIELD_OK(e, msg)) {
			*why = "error text is not NUL-terminated";
			return -OOO_EPROTO;
		}
		return 0;
	}
	switch (type) {
	case OOO_MSG_HELLO: {
		const struct ooo_msg_hello_reply *h = p;
		EXACT(*h);
		if (!FIELD_OK(h, class_name)) {
			*why = "class name is not NUL-terminated";
			return -OOO_EPROTO;
		}
		return 0;
	}
	case OOO_MSG_PING:
		if (n > OOO_PING_MAX) {
			*why = "ping reply larger than OOO_PING_MAX";
			return -OOO_EPROTO;
		}
		return 0;
	case OOO_MSG_BYE:
	case OOO_MSG_BUF_FREE:
	case OOO_MSG_QUEUE_DESTROY:
	case OOO_MSG_MODULE_UNLOAD:
	case OOO_MSG_HOST_FREE:
		if (n != 0) {
			*why = "unexpected payload in reply";
			return -OOO_EPROTO;
		}
		return 0;
	case OOO_MSG_BUF_ALLOC:
	case OOO_MSG_BUF_EXPORT:
		EXACT(struct ooo_msg_buf);
		return 0;
	case OOO_MSG_ATTACH:
		EXACT(struct ooo_msg_attach_reply);
		return 0;
	case OOO_MSG_QUEUE_CREATE:
		EXACT(struct ooo_msg_queue_info);
		return 0;
	case OOO_MSG_MODULE_LOAD:
		EXACT(struct ooo_msg_module);
		return 0;
	case OOO_MSG_HOST_ALLOC:
		EXACT(struct ooo_msg_host);
		return 0;
	case OOO_MSG_KERNEL_GET:
		EXACT(struct ooo_msg_kernel);
		return 0;
	case OOO_MSG_STATUS: {
		const struct ooo_msg_status *s = p;
		EXACT(*s);
		if (!FIELD_OK(s, version) || !FIELD_OK(s, policy_source) || !FIELD_OK(s, gpu_reason)) {
			*why = "status string is not NUL-terminated";
			return -OOO_EPROTO;
		}
		return 0;
	}
	case OOO_MSG_TENANTS:
		return check_list(m, sizeof(struct ooo_tenant_rec), why);
	case OOO_MSG_SESSIONS:
		return check_list(m, sizeof(struct ooo_session_rec), why);
	case OOO_MSG_DEVICES:
		return check_list(m, sizeof(struct ooo_device_rec), why);
	case OOO_MSG_SCHED:
		return check_list(m, sizeof(struct ooo_sched_rec), why);
	case OOO_MSG_PROCS:
		return check_list(m, sizeof(struct ooo_proc_rec), why);
	case OOO_MSG_LEASES:
		return check_list(m, sizeof(struct ooo_lease_rec), why);
	case OOO_MSG_PARTITIONS:
		return check_list(m, sizeof(struct ooo_part_gpu_rec), why);
	case OOO_MSG_PARDON: {
		const struct ooo_msg_pardon_reply *r = p;
		EXACT(*r);
		if (!FIELD_OK(r, msg)) {
			*why = "pardon reply text is not NUL-terminated";
			return -OOO_EPROTO;
		}
		return 0;
	}
	case OOO_MSG_PARTITION_SET: {
		const struct ooo_msg_partition_set_reply *r = p;
		EXACT(*r);
		if (!FIELD_OK(r, msg)) {
			*why = "partition set reply text is not NUL-terminated";
			return -OOO_EPROTO;
		}
		return 0;
	}
	case OOO_MSG_LEASE: {
		const struct ooo_msg_lease *l = p;
		EXACT(*l);
		if (!FIELD_OK(l, class_name) || !FIELD_OK(l, env) || !FIELD_OK(l, msg)) {
			*why = "lease reply: a string is not NUL-terminated";
			return -OOO_EPROTO;
		}
		return 0;
	}
	case OOO_MSG_EVICT: {
		const struct ooo_msg_evict_reply *r = p;
		EXACT(*r);
		if (!FIELD_OK(r, msg)) {
			*why = "evict reply text is not NUL-terminated";
			return -OOO_EPROTO;
		}
		return 0;
	}
	case OOO_MSG_MPS: {
		const struct ooo_msg_mps *r = p;
		EXACT(*r);
		if (!FIELD_OK(r, control) || !FIELD_OK(r, pipe_dir) || !FIELD_OK(r, reason) || !FIELD_OK(r, feedback) ||
		    r->ngpus > OOO_MPS_GPUS) {
			*why = "mps reply: a string is not NUL-terminated or a count is too large";
			return -OOO_EPROTO;
		}
		return 0;
	}
	case OOO_MSG_MPS_RUN: {
		const struct ooo_msg_mps_run_reply *r = p;
		EXACT(*r);
		if (!FIELD_OK(r, reply)) {
			*why = "mps run reply is not NUL-terminated";
			return -OOO_EPROTO;
		}
		return 0;
	}
	case OOO_MSG_TELEMETRY: {
		const struct ooo_msg_telemetry *t = p;
		EXACT(*t);
		if (!FIELD_OK(t, reason) || t->nlibs > OOO_TM_LIBS || t->nrecent > OOO_TM_RECENT)
			goto bad_telemetry;
		for (uint32_t i = 0; i < OOO_TM_LIBS; i++)
			if (!FIELD_OK(&t->libs[i], path))
				goto bad_telemetry;
		for (uint32_t i = 0; i < OOO_TM_RECENT; i++)
			if (!FIELD_OK(&t->recent[i], comm))
				goto bad_telemetry;
		return 0;
	bad_telemetry:
		*why = "telemetry reply: a string is not NUL-terminated or a count is too large";
		return -OOO_EPROTO;
	}
	case OOO_MSG_TRACE: {
		const struct ooo_msg_trace_reply *r = p;
		EXACT(*r);
		if (!FIELD_OK(r, msg)) {
			*why = "trace reply text is not NUL-terminated";
			return -OOO_EPROTO;
		}
		return 0;
	}
	case OOO_MSG_RELOAD: {
		const struct ooo_msg_reload_reply *r = p;
		EXACT(*r);
		if (!FIELD_OK(r, msg)) {
			*why = "reload text is not NUL-terminated";
			return -OOO_EPROTO;
		}
		return 0;
	}
	default:
		*why = "unknown reply type";
		return -OOO_EPROTO;
	}
}

int wire_decode(const void *buf, size_t len, enum wire_dir dir, struct wire_msg *m, const char **why)
{
	const char *dummy;

	if (!why)
		why = &dummy;
	memset(m, 0, sizeof(*m));
	if (len < sizeof(m->hdr)) {
		*why = "message shorter than the header";
		return -OOO_EPROTO;
	}
	memcpy(&m->hdr, buf, sizeof(m->hdr));
	if (m->hdr.magic != OOO_PROTO_MAGIC) {
		m->hdr.magic = 0;
		*why = "bad magic";
		return -OOO_EPROTO;
	}
	if (m->hdr.version != OOO_PROTO_VERSION) {
		*why = "unsupported protocol version";
		return -OOO_EVERSION;
	}
	if (len > OOO_MSG_MAX) {
		*why = "message larger than OOO_MSG_MAX";
		return -OOO_EPROTO;
	}
	if (m->hdr.len != len) {
		*why = "length field does not match the message size";
		return -OOO_EPROTO;
	}
	if (m->hdr.flags) {
		*why = "unknown header flags";
		return -OOO_EPROTO;
	}
	m->payload = (const char *)buf + sizeof(m->hdr);
	m->plen = len - sizeof(m->hdr);
	if (dir == WIRE_TO_DAEMON) {
		if (m->hdr.type & OOO_MSG_REPLY) {
			*why = "peer sent a reply";
			return -OOO_EPROTO;
		}
		return check_request(m, why);
	}
	return check_to_peer(m, why);
}

ssize_t wire_encode(void *buf, size_t cap, uint16_t type, uint32_t seq, int32_t status, const void *payload,
		    size_t plen)
{
	struct ooo_msg_hdr h = {
		.magic = OOO_PROTO_MAGIC,
		.version = OOO_PROTO_VERSION,
		.type = type,
		.seq = seq,
		.status = status,
	};
	size_t total = sizeof(h) + plen;

	if (plen > OOO_MSG_MAX - sizeof(h) || total > cap)
		return -EMSGSIZE;
	h.len = (uint32_t)total;
	memcpy(buf, &h, sizeof(h));
	/* memmove: callers may build the payload in place after the header */
	if (plen && payload != (char *)buf + sizeof(h))
		memmove((char *)buf + sizeof(h), payload, plen);
	return (ssize_t)total;
}

ssize_t wire_encode_error(void *buf, size_t cap, uint16_t type, uint32_t seq, int32_t status, const char *fmt, ...)
{
	struct ooo_msg_error e;
	va_list ap;

	memset(&e, 0, sizeof(e));
	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
	va_end(ap);
	return wire_encode(buf, cap, (uint16_t)(type | OOO_MSG_REPLY), seq, status, &e, sizeof(e));
}

void wire_sanitize(char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			*s = '?';
	}
}

void wire_strcpy(char *dst, size_t cap, const char *src)
{
	size_t n;

	if (!cap)
		return;
	n = src ? strnlen(src, cap - 1) : 0;
	if (n)
		memcpy(dst, src, n);
	memset(dst + n, 0, cap - n);
}
