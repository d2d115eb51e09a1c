/* SPDX-License-Identifier: MIT */
/*
 * ooo/jit.h — the descriptor ABI of fused kernels, shared by the JIT
 * (daemon/jit), the executor that launches bundles, and tests.
 *
 * A fused kernel is one .entry whose parameters are struct ooo_jit_args:
 * the 64-bit global address of a descriptor table in device memory, the
 * number of members, and (when every member has the same grid size) the
 * blocks per member, which lets a block find its member by one division
 * instead of a binary search. It is launched with a 1-D grid of
 * `total_blocks` blocks and the members' common block shape.
 *
 *   offset 0                     struct ooo_jit_desc_hdr (32 bytes)
 *   offset 32                    struct ooo_jit_desc_member[n_members] (48
 *                                bytes each), sorted by block_start,
 *                                block_start[0] = 0
 *   offset 32 + 48 * n_members   parameter blocks, each at a 16-byte aligned
 *                                offset (param_off), laid out exactly as the
 *                                member kernel's cuLaunchKernel parameter
 *                                buffer (cuFuncGetParamInfo offsets)
 *
 * Block b of the fused grid runs member i, the last member with
 * block_start <= b, as block (b - block_start) of a virtual grid
 * grid_x * grid_y * grid_z: virtual %ctaid.x = local % grid_x,
 * %ctaid.y = (local / grid_x) % grid_y, %ctaid.z = local / (grid_x * grid_y),
 * virtual %nctaid = the member's grid. `body` selects which member kernel
 * (of the fused kernel's bodies, numbered as the JIT was given them) runs.
 *
 * Chains (a fused kernel whose jit_fused.chain is set; header `chain` not
 * 0): members may depend on earlier members of the same launch, so that a
 * queue's consecutive launches run in one bundle, in order. `chain` is the
 * device address of 4-byte counters that live across launches (the caller
 * owns them and knows their values: it never resets them): word 0 is the
 * ticket counter, word 1 + i member i's done counter. A block then is not
 * %ctaid.x but its ticket: the value its first thread took from word 0
 * (atomic add of 1) minus ticket_base, so blocks are numbered in the order
 * they started and a block waits only for blocks that are already running
 * (no deadlock, whatever the GPU keeps resident). Every thread of a member
 * with `signal` set adds 1 to its done counter when it returns or exits
 * (after its memory operations, release at GPU scope). A member with
 * `wait` = 1 + j does not start its body before member j's done counter
 * has reached wait_target (modulo 2^32: the caller's value of the counter
 * before the launch plus member j's thread count), acquire at GPU scope.
 * A dependency must name an earlier member (j < i), whose blocks precede.
 * The table is read-only while the kernel runs. All fields little-endian.
 *
 * Every fused module has a second entry, the same kernel taking the table
 * itself as its only parameter (OOO_JIT_PTABLE_BYTES bytes, 16-byte
 * aligned, the table at its start, the rest unread): a bundle whose table
 * fits is launched without copying the table to the device first (the
 * launch carries it, as it carries any kernel's parameters).
 */
#ifndef OOO_JIT_H
#define OOO_JIT_H

#include <stdint.h>

#define OOO_JIT_DESC_VERSION 3u
#define OOO_JIT_DESC_ALIGN 16u   /* of the table and of each parameter block */
#define OOO_JIT_PTABLE_BYTES 4096u /* the parameter of the entry that takes the table by value */

struct ooo_jit_desc_hdr {
	uint32_t n_members;    /* >= 1 */
	uint32_t total_blocks; /* sum of the members' grid sizes = launch grid */
	uint32_t version;      /* OOO_JIT_DESC_VERSION */
	uint32_t uniform_blocks; /* blocks of every member when all are equal, else 0 */
	uint64_t chain;          /* device address of the chain counters, 0: no chain (no tickets, no waits) */
	uint32_t ticket_base;    /* chain: the ticket counter's value before this launch */
	uint32_t reserved;       /* 0 */
};

struct ooo_jit_desc_member {
	uint32_t block_start; /* first fused block of this member */
	uint32_t body;        /* body index in the fused kernel */
	uint32_t grid_x, grid_y, grid_z;
	uint32_t param_off;   /* from the start of the table, 16-byte aligned */
	uint32_t param_size;  /* bytes at param_off */
	uint32_t signal;      /* chain: nonzero: its threads count themselves in done counter 1 + index at exit */
	uint32_t wait;        /* chain: 0, or 1 + the index of the earlier member it runs after */
	uint32_t wait_target; /* chain: that member's done counter value to wait for (mod 2^32) */
	uint32_t reserved[2]; /* 0 */
};

/* The fused kernel's parameters, in order (cuLaunchKernel layout). */
struct ooo_jit_args {
	uint64_t desc;           /* device address of the table */
	uint32_t n_members;      /* = the header's */
	uint32_t uniform_blocks; /* = the header's */
};

_Static_assert(sizeof(struct ooo_jit_args) == 16, "fused kernel parameter ABI");
_Static_assert(sizeof(struct ooo_jit_desc_hdr) == 32, "descriptor header ABI");
_Static_assert(sizeof(struct ooo_jit_desc_member) == 48, "descriptor member ABI");

#endif
