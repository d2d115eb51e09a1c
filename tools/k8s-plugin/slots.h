/* SPDX-License-Identifier: MIT */
/*
 * ooo-k8s-plugin's devices: each GPU oood serves is offered to kubelet as
 * SLOTS tenant slots, device IDs "gpuG-slotS" (G the GPU's index in oood,
 * S from 0). Pure: no I/O; slots_prefer() allocates its scratch only.
 */
#ifndef OOO_TOOLS_K8S_SLOTS_H
#define OOO_TOOLS_K8S_SLOTS_H

#include <stddef.h>

#define SLOTS_GPU_MAX 1024u      /* GPU indices are below this */
#define SLOTS_PER_GPU_MAX 1024u  /* --slots-per-gpu at most */
#define SLOT_ID_MAX 32           /* an ID's bytes with the NUL, at most */

/* Write "gpuG-slotS" into buf (cap >= SLOT_ID_MAX is always enough). Returns its length, or -ENOSPC. */
int slot_id_format(char *buf, size_t cap, unsigned gpu, unsigned slot);

/*
 * Parse an ID that slot_id_format() wrote: 0 with *gpu and *slot set, or
 * -EINVAL (not of that form, leading zeros or a sign included, or G or S
 * out of the ranges above).
 */
int slot_id_parse(const char *id, unsigned *gpu, unsigned *slot);

/*
 * GetPreferredAllocation for one container: choose `size` IDs among
 * avail[0, n_avail) that sit on as few GPUs as possible. Every ID of
 * must[0, n_must) is chosen first (kubelet lists them in avail too, or not:
 * either is accepted), and GPUs that already hold one of them are filled
 * next. Then, while IDs are still wanted: the GPU with the fewest available
 * IDs that still holds all the rest (best fit, keeping fuller GPUs whole for
 * larger requests), else the GPU with the most (ties: the lower index).
 * Within a GPU, lower slots first. Duplicates count once.
 *
 * out (room for size entries) gets pointers to the strings of avail and
 * must, not copies. Returns the number chosen: size, or fewer when there
 * are not that many distinct IDs (all of them then); -EINVAL when an ID is
 * not one of ours; -ENOMEM.
 */
int slots_prefer(const char *const *avail, size_t n_avail, const char *const *must, size_t n_must, size_t size,
		 const char **out);

#endif
