/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for submission validation. The first bytes describe a
 * session (buffers, kernels, live queues and events, staging size); the rest
 * is a sequence of 64-byte submissions, each validated in turn. An entry
 * with opcode 0xff is not validated but changes the session: it adds the
 * buffer [copy.dst, + copy.len) when flags bit 0 is set, else removes the
 * buffer at copy.dst.
 *
 * Aborts when
 *   - an accepted copy or memset names a device range that no one session
 *     buffer holds, or a staging range outside [0, staging_size) (checked by
 *     brute force over a separate list of the buffers);
 *   - validate_sqe accepts or refuses other than a reference written from
 *     the rules in shm.h and validate.h;
 *   - a refusal has an unexpected code or no reason, or the code differs
 *     without a place for the reason;
 *   - the buffer table disagrees with the list (add/del results, order).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/exec/validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_BUFS 8
#define MAX_KERNELS 4
#define MAX_QUEUES 8
#define MAX_EVENTS 8
#define MODEL_MAX 64
#define OP_CONTROL 0xff

typedef unsigned __int128 u128;

/* The session header at the start of the input, zero-padded when short. */
struct fuzz_hdr {
	uint8_t nbufs;    /* % (MAX_BUFS + 1) */
	uint8_t nkernels; /* % (MAX_KERNELS + 1) */
	uint8_t nqueues;  /* % (MAX_QUEUES + 1) */
	uint8_t qlive;    /* bit i: queue i is live */
	uint8_t nevents;  /* % (MAX_EVENTS + 1) */
	uint8_t elive;
	uint8_t pad[2];
	uint64_t staging_size;
	struct {
		uint64_t addr, size;
	} bufs[MAX_BUFS];
	struct {
		uint32_t live, param_size, max_threads, max_dyn_shmem;
	} kernels[MAX_KERNELS];
};

_Static_assert(sizeof(struct fuzz_hdr) == 208, "fuzz header layout");
_Static_assert(sizeof(struct ooo_sqe) == 64, "sqe layout");

/* The brute-force list of the session's buffers, in no order. */
struct model {
	uint64_t addr[MODEL_MAX], size[MODEL_MAX];
	size_t n;
};

static int model_add(struct model *m, uint64_t addr, uint64_t size)
{
	u128 end = (u128)addr + size;

	if (!size || end > UINT64_MAX)
		return -EINVAL;
	for (size_t i = 0; i < m->n; i++) {
		if (addr < (u128)m->addr[i] + m->size[i] && m->addr[i] < end)
			return -EEXIST;
	}
	if (m->n == MODEL_MAX)
		return -ENOMEM;
	m->addr[m->n] = addr;
	m->size[m->n] = size;
	m->n++;
	return 0;
}

static int model_del(struct model *m, uint64_t addr)
{
	for (size_t i = 0; i < m->n; i++) {
		if (m->addr[i] == addr) {
			m->n--;
			m->addr[i] = m->addr[m->n];
			m->size[i] = m->size[m->n];
			return 0;
		}
	}
	return -ENOENT;
}

/* Does one buffer of the list hold all of [addr, addr + len)? */
static bool model_holds(const struct model *m, uint64_t addr, u128 len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < m->n; i++) {
		if (m->addr[i] <= addr && (u128)addr + len <= (u128)m->addr[i] + m->size[i])
			return true;
	}
	return false;
}

static bool staging_holds(uint64_t staging_size, uint64_t off, u128 len)
{
	return len && (u128)off + len <= staging_size;
}

/*
 * The host side of a copy: untagged addresses are staging offsets; tagged
 * ones name host regions (OOO_HOST_ADDR), of which this harness has none.
 */
static bool host_holds(uint64_t staging_size, uint64_t addr, u128 len)
{
	return !(addr >> OOO_HOST_TAG_SHIFT) && staging_holds(staging_size, addr, len);
}

/* The table agrees with the list: same buffers, sorted, disjoint. */
static void check_table(const struct vbufs *t, const struct model *m)
{
	if (t->n != m->n)
		abort();
	for (size_t i = 0; i + 1 < t->n; i++) {
		if ((u128)t->v[i].addr + t->v[i].size > t->v[i + 1].addr)
			abort();
	}
	for (size_t i = 0; i < m->n; i++) {
		size_t j;
		for (j = 0; j < t->n; j++) {
			if (t->v[j].addr == m->addr[i] && t->v[j].size == m->size[i])
				break;
		}
		if (j == t->n)
			abort();
	}
}

/* Would the rules accept it? Written from the headers, not from validate.c. */
static bool reference_ok(const struct ooo_sqe *e, const struct vsession *vs, const struct model *m)
{
	if (e->flags & ~OOO_SQE_FLAGS_ALL || e->opcode >= OOO_OP_MAX) /* submit_us: any value */
		return false;
	if (e->queue >= vs->nqueues || !vs->queue_live[e->queue])
		return false;
	switch (e->opcode) {
	case OOO_OP_NOP:
		return true;
	case OOO_OP_LAUNCH: {
		const struct vkernel *k;
		uint64_t threads = 1;

		if (e->launch.kernel >= vs->nkernels || !vs->kernels[e->launch.kernel].live)
			return false;
		k = &vs->kernels[e->launch.kernel];
		for (int i = 0; i < 3; i++) {
			if (!e->launch.grid[i] || !e->launch.block[i])
				return false;
			threads *= e->launch.block[i];
		}
		if (e->launch.grid[0] > 2147483647u || e->launch.grid[1] > 65535 || e->launch.grid[2] > 65535)
			return false;
		if (e->launch.block[0] > 1024 || e->launch.block[1] > 1024 || e->launch.block[2] > 64)
			return false;
		if (threads > k->max_threads || e->launch.shmem > k->max_dyn_shmem)
			return false;
		if (e->launch.param_len != k->param_size)
			return false;
		if (k->param_size &&
		    (e->launch.param_off % 8 || !staging_holds(vs->staging_size, e->launch.param_off, k->param_size)))
			return false;
		return true;
	}
	case OOO_OP_HTOD:
		return host_holds(vs->staging_size, e->copy.src, e->copy.len) &&
		       model_holds(m, e->copy.dst, e->copy.len);
	case OOO_OP_DTOH:
		return model_holds(m, e->copy.src, e->copy.len) &&
		       host_holds(vs->staging_size, e->copy.dst, e->copy.len);
	case OOO_OP_DTOD:
		return model_holds(m, e->copy.src, e->copy.len) && model_holds(m, e->copy.dst, e->copy.len);
	case OOO_OP_MEMSET: {
		uint32_t es = e->set.elsize;

		if (es != 1 && es != 2 && es != 4)
			return false;
		if (es < 4 && e->set.value >= (1u << (8 * es)))
			return false;
		if (e->set.dst % es)
			return false;
		return model_holds(m, e->set.dst, (u128)e->set.count * es);
	}
	case OOO_OP_EVENT_RECORD:
	case OOO_OP_EVENT_WAIT:
		return e->event.event < vs->nevents && vs->event_live[e->event.event];
	default:
		return false;
	}
}

/* The safety property on its own: what an accepted entry touches is the session's. */
static void check_accepted(const struct ooo_sqe *e, const struct vsession *vs, const struct model *m)
{
	switch (e->opcode) {
	case OOO_OP_LAUNCH: {
		const struct vkernel *k;

		if (e->launch.kernel >= vs->nkernels || !vs->kernels[e->launch.kernel].live)
			abort();
		k = &vs->kernels[e->launch.kernel];
		if (k->param_size && !staging_holds(vs->staging_size, e->launch.param_off, e->launch.param_len))
			abort();
		break;
	}
	case OOO_OP_HTOD:
		if (!host_holds(vs->staging_size, e->copy.src, e->copy.len) ||
		    !model_holds(m, e->copy.dst, e->copy.len))
			abort();
		break;
	case OOO_OP_DTOH:
		if (!model_holds(m, e->copy.src, e->copy.len) ||
		    !host_holds(vs->staging_size, e->copy.dst, e->copy.len))
			abort();
		break;
	case OOO_OP_DTOD:
		if (!model_holds(m, e->copy.src, e->copy.len) || !model_holds(m, e->copy.dst, e->copy.len))
			abort();
		break;
	case OOO_OP_MEMSET:
		if (e->set.elsize != 1 && e->set.elsize != 2 && e->set.elsize != 4)
			abort();
		if (!model_holds(m, e->set.dst, (u128)e->set.count * e->set.elsize))
			abort();
		break;
	case OOO_OP_EVENT_RECORD:
	case OOO_OP_EVENT_WAIT:
		if (e->event.event >= vs->nevents || !vs->event_live[e->event.event])
			abort();
		break;
	default:
		break;
	}
	if (e->queue >= vs->nqueues || !vs->queue_live[e->queue])
		abort();
}

static void control(const struct ooo_sqe *e, struct vbufs *t, struct model *m)
{
	if (e->flags & 1) {
		int want = model_add(m, e->copy.dst, e->copy.len);

		if (want == -ENOMEM)
			return;
		if (vbufs_add(t, e->copy.dst, e->copy.len) != want)
			abort();
	} else {
		if (vbufs_del(t, e->copy.dst) != model_del(m, e->copy.dst))
			abort();
	}
	check_table(t, m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct model m;
	struct fuzz_hdr h;
	struct vbufs bufs = { 0 };
	struct vkernel kernels[MAX_KERNELS];
	uint8_t qlive[MAX_QUEUES], elive[MAX_EVENTS];
	struct vsession vs;
	size_t off;

	memset(&h, 0, sizeof(h));
	memcpy(&h, data, size < sizeof(h) ? size : sizeof(h));
	off = size < sizeof(h) ? size : sizeof(h);

	m.n = 0;
	for (unsigned i = 0; i < h.nbufs % (MAX_BUFS + 1); i++) {
		int want = model_add(&m, h.bufs[i].addr, h.bufs[i].size);

		if (vbufs_add(&bufs, h.bufs[i].addr, h.bufs[i].size) != want)
			abort();
	}
	check_table(&bufs, &m);

	memset(kernels, 0, sizeof(kernels));
	for (unsigned i = 0; i < MAX_KERNELS; i++) {
		kernels[i].live = h.kernels[i].live & 1;
		kernels[i].param_size = h.kernels[i].param_size;
		kernels[i].max_threads = h.kernels[i].max_threads;
		kernels[i].max_dyn_shmem = h.kernels[i].max_dyn_shmem;
	}
	for (unsigned i = 0; i < MAX_QUEUES; i++)
		qlive[i] = (h.qlive >> i) & 1;
	for (unsigned i = 0; i < MAX_EVENTS; i++)
		elive[i] = (h.elive >> i) & 1;
	vs = (struct vsession){
		.bufs = &bufs,
		.kernels = kernels,
		.nkernels = h.nkernels % (MAX_KERNELS + 1),
		.queue_live = qlive,
		.nqueues = h.nqueues % (MAX_QUEUES + 1),
		.event_live = elive,
		.nevents = h.nevents % (MAX_EVENTS + 1),
		.staging_size = h.staging_size,
	};

	while (off < size) {
		struct ooo_sqe e, copy;
		size_t n = size - off < sizeof(e) ? size - off : sizeof(e);
		const char *why = NULL;
		int rc;

		memset(&e, 0, sizeof(e));
		memcpy(&e, data + off, n);
		off += n;
		if (e.opcode == OP_CONTROL) {
			control(&e, &bufs, &m);
			continue;
		}
		copy = e;
		rc = validate_sqe(&e, &vs, &why);
		if (memcmp(&e, &copy, sizeof(e)))
			abort();
		if (rc != validate_sqe(&e, &vs, NULL))
			abort();
		if (rc == 0) {
			check_accepted(&e, &vs, &m);
		} else {
			if (rc != -EINVAL && rc != -ENOENT && rc != -EFAULT && rc != -E2BIG)
				abort();
			if (!why || !*why)
				abort();
		}
		if ((rc == 0) != reference_ok(&e, &vs, &m))
			abort();
	}
	check_table(&bufs, &m);
	vbufs_free(&bufs);
	if (bufs.v || bufs.n || bufs.cap)
		abort();
	return 0;
}
