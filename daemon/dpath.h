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

#include "registry.h"

#define DPATH_AREA_SIZE (33ull << 20) /* 32 MiB of staging plus the rings */
#define DPATH_SQ_ENTRIES 1024u
#define DPATH_CQ_ENTRIES 4096u
#define DPATH_MAX_QUEUES 256u         /* the executor's DP_MAX_QUEUES */
#define DPATH_MAX_MODULES 256u        /* the executor's DP_MAX_MODULES */
#define DPATH_MAX_KERNELS 1024u       /* the executor's DP_MAX_KERNELS */

struct server;
struct conn;

struct sdpath {
	struct list_node node; /* srv->dpaths */
	struct session *sess;
	uint64_t session;
	uint32_t gpu;
	int memfd;
	/*
	 * The doorbell socket pair (client/ring.h): bell[0] is the tenant's end
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
	struct list_node rs_node; /* srv->restoring[gpu], while restoring */
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
	struct list_node node; /* srv->xreqs */
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

void dpath_init(struct server *srv);
void dpath_fini(struct server *srv);
void dpath_attach(struct server *srv, struct conn *c, uint32_t seq, const struct ooo_msg_attach *req);
void dpath_queue_create(struct server *srv, struct conn *c, uint32_t seq, const struct ooo_msg_queue_create *req);
void dpath_queue_destroy(struct server *srv, struct conn *c, uint32_t seq, uint32_t queue);
void dpath_release_session(struct server *srv, struct session *s);
/* Tell an executor to forget a session (its area, queues, modules, buffers' ownership). */
void dpath_detach(struct server *srv, uint32_t gpu, uint64_t session);
void dpath_module_load(struct server *srv, struct conn *c, uint32_t seq, const struct ooo_msg_module_load *req, int fd);
void dpath_module_unload(struct server *srv, struct conn *c, uint32_t seq, uint32_t module);
void dpath_kernel_get(struct server *srv, struct conn *c, uint32_t seq, const struct ooo_msg_kernel_get *req);
void dpath_host_alloc(struct server *srv, struct conn *c, uint32_t seq, uint64_t size);
void dpath_host_free(struct server *srv, struct conn *c, uint32_t seq, uint32_t region);
/* An executor's answer to a forwarded request (module load/unload, kernel get). */
void dpath_on_xreply(struct server *srv, uint32_t gpu, uint16_t type, const void *payload);
void dpath_on_reply(struct server *srv, uint32_t gpu, uint16_t type, int32_t status, uint64_t req, const char *reason);
void dpath_gpu_lost(struct server *srv, uint32_t gpu);
void dpath_gpu_ready(struct server *srv, uint32_t gpu);
/*
 * The executor of slot gpu found work past kernel_time_limit_ms (EXEC_MSG_HUNG,
 * checked) and is exiting: the hang is counted against the tenant whose
 * sessions the work was (oood.conf hang_strikes), unless they were several
 * tenants' (a fused bundle: the kernel that did not end is one member's).
 */
struct exec_hung;
void dpath_on_hung(struct server *srv, uint32_t gpu, const struct exec_hung *h);
/* Executor slot gpu of `domain` exited for a fault of its GPU work: a strike against its tenant, if one. */
void dpath_on_fault(struct server *srv, uint32_t gpu, const char *domain);
/* oooctl pardon: forgets the hangs of req->uid (checked by wire_decode); *rep says what was forgotten. */
struct ooo_msg_pardon;
struct ooo_msg_pardon_reply;
void dpath_admin_pardon(struct server *srv, const struct ooo_msg_pardon *req, struct ooo_msg_pardon_reply *rep);
/* The executor answered the ping sent behind a re-attach: the session may submit again. */
void dpath_on_barrier(struct server *srv, uint32_t gpu, uint64_t session);

#endif
