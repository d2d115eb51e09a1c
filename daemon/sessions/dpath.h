/* SPDX-License-Identifier: MIT */
/*
 * A session's data path, as oood sets it up: the shared area (a sealed
 * memfd with rings and staging, <ooo/shm.h>), a doorbell socket pair, and
 * the session's queues on its GPU. oood creates and keeps the area and both
 * doorbell ends, gives the tenant the area and its end, the executor the area
 * and the other end, and gives them again to a restarted executor. No
 * descriptor that oood or an executor reads or writes is shared with the
 * tenant. Submissions and completions never pass through oood.
 *
 * Owner: struct sdpath belongs to its session (session->dp) and owns the
 * three descriptors.
 */
#ifndef OOO_DPATH_H
#define OOO_DPATH_H

#include <stdbool.h>
#include <stdint.h>

#include <ooo/proto.h>

#include "../executors/gpu.h"
#include "../policy/registry.h"

#define DPATH_AREA_SIZE (33ull << 20) /* 32 MiB of staging plus the rings */
#define DPATH_SQ_ENTRIES 1024u
#define DPATH_CQ_ENTRIES 4096u
#define DPATH_MAX_QUEUES 256u         /* the executor's DP_MAX_QUEUES */
#define DPATH_MAX_MODULES 256u        /* the executor's DP_MAX_MODULES */
#define DPATH_MAX_KERNELS 1024u       /* the executor's DP_MAX_KERNELS */

struct server;
struct conn;
struct module;
struct hangs;

struct sdpath {
	struct list_node node; /* srv->dp->dpaths */
	struct session *sess;
	uint64_t session;
	uint32_t gpu;
	int memfd;
	/*
	 * The doorbell socket pair (proto/ring.h): bell[0] is the tenant's end
	 * (a copy goes in the attach reply), bell[1] the executor's and oood's.
	 * oood keeps both for the session's life, so the executor's end never
	 * sees a close, only a tenant's shutdown.
	 */
	int bell[2];
	struct ooo_shm_hdr *hdr; /* page 0 of the area, mapped here to write the epoch */
	bool attached; /* the current executor has it */
	uint64_t req;  /* executor request in flight */
	struct conn_ref waiter;
	uint32_t seq;
	uint16_t wait_type;
	uint32_t wait_queue;
	uint8_t queue_live[DPATH_MAX_QUEUES];
	uint8_t queue_prio[DPATH_MAX_QUEUES];
	uint32_t queue_slo[DPATH_MAX_QUEUES]; /* for the scheduler */
	uint8_t module_live[DPATH_MAX_MODULES];
	/*
	 * What a new executor needs to load a session's modules again, in the
	 * same slots, after a restart: each live module's image (the tenant's
	 * memfd, sealed against writes: kept here, -1 if none), its kind and
	 * length, and the name and module of every kernel the tenant looked
	 * up, by kernel index (allocated with the first one), so that the
	 * tenant's module and kernel handles stay valid.
	 */
	int module_fd[DPATH_MAX_MODULES];
	/*
	 * A live module whose image is gone (it did not load again, the executor
	 * died while loading it again, or the class no longer allows its kind):
	 * still the tenant's and charged, its slot kept taken on each new
	 * executor (EXEC_MODULE_LOST) until the tenant unloads it.
	 */
	uint8_t module_lost[DPATH_MAX_MODULES];
	/*
	 * A restore in progress on the current executor: modules from slot
	 * rs_mod on and kernels from index rs_kern on are still to send,
	 * rs_out sent and not answered. Sent a few at a time over the GPU
	 * (RESTORE_WINDOW), then the ping that ends the re-attach.
	 */
	bool restoring;
	struct list_node rs_node; /* srv->dp->restoring[gpu], while restoring */
	uint32_t rs_mod, rs_kern, rs_out;
	uint32_t module_kind[DPATH_MAX_MODULES];
	uint64_t module_len[DPATH_MAX_MODULES];
	char **kname;     /* [DPATH_MAX_KERNELS], NULL: no kernel there */
	uint16_t *kmod;   /* [DPATH_MAX_KERNELS]: its module */
	int host_fd[OOO_HOST_REGIONS]; /* zero-copy host regions: memfds kept here, -1 if free */
	uint64_t host_size[OOO_HOST_REGIONS];
	bool host_mapped[OOO_HOST_REGIONS];
};

/* A request forwarded to an executor, answered to the tenant when the executor replies. */
struct xreq {
	struct list_node node; /* srv->dp->xreqs */
	uint64_t req;
	uint32_t gpu;
	uint16_t type; /* the tenant's request type */
	struct conn_ref waiter;
	uint32_t seq;
	struct session *sess; /* NULL once the session is gone */
	uint32_t region;      /* HOST_ALLOC: the region it maps */
	bool restore;         /* oood's own: a module or kernel loaded again on a new executor (no tenant waits) */
	int fd;               /* MODULE_LOAD: the image, kept by the module once loaded (-1: none) */
	uint32_t kind;        /* MODULE_LOAD: the image's kind and length */
	uint64_t len;
	uint32_t module;      /* KERNEL_GET: the module; restores: the slot */
	char *name;           /* KERNEL_GET: the kernel's name */
};

#define DPATH_GONE 4096u

/* The module's state (srv->dp). */
struct dpaths {
	struct list_node dpaths; /* every struct sdpath */
	struct list_node xreqs;  /* requests forwarded to executors */
	/* per executor slot: sessions whose modules are being restored, oldest first, and their requests out */
	struct list_node restoring[EXEC_MAX];
	uint32_t restore_out[EXEC_MAX];
	struct hangs *hangs; /* tenants whose work ran past kernel_time_limit_ms or faulted (NULL until the first) */
	/*
	 * Attached data paths released whose executor has not yet answered
	 * their detach (dpath.c): an executor's report of a hang
	 * (EXEC_MSG_HUNG) can name a session that closed while its kernel ran
	 * (its detach waits on that kernel), and the hang still counts against
	 * its tenant; a fault report (EXEC_MSG_FAULT) too, which comes after
	 * the detach's answer (the executor posts what it can before it exits).
	 * Freed by the executor's end; past DPATH_GONE, the oldest is
	 * forgotten (session ids are never reused: a stale one matches no
	 * report).
	 */
	struct dpath_gone {
		uint64_t session; /* 0: unused */
		uint32_t gpu, uid;
	} gone[DPATH_GONE];
	uint32_t gone_next;
};

/*
 * The module (server.h): owns srv->dp, every data path and forwarded
 * request. Handles the tenants' OOO_MSG_ATTACH, _QUEUE_CREATE/_DESTROY,
 * _MODULE_LOAD/_UNLOAD, _KERNEL_GET, _HOST_ALLOC/_FREE and the operators'
 * OOO_MSG_PARDON; a closing session's data path goes with it; listens to
 * the executors: attaches and restores sessions again in a new executor,
 * strikes the tenants of a domain whose executor hung or faulted.
 */
extern const struct module dpath_module;

/* Tell slot gpu's executor to drop session's data path (no answer awaited). */
void dpath_detach(struct server *srv, uint32_t gpu, uint64_t session);

#endif
