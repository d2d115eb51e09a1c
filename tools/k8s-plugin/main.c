/* SPDX-License-Identifier: MIT */
/*
 * ooo-k8s-plugin: a kubelet device plugin (API v1beta1) that offers oood's
 * GPUs to Kubernetes as tenant slots of the resource ooo.dev/gpu.
 *
 * One thread, one poll() loop over: the plugin's own gRPC socket in
 * kubelet's device-plugin directory (DevicePlugin service), at most one
 * outgoing call to kubelet.sock (Registration.Register), inotify on that
 * directory (kubelet restarted: register again; our socket removed: listen
 * again), a signalfd (SIGTERM, SIGINT: remove the socket, exit 0) and a
 * tick that asks oood's admin socket for its devices. gRPC is HTTP/2
 * (libnghttp2) with protobuf messages (protobuf-c); the framing is in
 * grpc_frame.c, the slots and their packing in slots.c. Every peer gets a
 * timeout: oood's calls (--timeout), the Register call (--timeout); the
 * kubelet's connections are served without blocking.
 * docs/kubernetes.md is the manual.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>
#include <ooo/ooo.h>
#include <ooo/proto.h>

#include "../common/admin_list.h"
#include "../common/args.h"
#include "deviceplugin.pb-c.h"
#include "grpc_frame.h"
#include "slots.h"
#include "version.h"
#ifndef OOO_GIT_REV
#define OOO_GIT_REV "unknown"
#endif

#define PROG "ooo-k8s-plugin"
#define API_VERSION "v1beta1"
#define DEFAULT_KUBELET_DIR "/var/lib/kubelet/device-plugins"
#define KUBELET_SOCK "kubelet.sock"
#define DEFAULT_SLOTS 8u
#define MAX_CONNS 64 /* kubelet opens one or two */
#define RETRY_MS 5000

typedef char sockpath[sizeof(((struct sockaddr_un *)0)->sun_path)];

static struct {
	const char *kubelet_dir;
	sockpath plugin_path, kubelet_path, admin_path, tenant_path;
	const char *endpoint, *resource;
	unsigned slots;
	int poll_ms, timeout_ms;
	bool verbose;
} o = {
	.kubelet_dir = DEFAULT_KUBELET_DIR, .endpoint = "ooo-gpu.sock", .resource = "ooo.dev/gpu",
	.slots = DEFAULT_SLOTS, .poll_ms = 2000, .timeout_ms = 5000,
};

__attribute__((format(printf, 2, 3))) static void logm(int verbose_only, const char *fmt, ...)
{
	va_list ap;

	if (verbose_only && !o.verbose)
		return;
	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- a growable byte buffer: bytes [off, len) are pending ---------------- */

struct buf {
	uint8_t *p;
	size_t off, len, cap;
};

static int buf_put(struct buf *b, const void *d, size_t n)
{
	if (b->off == b->len)
		b->off = b->len = 0;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *p;

		while (cap < b->len + n)
			cap *= 2;
		if (!(p = realloc(b->p, cap)))
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
	return 0;
}

/* Accepts NULL. */
static void buf_free(struct buf *b)
{
	if (b)
		free(b->p);
}

/* Append msg packed and framed to b. */
static int buf_put_msg(struct buf *b, const ProtobufCMessage *msg)
{
	size_t n = protobuf_c_message_get_packed_size(msg);
	uint8_t pre[GRPC_PREFIX], *p;
	int r;

	if (n > GRPC_MSG_MAX || !(p = malloc(n ? n : 1)))
		return -ENOMEM;
	protobuf_c_message_pack(msg, p);
	grpc_frame_prefix(pre, n);
	r = buf_put(b, pre, sizeof(pre));
	if (!r)
		r = buf_put(b, p, n);
	free(p);
	return r;
}

/* ---- oood's devices --------------------------------------------------------- */

/* What ListAndWatch sends: the GPUs oood listed last, and their health. */
static struct {
	unsigned n;
	unsigned gpu[SLOTS_GPU_MAX]; /* ascending */
	bool healthy[SLOTS_GPU_MAX];
	uint64_t gen; /* bumped on every change */
} devs;
static ooo_session *admin;

/* OOO_MSG_DEVICES, every page: 0 with *out malloc'd (caller frees), or a negative error. */
static int fetch_devices(ooo_session *s, struct ooo_device_rec **out, size_t *nout)
{
	char why[128];

	return admin_list_fetch(s, OOO_MSG_DEVICES, sizeof(**out), (void **)out, nout, why, sizeof(why));
}

/*
 * Ask oood for its devices (a fresh admin session if the kept one fails:
 * oood may have restarted). A GPU is Healthy when one of its executors is
 * ready; all are Unhealthy while oood cannot be reached. Returns true when
 * the list or a health changed.
 */
static bool poll_oood(void)
{
	struct ooo_device_rec *d = NULL;
	unsigned n = 0, gpu[SLOTS_GPU_MAX];
	bool healthy[SLOTS_GPU_MAX], changed;
	size_t nd = 0;
	int r = -ENOTCONN;

	for (int attempt = 0; attempt < 2 && r < 0; attempt++) {
		if (!admin && !(admin = ooo_admin_open(o.admin_path, o.timeout_ms))) {
			r = -errno;
			break;
		}
		r = fetch_devices(admin, &d, &nd);
		if (r < 0)
			admin = ooo_close(admin);
	}
	if (r < 0) {
		static int last_err;

		if (r != last_err)
			logm(0, "oood unreachable on %s (%s): every device Unhealthy", o.admin_path, ooo_strerror(-r));
		last_err = r;
		n = devs.n;
		memcpy(gpu, devs.gpu, n * sizeof(*gpu));
		memset(healthy, 0, sizeof(healthy));
	} else {
		bool seen[SLOTS_GPU_MAX] = { 0 };

		memset(healthy, 0, sizeof(healthy));
		for (size_t i = 0; i < nd; i++) {
			if (d[i].device >= SLOTS_GPU_MAX)
				continue;
			seen[d[i].device] = true;
			if (d[i].state == OOO_DEV_READY)
				healthy[d[i].device] = true;
		}
		for (unsigned g = 0; g < SLOTS_GPU_MAX; g++)
			if (seen[g]) {
				healthy[n] = healthy[g];
				gpu[n++] = g;
			}
		free(d);
	}
	changed = n != devs.n || memcmp(gpu, devs.gpu, n * sizeof(*gpu)) || memcmp(healthy, devs.healthy, n);
	if (changed) {
		devs.n = n;
		memcpy(devs.gpu, gpu, n * sizeof(*gpu));
		memcpy(devs.healthy, healthy, n);
		devs.gen++;
		for (unsigned i = 0; i < n; i++)
			logm(0, "gpu%u: %u slots %s", gpu[i], o.slots, healthy[i] ? "Healthy" : "Unhealthy");
		if (!n)
			logm(0, "no GPU: an empty device list");
	}
	return changed;
}

/* Append the ListAndWatch message of devs to b. */
static int put_device_list(struct buf *b)
{
	size_t n = (size_t)devs.n * o.slots;
	V1beta1__ListAndWatchResponse resp = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
	V1beta1__Device *dv = calloc(n ? n : 1, sizeof(*dv));
	V1beta1__Device **pv = calloc(n ? n : 1, sizeof(*pv));
	char (*ids)[SLOT_ID_MAX] = calloc(n ? n : 1, SLOT_ID_MAX);
	int r = -ENOMEM;

	if (dv && pv && ids) {
		for (size_t i = 0; i < n; i++) {
			unsigned g = (unsigned)(i / o.slots);

			v1beta1__device__init(&dv[i]);
			slot_id_format(ids[i], SLOT_ID_MAX, devs.gpu[g], (unsigned)(i % o.slots));
			dv[i].id = ids[i];
			dv[i].health = devs.healthy[g] ? "Healthy" : "Unhealthy";
			pv[i] = &dv[i];
		}
		resp.n_devices = n;
		resp.devices = pv;
		r = buf_put_msg(b, &resp.base);
	}
	free(dv);
	free(pv);
	free(ids);
	return r;
}

/* ---- HTTP/2 connections ------------------------------------------------------- */

enum { M_OPTIONS, M_LIST_AND_WATCH, M_PREFERRED, M_ALLOCATE, M_PRESTART, M_COUNT };
static const char *const methods[M_COUNT] = {
	"/v1beta1.DevicePlugin/GetDevicePluginOptions", "/v1beta1.DevicePlugin/ListAndWatch",
	"/v1beta1.DevicePlugin/GetPreferredAllocation", "/v1beta1.DevicePlugin/Allocate",
	"/v1beta1.DevicePlugin/PreStartContainer",
};

/* One gRPC call: a request we serve, or our Register call. */
struct stream {
	int32_t id;
	int method;       /* M_*, -1 unknown */
	bool watch;       /* ListAndWatch: open until the peer goes */
	bool done;        /* out holds the last message: then the trailers */
	uint64_t gen;     /* the device list generation sent (watch) */
	int status;       /* grpc-status of the trailers */
	char msg[256];    /* grpc-message, plain */
	struct buf in, out;
	struct stream *next;
};

struct conn {
	int fd;
	bool client; /* our Register call to kubelet */
	nghttp2_session *h2;
	struct stream *streams;
	int64_t deadline; /* client: give up then */
	int grpc_status;  /* client: the reply's, -1 none yet */
	char grpc_msg[256];
	bool closed;      /* client: its stream closed */
	struct conn *next;
};

static struct conn *conns;
static int listen_fd = -1;
static ino_t plugin_ino;  /* our socket's inode, 0 none */
static ino_t attempt_ino; /* kubelet.sock's inode at the last Register, 0 none */
static bool registered;
static int64_t retry_at;

static struct stream *stream_new(struct conn *c, int32_t id)
{
	struct stream *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->id = id;
	st->method = -1;
	st->next = c->streams;
	c->streams = st;
	return st;
}

static void stream_free(struct conn *c, struct stream *st)
{
	for (struct stream **p = &c->streams; *p; p = &(*p)->next)
		if (*p == st) {
			*p = st->next;
			break;
		}
	buf_free(&st->in);
	buf_free(&st->out);
	free(st);
}

/* Accepts NULL. */
static void conn_free(struct conn *c)
{
	if (!c)
		return;
	for (struct conn **p = &conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	while (c->streams)
		stream_free(c, c->streams);
	nghttp2_session_del(c->h2);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

static void submit_trailers(nghttp2_session *h2, struct stream *st)
{
	char code[16], text[sizeof(st->msg) * 3];
	nghttp2_nv nv[2];
	size_t n = 1;

	snprintf(code, sizeof(code), "%d", st->status);
	nv[0] = (nghttp2_nv){ (uint8_t *)"grpc-status", (uint8_t *)code, 11, strlen(code), NGHTTP2_NV_FLAG_NONE };
	if (st->msg[0]) {
		grpc_pct_encode(st->msg, text, sizeof(text));
		nv[n++] = (nghttp2_nv){ (uint8_t *)"grpc-message", (uint8_t *)text, 12, strlen(text), NGHTTP2_NV_FLAG_NONE };
	}
	nghttp2_submit_trailer(h2, st->id, nv, n);
}

/* The body of a stream: served from st->out; trailers after the last byte of a done stream (server side). */
static ssize_t data_read(nghttp2_session *h2, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
			 nghttp2_data_source *src, void *user)
{
	struct conn *c = user;
	struct stream *st = src->ptr;
	size_t n = st->out.len - st->out.off;

	(void)id;
	if (!n && !st->done)
		return NGHTTP2_ERR_DEFERRED;
	if (n > len)
		n = len;
	memcpy(buf, st->out.p + st->out.off, n);
	st->out.off += n;
	if (st->out.off == st->out.len && st->done) {
		*flags |= NGHTTP2_DATA_FLAG_EOF;
		if (!c->client) {
			*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
			submit_trailers(h2, st);
		}
	}
	return (ssize_t)n;
}

#define NV(n, v) { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE }

/* Answer st with the messages in st->out (done unless a watch) and then its status. */
static void respond(struct conn *c, struct stream *st)
{
	nghttp2_nv nv[] = { NV(":status", "200"), NV("content-type", "application/grpc") };
	nghttp2_data_provider prd = { .source.ptr = st, .read_callback = data_read };

	nghttp2_submit_response(c->h2, st->id, nv, 2, &prd);
}

/* Answer st with an error status alone (a trailers-only response). */
static void respond_error(struct conn *c, struct stream *st, int code, const char *fmt, ...)
{
	char text[sizeof(st->msg) * 3], cs[16];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->msg, sizeof(st->msg), fmt, ap);
	va_end(ap);
	snprintf(cs, sizeof(cs), "%d", code);
	grpc_pct_encode(st->msg, text, sizeof(text));
	logm(0, "call %s refused: %s", st->method >= 0 ? methods[st->method] : "(unknown)", st->msg);
	{
		nghttp2_nv nv[] = { NV(":status", "200"), NV("content-type", "application/grpc"), NV("grpc-status", cs),
				    NV("grpc-message", text) };

		nghttp2_submit_response(c->h2, st->id, nv, 4, NULL);
	}
}

static int do_preferred(const V1beta1__PreferredAllocationRequest *req, struct buf *out)
{
	V1beta1__PreferredAllocationResponse resp = V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
	size_t n = req->n_container_requests;
	V1beta1__ContainerPreferredAllocationResponse *cr = calloc(n ? n : 1, sizeof(*cr));
	V1beta1__ContainerPreferredAllocationResponse **pc = calloc(n ? n : 1, sizeof(*pc));
	const char ***ids = calloc(n ? n : 1, sizeof(*ids));
	int r = cr && pc && ids ? 0 : -ENOMEM;

	for (size_t i = 0; i < n && !r; i++) {
		const V1beta1__ContainerPreferredAllocationRequest *q = req->container_requests[i];
		size_t size = q->allocation_size > 0 ? (size_t)q->allocation_size : 0;
		int k;

		v1beta1__container_preferred_allocation_response__init(&cr[i]);
		pc[i] = &cr[i];
		if (size > q->n_available_deviceids + q->n_must_include_deviceids) {
			r = -ERANGE;
			break;
		}
		if (!(ids[i] = calloc(size ? size : 1, sizeof(**ids)))) {
			r = -ENOMEM;
			break;
		}
		k = slots_prefer((const char *const *)q->available_deviceids, q->n_available_deviceids,
				 (const char *const *)q->must_include_deviceids, q->n_must_include_deviceids, size, ids[i]);
		if (k < 0) {
			r = k;
			break;
		}
		cr[i].n_deviceids = (size_t)k;
		cr[i].deviceids = (char **)ids[i];
	}
	if (!r) {
		resp.n_container_responses = n;
		resp.container_responses = pc;
		r = buf_put_msg(out, &resp.base);
	}
	for (size_t i = 0; ids && i < n; i++)
		free(ids[i]);
	free(ids);
	free(cr);
	free(pc);
	return r;
}

static int do_allocate(const V1beta1__AllocateRequest *req, struct buf *out)
{
	V1beta1__AllocateResponse resp = V1BETA1__ALLOCATE_RESPONSE__INIT;
	size_t n = req->n_container_requests;
	V1beta1__ContainerAllocateResponse *cr = calloc(n ? n : 1, sizeof(*cr));
	V1beta1__ContainerAllocateResponse **pc = calloc(n ? n : 1, sizeof(*pc));
	V1beta1__Mount mount = V1BETA1__MOUNT__INIT, *pm = &mount;
	V1beta1__ContainerAllocateResponse__EnvsEntry env[2], *pe[2];
	int r = cr && pc ? 0 : -ENOMEM;

	for (size_t i = 0; i < n && !r; i++)
		for (size_t j = 0; j < req->container_requests[i]->n_devices_ids; j++) {
			unsigned g, s;

			if (slot_id_parse(req->container_requests[i]->devices_ids[j], &g, &s) || s >= o.slots)
				r = -EINVAL;
		}
	if (!r) {
		mount.container_path = o.tenant_path;
		mount.host_path = o.tenant_path;
		for (int k = 0; k < 2; k++) {
			v1beta1__container_allocate_response__envs_entry__init(&env[k]);
			pe[k] = &env[k];
		}
		env[0].key = "OOO_SOCKET";
		env[0].value = o.tenant_path;
		env[1].key = "CUDA_VISIBLE_DEVICES";
		env[1].value = "none";
		for (size_t i = 0; i < n; i++) {
			v1beta1__container_allocate_response__init(&cr[i]);
			cr[i].n_envs = 2;
			cr[i].envs = pe;
			cr[i].n_mounts = 1;
			cr[i].mounts = &pm;
			pc[i] = &cr[i];
		}
		resp.n_container_responses = n;
		resp.container_responses = pc;
		r = buf_put_msg(out, &resp.base);
	}
	free(cr);
	free(pc);
	return r;
}

/* A whole request arrived on st: answer it. */
static void handle_request(struct conn *c, struct stream *st)
{
	const uint8_t *msg = (const uint8_t *)"";
	size_t len = 0;
	ssize_t k = 0;
	int r = 0;

	if (st->method < 0) {
		respond_error(c, st, GRPC_UNIMPLEMENTED, "unknown method");
		return;
	}
	if (st->in.len - st->in.off) {
		k = grpc_frame_next(st->in.p + st->in.off, st->in.len - st->in.off, GRPC_MSG_MAX, &msg, &len);
		if (k <= 0 || (size_t)k != st->in.len - st->in.off) {
			respond_error(c, st, GRPC_INTERNAL, "a unary call wants one whole uncompressed message");
			return;
		}
	}
	logm(1, "call %s", methods[st->method]);
	switch (st->method) {
	case M_OPTIONS: {
		V1beta1__DevicePluginOptions opt = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;

		opt.get_preferred_allocation_available = 1;
		r = buf_put_msg(&st->out, &opt.base);
		break;
	}
	case M_LIST_AND_WATCH:
		st->watch = true;
		st->gen = devs.gen;
		r = put_device_list(&st->out);
		if (!r) {
			respond(c, st);
			return;
		}
		break;
	case M_PREFERRED: {
		V1beta1__PreferredAllocationRequest *q = v1beta1__preferred_allocation_request__unpack(NULL, len, msg);

		if (!q) {
			respond_error(c, st, GRPC_INVALID_ARGUMENT, "GetPreferredAllocation: malformed request");
			return;
		}
		r = do_preferred(q, &st->out);
		v1beta1__preferred_allocation_request__free_unpacked(q, NULL);
		break;
	}
	case M_ALLOCATE: {
		V1beta1__AllocateRequest *q = v1beta1__allocate_request__unpack(NULL, len, msg);

		if (!q) {
			respond_error(c, st, GRPC_INVALID_ARGUMENT, "Allocate: malformed request");
			return;
		}
		r = do_allocate(q, &st->out);
		v1beta1__allocate_request__free_unpacked(q, NULL);
		break;
	}
	case M_PRESTART: {
		V1beta1__PreStartContainerResponse e = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;

		r = buf_put_msg(&st->out, &e.base);
		break;
	}
	}
	if (r == -EINVAL || r == -ERANGE) {
		respond_error(c, st, GRPC_INVALID_ARGUMENT, "%s: %s", methods[st->method] + 22,
			      r == -EINVAL ? "a device ID that is not one of " PROG "'s" : "more devices asked than offered");
		return;
	}
	if (r < 0) {
		respond_error(c, st, GRPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	st->done = true;
	respond(c, st);
}

static int on_begin_headers(nghttp2_session *h2, const nghttp2_frame *f, void *user)
{
	struct conn *c = user;
	struct stream *st;

	if (c->client || f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	if (!(st = stream_new(c, f->hd.stream_id)))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	nghttp2_session_set_stream_user_data(h2, f->hd.stream_id, st);
	return 0;
}

static int on_header(nghttp2_session *h2, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
		     const uint8_t *value, size_t vlen, uint8_t flags, void *user)
{
	struct conn *c = user;
	struct stream *st;

	(void)flags;
	if (c->client) {
		if (nlen == 11 && !memcmp(name, "grpc-status", 11)) {
			char b[16];

			snprintf(b, sizeof(b), "%.*s", (int)(vlen < 15 ? vlen : 15), (const char *)value);
			c->grpc_status = atoi(b);
		} else if (nlen == 12 && !memcmp(name, "grpc-message", 12)) {
			snprintf(c->grpc_msg, sizeof(c->grpc_msg), "%.*s", (int)(vlen < 255 ? vlen : 255),
				 (const char *)value);
		}
		return 0;
	}
	st = nghttp2_session_get_stream_user_data(h2, f->hd.stream_id);
	if (st && nlen == 5 && !memcmp(name, ":path", 5))
		st->method = grpc_method((const char *)value, vlen, methods, M_COUNT);
	return 0;
}

static int on_data_chunk(nghttp2_session *h2, uint8_t flags, int32_t id, const uint8_t *data, size_t len, void *user)
{
	struct conn *c = user;
	struct stream *st;

	(void)flags;
	if (c->client || !(st = nghttp2_session_get_stream_user_data(h2, id)))
		return 0;
	if (st->in.len - st->in.off + len > GRPC_PREFIX + GRPC_MSG_MAX || buf_put(&st->in, data, len))
		nghttp2_submit_rst_stream(h2, NGHTTP2_FLAG_NONE, id, NGHTTP2_REFUSED_STREAM);
	return 0;
}

static int on_frame_recv(nghttp2_session *h2, const nghttp2_frame *f, void *user)
{
	struct conn *c = user;
	struct stream *st;

	if (c->client || !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	if (f->hd.type != NGHTTP2_DATA && f->hd.type != NGHTTP2_HEADERS)
		return 0;
	if ((st = nghttp2_session_get_stream_user_data(h2, f->hd.stream_id)))
		handle_request(c, st);
	return 0;
}

static int on_stream_close(nghttp2_session *h2, int32_t id, uint32_t code, void *user)
{
	struct conn *c = user;
	struct stream *st = nghttp2_session_get_stream_user_data(h2, id);

	(void)code;
	if (c->client)
		c->closed = true;
	if (st)
		stream_free(c, st);
	return 0;
}

static ssize_t send_cb(nghttp2_session *h2, const uint8_t *data, size_t len, int flags, void *user)
{
	struct conn *c = user;
	ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);

	(void)h2;
	(void)flags;
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? NGHTTP2_ERR_WOULDBLOCK :
										    NGHTTP2_ERR_CALLBACK_FAILURE;
	return n;
}

static ssize_t recv_cb(nghttp2_session *h2, uint8_t *buf, size_t len, int flags, void *user)
{
	struct conn *c = user;
	ssize_t n = recv(c->fd, buf, len, MSG_DONTWAIT);

	(void)h2;
	(void)flags;
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? NGHTTP2_ERR_WOULDBLOCK :
										    NGHTTP2_ERR_CALLBACK_FAILURE;
	return n ? n : NGHTTP2_ERR_EOF;
}

/* A connection on fd (taken: closed on failure); NULL on failure. */
static struct conn *conn_new(int fd, bool client)
{
	nghttp2_session_callbacks *cb;
	struct conn *c = calloc(1, sizeof(*c));
	int r;

	if (!c || nghttp2_session_callbacks_new(&cb)) {
		free(c);
		close(fd);
		return NULL;
	}
	c->fd = fd;
	c->client = client;
	c->grpc_status = -1;
	nghttp2_session_callbacks_set_send_callback(cb, send_cb);
	nghttp2_session_callbacks_set_recv_callback(cb, recv_cb);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
	r = client ? nghttp2_session_client_new(&c->h2, cb, c) : nghttp2_session_server_new(&c->h2, cb, c);
	nghttp2_session_callbacks_del(cb);
	if (r) {
		close(fd);
		free(c);
		return NULL;
	}
	{
		nghttp2_settings_entry s[] = { { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 32 } };

		nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, s, 1);
	}
	c->next = conns;
	conns = c;
	return c;
}

/* Send what nghttp2 has for c. Returns false when c is finished (the caller frees it). */
static bool conn_flush(struct conn *c)
{
	if (nghttp2_session_send(c->h2))
		return false;
	return nghttp2_session_want_read(c->h2) || nghttp2_session_want_write(c->h2);
}

/* Queue the current device list on every ListAndWatch stream that has not sent it. */
static void notify_watchers(void)
{
	for (struct conn *c = conns; c; c = c->next)
		for (struct stream *st = c->streams; st; st = st->next)
			if (st->watch && st->gen != devs.gen) {
				st->gen = devs.gen;
				if (put_device_list(&st->out) == 0)
					nghttp2_session_resume_data(c->h2, st->id);
			}
}

/* ---- the plugin's socket and registration --------------------------------------- */

static void close_server(void)
{
	struct conn *c = conns, *next;

	for (; c; c = next) {
		next = c->next;
		if (!c->client)
			conn_free(c);
	}
	if (listen_fd >= 0)
		close(listen_fd);
	listen_fd = -1;
	if (plugin_ino) {
		struct stat s;

		if (!stat(o.plugin_path, &s) && s.st_ino == plugin_ino)
			unlink(o.plugin_path);
	}
	plugin_ino = 0;
}

/* (Re)create the plugin's socket. 0, or a negative errno (logged). */
static int open_server(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat s;
	int fd;

	close_server();
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", o.plugin_path);
	unlink(o.plugin_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16) || stat(o.plugin_path, &s)) {
		int e = errno;

		logm(0, "cannot listen on %s: %s", o.plugin_path, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	listen_fd = fd;
	plugin_ino = s.st_ino;
	registered = false;
	logm(0, "serving %s on %s", o.resource, o.plugin_path);
	return 0;
}

static struct conn *reg_conn(void)
{
	for (struct conn *c = conns; c; c = c->next)
		if (c->client)
			return c;
	return NULL;
}

/* Start Registration.Register on kubelet.sock; the loop finishes it (reg_finish). */
static void reg_start(ino_t ino)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
	V1beta1__DevicePluginOptions opt = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
	nghttp2_nv nv[] = { NV(":method", "POST"), NV(":scheme", "http"), NV(":path", "/v1beta1.Registration/Register"),
			    NV(":authority", "localhost"), NV("content-type", "application/grpc"), NV("te", "trailers"),
			    NV("user-agent", PROG "/" OOO_VERSION_STRING) };
	nghttp2_data_provider prd = { .read_callback = data_read };
	struct stream *st;
	struct conn *c;
	int fd, id;

	attempt_ino = ino;
	retry_at = now_ms() + RETRY_MS;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", o.kubelet_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		/* a unix socket connects at once or not at all (EAGAIN: its backlog is full) */
		logm(0, "cannot connect to %s: %s; again in %d s", o.kubelet_path, strerror(errno), RETRY_MS / 1000);
		if (fd >= 0)
			close(fd);
		return;
	}
	if (!(c = conn_new(fd, true)) || !(st = stream_new(c, 0))) {
		conn_free(c);
		return;
	}
	c->deadline = now_ms() + o.timeout_ms;
	req.version = API_VERSION;
	req.endpoint = (char *)o.endpoint;
	req.resource_name = (char *)o.resource;
	opt.get_preferred_allocation_available = 1;
	req.options = &opt;
	st->done = true;
	prd.source.ptr = st;
	if (buf_put_msg(&st->out, &req.base) ||
	    (id = nghttp2_submit_request(c->h2, NULL, nv, sizeof(nv) / sizeof(nv[0]), &prd, st)) < 0) {
		conn_free(c);
		return;
	}
	st->id = id;
	logm(1, "Register %s at %s", o.resource, o.kubelet_path);
}

/* The Register call ended (or timed out: timed_out): note the outcome, free c. */
static void reg_finish(struct conn *c, bool timed_out)
{
	if (c->grpc_status == 0 && c->closed) {
		registered = true;
		logm(0, "registered %s (%u GPUs x %u slots) with kubelet", o.resource, devs.n, o.slots);
	} else if (timed_out) {
		logm(0, "kubelet did not answer Register within %d ms; again in %d s", o.timeout_ms, RETRY_MS / 1000);
	} else {
		logm(0, "kubelet refused Register (grpc-status %d%s%s); again in %d s", c->grpc_status,
		     c->grpc_msg[0] ? ": " : "", c->grpc_msg, RETRY_MS / 1000);
	}
	conn_free(c);
}

/* Our socket gone: listen again. kubelet.sock new (kubelet restarted) or not registered: Register. */
static void check_sockets(void)
{
	struct stat s;

	if (stat(o.plugin_path, &s) || s.st_ino != plugin_ino) {
		if (plugin_ino)
			logm(0, "%s was removed (kubelet restarted?): listening again", o.plugin_path);
		if (open_server())
			return;
	}
	if (reg_conn() || stat(o.kubelet_path, &s))
		return;
	if (s.st_ino != attempt_ino) {
		if (attempt_ino && registered)
			logm(0, "%s is new (kubelet restarted): registering again", o.kubelet_path);
		registered = false;
		reg_start(s.st_ino);
	} else if (!registered && now_ms() >= retry_at) {
		reg_start(s.st_ino);
	}
}

/* ---- options and the loop ----------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [OPTIONS]\n"
		"A kubelet device plugin (API " API_VERSION ") that offers oood's GPUs to Kubernetes\n"
		"as tenant slots of one resource: a container that asks for it gets oood's tenant\n"
		"socket mounted and OOO_SOCKET set.\n"
		"\n"
		"Options:\n"
		"  --kubelet-dir DIR    kubelet's device-plugin directory (default " DEFAULT_KUBELET_DIR ")\n"
		"  --endpoint NAME      the plugin's socket in DIR (default ooo-gpu.sock)\n"
		"  --resource NAME      the resource name (default ooo.dev/gpu)\n"
		"  --slots-per-gpu N    tenant slots offered per GPU, 1 to %u (default %u)\n"
		"  --rundir DIR         oood's run directory: DIR/admin.sock is asked for the devices,\n"
		"                       DIR/oood.sock is the tenants' socket (default: $OOO_RUNDIR,\n"
		"                       else " OOO_DEFAULT_RUNDIR ")\n"
		"  --socket PATH        the tenants' socket to mount into containers, at the same path\n"
		"                       (default RUNDIR/" OOO_SOCKET_NAME ")\n"
		"  --poll-ms MS         how often oood is asked for its devices (default 2000)\n"
		"  --timeout MS         timeout of each call to oood and of Register (default 5000)\n"
		"  -v, --verbose        log every call\n"
		"  -h, --help           this help\n"
		"  --version            print the version\n"
		"\n"
		"Runs until SIGTERM or SIGINT, then removes its socket and exits 0. Exit status 2:\n"
		"usage error; 1: the socket or the directory watch could not be set up.\n"
		"See docs/kubernetes.md.\n",
		SLOTS_PER_GPU_MAX, DEFAULT_SLOTS);
}

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry '" PROG " --help'.\n", stderr);
	return 2;
}

static int set_path(sockpath out, const char *what, const char *dir, const char *name)
{
	int r = snprintf(out, sizeof(sockpath), "%s%s%s", dir, name ? "/" : "", name ? name : "");

	if (r < 0 || (size_t)r >= sizeof(sockpath))
		return usage_error("%s: path too long for a unix socket (%zu bytes at most)", what, sizeof(sockpath) - 1);
	return 0;
}

static int parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "kubelet-dir", required_argument, NULL, 'k' }, { "endpoint", required_argument, NULL, 'e' },
		{ "resource", required_argument, NULL, 'R' },    { "slots-per-gpu", required_argument, NULL, 's' },
		{ "rundir", required_argument, NULL, 'r' },      { "socket", required_argument, NULL, 'S' },
		{ "poll-ms", required_argument, NULL, 'p' },     { "timeout", required_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' },           { "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },           { NULL, 0, NULL, 0 },
	};
	const char *rundir = getenv("OOO_RUNDIR"), *sock = NULL;
	uint64_t v;
	int c, r;

	if (!rundir || !*rundir)
		rundir = OOO_DEFAULT_RUNDIR;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			o.kubelet_dir = optarg;
			break;
		case 'e':
			if (!*optarg || strchr(optarg, '/') || !strcmp(optarg, KUBELET_SOCK))
				return usage_error("--endpoint wants a file name other than " KUBELET_SOCK ", not '%s'", optarg);
			o.endpoint = optarg;
			break;
		case 'R':
			if (!strchr(optarg, '/') || strlen(optarg) > 253)
				return usage_error("--resource wants DOMAIN/NAME, not '%s'", optarg);
			o.resource = optarg;
			break;
		case 's':
			if (args_u64(optarg, 10, 1, SLOTS_PER_GPU_MAX, &v))
				return usage_error("--slots-per-gpu wants 1 to %u, not '%s'", SLOTS_PER_GPU_MAX, optarg);
			o.slots = (unsigned)v;
			break;
		case 'r':
			rundir = optarg;
			break;
		case 'S':
			if (optarg[0] != '/')
				return usage_error("--socket wants an absolute path, not '%s'", optarg);
			sock = optarg;
			break;
		case 'p':
		case 't':
			if (args_u64(optarg, 10, c == 'p' ? 100 : 1, 600000, &v))
				return usage_error("--%s wants milliseconds from %d to 600000, not '%s'",
						   c == 'p' ? "poll-ms" : "timeout", c == 'p' ? 100 : 1, optarg);
			*(c == 'p' ? &o.poll_ms : &o.timeout_ms) = (int)v;
			break;
		case 'v':
			o.verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf(PROG " %s (git %s)\n", OOO_VERSION_STRING, OOO_GIT_REV);
			exit(0);
		case ':':
			return usage_error("option '%s' needs an argument", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if ((r = set_path(o.plugin_path, "--kubelet-dir", o.kubelet_dir, o.endpoint)) ||
	    (r = set_path(o.kubelet_path, "--kubelet-dir", o.kubelet_dir, KUBELET_SOCK)) ||
	    (r = set_path(o.admin_path, "--rundir", rundir, OOO_ADMIN_SOCKET_NAME)) ||
	    (r = sock ? set_path(o.tenant_path, "--socket", sock, NULL) :
			set_path(o.tenant_path, "--rundir", rundir, OOO_SOCKET_NAME)))
		return r;
	if (o.tenant_path[0] != '/')
		return usage_error("the tenants' socket must be an absolute path: %s (see --rundir, --socket)",
				   o.tenant_path);
	return 0;
}

int main(int argc, char **argv)
{
	struct pollfd pf[3 + MAX_CONNS];
	struct conn *pc[MAX_CONNS];
	int64_t next_tick = 0;
	int sfd, ifd, r;
	sigset_t ss;

	if ((r = parse_args(argc, argv)))
		return r;
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	sfd = signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC);
	ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (sfd < 0 || ifd < 0 || inotify_add_watch(ifd, o.kubelet_dir, IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM) < 0) {
		logm(0, "cannot watch %s: %s", o.kubelet_dir, strerror(errno));
		return 1;
	}
	logm(0, PROG " %s: %s, %u slots per GPU, oood at %s, tenants' socket %s", OOO_VERSION_STRING, o.resource, o.slots,
	     o.admin_path, o.tenant_path);
	poll_oood();
	if (open_server())
		return 1;
	for (;;) {
		int64_t now = now_ms(), wait;
		struct conn *c, *next;
		size_t n = 0, nc = 0;

		if (now >= next_tick) {
			if (poll_oood())
				notify_watchers();
			check_sockets();
			next_tick = now_ms() + o.poll_ms;
		}
		for (c = conns; c; c = next) {
			next = c->next;
			if (c->client && (c->closed || now_ms() >= c->deadline)) {
				reg_finish(c, !c->closed);
				continue;
			}
			if (!conn_flush(c)) {
				if (c->client)
					reg_finish(c, false);
				else
					conn_free(c);
			}
		}
		pf[n++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = ifd, .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = listen_fd, .events = POLLIN };
		wait = next_tick - now_ms();
		for (c = conns; c && nc < MAX_CONNS; c = c->next) {
			short ev = (nghttp2_session_want_read(c->h2) ? POLLIN : 0) |
				   (nghttp2_session_want_write(c->h2) ? POLLOUT : 0);

			pc[nc++] = c;
			pf[n++] = (struct pollfd){ .fd = c->fd, .events = ev };
			if (c->client && c->deadline - now_ms() < wait)
				wait = c->deadline - now_ms();
		}
		if (wait < 0)
			wait = 0;
		if (poll(pf, n, (int)wait) < 0 && errno != EINTR) {
			logm(0, "poll: %s", strerror(errno));
			break;
		}
		if (pf[0].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				logm(0, "signal %u: removing %s and exiting", si.ssi_signo, o.plugin_path);
				break;
			}
		}
		if (pf[1].revents) {
			char evb[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

			while (read(ifd, evb, sizeof(evb)) > 0)
				; /* which event does not matter: look at both sockets */
			check_sockets();
		}
		if (listen_fd >= 0 && pf[2].revents & POLLIN) {
			int fd;

			while ((fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
				size_t k = 0;

				for (c = conns; c; c = c->next)
					k++;
				if (k >= MAX_CONNS) {
					close(fd);
					continue;
				}
				if (conn_new(fd, false))
					logm(1, "kubelet connected");
			}
		}
		for (size_t i = 0; i < nc; i++) {
			c = pc[i];
			if (!pf[3 + i].revents)
				continue;
			/* c may be gone: a restarted server frees its connections */
			for (next = conns; next && next != c; next = next->next)
				;
			if (!next)
				continue;
			if ((pf[3 + i].revents & (POLLIN | POLLHUP | POLLERR)) && nghttp2_session_recv(c->h2)) {
				if (c->client)
					reg_finish(c, false);
				else
					conn_free(c);
			}
		}
	}
	while (conns)
		conn_free(conns);
	close_server();
	ooo_close(admin);
	return 0;
}
