/* SPDX-License-Identifier: MIT */
#include "ring.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PAGE 4096u

_Static_assert(sizeof(struct ooo_sqe) == 64, "sqe layout is ABI");
_Static_assert(sizeof(struct ooo_cqe) == 32, "cqe layout is ABI");
_Static_assert(sizeof(struct ooo_ring_ctl) == 3 * OOO_SHM_LINE, "ring control layout is ABI");
_Static_assert(sizeof(struct ooo_shm_hdr) <= PAGE, "header fits page 0");

static bool pow2(uint32_t n)
{
	return n && !(n & (n - 1));
}

static bool inside(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

int ring_init(struct ring *r, void *base, uint64_t size, uint64_t ctl_off, uint64_t ent_off, uint32_t n,
	      uint32_t esize, int doorbell, bool producer)
{
	memset(r, 0, sizeof(*r));
	if (!pow2(n) || !esize || ctl_off % OOO_SHM_LINE || ent_off % OOO_SHM_LINE ||
	    !inside(ctl_off, sizeof(struct ooo_ring_ctl), size) || !inside(ent_off, (uint64_t)n * esize, size))
		return -EINVAL;
	r->ctl = (struct ooo_ring_ctl *)((char *)base + ctl_off);
	r->entries = (unsigned char *)base + ent_off;
	r->n = n;
	r->mask = n - 1;
	r->esize = esize;
	r->doorbell = doorbell;
	if (producer) {
		r->mine = __atomic_load_n(&r->ctl->tail, __ATOMIC_RELAXED);
		r->theirs = __atomic_load_n(&r->ctl->head, __ATOMIC_ACQUIRE);
	} else {
		r->mine = __atomic_load_n(&r->ctl->head, __ATOMIC_RELAXED);
		r->theirs = __atomic_load_n(&r->ctl->tail, __ATOMIC_ACQUIRE);
	}
	r->shown = r->mine;
	return 0;
}

void *ring_reserve(struct ring *r)
{
	uint32_t used = r->mine - r->theirs;

	if (used >= r->n) {
		/* only now look at the consumer's head: one shared read per full ring */
		r->theirs = __atomic_load_n(&r->ctl->head, __ATOMIC_ACQUIRE);
		used = r->mine - r->theirs;
		if (used >= r->n)
			return NULL; /* full, or a head from the future: never overwrite */
	}
	return r->entries + (size_t)(r->mine++ & r->mask) * r->esize;
}

int ring_publish(struct ring *r)
{
	/*
	 * The tail is stored only when it moved (a store takes the line from a
	 * consumer spinning on it). A sleeper is rung even when it did not: the
	 * executor's publish after taking submissions that post nothing is what
	 * wakes a tenant waiting for room in its submission ring or staging.
	 */
	if (r->mine != r->shown) {
		r->shown = r->mine;
		__atomic_store_n(&r->ctl->tail, r->mine, __ATOMIC_RELEASE);
	}
	/* pairs with the fence in ring_sleep_prepare: either we see the flag or it sees our tail */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!(__atomic_load_n(&r->ctl->flags, __ATOMIC_RELAXED) & OOO_RING_NEED_WAKEUP))
		return 0;
	if (r->doorbell >= 0)
		(void)doorbell_ring(r->doorbell);
	return 1;
}

int doorbell_pair(int sv[2])
{
	return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0 ? -errno : 0;
}

int doorbell_ring(int fd)
{
	static const char one = 1;

	if (send(fd, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1)
		return 1;
	return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
}

int doorbell_drain(int fd)
{
	char buf[256];

	/*
	 * A few receives at most: a peer that rings without pause keeps its end
	 * readable, and draining it for ever would be its way to hold us here.
	 */
	for (int i = 0; i < 8; i++) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n == 0)
			return 0;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 1 : -errno;
		if ((size_t)n < sizeof(buf))
			return 1;
	}
	return 1;
}

uint32_t ring_pending(struct ring *r)
{
	uint32_t avail;

	if (r->theirs == r->mine)
		r->theirs = __atomic_load_n(&r->ctl->tail, __ATOMIC_ACQUIRE);
	avail = r->theirs - r->mine;
	return avail > r->n ? 0 : avail;
}

int ring_pop(struct ring *r, void *out)
{
	uint32_t avail;

	if (r->theirs == r->mine)
		r->theirs = __atomic_load_n(&r->ctl->tail, __ATOMIC_ACQUIRE);
	avail = r->theirs - r->mine;
	if (!avail)
		return 0;
	if (avail > r->n)
		return -EPROTO;
	/* copy out before anyone looks at it: the producer may rewrite shared memory at will */
	memcpy(out, r->entries + (size_t)(r->mine & r->mask) * r->esize, r->esize);
	r->mine++;
	return 1;
}

void ring_release(struct ring *r)
{
	if (r->mine == r->shown)
		return; /* nothing consumed since the last release */
	r->shown = r->mine;
	__atomic_store_n(&r->ctl->head, r->mine, __ATOMIC_RELEASE);
}

bool ring_sleep_prepare(struct ring *r)
{
	__atomic_store_n(&r->ctl->flags, OOO_RING_NEED_WAKEUP, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	r->theirs = __atomic_load_n(&r->ctl->tail, __ATOMIC_ACQUIRE);
	if (r->theirs != r->mine) {
		__atomic_store_n(&r->ctl->flags, 0, __ATOMIC_RELAXED);
		return false;
	}
	return true;
}

void ring_awake(struct ring *r)
{
	__atomic_store_n(&r->ctl->flags, 0, __ATOMIC_RELAXED);
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

int ring_compute(uint64_t size, uint32_t sq_entries, uint32_t cq_entries, struct ooo_shm_hdr *out)
{
	struct ooo_shm_hdr h = { .magic = OOO_SHM_MAGIC, .version = OOO_SHM_VERSION, .size = size };
	uint64_t off = PAGE;

	if (!pow2(sq_entries) || !pow2(cq_entries) || sq_entries > (1u << 20) || cq_entries > (1u << 20))
		return -EINVAL;
	h.sq_entries = sq_entries;
	h.cq_entries = cq_entries;
	h.sq_ctl_off = off;
	off += sizeof(struct ooo_ring_ctl);
	h.cq_ctl_off = off;
	off += sizeof(struct ooo_ring_ctl);
	h.sq_off = off = align_up(off, OOO_SHM_LINE);
	off += (uint64_t)sq_entries * sizeof(struct ooo_sqe);
	h.cq_off = off = align_up(off, OOO_SHM_LINE);
	off += (uint64_t)cq_entries * sizeof(struct ooo_cqe);
	h.staging_off = off = align_up(off, PAGE);
	if (off >= size)
		return -ENOSPC;
	h.staging_size = size - off;
	*out = h;
	return 0;
}

int ring_layout(void *base, uint64_t size, uint32_t sq_entries, uint32_t cq_entries, struct ooo_shm_hdr *out)
{
	struct ooo_shm_hdr h;
	int r = ring_compute(size, sq_entries, cq_entries, &h);

	if (r < 0)
		return r;
	memset(base, 0, (size_t)h.staging_off);
	memcpy(base, &h, sizeof(h));
	if (out)
		*out = h;
	return 0;
}

int ring_check_hdr(const struct ooo_shm_hdr *h, uint64_t area_size)
{
	if (h->magic != OOO_SHM_MAGIC || h->version != OOO_SHM_VERSION || h->size != area_size)
		return -EPROTO;
	if (!pow2(h->sq_entries) || !pow2(h->cq_entries) || h->sq_entries > (1u << 20) || h->cq_entries > (1u << 20))
		return -EPROTO;
	if (!inside(h->sq_ctl_off, sizeof(struct ooo_ring_ctl), area_size) ||
	    !inside(h->cq_ctl_off, sizeof(struct ooo_ring_ctl), area_size) ||
	    !inside(h->sq_off, (uint64_t)h->sq_entries * sizeof(struct ooo_sqe), area_size) ||
	    !inside(h->cq_off, (uint64_t)h->cq_entries * sizeof(struct ooo_cqe), area_size) ||
	    !inside(h->staging_off, h->staging_size, area_size) || h->staging_off % PAGE)
		return -EPROTO;
	return 0;
}
