/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of submission validation: the buffer table (against a
 * brute-force model too) and every acceptance and rejection path of
 * validate_sqe, with its exact error code and reason.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "../../daemon/exec/validate.h"

/* The reasons, word for word. */
#define R_HDR "unknown flags"
#define R_OPCODE "unknown opcode"
#define R_QUEUE "unknown queue"
#define R_KERNEL "unknown kernel"
#define R_DIM0 "grid and block dimensions must be at least 1"
#define R_GRID "grid larger than the device allows (2^31-1 x 65535 x 65535)"
#define R_BLOCK "block larger than the device allows (1024 x 1024 x 64)"
#define R_THREADS "more threads per block than the kernel allows"
#define R_SHMEM "more dynamic shared memory than the kernel allows"
#define R_PLEN "parameter bytes do not match the kernel's parameter layout"
#define R_PARAMS "parameters outside the staging area or misaligned"
#define R_CSRC_STG "copy source outside the staging area"
#define R_CDST_STG "copy destination outside the staging area"
#define R_CSRC_BUF "copy source is not inside one of the session's buffers"
#define R_CDST_BUF "copy destination is not inside one of the session's buffers"
#define R_ELSIZE "memset element size must be 1, 2 or 4"
#define R_VALUE "memset value does not fit its element size"
#define R_SET_BUF "memset range is not inside one of the session's buffers"
#define R_SET_ALIGN "memset destination is not aligned to its element size"
#define R_EVENT "unknown event"

/* ---- a small deterministic PRNG ------------------------------------------ */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static uint64_t rnd_below(uint64_t n)
{
	return rnd() % n;
}

/* ---- the buffer table ---------------------------------------------------- */

static void assert_sorted(const struct vbufs *t)
{
	for (size_t i = 0; i + 1 < t->n; i++) {
		assert_true(t->v[i].addr < t->v[i + 1].addr);
		assert_true(t->v[i].addr + t->v[i].size <= t->v[i + 1].addr);
	}
}

static void test_vbufs_empty(void **state)
{
	struct vbufs t = { 0 };

	assert_false(vbufs_contains(&t, 0, 1));
	assert_false(vbufs_contains(&t, 0x1000, 16));
	assert_int_equal(vbufs_del(&t, 0), -ENOENT);
	assert_int_equal(vbufs_del(&t, 0x1000), -ENOENT);
	vbufs_free(&t);
	assert_null(t.v);
	assert_int_equal(t.n, 0);
}

static void test_vbufs_sorted_random_order(void **state)
{
	enum { N = 200 };
	uint64_t order[N];
	struct vbufs t = { 0 };

	rng_state = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < N; i++)
		order[i] = (uint64_t)i;
	for (int i = N - 1; i > 0; i--) {
		uint64_t j = rnd_below((uint64_t)i + 1), tmp = order[i];
		order[i] = order[j];
		order[j] = tmp;
	}
	/* buffer k: [k * 0x1000, + 0x100 + k), gaps between them */
	for (int i = 0; i < N; i++) {
		uint64_t k = order[i];
		assert_int_equal(vbufs_add(&t, k * 0x1000, 0x100 + k), 0);
		assert_int_equal(t.n, (size_t)i + 1);
		assert_sorted(&t);
	}
	for (size_t k = 0; k < N; k++) {
		assert_int_equal(t.v[k].addr, k * 0x1000);
		assert_int_equal(t.v[k].size, 0x100 + k);
		assert_true(vbufs_contains(&t, k * 0x1000, 0x100 + k));
		assert_false(vbufs_contains(&t, k * 0x1000, 0x101 + k));
	}
	/* remove every other one, in another order, and the rest stay sorted */
	for (int i = 0; i < N; i++) {
		if (order[i] % 2)
			assert_int_equal(vbufs_del(&t, order[i] * 0x1000), 0);
	}
	assert_int_equal(t.n, N / 2);
	assert_sorted(&t);
	for (size_t k = 0; k < N / 2; k++)
		assert_int_equal(t.v[k].addr, 2 * k * 0x1000);
	vbufs_free(&t);
	assert_null(t.v);
	assert_int_equal(t.n, 0);
	assert_int_equal(t.cap, 0);
}

static void test_vbufs_overlap(void **state)
{
	struct vbufs t = { 0 };
	static const struct {
		uint64_t addr, size;
	} bad[] = {
		{ 1000, 100 },  /* exact */
		{ 1000, 1 },    /* same start, shorter */
		{ 1000, 500 },  /* same start, longer */
		{ 1010, 10 },   /* inside */
		{ 1099, 1 },    /* the last byte */
		{ 900, 300 },   /* covering */
		{ 999, 102 },   /* covering by one byte each side */
		{ 950, 100 },   /* straddling the start */
		{ 999, 2 },     /* one byte over the start */
		{ 1050, 100 },  /* straddling the end */
		{ 1099, 100 },  /* one byte under the end */
		{ 1150, 200 },  /* straddling the gap: end of #1, start of #2 */
		{ 500, 2000 },  /* covering both */
		{ 1300, 50 },   /* straddling the start of #2 */
		{ 1399, 1000 }, /* straddling the end of #2 */
		{ 0, UINT64_MAX }, /* everything */
	};

	assert_int_equal(vbufs_add(&t, 1000, 100), 0);
	assert_int_equal(vbufs_add(&t, 1300, 100), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(vbufs_add(&t, bad[i].addr, bad[i].size), -EEXIST);
		assert_int_equal(t.n, 2);
	}
	assert_int_equal(t.v[0].addr, 1000);
	assert_int_equal(t.v[1].addr, 1300);
	vbufs_free(&t);
}

static void test_vbufs_adjacent(void **state)
{
	struct vbufs t = { 0 };

	assert_int_equal(vbufs_add(&t, 1000, 100), 0);
	assert_int_equal(vbufs_add(&t, 900, 100), 0);  /* ends where #1 starts */
	assert_int_equal(vbufs_add(&t, 1100, 100), 0); /* starts where #1 ends */
	assert_int_equal(vbufs_add(&t, 1300, 100), 0);
	assert_int_equal(vbufs_add(&t, 1200, 100), 0); /* fills the gap exactly */
	assert_int_equal(vbufs_add(&t, 0, 1), 0);      /* address 0 */
	assert_int_equal(vbufs_add(&t, 1, 899), 0);    /* fills [1, 900) */
	assert_int_equal(t.n, 7);
	assert_sorted(&t);
	for (size_t i = 0; i + 1 < t.n; i++)
		assert_int_equal(t.v[i].addr + t.v[i].size, t.v[i + 1].addr);
	/* touching is not holding: one buffer must hold the whole range */
	assert_false(vbufs_contains(&t, 950, 100));
	assert_true(vbufs_contains(&t, 900, 100));
	assert_true(vbufs_contains(&t, 1000, 100));
	vbufs_free(&t);
}

static void test_vbufs_invalid(void **state)
{
	struct vbufs t = { 0 };

	assert_int_equal(vbufs_add(&t, 1000, 0), -EINVAL);
	assert_int_equal(vbufs_add(&t, 0, 0), -EINVAL);
	assert_int_equal(vbufs_add(&t, UINT64_MAX, 0), -EINVAL);
	assert_int_equal(vbufs_add(&t, UINT64_MAX, 2), -EINVAL);
	assert_int_equal(vbufs_add(&t, 2, UINT64_MAX), -EINVAL);
	assert_int_equal(vbufs_add(&t, UINT64_MAX - 10, 100), -EINVAL);
	/* a range that would end exactly at 2^64 counts as wrapping */
	assert_int_equal(vbufs_add(&t, UINT64_MAX, 1), -EINVAL);
	assert_int_equal(vbufs_add(&t, 1, UINT64_MAX), -EINVAL);
	assert_int_equal(t.n, 0);
	/* the largest that fit: end at UINT64_MAX */
	assert_int_equal(vbufs_add(&t, UINT64_MAX - 10, 10), 0);
	assert_true(vbufs_contains(&t, UINT64_MAX - 10, 10));
	assert_true(vbufs_contains(&t, UINT64_MAX - 1, 1));
	assert_false(vbufs_contains(&t, UINT64_MAX, 1));
	assert_false(vbufs_contains(&t, UINT64_MAX - 1, 2));
	assert_int_equal(vbufs_add(&t, 0, UINT64_MAX - 10), 0);
	assert_int_equal(t.n, 2);
	assert_true(vbufs_contains(&t, 0, UINT64_MAX - 10));
	assert_false(vbufs_contains(&t, 0, UINT64_MAX - 9));
	vbufs_free(&t);
}

static void test_vbufs_del(void **state)
{
	struct vbufs t = { 0 };

	assert_int_equal(vbufs_add(&t, 1000, 100), 0);
	assert_int_equal(vbufs_add(&t, 2000, 100), 0);
	assert_int_equal(vbufs_add(&t, 3000, 100), 0);
	assert_int_equal(vbufs_del(&t, 1001), -ENOENT);  /* inside */
	assert_int_equal(vbufs_del(&t, 1099), -ENOENT);  /* last byte */
	assert_int_equal(vbufs_del(&t, 1100), -ENOENT);  /* one past the end */
	assert_int_equal(vbufs_del(&t, 999), -ENOENT);   /* before the first */
	assert_int_equal(vbufs_del(&t, 0), -ENOENT);
	assert_int_equal(vbufs_del(&t, 1500), -ENOENT);  /* a gap */
	assert_int_equal(vbufs_del(&t, 3050), -ENOENT);  /* inside the last */
	assert_int_equal(vbufs_del(&t, UINT64_MAX), -ENOENT);
	assert_int_equal(t.n, 3);
	assert_int_equal(vbufs_del(&t, 2000), 0);        /* the middle one */
	assert_int_equal(t.n, 2);
	assert_int_equal(vbufs_del(&t, 2000), -ENOENT);  /* twice */
	assert_false(vbufs_contains(&t, 2000, 1));
	assert_true(vbufs_contains(&t, 1000, 100));
	assert_true(vbufs_contains(&t, 3000, 100));
	assert_int_equal(vbufs_add(&t, 1100, 1900), 0);  /* the freed space, and the gaps */
	assert_int_equal(vbufs_del(&t, 3000), 0);        /* the last one */
	assert_int_equal(vbufs_del(&t, 1000), 0);        /* the first one */
	assert_int_equal(t.n, 1);
	assert_int_equal(t.v[0].addr, 1100);
	assert_int_equal(vbufs_del(&t, 1100), 0);
	assert_int_equal(t.n, 0);
	assert_false(vbufs_contains(&t, 1100, 1));
	vbufs_free(&t);
}

static void test_vbufs_contains(void **state)
{
	struct vbufs t = { 0 };

	assert_int_equal(vbufs_add(&t, 1000, 100), 0);
	assert_int_equal(vbufs_add(&t, 1100, 100), 0); /* adjacent to #1 */
	assert_int_equal(vbufs_add(&t, 5000, 10), 0);

	assert_true(vbufs_contains(&t, 1010, 10));     /* inside */
	assert_true(vbufs_contains(&t, 1000, 100));    /* exact */
	assert_true(vbufs_contains(&t, 1000, 1));      /* first byte */
	assert_true(vbufs_contains(&t, 1099, 1));      /* last byte */
	assert_true(vbufs_contains(&t, 1100, 100));
	assert_true(vbufs_contains(&t, 5000, 10));
	assert_false(vbufs_contains(&t, 1000, 201));   /* past the end of #2 */
	assert_false(vbufs_contains(&t, 5000, 11));    /* one byte past the end */
	assert_false(vbufs_contains(&t, 5001, 10));
	assert_false(vbufs_contains(&t, 5010, 1));     /* just past the end */
	assert_false(vbufs_contains(&t, 1050, 100));   /* spans #1 and #2 */
	assert_false(vbufs_contains(&t, 1099, 2));
	assert_false(vbufs_contains(&t, 1000, 200));   /* exactly #1 + #2 */
	assert_false(vbufs_contains(&t, 1000, 0));     /* len 0 */
	assert_false(vbufs_contains(&t, 1050, 0));
	assert_false(vbufs_contains(&t, 0, 0));
	assert_false(vbufs_contains(&t, 1050, UINT64_MAX));   /* wraps */
	assert_false(vbufs_contains(&t, 1050, UINT64_MAX - 1049)); /* ends at 2^64 = 0 */
	assert_false(vbufs_contains(&t, UINT64_MAX, 2));
	assert_false(vbufs_contains(&t, UINT64_MAX, 1));
	assert_false(vbufs_contains(&t, 999, 1));      /* before the first */
	assert_false(vbufs_contains(&t, 999, 2));      /* starts before the first */
	assert_false(vbufs_contains(&t, 0, 1));
	assert_false(vbufs_contains(&t, 0, 1100));
	assert_false(vbufs_contains(&t, 1200, 1));     /* gap after #2 */
	assert_false(vbufs_contains(&t, 4999, 2));     /* gap into #3 */
	assert_false(vbufs_contains(&t, 6000, 1));     /* after the last */
	vbufs_free(&t);
}

/* The brute-force model: an unsorted array of ranges, in 128-bit arithmetic. */
#define MODEL_MAX 512
struct model {
	uint64_t addr[MODEL_MAX], size[MODEL_MAX];
	size_t n;
};

static int model_add(struct model *m, uint64_t addr, uint64_t size)
{
	unsigned __int128 end = (unsigned __int128)addr + size;

	if (!size || end > UINT64_MAX)
		return -EINVAL;
	for (size_t i = 0; i < m->n; i++) {
		unsigned __int128 e = (unsigned __int128)m->addr[i] + m->size[i];
		if (addr < e && m->addr[i] < end)
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

static bool model_contains(const struct model *m, uint64_t addr, uint64_t len)
{
	unsigned __int128 end = (unsigned __int128)addr + len;

	if (!len)
		return false;
	for (size_t i = 0; i < m->n; i++) {
		if (m->addr[i] <= addr && end <= (unsigned __int128)m->addr[i] + m->size[i])
			return true;
	}
	return false;
}

/* An address: mostly in a small crowded window, sometimes near the top. */
static uint64_t rnd_addr(void)
{
	switch (rnd_below(16)) {
	case 0:
		return UINT64_MAX - rnd_below(300);
	case 1:
		return rnd();
	default:
		return rnd_below(4096);
	}
}

static uint64_t rnd_len(void)
{
	switch (rnd_below(16)) {
	case 0:
		return 0;
	case 1:
		return rnd();
	case 2:
		return UINT64_MAX - rnd_below(300);
	default:
		return 1 + rnd_below(rnd_below(4) ? 64 : 600);
	}
}

static void check_same(const struct vbufs *t, const struct model *m)
{
	assert_int_equal(t->n, m->n);
	assert_sorted(t);
	for (size_t i = 0; i < m->n; i++) {
		size_t j;
		for (j = 0; j < t->n; j++) {
			if (t->v[j].addr == m->addr[i])
				break;
		}
		assert_true(j < t->n);
		assert_int_equal(t->v[j].size, m->size[i]);
	}
}

static void test_vbufs_model(void **state)
{
	static struct model m;

	for (uint64_t seed = 1; seed <= 4; seed++) {
		struct vbufs t = { 0 };

		rng_state = 0x2545f4914f6cdd1dull * seed;
		m.n = 0;
		for (int op = 0; op < 4000; op++) {
			uint64_t addr = rnd_addr(), len = rnd_len();

			switch (rnd_below(8)) {
			case 0:
			case 1:
			case 2: {
				int want = model_add(&m, addr, len);
				if (want == -ENOMEM)
					break;
				assert_int_equal(vbufs_add(&t, addr, len), want);
				break;
			}
			case 3:
				/* usually the start of a live buffer */
				if (m.n && rnd_below(4))
					addr = m.addr[rnd_below(m.n)] + rnd_below(3) - 1;
				assert_int_equal(vbufs_del(&t, addr), model_del(&m, addr));
				break;
			default:
				/* usually somewhere around a live buffer */
				if (m.n && rnd_below(4)) {
					size_t i = rnd_below(m.n);
					addr = m.addr[i] + rnd_below(m.size[i] + 2) - 1;
					if (rnd_below(2))
						len = m.addr[i] + m.size[i] - addr + rnd_below(3) - 1;
				}
				assert_int_equal(vbufs_contains(&t, addr, len), model_contains(&m, addr, len));
				break;
			}
			check_same(&t, &m);
		}
		vbufs_free(&t);
	}
}

/* ---- the session the submissions are checked against --------------------- */

/*
 * Buffers: A [0x10000, +0x1000), B [0x11000, +0x1000) right after A, C
 * [0x20000, +0x100). Kernels: 0 live (16 parameter bytes, 1024 threads,
 * 48 KiB shared), 1 dead, 2 live without parameters, 3 live with at most
 * 256 threads and no dynamic shared memory. Queues 0 and 1 live, 2 dead.
 * Events 0 live, 1 dead. Staging 4096 bytes.
 */
#define A 0x10000ull
#define B 0x11000ull
#define C 0x20000ull
#define ASZ 0x1000ull
#define BSZ 0x1000ull
#define CSZ 0x100ull
#define STG 4096ull
#define K0_PARAMS 16u
#define K0_SHMEM (48u * 1024)

struct fix {
	struct vbufs bufs;
	struct vkernel kernels[4];
	uint8_t qlive[3];
	uint8_t elive[2];
	struct vsession vs;
};

static struct fix F;

static int setup(void **state)
{
	memset(&F, 0, sizeof(F));
	if (vbufs_add(&F.bufs, C, CSZ) || vbufs_add(&F.bufs, A, ASZ) || vbufs_add(&F.bufs, B, BSZ))
		return -1;
	F.kernels[0] = (struct vkernel){ true, K0_PARAMS, 1024, K0_SHMEM };
	F.kernels[1] = (struct vkernel){ false, K0_PARAMS, 1024, K0_SHMEM };
	F.kernels[2] = (struct vkernel){ true, 0, 1024, 0 };
	F.kernels[3] = (struct vkernel){ true, 8, 256, 0 };
	F.qlive[0] = 1;
	F.qlive[1] = 1;
	F.elive[0] = 1;
	F.vs = (struct vsession){
		.bufs = &F.bufs,
		.kernels = F.kernels,
		.nkernels = 4,
		.queue_live = F.qlive,
		.nqueues = 3,
		.event_live = F.elive,
		.nevents = 2,
		.staging_size = STG,
	};
	return 0;
}

static int teardown(void **state)
{
	vbufs_free(&F.bufs);
	return 0;
}

/* Valid entries of each kind, on queue 0. */
static struct ooo_sqe sqe(uint8_t op)
{
	struct ooo_sqe e;

	memset(&e, 0, sizeof(e));
	e.opcode = op;
	e.user_data = 0x1234567890abcdefull;
	switch (op) {
	case OOO_OP_LAUNCH:
		e.launch.kernel = 0;
		e.launch.shmem = 0;
		for (int i = 0; i < 3; i++)
			e.launch.grid[i] = e.launch.block[i] = 1;
		e.launch.param_len = K0_PARAMS;
		e.launch.param_off = 64;
		break;
	case OOO_OP_HTOD:
		e.copy.src = 0;
		e.copy.dst = A;
		e.copy.len = 256;
		break;
	case OOO_OP_DTOH:
		e.copy.src = B + 16;
		e.copy.dst = 128;
		e.copy.len = 256;
		break;
	case OOO_OP_DTOD:
		e.copy.src = A;
		e.copy.dst = C;
		e.copy.len = CSZ;
		break;
	case OOO_OP_MEMSET:
		e.set.dst = A;
		e.set.count = 16;
		e.set.value = 0xab;
		e.set.elsize = 1;
		break;
	case OOO_OP_EVENT_RECORD:
	case OOO_OP_EVENT_WAIT:
		e.event.event = 0;
		break;
	default:
		break;
	}
	return e;
}

/* Accepted, with and without a place for the reason. */
#define PASS(ent)                                                                                          \
	do {                                                                                               \
		const char *w_ = NULL;                                                                     \
		struct ooo_sqe c_ = (ent);                                                                 \
		assert_int_equal(validate_sqe(&c_, &F.vs, &w_), 0);                                        \
		assert_int_equal(validate_sqe(&c_, &F.vs, NULL), 0);                                       \
	} while (0)

/* Refused with exactly this code and reason; the same code without a place for the reason. */
#define REJECT(ent, code, text)                                                                            \
	do {                                                                                               \
		const char *w_ = NULL;                                                                     \
		struct ooo_sqe c_ = (ent);                                                                 \
		assert_int_equal(validate_sqe(&c_, &F.vs, &w_), (code));                                   \
		assert_non_null(w_);                                                                       \
		assert_string_equal(w_, (text));                                                           \
		assert_int_equal(validate_sqe(&c_, &F.vs, NULL), (code));                                  \
	} while (0)

static void test_valid_every_opcode(void **state)
{
	struct ooo_sqe e;

	for (uint8_t op = 0; op < OOO_OP_MAX; op++) {
		e = sqe(op);
		PASS(e);
		e.flags = OOO_SQE_NOTIFY;
		PASS(e);
		e.queue = 1;
		PASS(e);
		e.user_data = UINT64_MAX;
		PASS(e);
	}
	/* each variant worth naming */
	e = sqe(OOO_OP_LAUNCH);
	e.launch.kernel = 2;
	e.launch.param_len = 0;
	e.launch.param_off = 0;
	PASS(e);
	e = sqe(OOO_OP_LAUNCH);
	e.launch.kernel = 3;
	e.launch.param_len = 8;
	PASS(e);
	e = sqe(OOO_OP_MEMSET);
	e.set.elsize = 2;
	e.set.value = 0xbeef;
	PASS(e);
	e.set.elsize = 4;
	e.set.value = 0xdeadbeef;
	PASS(e);
	e = sqe(OOO_OP_EVENT_WAIT);
	e.queue = 1;
	PASS(e);
}

static void test_why_null(void **state)
{
	struct ooo_sqe e = sqe(OOO_OP_NOP);

	assert_int_equal(validate_sqe(&e, &F.vs, NULL), 0);
	e.flags = 0x80;
	assert_int_equal(validate_sqe(&e, &F.vs, NULL), -EINVAL);
	e = sqe(OOO_OP_HTOD);
	e.copy.len = 0;
	assert_int_equal(validate_sqe(&e, &F.vs, NULL), -EFAULT);
	e = sqe(OOO_OP_LAUNCH);
	e.launch.grid[0] = 0;
	assert_int_equal(validate_sqe(&e, &F.vs, NULL), -E2BIG);
	e = sqe(OOO_OP_EVENT_RECORD);
	e.event.event = 1;
	assert_int_equal(validate_sqe(&e, &F.vs, NULL), -ENOENT);
}

static void test_header(void **state)
{
	struct ooo_sqe e;

	for (unsigned f = 2; f < 256; f++) {
		e = sqe(OOO_OP_NOP);
		e.flags = (uint8_t)f;
		REJECT(e, -EINVAL, R_HDR);
	}
	e = sqe(OOO_OP_HTOD);
	e.flags = OOO_SQE_NOTIFY | 0x80;
	REJECT(e, -EINVAL, R_HDR);
	/* the submit stamp is the tenant's: any value passes */
	for (int bit = 0; bit < 32; bit++) {
		e = sqe(OOO_OP_NOP);
		e.submit_us = 1u << bit;
		PASS(e);
	}
	e = sqe(OOO_OP_LAUNCH);
	e.submit_us = UINT32_MAX;
	PASS(e);

	for (unsigned op = OOO_OP_MAX; op < 256; op++) {
		e = sqe(OOO_OP_NOP);
		e.opcode = (uint8_t)op;
		REJECT(e, -EINVAL, R_OPCODE);
	}

	e = sqe(OOO_OP_NOP);
	e.queue = 2; /* dead */
	REJECT(e, -ENOENT, R_QUEUE);
	e.queue = 3; /* == nqueues */
	REJECT(e, -ENOENT, R_QUEUE);
	e.queue = UINT16_MAX;
	REJECT(e, -ENOENT, R_QUEUE);
	e = sqe(OOO_OP_EVENT_RECORD);
	e.queue = 2;
	REJECT(e, -ENOENT, R_QUEUE);

	/* no queues at all, and no array */
	F.vs.nqueues = 0;
	F.vs.queue_live = NULL;
	e = sqe(OOO_OP_NOP);
	REJECT(e, -ENOENT, R_QUEUE);
}

static void test_launch_kernel(void **state)
{
	struct ooo_sqe e = sqe(OOO_OP_LAUNCH);

	e.launch.kernel = 1; /* dead */
	REJECT(e, -ENOENT, R_KERNEL);
	e.launch.kernel = 4; /* == nkernels */
	REJECT(e, -ENOENT, R_KERNEL);
	e.launch.kernel = UINT32_MAX;
	REJECT(e, -ENOENT, R_KERNEL);
	F.vs.nkernels = 0;
	F.vs.kernels = NULL;
	e.launch.kernel = 0;
	REJECT(e, -ENOENT, R_KERNEL);
}

static void test_launch_dims(void **state)
{
	struct ooo_sqe e;

	for (int i = 0; i < 3; i++) {
		e = sqe(OOO_OP_LAUNCH);
		e.launch.grid[i] = 0;
		REJECT(e, -E2BIG, R_DIM0);
		e = sqe(OOO_OP_LAUNCH);
		e.launch.block[i] = 0;
		REJECT(e, -E2BIG, R_DIM0);
	}

	/* grid: exactly at the limit passes, one over fails */
	e = sqe(OOO_OP_LAUNCH);
	e.launch.grid[0] = VALIDATE_MAX_GRID_X;
	e.launch.grid[1] = VALIDATE_MAX_GRID_YZ;
	e.launch.grid[2] = VALIDATE_MAX_GRID_YZ;
	PASS(e);
	e.launch.grid[0] = VALIDATE_MAX_GRID_X + 1;
	REJECT(e, -E2BIG, R_GRID);
	e.launch.grid[0] = UINT32_MAX;
	REJECT(e, -E2BIG, R_GRID);
	for (int i = 1; i < 3; i++) {
		e = sqe(OOO_OP_LAUNCH);
		e.launch.grid[i] = VALIDATE_MAX_GRID_YZ;
		PASS(e);
		e.launch.grid[i] = VALIDATE_MAX_GRID_YZ + 1;
		REJECT(e, -E2BIG, R_GRID);
		e.launch.grid[i] = UINT32_MAX;
		REJECT(e, -E2BIG, R_GRID);
	}

	/* block, one dimension at a time (kernel 0 allows 1024 threads) */
	for (int i = 0; i < 3; i++) {
		uint32_t lim = i < 2 ? VALIDATE_MAX_BLOCK_XY : VALIDATE_MAX_BLOCK_Z;

		e = sqe(OOO_OP_LAUNCH);
		e.launch.block[i] = lim;
		PASS(e);
		e.launch.block[i] = lim + 1;
		REJECT(e, -E2BIG, R_BLOCK);
		e.launch.block[i] = UINT32_MAX;
		REJECT(e, -E2BIG, R_BLOCK);
	}
	/* within each dimension's limit, over the product: the kernel's limit */
	e = sqe(OOO_OP_LAUNCH);
	e.launch.block[0] = VALIDATE_MAX_BLOCK_XY;
	e.launch.block[1] = VALIDATE_MAX_BLOCK_XY;
	e.launch.block[2] = VALIDATE_MAX_BLOCK_Z;
	REJECT(e, -E2BIG, R_THREADS);
}

static void test_launch_threads(void **state)
{
	struct ooo_sqe e = sqe(OOO_OP_LAUNCH);

	/* kernel 0: 1024 */
	e.launch.block[0] = 32;
	e.launch.block[1] = 32;
	e.launch.block[2] = 1;
	PASS(e);
	e.launch.block[2] = 2;
	REJECT(e, -E2BIG, R_THREADS);
	e.launch.block[0] = 8;
	e.launch.block[1] = 2;
	e.launch.block[2] = 64;
	PASS(e);
	e.launch.block[0] = 204;
	e.launch.block[1] = 5;
	e.launch.block[2] = 1;
	PASS(e); /* 1020 */
	e.launch.block[0] = 205;
	REJECT(e, -E2BIG, R_THREADS); /* 1025 */

	/* kernel 3: 256 */
	e = sqe(OOO_OP_LAUNCH);
	e.launch.kernel = 3;
	e.launch.param_len = 8;
	e.launch.block[0] = 16;
	e.launch.block[1] = 16;
	PASS(e);
	e.launch.block[0] = 257;
	e.launch.block[1] = 1;
	REJECT(e, -E2BIG, R_THREADS);
	e.launch.block[0] = 16;
	e.launch.block[1] = 16;
	e.launch.block[2] = 2;
	REJECT(e, -E2BIG, R_THREADS);
	e.launch.block[0] = 1;
	e.launch.block[1] = 1;
	e.launch.block[2] = 64;
	PASS(e);

	/* a kernel that allows nothing */
	F.kernels[3].max_threads = 0;
	e = sqe(OOO_OP_LAUNCH);
	e.launch.kernel = 3;
	e.launch.param_len = 8;
	REJECT(e, -E2BIG, R_THREADS);
}

static void test_launch_shmem(void **state)
{
	struct ooo_sqe e = sqe(OOO_OP_LAUNCH);

	e.launch.shmem = K0_SHMEM;
	PASS(e);
	e.launch.shmem = K0_SHMEM + 1;
	REJECT(e, -E2BIG, R_SHMEM);
	e.launch.shmem = UINT32_MAX;
	REJECT(e, -E2BIG, R_SHMEM);
	e = sqe(OOO_OP_LAUNCH);
	e.launch.kernel = 3;
	e.launch.param_len = 8;
	e.launch.shmem = 1;
	REJECT(e, -E2BIG, R_SHMEM);
}

static void test_launch_params(void **state)
{
	struct ooo_sqe e = sqe(OOO_OP_LAUNCH);
	static const uint32_t bad_len[] = { 0, 8, 15, 17, 32, UINT32_MAX };

	for (size_t i = 0; i < sizeof(bad_len) / sizeof(bad_len[0]); i++) {
		e = sqe(OOO_OP_LAUNCH);
		e.launch.param_len = bad_len[i];
		REJECT(e, -EINVAL, R_PLEN);
	}
	e = sqe(OOO_OP_LAUNCH);
	e.launch.kernel = 2; /* no parameters */
	e.launch.param_len = 8;
	REJECT(e, -EINVAL, R_PLEN);

	/* a launch's own deadline is any value: the executor never lets it beat the queue's SLO */
	e = sqe(OOO_OP_LAUNCH);
	e.launch.deadline_us = 1;
	PASS(e);
	e.launch.deadline_us = UINT32_MAX;
	PASS(e);

	/* offset: 8-byte aligned, the whole block inside staging */
	e = sqe(OOO_OP_LAUNCH);
	e.launch.param_off = 0;
	PASS(e);
	e.launch.param_off = STG - K0_PARAMS; /* ends exactly at the end */
	PASS(e);
	for (uint64_t off = 1; off < 8; off++) {
		e.launch.param_off = 64 + off;
		REJECT(e, -EFAULT, R_PARAMS);
	}
	e.launch.param_off = 4;
	REJECT(e, -EFAULT, R_PARAMS);
	e.launch.param_off = STG - 8; /* half past the end */
	REJECT(e, -EFAULT, R_PARAMS);
	e.launch.param_off = STG;
	REJECT(e, -EFAULT, R_PARAMS);
	e.launch.param_off = STG + 8;
	REJECT(e, -EFAULT, R_PARAMS);
	e.launch.param_off = UINT64_MAX - 7; /* aligned, wraps */
	REJECT(e, -EFAULT, R_PARAMS);
	e.launch.param_off = UINT64_MAX - 15; /* aligned, ends at 2^64 */
	REJECT(e, -EFAULT, R_PARAMS);
	e.launch.param_off = 1ull << 63;
	REJECT(e, -EFAULT, R_PARAMS);

	/* a kernel without parameters: the offset does not matter */
	static const uint64_t any_off[] = { 0, 3, 7, STG, STG + 1, UINT64_MAX - 7, UINT64_MAX };
	for (size_t i = 0; i < sizeof(any_off) / sizeof(any_off[0]); i++) {
		e = sqe(OOO_OP_LAUNCH);
		e.launch.kernel = 2;
		e.launch.param_len = 0;
		e.launch.param_off = any_off[i];
		PASS(e);
	}
	/* ... even with no staging area at all */
	F.vs.staging_size = 0;
	PASS(e);
	e = sqe(OOO_OP_LAUNCH);
	e.launch.param_off = 0;
	REJECT(e, -EFAULT, R_PARAMS);
}

/* One device range that must be refused, for the copy tests. */
struct drange {
	uint64_t addr, len;
};

static const struct drange bad_dev[] = {
	{ A - 1, 16 },             /* starts before A */
	{ A - 16, 16 },            /* just before A */
	{ 0, 16 },                 /* far before everything */
	{ A + ASZ - 8, 16 },       /* spans A and B (adjacent) */
	{ A, ASZ + BSZ },          /* exactly A + B */
	{ A + 8, ASZ + 8 },
	{ B + BSZ - 8, 16 },       /* past the end of B */
	{ B + BSZ, 1 },            /* one past the end of B */
	{ B + 1, BSZ },            /* one byte past the end of B */
	{ C + 1, CSZ },            /* one byte past the end of C */
	{ C + CSZ, 16 },           /* after everything */
	{ 0x18000, 16 },           /* in the gap */
	{ B + BSZ - 1, 0x20 },     /* into the gap */
	{ 0x1ffff, 2 },            /* from the gap into C */
	{ C, UINT64_MAX },         /* wraps */
	{ C + 16, UINT64_MAX - C - 15 }, /* ends exactly at 2^64 */
	{ UINT64_MAX - 8, 16 },    /* wraps from the top */
	{ UINT64_MAX, 1 },
};

/* Staging ranges (offset, len) that must be refused, with a 4096-byte area. */
static const struct drange bad_stg[] = {
	{ STG - 8, 16 },           /* past the end */
	{ STG, 1 },                /* at the end */
	{ STG + 1, 1 },
	{ 0, STG + 1 },            /* longer than the whole area */
	{ 1, STG },
	{ UINT64_MAX, 2 },         /* wraps */
	{ 16, UINT64_MAX - 15 },   /* ends at 2^64 */
	{ 16, UINT64_MAX },
	{ UINT64_MAX, 1 },
};

static void test_htod(void **state)
{
	struct ooo_sqe e = sqe(OOO_OP_HTOD);

	/* the largest accepted: all of staging into all of A */
	e.copy.src = 0;
	e.copy.len = STG;
	e.copy.dst = A;
	PASS(e);
	e.copy.src = STG - 1;
	e.copy.len = 1;
	e.copy.dst = C + CSZ - 1;
	PASS(e);
	e = sqe(OOO_OP_HTOD);
	e.copy.dst = B; /* the second of two adjacent buffers */
	PASS(e);

	e = sqe(OOO_OP_HTOD);
	e.copy.len = 0;
	REJECT(e, -EFAULT, R_CSRC_STG);
	for (size_t i = 0; i < sizeof(bad_stg) / sizeof(bad_stg[0]); i++) {
		e = sqe(OOO_OP_HTOD);
		e.copy.src = bad_stg[i].addr;
		e.copy.len = bad_stg[i].len;
		e.copy.dst = A; /* a whole buffer, so only the source is wrong */
		REJECT(e, -EFAULT, R_CSRC_STG);
	}
	for (size_t i = 0; i < sizeof(bad_dev) / sizeof(bad_dev[0]); i++) {
		if (bad_dev[i].len > STG)
			continue; /* would fail on the source first */
		e = sqe(OOO_OP_HTOD);
		e.copy.src = 0;
		e.copy.dst = bad_dev[i].addr;
		e.copy.len = bad_dev[i].len;
		REJECT(e, -EFAULT, R_CDST_BUF);
	}
	/* both wrong: the source is checked first */
	e = sqe(OOO_OP_HTOD);
	e.copy.src = STG;
	e.copy.dst = 0;
	REJECT(e, -EFAULT, R_CSRC_STG);
	/* no staging area */
	F.vs.staging_size = 0;
	e = sqe(OOO_OP_HTOD);
	REJECT(e, -EFAULT, R_CSRC_STG);
}

static void test_dtoh(void **state)
{
	struct ooo_sqe e = sqe(OOO_OP_DTOH);

	e.copy.src = A;
	e.copy.dst = 0;
	e.copy.len = STG;
	PASS(e);
	e.copy.src = B + BSZ - 1;
	e.copy.dst = STG - 1;
	e.copy.len = 1;
	PASS(e);

	e = sqe(OOO_OP_DTOH);
	e.copy.len = 0;
	REJECT(e, -EFAULT, R_CSRC_BUF);
	for (size_t i = 0; i < sizeof(bad_dev) / sizeof(bad_dev[0]); i++) {
		e = sqe(OOO_OP_DTOH);
		e.copy.src = bad_dev[i].addr;
		e.copy.len = bad_dev[i].len;
		e.copy.dst = 0;
		REJECT(e, -EFAULT, R_CSRC_BUF);
	}
	for (size_t i = 0; i < sizeof(bad_stg) / sizeof(bad_stg[0]); i++) {
		if (bad_stg[i].len > ASZ)
			continue; /* the source would fail first */
		e = sqe(OOO_OP_DTOH);
		e.copy.src = A;
		e.copy.dst = bad_stg[i].addr;
		e.copy.len = bad_stg[i].len;
		REJECT(e, -EFAULT, R_CDST_STG);
	}
	/* a source range from the top that must not wrap into A */
	e = sqe(OOO_OP_DTOH);
	e.copy.src = UINT64_MAX - 15;
	e.copy.len = A + 32;
	REJECT(e, -EFAULT, R_CSRC_BUF);
	F.vs.staging_size = 0;
	e = sqe(OOO_OP_DTOH);
	REJECT(e, -EFAULT, R_CDST_STG);
}

static void test_dtod(void **state)
{
	struct ooo_sqe e = sqe(OOO_OP_DTOD);

	e.copy.src = A;
	e.copy.dst = B;
	e.copy.len = ASZ;
	PASS(e);
	e.copy.src = A;
	e.copy.dst = A + 1; /* within one buffer */
	e.copy.len = ASZ - 1;
	PASS(e);

	e = sqe(OOO_OP_DTOD);
	e.copy.len = 0;
	REJECT(e, -EFAULT, R_CSRC_BUF);
	for (size_t i = 0; i < sizeof(bad_dev) / sizeof(bad_dev[0]); i++) {
		e = sqe(OOO_OP_DTOD);
		e.copy.src = bad_dev[i].addr;
		e.copy.len = bad_dev[i].len;
		e.copy.dst = A;
		REJECT(e, -EFAULT, R_CSRC_BUF);
		if (bad_dev[i].len > ASZ)
			continue;
		e.copy.src = A;
		e.copy.dst = bad_dev[i].addr;
		REJECT(e, -EFAULT, R_CDST_BUF);
	}
	/* a destination that wraps around into A */
	e = sqe(OOO_OP_DTOD);
	e.copy.src = A;
	e.copy.dst = UINT64_MAX - 15;
	e.copy.len = 32;
	REJECT(e, -EFAULT, R_CDST_BUF);
	/* no buffers at all */
	vbufs_free(&F.bufs);
	e = sqe(OOO_OP_DTOD);
	REJECT(e, -EFAULT, R_CSRC_BUF);
}

static void test_memset(void **state)
{
	struct ooo_sqe e;
	static const uint32_t bad_es[] = { 0, 3, 5, 6, 7, 8, 16, 0x101, UINT32_MAX };

	for (size_t i = 0; i < sizeof(bad_es) / sizeof(bad_es[0]); i++) {
		e = sqe(OOO_OP_MEMSET);
		e.set.elsize = bad_es[i];
		e.set.value = 0;
		REJECT(e, -EINVAL, R_ELSIZE);
	}

	/* values */
	e = sqe(OOO_OP_MEMSET);
	e.set.elsize = 1;
	e.set.value = 0xff;
	PASS(e);
	e.set.value = 0x100;
	REJECT(e, -EINVAL, R_VALUE);
	e.set.value = 0x80000000u;
	REJECT(e, -EINVAL, R_VALUE);
	e.set.value = UINT32_MAX;
	REJECT(e, -EINVAL, R_VALUE);
	e.set.elsize = 2;
	e.set.value = 0xffff;
	PASS(e);
	e.set.value = 0x10000;
	REJECT(e, -EINVAL, R_VALUE);
	e.set.value = UINT32_MAX;
	REJECT(e, -EINVAL, R_VALUE);
	e.set.elsize = 4;
	e.set.value = UINT32_MAX;
	PASS(e);

	/* whole buffers, exactly */
	for (uint32_t es = 1; es <= 4; es *= 2) {
		e = sqe(OOO_OP_MEMSET);
		e.set.elsize = es;
		e.set.value = 0;
		e.set.dst = A;
		e.set.count = ASZ / es;
		PASS(e);
		e.set.count++;
		REJECT(e, -EFAULT, R_SET_BUF); /* one element into B */
		e.set.dst = C + CSZ - es;
		e.set.count = 1;
		PASS(e);
		e.set.count = 2;
		REJECT(e, -EFAULT, R_SET_BUF); /* one element past the end */
		e.set.dst = C + CSZ;
		e.set.count = 1;
		REJECT(e, -EFAULT, R_SET_BUF);
		e.set.dst = A;
		e.set.count = 0;
		REJECT(e, -EFAULT, R_SET_BUF);
		e.set.dst = 0x18000;
		e.set.count = 1;
		REJECT(e, -EFAULT, R_SET_BUF);
		e.set.dst = A - es;
		e.set.count = 2;
		REJECT(e, -EFAULT, R_SET_BUF);
		e.set.dst = A + ASZ - es;
		e.set.count = 2; /* spans A and B */
		REJECT(e, -EFAULT, R_SET_BUF);
		e.set.dst = UINT64_MAX - 2 * es + 1;
		e.set.count = 4; /* wraps */
		REJECT(e, -EFAULT, R_SET_BUF);
	}

	/* count * elsize overflows u64: must not wrap to something small */
	e = sqe(OOO_OP_MEMSET);
	e.set.elsize = 4;
	e.set.value = 0;
	e.set.count = UINT64_MAX / 4 + 1; /* * 4 == 2^64 -> 0 */
	REJECT(e, -EFAULT, R_SET_BUF);
	e.set.count = (UINT64_MAX / 4 + 1) + 16; /* * 4 -> 64 */
	REJECT(e, -EFAULT, R_SET_BUF);
	e.set.count = UINT64_MAX;
	REJECT(e, -EFAULT, R_SET_BUF);
	e.set.count = UINT64_MAX / 4; /* fits, but far too big */
	REJECT(e, -EFAULT, R_SET_BUF);
	e.set.elsize = 2;
	e.set.count = 1ull << 63; /* * 2 -> 0 */
	REJECT(e, -EFAULT, R_SET_BUF);
	e.set.count = (1ull << 63) + 8; /* * 2 -> 16 */
	REJECT(e, -EFAULT, R_SET_BUF);
	e.set.elsize = 1;
	e.set.count = UINT64_MAX;
	REJECT(e, -EFAULT, R_SET_BUF);

	/* alignment */
	e = sqe(OOO_OP_MEMSET);
	e.set.elsize = 1;
	e.set.dst = A + 3;
	PASS(e);
	e.set.elsize = 2;
	e.set.value = 0;
	e.set.dst = A + 1;
	REJECT(e, -EINVAL, R_SET_ALIGN);
	e.set.dst = A + 3;
	REJECT(e, -EINVAL, R_SET_ALIGN);
	e.set.dst = A + 2;
	PASS(e);
	e.set.elsize = 4;
	for (uint64_t off = 1; off < 4; off++) {
		e.set.dst = A + off;
		REJECT(e, -EINVAL, R_SET_ALIGN);
	}
	e.set.dst = A + 4;
	PASS(e);
	/* misaligned and outside: the range is checked first */
	e.set.dst = A + ASZ - 2;
	REJECT(e, -EFAULT, R_SET_BUF);
	/* a bad element size is reported before a bad value or range */
	e = sqe(OOO_OP_MEMSET);
	e.set.elsize = 3;
	e.set.value = UINT32_MAX;
	e.set.dst = 1;
	REJECT(e, -EINVAL, R_ELSIZE);
}

static void test_events(void **state)
{
	for (uint8_t op = OOO_OP_EVENT_RECORD; op <= OOO_OP_EVENT_WAIT; op++) {
		struct ooo_sqe e = sqe(op);

		e.event.event = 1; /* dead */
		REJECT(e, -ENOENT, R_EVENT);
		e.event.event = 2; /* == nevents */
		REJECT(e, -ENOENT, R_EVENT);
		e.event.event = UINT32_MAX;
		REJECT(e, -ENOENT, R_EVENT);
	}
	F.vs.nevents = 0;
	F.vs.event_live = NULL;
	struct ooo_sqe e = sqe(OOO_OP_EVENT_WAIT);
	REJECT(e, -ENOENT, R_EVENT);
}

/* Checking an entry changes neither the entry nor the session. */
static void test_pure(void **state)
{
	for (uint8_t op = 0; op < OOO_OP_MAX; op++) {
		struct ooo_sqe e = sqe(op), copy;
		struct fix before;
		const char *w = NULL;

		e.flags = op & 1 ? 0x40 : 0; /* half of them refused */
		e.submit_us = op;
		copy = e;
		memcpy(&before, &F, sizeof(F));
		(void)validate_sqe(&e, &F.vs, &w);
		assert_memory_equal(&e, &copy, sizeof(e));
		assert_memory_equal(&F, &before, sizeof(F));
		assert_int_equal(F.bufs.n, 3);
	}
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vbufs_empty),
		cmocka_unit_test(test_vbufs_sorted_random_order),
		cmocka_unit_test(test_vbufs_overlap),
		cmocka_unit_test(test_vbufs_adjacent),
		cmocka_unit_test(test_vbufs_invalid),
		cmocka_unit_test(test_vbufs_del),
		cmocka_unit_test(test_vbufs_contains),
		cmocka_unit_test(test_vbufs_model),
		T(test_valid_every_opcode),
		T(test_why_null),
		T(test_header),
		T(test_launch_kernel),
		T(test_launch_dims),
		T(test_launch_threads),
		T(test_launch_shmem),
		T(test_launch_params),
		T(test_htod),
		T(test_dtoh),
		T(test_dtod),
		T(test_memset),
		T(test_events),
		T(test_pure),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
