/* SPDX-License-Identifier: MIT */
/*
 * The executor: one process per GPU, spawned and supervised by oood. It
 * drops root, loads libcuda, opens its device's primary context, reports
 * what it found, and then serves oood on its control socket until oood
 * closes it. A CUDA fault kills only this process; oood starts another.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <stdarg.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "../../client/wire.h"
#include "cuda.h"
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
	default:
		return -OOO_EPROTO;
	}
}

static void exec_log(unsigned dev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void exec_log(unsigned dev, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* stderr is oood's: the foreground terminal or the journal */
	fprintf(stderr, "oood[executor gpu%u]: %s\n", dev, line);
}

static int send_msg(int fd, uint16_t type, const void *p, size_t n)
{
	unsigned char buf[sizeof(struct ooo_msg_hdr) + sizeof(struct exec_ready)];
	ssize_t len = wire_encode(buf, sizeof(buf), type, 0, 0, p, n);

	if (len < 0)
		return (int)len;
	return send(fd, buf, (size_t)len, MSG_NOSIGNAL) == len ? 0 : -errno;
}

static int drop_root(const char *user, char *why, size_t cap)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	if (geteuid() != 0)
		return 0; /* a private instance: already unprivileged */
	if (getpwnam_r(user, &pw, buf, sizeof(buf), &res) != 0 || !res) {
		snprintf(why, cap, "executor_user '%s' does not exist", user);
		return -ENOENT;
	}
	if (setgroups(0, NULL) < 0 || setgid(pw.pw_gid) < 0 || setuid(pw.pw_uid) < 0) {
		snprintf(why, cap, "cannot become %s: %s", user, strerror(errno));
		return -EPERM;
	}
	if (setuid(0) == 0) {
		snprintf(why, cap, "still able to regain root after dropping to %s", user);
		return -EPERM;
	}
	return 0;
}

/* Open the device; fill r. Returns 0, or an exit code for the executor. */
static int open_device(struct cuda_api *api, const char *libcuda, unsigned dev, struct exec_ready *r,
		       CUcontext *ctx)
{
	char e[256];
	CUdevice d;
	CUresult cr;
	int count = 0, v;
	size_t mfree = 0, mtotal = 0;
	CUuuid uuid;

	if (cuda_load(api, libcuda, r->reason, sizeof(r->reason)) < 0) {
		r->status = -OOO_ENODEV;
		return EXEC_EXIT_NODEV;
	}
	r->driver_version = api->driver_version;
	cr = api->p_cuInit(0);
	if (cr != CUDA_SUCCESS) {
		snprintf(r->reason, sizeof(r->reason), "cuInit: %s", cuda_strerror(api, cr, e, sizeof(e)));
		r->status = -OOO_ENODEV;
		return cuda_error_is_nodev(cr) ? EXEC_EXIT_NODEV : 1;
	}
	if (api->p_cuDeviceGetCount(&count) != CUDA_SUCCESS)
		count = 0;
	r->device_count = (uint32_t)count;
	if ((int)dev >= count) {
		snprintf(r->reason, sizeof(r->reason), "device %u does not exist (the driver reports %d)", dev, count);
		r->status = -OOO_ENODEV;
		return EXEC_EXIT_NODEV;
	}
	cr = api->p_cuDeviceGet(&d, (int)dev);
	if (cr == CUDA_SUCCESS)
		cr = api->p_cuDeviceGetName(r->name, sizeof(r->name) - 1, d);
	if (cr == CUDA_SUCCESS)
		cr = api->p_cuDeviceTotalMem(&mtotal, d);
	if (cr == CUDA_SUCCESS && api->p_cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d) ==
					  CUDA_SUCCESS)
		r->sm_count = (uint32_t)v;
	if (cr == CUDA_SUCCESS &&
	    api->p_cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d) == CUDA_SUCCESS)
		r->cc_major = (uint32_t)v;
	if (cr == CUDA_SUCCESS &&
	    api->p_cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d) == CUDA_SUCCESS)
		r->cc_minor = (uint32_t)v;
	if (cr == CUDA_SUCCESS && api->p_cuDeviceGetUuid(&uuid, d) == CUDA_SUCCESS)
		memcpy(r->uuid, uuid.bytes, sizeof(r->uuid));
	if (cr == CUDA_SUCCESS)
		cr = api->p_cuDevicePrimaryCtxRetain(ctx, d);
	if (cr == CUDA_SUCCESS)
		cr = api->p_cuCtxSetCurrent(*ctx);
	if (cr == CUDA_SUCCESS)
		cr = api->p_cuMemGetInfo(&mfree, &mtotal);
	if (cr != CUDA_SUCCESS) {
		snprintf(r->reason, sizeof(r->reason), "device %u: %s", dev, cuda_strerror(api, cr, e, sizeof(e)));
		r->status = -OOO_ENODEV;
		return 1; /* the device exists: a restart may succeed */
	}
	r->mem_total = mtotal;
	r->mem_free = mfree;
	return 0;
}

/* Serve oood until it closes the control socket. */
static int serve(int fd)
{
	unsigned char buf[512];

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		const void *payload;
		size_t plen;
		uint16_t type;
		ssize_t n;

		if (poll(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		n = recv(fd, buf, sizeof(buf), 0);
		if (n == 0)
			return 0; /* oood closed: we are done */
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == ECONNRESET ? 0 : 1;
		}
		if (exec_msg_check(buf, (size_t)n, &type, &payload, &plen) < 0)
			return 1; /* oood never sends garbage: something is badly wrong */
		if (type == EXEC_MSG_PING && send_msg(fd, EXEC_MSG_PING | OOO_MSG_REPLY, payload, plen) < 0)
			return 1;
	}
}

int executor_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "executor", no_argument, NULL, 'x' },	      { "device", required_argument, NULL, 'd' },
		{ "user", required_argument, NULL, 'u' },      { "libcuda", required_argument, NULL, 'l' },
		{ 0 },
	};
	const char *user = "nobody", *libcuda = "libcuda.so.1";
	struct exec_ready r = { 0 };
	struct cuda_api api = { 0 };
	CUcontext ctx = NULL;
	unsigned long dev = 0;
	char *end;
	int c, rc;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'x': break;
		case 'd':
			errno = 0;
			dev = strtoul(optarg, &end, 10);
			if (errno || *end || dev > 1024)
				return EXEC_EXIT_USAGE;
			break;
		case 'u': user = optarg; break;
		case 'l': libcuda = optarg; break;
		default: return EXEC_EXIT_USAGE;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	r.device = (uint32_t)dev;
	if (drop_root(user, r.reason, sizeof(r.reason)) < 0) {
		r.status = -OOO_ENODEV;
		rc = EXEC_EXIT_NODEV;
	} else {
		/* die with oood rather than outlive it; set after setuid, which clears it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			return 1;
		rc = open_device(&api, libcuda, (unsigned)dev, &r, &ctx);
	}
	if (rc)
		exec_log((unsigned)dev, "%s", r.reason);
	if (send_msg(EXEC_CTL_FD, EXEC_MSG_READY, &r, sizeof(r)) < 0)
		rc = rc ? rc : 1;
	if (rc == 0)
		rc = serve(EXEC_CTL_FD);
	if (ctx) {
		CUdevice d;
		if (api.p_cuDeviceGet(&d, (int)dev) == CUDA_SUCCESS)
			api.p_cuDevicePrimaryCtxRelease(d);
	}
	cuda_unload(&api);
	return rc;
}
