/* SPDX-License-Identifier: MIT */
/*
 * ooo-bench: measure oood against what the kernel alone can do.
 *
 * Workloads are subcommands (see `workloads` below). `ping` times closed-loop
 * round trips through libooo and compares them with two baselines that use
 * the same socket type and message size without oood in the way:
 *   unix-pair     every client has its own echo thread over a socketpair: the
 *                 floor for one round trip, with as many servers as clients;
 *   unix-1server  all clients talk to one single-threaded epoll echo server:
 *                 the fair comparison for one daemon thread serving many.
 * Latencies go into per-thread log-linear histograms (64 sub-buckets per
 * power of two, under 1.6% error, tools/bench/hist.h), so memory does not
 * grow with run time.
 *
 * The GPU workloads (spin, mlp, gemm, custom, mix: direct CUDA vs MPS vs
 * ooo, with tenant processes) are in tools/bench/; see bench/README.md.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "bench/bench.h"
#include "common/args.h"
#include "json.h"
#include "version.h" /* build/gen: OOO_GIT_REV */
#ifndef OOO_GIT_REV
#define OOO_GIT_REV "unknown"
#endif
#include <ooo/proto.h>

#define RC_OK 0
#define RC_FAIL 1
#define RC_USAGE 2

#define MAX_SESSIONS 1024
#define MAX_COUNTS 32
#define NS_PER_S 1000000000ll
#define THREAD_STACK (256 * 1024)
/* An ooo ping on the wire: header plus libooo's 8-byte token. */
#define PING_BYTES (sizeof(struct ooo_msg_hdr) + sizeof(uint64_t))
#define IO_TIMEOUT_S 10

__attribute__((format(printf, 1, 2))) static void err_msg(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("ooo-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const char *cur_workload;

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("ooo-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cur_workload)
		fprintf(stderr, "Try 'ooo-bench %s --help'.\n", cur_workload);
	else
		fprintf(stderr, "Try 'ooo-bench --help'.\n");
	return RC_USAGE;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* ---- ping workload --------------------------------------------------------- */

enum mode { MODE_OOO, MODE_PAIR, MODE_1SERVER, MODE_COUNT };

static const char *const mode_names[MODE_COUNT] = {
	[MODE_OOO] = "ooo",
	[MODE_PAIR] = "unix-pair",
	[MODE_1SERVER] = "unix-1server",
};

struct ping_opts {
	unsigned counts[MAX_COUNTS];
	unsigned ncounts;
	enum mode modes[MODE_COUNT];
	unsigned nmodes;
	double seconds, warmup;
	bool json;
	char socket[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

/* One timed run: `n` clients of one mode. */
struct run {
	enum mode mode;
	unsigned n;
	const char *path; /* ooo: oood.sock; unix-1server: the echo server's socket */
	/* start gate: a barrier that tolerates clients that never started */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned ready;
	bool go, abort;
	int64_t t_warm, t_end; /* written before go; read after */
};

struct client {
	struct run *run;
	pthread_t th;
	int fd; /* unix modes */
	ooo_session *s;
	int err; /* 0 or negative: what stopped it */
	char why[512];
	struct hist h;
};

struct result {
	enum mode mode;
	unsigned n;
	double seconds;
	struct hist h;
};

static void build_ping(unsigned char *buf, uint64_t token)
{
	struct ooo_msg_hdr h = {
		.magic = OOO_PROTO_MAGIC,
		.version = OOO_PROTO_VERSION,
		.type = OOO_MSG_PING,
		.len = PING_BYTES,
		.seq = 1,
	};

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &token, sizeof(token));
}

static void set_io_timeout(int fd)
{
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };

	/* a stuck peer must not hang the run past its deadline forever */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int unix_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	set_io_timeout(fd);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

static int echo_once(int fd, const unsigned char *msg, unsigned char *buf)
{
	ssize_t n;

	if (send(fd, msg, PING_BYTES, MSG_NOSIGNAL) != (ssize_t)PING_BYTES)
		return -errno;
	n = recv(fd, buf, 2 * PING_BYTES, 0);
	if (n < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	if (n != (ssize_t)PING_BYTES)
		return n == 0 ? -ECONNRESET : -EPROTO;
	return 0;
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct run *r = c->run;
	unsigned char msg[PING_BYTES], buf[2 * PING_BYTES];
	int64_t t_warm, t_end;
	bool stop;

	if (r->mode == MODE_OOO) {
		struct ooo_open_opts o = {
			.sz = sizeof(o), .path = r->path, .name = "ooo-bench", .timeout_ms = IO_TIMEOUT_S * 1000
		};
		/*
		 * The previous run's sessions close asynchronously (libooo does not
		 * wait for the bye), so the tenant may still be charged for them for
		 * a moment: retry a session limit briefly before believing it.
		 */
		for (int tries = 0; !(c->s = ooo_open_opts(&o)) && errno == OOO_ELIMIT && tries < 100; tries++)
			usleep(10000);
		if (!c->s) {
			const char *why = ooo_last_error();
			c->err = -errno;
			snprintf(c->why, sizeof(c->why), "cannot open session on %s: %s%s%s", r->path,
				 ooo_strerror(c->err), why[0] ? ": " : "", why);
		}
	} else if (r->mode == MODE_1SERVER) {
		c->fd = unix_connect(r->path);
		if (c->fd < 0) {
			c->err = c->fd;
			snprintf(c->why, sizeof(c->why), "cannot connect to %s: %s", r->path, strerror(-c->err));
		}
	}
	build_ping(msg, (uint64_t)(uintptr_t)c);

	pthread_mutex_lock(&r->mu);
	r->ready++;
	pthread_cond_broadcast(&r->cv);
	while (!r->go)
		pthread_cond_wait(&r->cv, &r->mu);
	stop = r->abort || c->err;
	t_warm = r->t_warm;
	t_end = r->t_end;
	pthread_mutex_unlock(&r->mu);

	while (!stop) {
		int64_t t0 = now_ns(), t1;
		int e = r->mode == MODE_OOO ? ooo_ping(c->s) : echo_once(c->fd, msg, buf);

		t1 = now_ns();
		if (e < 0) {
			const char *why = r->mode == MODE_OOO ? ooo_last_error() : "";
			c->err = e;
			snprintf(c->why, sizeof(c->why), "%s round trip failed: %s%s%s", mode_names[r->mode],
				 r->mode == MODE_OOO ? ooo_strerror(e) : strerror(-e), why[0] ? ": " : "", why);
			break;
		}
		/* count only round trips wholly inside the measured window */
		if (t1 > t_end)
			break;
		if (t0 >= t_warm)
			hist_add(&c->h, (uint64_t)(t1 - t0));
	}
	if (c->s)
		c->s = ooo_close(c->s);
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
	return NULL;
}

static void *pair_server_main(void *arg)
{
	int fd = (int)(intptr_t)arg;
	unsigned char buf[256];
	ssize_t n;

	/* until the client closes its end */
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		if (send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
			break;
	close(fd);
	return NULL;
}

struct echo_server {
	char dir[64];
	char path[108];
	int lfd, stopfd, epfd;
	pthread_t th;
	bool running;
	int *conns; /* accepted fds, closed when the server stops */
	size_t nconns, cap;
};

static void *echo_server_main(void *arg)
{
	struct echo_server *es = arg;
	struct epoll_event ev[256];
	unsigned char buf[256];

	for (;;) {
		int n = epoll_wait(es->epfd, ev, 256, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		for (int i = 0; i < n; i++) {
			int fd = ev[i].data.fd;
			ssize_t m;

			if (fd == es->stopfd)
				return NULL;
			if (fd == es->lfd) {
				int c;

				while ((c = accept4(es->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					struct epoll_event e = { .events = EPOLLIN, .data.fd = c };

					if (es->nconns == es->cap) {
						size_t cap = es->cap ? 2 * es->cap : 64;
						int *p = realloc(es->conns, cap * sizeof(*p));
						if (!p) {
							close(c);
							continue;
						}
						es->conns = p;
						es->cap = cap;
					}
					es->conns[es->nconns++] = c;
					(void)epoll_ctl(es->epfd, EPOLL_CTL_ADD, c, &e);
				}
				continue;
			}
			m = recv(fd, buf, sizeof(buf), 0);
			if (m > 0) {
				(void)send(fd, buf, (size_t)m, MSG_NOSIGNAL);
			} else if (m == 0 || errno != EAGAIN) {
				/* closed at stop, so a reused fd number cannot alias it meanwhile */
				(void)epoll_ctl(es->epfd, EPOLL_CTL_DEL, fd, NULL);
			}
		}
	}
	return NULL;
}

static void echo_server_stop(struct echo_server *es)
{
	uint64_t one = 1;

	if (es->running) {
		if (write(es->stopfd, &one, sizeof(one)) < 0)
			err_msg("cannot stop the echo server: %s", strerror(errno));
		pthread_join(es->th, NULL);
		es->running = false;
	}
	for (size_t i = 0; i < es->nconns; i++)
		close(es->conns[i]);
	free(es->conns);
	es->conns = NULL;
	es->nconns = es->cap = 0;
	if (es->epfd >= 0)
		close(es->epfd);
	if (es->stopfd >= 0)
		close(es->stopfd);
	if (es->lfd >= 0)
		close(es->lfd);
	es->epfd = es->stopfd = es->lfd = -1;
	if (es->path[0])
		unlink(es->path);
	if (es->dir[0])
		rmdir(es->dir);
	es->path[0] = es->dir[0] = 0;
}

static int echo_server_start(struct echo_server *es)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event e = { .events = EPOLLIN };
	const char *tmp = getenv("TMPDIR");
	int r;

	memset(es, 0, sizeof(*es));
	es->lfd = es->stopfd = es->epfd = -1;
	/* TMPDIR may be too long for sun_path; /tmp always fits */
	if (!tmp || strlen(tmp) > 40)
		tmp = "/tmp";
	snprintf(es->dir, sizeof(es->dir), "%s/ooo-bench.XXXXXX", tmp);
	if (!mkdtemp(es->dir)) {
		r = -errno;
		es->dir[0] = 0;
		err_msg("cannot create a temporary directory in %s: %s", tmp, strerror(-r));
		return r;
	}
	snprintf(es->path, sizeof(es->path), "%s/echo.sock", es->dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", es->path);
	es->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	es->stopfd = eventfd(0, EFD_CLOEXEC);
	es->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (es->lfd < 0 || es->stopfd < 0 || es->epfd < 0) {
		r = -errno;
		err_msg("cannot set up the echo server: %s", strerror(-r));
		goto fail;
	}
	if (bind(es->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		err_msg("cannot bind the echo server to %s: %s", es->path, strerror(-r));
		es->path[0] = 0; /* not ours to unlink */
		goto fail;
	}
	if (listen(es->lfd, MAX_SESSIONS) < 0) {
		r = -errno;
		err_msg("cannot listen on %s: %s", es->path, strerror(-r));
		goto fail;
	}
	e.data.fd = es->lfd;
	(void)epoll_ctl(es->epfd, EPOLL_CTL_ADD, es->lfd, &e);
	e.data.fd = es->stopfd;
	(void)epoll_ctl(es->epfd, EPOLL_CTL_ADD, es->stopfd, &e);
	r = pthread_create(&es->th, NULL, echo_server_main, es);
	if (r) {
		err_msg("cannot start the echo server thread: %s", strerror(r));
		r = -r;
		goto fail;
	}
	es->running = true;
	return 0;
fail:
	echo_server_stop(es);
	return r;
}

/*
 * One run of `n` clients in mode `m`. Returns 0 with *res filled, or RC_FAIL
 * after printing why.
 */
static int run_one(const struct ping_opts *o, enum mode m, unsigned n, struct result *res)
{
	struct run r = { .mode = m, .n = n, .path = o->socket };
	struct echo_server es = { .lfd = -1, .stopfd = -1, .epfd = -1 };
	struct client *cl;
	pthread_t *srv = NULL;
	pthread_attr_t attr;
	unsigned started = 0, nsrv = 0;
	int rc = RC_OK, e;

	cl = calloc(n, sizeof(*cl));
	if (!cl) {
		err_msg("out of memory for %u clients", n);
		return RC_FAIL;
	}
	for (unsigned i = 0; i < n; i++) {
		cl[i].run = &r;
		cl[i].fd = -1;
		hist_init(&cl[i].h);
	}
	pthread_mutex_init(&r.mu, NULL);
	pthread_cond_init(&r.cv, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK);

	if (m == MODE_1SERVER) {
		if (echo_server_start(&es) < 0) {
			rc = RC_FAIL;
			goto out;
		}
		r.path = es.path;
	} else if (m == MODE_PAIR) {
		srv = calloc(n, sizeof(*srv));
		if (!srv) {
			err_msg("out of memory for %u echo threads", n);
			rc = RC_FAIL;
			goto out;
		}
		for (; nsrv < n; nsrv++) {
			int sv[2];

			if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
				err_msg("socketpair: %s", strerror(errno));
				rc = RC_FAIL;
				goto out;
			}
			set_io_timeout(sv[0]);
			e = pthread_create(&srv[nsrv], &attr, pair_server_main, (void *)(intptr_t)sv[1]);
			if (e) {
				err_msg("cannot start echo thread %u of %u: %s", nsrv + 1, n, strerror(e));
				close(sv[0]);
				close(sv[1]);
				rc = RC_FAIL;
				goto out;
			}
			cl[nsrv].fd = sv[0];
		}
	}

	for (; started < n; started++) {
		e = pthread_create(&cl[started].th, &attr, client_main, &cl[started]);
		if (e) {
			err_msg("cannot start client thread %u of %u: %s", started + 1, n, strerror(e));
			rc = RC_FAIL;
			break;
		}
	}

	/* Everyone has connected (or failed to): open the gate for all at once. */
	pthread_mutex_lock(&r.mu);
	while (r.ready < started)
		pthread_cond_wait(&r.cv, &r.mu);
	for (unsigned i = 0; i < started && rc == RC_OK; i++) {
		if (cl[i].err) {
			err_msg("%s", cl[i].why);
			rc = RC_FAIL;
		}
	}
	r.abort = rc != RC_OK;
	r.t_warm = now_ns() + (int64_t)(o->warmup * (double)NS_PER_S);
	r.t_end = r.t_warm + (int64_t)(o->seconds * (double)NS_PER_S);
	r.go = true;
	pthread_cond_broadcast(&r.cv);
	pthread_mutex_unlock(&r.mu);

	for (unsigned i = 0; i < started; i++)
		pthread_join(cl[i].th, NULL);

	if (rc == RC_OK) {
		for (unsigned i = 0; i < n; i++) {
			if (cl[i].err) {
				err_msg("session %u of %u: %s", i + 1, n, cl[i].why);
				rc = RC_FAIL;
				break;
			}
		}
	}
	if (rc == RC_OK) {
		res->mode = m;
		res->n = n;
		res->seconds = o->seconds;
		hist_init(&res->h);
		for (unsigned i = 0; i < n; i++)
			hist_merge(&res->h, &cl[i].h);
	}
out:
	/* clients that never started still own their socketpair end */
	for (unsigned i = started; i < n; i++)
		if (cl[i].fd >= 0)
			close(cl[i].fd);
	for (unsigned i = 0; i < nsrv; i++)
		pthread_join(srv[i], NULL);
	if (m == MODE_1SERVER)
		echo_server_stop(&es);
	pthread_attr_destroy(&attr);
	pthread_cond_destroy(&r.cv);
	pthread_mutex_destroy(&r.mu);
	free(srv);
	free(cl);
	return rc;
}

/* Many sessions need many descriptors: two per session for the unix modes. */
static int raise_nofile(unsigned max_n)
{
	rlim_t need = (rlim_t)max_n * 2 + 64;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	if (rl.rlim_cur >= need)
		return 0;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < need) {
		err_msg("%u sessions need %lu file descriptors; the hard limit is %lu (see ulimit -n)", max_n,
			(unsigned long)need, (unsigned long)rl.rlim_max);
		return -EMFILE;
	}
	return 0;
}

static const char *fmt_us(char *buf, size_t cap, double ns)
{
	if (isfinite(ns))
		snprintf(buf, cap, "%.2f", ns / 1e3);
	else
		snprintf(buf, cap, "-");
	return buf;
}

static double rtt_per_s(const struct result *r)
{
	return (double)r->h.count / r->seconds;
}

static const struct result *find_result(const struct result *res, size_t nres, enum mode m, unsigned n)
{
	for (size_t i = 0; i < nres; i++)
		if (res[i].mode == m && res[i].n == n)
			return &res[i];
	return NULL;
}

static double ratio(double a, double b)
{
	return b > 0 && isfinite(a) && isfinite(b) ? a / b : NAN;
}

static void print_human(const struct ping_opts *o, const struct result *res, size_t nres, const char *host,
			const char *kernel, long cpus)
{
	char b1[32], b2[32], b3[32];
	bool header = false;

	printf("ooo-bench ping: %zu-byte round trips, %.1f s per run after %.1f s warmup\n", PING_BYTES, o->seconds,
	       o->warmup);
	printf("host %s, kernel %s, %ld cpus%s%s\n\n", host, kernel, cpus, getenv("OOO_COMMIT") ? ", commit " : "",
	       getenv("OOO_COMMIT") ? getenv("OOO_COMMIT") : "");
	printf("%-12s  %8s  %12s  %12s  %9s  %9s  %9s\n", "mode", "sessions", "round_trips", "rtt/s", "p50_us",
	       "p99_us", "p99.9_us");
	for (size_t i = 0; i < nres; i++) {
		const struct result *r = &res[i];

		printf("%-12s  %8u  %12" PRIu64 "  %12.0f  %9s  %9s  %9s\n", mode_names[r->mode], r->n, r->h.count,
		       rtt_per_s(r), fmt_us(b1, sizeof(b1), hist_quantile(&r->h, 0.50)),
		       fmt_us(b2, sizeof(b2), hist_quantile(&r->h, 0.99)),
		       fmt_us(b3, sizeof(b3), hist_quantile(&r->h, 0.999)));
	}
	for (size_t i = 0; i < nres; i++) {
		const struct result *a = &res[i];

		if (a->mode != MODE_OOO)
			continue;
		for (int m = MODE_PAIR; m < MODE_COUNT; m++) {
			const struct result *b = find_result(res, nres, (enum mode)m, a->n);

			if (!b)
				continue;
			if (!header) {
				printf("\nooo relative to each baseline (throughput: higher is better; latency: lower)\n");
				printf("%8s  %-12s  %10s  %10s  %10s\n", "sessions", "baseline", "rtt/s", "p50", "p99");
				header = true;
			}
			printf("%8u  %-12s  %9.2fx  %9.2fx  %9.2fx\n", a->n, mode_names[m],
			       ratio(rtt_per_s(a), rtt_per_s(b)),
			       ratio(hist_quantile(&a->h, 0.5), hist_quantile(&b->h, 0.5)),
			       ratio(hist_quantile(&a->h, 0.99), hist_quantile(&b->h, 0.99)));
		}
	}
}

static void print_json(const struct ping_opts *o, const struct result *res, size_t nres, const char *host,
		       const char *kernel, long cpus)
{
	j_open(NULL, '{');
	j_str("bench", "ping");
	j_str("host", host);
	j_str("kernel", kernel);
	j_u64("cpus", (uint64_t)cpus);
	j_str("commit", getenv("OOO_COMMIT"));
	j_str("socket", o->socket);
	j_u64("payload_bytes", PING_BYTES);
	j_num("warmup_s", o->warmup, 3);
	j_open("results", '[');
	for (size_t i = 0; i < nres; i++) {
		const struct result *r = &res[i];

		j_open(NULL, '{');
		j_str("mode", mode_names[r->mode]);
		j_u64("sessions", r->n);
		j_num("seconds", r->seconds, 3);
		j_u64("round_trips", r->h.count);
		j_num("rtt_per_s", rtt_per_s(r), 1);
		j_num("p50_us", hist_quantile(&r->h, 0.50) / 1e3, 3);
		j_num("p99_us", hist_quantile(&r->h, 0.99) / 1e3, 3);
		j_num("p999_us", hist_quantile(&r->h, 0.999) / 1e3, 3);
		j_num("mean_us", r->h.count ? (double)r->h.sum / (double)r->h.count / 1e3 : NAN, 3);
		j_num("min_us", r->h.count ? (double)r->h.min / 1e3 : NAN, 3);
		j_num("max_us", r->h.count ? (double)r->h.max / 1e3 : NAN, 3);
		j_close('}');
	}
	j_close(']');
	j_open("ratios", '[');
	for (size_t i = 0; i < nres; i++) {
		const struct result *a = &res[i];

		if (a->mode != MODE_OOO)
			continue;
		for (int m = MODE_PAIR; m < MODE_COUNT; m++) {
			const struct result *b = find_result(res, nres, (enum mode)m, a->n);

			if (!b)
				continue;
			j_open(NULL, '{');
			j_u64("sessions", a->n);
			j_str("baseline", mode_names[m]);
			j_num("rtt_per_s_ratio", ratio(rtt_per_s(a), rtt_per_s(b)), 4);
			j_num("p50_ratio", ratio(hist_quantile(&a->h, 0.5), hist_quantile(&b->h, 0.5)), 4);
			j_num("p99_ratio", ratio(hist_quantile(&a->h, 0.99), hist_quantile(&b->h, 0.99)), 4);
			j_num("p999_ratio", ratio(hist_quantile(&a->h, 0.999), hist_quantile(&b->h, 0.999)), 4);
			j_close('}');
		}
	}
	j_close(']');
	j_close('}');
}

static void ping_usage(FILE *f)
{
	fprintf(f,
		"Usage: ooo-bench ping [OPTIONS]\n"
		"Closed-loop round trips: for each session count N, N threads each ping\n"
		"as fast as they can for SECONDS, in each mode:\n"
		"  ooo           every thread has its own libooo session with oood (ooo_ping)\n"
		"  unix-pair     every thread has its own echo thread over a SOCK_SEQPACKET\n"
		"                socketpair (the kernel's floor, one server per client)\n"
		"  unix-1server  all threads talk to one single-threaded epoll echo server\n"
		"                on a SOCK_SEQPACKET socket (one server thread, like oood)\n"
		"Baseline messages are %zu bytes, the size of an ooo ping. Latencies are\n"
		"histogrammed (64 buckets per power of two, <1.6%% error).\n"
		"\n"
		"Options:\n"
		"  --sessions LIST  comma-separated session counts (default 1,32; each 1..%d)\n"
		"  --seconds S      measured time per run (default 5)\n"
		"  --warmup S       unmeasured time before each run (default 0.5)\n"
		"  --modes LIST     comma-separated modes (default ooo,unix-pair,unix-1server)\n"
		"  --socket PATH    oood's tenant socket (default: $OOO_SOCKET, else\n"
		"                   $OOO_RUNDIR/" OOO_SOCKET_NAME ", else " OOO_DEFAULT_RUNDIR "/" OOO_SOCKET_NAME ")\n"
		"  --rundir DIR     use DIR/" OOO_SOCKET_NAME " as the socket\n"
		"  --json           print one JSON object instead of tables:\n"
		"                   {bench, host, kernel, cpus, commit ($OOO_COMMIT or null), socket,\n"
		"                   payload_bytes, warmup_s, results: [{mode, sessions, seconds,\n"
		"                   round_trips, rtt_per_s, p50_us, p99_us, p999_us, mean_us, min_us,\n"
		"                   max_us}], ratios: [{sessions, baseline, rtt_per_s_ratio,\n"
		"                   p50_ratio, p99_ratio, p999_ratio}] (ooo divided by baseline)}\n"
		"  -h, --help       this help\n"
		"\n"
		"Each N's modes run back to back. The default policy allows 64 sessions\n"
		"per user; larger N needs a class with a higher max_sessions.\n"
		"\n"
		"Exit status: 0 success, 1 a run failed (e.g. oood not reachable), 2 usage error.\n",
		PING_BYTES, MAX_SESSIONS);
}

static int parse_counts(const char *arg, struct ping_opts *o)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	int rc = 0;

	if (!copy)
		return usage_error("out of memory");
	o->ncounts = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (args_u64(tok, 10, 1, MAX_SESSIONS, &v) < 0) {
			rc = usage_error("--sessions wants counts from 1 to %d, not '%s'", MAX_SESSIONS, tok);
			break;
		}
		if (o->ncounts == MAX_COUNTS) {
			rc = usage_error("--sessions takes at most %d counts", MAX_COUNTS);
			break;
		}
		o->counts[o->ncounts++] = (unsigned)v;
	}
	if (!rc && !o->ncounts)
		rc = usage_error("--sessions wants at least one count");
	free(copy);
	return rc;
}

static int parse_modes(const char *arg, struct ping_opts *o)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	bool seen[MODE_COUNT] = { false };
	int rc = 0;

	if (!copy)
		return usage_error("out of memory");
	o->nmodes = 0;
	for (tok = strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
		int m;

		for (m = 0; m < MODE_COUNT; m++)
			if (!strcmp(tok, mode_names[m]))
				break;
		if (m == MODE_COUNT)
			rc = usage_error("unknown mode '%s' (modes: ooo, unix-pair, unix-1server)", tok);
		else if (!seen[m]) {
			seen[m] = true;
			o->modes[o->nmodes++] = (enum mode)m;
		}
	}
	if (!rc && !o->nmodes)
		rc = usage_error("--modes wants at least one mode");
	free(copy);
	return rc;
}

static int resolve_socket(struct ping_opts *o, const char *sock, const char *rundir)
{
	const char *env;
	int n;

	if (sock && rundir)
		return usage_error("--socket and --rundir both name the socket; give one");
	if (sock)
		n = snprintf(o->socket, sizeof(o->socket), "%s", sock);
	else if (rundir)
		n = snprintf(o->socket, sizeof(o->socket), "%s/%s", rundir, OOO_SOCKET_NAME);
	else if ((env = getenv("OOO_SOCKET")) && *env)
		n = snprintf(o->socket, sizeof(o->socket), "%s", env);
	else if ((env = getenv("OOO_RUNDIR")) && *env)
		n = snprintf(o->socket, sizeof(o->socket), "%s/%s", env, OOO_SOCKET_NAME);
	else
		n = snprintf(o->socket, sizeof(o->socket), "%s/%s", OOO_DEFAULT_RUNDIR, OOO_SOCKET_NAME);
	if (n < 0 || (size_t)n >= sizeof(o->socket))
		return usage_error("socket path too long (%zu bytes at most)", sizeof(o->socket) - 1);
	return 0;
}

static int cpu_count(void)
{
	cpu_set_t set;

	/* like nproc: the CPUs this process may run on */
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		return CPU_COUNT(&set);
	return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

static int do_ping(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sessions", required_argument, NULL, 'n' }, { "seconds", required_argument, NULL, 's' },
		{ "warmup", required_argument, NULL, 'w' },   { "modes", required_argument, NULL, 'm' },
		{ "socket", required_argument, NULL, 'S' },   { "rundir", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },           { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ping_opts o = { .seconds = 5, .warmup = 0.5 };
	const char *sock = NULL, *rundir = NULL;
	struct result *res;
	struct utsname un;
	char host[256];
	size_t nres = 0;
	unsigned max_n = 0;
	int c, rc;

	o.counts[0] = 1;
	o.counts[1] = 32;
	o.ncounts = 2;
	for (int m = 0; m < MODE_COUNT; m++)
		o.modes[o.nmodes++] = (enum mode)m;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if ((rc = parse_counts(optarg, &o)))
				return rc;
			break;
		case 's':
			if (args_double(optarg, 0.001, 86400, &o.seconds) < 0)
				return usage_error("--seconds wants a time from 0.001 to 86400, not '%s'", optarg);
			break;
		case 'w':
			if (args_double(optarg, 0, 3600, &o.warmup) < 0)
				return usage_error("--warmup wants a time from 0 to 3600, not '%s'", optarg);
			break;
		case 'm':
			if ((rc = parse_modes(optarg, &o)))
				return rc;
			break;
		case 'S':
			sock = optarg;
			break;
		case 'r':
			rundir = optarg;
			break;
		case 'j':
			o.json = true;
			break;
		case 'h':
			ping_usage(stdout);
			return RC_OK;
		case ':':
			return usage_error("option '%s' needs an argument", argv[optind - 1]);
		default:
			if (optopt)
				return usage_error("unknown option '-%c'", optopt);
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if ((rc = resolve_socket(&o, sock, rundir)))
		return rc;
	for (unsigned i = 0; i < o.ncounts; i++)
		max_n = o.counts[i] > max_n ? o.counts[i] : max_n;
	if (raise_nofile(max_n) < 0)
		return RC_FAIL;

	/* Fail before spending minutes on baselines if oood is not there. */
	for (unsigned i = 0; i < o.nmodes; i++) {
		struct ooo_open_opts oo = { .sz = sizeof(oo), .path = o.socket, .name = "ooo-bench" };
		ooo_session *s;

		if (o.modes[i] != MODE_OOO)
			continue;
		s = ooo_open_opts(&oo);
		if (!s) {
			int e = errno;
			const char *why = ooo_last_error();

			err_msg("cannot open session on %s: %s%s%s", o.socket, ooo_strerror(e), why[0] ? ": " : "",
				why);
			if (e == ENOENT || e == ECONNREFUSED)
				fprintf(stderr, "ooo-bench: is oood running? Point --rundir or --socket at it.\n");
			return RC_FAIL;
		}
		ooo_close(s);
	}

	res = calloc((size_t)o.ncounts * o.nmodes, sizeof(*res));
	if (!res) {
		err_msg("out of memory");
		return RC_FAIL;
	}
	for (unsigned i = 0; i < o.ncounts; i++) {
		for (unsigned k = 0; k < o.nmodes; k++) {
			if (isatty(STDERR_FILENO))
				fprintf(stderr, "ooo-bench: %s, %u session%s, %.1f s...\n", mode_names[o.modes[k]],
					o.counts[i], o.counts[i] == 1 ? "" : "s", o.warmup + o.seconds);
			if (run_one(&o, o.modes[k], o.counts[i], &res[nres]) != RC_OK) {
				free(res);
				return RC_FAIL;
			}
			nres++;
		}
	}

	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = 0;
	if (uname(&un) < 0)
		snprintf(un.release, sizeof(un.release), "unknown");
	if (o.json)
		print_json(&o, res, nres, host, un.release, cpu_count());
	else
		print_human(&o, res, nres, host, un.release, cpu_count());
	free(res);
	return RC_OK;
}

/* ---- workloads and main ------------------------------------------------------ */

struct workload {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
	void (*usage)(FILE *f);
};

static const struct workload workloads[] = {
	{ "ping", do_ping, "round-trip latency and rate: ooo vs plain Unix sockets", ping_usage },
	{ "spin", bench_gpu_main, "GPU: chains of small kernels; direct vs MPS vs ooo", bench_gpu_usage },
	{ "mlp", bench_gpu_main, "GPU: batch-1 MLP inference, checked on the CPU", bench_gpu_usage },
	{ "gemm", bench_gpu_main, "GPU: co-located SGEMMs (256x128x1152), mode ratios", bench_gpu_usage },
	{ "custom", bench_gpu_main, "GPU: your PTX kernel, grid, block and parameters", bench_gpu_usage },
	{ "mix", bench_gpu_main, "GPU: one latency-critical tenant among best-effort ones", bench_gpu_usage },
};

#define NWORKLOADS (sizeof(workloads) / sizeof(workloads[0]))

static const struct workload *find_workload(const char *name)
{
	for (size_t i = 0; i < NWORKLOADS; i++)
		if (!strcmp(workloads[i].name, name))
			return &workloads[i];
	return NULL;
}

static void usage(FILE *f)
{
	fputs("Usage: ooo-bench [-h|--help|--version] WORKLOAD[,WORKLOAD...] [OPTIONS]\n"
	      "       ooo-bench help [WORKLOAD]\n"
	      "Benchmarks for oood, each compared with a baseline measured in the same run.\n"
	      "\n"
	      "Workloads:\n",
	      f);
	for (size_t i = 0; i < NWORKLOADS; i++)
		fprintf(f, "  %-8s %s\n", workloads[i].name, workloads[i].help);
	fputs("\nThe GPU workloads (spin, mlp, gemm, custom, mix) share their options and may be\n"
	      "combined in one run: 'ooo-bench spin,mlp,gemm --tenants 1,8,32 --json F'.\n"
	      "'ooo-bench WORKLOAD --help' describes a workload's options and output.\n"
	      "Options: -h, --help (this text), --version (print the version).\n"
	      "Exit status: 0 success, 1 a run failed (e.g. oood not reachable), 2 usage error.\n",
	      f);
}

int main(int argc, char **argv)
{
	const struct workload *w;

	bench_argv0 = argv[0];
	/* a tenant process of a GPU workload (internal: see tools/bench/tenant.c) */
	if (argc >= 2 && !strcmp(argv[1], "--tenant"))
		return bench_tenant_main(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2)
		return usage_error("no workload given");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return RC_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("ooo-bench %s (git %s)\n", OOO_VERSION_STRING, OOO_GIT_REV);
		return RC_OK;
	}
	if (!strcmp(argv[1], "help")) {
		if (argc < 3) {
			usage(stdout);
			return RC_OK;
		}
		w = find_workload(argv[2]);
		if (!w)
			return usage_error("unknown workload '%s'", argv[2]);
		w->usage(stdout);
		return RC_OK;
	}
	if (argv[1][0] == '-')
		return usage_error("unknown option '%s'", argv[1]);
	/* a list of GPU workloads runs in one go */
	if (strchr(argv[1], ',') && bench_is_gpu_workload(argv[1]))
		return bench_gpu_main(argc - 1, argv + 1);
	w = find_workload(argv[1]);
	if (!w)
		return usage_error("unknown workload '%s'", argv[1]);
	cur_workload = w->name;
	return w->fn(argc - 1, argv + 1);
}
