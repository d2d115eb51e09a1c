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
 *   offset 0                     struct ooo_jit_desc_hdr
 *   offset 16                    struct ooo_jit_desc_member[n_members],
 *                                sorted by block_start, block_start[0] = 0
 *   offset 16 + 32 * n_members   parameter blocks, each at a 16-byte aligned
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

#define OOO_JIT_DESC_VERSION 2u
#define OOO_JIT_DESC_ALIGN 16u   /* of the table and of each parameter block */
#define OOO_JIT_PTABLE_BYTES 4096u /* the parameter of the entry that takes the table by value */

struct ooo_jit_desc_hdr {
	uint32_t n_members;    /* >= 1 */
	uint32_t total_blocks; /* sum of the members' grid sizes = launch grid */
	uint32_t version;      /* OOO_JIT_DESC_VERSION */
	uint32_t uniform_blocks; /* blocks of every member when all are equal, else 0 */
};

struct ooo_jit_desc_member {
	uint32_t block_start; /* first fused block of this member */
	uint32_t body;        /* body index in the fused kernel */
	uint32_t grid_x, grid_y, grid_z;
	uint32_t param_off;   /* from the start of the table, 16-byte aligned */
	uint32_t param_size;  /* bytes at param_off */
	uint32_t reserved;    /* 0 */
};

/* The fused kernel's parameters, in order (cuLaunchKernel layout). */
struct ooo_jit_args {
	uint64_t desc;           /* device address of the table */
	uint32_t n_members;      /* = the header's */
	uint32_t uniform_blocks; /* = the header's */
};

_Static_assert(sizeof(struct ooo_jit_args) == 16, "fused kernel parameter ABI");
_Static_assert(sizeof(struct ooo_jit_desc_hdr) == 16, "descriptor header ABI");
_Static_assert(sizeof(struct ooo_jit_desc_member) == 32, "descriptor member ABI");

#endif
