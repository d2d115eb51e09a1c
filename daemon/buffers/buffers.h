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

#include "../../proto/exec_proto.h"
#include "../policy/registry.h"

struct server;
struct conn;
struct module;

struct buffer {
	struct list_node snode; /* session->bufs */
	struct list_node anode; /* srv->bufs->all */
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

/* The module's state (srv->bufs): every buffer, in flight too. */
struct buffers {
	struct list_node all; /* struct buffer.anode */
};

/*
 * The module (server.h): owns srv->bufs and every buffer. Handles
 * OOO_MSG_BUF_ALLOC, _FREE and _EXPORT; a closing session's buffers go with
 * it; listens to the executors: maps the buffers again in a new executor of
 * their slot, and parks an allocation its executor took down with it.
 */
extern const struct module buffers_module;

#endif
