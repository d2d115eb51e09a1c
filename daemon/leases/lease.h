/* SPDX-License-Identifier: MIT */
/*
 * Native leases (docs/native.md): an unmodified CUDA program started by
 * ooo-run gets an MPS share of one GPU. oood decides from the policy and the
 * reservations already made (lease_decide, pure), hands back the
 * environment the program is to be exec'ed with (lease_env, pure), watches
 * the process through a pidfd and releases the lease when it exits.
 *
 * Ownership: the server owns the table (srv->leases); each lease owns its
 * pidfd. A lease outlives the connection that asked for it: it ends with
 * the process.
 */
#ifndef OOO_LEASE_H
#define OOO_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>

#include "lease_decide.h"
#include "../policy/policy.h"

#define LEASE_MAX 1024u         /* live leases, all GPUs together */
#define LEASE_READ_NS (2ull * 1000000000ull) /* how often the leases' telemetry is read */

struct server;
struct conn;
struct module;

struct lease {
	bool used;
	uint32_t gen; /* of the slot, in the poll's tag */
	bool poll_armed;
	uint64_t id;
	pid_t pid;
	int pidfd;
	uint32_t uid;
	struct lease_grant g;
	char class_name[OOO_NAME_MAX];
	char cmd[OOO_NAME_MAX];
	uint64_t started_ns;
	uint32_t flags; /* OOO_LEASE_* */
	bool tm_tracked;
	uint64_t sync_p99_ns, syncs, launches;
	/* eviction: SIGTERM at term_at, SIGKILL at kill_at (0: not due) */
	uint64_t term_at_ns, kill_at_ns;
};

struct lease_offer {
	char class_name[OOO_NAME_MAX];
	uint32_t pct;
};

struct leases {
	struct lease *slot; /* LEASE_MAX */
	uint32_t live;
	uint64_t next_id;
	uint64_t total, refused, evicted;
	struct lease_offer offers[POLICY_MAX_CLASSES]; /* feedback: a class's raised offer */
	uint32_t noffers;
	char feedback[OOO_ERRMSG_MAX];
	uint64_t read_ns; /* the last pass over the telemetry (every LEASE_READ_NS, not every tick) */
	uint32_t op;      /* of the pidfd polls (server_add_op) */
};

/*
 * The module (server.h): owns srv->leases, after mps in the table (it tells
 * srv->mps who its clients are). A lease's pidfd is watched on the loop; the
 * tick steps evictions and reads the telemetry's feedback; a reload clamps
 * the offers to the new classes. Handles OOO_MSG_LEASE (tenants) and
 * OOO_MSG_EVICT, OOO_MSG_LEASES, OOO_MSG_MPS (operators).
 */
extern const struct module lease_module;

/* Live leases. */
uint32_t lease_live(const struct server *srv);
/* Shutdown after stop_grace_ms: terminate_client (or SIGTERM) every leased process. */
void lease_terminate_all(struct server *srv);

#endif
