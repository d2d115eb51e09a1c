/* SPDX-License-Identifier: MIT */
/*
 * The OoO scheduler's core (see sched.h). Fixed-size tables sized at
 * sched_new; nothing allocates after that, so the dispatch path cannot fail
 * for lack of memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"

#define NIL UINT32_MAX
#define COST_SLOTS 4096u  /* cost model entries (open addressing, replaced when full) */
#define CLASS_SLOTS 4096u /* fusion classes known to be compiled */

struct item {
	struct sched_launch l;
	uint32_t next; /* in its queue, or in the free list */
};

struct queue {
	uint32_t head, tail;
	uint32_t partition; /* of its launches */
	uint32_t inflight;  /* its launches dispatched and not completed */
	bool blocked;
	bool fenced;        /* moved: waits until nothing of it is in flight on the old partition */
};

struct cost {
	uint64_t key;
	uint64_t ns;
	bool used;
};

struct klass {
	uint64_t key;
	bool used, ready;
};

struct flight {
	bool used;
	uint64_t token;
	uint32_t partition;
	uint32_t n;
	uint64_t *keys;    /* SCHED_MAX_BUNDLE cost keys */
	uint32_t *queues;  /* and the members' queues */
};

struct sched {
	struct sched_cfg cfg;
	struct item *items;
	uint32_t free_head, pending;
	struct queue *queues;
	struct cost costs[COST_SLOTS];
	struct klass classes[CLASS_SLOTS];
	struct flight *flights; /* partitions * max_inflight */
	uint32_t inflight[SCHED_MAX_PARTITIONS];
	uint64_t next_token;
	uint32_t *cand;         /* scratch: candidate items of one partition */
	struct sched_stats st;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

int sched_new(const struct sched_cfg *cfg, struct sched **out)
{
	struct sched *s;
	uint32_t nf;

	*out = NULL;
	if (!cfg || !cfg->max_queues || cfg->max_queues > (1u << 20) || !cfg->max_items || cfg->max_items > (1u << 24) ||
	    !cfg->partitions || cfg->partitions > SCHED_MAX_PARTITIONS || !cfg->max_inflight || cfg->max_inflight > 64 ||
	    cfg->ewma_shift > 16)
		return -EINVAL;
	if (!(s = calloc(1, sizeof(*s))))
		return -ENOMEM;
	s->cfg = *cfg;
	nf = cfg->partitions * cfg->max_inflight;
	s->items = calloc(cfg->max_items, sizeof(*s->items));
	s->queues = calloc(cfg->max_queues, sizeof(*s->queues));
	s->flights = calloc(nf, sizeof(*s->flights));
	s->cand = calloc(cfg->max_queues, sizeof(*s->cand));
	if (!s->items || !s->queues || !s->flights || !s->cand) {
		sched_free(s);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < nf; i++)
		if (!(s->flights[i].keys = calloc(SCHED_MAX_BUNDLE, sizeof(uint64_t))) ||
		    !(s->flights[i].queues = calloc(SCHED_MAX_BUNDLE, sizeof(uint32_t)))) {
			sched_free(s);
			return -ENOMEM;
		}
	for (uint32_t i = 0; i < cfg->max_items; i++)
		s->items[i].next = i + 1 < cfg->max_items ? i + 1 : NIL;
	s->free_head = 0;
	for (uint32_t q = 0; q < cfg->max_queues; q++)
		s->queues[q].head = s->queues[q].tail = NIL;
	*out = s;
	return 0;
}

void sched_free(struct sched *s)
{
	if (!s)
		return;
	if (s->flights)
		for (uint32_t i = 0; i < s->cfg.partitions * s->cfg.max_inflight; i++) {
			free(s->flights[i].keys);
			free(s->flights[i].queues);
		}
	free(s->flights);
	free(s->items);
	free(s->queues);
	free(s->cand);
	free(s);
}

/* Launches of q from now on run on partition p; later ones wait for the earlier ones to finish. */
static void move_queue(struct sched *s, struct queue *q, uint32_t p)
{
	if (q->partition == p)
		return;
	for (uint32_t i = q->head; i != NIL; i = s->items[i].next)
		s->items[i].l.partition = p;
	q->partition = p;
	q->fenced = q->inflight > 0;
}

int sched_move_queue(struct sched *s, uint32_t queue, uint32_t partition)
{
	if (queue >= s->cfg.max_queues || partition >= s->cfg.partitions)
		return -EINVAL;
	move_queue(s, &s->queues[queue], partition);
	return 0;
}

int sched_submit(struct sched *s, const struct sched_launch *l)
{
	struct queue *q;
	uint32_t i;

	if (l->queue >= s->cfg.max_queues || l->partition >= s->cfg.partitions || !l->blocks || !l->capacity)
		return -EINVAL;
	if (s->free_head == NIL)
		return -ENOSPC;
	q = &s->queues[l->queue];
	if (q->head == NIL && q->inflight == 0)
		q->partition = l->partition;
	else
		move_queue(s, q, l->partition);
	i = s->free_head;
	s->free_head = s->items[i].next;
	s->items[i].l = *l;
	s->items[i].next = NIL;
	if (q->tail == NIL)
		q->head = i;
	else
		s->items[q->tail].next = i;
	q->tail = i;
	s->pending++;
	return 0;
}

int sched_block(struct sched *s, uint32_t queue, bool blocked)
{
	if (queue >= s->cfg.max_queues)
		return -EINVAL;
	s->queues[queue].blocked = blocked;
	return 0;
}

static struct klass *class_slot(struct sched *s, uint64_t key, bool create)
{
	uint32_t h = (uint32_t)mix64(key) & (CLASS_SLOTS - 1);

	for (uint32_t n = 0; n < CLASS_SLOTS; n++, h = (h + 1) & (CLASS_SLOTS - 1)) {
		struct klass *k = &s->classes[h];

		if (k->used && k->key == key)
			return k;
		if (!k->used) {
			if (!create)
				return NULL;
			k->used = true;
			k->key = key;
			return k;
		}
	}
	return NULL;
}

int sched_class_ready(struct sched *s, uint64_t klass, bool ready)
{
	struct klass *k;

	if (!klass)
		return -EINVAL;
	k = class_slot(s, klass, ready);
	if (!k)
		return ready ? -ENOSPC : 0;
	k->ready = ready;
	return 0;
}

static bool class_is_ready(struct sched *s, uint64_t klass)
{
	struct klass *k = klass ? class_slot(s, klass, false) : NULL;

	return k && k->ready;
}

static struct cost *cost_slot(const struct sched *s, uint64_t key)
{
	uint32_t h = (uint32_t)mix64(key) & (COST_SLOTS - 1);

	/* a short probe: the model forgets rather than searching far */
	for (uint32_t n = 0; n < 8; n++, h = (h + 1) & (COST_SLOTS - 1)) {
		const struct cost *c = &s->costs[h];

		if (!c->used || c->key == key)
			return (struct cost *)c;
	}
	return (struct cost *)&s->costs[(uint32_t)mix64(key) & (COST_SLOTS - 1)];
}

uint64_t sched_predict(const struct sched *s, uint64_t cost_key)
{
	const struct cost *c = cost_slot(s, cost_key);

	return c->used && c->key == cost_key ? c->ns : s->cfg.default_cost_ns;
}

static void cost_learn(struct sched *s, uint64_t key, uint64_t ns)
{
	struct cost *c = cost_slot(s, key);

	if (!c->used || c->key != key) {
		c->used = true;
		c->key = key;
		c->ns = ns;
		return;
	}
	if (ns >= c->ns)
		c->ns += (ns - c->ns) >> s->cfg.ewma_shift;
	else
		c->ns -= (c->ns - ns) >> s->cfg.ewma_shift;
}

static int cand_cmp_ctx(const struct sched *s, uint32_t a, uint32_t b)
{
	const struct sched_launch *x = &s->items[a].l, *y = &s->items[b].l;

	if (x->deadline_ns != y->deadline_ns)
		return x->deadline_ns < y->deadline_ns ? -1 : 1;
	if (x->queue != y->queue)
		return x->queue < y->queue ? -1 : 1;
	return 0;
}

/* Insertion sort by (deadline, queue): deterministic, and the window is small. */
static void sort_cand(const struct sched *s, uint32_t *c, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++) {
		uint32_t v = c[i], j = i;

		while (j > 0 && cand_cmp_ctx(s, c[j - 1], v) > 0) {
			c[j] = c[j - 1];
			j--;
		}
		c[j] = v;
	}
}

static void pop_head(struct sched *s, uint32_t item)
{
	struct queue *q = &s->queues[s->items[item].l.queue];

	q->head = s->items[item].next;
	if (q->head == NIL)
		q->tail = NIL;
	s->items[item].next = s->free_head;
	s->free_head = item;
	s->pending--;
}

static struct flight *flight_take(struct sched *s, uint32_t p)
{
	struct flight *f = &s->flights[p * s->cfg.max_inflight];

	for (uint32_t i = 0; i < s->cfg.max_inflight; i++)
		if (!f[i].used)
			return &f[i];
	return NULL;
}

size_t sched_poll(struct sched *s, uint64_t now, struct sched_bundle *out, size_t max, uint64_t *wake_ns)
{
	uint64_t wake = UINT64_MAX;
	size_t nb = 0;

	for (uint32_t p = 0; p < s->cfg.partitions && nb < max; p++) {
		uint32_t nc = 0;

		for (uint32_t qi = 0; qi < s->cfg.max_queues; qi++) {
			const struct queue *q = &s->queues[qi];

			if (q->head != NIL && !q->blocked && !q->fenced && q->partition == p)
				s->cand[nc++] = q->head;
		}
		sort_cand(s, s->cand, nc);
		while (nc && nb < max && s->inflight[p] < s->cfg.max_inflight) {
			const struct sched_launch *e = &s->items[s->cand[0]].l;
			struct sched_bundle *b = &out[nb];
			uint32_t take[SCHED_MAX_BUNDLE], nt = 1, sum = e->blocks, left = 0;
			bool fusible = class_is_ready(s, e->klass), full = false;
			uint64_t pred = sched_predict(s, e->cost_key);
			struct flight *f;

			take[0] = 0;
			if (fusible) {
				for (uint32_t c = 1; c < nc; c++) {
					const struct sched_launch *x = &s->items[s->cand[c]].l;

					if (x->klass != e->klass)
						continue;
					if (nt == SCHED_MAX_BUNDLE || sum + x->blocks > e->capacity) {
						full = true;
						continue;
					}
					take[nt++] = c;
					sum += x->blocks;
					if (sched_predict(s, x->cost_key) > pred)
						pred = sched_predict(s, x->cost_key);
				}
				if (sum >= e->capacity || nt == SCHED_MAX_BUNDLE)
					full = true;
				if (!full && s->inflight[p] > 0 && now + pred + s->cfg.slack_margin_ns < e->deadline_ns) {
					/* hold: more members may come before the slack runs out */
					uint64_t t = e->deadline_ns - pred - s->cfg.slack_margin_ns;

					if (t < wake)
						wake = t;
					break;
				}
				if (full)
					s->st.dispatch_full++;
				else if (s->inflight[p] == 0)
					s->st.dispatch_idle++;
				else
					s->st.dispatch_slack++;
			} else {
				s->st.dispatch_alone++;
			}
			f = flight_take(s, p);
			if (!f)
				break; /* cannot happen: inflight < max_inflight */
			b->partition = p;
			b->n = nt;
			b->fused = nt > 1;
			b->predicted_ns = pred;
			b->token = ++s->next_token;
			f->used = true;
			f->token = b->token;
			f->partition = p;
			f->n = nt;
			for (uint32_t k = 0; k < nt; k++) {
				uint32_t it = s->cand[take[k]];
				const struct sched_launch *x = &s->items[it].l;

				b->ids[k] = x->id;
				f->keys[k] = x->cost_key;
				f->queues[k] = x->queue;
				s->queues[x->queue].inflight++;
				if (x->deadline_ns < now + pred)
					s->st.deadline_misses++;
				pop_head(s, it);
				s->cand[take[k]] = NIL;
			}
			/* drop the taken candidates, keeping the order */
			for (uint32_t c = 0; c < nc; c++)
				if (s->cand[c] != NIL)
					s->cand[left++] = s->cand[c];
			nc = left;
			s->inflight[p]++;
			s->st.bundles++;
			s->st.launches += nt;
			if (b->fused) {
				s->st.fused_bundles++;
				s->st.fused_launches += nt;
			}
			if (nt > s->st.max_members)
				s->st.max_members = nt;
			nb++;
		}
	}
	if (wake_ns)
		*wake_ns = wake;
	return nb;
}

int sched_complete(struct sched *s, uint64_t token, uint64_t elapsed_ns)
{
	uint32_t nf = s->cfg.partitions * s->cfg.max_inflight;

	for (uint32_t i = 0; i < nf; i++) {
		struct flight *f = &s->flights[i];

		if (!f->used || f->token != token)
			continue;
		for (uint32_t k = 0; k < f->n; k++) {
			struct queue *q = &s->queues[f->queues[k]];

			cost_learn(s, f->keys[k], elapsed_ns);
			if (--q->inflight == 0)
				q->fenced = false;
		}
		f->used = false;
		s->inflight[f->partition]--;
		return 0;
	}
	return -ENOENT;
}

uint32_t sched_pending(const struct sched *s) { return s->pending; }

void sched_get_stats(const struct sched *s, struct sched_stats *out) { *out = s->st; }
