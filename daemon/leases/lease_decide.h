/* SPDX-License-Identifier: MIT */
/*
 * Native leases, the pure part (lease_decide.c): whether a lease can be
 * granted against the reservations already made, the environment the
 * program is exec'ed with, and the telemetry feedback's arithmetic.
 */
#ifndef OOO_LEASE_DECIDE_H
#define OOO_LEASE_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>

#include "../policy/policy.h"

#define LEASE_FEEDBACK_MIN 20u  /* syncs seen before a lease's p99 counts */

/* What lease_decide looks at: the reservations now. */
struct lease_view {
	uint32_t ngpus;
	uint32_t reserved[OOO_MPS_GPUS]; /* percent held by leases */
	uint32_t clients[OOO_MPS_GPUS];  /* leases */
	uint32_t exec_clients;           /* 1 when executors are MPS clients (a GPU's first, kept while it restarts) */
	uint32_t exec_extra[OOO_MPS_GPUS]; /* a GPU's executors beyond the first (trust domains, the spare) */
	uint32_t exec_reserve;           /* [mps] executor_reserve */
	uint32_t max_clients;            /* [mps] max_clients */
	uint32_t tenant_leases;          /* live leases of this uid in this class */
	uint32_t offer;                  /* the class's share offered now (native_sm after feedback) */
};

struct lease_grant {
	uint32_t device;
	uint32_t sm_pct;
	uint32_t priority; /* OOO_LEASE_PRIO_NORMAL or _BELOW */
	uint64_t mem_bytes;
	char note[OOO_ERRMSG_MAX]; /* how it differs from the request */
};

/* Pure: grant or refuse. Returns 0, -EPERM (above what the class allows), -OOO_ELIMIT (no room), -OOO_ENODEV. */
int lease_decide(const struct lease_view *v, const struct ooo_class *cls, const struct ooo_msg_lease_req *req,
		 struct lease_grant *g, char *why, size_t cap);
/* Pure: the environment lines ("KEY=VALUE\n"). Returns 0 or -ENAMETOOLONG. */
int lease_env(const struct lease_grant *g, uint64_t id, const char *pipe_dir, const char *log_dir, const char *visible,
	      char *out, size_t cap);
/* Pure: whether a lease with these telemetry figures missed its class's SLO: enough syncs, and its p99 bucket
 * (a log2 bucket's upper bound) lies wholly above slo_us. */
bool lease_is_slow(uint64_t syncs, uint64_t sync_p99_ns, uint32_t slo_us);
/* Pure: a class's next offer after one of its leases missed its SLO: offer (0: native_sm) + step, at most sm_share. */
uint32_t lease_raise_offer(uint32_t offer, const struct ooo_class *cls, uint32_t step);
/* Pure: the upper bound (ns) of the log2-microsecond bucket holding quantile q, 0 if empty. */
uint64_t lease_hist_quantile(const uint64_t *hist, unsigned nb, double q);

#endif
