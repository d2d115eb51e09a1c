/* SPDX-License-Identifier: MIT */
/* SM partition plans: sent to the executors, their answers kept for oooctl (see parts.h). */
#include "parts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../proto/wire.h"
#include "../log.h"
#include "../server.h"

/* What the module keeps of g's slot. */
#define PG(srv, g) (&(srv)->parts->slot[(g)->idx])

static int plan_for(const struct server *srv, const struct part_override *ovr, size_t novr, const struct gpu *g,
		    struct part_plan *out, char *why, size_t cap)
{
	return part_plan(srv->policy, ovr, novr, g->info.sm_count, out, why, cap);
}

/* Send plan, numbered generation, to g's executor. */
static void send_plan(struct server *srv, struct gpu *g, const struct part_plan *plan, uint64_t generation)
{
	struct exec_partitions m;

	memset(&m, 0, sizeof(m));
	m.req = generation;
	m.generation = generation;
	m.n = plan->n;
	for (uint32_t i = 0; i < plan->n; i++) {
		snprintf(m.p[i].klass, sizeof(m.p[i].klass), "%s", plan->p[i].klass);
		m.p[i].sms = plan->p[i].sms;
	}
	PG(srv, g)->plan = *plan;
	PG(srv, g)->generation = generation;
	if (gpu_send(srv, g->idx, EXEC_MSG_PARTITIONS, &m, sizeof(m), -1) < 0) {
		/* the executor is going away: the next one gets the plan when it is ready */
		log_warn("gpu%u: cannot send partition plan %llu to the executor", g->dev, (unsigned long long)generation);
		PG(srv, g)->answered = generation;
		PG(srv, g)->status = -EIO;
		snprintf(PG(srv, g)->reason, sizeof(PG(srv, g)->reason), "the plan could not be sent to the executor");
	}
}

static void parts_gpu_ready(struct server *srv, struct gpu *g)
{
	struct part_plan plan;
	char why[OOO_ERRMSG_MAX];
	int r;

	memset(PG(srv, g), 0, sizeof(struct gpu_parts)); /* a new executor: no partitions yet */
	r = plan_for(srv, srv->parts->ovr, srv->parts->novr, g, &plan, why, sizeof(why));
	if (r < 0) {
		log_warn("gpu%u: no partitions: %s", g->dev, why);
		PG(srv, g)->status = r;
		snprintf(PG(srv, g)->reason, sizeof(PG(srv, g)->reason), "%s", why);
		return;
	}
	send_plan(srv, g, &plan, ++srv->parts->generation);
}

static void parts_on_reply(struct server *srv, struct gpu *g, const void *payload)
{
	struct exec_partitions_reply r;
	char list[OOO_ERRMSG_MAX];
	size_t at = 0;

	(void)srv;
	memcpy(&r, payload, sizeof(r));
	r.reason[sizeof(r.reason) - 1] = '\0';
	if (r.generation < PG(srv, g)->answered || r.generation > PG(srv, g)->generation)
		return; /* not an answer to a plan of this executor's */
	PG(srv, g)->answered = r.generation;
	PG(srv, g)->status = r.status;
	PG(srv, g)->granule = r.granule;
	memcpy(PG(srv, g)->sms, r.sms, sizeof(PG(srv, g)->sms));
	snprintf(PG(srv, g)->reason, sizeof(PG(srv, g)->reason), "%s", r.status < 0 ? r.reason : "");
	wire_sanitize(PG(srv, g)->reason);
	if (r.status < 0) {
		log_warn("gpu%u: the executor refused partition plan %llu: %s", g->dev, (unsigned long long)r.generation,
			 PG(srv, g)->reason);
		return;
	}
	if (r.generation != PG(srv, g)->generation)
		return;
	list[0] = '\0';
	for (uint32_t i = 0; i < PG(srv, g)->plan.n && at < sizeof(list); i++)
		at += (size_t)snprintf(list + at, sizeof(list) - at, "%s %s %u SMs", i ? "," : "", PG(srv, g)->plan.p[i].klass,
				       r.sms[i]);
	if (PG(srv, g)->plan.n)
		log_info("gpu%u: partitions:%s, the shared one %u SMs (plan %llu)", g->dev, list, r.sms[PG(srv, g)->plan.n],
			 (unsigned long long)r.generation);
}

static void parts_reload(struct server *srv)
{
	struct parts *p = srv->parts;

	/* what oooctl set for a class the policy no longer has goes */
	for (size_t i = 0; i < p->novr;) {
		bool found = false;

		for (size_t k = 0; k < srv->policy->nclasses && !found; k++)
			found = !strcmp(srv->policy->classes[k].name, p->ovr[i].klass);
		if (found) {
			i++;
			continue;
		}
		log_info("partition of class '%s' (oooctl partition set) dropped: the policy has no such class",
			 p->ovr[i].klass);
		p->ovr[i] = p->ovr[--p->novr];
	}
	for (uint32_t i = 0; i < srv->gpus->n; i++) {
		struct gpu *g = &srv->gpus->g[i];
		struct part_plan plan;
		char why[OOO_ERRMSG_MAX];

		if (g->state != OOO_DEV_READY)
			continue;
		if (plan_for(srv, p->ovr, p->novr, g, &plan, why, sizeof(why)) < 0) {
			log_warn("gpu%u: partitions kept as they are: %s", g->dev, why);
			continue;
		}
		if (!PG(srv, g)->generation || !part_plan_equal(&plan, &PG(srv, g)->plan))
			send_plan(srv, g, &plan, ++p->generation);
	}
}

static int parts_admin_set(struct server *srv, const struct ooo_msg_partition_set *req,
			   struct ooo_msg_partition_set_reply *rep)
{
	struct part_override ovr[PART_OVERRIDES];
	size_t novr = srv->parts->novr;
	static struct part_plan plans[EXEC_MAX]; /* too large for the stack; oood has one thread */
	char why[OOO_ERRMSG_MAX];
	uint64_t gen;
	bool found = false;
	int r;

	memset(rep, 0, sizeof(*rep));
	for (size_t k = 0; k < srv->policy->nclasses && !found; k++)
		found = !strcmp(srv->policy->classes[k].name, req->class_name);
	if (!found) {
		snprintf(rep->msg, sizeof(rep->msg), "the policy has no class '%.64s'", req->class_name);
		return -EINVAL;
	}
	memcpy(ovr, srv->parts->ovr, sizeof(ovr));
	r = part_override_set(ovr, &novr, req->class_name, req->sms, req->reset != 0);
	if (r < 0) {
		snprintf(rep->msg, sizeof(rep->msg), r == -ENOSPC ? "oooctl has sized %d classes already: reset one first"
								  : "bad class name",
			 PART_OVERRIDES);
		return r;
	}
	/* every ready GPU must be able to take it, or nothing changes */
	for (uint32_t i = 0; i < srv->gpus->n; i++) {
		const struct gpu *g = &srv->gpus->g[i];

		if (g->state != OOO_DEV_READY)
			continue;
		r = plan_for(srv, ovr, novr, g, &plans[i], why, sizeof(why));
		if (r < 0) {
			snprintf(rep->msg, sizeof(rep->msg), "gpu%u: %.200s", g->dev, why);
			return r;
		}
	}
	memcpy(srv->parts->ovr, ovr, sizeof(ovr));
	srv->parts->novr = novr;
	gen = ++srv->parts->generation;
	for (uint32_t i = 0; i < srv->gpus->n; i++) {
		struct gpu *g = &srv->gpus->g[i];

		if (g->state != OOO_DEV_READY)
			continue;
		send_plan(srv, g, &plans[i], gen);
		rep->gpus++;
	}
	rep->generation = gen;
	if (req->reset)
		snprintf(rep->msg, sizeof(rep->msg),
			 "partition of class '%.64s': as the policy says (plan %llu, sent to %u executors)", req->class_name,
			 (unsigned long long)gen, rep->gpus);
	else if (req->sms)
		snprintf(rep->msg, sizeof(rep->msg),
			 "partition of class '%.64s': %u SMs on every GPU (plan %llu, sent to %u executors)", req->class_name,
			 req->sms, (unsigned long long)gen, rep->gpus);
	else
		snprintf(rep->msg, sizeof(rep->msg),
			 "class '%.64s': no partition, it shares the rest (plan %llu, sent to %u executors)", req->class_name,
			 (unsigned long long)gen, rep->gpus);
	return 0;
}

static void part_rec(struct server *srv, const struct gpu *g, void *rec, uint64_t now)
{
	const struct gpu_parts *gp = PG(srv, g);
	bool applied = gp->answered == gp->generation && gp->generation && gp->status == 0;
	struct ooo_part_gpu_rec *r = rec;

	(void)srv;
	(void)now;
	r->index = g->idx;
	r->device = g->dev;
	wire_strcpy(r->domain, sizeof(r->domain), g->domain);
	r->state = g->state;
	r->generation = gp->generation;
	r->answered = gp->answered;
	r->status = gp->status;
	r->n = gp->plan.n;
	r->sm_count = g->have_info ? g->info.sm_count : 0;
	r->granule = gp->granule;
	r->shared_sms = applied ? gp->sms[gp->plan.n] : 0;
	for (uint32_t k = 0; k < gp->plan.n; k++) {
		wire_strcpy(r->p[k].class_name, sizeof(r->p[k].class_name), gp->plan.p[k].klass);
		r->p[k].asked = gp->plan.p[k].sms;
		r->p[k].sms = applied ? gp->sms[k] : 0;
		r->p[k].source = gp->plan.p[k].source == PART_SRC_OOOCTL ? OOO_PART_OOOCTL : OOO_PART_POLICY;
	}
	wire_strcpy(r->reason, sizeof(r->reason), gp->reason);
}

static ssize_t parts_admin_list(struct server *srv, const struct ooo_msg_list_req *req, void *buf, size_t cap)
{
	return gpu_list_slots(srv, req, buf, cap, sizeof(struct ooo_part_gpu_rec), part_rec);
}

/* ---- the module -------------------------------------------------------------- */

static void on_claimed(struct server *srv, struct gpu *g)
{
	memset(PG(srv, g), 0, sizeof(struct gpu_parts));
}

static void on_reply(struct server *srv, uint32_t idx, uint16_t type, const void *payload, size_t plen, int *fd)
{
	parts_on_reply(srv, &srv->gpus->g[idx], payload);
}

static const uint16_t replies[] = { EXEC_MSG_PARTITIONS };

static const struct exec_listener listener = {
	.claimed = on_claimed,
	.ready = parts_gpu_ready,
	.reply = on_reply,
	.replies = replies,
	.nreplies = sizeof(replies) / sizeof(replies[0]),
};

static int parts_init(struct server *srv)
{
	srv->parts = calloc(1, sizeof(*srv->parts));
	if (!srv->parts)
		return -ENOMEM;
	return gpu_listen(srv, &listener);
}

static void parts_fini(struct server *srv)
{
	free(srv->parts);
	srv->parts = NULL;
}

static void on_set(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	const struct peer_cred *cred = server_conn_cred(c);
	struct ooo_msg_partition_set_reply rep;
	int r = parts_admin_set(srv, payload, &rep);

	log_info("oooctl (pid %u uid %u): partition set: %s", cred->pid, cred->uid, rep.msg);
	if (r < 0)
		server_reply_error(srv, c, OOO_MSG_PARTITION_SET, seq, r, "%s", rep.msg);
	else
		server_reply(srv, c, OOO_MSG_PARTITION_SET, seq, &rep, sizeof(rep), -1);
}

static ssize_t build_list(struct server *srv, const void *payload, void *buf, size_t cap)
{
	return parts_admin_list(srv, payload, buf, cap);
}

static const struct handler handlers[] = {
	{ .type = OOO_MSG_PARTITIONS, .flags = H_ADMIN, .build = build_list },
	{ .type = OOO_MSG_PARTITION_SET, .flags = H_ADMIN, .fn = on_set },
};

const struct module parts_module = {
	.name = "partitions",
	.init = parts_init,
	.reload = parts_reload,
	.fini = parts_fini,
	.handlers = handlers,
	.nhandlers = sizeof(handlers) / sizeof(handlers[0]),
};
