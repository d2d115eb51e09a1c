/* SPDX-License-Identifier: MIT */
/* Lease decisions and environments (pure; lease.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lease_decide.h"
#include "../mps/mps_text.h"

/* ---- pure ----------------------------------------------------------------------------------- */

/* The MPS clients of GPU d that are executors. */
static uint32_t execs(const struct lease_view *v, uint32_t d)
{
	return v->exec_clients ? v->exec_clients + v->exec_extra[d] : 0;
}

static bool room(const struct lease_view *v, uint32_t d, uint32_t pct)
{
	return v->reserved[d] + v->exec_reserve + pct <= 100 && v->clients[d] + execs(v, d) + 1 <= v->max_clients;
}

int lease_decide(const struct lease_view *v, const struct ooo_class *cls, const struct ooo_msg_lease_req *req,
		 struct lease_grant *g, char *why, size_t cap)
{
	uint32_t pct, prio, dev = UINT32_MAX;
	uint64_t mem, mem_max = cls->limit[OOO_RES_MEM_BYTES];

	memset(g, 0, sizeof(*g));
	why[0] = '\0';
	if (req->sm_pct > 100) {
		snprintf(why, cap, "--sm must be 1..100 percent, got %u", req->sm_pct);
		return -EINVAL;
	}
	if (req->sm_pct > cls->sm_share) {
		snprintf(why, cap, "class '%s' allows at most %u%% of a GPU (sm_share), asked for %u%%", cls->name,
			 cls->sm_share, req->sm_pct);
		return -EPERM;
	}
	pct = req->sm_pct;
	if (!pct) {
		pct = v->offer ? v->offer : cls->native_sm;
		if (pct > cls->sm_share)
			pct = cls->sm_share;
	}
	if (req->mem_bytes > mem_max) {
		snprintf(why, cap, "class '%s' allows at most %llu MiB of device memory (mem_limit), asked for %llu MiB",
			 cls->name, (unsigned long long)(mem_max >> 20), (unsigned long long)(req->mem_bytes >> 20));
		return -EPERM;
	}
	if (req->mem_bytes && req->mem_bytes < (1ull << 20)) {
		snprintf(why, cap, "--mem must be at least 1M, got %llu bytes", (unsigned long long)req->mem_bytes);
		return -EINVAL;
	}
	mem = req->mem_bytes ? req->mem_bytes : cls->native_mem ? cls->native_mem : mem_max;
	if (mem > mem_max)
		mem = mem_max;
	if (req->priority > OOO_LEASE_PRIO_BELOW) {
		snprintf(why, cap, "unknown priority %u", req->priority);
		return -EINVAL;
	}
	prio = req->priority ? req->priority : cls->native_priority;
	if (prio == OOO_LEASE_PRIO_NORMAL && cls->native_priority == OOO_LEASE_PRIO_BELOW) {
		snprintf(why, cap, "class '%s' runs native tenants at priority below (native_priority)", cls->name);
		return -EPERM;
	}
	if (v->tenant_leases >= cls->max_leases) {
		snprintf(why, cap, "uid has %u live leases in class '%s' (max_leases = %u)", v->tenant_leases, cls->name,
			 cls->max_leases);
		return -OOO_ELIMIT;
	}
	if (!v->ngpus) {
		snprintf(why, cap, "no GPU to lease on (no executor has reported one, no /dev/nvidiaN, [mps] devices = 0)");
		return -OOO_ENODEV;
	}
	if (req->device != OOO_DEVICE_ANY) {
		if (req->device >= v->ngpus) {
			snprintf(why, cap, "no GPU %u (this host has %u)", req->device, v->ngpus);
			return -OOO_ENODEV;
		}
		dev = req->device;
	} else {
		/* the most unreserved share first, then the fewest clients, then the lowest index */
		for (uint32_t d = 0; d < v->ngpus; d++) {
			if (!room(v, d, pct))
				continue;
			if (dev == UINT32_MAX || v->reserved[d] < v->reserved[dev] ||
			    (v->reserved[d] == v->reserved[dev] && v->clients[d] < v->clients[dev]))
				dev = d;
		}
		if (dev == UINT32_MAX && v->ngpus == 1)
			dev = 0; /* one GPU: the messages below say what fills it */
		if (dev == UINT32_MAX) {
			/* every GPU is full: say so for each, by what fills it */
			size_t k = (size_t)snprintf(why, cap, "no GPU has room for %u%% and one more MPS client:", pct);
			for (uint32_t d = 0; d < v->ngpus && k < cap; d++)
				k += (size_t)snprintf(why + k, cap - k, "%s GPU %u %u%% reserved, %u of %u clients", d ? ";" : "",
						      d, v->reserved[d] + v->exec_reserve, v->clients[d] + execs(v, d),
						      v->max_clients);
			if (k < cap)
				snprintf(why + k, cap - k, " (the sum of shares stays within 100%%; ask for less with --sm)");
			return -OOO_ELIMIT;
		}
	}
	if (v->clients[dev] + execs(v, dev) + 1 > v->max_clients) {
		char ex[48] = "";

		if (execs(v, dev) == 1)
			snprintf(ex, sizeof(ex), " and the executor");
		else if (execs(v, dev) > 1)
			snprintf(ex, sizeof(ex), " and %u executors", execs(v, dev));
		snprintf(why, cap, "GPU %u has %u MPS clients (%u leases%s), the most it takes ([mps] max_clients = %u)",
			 dev, v->clients[dev] + execs(v, dev), v->clients[dev], ex, v->max_clients);
		return -OOO_ELIMIT;
	}
	if (v->reserved[dev] + v->exec_reserve + pct > 100) {
		snprintf(why, cap,
			 "GPU %u: %u%% reserved by %u leases%s; %u%% more would oversubscribe it (ask for less with --sm)",
			 dev, v->reserved[dev] + v->exec_reserve, v->clients[dev],
			 v->exec_reserve ? " and executor_reserve" : "", pct);
		return -OOO_ELIMIT;
	}
	g->device = dev;
	g->sm_pct = pct;
	g->priority = prio;
	g->mem_bytes = mem;
	if (!req->sm_pct && v->offer && v->offer != cls->native_sm)
		snprintf(g->note, sizeof(g->note), "share %u%%: class '%s' offer raised by telemetry feedback from %u%%",
			 pct, cls->name, cls->native_sm);
	return 0;
}

int lease_env(const struct lease_grant *g, uint64_t id, const char *pipe_dir, const char *log_dir, const char *visible,
	      char *out, size_t cap)
{
	char mem[32];
	int n;

	mps_format_size(g->mem_bytes, mem, sizeof(mem));
	/* with one visible device it is device 0 of the client: the limit names it so */
	n = snprintf(out, cap,
		     "CUDA_MPS_PIPE_DIRECTORY=%s\nCUDA_MPS_LOG_DIRECTORY=%s\nCUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%u\n"
		     "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=%s\nCUDA_MPS_CLIENT_PRIORITY=%u\nCUDA_VISIBLE_DEVICES=%s\n"
		     "OOO_LEASE=%llu\n",
		     pipe_dir, log_dir, g->sm_pct, mem, g->priority == OOO_LEASE_PRIO_BELOW ? 1u : 0u, visible,
		     (unsigned long long)id);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

uint64_t lease_hist_quantile(const uint64_t *hist, unsigned nb, double q)
{
	uint64_t total = 0, acc = 0, want;

	for (unsigned i = 0; i < nb; i++)
		total += hist[i];
	if (!total)
		return 0;
	want = (uint64_t)((double)total * q);
	if (want >= total)
		want = total - 1;
	for (unsigned i = 0; i < nb; i++) {
		acc += hist[i];
		if (acc > want)
			return (i >= 63 ? UINT64_MAX / 1000 : (1ull << i)) * 1000ull;
	}
	return 0;
}


bool lease_is_slow(uint64_t syncs, uint64_t sync_p99_ns, uint32_t slo_us)
{
	/* p99 is a log2 bucket's upper bound: slow only when the whole bucket lies above the SLO */
	return syncs >= LEASE_FEEDBACK_MIN && sync_p99_ns / 2 >= (uint64_t)slo_us * 1000ull;
}

uint32_t lease_raise_offer(uint32_t offer, const struct ooo_class *cls, uint32_t step)
{
	uint32_t base = offer ? offer : cls->native_sm;

	if (base > cls->sm_share)
		base = cls->sm_share;
	return base + step > cls->sm_share ? cls->sm_share : base + step;
}
