/* SPDX-License-Identifier: MIT */
/* Unit tests of the wire codec: every message type, both directions, every truncation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>

#include "../../proto/wire.h"

static unsigned char buf[OOO_MSG_MAX + 64];

/* A valid message of every kind, with its direction. */
struct sample {
	const char *what;
	enum wire_dir dir;
	uint16_t type;
	int32_t status;
	size_t plen;
	unsigned char payload[8192];
};

static size_t build_list(unsigned char *p, bool tenants, uint32_t count)
{
	struct ooo_msg_list l = { .total = count + 1, .offset = 1, .count = count };
	size_t rec = tenants ? sizeof(struct ooo_tenant_rec) : sizeof(struct ooo_session_rec);

	l.rec_size = (uint32_t)rec;
	memcpy(p, &l, sizeof(l));
	for (uint32_t i = 0; i < count; i++) {
		unsigned char *r = p + sizeof(l) + i * rec;
		memset(r, 0, rec);
		if (tenants) {
			struct ooo_tenant_rec t = { .uid = i };
			strcpy(t.class_name, "default");
			memcpy(r, &t, sizeof(t));
		} else {
			struct ooo_session_rec s = { .id = i };
			strcpy(s.name, "x");
			strcpy(s.class_name, "default");
			memcpy(r, &s, sizeof(s));
		}
	}
	return sizeof(l) + count * rec;
}

static int make_samples(struct sample *s)
{
	int n = 0;
	struct ooo_msg_hello h = { 0 };
	struct ooo_msg_hello_reply hr = { .session_id = 7 };
	struct ooo_msg_notice no = { .kind = OOO_NOTICE_SHUTDOWN };
	struct ooo_msg_status st = { 0 };
	struct ooo_msg_list_req lr = { .offset = 3 };
	struct ooo_msg_reload_reply rr = { .policy_generation = 2 };
	struct ooo_msg_error e = { 0 };

	strcpy(h.name, "tenant");
	strcpy(hr.class_name, "default");
	strcpy(no.msg, "bye");
	strcpy(st.version, "0.1.0");
	strcpy(st.policy_source, "(embedded defaults)");
	strcpy(rr.msg, "ok");
	strcpy(e.msg, "denied");

#define ADD(w, d, t, stt, ptr, len)                                                                        \
	do {                                                                                               \
		s[n] = (struct sample){ .what = w, .dir = d, .type = t, .status = stt, .plen = len };      \
		if (len)                                                                                   \
			memcpy(s[n].payload, ptr, len);                                                    \
		n++;                                                                                       \
	} while (0)
	ADD("hello", WIRE_TO_DAEMON, OOO_MSG_HELLO, 0, &h, sizeof(h));
	ADD("ping", WIRE_TO_DAEMON, OOO_MSG_PING, 0, "12345678", 8);
	ADD("empty ping", WIRE_TO_DAEMON, OOO_MSG_PING, 0, "", 0);
	ADD("bye", WIRE_TO_DAEMON, OOO_MSG_BYE, 0, "", 0);
	ADD("status", WIRE_TO_DAEMON, OOO_MSG_STATUS, 0, "", 0);
	ADD("tenants", WIRE_TO_DAEMON, OOO_MSG_TENANTS, 0, &lr, sizeof(lr));
	ADD("sessions", WIRE_TO_DAEMON, OOO_MSG_SESSIONS, 0, &lr, sizeof(lr));
	ADD("reload", WIRE_TO_DAEMON, OOO_MSG_RELOAD, 0, "", 0);
	ADD("hello reply", WIRE_TO_PEER, OOO_MSG_HELLO | OOO_MSG_REPLY, 0, &hr, sizeof(hr));
	ADD("ping reply", WIRE_TO_PEER, OOO_MSG_PING | OOO_MSG_REPLY, 0, "12345678", 8);
	ADD("bye reply", WIRE_TO_PEER, OOO_MSG_BYE | OOO_MSG_REPLY, 0, "", 0);
	ADD("notice", WIRE_TO_PEER, OOO_MSG_NOTICE, 0, &no, sizeof(no));
	ADD("status reply", WIRE_TO_PEER, OOO_MSG_STATUS | OOO_MSG_REPLY, 0, &st, sizeof(st));
	ADD("reload reply", WIRE_TO_PEER, OOO_MSG_RELOAD | OOO_MSG_REPLY, 0, &rr, sizeof(rr));
	ADD("error reply", WIRE_TO_PEER, OOO_MSG_HELLO | OOO_MSG_REPLY, -OOO_EDENIED, &e, sizeof(e));
	s[n] = (struct sample){ .what = "tenants reply", .dir = WIRE_TO_PEER,
				.type = OOO_MSG_TENANTS | OOO_MSG_REPLY };
	s[n].plen = build_list(s[n].payload, true, 3);
	n++;
	s[n] = (struct sample){ .what = "sessions reply", .dir = WIRE_TO_PEER,
				.type = OOO_MSG_SESSIONS | OOO_MSG_REPLY };
	s[n].plen = build_list(s[n].payload, false, 2);
	n++;
	ADD("devices", WIRE_TO_DAEMON, OOO_MSG_DEVICES, 0, &lr, sizeof(lr));
	{
		struct ooo_msg_list l = { .total = 1, .count = 1, .rec_size = sizeof(struct ooo_device_rec) };
		struct ooo_device_rec d = { .index = 0, .state = OOO_DEV_READY, .sm_count = 132 };

		strcpy(d.name, "NVIDIA H200");
		s[n] = (struct sample){ .what = "devices reply", .dir = WIRE_TO_PEER,
					.type = OOO_MSG_DEVICES | OOO_MSG_REPLY };
		memcpy(s[n].payload, &l, sizeof(l));
		memcpy(s[n].payload + sizeof(l), &d, sizeof(d));
		s[n].plen = sizeof(l) + sizeof(d);
		n++;
	}
	ADD("sched", WIRE_TO_DAEMON, OOO_MSG_SCHED, 0, &lr, sizeof(lr));
	{
		struct ooo_msg_list l = { .total = 2, .count = 2, .rec_size = sizeof(struct ooo_sched_rec) };
		struct ooo_sched_rec r[2];

		memset(r, 0, sizeof(r));
		r[0] = (struct ooo_sched_rec){ .index = 0, .state = OOO_DEV_READY, .have = 1, .age_ns = 5 };
		r[0].c.nclasses = 1;
		r[0].c.npartitions = 1;
		strcpy(r[0].c.classes[0].name, "default");
		r[1] = (struct ooo_sched_rec){ .index = 1, .state = OOO_DEV_FAILED };
		s[n] = (struct sample){ .what = "sched reply", .dir = WIRE_TO_PEER, .type = OOO_MSG_SCHED | OOO_MSG_REPLY };
		memcpy(s[n].payload, &l, sizeof(l));
		memcpy(s[n].payload + sizeof(l), r, sizeof(r));
		s[n].plen = sizeof(l) + sizeof(r);
		n++;
	}
	s[n] = (struct sample){ .what = "empty list", .dir = WIRE_TO_PEER, .type = OOO_MSG_SESSIONS | OOO_MSG_REPLY };
	s[n].plen = build_list(s[n].payload, false, 0);
	n++;
	return n;
}

static struct sample samples[32];

static ssize_t encode(const struct sample *s)
{
	return wire_encode(buf, sizeof(buf), s->type, 42, s->status, s->payload, s->plen);
}

static void test_roundtrip_every_type(void **state)
{
	int n = make_samples(samples);

	for (int i = 0; i < n; i++) {
		struct wire_msg m;
		const char *why = NULL;
		ssize_t len = encode(&samples[i]);

		assert_true(len > 0);
		assert_int_equal(wire_decode(buf, (size_t)len, samples[i].dir, &m, &why), 0);
		assert_int_equal(m.hdr.type, samples[i].type);
		assert_int_equal(m.hdr.seq, 42);
		assert_int_equal(m.hdr.status, samples[i].status);
		assert_int_equal(m.plen, samples[i].plen);
		if (samples[i].plen)
			assert_memory_equal(m.payload, samples[i].payload, samples[i].plen);
		/* the other direction refuses it */
		assert_int_equal(wire_decode(buf, (size_t)len, samples[i].dir == WIRE_TO_DAEMON ? WIRE_TO_PEER
												  : WIRE_TO_DAEMON,
					     &m, &why),
				 -OOO_EPROTO);
	}
}

static void test_every_truncation(void **state)
{
	int n = make_samples(samples);

	for (int i = 0; i < n; i++) {
		ssize_t len = encode(&samples[i]);

		for (ssize_t cut = 0; cut < len; cut++) {
			struct wire_msg m;
			const char *why = NULL;

			/* a shorter datagram, header unchanged: length no longer matches */
			assert_int_equal(wire_decode(buf, (size_t)cut, samples[i].dir, &m, &why), -OOO_EPROTO);
			assert_non_null(why);
		}
		/* and every consistent but shorter payload (header length fixed up) */
		for (size_t p = 0; p < samples[i].plen; p++) {
			struct wire_msg m;
			ssize_t l2 = wire_encode(buf, sizeof(buf), samples[i].type, 1, samples[i].status,
						 samples[i].payload, p);
			int r = wire_decode(buf, (size_t)l2, samples[i].dir, &m, NULL);
			/* pings carry any length; everything else has a fixed layout */
			if ((samples[i].type & ~OOO_MSG_REPLY) == OOO_MSG_PING)
				assert_int_equal(r, 0);
			else
				assert_int_equal(r, -OOO_EPROTO);
		}
	}
}

static void test_header_checks(void **state)
{
	struct ooo_msg_hdr h;
	struct wire_msg m;
	const char *why;
	ssize_t len = wire_encode(buf, sizeof(buf), OOO_MSG_PING, 9, 0, "abc", 3);

	memcpy(&h, buf, sizeof(h));
	h.magic ^= 1;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_DAEMON, &m, &why), -OOO_EPROTO);
	assert_false(wire_hdr_valid(&m));
	assert_string_equal(why, "bad magic");

	h.magic ^= 1;
	h.version = 2;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_DAEMON, &m, &why), -OOO_EVERSION);
	assert_true(wire_hdr_valid(&m));
	assert_int_equal(m.hdr.seq, 9);

	h.version = OOO_PROTO_VERSION;
	h.flags = 1;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_DAEMON, &m, &why), -OOO_EPROTO);

	h.flags = 0;
	h.status = -1;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_DAEMON, &m, &why), -OOO_EPROTO);

	h.status = 0;
	h.len = (uint32_t)len + 1;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_DAEMON, &m, &why), -OOO_EPROTO);

	h.len = (uint32_t)len;
	h.type = 999;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_DAEMON, &m, &why), -OOO_EPROTO);
	assert_string_equal(why, "unknown request type");

	h.type = OOO_MSG_NOTICE;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_DAEMON, &m, &why), -OOO_EPROTO);

	h.type = OOO_MSG_PING | OOO_MSG_REPLY;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_DAEMON, &m, &why), -OOO_EPROTO);
	assert_string_equal(why, "peer sent a reply");

	/* a positive status in a reply */
	h.status = 5;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_PEER, &m, &why), -OOO_EPROTO);

	/* oversized */
	assert_int_equal(wire_decode(buf, OOO_MSG_MAX + 1, WIRE_TO_DAEMON, &m, &why), -OOO_EPROTO);
	assert_int_equal(wire_encode(buf, sizeof(buf), OOO_MSG_PING, 1, 0, buf, OOO_MSG_MAX), -EMSGSIZE);
	assert_int_equal(wire_encode(buf, 10, OOO_MSG_PING, 1, 0, NULL, 0), -EMSGSIZE);
}

static void test_payload_checks(void **state)
{
	struct ooo_msg_hello h = { 0 };
	struct ooo_msg_list_req lr = { 0 };
	struct wire_msg m;
	ssize_t len;
	unsigned char big[OOO_PING_MAX + 1] = { 0 };

	/* hello name without NUL */
	memset(h.name, 'a', sizeof(h.name));
	len = wire_encode(buf, sizeof(buf), OOO_MSG_HELLO, 1, 0, &h, sizeof(h));
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_DAEMON, &m, NULL), -OOO_EPROTO);
	/* hello flags */
	memset(&h, 0, sizeof(h));
	h.flags = 4;
	len = wire_encode(buf, sizeof(buf), OOO_MSG_HELLO, 1, 0, &h, sizeof(h));
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_DAEMON, &m, NULL), -OOO_EPROTO);
	/* ping too big, both directions */
	len = wire_encode(buf, sizeof(buf), OOO_MSG_PING, 1, 0, big, sizeof(big));
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_DAEMON, &m, NULL), -OOO_EPROTO);
	len = wire_encode(buf, sizeof(buf), OOO_MSG_PING | OOO_MSG_REPLY, 1, 0, big, sizeof(big));
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_PEER, &m, NULL), -OOO_EPROTO);
	/* payload where none belongs */
	len = wire_encode(buf, sizeof(buf), OOO_MSG_STATUS, 1, 0, "x", 1);
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_DAEMON, &m, NULL), -OOO_EPROTO);
	/* list request reserved field */
	lr.reserved = 1;
	len = wire_encode(buf, sizeof(buf), OOO_MSG_TENANTS, 1, 0, &lr, sizeof(lr));
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_DAEMON, &m, NULL), -OOO_EPROTO);
}

/* Decode a request of `type` with `len` bytes of payload p; it must be refused with exactly `reason`. */
static void refused_as(uint16_t type, const void *p, size_t len, const char *reason)
{
	struct wire_msg m;
	const char *why = NULL;
	ssize_t n = wire_encode(buf, sizeof(buf), type, 1, 0, p, len);

	assert_true(n > 0);
	assert_int_equal(wire_decode(buf, (size_t)n, WIRE_TO_DAEMON, &m, &why), -OOO_EPROTO);
	assert_non_null(why);
	if (strcmp(why, reason))
		fail_msg("%s request of %zu bytes refused as '%s', expected '%s'", wire_type_name(type), len, why,
			 reason);
}

/*
 * A request whose size is right but whose reserved field (or flags) is not
 * 0 is refused for that, not as "payload has the wrong size"; a wrong size
 * is refused as such whatever the fields hold.
 */
static void test_request_field_reasons(void **state)
{
	static const uint16_t lists[] = { OOO_MSG_TENANTS, OOO_MSG_SESSIONS, OOO_MSG_DEVICES, OOO_MSG_SCHED,
					  OOO_MSG_PROCS,   OOO_MSG_LEASES,   OOO_MSG_PARTITIONS };
	struct ooo_msg_list_req lr = { .reserved = 1 };
	struct ooo_msg_hello h = { .reserved = 1 };
	struct ooo_msg_host ho = { .reserved = 1, .size = 4096 };
	struct ooo_msg_queue q = { .reserved = 1 };
	struct ooo_msg_queue_create qc = { .reserved = 1 };
	struct ooo_msg_pardon pa = { .uid = 1, .reserved = 1 };
	struct ooo_msg_buf_alloc ba = { .size = 1, .flags = 2 };
	struct ooo_msg_attach at = { .flags = 2 };
	struct ooo_msg_module_load ml = { .kind = OOO_MODULE_PTX, .len = 1, .flags = 2 };
	unsigned char big[sizeof(struct ooo_msg_hello) + 8] = { 0 };

	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		refused_as(lists[i], &lr, sizeof(lr), "list request reserved field must be 0");
		refused_as(lists[i], &lr, sizeof(lr) - 4, "list request payload has the wrong size");
	}
	refused_as(OOO_MSG_HELLO, &h, sizeof(h), "hello reserved field must be 0");
	h = (struct ooo_msg_hello){ .flags = 4 };
	refused_as(OOO_MSG_HELLO, &h, sizeof(h), "hello with unknown flags");
	refused_as(OOO_MSG_HELLO, big, sizeof(big), "hello payload has the wrong size");
	refused_as(OOO_MSG_HOST_ALLOC, &ho, sizeof(ho), "host region reserved field must be 0");
	refused_as(OOO_MSG_HOST_FREE, &ho, sizeof(ho), "host region reserved field must be 0");
	refused_as(OOO_MSG_HOST_FREE, &ho, sizeof(ho) - 8, "host region payload has the wrong size");
	refused_as(OOO_MSG_QUEUE_DESTROY, &q, sizeof(q), "queue reserved field must be 0");
	refused_as(OOO_MSG_QUEUE_DESTROY, &q, 4, "queue payload has the wrong size");
	refused_as(OOO_MSG_QUEUE_CREATE, &qc, sizeof(qc), "queue create reserved field must be 0");
	qc = (struct ooo_msg_queue_create){ .flags = 1 };
	refused_as(OOO_MSG_QUEUE_CREATE, &qc, sizeof(qc), "queue create with unknown flags");
	qc = (struct ooo_msg_queue_create){ .priority = 100 };
	refused_as(OOO_MSG_QUEUE_CREATE, &qc, sizeof(qc), "queue create priority out of range (-1..99)");
	refused_as(OOO_MSG_QUEUE_CREATE, &qc, sizeof(qc) - 4, "queue create payload has the wrong size");
	refused_as(OOO_MSG_PARDON, &pa, sizeof(pa), "pardon reserved field must be 0");
	refused_as(OOO_MSG_PARDON, &pa, 4, "pardon payload has the wrong size");
	refused_as(OOO_MSG_BUF_ALLOC, &ba, sizeof(ba), "buffer alloc with unknown flags");
	refused_as(OOO_MSG_BUF_ALLOC, &ba, 8, "buffer alloc payload has the wrong size");
	refused_as(OOO_MSG_ATTACH, &at, sizeof(at), "attach with unknown flags");
	refused_as(OOO_MSG_ATTACH, &at, 4, "attach payload has the wrong size");
	refused_as(OOO_MSG_MODULE_LOAD, &ml, sizeof(ml), "module load with unknown flags");
	refused_as(OOO_MSG_MODULE_LOAD, &ml, 8, "module load payload has the wrong size");
}

static void test_list_reply_checks(void **state)
{
	static unsigned char p[sizeof(struct ooo_msg_list) + sizeof(struct ooo_sched_rec)];
	struct ooo_msg_list l;
	struct wire_msg m;
	size_t n = build_list(p, true, 2);
	ssize_t len;

	/* count larger than the records present */
	memcpy(&l, p, sizeof(l));
	l.count = 3;
	memcpy(p, &l, sizeof(l));
	len = wire_encode(buf, sizeof(buf), OOO_MSG_TENANTS | OOO_MSG_REPLY, 1, 0, p, n);
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_PEER, &m, NULL), -OOO_EPROTO);
	/* offset + count beyond total */
	l.count = 2;
	l.total = 2;
	l.offset = 1;
	memcpy(p, &l, sizeof(l));
	len = wire_encode(buf, sizeof(buf), OOO_MSG_TENANTS | OOO_MSG_REPLY, 1, 0, p, n);
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_PEER, &m, NULL), -OOO_EPROTO);
	/* wrong record size */
	l.offset = 0;
	l.rec_size = 8;
	memcpy(p, &l, sizeof(l));
	len = wire_encode(buf, sizeof(buf), OOO_MSG_TENANTS | OOO_MSG_REPLY, 1, 0, p, n);
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_PEER, &m, NULL), -OOO_EPROTO);
	/* record string without NUL */
	n = build_list(p, false, 1);
	memset(p + sizeof(l) + offsetof(struct ooo_session_rec, name), 'z', OOO_NAME_MAX);
	len = wire_encode(buf, sizeof(buf), OOO_MSG_SESSIONS | OOO_MSG_REPLY, 1, 0, p, n);
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_PEER, &m, NULL), -OOO_EPROTO);
	/* a tenants list decoded as sessions */
	n = build_list(p, true, 1);
	len = wire_encode(buf, sizeof(buf), OOO_MSG_SESSIONS | OOO_MSG_REPLY, 1, 0, p, n);
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_PEER, &m, NULL), -OOO_EPROTO);
	/* scheduler counters: class names terminated, counts in range, have 0 or 1 */
	{
		struct ooo_sched_rec r;

		l = (struct ooo_msg_list){ .total = 1, .count = 1, .rec_size = sizeof(r) };
		for (int bad = 0; bad < 4; bad++) {
			memset(&r, 0, sizeof(r));
			r.have = 1;
			r.c.nclasses = 1;
			strcpy(r.c.classes[0].name, "default");
			if (bad == 1)
				memset(r.c.classes[OOO_SCHED_CLASSES - 1].name, 'z', sizeof(r.c.classes[0].name));
			else if (bad == 2)
				r.c.nclasses = OOO_SCHED_CLASSES + 1;
			else if (bad == 3)
				r.have = 2;
			memcpy(p, &l, sizeof(l));
			memcpy(p + sizeof(l), &r, sizeof(r));
			len = wire_encode(buf, sizeof(buf), OOO_MSG_SCHED | OOO_MSG_REPLY, 1, 0, p, sizeof(l) + sizeof(r));
			assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_PEER, &m, NULL), bad ? -OOO_EPROTO : 0);
		}
	}
}

static void test_error_encode_and_strings(void **state)
{
	struct wire_msg m;
	char s[8];
	ssize_t len = wire_encode_error(buf, sizeof(buf), OOO_MSG_HELLO, 3, -OOO_ELIMIT, "limit %d", 5);
	const struct ooo_msg_error *e;

	assert_true(len > 0);
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_PEER, &m, NULL), 0);
	assert_int_equal(m.hdr.type, OOO_MSG_HELLO | OOO_MSG_REPLY);
	assert_int_equal(m.hdr.status, -OOO_ELIMIT);
	e = m.payload;
	assert_string_equal(e->msg, "limit 5");
	/* error text without NUL */
	memset((unsigned char *)buf + sizeof(struct ooo_msg_hdr), 'x', sizeof(struct ooo_msg_error));
	assert_int_equal(wire_decode(buf, (size_t)len, WIRE_TO_PEER, &m, NULL), -OOO_EPROTO);

	wire_strcpy(s, sizeof(s), "abcdefghij");
	assert_string_equal(s, "abcdefg");
	wire_strcpy(s, sizeof(s), NULL);
	assert_string_equal(s, "");
	assert_string_equal(wire_type_name(OOO_MSG_STATUS | OOO_MSG_REPLY), "status");
	assert_string_equal(wire_type_name(77), "unknown");

	/* strerror covers every code and errno */
	for (int c = OOO_EPROTO; c < OOO_EMAX; c++)
		assert_non_null(ooo_strerror(-c));
	assert_string_equal(ooo_strerror(0), "Success");
	assert_string_equal(ooo_strerror(-ENOENT), "No such file or directory");
	assert_string_equal(ooo_strerror(-99999), "Unknown error");
}

/*
 * wire_strerror, what oood's logs use for a status: OOO_E codes by their
 * text (strerror knows nothing of them: "Unknown error 1006"), errno values
 * as strerror words them, either sign.
 */
static void test_wire_strerror(void **state)
{
	char unknown[32];

	snprintf(unknown, sizeof(unknown), "Unknown error %d", OOO_ENODEV);
	assert_string_equal(strerror(OOO_ENODEV), unknown); /* what the logs said */
	assert_string_equal(wire_strerror(-OOO_ENODEV), "No usable GPU");
	assert_string_equal(wire_strerror(OOO_ENODEV), "No usable GPU");
	assert_string_equal(wire_strerror(-OOO_EDEVRESET), "The GPU executor was restarted");
	for (int c = OOO_EPROTO; c < OOO_EMAX; c++) {
		assert_null(strstr(wire_strerror(-c), "Unknown"));
		assert_ptr_equal(wire_strerror(-c), ooo_strerror(-c)); /* libooo's is the same table */
	}
	assert_string_equal(wire_strerror(-ENOENT), strerror(ENOENT));
	assert_string_equal(wire_strerror(EAGAIN), strerror(EAGAIN));
	assert_string_equal(wire_strerror(0), "Success");
	assert_string_equal(wire_strerror(-OOO_EMAX), "Unknown error");
	assert_string_equal(wire_strerror(INT_MIN), "Unknown error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_every_type),
		cmocka_unit_test(test_every_truncation),
		cmocka_unit_test(test_header_checks),
		cmocka_unit_test(test_payload_checks),
		cmocka_unit_test(test_request_field_reasons),
		cmocka_unit_test(test_list_reply_checks),
		cmocka_unit_test(test_error_encode_and_strings),
		cmocka_unit_test(test_wire_strerror),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
