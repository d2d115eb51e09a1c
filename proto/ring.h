/* SPDX-License-Identifier: MIT */
/*
 * Single-producer single-consumer rings in shared memory (layout in
 * include/ooo/shm.h), used by libooo and the executor. Each side keeps its
 * own index privately and only publishes it; what the other side publishes
 * is checked before use. No allocation, no locks; the doorbell is one end
 * of a session's doorbell socket (below), which the caller owns.
 */
#ifndef OOO_RING_H
#define OOO_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ooo/shm.h>

struct ring {
	struct ooo_ring_ctl *ctl;
	unsigned char *entries;
	uint32_t n, mask, esize;
	uint32_t mine;   /* producer: tail; consumer: head */
	uint32_t theirs; /* last value read of the other index */
	uint32_t shown;  /* the index last stored to ctl (mine at publish/release): unchanged ones are not stored again */
	int doorbell;    /* producer: the end to ring; consumer: the end to wait on (POLLIN); -1: none */
};

/*
 * Describe a ring of n entries (a power of two) of esize bytes whose control
 * block is at ctl_off and entries at ent_off inside [base, base + size).
 * Returns 0 or -EINVAL if it does not fit or is misaligned. The private
 * index starts from what the control block holds.
 */
int ring_init(struct ring *r, void *base, uint64_t size, uint64_t ctl_off, uint64_t ent_off, uint32_t n,
	      uint32_t esize, int doorbell, bool producer);

/* Producer: the next free entry, or NULL when the ring is full (or the consumer's head is corrupt). */
void *ring_reserve(struct ring *r);
/* Producer: publish every reserved entry; ring the doorbell if the consumer sleeps. Returns 1 if it rang. */
int ring_publish(struct ring *r);

/*
 * Consumer: copy the next entry into out. Returns 1, 0 when empty, or
 * -EPROTO when the producer's tail claims more entries than the ring holds.
 */
int ring_pop(struct ring *r, void *out);
/* Consumer: publish the head so the producer sees the room. */
void ring_release(struct ring *r);
/* Consumer: entries waiting (0 if none or corrupt). */
uint32_t ring_pending(struct ring *r);

/*
 * Consumer, before sleeping on the doorbell: announce it and look again.
 * Returns true if the ring is still empty (sleep now; call ring_awake after),
 * false if entries arrived (the announcement is withdrawn).
 */
bool ring_sleep_prepare(struct ring *r);
void ring_awake(struct ring *r);

/*
 * Doorbells. A session has one Unix stream socket pair: the tenant holds one
 * end, oood and the executor the other, and each side rings the other by
 * sending a byte on its own end and waits for POLLIN on it. Unlike a shared
 * eventfd, neither side can change the other's end: the flags a tenant sets
 * with fcntl, the buffer it fills or the end it shuts down are its own. Every
 * call here passes MSG_DONTWAIT | MSG_NOSIGNAL, so none blocks or raises
 * SIGPIPE whatever the file status flags are; a ring that finds the socket
 * full is already heard (the other side has unread bytes).
 */

/* Make a pair (both ends CLOEXEC). Returns 0 or -errno. */
int doorbell_pair(int sv[2]);
/* Ring: never blocks, never signals. Returns 1 if rung, 0 if the socket was full (already rung), -errno else. */
int doorbell_ring(int fd);
/*
 * Take every pending ring (a bounded number of receives). Returns 1, 0 when
 * the other end will never ring again (shut down or closed: stop waiting on
 * this end, its POLLIN would never clear), or -errno.
 */
int doorbell_drain(int fd);

/* The layout of an area of `size` bytes, computed, not read from it. Returns 0, -EINVAL or -ENOSPC. */
int ring_compute(uint64_t size, uint32_t sq_entries, uint32_t cq_entries, struct ooo_shm_hdr *out);

/* Fill in a fresh area's header and ring control blocks (oood, before sharing it). */
int ring_layout(void *base, uint64_t size, uint32_t sq_entries, uint32_t cq_entries, struct ooo_shm_hdr *out);

/* Check a header read from shared memory (copy it out first). Returns 0 or -EPROTO. */
int ring_check_hdr(const struct ooo_shm_hdr *h, uint64_t area_size);

#endif
