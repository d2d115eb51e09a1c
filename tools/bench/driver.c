/* SPDX-License-Identifier: MIT */
/*
 * The parent of a GPU benchmark: checks every mode before anything runs,
 * then for each mode (starting and stopping its MPS daemon or oood once),
 * each workload and each tenant count T runs one point:
 *   1. fork+exec T tenants (/proc/self/exe --tenant 3 4), each with a pipe
 *      for its configuration and start time (fd 3) and one for its
 *      messages (fd 4);
 *   2. wait until every tenant is READY (set up: context or session,
 *      module, buffers, data) or one FAILs, which calls the point off;
 *   3. send every tenant the same start time, a little in the future, so
 *      they start together; show progress while they run;
 *   4. collect each tenant's RESULT (counters and histogram), reap them,
 *      and merge the results per class into rows.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define SETUP_TIMEOUT_S 180
#define FINISH_GRACE_S 60
#define REAP_TIMEOUT_S 30
#define REAP_KILL_TIMEOUT_S 5 /* after SIGKILL */
#define START_DELAY_NS (100 * 1000000ll)

volatile int bench_stop;

struct slot {
	pid_t pid;
	int ctl, res;
	unsigned index;
	enum bench_class klass;
	enum bench_wl request;
	bool ready, failed, eof, have_result;
	bool bystander; /* did not run because another tenant failed */
	uint64_t progress;
	char why[BENCH_ERR_MAX];
	struct tm_result *r;
};

struct ctx {
	const struct bench_opts *o;
	struct bench_report *rep;
	const char *sock;
	const char *ooo_run; /* lease mode: tenants are exec'ed through it */
	unsigned idx, total;
	bool tty, live_shown;
	bool failed; /* a point had errors: exit status 1 */
};

static void on_signal(int sig)
{
	bench_stop = sig;
}

/* ---- progress ----------------------------------------------------------------------- */

__attribute__((format(printf, 2, 3))) static void live(struct ctx *x, const char *fmt, ...)
{
	va_list ap;

	if (x->o->quiet || !x->tty)
		return;
	fputs("\r\033[Kooo-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
	x->live_shown = true;
}

__attribute__((format(printf, 2, 3))) static void event(struct ctx *x, const char *fmt, ...)
{
	va_list ap;

	if (x->o->quiet)
		return;
	if (x->live_shown)
		fputs("\r\033[K", stderr);
	x->live_shown = false;
	fputs("ooo-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void clear_live(struct ctx *x)
{
	if (x->live_shown)
		fputs("\r\033[K", stderr);
	x->live_shown = false;
}

/* ---- rows --------------------------------------------------------------------------- */

static struct bench_row *add_row(struct bench_report *rep)
{
	struct bench_row *r;

	if (rep->nrows == rep->cap) {
		size_t cap = rep->cap ? 2 * rep->cap : 16;
		struct bench_row *p = realloc(rep->rows, cap * sizeof(*p));

		if (!p)
			return NULL;
		rep->rows = p;
		rep->cap = cap;
	}
	r = &rep->rows[rep->nrows++];
	memset(r, 0, sizeof(*r));
	hist_init(&r->h);
	return r;
}

static enum bench_class class_of(enum bench_wl wl, unsigned i)
{
	return wl != WL_MIX ? TC_DEFAULT : i == 0 ? TC_CRITICAL : TC_BEST_EFFORT;
}

static enum bench_wl request_of(const struct bench_opts *o, enum bench_wl wl, enum bench_class c)
{
	return c == TC_CRITICAL ? o->critical_wl : c == TC_BEST_EFFORT ? o->be_wl : wl;
}

static double rate_of(const struct bench_opts *o, enum bench_class c)
{
	return c == TC_BEST_EFFORT ? o->be_rate : o->rate;
}

static unsigned class_count(enum bench_wl wl, unsigned tenants, enum bench_class c)
{
	if (wl != WL_MIX)
		return c == TC_DEFAULT ? tenants : 0;
	return c == TC_CRITICAL ? 1 : c == TC_BEST_EFFORT ? tenants - 1 : 0;
}

/* A new row for class c of a point, with what the options say about it; NULL when the report is full. */
static struct bench_row *class_row(struct ctx *x, enum bench_mode m, enum bench_wl wl, unsigned tenants,
				   enum bench_class c, unsigned n)
{
	struct bench_row *r = add_row(x->rep);

	if (!r)
		return NULL;
	r->wl = wl;
	r->mode = m;
	r->tenants = tenants;
	r->klass = c;
	r->class_tenants = n;
	r->request = request_of(x->o, wl, c);
	r->rate = rate_of(x->o, c);
	r->open = r->rate > 0;
	r->duration = x->o->duration;
	r->warmup = x->o->warmup;
	r->slo_us = x->o->slo_us;
	return r;
}

/* Rows for a point that did not run: every tenant is an error (skipped: by rule, not by failure). */
static void rows_not_run(struct ctx *x, enum bench_mode m, enum bench_wl wl, unsigned tenants, bool skipped,
			 const char *why)
{
	for (int c = 0; c < TC_COUNT; c++) {
		unsigned n = class_count(wl, tenants, (enum bench_class)c);
		struct bench_row *r = n ? class_row(x, m, wl, tenants, (enum bench_class)c, n) : NULL;

		if (!r)
			continue;
		r->errors = n;
		r->skipped = skipped;
		r->tenant_min_rps = r->tenant_max_rps = NAN;
		snprintf(r->error, sizeof(r->error), "%s", why);
	}
}

/* ---- tenants -------------------------------------------------------------------------- */

static void make_cfg(const struct ctx *x, enum bench_mode m, enum bench_wl wl, unsigned tenants, unsigned i,
		     struct tenant_cfg *c)
{
	const struct bench_opts *o = x->o;
	enum bench_class k = class_of(wl, i);

	memset(c, 0, sizeof(*c));
	c->magic = TENANT_MAGIC;
	c->size = sizeof(*c);
	c->index = i;
	c->tenants = tenants;
	c->mode = m;
	c->klass = k;
	c->workload = request_of(o, wl, k);
	c->rate = rate_of(o, k);
	c->open = c->rate > 0;
	c->warmup_ns = (int64_t)(o->warmup * (double)BENCH_NS);
	c->duration_ns = (int64_t)(o->duration * (double)BENCH_NS);
	c->drain_ns = (int64_t)(o->drain * (double)BENCH_NS);
	c->slo_ns = o->slo_us * 1000;
	c->seed = o->seed;
	c->ooo_priority = k == TC_BEST_EFFORT ? 0 : -1;
	/*
	 * The bench's class allows any SLO (slo_us = 1) so that --slo-us can ask
	 * for one; without it a queue asks for oood's default class SLO, not for
	 * the class's 1 us, which would send every launch at once, unbundled
	 * (with --socket, the oood's own class's SLO).
	 */
	if (k == TC_BEST_EFFORT)
		c->ooo_slo_us = 60000000;
	else if (o->slo_us)
		c->ooo_slo_us = (uint32_t)o->slo_us;
	else
		c->ooo_slo_us = o->socket[0] ? 0 /* an oood not the bench's: its class's SLO */ : BENCH_OOO_DEFAULT_SLO_US;
	c->stream_prio = k == TC_CRITICAL;
	c->p = o->p;
	if (!c->p.kernels)
		c->p.kernels = c->workload == WL_SPIN ? 10 : 1;
	snprintf(c->libcuda, sizeof(c->libcuda), "%s", o->libcuda);
	snprintf(c->socket, sizeof(c->socket), "%s", x->sock ? x->sock : "");
}

/* lease mode: tenant i's --sm */
static unsigned lease_share(const struct bench_opts *o, enum bench_wl wl, unsigned tenants, unsigned i)
{
	unsigned crit = o->lease_critical_sm ? o->lease_critical_sm : 50, s;

	if (wl == WL_MIX && class_of(wl, i) == TC_CRITICAL)
		return crit;
	if (o->lease_sm)
		return o->lease_sm;
	if (wl == WL_MIX)
		s = tenants > 1 ? (100 - (crit < 100 ? crit : 99)) / (tenants - 1) : 100;
	else
		s = 100 / (tenants ? tenants : 1);
	return s ? s : 1;
}

/* ooo-run exec's this binary, not itself: /proc/self/exe would name ooo-run by then */
static int self_exe(char *out, size_t cap)
{
	ssize_t n = readlink("/proc/self/exe", out, cap - 1);

	if (n <= 0)
		return -errno;
	out[n] = 0;
	return 0;
}

/* gid: when not 0, the tenant runs with it as its group and only supplementary group (a class of its own) */
static int spawn(struct slot *s, const struct tenant_cfg *c, const char *ooo_run, unsigned sm, bool below, gid_t gid,
		 uid_t uid)
{
	int ctl[2], res[2];
	pid_t parent = getpid();
	char self[PATH_MAX], smarg[16];

	if (ooo_run && self_exe(self, sizeof(self)) < 0)
		return -errno;
	snprintf(smarg, sizeof(smarg), "%u", sm);

	if (pipe2(ctl, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(res, O_CLOEXEC) < 0) {
		int e = -errno;

		close(ctl[0]);
		close(ctl[1]);
		return e;
	}
	fflush(NULL);
	s->pid = fork();
	if (s->pid < 0) {
		int e = -errno;

		close(ctl[0]);
		close(ctl[1]);
		close(res[0]);
		close(res[1]);
		return e;
	}
	if (s->pid == 0) {
		char *argv[] = { "ooo-bench", "--tenant", "3", "4", NULL };
		int a = fcntl(ctl[0], F_DUPFD, 10), b = fcntl(res[1], F_DUPFD, 10), devnull;

		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		if (a < 0 || b < 0 || dup2(a, TENANT_CTL_FD) < 0 || dup2(b, TENANT_RES_FD) < 0)
			_exit(126);
		/* the copies above 10 are not close-on-exec: only fds 3 and 4 go to the tenant */
		close(a);
		close(b);
		devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(2, 1); /* nothing of a tenant's may land in stdout, which may be the JSON */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(126);
		if (gid && (setgroups(1, &gid) < 0 || setgid(gid) < 0))
			_exit(126);
		/* --domains: a uid of its own makes it a tenant of another trust domain */
		if (uid) {
			gid_t ug = (gid_t)uid;

			if ((!gid && (setgroups(1, &ug) < 0 || setgid(ug) < 0)) || setuid(uid) < 0)
				_exit(126);
		}
		if (ooo_run) {
			char *largv[] = { (char *)ooo_run, "--socket", (char *)c->socket, "--sm", smarg, "--priority",
					  below ? "below" : "normal", "--", self, "--tenant", "3", "4", NULL };
			execv(ooo_run, largv);
			_exit(127);
		}
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(ctl[0]);
	close(res[1]);
	s->ctl = ctl[1];
	s->res = res[0];
	return bench_write_full(s->ctl, c, sizeof(*c));
}

static void slot_fail(struct slot *s, const char *why)
{
	if (!s->failed && !s->why[0])
		snprintf(s->why, sizeof(s->why), "%s", why);
	s->failed = true;
}

static void read_msg(struct slot *s)
{
	struct tmsg_hdr h;
	int r = bench_read_full(s->res, &h, sizeof(h));

	if (r) {
		s->eof = true;
		return;
	}
	switch (h.type) {
	case TM_READY:
		if (h.len == 0) {
			s->ready = true;
			return;
		}
		break;
	case TM_FAIL:
		if (h.len > 0 && h.len <= BENCH_ERR_MAX) {
			char why[BENCH_ERR_MAX];

			if (bench_read_full(s->res, why, h.len)) {
				s->eof = true;
				return;
			}
			why[h.len - 1] = 0;
			slot_fail(s, why);
			return;
		}
		break;
	case TM_PROGRESS:
		if (h.len == sizeof(struct tm_progress)) {
			struct tm_progress p;

			if (bench_read_full(s->res, &p, sizeof(p))) {
				s->eof = true;
				return;
			}
			s->progress = p.completed;
			return;
		}
		break;
	case TM_RESULT:
		if (h.len == sizeof(struct tm_result) && s->r) {
			if (bench_read_full(s->res, s->r, sizeof(*s->r))) {
				s->eof = true;
				return;
			}
			s->r->error[sizeof(s->r->error) - 1] = 0;
			s->have_result = true;
			return;
		}
		break;
	default:
		break;
	}
	slot_fail(s, "tenant sent a malformed message");
	s->eof = true;
}

/* Read what the tenants have sent, waiting at most timeout_ms. */
static void pump(struct slot *s, unsigned n, int timeout_ms)
{
	struct pollfd pf[BENCH_MAX_TENANTS];
	unsigned map[BENCH_MAX_TENANTS], k = 0;
	int r;

	for (unsigned i = 0; i < n; i++) {
		if (s[i].res >= 0 && !s[i].eof) {
			pf[k] = (struct pollfd){ .fd = s[i].res, .events = POLLIN };
			map[k++] = i;
		}
	}
	if (!k) {
		if (timeout_ms > 0)
			usleep((useconds_t)timeout_ms * 1000);
		return;
	}
	r = poll(pf, k, timeout_ms);
	if (r <= 0)
		return;
	for (unsigned j = 0; j < k; j++)
		if (pf[j].revents)
			read_msg(&s[map[j]]);
}

static void describe_exit(struct slot *s, int st)
{
	char why[128];

	if (s->have_result || s->failed)
		return;
	if (WIFEXITED(st))
		snprintf(why, sizeof(why), "tenant process exited with status %d without a result", WEXITSTATUS(st));
	else
		snprintf(why, sizeof(why), "tenant process killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	slot_fail(s, why);
}

/* Collect the tenants that have exited; returns how many are left. */
static unsigned reap_exited(struct slot *s, unsigned n)
{
	unsigned left = 0;

	for (unsigned i = 0; i < n; i++) {
		int st;
		pid_t r;

		if (s[i].pid <= 0)
			continue;
		r = waitpid(s[i].pid, &st, WNOHANG);
		if (r == s[i].pid || (r < 0 && errno == ECHILD)) {
			if (r == s[i].pid)
				describe_exit(&s[i], st);
			s[i].pid = 0;
		} else {
			left++;
		}
	}
	return left;
}

static void reap(struct slot *s, unsigned n)
{
	int64_t deadline = bench_now_ns() + REAP_TIMEOUT_S * BENCH_NS;

	while (reap_exited(s, n) && bench_now_ns() <= deadline)
		usleep(10000);
	for (unsigned i = 0; i < n; i++) {
		if (s[i].pid > 0) {
			bench_err("tenant %u (pid %d) did not exit %d s after its run; killing it", s[i].index + 1,
				  (int)s[i].pid, REAP_TIMEOUT_S);
			kill(s[i].pid, SIGKILL);
		}
	}
	/* one in an uninterruptible sleep (in the driver) may outlive SIGKILL: do not wait for it forever */
	deadline = bench_now_ns() + REAP_KILL_TIMEOUT_S * BENCH_NS;
	while (reap_exited(s, n) && bench_now_ns() <= deadline)
		usleep(10000);
	for (unsigned i = 0; i < n; i++) {
		if (s[i].pid > 0) {
			bench_err("tenant %u (pid %d) is stuck: still there %d s after SIGKILL; going on without it",
				  s[i].index + 1, (int)s[i].pid, REAP_KILL_TIMEOUT_S);
			if (!s[i].have_result)
				slot_fail(&s[i], "tenant process stuck: did not exit after SIGKILL");
			s[i].pid = 0;
		}
	}
}

static void close_ctl(struct slot *s, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (s[i].ctl >= 0)
			close(s[i].ctl);
		s[i].ctl = -1;
	}
}

/* Merge the tenants' results into one row per class. */
static void make_rows(struct ctx *x, enum bench_mode m, enum bench_wl wl, unsigned tenants, struct slot *s)
{
	bool from_bystander;

	for (int c = 0; c < TC_COUNT; c++) {
		unsigned n = class_count(wl, tenants, (enum bench_class)c);
		struct bench_row *r = n ? class_row(x, m, wl, tenants, (enum bench_class)c, n) : NULL;

		if (!r)
			continue;
		r->tenant_min_rps = INFINITY;
		r->tenant_max_rps = -INFINITY;
		from_bystander = false;
		for (unsigned i = 0; i < tenants; i++) {
			const struct slot *t = &s[i];

			if (t->klass != (enum bench_class)c)
				continue;
			if (!t->have_result) {
				r->errors++;
				/* the tenant that failed explains the row better than a bystander */
				if (!r->error[0] || (from_bystander && !t->bystander)) {
					snprintf(r->error, sizeof(r->error), "tenant %u: %.480s", i + 1,
						 t->why[0] ? t->why : "no result");
					from_bystander = t->bystander;
				}
				r->tenant_min_rps = 0;
				continue;
			}
			{
				const struct tm_result *q = t->r;
				double rps = (double)q->completed / x->o->duration;

				r->requests += q->requests;
				r->completed += q->completed;
				r->slo_met += q->slo_met;
				r->unfinished += q->unfinished;
				r->errors += q->errors + q->check_failures;
				r->checks += q->checks;
				r->check_failures += q->check_failures;
				hist_merge(&r->h, &q->h);
				if (rps < r->tenant_min_rps)
					r->tenant_min_rps = rps;
				if (rps > r->tenant_max_rps)
					r->tenant_max_rps = rps;
				if (q->error[0] && !r->error[0])
					snprintf(r->error, sizeof(r->error), "tenant %u: %.480s", i + 1, q->error);
			}
		}
		if (!isfinite(r->tenant_min_rps))
			r->tenant_min_rps = NAN;
		if (!isfinite(r->tenant_max_rps))
			r->tenant_max_rps = NAN;
		if (r->errors)
			x->failed = true;
	}
}

static void point_label(char *buf, size_t cap, const struct ctx *x, enum bench_mode m, enum bench_wl wl,
			unsigned tenants)
{
	snprintf(buf, cap, "[%u/%u] %s %s T=%u", x->idx, x->total, bench_wl_names[wl], bench_mode_names[m],
		 tenants);
}

static void run_point(struct ctx *x, enum bench_mode m, enum bench_wl wl, unsigned tenants)
{
	const struct bench_opts *o = x->o;
	struct slot *s = calloc(tenants, sizeof(*s));
	struct tenant_cfg *cfg = malloc(sizeof(*cfg));
	char label[128], why[BENCH_ERR_MAX + 64] = "";
	int64_t deadline, t_start, t_warm, next_live = 0;
	bool marked = false;
	unsigned nready, ndone;
	bool called_off = false;

	x->idx++;
	point_label(label, sizeof(label), x, m, wl, tenants);
	if (!s || !cfg) {
		bench_err("%s: out of memory", label);
		rows_not_run(x, m, wl, tenants, false, "out of memory");
		x->failed = true;
		free(s);
		free(cfg);
		return;
	}
	if (!x->tty)
		event(x, "%s: starting %u tenant%s", label, tenants, tenants == 1 ? "" : "s");
	for (unsigned i = 0; i < tenants; i++) {
		s[i].ctl = s[i].res = -1;
		s[i].index = i;
		s[i].klass = class_of(wl, i);
		s[i].request = request_of(o, wl, s[i].klass);
		s[i].r = malloc(sizeof(*s[i].r));
	}
	for (unsigned i = 0; i < tenants; i++) {
		int r;

		if (!s[i].r) {
			slot_fail(&s[i], "out of memory");
			called_off = true;
			break;
		}
		make_cfg(x, m, wl, tenants, i, cfg);
		r = spawn(&s[i], cfg, m == BM_LEASE ? x->ooo_run : NULL,
			  m == BM_LEASE ? lease_share(o, wl, tenants, i) : 0, s[i].klass == TC_BEST_EFFORT,
			  m == BM_OOO && o->critical_class && s[i].klass == TC_CRITICAL ? BENCH_CRITICAL_GID : 0,
			  m == BM_OOO && o->domains > 1 ? BENCH_DOMAIN_UID + i % o->domains : 0);
		if (r < 0) {
			snprintf(why, sizeof(why), "cannot start the tenant process: %s", strerror(-r));
			slot_fail(&s[i], why);
			called_off = true;
			break;
		}
	}

	/* 2. every tenant set up, or one failed */
	deadline = bench_now_ns() + SETUP_TIMEOUT_S * BENCH_NS;
	while (!called_off) {
		nready = 0;
		for (unsigned i = 0; i < tenants; i++) {
			if (s[i].failed || (s[i].eof && !s[i].ready)) {
				if (!s[i].failed)
					slot_fail(&s[i], "tenant process ended during its set-up");
				called_off = true;
			}
			nready += s[i].ready;
		}
		if (called_off || nready == tenants)
			break;
		if (bench_stop || bench_now_ns() > deadline) {
			for (unsigned i = 0; i < tenants; i++)
				if (!s[i].ready)
					slot_fail(&s[i], bench_stop ? "interrupted"
								    : "set-up not finished within 180 s");
			called_off = true;
			break;
		}
		live(x, "%s: setting up, %u of %u ready", label, nready, tenants);
		pump(s, tenants, 200);
	}
	if (called_off) {
		for (unsigned i = 0; i < tenants; i++) {
			if (s[i].failed) {
				bench_err("%s: tenant %u of %u (%s): %s", label, i + 1, tenants,
					  bench_class_names[s[i].klass], s[i].why);
				break;
			}
		}
		/* EOF instead of a start time: the others exit */
		close_ctl(s, tenants);
		for (unsigned i = 0; i < tenants; i++) {
			if (!s[i].failed) {
				slot_fail(&s[i], "not run: the point was called off because another tenant failed");
				s[i].bystander = true;
			}
		}
		deadline = bench_now_ns() + REAP_TIMEOUT_S * BENCH_NS;
		for (;;) {
			ndone = 0;
			for (unsigned i = 0; i < tenants; i++)
				ndone += s[i].eof || s[i].res < 0;
			if (ndone == tenants || bench_now_ns() > deadline)
				break;
			pump(s, tenants, 200);
		}
		goto finish;
	}

	/* 3. go */
	t_start = bench_now_ns() + START_DELAY_NS;
	t_warm = t_start + (int64_t)(o->warmup * (double)BENCH_NS);
	for (unsigned i = 0; i < tenants; i++) {
		if (bench_write_full(s[i].ctl, &t_start, sizeof(t_start)) < 0)
			slot_fail(&s[i], "tenant process gone before the start");
	}
	close_ctl(s, tenants);
	deadline = t_warm + (int64_t)((o->duration + o->drain + FINISH_GRACE_S) * (double)BENCH_NS);
	for (;;) {
		int64_t now = bench_now_ns();
		uint64_t done = 0;

		if (now >= t_warm && !marked) {
			/* OOO_BENCH_MARK=FILE: created when the measured window opens (bench/profile.sh waits for it) */
			const char *mark = getenv("OOO_BENCH_MARK");
			int mfd = mark && *mark ? open(mark, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;

			if (mfd >= 0)
				close(mfd);
			marked = true;
		}
		ndone = 0;
		for (unsigned i = 0; i < tenants; i++) {
			ndone += s[i].eof;
			done += s[i].have_result ? s[i].r->completed : s[i].progress;
		}
		if (ndone == tenants)
			break;
		if (bench_stop || now > deadline) {
			for (unsigned i = 0; i < tenants; i++) {
				if (!s[i].eof && s[i].pid > 0) {
					if (!s[i].have_result)
						slot_fail(&s[i], bench_stop ? "interrupted"
									    : "no result within 60 s of the end");
					kill(s[i].pid, SIGKILL);
				}
			}
			break;
		}
		if (now >= next_live) {
			double el = (double)(now - t_start) / 1e9, total = o->warmup + o->duration;

			next_live = now + 250000000;
			if (now < t_warm)
				live(x, "%s: warming up, %.1f/%.1f s", label, el < 0 ? 0 : el, total);
			else if (el <= total)
				live(x, "%s: %.1f/%.1f s, %.0f req/s", label, el, total,
				     (double)done / ((double)(now - t_warm) / 1e9));
			else
				live(x, "%s: finishing, %u of %u done", label, ndone, tenants);
		}
		pump(s, tenants, 100);
	}

finish:
	reap(s, tenants);
	for (unsigned i = 0; i < tenants; i++)
		if (s[i].res >= 0)
			close(s[i].res);
	if (!called_off) {
		for (unsigned i = 0; i < tenants; i++) {
			if (!s[i].have_result) {
				bench_err("%s: tenant %u of %u (%s): %s", label, i + 1, tenants,
					  bench_class_names[s[i].klass], s[i].why[0] ? s[i].why : "no result");
				break;
			}
		}
	}
	make_rows(x, m, wl, tenants, s);
	{
		size_t first = x->rep->nrows;

		while (first > 0 && x->rep->rows[first - 1].wl == wl && x->rep->rows[first - 1].mode == m &&
		       x->rep->rows[first - 1].tenants == tenants)
			first--;
		for (size_t i = first; i < x->rep->nrows; i++) {
			const struct bench_row *r = &x->rep->rows[i];
			char cls[32] = "";

			if (wl == WL_MIX)
				snprintf(cls, sizeof(cls), " %s", bench_class_names[r->klass]);
			if (r->errors && !r->requests)
				event(x, "%s%s: failed (%llu error%s)", label, cls, (unsigned long long)r->errors,
				      r->errors == 1 ? "" : "s");
			else
				event(x, "%s%s: %.0f req/s, p50 %.1f us, p99 %.1f us%s", label, cls, bench_row_rps(r),
				      hist_quantile(&r->h, 0.5) / 1e3, hist_quantile(&r->h, 0.99) / 1e3,
				      r->errors ? ", with errors" : "");
		}
	}
	for (unsigned i = 0; i < tenants; i++)
		free(s[i].r);
	free(s);
	free(cfg);
}

/* ---- the run ---------------------------------------------------------------------------- */

static bool uses_builtin(const struct bench_opts *o)
{
	for (unsigned i = 0; i < o->nwls; i++) {
		if (o->wls[i] == WL_MIX) {
			if (o->critical_wl != WL_CUSTOM || o->be_wl != WL_CUSTOM)
				return true;
		} else if (o->wls[i] != WL_CUSTOM) {
			return true;
		}
	}
	return false;
}

static bool has_mode(const struct bench_opts *o, enum bench_mode m)
{
	for (unsigned i = 0; i < o->nmodes; i++)
		if (o->modes[i] == m)
			return true;
	return false;
}

static int write_outputs(struct ctx *x)
{
	const struct bench_opts *o = x->o;
	int rc = 0;

	clear_live(x);
	bench_print_table(o->json && !strcmp(o->json, "-") ? stderr : stdout, x->rep);
	if (o->json && bench_write_json(o->json, x->rep) < 0)
		rc = -1;
	if (o->csv && bench_write_csv(o->csv, x->rep) < 0)
		rc = -1;
	if (o->plot && bench_write_plot(o->plot, x->rep) < 0)
		rc = -1;
	return rc;
}

/*
 * Before any point runs: every mode asked for must be able to run (kernels
 * built, a device for direct and mps, the MPS control program, ooo-run, an
 * oood that answers); warnings about what would skew the baselines. Fills
 * x->rep->meta and x->ooo_run, and the MPS control program's path into
 * mps_control (cap bytes). Returns BENCH_RC_OK or BENCH_RC_FAIL (said).
 */
static int preflight(struct ctx *x, char *mps_control, size_t cap)
{
	const struct bench_opts *o = x->o;
	struct bench_report *rep = x->rep;
	char why[BENCH_ERR_MAX + 256];

	/* Every mode must be able to run before any point does. */
	if (uses_builtin(o) && !bench_have_kernels()) {
		bench_err("this ooo-bench was built without nvcc, so it has no GPU kernels: rebuild it with "
			  "CUDA_HOME pointing at a CUDA toolkit (only 'custom' works without)");
		return BENCH_RC_FAIL;
	}
	bench_meta_init(&rep->meta, o);
	bench_probe_device(o->libcuda, &rep->meta.dev);
	for (unsigned i = 0; i < o->nmodes; i++) {
		enum bench_mode m = o->modes[i];

		if (m != BM_OOO && !rep->meta.dev.probed) {
			bench_err("%s mode: %s", bench_mode_names[m], rep->meta.dev.probe_error);
			return BENCH_RC_FAIL;
		}
	}
	if (has_mode(o, BM_MPS) || has_mode(o, BM_LEASE)) {
		int r = bench_find_exe(o->mps_control[0] ? o->mps_control : "nvidia-cuda-mps-control",
				       o->mps_control[0] ? NULL : "/usr/local/nvidia/bin:/usr/bin:/usr/sbin",
				       mps_control, cap);

		if (r < 0) {
			bench_err("%s mode: cannot find %s%s", has_mode(o, BM_MPS) ? "mps" : "lease", o->mps_control[0] ? o->mps_control : "nvidia-cuda-mps-control",
				  o->mps_control[0] ? "" : " in PATH or /usr/local/nvidia/bin (give --mps-control PATH)");
			return BENCH_RC_FAIL;
		}
		snprintf(rep->meta.mps_control, sizeof(rep->meta.mps_control), "%s", mps_control);
	}
	if (has_mode(o, BM_LEASE)) {
		static char run[PATH_MAX];
		char self[PATH_MAX];

		if (o->ooo_run[0]) {
			snprintf(run, sizeof(run), "%s", o->ooo_run);
		} else if (self_exe(self, sizeof(self)) == 0) {
			snprintf(run, sizeof(run), "%.*s/ooo-run", (int)(strrchr(self, '/') - self), self);
			if (access(run, X_OK) < 0 && bench_find_exe("ooo-run", NULL, run, sizeof(run)) < 0)
				run[0] = 0;
		}
		if (!run[0] || access(run, X_OK) < 0) {
			bench_err("lease mode: cannot find ooo-run%s%s (give --ooo-run PATH)", o->ooo_run[0] ? " at " : "",
				  o->ooo_run);
			return BENCH_RC_FAIL;
		}
		x->ooo_run = run;
	}
	if (has_mode(o, BM_OOO)) {
		if (o->socket[0]) {
			if (bench_ooo_check(o->socket, why, sizeof(why)) < 0) {
				bench_err("ooo mode: %s", why);
				return BENCH_RC_FAIL;
			}
			snprintf(rep->meta.oood_socket, sizeof(rep->meta.oood_socket), "%s", o->socket);
		} else {
			struct bench_oood d;

			if (bench_oood_start(&d, o, false, NULL, why, sizeof(why)) < 0) {
				bench_err("ooo mode: %s", why);
				return BENCH_RC_FAIL;
			}
			if (bench_ooo_check(d.sock, why, sizeof(why)) < 0) {
				bench_err("ooo mode: %s", why);
				d.keep = true;
				bench_oood_stop(&d);
				return BENCH_RC_FAIL;
			}
			bench_oood_stop(&d);
		}
	}
	if (has_mode(o, BM_DIRECT) || has_mode(o, BM_OOO)) {
		/* an MPS daemon that is already running would take the direct tenants (and oood's executor) */
		const char *env = getenv("CUDA_MPS_PIPE_DIRECTORY");
		char ctl[PATH_MAX + 16];

		snprintf(ctl, sizeof(ctl), "%s/control", env && env[0] ? env : "/tmp/nvidia-mps");
		if (access(ctl, F_OK) == 0)
			bench_err("warning: an MPS control daemon is running (%s): direct-mode tenants and oood's "
				  "executor become its clients; stop it ('echo quit | nvidia-cuda-mps-control') for "
				  "a true time-slicing baseline",
				  ctl);
	}
	if (has_mode(o, BM_DIRECT) || has_mode(o, BM_MPS)) {
		unsigned most = 0;

		for (unsigned i = 0; i < o->ntenants; i++)
			if (o->tenants[i] > most)
				most = o->tenants[i];
		if (rep->meta.cpus > 0 && most > (unsigned)rep->meta.cpus)
			bench_err("warning: T=%u exceeds the %d CPUs: a direct or mps tenant is a process with one CUDA "
				  "context, whose default scheduling (spin/yield auto) may busy-wait in its syncs, so "
				  "the tenants compete for the CPUs",
				  most, rep->meta.cpus);
	}
	return BENCH_RC_OK;
}

/*
 * Every point of mode m: start what the mode needs (an MPS control daemon,
 * a private oood), run each workload at each tenant count (rows that cannot
 * run are written as not run, with why), stop what was started, keeping its
 * directory when a point had errors.
 */
static void run_mode(struct ctx *x, enum bench_mode m, const char *mps_control)
{
	const struct bench_opts *o = x->o;
	struct bench_report *rep = x->rep;
	char why[BENCH_ERR_MAX + 256];
	struct bench_mps mps = { .running = false };
	struct bench_oood d = { .pid = -1 };
	bool env_ok = true;
	size_t first_row = rep->nrows;

	why[0] = 0;
	x->sock = NULL;
	if (m == BM_MPS) {
		event(x, "mps mode: starting the MPS control daemon");
		if (bench_mps_start(&mps, mps_control, o->libcuda, why, sizeof(why)) < 0)
			env_ok = false;
	} else if (m == BM_OOO) {
		if (o->socket[0]) {
			x->sock = o->socket;
		} else {
			event(x, "ooo mode: starting a private oood");
			if (bench_oood_start(&d, o, false, NULL, why, sizeof(why)) < 0) {
				env_ok = false;
			} else {
				x->sock = d.sock;
				snprintf(rep->meta.oood_socket, sizeof(rep->meta.oood_socket), "%s", d.sock);
				rep->meta.oood_private = true;
			}
		}
	} else if (m == BM_LEASE) {
		event(x, "lease mode: starting a private oood that runs MPS");
		if (bench_oood_start(&d, o, true, mps_control, why, sizeof(why)) < 0) {
			env_ok = false;
		} else {
			x->sock = d.sock;
		}
	}
	if (!env_ok) {
		bench_err("%s mode: %s", bench_mode_names[m], why);
		x->failed = true;
	}
	for (unsigned wi = 0; wi < o->nwls && !bench_stop; wi++) {
		for (unsigned ti = 0; ti < o->ntenants && !bench_stop; ti++) {
			unsigned t = o->tenants[ti];

			if (!env_ok) {
				x->idx++;
				rows_not_run(x, m, o->wls[wi], t, false, why);
			} else if ((m == BM_MPS || m == BM_LEASE) && t > BENCH_MPS_MAX_CLIENTS) {
				char msg[128];

				x->idx++;
				snprintf(msg, sizeof(msg), "MPS takes at most %d clients per GPU: T=%u not run",
					 BENCH_MPS_MAX_CLIENTS, t);
				event(x, "[%u/%u] %s %s T=%u: skipped: %s", x->idx, x->total,
				      bench_wl_names[o->wls[wi]], bench_mode_names[m], t, msg);
				rows_not_run(x, m, o->wls[wi], t, true, msg);
			} else {
				run_point(x, m, o->wls[wi], t);
			}
		}
	}
	if (m == BM_MPS && mps.dir[0]) {
		for (size_t i = first_row; i < rep->nrows; i++)
			if (rep->rows[i].errors && !rep->rows[i].skipped)
				mps.keep = true;
		bench_mps_stop(&mps, mps_control, o->libcuda);
	}
	if ((m == BM_OOO || m == BM_LEASE) && d.dir[0]) {
		for (size_t i = first_row; i < rep->nrows; i++)
			if (rep->rows[i].errors)
				d.keep = true;
		bench_oood_stop(&d);
	}
}

int bench_run(const struct bench_opts *o)
{
	struct bench_report *rep = calloc(1, sizeof(*rep));
	struct ctx x = { .o = o, .rep = rep, .tty = isatty(STDERR_FILENO) };
	char mps_control[PATH_MAX] = "";
	struct sigaction sa = { .sa_handler = on_signal };
	int64_t t0 = bench_now_ns();
	int rc = BENCH_RC_OK;

	if (!rep) {
		bench_err("out of memory");
		return BENCH_RC_FAIL;
	}
	rep->o = o;
	x.total = o->nmodes * o->nwls * o->ntenants;
	signal(SIGPIPE, SIG_IGN);

	rc = preflight(&x, mps_control, sizeof(mps_control));
	if (rc)
		goto out;
	bench_smi_clocks(&rep->meta.dev, false, o->libcuda);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);

	for (unsigned mi = 0; mi < o->nmodes && !bench_stop; mi++)
		run_mode(&x, o->modes[mi], mps_control);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	bench_smi_clocks(&rep->meta.dev, true, o->libcuda);
	bench_iso_date(rep->meta.end_date, sizeof(rep->meta.end_date));
	rep->meta.wall_s = (double)(bench_now_ns() - t0) / 1e9;
	if (bench_stop) {
		clear_live(&x);
		bench_err("interrupted by signal %d: writing what was measured", (int)bench_stop);
		x.failed = true;
	}
	if (write_outputs(&x) < 0 || x.failed)
		rc = BENCH_RC_FAIL;
out:
	free(rep->rows);
	free(rep);
	return rc;
}
