/* SPDX-License-Identifier: MIT */
/*
 * The data path between a tenant (libooo) and its GPU's executor: one shared
 * memory area per session holding a submission ring (tenant -> executor), a
 * completion ring (executor -> tenant) and a staging area for parameters and
 * host copies. oood creates the area as a sealed memfd (it cannot shrink or
 * grow, so neither side can make the other fault) and hands it to both.
 *
 * Rings are single-producer, single-consumer, with free-running 32-bit
 * indices: entries in flight = tail - head. The producer writes an entry,
 * then publishes tail with release order; the consumer reads tail with
 * acquire order, copies the entry out, then publishes head with release
 * order. Each side treats what the other wrote as untrusted: the executor
 * keeps its own copies of its indices and validates every entry after
 * copying it out of shared memory.
 *
 * The doorbell is a Unix stream socket: the tenant gets one end (with the
 * area, in the attach reply), oood and the executor keep the other. The
 * tenant rings the executor (submissions) by sending a byte on its end, and
 * waits for completions with POLLIN on it; send and receive with
 * MSG_DONTWAIT, and take a full socket (EAGAIN) as "already rung". A
 * consumer about to sleep sets OOO_RING_NEED_WAKEUP in the ring's flags,
 * issues a full fence and looks again; a producer, after publishing tail,
 * issues a full fence and rings the doorbell only if the flag is set. A busy
 * consumer therefore costs the producer no system call.
 *
 * Layout version 2 (version 1 had two eventfds shared by all three processes:
 * a tenant could make their reads and writes block). All offsets are from the start of the area; all integers
 * little endian (both ends are on one host).
 */
#ifndef OOO_SHM_H
#define OOO_SHM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OOO_SHM_MAGIC 0x4d48534fu /* "OSHM" */
#define OOO_SHM_VERSION 2u
#define OOO_SHM_LINE 64u /* head, tail and flags each own a cache line */

#define OOO_RING_NEED_WAKEUP 1u

/* A ring's control block: three cache lines. */
struct ooo_ring_ctl {
	uint32_t head; /* written by the consumer only */
	uint8_t pad0[OOO_SHM_LINE - 4];
	uint32_t tail; /* written by the producer only */
	uint8_t pad1[OOO_SHM_LINE - 4];
	uint32_t flags; /* OOO_RING_NEED_WAKEUP, written by the consumer */
	uint8_t pad2[OOO_SHM_LINE - 4];
};

/* Page 0 of the area, written by oood before either side maps it (later only the epoch changes). */
struct ooo_shm_hdr {
	uint32_t magic;
	uint32_t version;
	uint64_t size;         /* whole area */
	uint32_t sq_entries;   /* power of two */
	uint32_t cq_entries;   /* power of two */
	uint64_t sq_ctl_off;   /* struct ooo_ring_ctl */
	uint64_t sq_off;       /* sq_entries * sizeof(struct ooo_sqe) */
	uint64_t cq_ctl_off;
	uint64_t cq_off;       /* cq_entries * sizeof(struct ooo_cqe) */
	uint64_t staging_off;  /* page aligned */
	uint64_t staging_size;
	/*
	 * Written by oood alone, read by the tenant before every submission:
	 * odd while the GPU's executor is being replaced, +1 again once the new
	 * one has the session. A change means every command in flight failed
	 * (OOO_EDEVRESET); while odd, submitting is refused.
	 */
	uint32_t epoch;
	uint32_t reserved;
};

/* Submission opcodes. */
enum ooo_sqe_op {
	OOO_OP_NOP = 0,      /* completes at once; a queue barrier with OOO_SQE_NOTIFY */
	OOO_OP_LAUNCH,       /* launch: kernel, grid, block, shmem, params in staging */
	OOO_OP_HTOD,         /* copy: staging offset src -> device address dst */
	OOO_OP_DTOH,         /* copy: device address src -> staging offset dst */
	OOO_OP_DTOD,         /* copy: device address src -> device address dst */
	OOO_OP_MEMSET,       /* set: dst device address, count elements of elsize 1, 2 or 4 */
	OOO_OP_EVENT_RECORD, /* event: record on the queue */
	OOO_OP_EVENT_WAIT,   /* event: the queue waits for it */
	OOO_OP_MAX
};

/*
 * Host addresses in copies (HTOD src, DTOH dst): an offset into the staging
 * area, or with a region tag in the top 16 bits, an offset into host region
 * r (ooo_host_alloc): OOO_HOST_ADDR(r, off).
 */
#define OOO_HOST_TAG_SHIFT 48
#define OOO_HOST_ADDR(r, off) ((((uint64_t)(r) + 1) << OOO_HOST_TAG_SHIFT) | (uint64_t)(off))

#define OOO_SQE_NOTIFY 1u /* post a completion even on success */
#define OOO_SQE_FLAGS_ALL OOO_SQE_NOTIFY

struct ooo_sqe {
	uint8_t opcode; /* enum ooo_sqe_op */
	uint8_t flags;  /* OOO_SQE_* */
	uint16_t queue; /* the session's queue index */
	/*
	 * CLOCK_MONOTONIC in microseconds, low 32 bits, when the tenant submitted
	 * it (libooo sets it; 0: not stamped). The tenant's word: it feeds only
	 * the executor's submit-to-taken histogram, never a decision.
	 */
	uint32_t submit_us;
	uint64_t user_data; /* returned in the completion */
	union {
		struct {
			uint32_t kernel; /* handle from ooo_kernel_get */
			uint32_t shmem;  /* dynamic shared memory bytes */
			uint32_t grid[3];
			uint32_t block[3];
			uint32_t param_len; /* bytes at param_off; must equal the kernel's */
			uint32_t deadline_us; /* 0: the queue's SLO; else within this long of submission, never tighter than the queue's SLO */
			uint64_t param_off; /* staging offset, 8-byte aligned */
		} launch;
		struct {
			uint64_t dst;
			uint64_t src;
			uint64_t len;
		} copy;
		struct {
			uint64_t dst;
			uint64_t count;
			uint32_t value;
			uint32_t elsize; /* 1, 2 or 4 */
		} set;
		struct {
			uint32_t event; /* handle from ooo_event_create */
		} event;
		uint8_t raw[48];
	};
};

struct ooo_cqe {
	uint64_t user_data;
	int32_t status; /* 0 or a negative errno / OOO_E* code */
	uint16_t queue;
	uint8_t opcode;
	uint8_t flags;
	uint64_t result;   /* opcode-specific: bytes copied, ... */
	uint64_t reserved;
};

#ifdef __cplusplus
}
#endif

#endif /* OOO_SHM_H */
