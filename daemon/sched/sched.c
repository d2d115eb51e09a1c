/* SPDX-License-Identifier: MIT */
/*
 * The OoO scheduler's core (see sched.h). Fixed-size tables sized at
 * sched_new; nothing allocates after that, so the dispatch path cannot fail
 * for lack of memory.
 *
 * Cost of sched_poll: one pass over the active queues (those with a waiting
 * launch; kept in an array with swap-remove, so submit, dispatch and drop
 * update it in O(1)), a counting sort of the candidates by partition, a merge
 * sort of each partition's candidates by (deadline, queue), then packing:
 * the candidates of one fusion class are chained in deadline order, so a
 * bundle is packed by walking its class's chain, not the whole window. A
 * poll that dispatched nothing is cached until its wake time or the next
 * change of state (every mutator clears `quiet`).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"

#define NIL UINT32_MAX
#define COST_SLOTS 4096u  /* cost model entries (open addressing, replaced when full) */
#define CLASS_SLOTS 4096u /* fusion classes known to be compiled */
#define SHARE_SLOTS 4u    /* launchers of a class remembered for share_window_ns */
#define SORT_RUN 16u      /* merge sort: runs this long are insertion-sorted first */

struct item {
	struct sched_launch l;
	uint32_t next; /* in its queue, or in the free list */
};

struct queue {
	uint32_t head, tail;
	uint32_t waiting;   /* launches in it */
	uint32_t apos;      /* index in sched.active, NIL when it has no launch waiting */
	uint32_t partition; /* of its launches */
	uint32_t inflight;  /* its launches dispatched and not completed */
	uint32_t lane;      /* while inflight: the lane of its last bundle (its next one goes there too) */
	bool blocked;
	bool fenced;        /* moved: waits until nothing of it is in flight on the old partition */
};

struct cost {
	uint64_t key;
	uint64_t ns;       /* what predictions use: every completion of a bundle holding the key */
	uint64_t alone_ns; /* one launch of it alone (0: not seen): bundles run unfused, per member */
	uint64_t fused_ns; /* a fused bundle holding it (0: not seen) */
	uint32_t fused_n;  /* members of the last fused bundle timed */
	bool used;
};

struct klass {
	uint64_t key;
	bool used, ready;
	/* state of one partition's pass of sched_poll, valid while stamp == sched.stamp */
	bool held;      /* a bundle of it is held back: its candidates wait */
	uint32_t last;  /* last candidate of its chain */
	uint64_t stamp;
	uint32_t nopay; /* bundles of it sent unfused because fusing did not pay (every SCHED_NOPAY_PROBE'th is fused) */
	/*
	 * Who launched it lately (cfg.share_window_ns): the latest dispatch of
	 * each of the last SHARE_SLOTS (queue, partition) pairs to launch it;
	 * queue NIL: a bundle with members of several queues.
	 */
	struct {
		uint32_t queue, partition; /* partition NIL: an unused slot */
		uint64_t at;
	} seen[SHARE_SLOTS];
};

struct flight {
	bool used;
	uint64_t token;
	uint32_t partition;
	uint32_t lane;
	uint32_t n;
	bool fused;
	bool urgent;       /* an urgent launch led it */
	uint64_t *keys;    /* SCHED_MAX_BUNDLE cost keys */
	uint32_t *queues;  /* and the members' queues */
};

/* A candidate: the head launch of a queue that may be dispatched now. */
struct cand {
	uint64_t deadline;
	uint32_t queue;
	uint32_t item; /* NIL once dispatched in this poll */
	uint32_t ks;   /* its class's slot, NIL: goes alone */
	uint32_t next; /* the next candidate of its class (set after sorting) */
};

struct sched {
	struct sched_cfg cfg;
	struct item *items;
	uint32_t free_head, pending;
	struct queue *queues;
	uint32_t *active;       /* queues with a launch waiting, in no particular order */
	uint32_t nactive;
	struct cost costs[COST_SLOTS];
	struct klass classes[CLASS_SLOTS];
	struct flight *flights; /* partitions * cap */
	uint32_t cap;           /* bundles in flight per partition at most: max_inflight + reserve_inflight */
	uint32_t inflight[SCHED_MAX_PARTITIONS];
	uint32_t urgent_inflight[SCHED_MAX_PARTITIONS]; /* of those, bundles an urgent launch led */
	uint64_t busy_until[SCHED_MAX_PARTITIONS]; /* predicted end of the partition's work in flight */
	uint32_t lanes;                            /* cfg.lanes, at least 1 */
	uint32_t lane_inflight[SCHED_MAX_PARTITIONS][SCHED_MAX_LANES]; /* bundles in flight on each lane */
	uint32_t next_lane[SCHED_MAX_PARTITIONS];  /* where the search for the emptiest lane starts (ties in turn) */
	uint64_t next_token;
	uint64_t stamp;         /* one per partition pass of sched_poll */
	/*
	 * The last poll dispatched nothing and nothing has changed since: a poll
	 * before quiet_wake would dispatch nothing either (what it holds stays
	 * held while now < its wake time), so it returns at once.
	 */
	bool quiet;
	uint64_t quiet_wake;
	uint64_t issue_ns; /* the caller's CPU time per bundle (sched_set_issue_ns); 0: not known */
	/* scratch of sched_poll, max_queues entries each */
	struct cand *cand, *ctmp;
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

static uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

/*
 * How much of a bundle's predicted time its partition is busy with: pred
 * divided by how many such bundles could run side by side, which is at
 * most the streams, the capacity over its blocks, and what the caller can
 * issue in that time (pred / issue_ns: a bundle much shorter than the CPU
 * time of issuing one gains nothing from running beside others, only
 * smaller bundles). All of it on one stream, and for capacity 0 (a launch
 * not fusible, or of a class not compiled: its room is unknown).
 */
static uint64_t occupied(const struct sched *s, uint64_t pred, uint64_t blocks, uint32_t capacity)
{
	double k = s->cfg.streams;

	if (k <= 1 || !capacity || blocks >= capacity)
		return pred;
	if (blocks && (double)capacity / (double)blocks < k)
		k = (double)capacity / (double)blocks;
	if (s->issue_ns && (double)pred / (double)s->issue_ns < k)
		k = (double)pred / (double)s->issue_ns;
	return k <= 1 ? pred : (uint64_t)((double)pred / k);
}

void sched_set_issue_ns(struct sched *s, uint64_t ns)
{
	s->issue_ns = ns;
	s->quiet = false;
}

int sched_new(const struct sched_cfg *cfg, struct sched **out)
{
	struct sched *s;
	uint32_t nf, nq;

	*out = NULL;
	if (!cfg || !cfg->max_queues || cfg->max_queues > (1u << 20) || !cfg->max_items || cfg->max_items > (1u << 24) ||
	    !cfg->partitions || cfg->partitions > SCHED_MAX_PARTITIONS || !cfg->max_inflight || cfg->max_inflight > 64 ||
	    cfg->reserve_inflight > 64 - cfg->max_inflight ||
	    cfg->ewma_shift > 16 || cfg->streams > 64 || cfg->lanes > SCHED_MAX_LANES ||
	    (cfg->lanes > 1 && cfg->lanes > cfg->streams))
		return -EINVAL;
	if (!(s = calloc(1, sizeof(*s))))
		return -ENOMEM;
	s->cfg = *cfg;
	s->cap = cfg->max_inflight + cfg->reserve_inflight;
	s->lanes = cfg->lanes > 1 ? cfg->lanes : 1;
	nf = cfg->partitions * s->cap;
	nq = cfg->max_queues;
	s->items = calloc(cfg->max_items, sizeof(*s->items));
	s->queues = calloc(nq, sizeof(*s->queues));
	s->active = calloc(nq, sizeof(*s->active));
	s->flights = calloc(nf, sizeof(*s->flights));
	s->cand = calloc(nq, sizeof(*s->cand));
	s->ctmp = calloc(nq, sizeof(*s->ctmp));
	if (!s->items || !s->queues || !s->active || !s->flights || !s->cand || !s->ctmp) {
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
	for (uint32_t q = 0; q < nq; q++) {
		s->queues[q].head = s->queues[q].tail = NIL;
		s->queues[q].apos = NIL;
	}
	*out = s;
	return 0;
}

void sched_free(struct sched *s)
{
	if (!s)
		return;
	if (s->flights)
		for (uint32_t i = 0; i < s->cfg.partitions * s->cap; i++) {
			free(s->flights[i].keys);
			free(s->flights[i].queues);
		}
	free(s->flights);
	free(s->items);
	free(s->queues);
	free(s->active);
	free(s->cand);
	free(s->ctmp);
	free(s);
}

static void active_add(struct sched *s, uint32_t qi)
{
	s->queues[qi].apos = s->nactive;
	s->active[s->nactive++] = qi;
}

static void active_remove(struct sched *s, uint32_t qi)
{
	uint32_t pos = s->queues[qi].apos, last = s->active[--s->nactive];

	s->active[pos] = last;
	s->queues[last].apos = pos;
	s->queues[qi].apos = NIL;
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
	s->quiet = false;
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
	s->quiet = false;
	q = &s->queues[l->queue];
	if (q->head == NIL && q->inflight == 0)
		q->partition = l->partition;
	else
		move_queue(s, q, l->partition);
	i = s->free_head;
	s->free_head = s->items[i].next;
	s->items[i].l = *l;
	s->items[i].next = NIL;
	if (q->tail == NIL) {
		q->head = i;
		active_add(s, l->queue);
	} else {
		s->items[q->tail].next = i;
	}
	q->tail = i;
	q->waiting++;
	s->pending++;
	return 0;
}

int sched_block(struct sched *s, uint32_t queue, bool blocked)
{
	if (queue >= s->cfg.max_queues)
		return -EINVAL;
	s->quiet = false;
	s->queues[queue].blocked = blocked;
	return 0;
}

uint32_t sched_queue_waiting(const struct sched *s, uint32_t queue)
{
	return queue < s->cfg.max_queues ? s->queues[queue].waiting : 0;
}

int sched_drop_queue(struct sched *s, uint32_t queue, uint64_t *ids, size_t max)
{
	struct queue *q;
	uint32_t n = 0;

	if (queue >= s->cfg.max_queues)
		return -EINVAL;
	q = &s->queues[queue];
	if (q->waiting > max)
		return -ENOSPC;
	s->quiet = false;
	for (uint32_t i = q->head, nx; i != NIL; i = nx) {
		nx = s->items[i].next;
		ids[n++] = s->items[i].l.id;
		s->items[i].next = s->free_head;
		s->free_head = i;
	}
	if (q->head != NIL)
		active_remove(s, queue);
	q->head = q->tail = NIL;
	q->waiting = 0;
	q->blocked = false;
	s->pending -= n;
	return (int)n;
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
			for (uint32_t i = 0; i < SHARE_SLOTS; i++)
				k->seen[i].partition = NIL;
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
	s->quiet = false;
	k = class_slot(s, klass, ready);
	if (!k)
		return ready ? -ENOSPC : 0;
	k->ready = ready;
	return 0;
}

/* The slot of a class whose launches may be bundled (compiled), NIL otherwise. */
static uint32_t ready_class(struct sched *s, uint64_t klass)
{
	struct klass *k = klass ? class_slot(s, klass, false) : NULL;

	return k && k->ready ? (uint32_t)(k - s->classes) : NIL;
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

static void ewma(uint64_t *v, uint64_t sample, uint32_t shift)
{
	if (!*v)
		*v = sample;
	else if (sample >= *v)
		*v += (sample - *v) >> shift;
	else
		*v -= (*v - sample) >> shift;
}

/*
 * A bundle of n members holding key ran elapsed ns, fused or not. The
 * prediction learns the bundle's time (a member of an unfused bundle its
 * share: the members ran one after another); the side estimates learn a
 * launch alone and a fused bundle, for fusing_pays.
 */
static void cost_learn(struct sched *s, uint64_t key, uint64_t ns, uint32_t n, bool fused)
{
	struct cost *c = cost_slot(s, key);
	uint64_t per = !fused && n > 1 ? ns / n : ns;

	if (!c->used || c->key != key) {
		*c = (struct cost){ .key = key, .ns = per, .used = true };
	} else {
		ewma(&c->ns, per, s->cfg.ewma_shift);
	}
	if (!per)
		return;
	if (fused) {
		ewma(&c->fused_ns, ns, s->cfg.ewma_shift);
		c->fused_n = n;
	} else {
		ewma(&c->alone_ns, per, s->cfg.ewma_shift);
	}
}

/*
 * Whether a fused bundle of n members led by key is predicted no slower on
 * the GPU than its members one after another (what an unfused bundle on
 * the partition's stream does). Unknown until both a fused bundle and a
 * launch alone have been timed: then yes. The fused time of n members is
 * bounded from below by the last fused bundle's time scaled to n (a fused
 * kernel of fewer members is at least proportionally shorter; of more, at
 * least as long): only a fused kernel slower per member than its launches
 * alone, like one whose fused code spills or runs at a lower occupancy,
 * does not pay. Fusing also saves launches (host time), so equal is yes.
 */
static bool fusing_pays(const struct sched *s, uint64_t key, uint32_t n)
{
	const struct cost *c = cost_slot(s, key);
	uint64_t fused;

	if (!c->used || c->key != key || !c->alone_ns || !c->fused_ns || !c->fused_n)
		return true;
	fused = n < c->fused_n ? c->fused_ns * n / c->fused_n : c->fused_ns;
	return fused <= (uint64_t)n * c->alone_ns;
}

/* (deadline, queue): a total order, as a queue has one candidate at most. Branch-free: the order is random. */
static bool cand_before(const struct cand *a, const struct cand *b)
{
	return (a->deadline < b->deadline) | ((a->deadline == b->deadline) & (a->queue < b->queue));
}

/* Bottom-up merge sort of a[0..n) by cand_before, tmp (n entries) as the buffer: O(n log n), no allocation. */
static void sort_cand(struct cand *a, struct cand *tmp, uint32_t n)
{
	struct cand *src = a, *dst = tmp, *sw;

	for (uint32_t lo = 0; lo < n; lo += SORT_RUN) {
		uint32_t hi = n - lo < SORT_RUN ? n : lo + SORT_RUN;

		for (uint32_t i = lo + 1; i < hi; i++) {
			struct cand v = a[i];
			uint32_t j = i;

			while (j > lo && cand_before(&v, &a[j - 1])) {
				a[j] = a[j - 1];
				j--;
			}
			a[j] = v;
		}
	}
	for (uint32_t w = SORT_RUN; w < n; w *= 2) {
		for (uint32_t lo = 0; lo < n; lo += 2 * w) {
			uint32_t mid = n - lo < w ? n : lo + w;
			uint32_t hi = n - lo < 2 * w ? n : lo + 2 * w;
			uint32_t i = lo, j = mid, k = lo;

			while (i < mid && j < hi) {
				bool t = cand_before(&src[j], &src[i]);

				dst[k++] = t ? src[j] : src[i];
				j += t;
				i += !t;
			}
			while (i < mid)
				dst[k++] = src[i++];
			while (j < hi)
				dst[k++] = src[j++];
		}
		sw = src;
		src = dst;
		dst = sw;
	}
	if (src != a)
		memcpy(a, src, (size_t)n * sizeof(*a));
}

static void pop_head(struct sched *s, uint32_t item)
{
	uint32_t qi = s->items[item].l.queue;
	struct queue *q = &s->queues[qi];

	q->head = s->items[item].next;
	if (q->head == NIL) {
		q->tail = NIL;
		active_remove(s, qi);
	}
	q->waiting--;
	s->items[item].next = s->free_head;
	s->free_head = item;
	s->pending--;
}

/*
 * May launch l lead a bundle on partition p? While it has a slot (cap), an
 * urgent launch may; an ordinary one only while fewer than max_inflight
 * bundles that ordinary launches led are in flight (the urgent ones do not
 * take the best-effort work's slots, only the reserve above them).
 */
static bool may_lead(const struct sched *s, uint32_t p, const struct sched_launch *l)
{
	return s->inflight[p] < s->cap && (l->urgent || s->inflight[p] - s->urgent_inflight[p] < s->cfg.max_inflight);
}

static struct flight *flight_take(struct sched *s, uint32_t p)
{
	struct flight *f = &s->flights[p * s->cap];

	for (uint32_t i = 0; i < s->cap; i++)
		if (!f[i].used)
			return &f[i];
	return NULL;
}

/*
 * Collects the candidates: the heads of the active queues that are neither
 * blocked nor fenced, on partitions with a free in-flight slot. Leaves them
 * in s->cand grouped by partition (partition p: seg[p] .. seg[p + 1]), each
 * group sorted by (deadline, queue).
 */
static void collect(struct sched *s, uint32_t seg[SCHED_MAX_PARTITIONS + 1])
{
	uint32_t cnt[SCHED_MAX_PARTITIONS] = { 0 }, n = 0;

	for (uint32_t a = 0; a < s->nactive; a++) {
		uint32_t qi = s->active[a];
		const struct queue *q = &s->queues[qi];

		if (q->blocked || q->fenced || !may_lead(s, q->partition, &s->items[q->head].l))
			continue;
		s->ctmp[n].deadline = s->items[q->head].l.deadline_ns;
		s->ctmp[n].queue = qi;
		s->ctmp[n].item = q->head;
		s->ctmp[n].ks = ready_class(s, s->items[q->head].l.klass);
		cnt[q->partition]++;
		n++;
	}
	seg[0] = 0;
	for (uint32_t p = 0; p < SCHED_MAX_PARTITIONS; p++)
		seg[p + 1] = seg[p] + cnt[p];
	memcpy(cnt, seg, sizeof(cnt)); /* next free position of each partition */
	for (uint32_t c = 0; c < n; c++)
		s->cand[cnt[s->queues[s->ctmp[c].queue].partition]++] = s->ctmp[c];
	for (uint32_t p = 0; p < s->cfg.partitions; p++)
		sort_cand(s->cand + seg[p], s->ctmp + seg[p], seg[p + 1] - seg[p]);
}

/* Chains the candidates lo .. hi of one partition by class, in their (deadline) order. */
static void chain_classes(struct sched *s, uint32_t lo, uint32_t hi)
{
	s->stamp++;
	for (uint32_t c = lo; c < hi; c++) {
		uint32_t ks = s->cand[c].ks;

		s->cand[c].next = NIL;
		if (ks == NIL)
			continue;
		if (s->classes[ks].stamp != s->stamp) {
			s->classes[ks].stamp = s->stamp;
			s->classes[ks].held = false;
		} else {
			s->cand[s->classes[ks].last].next = c;
		}
		s->classes[ks].last = c;
	}
}

/*
 * May a lone launch of queue q, of class k on partition p, find company by
 * waiting? Yes when a queue other than q launched the class on the same
 * partition (bundles pack one partition's candidates only) within
 * cfg.share_window_ns before now, or the test is off; then *until is when
 * that stops being so, unless another launch comes first. (A bundle of
 * several queues is remembered as queue NIL, never a queue's id: another.)
 */
static bool class_shared(const struct sched *s, const struct klass *k, uint32_t p, uint32_t q, uint64_t now,
			 uint64_t *until)
{
	uint64_t w = s->cfg.share_window_ns, at = 0;
	bool any = false;

	if (!w) {
		*until = UINT64_MAX;
		return true;
	}
	for (uint32_t i = 0; i < SHARE_SLOTS; i++)
		if (k->seen[i].partition == p && k->seen[i].queue != q && (!any || k->seen[i].at > at)) {
			at = k->seen[i].at;
			any = true;
		}
	/* a clock that went back (now < at) errs towards sending at once */
	if (!any || now < at || now - at > w)
		return false;
	*until = sat_add(sat_add(at, w), 1);
	return true;
}

/* A bundle of class k went on partition p at now with nt members, the first of queue q: who launches it. */
static void class_dispatched(struct klass *k, uint32_t p, uint32_t q, uint32_t nt, uint64_t now)
{
	uint32_t who = nt > 1 ? NIL : q, slot = 0;

	for (uint32_t i = 0; i < SHARE_SLOTS; i++) {
		if (k->seen[i].partition == p && k->seen[i].queue == who) {
			slot = i;
			break;
		}
		/* else the unused slot, or the one launched longest ago */
		if (k->seen[slot].partition != NIL &&
		    (k->seen[i].partition == NIL || k->seen[i].at < k->seen[slot].at))
			slot = i;
	}
	k->seen[slot].queue = who;
	k->seen[slot].partition = p;
	k->seen[slot].at = now;
}

/*
 * The lane of p with the fewest bundles in flight, the search starting at
 * next_lane[p] so that ties go in turn; *least gets that count.
 */
static uint32_t lane_emptiest(const struct sched *s, uint32_t p, uint32_t *least)
{
	const uint32_t *n = s->lane_inflight[p];
	uint32_t best = s->next_lane[p];

	for (uint32_t i = 1; i < s->lanes; i++) {
		uint32_t l = (s->next_lane[p] + i) % s->lanes;

		if (n[l] < n[best])
			best = l;
	}
	*least = n[best];
	return best;
}

/* The lane of p with the most bundles in flight, the lowest of equals. */
static uint32_t lane_busiest(const struct sched *s, uint32_t p)
{
	const uint32_t *n = s->lane_inflight[p];
	uint32_t best = 0;

	for (uint32_t l = 1; l < s->lanes; l++)
		if (n[l] > n[best])
			best = l;
	return best;
}

size_t sched_poll(struct sched *s, uint64_t now, struct sched_bundle *out, size_t max, uint64_t *wake_ns)
{
	uint32_t seg[SCHED_MAX_PARTITIONS + 1];
	uint64_t wake = UINT64_MAX;
	size_t nb = 0;

	if (s->quiet && now < s->quiet_wake) {
		if (wake_ns)
			*wake_ns = s->quiet_wake;
		return 0;
	}
	collect(s, seg);
	for (uint32_t p = 0; p < s->cfg.partitions; p++) {
		uint32_t c = seg[p], hi = seg[p + 1];
		uint64_t held_wake = UINT64_MAX; /* earliest end of slack of the bundles held on p */
		bool held = false;

		if (c == hi)
			continue;
		if (nb >= max) {
			wake = now; /* out is full: more may be ready */
			break;
		}
		chain_classes(s, c, hi);
		for (; c < hi && s->inflight[p] < s->cap; c++) {
			const struct sched_launch *e;
			struct sched_bundle *b;
			uint32_t take[SCHED_MAX_BUNDLE], nt = 1, ks = s->cand[c].ks;
			uint64_t sum, pred, share_until = UINT64_MAX;
			uint32_t lane, least;
			bool full = false, leader_free, free_join, spread;
			struct flight *f;

			if (s->cand[c].item == NIL || (ks != NIL && s->classes[ks].held))
				continue; /* dispatched, or its class is held */
			if (!may_lead(s, p, &s->items[s->cand[c].item].l))
				continue; /* the ordinary slots are taken: the rest are the urgent launches' reserve */
			if (nb >= max) {
				wake = now;
				break;
			}
			e = &s->items[s->cand[c].item].l;
			b = &out[nb];
			sum = e->blocks;
			pred = sched_predict(s, e->cost_key);
			/*
			 * Its lane: the leader's queue's while it has launches in flight. Else,
			 * where side by side pays, the emptiest, and queues with nothing in
			 * flight join only while that lane is one of the emptiest (no later
			 * start than another lane would give them); where it does not, the
			 * busiest, and they always join.
			 */
			spread = s->lanes > 1 && s->issue_ns && pred / SCHED_LANE_RATIO >= s->issue_ns;
			leader_free = s->queues[e->queue].inflight == 0;
			lane = lane_emptiest(s, p, &least);
			if (!leader_free)
				lane = s->queues[e->queue].lane;
			else if (!spread)
				lane = lane_busiest(s, p);
			free_join = !spread || s->lane_inflight[p][lane] <= least;
			take[0] = c;
			if (ks != NIL) {
				/*
				 * Pack the class's later candidates in deadline order: those that fit are unlinked
				 * from the chain (taken, or, if the bundle is held, the class is skipped for the
				 * rest of this pass anyway), those that do not stay and make the bundle full.
				 */
				uint32_t prev = c;

				for (uint32_t x = s->cand[c].next; x != NIL && sum < e->capacity && nt < SCHED_MAX_BUNDLE;
				     x = s->cand[x].next) {
					const struct sched_launch *xl = &s->items[s->cand[x].item].l;
					const struct queue *xq = &s->queues[xl->queue];
					uint64_t xp;

					if (xq->inflight ? xq->lane != lane : !free_join) {
						prev = x; /* another lane's: it leads a bundle there (not full for that) */
						continue;
					}
					if (sum + xl->blocks > e->capacity) {
						full = true;
						prev = x;
						continue;
					}
					take[nt++] = x;
					sum += xl->blocks;
					xp = sched_predict(s, xl->cost_key);
					if (xp > pred)
						pred = xp;
					s->cand[prev].next = s->cand[x].next;
				}
				if (sum >= e->capacity || nt == SCHED_MAX_BUNDLE)
					full = true;
				if (!full && nt == 1 && !class_shared(s, &s->classes[ks], p, e->queue, now, &share_until)) {
					s->st.dispatch_alone++; /* no other queue launches the class: waiting cannot fill it */
				} else if (!full) {
					uint64_t pm = sat_add(pred, s->cfg.slack_margin_ns), bu = s->busy_until[p];
					bool slack = e->deadline_ns > now && e->deadline_ns - now > pm;
					bool busy = s->inflight[p] > 0 && bu > now && bu - now > s->cfg.idle_margin_ns;

					if (slack && busy) {
						/* hold: more members may come before the slack runs out or the partition idles */
						if (e->deadline_ns - pm < held_wake)
							held_wake = e->deadline_ns - pm;
						/* alone, it goes once the class is no longer shared */
						if (nt == 1 && share_until < held_wake)
							held_wake = share_until;
						s->classes[ks].held = held = true;
						continue;
					}
					if (s->inflight[p] == 0 || slack)
						s->st.dispatch_idle++; /* idle, or predicted idle within idle_margin_ns */
					else
						s->st.dispatch_slack++;
				} else {
					s->st.dispatch_full++;
				}
			} else {
				s->st.dispatch_alone++;
			}
			f = flight_take(s, p);
			if (!f)
				break; /* cannot happen: inflight < cap */
			if (ks != NIL)
				class_dispatched(&s->classes[ks], p, e->queue, nt, now);
			b->partition = p;
			b->lane = lane;
			b->n = nt;
			b->fused = nt > 1;
			if (b->fused && !fusing_pays(s, e->cost_key, nt) && ++s->classes[ks].nopay % SCHED_NOPAY_PROBE) {
				/* unfused, one after another on the partition (every SCHED_NOPAY_PROBE'th fused, to look again) */
				uint64_t alone = cost_slot(s, e->cost_key)->alone_ns;

				b->fused = false;
				pred = alone > UINT64_MAX / nt ? UINT64_MAX : alone * nt;
				s->st.dispatch_nopay++;
			}
			b->predicted_ns = pred;
			/* the flight's index in the low bits: sched_complete finds it at once */
			b->token = ++s->next_token << 16 | (uint64_t)(f - s->flights);
			f->used = true;
			f->token = b->token;
			f->partition = p;
			f->lane = lane;
			s->lane_inflight[p][lane]++;
			if (leader_free && spread)
				s->next_lane[p] = (lane + 1) % s->lanes;
			f->n = nt;
			f->fused = b->fused;
			f->urgent = e->urgent;
			s->urgent_inflight[p] += e->urgent;
			for (uint32_t k = 0; k < nt; k++) {
				uint32_t it = s->cand[take[k]].item;
				const struct sched_launch *x = &s->items[it].l;

				b->ids[k] = x->id;
				f->keys[k] = x->cost_key;
				f->queues[k] = x->queue;
				s->queues[x->queue].inflight++;
				s->queues[x->queue].lane = lane;
				if (x->deadline_ns < sat_add(now, pred))
					s->st.deadline_misses++;
				pop_head(s, it);
				s->cand[take[k]].item = NIL;
			}
			s->busy_until[p] = sat_add(s->busy_until[p] > now ? s->busy_until[p] : now,
						   occupied(s, pred, sum, ks != NIL ? e->capacity : 0));
			s->inflight[p]++;
			s->st.bundles++;
			s->st.part_bundles[p]++;
			s->st.launches += nt;
			if (b->fused) {
				s->st.fused_bundles++;
				s->st.fused_launches += nt;
			}
			if (nt > s->st.max_members)
				s->st.max_members = nt;
			nb++;
		}
		/*
		 * Something is held: poll again when its slack runs out or when p is
		 * predicted idle within the margin. busy_until only grew since the
		 * hold, so busy_until - idle_margin_ns > now still.
		 */
		if (held) {
			if (s->busy_until[p] - s->cfg.idle_margin_ns < held_wake)
				held_wake = s->busy_until[p] - s->cfg.idle_margin_ns;
			if (held_wake < wake)
				wake = held_wake;
		}
	}
	/* max == 0: wake is now, nothing is cached */
	s->quiet = nb == 0 && wake > now;
	s->quiet_wake = wake;
	if (wake_ns)
		*wake_ns = wake;
	return nb;
}

int sched_complete(struct sched *s, uint64_t token, uint64_t elapsed_ns, uint64_t now)
{
	uint32_t nf = s->cfg.partitions * s->cap, i = (uint32_t)(token & 0xffff);

	if (i < nf) {
		struct flight *f = &s->flights[i];

		if (!f->used || f->token != token)
			return -ENOENT;
		s->quiet = false;
		for (uint32_t k = 0; k < f->n; k++) {
			struct queue *q = &s->queues[f->queues[k]];

			if (elapsed_ns)
				cost_learn(s, f->keys[k], elapsed_ns, f->n, f->fused);
			if (--q->inflight == 0)
				q->fenced = false;
		}
		f->used = false;
		s->urgent_inflight[f->partition] -= f->urgent;
		s->lane_inflight[f->partition][f->lane]--;
		if (--s->inflight[f->partition] == 0)
			s->busy_until[f->partition] = now;
		return 0;
	}
	return -ENOENT;
}

uint32_t sched_pending(const struct sched *s) { return s->pending; }

void sched_get_stats(const struct sched *s, struct sched_stats *out) { *out = s->st; }
