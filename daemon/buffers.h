/* SPDX-License-Identifier: MIT */
/*
 * Tenant device buffers, as oood sees them. The executor makes the memory
 * and hands oood its POSIX fd; oood keeps that fd for the buffer's life, so
 * the memory survives the executor, and gives a restarted executor every fd
 * of its GPU to map again at the same address. Each buffer is charged to its
 * session (OOO_RES_BUFFERS, OOO_RES_MEM_BYTES) from request to free.
 *
 * Owner: the server owns every struct buffer (on srv->buffers and on its
 * session's bufs list) and each buffer owns its fd.
 */
#ifndef OOO_BUFFERS_H
#define OOO_BUFFERS_H

#include <stdbool.h>
#include <stdint.h>

#include <ooo/proto.h>

#include "exec/exec_proto.h"
#include "registry.h"

struct server;
struct conn;

struct buffer {
	struct list_node snode; /* session->bufs */
	struct list_node anode; /* srv->buffers */
	struct session *sess;
	uint64_t id;
	uint64_t session; /* the owning session's id (kept for the executor after an orphaning) */
	uint64_t req;     /* executor request in flight, 0 if none */
	uint64_t addr, size;
	uint64_t charged; /* bytes charged to the session */
	uint32_t gpu;
	int fd;
	bool live;     /* the executor made it: addr and fd valid */
	bool mapped;   /* mapped in the current executor of its GPU */
	bool orphan;   /* its session closed while the allocation was in flight */
	struct conn_ref waiter;
	uint32_t seq;
};

void buffers_init(struct server *srv);
void buffers_fini(struct server *srv);

/* Tenant requests. Each answers the connection (now or when the executor replies). */
void buffers_alloc(struct server *srv, struct conn *c, uint32_t seq, const struct ooo_msg_buf_alloc *req);
void buffers_free(struct server *srv, struct conn *c, uint32_t seq, uint64_t id);
void buffers_export(struct server *srv, struct conn *c, uint32_t seq, uint64_t id);

/* The session is closing: free all it holds (before registry_close). */
void buffers_release_session(struct server *srv, struct session *s);

/* From gpu.c: an executor's memory reply; its lost executor; a new executor ready. */
void buffers_on_reply(struct server *srv, uint32_t gpu, uint16_t type, const struct exec_mem_reply *r, int fd);
void buffers_gpu_lost(struct server *srv, uint32_t gpu);
void buffers_gpu_ready(struct server *srv, uint32_t gpu);


#endif
