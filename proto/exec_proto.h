/* SPDX-License-Identifier: MIT */
/*
 * Messages between oood and an executor over their private SEQPACKET
 * socketpair (never reachable by tenants). Same header as the public wire
 * protocol; internal types start at 0x100.
 */
#ifndef OOO_EXEC_PROTO_H
#define OOO_EXEC_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ooo/proto.h>

#define EXEC_CTL_FD 3      /* the executor's end of the socketpair */
#define EXEC_EXIT_NODEV 3  /* no driver, no device, stub library: do not restart */
#define EXEC_EXIT_USAGE 2
#define EXEC_EXIT_FAULT 4  /* the context was lost to a fault of the tenants' GPU work (not a hang): restart */

enum exec_msg_type {
	EXEC_MSG_READY = 0x100, /* executor -> oood, once: struct exec_ready */
	EXEC_MSG_PING = 0x101,  /* oood -> executor: health check; echoed */
	EXEC_MSG_ALLOC = 0x102, /* oood -> executor: exec_mem_req; reply exec_mem_reply + the fd */
	EXEC_MSG_FREE = 0x103,  /* oood -> executor: exec_mem_req (addr); reply exec_mem_reply */
	EXEC_MSG_IMPORT = 0x104, /* oood -> executor: exec_mem_req (addr, size) + the fd; reply */
	EXEC_MSG_ATTACH = 0x105, /* oood -> executor: exec_attach + area and doorbell (executor's end) fds; reply exec_mem_reply */
	EXEC_MSG_DETACH = 0x106, /* oood -> executor: exec_attach (session); reply */
	EXEC_MSG_QUEUE = 0x107,  /* oood -> executor: exec_queue; reply */
	EXEC_MSG_MODULE_LOAD = 0x108,   /* exec_module + image memfd; reply exec_mem_reply (addr = module) */
	EXEC_MSG_MODULE_UNLOAD = 0x109, /* exec_module; reply exec_mem_reply */
	EXEC_MSG_KERNEL_GET = 0x10a,    /* exec_kernel_get; reply exec_kernel_reply */
	EXEC_MSG_HOST_MAP = 0x10b,      /* exec_host + the region's memfd; reply exec_mem_reply */
	EXEC_MSG_HOST_UNMAP = 0x10c,    /* exec_host; reply exec_mem_reply */
	EXEC_MSG_STATS = 0x10d,         /* executor -> oood, unsolicited, about once a second: struct ooo_sched_counters */
	EXEC_MSG_PARTITIONS = 0x10e,    /* oood -> executor: exec_partitions; reply exec_partitions_reply */
	EXEC_MSG_HUNG = 0x10f,          /* executor -> oood, unsolicited, before it exits for a hang: struct exec_hung */
	EXEC_MSG_FAULT = 0x110,         /* executor -> oood, unsolicited, before it exits for a kernel fault: struct exec_hung */
};

#define EXEC_HUNG_MAX 32u /* sessions an exec_hung names */

/*
 * Work ran past kernel_time_limit_ms (datapath.c check_hung): the sessions
 * whose work it was (a fused bundle's members may be several tenants'; one
 * of their kernels did not end). The executor exits right after.
 */
struct exec_hung {
	uint32_t n;        /* sessions in session[], <= EXEC_HUNG_MAX */
	uint32_t more;     /* sessions of the work beyond those (not named) */
	uint64_t ran_ms;   /* how long it had run */
	uint64_t limit_ms; /* the limit it ran past (per kernel) */
	uint64_t session[EXEC_HUNG_MAX];
};

/*
 * EXEC_MSG_FAULT carries a struct exec_hung too: the sessions that had
 * work on the GPU when the context was found lost by a kernel fault (one
 * of them faulted: a sticky error is the whole context's, so the command
 * whose query saw it first need not be the culprit), n and more as above;
 * ran_ms and limit_ms are 0. The executor exits right after.
 */

/*
 * The largest message either side sends or receives, header included: the
 * scheduler's counters (EXEC_MSG_STATS) are the largest by far. A message
 * longer than the receiver's buffer would arrive cut short (SEQPACKET).
 */
#define EXEC_MSG_MAX 24576u
_Static_assert(sizeof(struct ooo_msg_hdr) + sizeof(struct ooo_sched_counters) <= EXEC_MSG_MAX,
	       "EXEC_MSG_STATS must fit EXEC_MSG_MAX");

#define EXEC_PART_MAX 7u /* reserved partitions of a plan (the shared one besides: OOO_SCHED_PARTITIONS) */

/* The SM partitions of the executor's coalescer (docs/architecture.md, "Partitions"). */
struct exec_partitions {
	uint64_t req;
	uint64_t generation; /* oood's plan number, echoed */
	uint32_t n;          /* reserved partitions, <= EXEC_PART_MAX; 0: none (every bundle on the whole GPU) */
	uint32_t reserved;
	struct exec_part_req {
		char klass[32];  /* the tenant class (NUL-terminated, distinct) */
		uint32_t sms;    /* > 0; rounded up to the device's split granule */
		uint32_t reserved;
	} p[EXEC_PART_MAX];
};

struct exec_partitions_reply {
	uint64_t req;
	uint64_t generation;
	int32_t status;      /* 0: applied; negative: refused, the partitions are as they were */
	uint32_t n;
	uint32_t granule;    /* SMs of the device's smallest split group (0: no green contexts) */
	uint32_t reserved;
	uint32_t sms[EXEC_PART_MAX + 1]; /* what each reserved partition got, then the shared one (at n) */
	char reason[OOO_ERRMSG_MAX];
};

struct exec_host {
	uint64_t req;
	uint64_t session;
	uint32_t region;
	uint32_t reserved;
	uint64_t size;
};

/*
 * MODULE_LOAD's kind for a slot whose module was lost in an earlier restart
 * (its image could not be loaded again): no image; the new executor keeps
 * the slot taken, so that no other module takes the tenant's handle, until
 * the tenant unloads it.
 */
#define EXEC_MODULE_LOST 0x4c4f5354u

struct exec_module {
	uint64_t req;
	uint64_t session;
	uint32_t kind;   /* enum ooo_module_kind, or EXEC_MODULE_LOST */
	uint32_t module; /* UNLOAD: the module; LOAD: 0, or the slot + 1 it must take (oood restoring it after a restart) */
	uint64_t len;
};

struct exec_kernel_get {
	uint64_t req;
	uint64_t session;
	uint32_t module;
	uint32_t kernel; /* 0, or the kernel index + 1 it must take (oood restoring it after a restart) */
	char name[OOO_KERNEL_NAME_MAX];
};

struct exec_kernel_reply {
	uint64_t req;
	int32_t status;
	uint32_t reserved;
	struct ooo_msg_kernel k;
	char reason[OOO_ERRMSG_MAX];
};

struct exec_attach {
	uint64_t req;
	uint64_t session;
	uint64_t area_size;
	uint32_t sq_entries, cq_entries;
	uint32_t max_queues;
	uint32_t flags; /* EXEC_ATTACH_RESET */
};

/* Re-attach after an executor restart: drop what the dead executor never took from the ring. */
#define EXEC_ATTACH_RESET 1u

struct exec_queue {
	uint64_t req;
	uint64_t session;
	uint32_t queue;
	uint32_t create;  /* 1 create, 0 destroy */
	int32_t priority; /* 0..99, higher first */
	uint32_t slo_us;  /* the queue's latency SLO: a launch's deadline is its arrival + this */
	char klass[32];   /* the tenant class's name (truncated), for per-class counters */
};

/* Device memory: cuMemCreate'd, exported as a POSIX fd that oood keeps. */
struct exec_mem_req {
	uint64_t req;  /* oood's request id, echoed */
	uint64_t session; /* owner: only its submissions may name this memory */
	uint64_t addr; /* FREE, IMPORT: the buffer's device address */
	uint64_t size; /* ALLOC: bytes wanted; IMPORT: the mapped size */
};

struct exec_mem_reply {
	uint64_t req;
	int32_t status; /* 0 or negative */
	uint32_t reserved;
	uint64_t addr;
	uint64_t size; /* rounded up to the allocation granularity */
	char reason[OOO_ERRMSG_MAX - 16]; /* fits a tenant's error reply with a prefix */
};

struct exec_ready {
	int32_t status;        /* 0: device open; negative OOO_E*: why not */
	uint32_t device;       /* index this executor serves */
	uint32_t device_count; /* devices the driver reports */
	int32_t driver_version;
	uint32_t sm_count;
	uint32_t cc_major, cc_minor;
	uint32_t reserved;
	uint64_t mem_total;
	uint64_t mem_free;
	uint8_t uuid[16];
	char name[96];
	char reason[OOO_ERRMSG_MAX]; /* when status < 0 */
};

/* Check a datagram from an executor: header, known type, payload size. Returns 0 or -OOO_EPROTO. */
int exec_msg_check(const void *buf, size_t len, uint16_t *type, const void **payload, size_t *plen);

/* Executor process entry: `oood --executor --device N [--user U] [--libcuda P]`. Returns an exit code. */
int executor_main(int argc, char **argv);

#endif
