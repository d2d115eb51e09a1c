/* SPDX-License-Identifier: MIT */
/*
 * The few kernel types the ooo BPF programs use, for building where the
 * kernel has no BTF to generate vmlinux.h from (/sys/kernel/btf/vmlinux).
 * The Makefile uses this only as a fallback: the fields are read with CO-RE
 * (preserve_access_index), so libbpf relocates them against the BTF of the
 * kernel that loads the programs, whatever its layout.
 */
#ifndef OOO_VMLINUX_MIN_H
#define OOO_VMLINUX_MIN_H

#include <linux/types.h>
#include <linux/bpf.h>
#include <asm/ptrace.h> /* struct pt_regs, user-space field names: bpf_tracing.h knows them */

typedef _Bool bool;
#define true 1
#define false 0

struct task_struct {
	int pid;
	int tgid;
	unsigned int __state;
	char comm[16];
} __attribute__((preserve_access_index));

#endif
