/* SPDX-License-Identifier: MIT */
/*
 * Integration tests: real oood processes in temporary run directories,
 * driven through libooo, raw sockets and oooctl.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>

#include "../../proto/wire.h"

struct daemon {
	pid_t pid;
	char dir[64];
	char conf[128];
	char sock[160];
	char admin[160];
};

static const char *build_dir(void)
{
	const char *b = getenv("OOO_BUILD");
	return b && *b ? b : "build";
}

static void bin_path(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", build_dir(), name);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static bool daemon_answers(struct daemon *d)
{
	ooo_session *s = ooo_admin_open(d->admin, 1000);
	bool ok = s && ooo_ping(s) == 0;

	ooo_close(s);
	return ok;
}

/* Start oood -f --rundir DIR [-c DIR/oood.conf]; conf NULL: embedded defaults. */
static void daemon_start(struct daemon *d, const char *conf)
{
	char oood[256];
	uint64_t deadline;

	memset(d, 0, sizeof(*d));
	strcpy(d->dir, "/tmp/ooo-test-XXXXXX");
	assert_non_null(mkdtemp(d->dir));
	chmod(d->dir, 0755); /* so tests running as nobody can reach the sockets */
	snprintf(d->conf, sizeof(d->conf), "%s/oood.conf", d->dir);
	snprintf(d->sock, sizeof(d->sock), "%s/oood.sock", d->dir);
	snprintf(d->admin, sizeof(d->admin), "%s/admin.sock", d->dir);
	if (conf)
		write_file(d->conf, conf);
	bin_path(oood, sizeof(oood), "oood");
	d->pid = fork();
	assert_true(d->pid >= 0);
	if (d->pid == 0) {
		char log[128];
		int fd;

		/* a failed test must not leave daemons behind */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		snprintf(log, sizeof(log), "%s/oood.log", d->dir);
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (conf)
			execl(oood, oood, "-f", "-v", "--rundir", d->dir, "-c", d->conf, (char *)NULL);
		else
			execl(oood, oood, "-f", "-v", "--rundir", d->dir, (char *)NULL);
		_exit(127);
	}
	deadline = now_ms() + 10000;
	while (!daemon_answers(d)) {
		int st;
		if (waitpid(d->pid, &st, WNOHANG) == d->pid)
			fail_msg("oood exited during start-up (status %d); see %s/oood.log", st, d->dir);
		if (now_ms() > deadline)
			fail_msg("oood did not answer within 10 s");
		sleep_ms(20);
	}
}

static void rm_dir(const char *dir)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	char p[512];

	if (!dp)
		return;
	while ((e = readdir(dp))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(dp);
	rmdir(dir);
}

/* Wait for the daemon to exit; SIGKILL after timeout_ms. Returns the wait status. */
static int daemon_wait(struct daemon *d, unsigned timeout_ms)
{
	uint64_t deadline = now_ms() + timeout_ms;
	int st = -1;

	while (waitpid(d->pid, &st, WNOHANG) == 0) {
		if (now_ms() > deadline) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, &st, 0);
			d->pid = 0;
			fail_msg("oood did not exit within %u ms", timeout_ms);
		}
		sleep_ms(10);
	}
	d->pid = 0;
	return st;
}

static void print_log(struct daemon *d)
{
	char p[128], line[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/oood.log", d->dir);
	f = fopen(p, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		fprintf(stderr, "  | %s", line);
	fclose(f);
}

static void daemon_stop(struct daemon *d)
{
	int st;

	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		st = daemon_wait(d, 10000);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			print_log(d);
			fail_msg("oood exited with status %#x", st);
		}
	}
	rm_dir(d->dir);
}

static void get_status(struct daemon *d, struct ooo_msg_status *st)
{
	ooo_session *s = ooo_admin_open(d->admin, 5000);
	int n;

	assert_non_null(s);
	n = ooo_admin_call(s, OOO_MSG_STATUS, NULL, 0, st, sizeof(*st));
	assert_int_equal(n, sizeof(*st));
	ooo_close(s);
}

/* Poll until the daemon reports `want` tenant sessions (closing is asynchronous). */
static void wait_sessions(struct daemon *d, uint32_t want)
{
	struct ooo_msg_status st;
	uint64_t deadline = now_ms() + 5000;

	for (;;) {
		get_status(d, &st);
		if (st.sessions == want)
			return;
		if (now_ms() > deadline)
			fail_msg("daemon has %u sessions, expected %u", st.sessions, want);
		sleep_ms(10);
	}
}

/* ---- raw protocol helpers ---------------------------------------------------- */

static int raw_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void raw_send(int fd, uint16_t type, uint32_t seq, const void *p, size_t n)
{
	unsigned char buf[OOO_MSG_MAX];
	ssize_t len = wire_encode(buf, sizeof(buf), type, seq, 0, p, n);

	assert_true(len > 0);
	assert_int_equal(send(fd, buf, (size_t)len, MSG_NOSIGNAL), len);
}

static void raw_hello(int fd)
{
	struct ooo_msg_hello h = { 0 };
	strcpy(h.name, "raw");
	raw_send(fd, OOO_MSG_HELLO, 1, &h, sizeof(h));
}

/*
 * Receive one datagram within timeout_ms. Returns its length, 0 on EOF,
 * -ETIMEDOUT, or -errno.
 */
static ssize_t raw_recv(int fd, void *buf, size_t cap, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, timeout_ms) <= 0)
		return -ETIMEDOUT;
	n = recv(fd, buf, cap, 0);
	return n < 0 ? -errno : n;
}

/* A session's hello reply, as a client library would read it. */
static struct ooo_msg_hello_reply raw_hello_reply(const char *path)
{
	static unsigned char buf[OOO_MSG_MAX];
	struct ooo_msg_hello_reply r;
	struct wire_msg m;
	int fd = raw_connect(path);
	ssize_t n;

	raw_hello(fd);
	n = raw_recv(fd, buf, sizeof(buf), 5000);
	assert_true(n > 0);
	assert_int_equal(wire_decode(buf, (size_t)n, WIRE_TO_PEER, &m, NULL), 0);
	assert_int_equal(m.hdr.status, 0);
	assert_int_equal(m.plen, sizeof(r));
	memcpy(&r, m.payload, sizeof(r));
	close(fd);
	return r;
}

/* Expect an error reply with `status` (0: any negative), then EOF. */
static void expect_error_then_eof(int fd, int status, const char *text)
{
	static unsigned char buf[OOO_MSG_MAX];
	struct wire_msg m;
	ssize_t n = raw_recv(fd, buf, sizeof(buf), 5000);

	assert_true(n > 0);
	assert_int_equal(wire_decode(buf, (size_t)n, WIRE_TO_PEER, &m, NULL), 0);
	assert_true(m.hdr.type & OOO_MSG_REPLY);
	if (status)
		assert_int_equal(m.hdr.status, status);
	else
		assert_true(m.hdr.status < 0);
	if (text) {
		const struct ooo_msg_error *e = m.payload;
		if (!strstr(e->msg, text))
			fail_msg("error '%s' does not mention '%s'", e->msg, text);
	}
	n = raw_recv(fd, buf, sizeof(buf), 5000);
	assert_int_equal(n, 0);
}

/* ---- shared daemon ------------------------------------------------------------ */

static struct daemon shared;

static const char *shared_conf = "[daemon]\n"
				 "hello_timeout_ms = 500\n"
				 "[class default]\n"
				 "match_uid = *\n"
				 "max_sessions = 200\n";

static int setup_shared(void **state)
{
	daemon_start(&shared, shared_conf);
	return 0;
}

static int teardown_shared(void **state)
{
	daemon_stop(&shared);
	return 0;
}

static void test_ping_and_status(void **state)
{
	struct ooo_msg_status st;
	ooo_session *s = ooo_open(shared.sock);

	assert_non_null(s);
	assert_true(ooo_session_id(s) > 0);
	assert_string_equal(ooo_session_class(s), "default");
	for (int i = 0; i < 100; i++)
		assert_int_equal(ooo_ping(s), 0);
	get_status(&shared, &st);
	assert_int_equal(st.sessions, 1);
	assert_int_equal(st.tenants, 1);
	assert_int_equal(st.pid, (uint64_t)shared.pid);
	assert_int_equal(st.policy_generation, 1);
	assert_int_equal(st.classes, 1);
	assert_string_equal(st.policy_source, shared.conf);
	assert_true(st.msgs_in >= 101);
	ooo_close(s);
	wait_sessions(&shared, 0);
}

static void test_env_socket_and_errors(void **state)
{
	ooo_session *s;

	setenv("OOO_SOCKET", shared.sock, 1);
	s = ooo_open(NULL);
	unsetenv("OOO_SOCKET");
	assert_non_null(s);
	ooo_close(s);
	setenv("OOO_RUNDIR", shared.dir, 1);
	s = ooo_open_opts(&(struct ooo_open_opts){ .sz = sizeof(struct ooo_open_opts), .name = "env" });
	unsetenv("OOO_RUNDIR");
	assert_non_null(s);
	ooo_close(s);
	/* daemon not running */
	s = ooo_open("/tmp/ooo-test-does-not-exist/oood.sock");
	assert_null(s);
	assert_int_equal(errno, ENOENT);
	assert_null(ooo_close(NULL));
	assert_int_equal(ooo_ping(NULL), -EINVAL);
	wait_sessions(&shared, 0);
}

/*
 * No daemon at the socket: ooo_open and ooo_admin_open fail with the
 * connect error, and the reason names the socket, why it could not be
 * reached, and where its path came from (issue 39).
 */
static void test_no_daemon_names_socket(void **state)
{
	const char *nosock = "/tmp/ooo-test-does-not-exist/oood.sock";
	ooo_session *s;

	(void)state;
	s = ooo_open(nosock);
	assert_null(s);
	assert_int_equal(errno, ENOENT);
	if (!strstr(ooo_last_error(), nosock) || !strstr(ooo_last_error(), strerror(ENOENT)) ||
	    !strstr(ooo_last_error(), "is oood running?") || !strstr(ooo_last_error(), "given by the caller"))
		fail_msg("ooo_open: reason '%s'", ooo_last_error());

	setenv("OOO_SOCKET", nosock, 1);
	s = ooo_open_opts(NULL);
	unsetenv("OOO_SOCKET");
	assert_null(s);
	assert_int_equal(errno, ENOENT);
	if (!strstr(ooo_last_error(), nosock) || !strstr(ooo_last_error(), "$OOO_SOCKET"))
		fail_msg("ooo_open_opts with OOO_SOCKET: reason '%s'", ooo_last_error());

	setenv("OOO_RUNDIR", "/tmp/ooo-test-does-not-exist", 1);
	s = ooo_admin_open(NULL, 1000);
	unsetenv("OOO_RUNDIR");
	assert_null(s);
	assert_int_equal(errno, ENOENT);
	if (!strstr(ooo_last_error(), "/tmp/ooo-test-does-not-exist/" OOO_ADMIN_SOCKET_NAME) ||
	    !strstr(ooo_last_error(), "$OOO_RUNDIR"))
		fail_msg("ooo_admin_open with OOO_RUNDIR: reason '%s'", ooo_last_error());

	/* a path that cannot be a socket's says so, and where it came from */
	setenv("OOO_RUNDIR", "/tmp/ooo-test-does-not-exist/" "0123456789012345678901234567890123456789"
			     "0123456789012345678901234567890123456789012345678901234567890123456789", 1);
	s = ooo_open(NULL);
	unsetenv("OOO_RUNDIR");
	assert_null(s);
	assert_int_equal(errno, ENAMETOOLONG);
	if (!strstr(ooo_last_error(), "longer than") || !strstr(ooo_last_error(), "$OOO_RUNDIR"))
		fail_msg("ooo_open with a long OOO_RUNDIR: reason '%s'", ooo_last_error());
}

#define NTHREADS 100

struct worker {
	pthread_barrier_t *start, *held;
	int failures;
};

static void *ping_worker(void *arg)
{
	struct worker *w = arg;
	ooo_session *s;

	pthread_barrier_wait(w->start);
	s = ooo_open(shared.sock);
	if (!s) {
		w->failures++;
	} else {
		for (int i = 0; i < 50; i++)
			if (ooo_ping(s) != 0)
				w->failures++;
	}
	pthread_barrier_wait(w->held); /* every session is open here */
	pthread_barrier_wait(w->held); /* main thread has checked the count */
	ooo_close(s);
	return NULL;
}

static void test_hundred_concurrent_sessions(void **state)
{
	pthread_barrier_t start, held;
	pthread_t th[NTHREADS];
	struct worker w[NTHREADS];
	struct ooo_msg_status st;

	pthread_barrier_init(&start, NULL, NTHREADS);
	pthread_barrier_init(&held, NULL, NTHREADS + 1);
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .start = &start, .held = &held };
		assert_int_equal(pthread_create(&th[i], NULL, ping_worker, &w[i]), 0);
	}
	pthread_barrier_wait(&held);
	get_status(&shared, &st);
	assert_int_equal(st.sessions, NTHREADS);
	pthread_barrier_wait(&held);
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].failures, 0);
	}
	pthread_barrier_destroy(&start);
	pthread_barrier_destroy(&held);
	wait_sessions(&shared, 0);
}

static void *shared_session_pinger(void *arg)
{
	ooo_session *s = arg;
	intptr_t bad = 0;

	for (int i = 0; i < 200; i++)
		if (ooo_ping(s) != 0)
			bad++;
	return (void *)bad;
}

static void test_one_session_many_threads(void **state)
{
	ooo_session *s = ooo_open(shared.sock);
	pthread_t th[8];

	assert_non_null(s);
	for (int i = 0; i < 8; i++)
		pthread_create(&th[i], NULL, shared_session_pinger, s);
	for (int i = 0; i < 8; i++) {
		void *bad;
		pthread_join(th[i], &bad);
		assert_int_equal((intptr_t)bad, 0);
	}
	ooo_close(s);
	wait_sessions(&shared, 0);
}

static void test_disconnect_mid_message(void **state)
{
	unsigned char buf[64];
	ooo_session *good = ooo_open(shared.sock);
	struct ooo_msg_hdr h = { .magic = OOO_PROTO_MAGIC, .version = OOO_PROTO_VERSION, .type = OOO_MSG_PING,
				 .len = 100, .seq = 2 };
	int fd;

	assert_non_null(good);
	/* connect and vanish */
	close(raw_connect(shared.sock));
	/* hello, then half a header, then vanish */
	fd = raw_connect(shared.sock);
	raw_hello(fd);
	assert_true(raw_recv(fd, buf, sizeof(buf), 5000) > 0);
	assert_int_equal(send(fd, &h, 10, MSG_NOSIGNAL), 10);
	close(fd);
	/* a header announcing more than is sent, then vanish without reading */
	fd = raw_connect(shared.sock);
	raw_hello(fd);
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(send(fd, buf, 50, MSG_NOSIGNAL), 50);
	close(fd);
	/* hello sent, reply never read */
	fd = raw_connect(shared.sock);
	raw_hello(fd);
	close(fd);
	assert_int_equal(ooo_ping(good), 0);
	ooo_close(good);
	wait_sessions(&shared, 0);
}

static void test_garbage_and_truncation(void **state)
{
	struct ooo_msg_status before, after;
	ooo_session *good = ooo_open(shared.sock);
	unsigned char buf[512], valid[128];
	struct ooo_msg_hello h = { 0 };
	ssize_t vlen;
	unsigned seed = 12345;

	assert_non_null(good);
	get_status(&shared, &before);
	vlen = wire_encode(valid, sizeof(valid), OOO_MSG_HELLO, 1, 0, &h, sizeof(h));
	for (int i = 0; i < 200; i++) {
		int fd = raw_connect(shared.sock);
		size_t n;

		if (i % 2) {
			/* random bytes of random length, some with a valid magic */
			n = (size_t)(rand_r(&seed) % 300);
			for (size_t k = 0; k < n; k++)
				buf[k] = (unsigned char)rand_r(&seed);
			if (i % 4 == 1 && n >= 4)
				memcpy(buf, valid, 4);
		} else {
			/* a valid hello cut short */
			n = (size_t)(rand_r(&seed) % vlen);
			memcpy(buf, valid, n);
		}
		assert_int_equal(send(fd, buf, n, MSG_NOSIGNAL), (ssize_t)n);
		if (n == 0) {
			/* an empty datagram reads as end of file: the daemon just closes */
			assert_int_equal(raw_recv(fd, buf, sizeof(buf), 5000), 0);
		} else {
			expect_error_then_eof(fd, 0, NULL);
		}
		close(fd);
		if (i % 50 == 0)
			assert_int_equal(ooo_ping(good), 0);
	}
	/* garbage after a successful hello closes that session only */
	{
		int fd = raw_connect(shared.sock);
		raw_hello(fd);
		assert_true(raw_recv(fd, buf, sizeof(buf), 5000) > 0);
		assert_int_equal(send(fd, "garbage!garbage!garbage!garbage!", 32, MSG_NOSIGNAL), 32);
		expect_error_then_eof(fd, -OOO_EPROTO, "bad magic");
		close(fd);
	}
	assert_int_equal(ooo_ping(good), 0);
	get_status(&shared, &after);
	assert_true(after.proto_errors >= before.proto_errors + 190);
	ooo_close(good);
	wait_sessions(&shared, 0);
}

static void test_protocol_violations(void **state)
{
	unsigned char big[9000] = { 0 };
	unsigned char buf[512];
	ooo_session *good = ooo_open(shared.sock);
	int fd;

	assert_non_null(good);
	/* request before hello */
	fd = raw_connect(shared.sock);
	raw_send(fd, OOO_MSG_PING, 1, "x", 1);
	expect_error_then_eof(fd, -OOO_EPROTO, "first message must be hello");
	close(fd);
	/* duplicate hello */
	fd = raw_connect(shared.sock);
	raw_hello(fd);
	assert_true(raw_recv(fd, buf, sizeof(buf), 5000) > 0);
	raw_hello(fd);
	expect_error_then_eof(fd, -OOO_EPROTO, "duplicate hello");
	close(fd);
	/* oversized: more than the daemon accepts */
	fd = raw_connect(shared.sock);
	raw_hello(fd);
	assert_true(raw_recv(fd, buf, sizeof(buf), 5000) > 0);
	{
		ssize_t n = wire_encode(big, sizeof(big), OOO_MSG_PING, 2, 0, NULL, 0);
		struct ooo_msg_hdr h;
		memcpy(&h, big, sizeof(h));
		h.len = sizeof(big);
		memcpy(big, &h, sizeof(h));
		assert_true(n > 0);
		assert_int_equal(send(fd, big, sizeof(big), MSG_NOSIGNAL), (ssize_t)sizeof(big));
	}
	expect_error_then_eof(fd, -OOO_EPROTO, "larger than");
	close(fd);
	/* another protocol version */
	fd = raw_connect(shared.sock);
	{
		unsigned char m[128];
		struct ooo_msg_hello h = { 0 };
		struct ooo_msg_hdr hd;
		ssize_t n = wire_encode(m, sizeof(m), OOO_MSG_HELLO, 1, 0, &h, sizeof(h));
		memcpy(&hd, m, sizeof(hd));
		hd.version = 2;
		memcpy(m, &hd, sizeof(hd));
		assert_int_equal(send(fd, m, (size_t)n, MSG_NOSIGNAL), n);
	}
	expect_error_then_eof(fd, -OOO_EVERSION, "version 2 is not supported");
	close(fd);
	/* an admin request on the tenant socket: refused, session stays */
	fd = raw_connect(shared.sock);
	raw_hello(fd);
	assert_true(raw_recv(fd, buf, sizeof(buf), 5000) > 0);
	raw_send(fd, OOO_MSG_STATUS, 2, NULL, 0);
	{
		struct wire_msg m;
		ssize_t n = raw_recv(fd, buf, sizeof(buf), 5000);
		assert_true(n > 0);
		assert_int_equal(wire_decode(buf, (size_t)n, WIRE_TO_PEER, &m, NULL), 0);
		assert_int_equal(m.hdr.status, -OOO_ENOTADMIN);
		assert_int_equal(m.hdr.seq, 2);
	}
	raw_send(fd, OOO_MSG_PING, 3, "abc", 3);
	{
		struct wire_msg m;
		ssize_t n = raw_recv(fd, buf, sizeof(buf), 5000);
		assert_true(n > 0);
		assert_int_equal(wire_decode(buf, (size_t)n, WIRE_TO_PEER, &m, NULL), 0);
		assert_int_equal(m.hdr.status, 0);
		assert_int_equal(m.plen, 3);
		assert_memory_equal(m.payload, "abc", 3);
	}
	/* buffer requests for buffers this session does not have */
	{
		struct ooo_msg_buf_ref ref = { .id = 12345 };
		struct wire_msg m;
		ssize_t n;

		raw_send(fd, OOO_MSG_BUF_FREE, 5, &ref, sizeof(ref));
		n = raw_recv(fd, buf, sizeof(buf), 5000);
		assert_true(n > 0);
		assert_int_equal(wire_decode(buf, (size_t)n, WIRE_TO_PEER, &m, NULL), 0);
		assert_int_equal(m.hdr.status, -ENOENT);
		raw_send(fd, OOO_MSG_BUF_EXPORT, 6, &ref, sizeof(ref));
		n = raw_recv(fd, buf, sizeof(buf), 5000);
		assert_true(n > 0);
		assert_int_equal(wire_decode(buf, (size_t)n, WIRE_TO_PEER, &m, NULL), 0);
		assert_int_equal(m.hdr.status, -ENOENT);
	}
	/* a module load must carry exactly one descriptor (the image) */
	{
		struct ooo_msg_module_load ml = { .kind = OOO_MODULE_PTX, .len = 10 };
		raw_send(fd, OOO_MSG_MODULE_LOAD, 7, &ml, sizeof(ml));
		expect_error_then_eof(fd, -OOO_EPROTO, "exactly one file descriptor");
		close(fd);
		fd = raw_connect(shared.sock);
		raw_hello(fd);
		assert_true(raw_recv(fd, buf, sizeof(buf), 5000) > 0);
	}
	/* bye: empty reply, then the daemon closes */
	raw_send(fd, OOO_MSG_BYE, 4, NULL, 0);
	assert_true(raw_recv(fd, buf, sizeof(buf), 5000) > 0);
	assert_int_equal(raw_recv(fd, buf, sizeof(buf), 5000), 0);
	close(fd);
	/* a list request with its reserved field set: refused for that, not as "the wrong size" */
	{
		struct ooo_msg_list_req lr = { .reserved = 1 };
		ooo_session *a = ooo_admin_open(shared.admin, 5000);

		assert_non_null(a);
		assert_int_equal(ooo_admin_call(a, OOO_MSG_TENANTS, &lr, sizeof(lr), buf, sizeof(buf)), -OOO_EPROTO);
		assert_string_equal(ooo_last_error(), "list request reserved field must be 0");
		ooo_close(a);
	}
	assert_int_equal(ooo_ping(good), 0);
	ooo_close(good);
	wait_sessions(&shared, 0);
}

static int count_fds(pid_t pid)
{
	char p[64];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
	d = opendir(p);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n++;
	closedir(d);
	return n;
}

/* The daemon's descriptor count once no connection is closing any more. */
static int settled_fds(pid_t pid)
{
	int a = count_fds(pid), b;

	for (int i = 0; i < 100; i++, a = b) {
		sleep_ms(50);
		b = count_fds(pid);
		if (a == b)
			break;
	}
	return a;
}

static unsigned char buf_empty[1];

static void test_passed_fds_are_closed(void **state)
{
	int before = settled_fds(shared.pid), after;
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

	assert_true(before > 0);
	for (int i = 0; i < 50; i++) {
		unsigned char m[128];
		struct ooo_msg_hello h = { 0 };
		ssize_t n = wire_encode(m, sizeof(m), OOO_MSG_HELLO, 1, 0, &h, sizeof(h));
		struct iovec iov = { m, (size_t)n };
		union {
			struct cmsghdr c;
			char b[CMSG_SPACE(sizeof(int) * 3)];
		} u;
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
				     .msg_controllen = sizeof(u.b) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		int fds[3] = { devnull, devnull, devnull };
		int fd = raw_connect(shared.sock);

		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(fds));
		memcpy(CMSG_DATA(cm), fds, sizeof(fds));
		assert_int_equal(sendmsg(fd, &mh, MSG_NOSIGNAL), n);
		expect_error_then_eof(fd, -OOO_EPROTO, "file descriptors");
		close(fd);
	}
	/* an empty datagram can carry descriptors too, and reads like end of file */
	for (int i = 0; i < 20; i++) {
		union {
			struct cmsghdr c;
			char b[CMSG_SPACE(sizeof(int) * 4)];
		} u;
		struct iovec iov = { buf_empty, 0 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
				     .msg_controllen = sizeof(u.b) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		int fds[4] = { devnull, devnull, devnull, devnull };
		int fd = raw_connect(i % 2 ? shared.sock : shared.admin);
		unsigned char rb[64];

		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(fds));
		memcpy(CMSG_DATA(cm), fds, sizeof(fds));
		assert_int_equal(sendmsg(fd, &mh, MSG_NOSIGNAL), 0);
		assert_int_equal(raw_recv(fd, rb, sizeof(rb), 5000), 0);
		close(fd);
	}
	close(devnull);
	wait_sessions(&shared, 0);
	after = settled_fds(shared.pid);
	assert_int_equal(after, before);
}

static void test_hello_timeout(void **state)
{
	uint64_t t0 = now_ms();
	int fd = raw_connect(shared.sock);

	expect_error_then_eof(fd, -ETIMEDOUT, "no hello within 500 ms");
	assert_true(now_ms() - t0 >= 400);
	close(fd);
}

/* ---- separate daemons ------------------------------------------------------------ */

static bool have_nobody(uid_t *uid, gid_t *gid)
{
	struct passwd *pw = getpwnam("nobody");

	if (geteuid() != 0 || !pw)
		return false;
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return true;
}

/* Run fn(arg) in a child as uid/gid with no supplementary groups; return its exit code. */
static int run_as(uid_t uid, gid_t gid, int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
			_exit(99);
		_exit(fn(arg));
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* ---- connections waiting for hello ---------------------------------------------- */

enum { SILENT_MAX = 256 };

/* What a child holding silent connections found when told to look (its exit code). */
enum {
	SILENT_NONE = 0,    /* none of its connections heard from oood */
	SILENT_EVICTED = 1, /* only its oldest did: told it was evicted (naming the uid), then closed */
};

/* connect(2) to a socket; -1 on failure (no assertions: it runs in children too). */
static int try_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -1;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * In a child: as uid (the caller's own if (uid_t)-1), open n connections to
 * sock and say nothing on them; tell `ready` once oood has accepted them
 * all, wait for a byte on `go`, then look at what they got (see SILENT_*;
 * larger codes: what went wrong).
 */
static int silent_child(const char *sock, uid_t uid, int n, int ready, int go)
{
	static unsigned char buf[OOO_MSG_MAX];
	struct pollfd p[SILENT_MAX];
	struct ooo_msg_hello h = { 0 };
	char want[32], c;
	struct wire_msg m;
	ssize_t len;
	int fd;

	if (uid != (uid_t)-1 && (setgroups(0, NULL) < 0 || setgid(uid) < 0 || setuid(uid) < 0))
		return 10;
	for (int i = 0; i < n; i++) {
		p[i] = (struct pollfd){ .fd = try_connect(sock), .events = POLLIN };
		if (p[i].fd < 0)
			return 11;
	}
	/*
	 * oood accepts in order: once a later connection's hello is answered
	 * (admitted or refused, either will do), all of these are pending. A
	 * connection refused at once may be closed before its hello arrives,
	 * unread, which resets it here: that is an answer too.
	 */
	strcpy(h.name, "barrier");
	fd = try_connect(sock);
	len = wire_encode(buf, sizeof(buf), OOO_MSG_HELLO, 1, 0, &h, sizeof(h));
	if (fd < 0 || len <= 0)
		return 12;
	(void)send(fd, buf, (size_t)len, MSG_NOSIGNAL);
	len = raw_recv(fd, buf, sizeof(buf), 5000);
	if (len <= 0 && len != -ECONNRESET)
		return 12;
	close(fd);
	if (write(ready, "r", 1) != 1 || read(go, &c, 1) != 1)
		return 13;
	/* an eviction is sent before the newcomer's hello is answered: a second is plenty */
	switch (poll(p, (nfds_t)n, 1000)) {
	case 0:
		return SILENT_NONE;
	case 1:
		break;
	default:
		return 14;
	}
	if (!(p[0].revents & POLLIN))
		return 15;
	len = raw_recv(p[0].fd, buf, sizeof(buf), 0);
	snprintf(want, sizeof(want), "from uid %u", (unsigned)getuid());
	if (len <= 0 || wire_decode(buf, (size_t)len, WIRE_TO_PEER, &m, NULL) != 0 || m.hdr.status != -OOO_ELIMIT ||
	    m.hdr.seq != 0 || m.plen < sizeof(struct ooo_msg_error))
		return 16;
	if (!strstr(((const struct ooo_msg_error *)m.payload)->msg, "evicted") ||
	    !strstr(((const struct ooo_msg_error *)m.payload)->msg, want))
		return 17;
	if (raw_recv(p[0].fd, buf, sizeof(buf), 5000) != 0)
		return 18;
	return SILENT_EVICTED;
}

struct silent {
	pid_t pid;
	int go; /* write end of the child's `go` pipe */
};

/* Start a silent_child and wait until oood has accepted its connections. */
static void silent_start(struct silent *s, struct daemon *d, uid_t uid, int n)
{
	int ready[2], go[2], st;
	char c;

	assert_true(n <= SILENT_MAX);
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	s->pid = fork();
	assert_true(s->pid >= 0);
	if (s->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(ready[0]);
		close(go[1]);
		_exit(silent_child(d->sock, uid, n, ready[1], go[0]));
	}
	close(ready[1]);
	close(go[0]);
	s->go = go[1];
	if (read(ready[0], &c, 1) != 1) {
		waitpid(s->pid, &st, 0);
		fail_msg("the child holding %d silent connections failed: status %#x", n, st);
	}
	close(ready[0]);
}

/* Tell the child to look; returns what it found (SILENT_*). Its connections close with it. */
static int silent_end(struct silent *s)
{
	int st;

	assert_int_equal(write(s->go, "g", 1), 1);
	close(s->go);
	assert_int_equal(waitpid(s->pid, &st, 0), s->pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/*
 * A uid alone may fill the whole pending table (1024, SERVER_PENDING_MAX):
 * its share is all of it. Then it is the biggest holder and is refused,
 * and operators are not locked out.
 */
static void test_pending_one_uid(void **state)
{
	enum { HOLDERS = 4, EACH = 256 }; /* in children: 1024 descriptors may be over this process's limit */
	struct silent h[HOLDERS];
	struct daemon d;
	ooo_session *a;
	int extra;

	daemon_start(&d, "[daemon]\nhello_timeout_ms = 60000\n[class default]\nmatch_uid = *\n");
	for (int i = 0; i < HOLDERS; i++)
		silent_start(&h[i], &d, (uid_t)-1, EACH);
	extra = raw_connect(d.sock);
	expect_error_then_eof(extra, -OOO_ELIMIT, "waiting for hello");
	close(extra);
	/* and libooo reports the refusal as the daemon gave it */
	assert_null(ooo_open(d.sock));
	assert_int_equal(errno, OOO_ELIMIT);
	assert_non_null(strstr(ooo_last_error(), "waiting for hello"));
	/* operators are not locked out by a tenant's idle connections */
	a = ooo_admin_open(d.admin, 2000);
	assert_non_null(a);
	assert_int_equal(ooo_ping(a), 0);
	ooo_close(a);
	/* nobody was evicted: the refused were the newcomers */
	for (int i = 0; i < HOLDERS; i++)
		assert_int_equal(silent_end(&h[i]), SILENT_NONE);
	daemon_stop(&d);
}

/*
 * Issue 38: four uids fill the 1024 pending slots with silent connections
 * (256 each, their share); a fifth uid still gets in, in place of the
 * oldest silent connection of the biggest holder (the first of the four on
 * a tie), which is told why. Before, the fifth was refused until the
 * others' hello timeout.
 */
static void test_pending_fair_share(void **state)
{
	enum { HOLDERS = 4, EACH = 256, UID0 = 60001 };
	struct silent h[HOLDERS];
	struct daemon d;
	ooo_session *s;

	if (geteuid() != 0) {
		skip();
		return;
	}
	daemon_start(&d, "[daemon]\nhello_timeout_ms = 60000\n[class default]\nmatch_uid = *\n");
	for (int i = 0; i < HOLDERS; i++)
		silent_start(&h[i], &d, UID0 + i, EACH);
	/* the fifth uid, root, opens a session and uses it */
	s = ooo_open(d.sock);
	if (!s)
		fail_msg("the fifth uid was refused: %s", ooo_last_error());
	assert_int_equal(ooo_ping(s), 0);
	ooo_close(s);
	/* exactly one connection went: the oldest of the first holder */
	assert_int_equal(silent_end(&h[0]), SILENT_EVICTED);
	for (int i = 1; i < HOLDERS; i++)
		assert_int_equal(silent_end(&h[i]), SILENT_NONE);
	daemon_stop(&d);
}

static int child_open_tenant(void *arg)
{
	struct daemon *d = arg;
	ooo_session *s = ooo_open(d->sock);

	if (s) {
		ooo_close(s);
		return 0;
	}
	if (errno == OOO_EDENIED && strstr(ooo_last_error(), "is not admitted"))
		return 10;
	return 20;
}

static int child_open_admin(void *arg)
{
	struct daemon *d = arg;
	ooo_session *s = ooo_admin_open(d->admin, 2000);

	if (s) {
		int r = ooo_ping(s);
		ooo_close(s);
		return r == 0 ? 0 : 30;
	}
	if (errno == EACCES)
		return 11;
	if (errno == OOO_ENOTADMIN)
		return 12;
	return 21;
}

static void test_unauthorized_uid(void **state)
{
	struct daemon d;
	uid_t uid;
	gid_t gid;
	struct group *g;
	char conf[256];

	if (!have_nobody(&uid, &gid)) {
		skip();
		return;
	}
	g = getgrgid(gid);
	assert_non_null(g);
	daemon_start(&d, "[class root]\nmatch_uid = 0\n");
	assert_int_equal(run_as(uid, gid, child_open_tenant, &d), 10);
	/* the admin socket is for root and the admin group: nobody may not even connect */
	assert_int_equal(run_as(uid, gid, child_open_admin, &d), 11);
	/* root is admitted */
	assert_int_equal(child_open_tenant(&d), 0);
	daemon_stop(&d);

	/* with nobody's group as the admin group, nobody is an administrator */
	snprintf(conf, sizeof(conf), "[daemon]\nadmin_group = %s\n[class root]\nmatch_uid = 0\n", g->gr_name);
	daemon_start(&d, conf);
	assert_int_equal(run_as(uid, gid, child_open_admin, &d), 0);
	assert_int_equal(run_as(uid, gid, child_open_tenant, &d), 10);
	daemon_stop(&d);
}

static void test_session_limit_and_reclaim(void **state)
{
	struct daemon d;
	ooo_session *s[4];
	struct ooo_msg_status st;
	int pipefd[2];
	pid_t child;
	char c;

	daemon_start(&d, "[class default]\nmatch_uid = *\nmax_sessions = 3\n");
	for (int i = 0; i < 3; i++) {
		s[i] = ooo_open(d.sock);
		assert_non_null(s[i]);
	}
	s[3] = ooo_open(d.sock);
	assert_null(s[3]);
	assert_int_equal(errno, OOO_ELIMIT);
	assert_non_null(strstr(ooo_last_error(), "maximum of 3 sessions"));
	ooo_close(s[0]);
	wait_sessions(&d, 2);
	s[0] = ooo_open(d.sock);
	assert_non_null(s[0]);
	for (int i = 0; i < 3; i++)
		ooo_close(s[i]);
	wait_sessions(&d, 0);

	/* a tenant killed with SIGKILL while holding sessions: everything returns */
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		ooo_session *cs[3];
		for (int i = 0; i < 3; i++)
			if (!(cs[i] = ooo_open(d.sock)))
				_exit(1);
		(void)!write(pipefd[1], "x", 1);
		for (;;)
			ooo_ping(cs[0]);
	}
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], &c, 1), 1);
	close(pipefd[0]);
	get_status(&d, &st);
	assert_int_equal(st.sessions, 3);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	wait_sessions(&d, 0);
	get_status(&d, &st);
	assert_int_equal(st.tenants, 0);
	s[0] = ooo_open(d.sock);
	assert_non_null(s[0]);
	ooo_close(s[0]);
	daemon_stop(&d);
}

struct revoke_arg {
	struct daemon *d;
	int ready[2], go[2];
};

static int child_revoked(void *arg)
{
	struct revoke_arg *a = arg;
	ooo_session *s = ooo_open(a->d->sock);
	char c;
	int r;

	if (!s)
		return 1;
	if (write(a->ready[1], "x", 1) != 1 || read(a->go[0], &c, 1) != 1)
		return 2;
	r = ooo_ping(s);
	ooo_close(s);
	return r == -OOO_EREVOKED ? 0 : 3;
}

static void test_sighup_reload(void **state)
{
	struct daemon d;
	struct ooo_msg_status st;
	struct ooo_msg_reload_reply rr;
	ooo_session *s, *a;
	uint64_t deadline;
	int n;

	daemon_start(&d, "[class default]\nmatch_uid = *\n");
	s = ooo_open(d.sock);
	assert_non_null(s);
	assert_string_equal(ooo_session_class(s), "default");
	/* the class's wait_spin_us goes to the client with the hello reply: the default, 1 ms */
	assert_int_equal(raw_hello_reply(d.sock).wait_spin_us, OOO_HELLO_SPIN_SET | 1000);

	/* a good file: the new class applies to new and existing sessions */
	write_file(d.conf, "[class renamed]\nmatch_uid = *\nmax_sessions = 7\nwait_spin_us = 0\n");
	kill(d.pid, SIGHUP);
	deadline = now_ms() + 5000;
	do {
		get_status(&d, &st);
	} while (st.policy_generation != 2 && now_ms() < deadline && (sleep_ms(10), 1));
	assert_int_equal(st.policy_generation, 2);
	assert_int_equal(st.sessions, 1);
	{
		ooo_session *s2 = ooo_open(d.sock);
		assert_non_null(s2);
		assert_string_equal(ooo_session_class(s2), "renamed");
		ooo_close(s2);
		/* a new session gets the new class's wait_spin_us: 0, said (the flag), not absent */
		assert_int_equal(raw_hello_reply(d.sock).wait_spin_us, OOO_HELLO_SPIN_SET);
	}
	assert_int_equal(ooo_ping(s), 0);

	/* a bad file: refused, current policy kept, daemon serves on */
	write_file(d.conf, "[class renamed]\nmatch_uid = *\nbogus = 1\n");
	kill(d.pid, SIGHUP);
	deadline = now_ms() + 5000;
	do {
		get_status(&d, &st);
	} while (st.reloads_failed != 1 && now_ms() < deadline && (sleep_ms(10), 1));
	assert_int_equal(st.reloads_failed, 1);
	assert_int_equal(st.policy_generation, 2);
	assert_int_equal(ooo_ping(s), 0);

	/* reload through the admin socket reports the reason */
	a = ooo_admin_open(d.admin, 5000);
	assert_non_null(a);
	n = ooo_admin_call(a, OOO_MSG_RELOAD, NULL, 0, &rr, sizeof(rr));
	assert_int_equal(n, -EINVAL);
	assert_non_null(strstr(ooo_last_error(), ":3: "));
	assert_non_null(strstr(ooo_last_error(), "bogus"));
	write_file(d.conf, "[class again]\nmatch_uid = *\n");
	n = ooo_admin_call(a, OOO_MSG_RELOAD, NULL, 0, &rr, sizeof(rr));
	assert_int_equal(n, sizeof(rr));
	assert_int_equal(rr.policy_generation, 3);
	assert_non_null(strstr(rr.msg, "generation 3"));
	ooo_close(a);
	ooo_close(s);

	/* a peer the new policy no longer admits is told and closed */
	{
		uid_t uid;
		gid_t gid;
		struct revoke_arg ra = { .d = &d };
		pid_t child;
		char c;
		int wst;

		if (!have_nobody(&uid, &gid)) {
			daemon_stop(&d);
			return;
		}
		assert_int_equal(pipe2(ra.ready, O_CLOEXEC), 0);
		assert_int_equal(pipe2(ra.go, O_CLOEXEC), 0);
		child = fork();
		assert_true(child >= 0);
		if (child == 0) {
			if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
				_exit(99);
			_exit(child_revoked(&ra));
		}
		assert_int_equal(read(ra.ready[0], &c, 1), 1);
		write_file(d.conf, "[class root]\nmatch_uid = 0\n");
		a = ooo_admin_open(d.admin, 5000);
		assert_non_null(a);
		n = ooo_admin_call(a, OOO_MSG_RELOAD, NULL, 0, &rr, sizeof(rr));
		assert_int_equal(n, sizeof(rr));
		assert_non_null(strstr(rr.msg, "1 session revoked"));
		ooo_close(a);
		assert_int_equal(write(ra.go[1], "x", 1), 1);
		assert_int_equal(waitpid(child, &wst, 0), child);
		assert_true(WIFEXITED(wst));
		assert_int_equal(WEXITSTATUS(wst), 0);
		for (int i = 0; i < 2; i++) {
			close(ra.ready[i]);
			close(ra.go[i]);
		}
		wait_sessions(&d, 0);
	}
	daemon_stop(&d);
}

/*
 * A revoked tenant that never reads: reloads must not touch it again, the
 * daemon must survive them, and the session must close after the finish
 * timeout rather than hold its slot forever.
 */
static void test_revoked_peer_that_never_reads(void **state)
{
	struct daemon d;
	struct ooo_msg_status st;
	struct ooo_msg_reload_reply rr;
	unsigned char ping[OOO_PING_MAX];
	ooo_session *a;
	uint64_t deadline;
	int fd, n;

	memset(ping, 'p', sizeof(ping));
	daemon_start(&d, "[class default]\nmatch_uid = *\n");
	fd = raw_connect(d.sock);
	{
		int small = 4096;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	}
	raw_hello(fd);
	/* fill the daemon's send path and its reply queue; never read */
	for (int i = 0; i < 200; i++) {
		unsigned char m[OOO_PING_MAX + 64];
		ssize_t len = wire_encode(m, sizeof(m), OOO_MSG_PING, (uint32_t)i + 2, 0, ping, sizeof(ping));
		if (send(fd, m, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT) != len)
			break;
	}
	wait_sessions(&d, 1);
	write_file(d.conf, "[class nobody]\nmatch_uid = 65534\n");
	a = ooo_admin_open(d.admin, 5000);
	assert_non_null(a);
	for (int i = 0; i < 6; i++) {
		n = ooo_admin_call(a, OOO_MSG_RELOAD, NULL, 0, &rr, sizeof(rr));
		assert_int_equal(n, sizeof(rr));
		assert_non_null(strstr(rr.msg, i == 0 ? "1 session revoked" : "0 sessions revoked"));
	}
	ooo_close(a);
	/* closed within the finish timeout (5 s) even though it never read */
	deadline = now_ms() + 10000;
	do {
		get_status(&d, &st);
	} while (st.sessions && now_ms() < deadline && (sleep_ms(50), 1));
	assert_int_equal(st.sessions, 0);
	close(fd);
	daemon_stop(&d);
}

static void test_no_gpu_reported(void **state)
{
	struct daemon d;
	struct ooo_msg_status st;
	struct ooo_device_rec dev[2];
	struct ooo_msg_list *l;
	unsigned char buf[4096];
	struct ooo_msg_list_req req = { 0 };
	uint64_t deadline;
	ooo_session *a;
	int n;

	daemon_start(&d, "[daemon]\nlibcuda = /nonexistent/libcuda.so.1\n[class default]\nmatch_uid = *\n");
	deadline = now_ms() + 10000;
	do {
		get_status(&d, &st);
	} while (!strstr(st.gpu_reason, "no NVIDIA driver") && now_ms() < deadline && (sleep_ms(20), 1));
	assert_int_equal(st.gpus_ready, 0);
	assert_non_null(strstr(st.gpu_reason, "cannot load /nonexistent/libcuda.so.1"));
	a = ooo_admin_open(d.admin, 5000);
	assert_non_null(a);
	/* the reason arrives before the executor has exited: wait for the state */
	for (;;) {
		n = ooo_admin_call(a, OOO_MSG_DEVICES, &req, sizeof(req), buf, sizeof(buf));
		assert_int_equal(n, sizeof(*l) + sizeof(dev[0]));
		l = (struct ooo_msg_list *)buf;
		assert_int_equal(l->total, 1);
		memcpy(dev, l + 1, sizeof(dev[0]));
		if (dev[0].state != OOO_DEV_STARTING || now_ms() > deadline)
			break;
		sleep_ms(20);
	}
	assert_int_equal(dev[0].state, OOO_DEV_FAILED);
	assert_int_equal(dev[0].restarts, 0);
	assert_int_equal(dev[0].pid, 0);
	ooo_close(a);
	/* tenants are still served, and told why there is no GPU */
	a = ooo_open(d.sock);
	assert_non_null(a);
	assert_int_equal(ooo_ping(a), 0);
	{
		ooo_buf *b = NULL;
		struct ooo_msg_status st2;

		assert_int_equal(ooo_buf_alloc(a, 1 << 20, 0, &b), -OOO_ENODEV);
		assert_null(b);
		assert_non_null(strstr(ooo_last_error(), "no usable GPU"));
		assert_non_null(strstr(ooo_last_error(), "cannot load /nonexistent/libcuda.so.1"));
		assert_int_equal(ooo_buf_alloc(a, 1 << 20, OOO_BUF_DEVICE(3), &b), -OOO_ENODEV);
		assert_int_equal(ooo_buf_alloc(a, 0, 0, &b), -EINVAL);
		assert_int_equal(ooo_buf_alloc(a, 1, 0x80000000u, &b), -EINVAL);
		/* queues and modules need a GPU too, and say so */
		{
			ooo_queue *q = NULL;
			ooo_module *mod = NULL;

			assert_int_equal(ooo_queue_create(a, NULL, &q), -OOO_ENODEV);
			assert_null(q);
			assert_non_null(strstr(ooo_last_error(), "no usable GPU"));
			assert_int_equal(ooo_module_load(a, OOO_PTX, ".version 8.0", 12, &mod), -OOO_ENODEV);
			assert_int_equal(ooo_module_load(a, 99, "x", 1, &mod), -EINVAL);
			assert_int_equal(ooo_memset(NULL, 0, 0, 1, 4), -EINVAL);
			assert_int_equal(ooo_queue_sync(NULL, 0), -EINVAL);
		}
		/* nothing stays charged after refused allocations */
		get_status(&d, &st2);
		assert_int_equal(st2.sessions, 1);
	}
	ooo_close(a);
	daemon_stop(&d);

	/* the toolkit's stub library is named as such */
	if (access("/usr/local/cuda/lib64/stubs/libcuda.so", R_OK) == 0) {
		daemon_start(&d, "[daemon]\nlibcuda = /usr/local/cuda/lib64/stubs/libcuda.so\n[class default]\nmatch_uid = *\n");
		deadline = now_ms() + 10000;
		do {
			get_status(&d, &st);
		} while ((!st.gpu_reason[0] || !strcmp(st.gpu_reason, "executor starting")) && now_ms() < deadline &&
			 (sleep_ms(20), 1));
		assert_non_null(strstr(st.gpu_reason, "stub library"));
		daemon_stop(&d);
	}
	/* and executors can be switched off */
	daemon_start(&d, "[daemon]\nexecutor = no\n[class default]\nmatch_uid = *\n");
	get_status(&d, &st);
	assert_non_null(strstr(st.gpu_reason, "disabled"));
	daemon_stop(&d);
}

/*
 * A failure caught in libooo (bad arguments, before any message is sent)
 * has a reason of its own: ooo_last_error() must not keep the daemon's
 * reason for an earlier failed call. A call that succeeds clears it.
 */
static void test_local_failure_reason(void **state)
{
	struct daemon d;
	char remote[OOO_ERRMSG_MAX];
	uint32_t dim[3] = { 1, 1, 1 };
	struct ooo_lease_info info;
	struct ooo_kernel_info ki = { .sz = sizeof(ki) };
	ooo_session *s;
	ooo_buf *b = NULL;
	ooo_queue *q = NULL;
	ooo_module *mod = NULL;
	ooo_kernel *k = NULL;
	uint32_t v;

	daemon_start(&d, "[daemon]\nexecutor = no\n[class default]\nmatch_uid = *\n");
	s = ooo_open(d.sock);
	assert_non_null(s);
	/* oood refuses the buffer (no GPU): its reason */
	assert_int_equal(ooo_buf_alloc(s, 4096, 0, &b), -OOO_ENODEV);
	snprintf(remote, sizeof(remote), "%s", ooo_last_error());
	assert_non_null(strstr(remote, "no usable GPU"));
	/* a call that succeeds leaves no reason */
	assert_int_equal(ooo_ping(s), 0);
	assert_string_equal(ooo_last_error(), "");

	/* each local failure after a remote one: its own reason, naming the call */
#define LOCAL(call, err, words)                                                                            \
	do {                                                                                               \
		assert_int_equal(ooo_buf_alloc(s, 4096, 0, &b), -OOO_ENODEV);                              \
		assert_string_equal(ooo_last_error(), remote);                                             \
		assert_int_equal((call), (err));                                                           \
		if (!strstr(ooo_last_error(), (words)))                                                    \
			fail_msg("%s: reason '%s', expected one with '%s'", #call, ooo_last_error(), (words)); \
	} while (0)
	LOCAL(ooo_ping(NULL), -EINVAL, "ooo_ping: the session is NULL");
	LOCAL(ooo_buf_alloc(s, 0, 0, &b), -EINVAL, "ooo_buf_alloc: size is 0");
	LOCAL(ooo_buf_alloc(s, 1, 0x80000000u, &b), -EINVAL, "ooo_buf_alloc: unknown flags 0x80000000");
	LOCAL(ooo_buf_alloc(NULL, 1, 0, &b), -EINVAL, "ooo_buf_alloc: the session is NULL");
	LOCAL(ooo_buf_alloc(s, 1, 0, NULL), -EINVAL, "ooo_buf_alloc: out is NULL");
	LOCAL(ooo_buf_export_fd(NULL), -EINVAL, "ooo_buf_export_fd: the buffer is NULL");
	LOCAL(ooo_admin_call(s, OOO_MSG_STATUS | OOO_MSG_REPLY, NULL, 0, NULL, 0), -EINVAL, "reply bit");
	LOCAL(ooo_admin_call(s, OOO_MSG_STATUS, NULL, 4, NULL, 0), -EINVAL, "req is NULL");
	LOCAL(ooo_native_lease(s, NULL, &info), -EINVAL, "ooo_native_lease: opts is NULL");
	LOCAL(ooo_native_lease(s, &((struct ooo_lease_opts){ .sz = sizeof(struct ooo_lease_opts), .sm_pct = 101 }),
			       &info),
	      -EINVAL, "sm_pct 101");
	LOCAL(ooo_queue_create(s, &((struct ooo_queue_opts){ .sz = sizeof(struct ooo_queue_opts), .priority = 100 }), &q),
	      -EINVAL, "priority 100");
	LOCAL(ooo_queue_sync(NULL, 0), -EINVAL, "ooo_queue_sync: the queue is NULL");
	LOCAL(ooo_memset(NULL, 0, 0, 1, 4), -EINVAL, "ooo_memset: the queue is NULL");
	LOCAL(ooo_memcpy_htod(NULL, 0, &v, 4), -EINVAL, "ooo_memcpy_htod: the queue is NULL");
	LOCAL(ooo_memcpy_dtoh(NULL, &v, 0, 4), -EINVAL, "ooo_memcpy_dtoh: the queue is NULL");
	LOCAL(ooo_memcpy_dtod(NULL, 0, 0, 4), -EINVAL, "ooo_memcpy_dtod: the queue is NULL");
	LOCAL(ooo_module_load(s, 99, "x", 1, &mod), -EINVAL, "unknown module kind 99");
	LOCAL(ooo_module_load(s, OOO_PTX, "x", 0, &mod), -EINVAL, "the image is empty");
	LOCAL(ooo_kernel_get(NULL, "k", &k), -EINVAL, "ooo_kernel_get: the module is NULL");
	LOCAL(ooo_kernel_info(NULL, &ki), -EINVAL, "ooo_kernel_info: the kernel is NULL");
	LOCAL(ooo_launch(NULL, k, dim, dim, 0, NULL, 0), -EINVAL, "ooo_launch_ex: the queue is NULL");
	LOCAL(ooo_event_create(s, NULL), -EINVAL, "ooo_event_create: out is NULL");
	LOCAL(ooo_event_record(NULL, NULL), -EINVAL, "ooo_event_record: the queue is NULL");
	LOCAL(ooo_queue_wait_event(NULL, NULL), -EINVAL, "ooo_queue_wait_event: the queue is NULL");
	LOCAL(ooo_event_query(NULL), -EINVAL, "ooo_event_query: the event is NULL");
	LOCAL(ooo_event_wait(NULL, 0), -EINVAL, "ooo_event_wait: the event is NULL");
	LOCAL(ooo_host_alloc(s, 0, (void **)&b), -EINVAL, "ooo_host_alloc: size is 0");
	LOCAL(ooo_host_free(s, NULL), -EINVAL, "ooo_host_free: p is NULL");
	/* a constructor: NULL with errno, and the reason */
	LOCAL(ooo_open_opts(&((struct ooo_open_opts){ .sz = 1 })) == NULL && errno == EINVAL, 1, "ooo_open_opts: opts->sz");
#undef LOCAL
	assert_null(b);
	assert_null(q);
	assert_null(mod);
	ooo_close(s);
	daemon_stop(&d);
}

static void test_sigterm_with_sessions(void **state)
{
	struct daemon d;
	ooo_session *s[10];
	struct stat sb;
	char pidfile[128];
	int st;

	daemon_start(&d, NULL);
	for (int i = 0; i < 10; i++) {
		s[i] = ooo_open(d.sock);
		assert_non_null(s[i]);
	}
	kill(d.pid, SIGTERM);
	st = daemon_wait(&d, 10000);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	for (int i = 0; i < 10; i++) {
		int r = ooo_ping(s[i]);
		if (r != -OOO_ESHUTDOWN && r != -OOO_ECLOSED)
			fail_msg("ping after shutdown returned %d (%s)", r, ooo_strerror(r));
		ooo_close(s[i]);
	}
	/* at least the first session read the notice */
	assert_int_equal(stat(d.sock, &sb), -1);
	assert_int_equal(stat(d.admin, &sb), -1);
	snprintf(pidfile, sizeof(pidfile), "%s/oood.pid", d.dir);
	assert_int_equal(stat(pidfile, &sb), -1);
	assert_null(ooo_open(d.sock));
	assert_int_equal(errno, ENOENT);
	daemon_stop(&d);
}

static void test_shutdown_notice(void **state)
{
	struct daemon d;
	ooo_session *s;
	int st, r;

	daemon_start(&d, NULL);
	s = ooo_open(d.sock);
	assert_non_null(s);
	kill(d.pid, SIGTERM);
	st = daemon_wait(&d, 10000);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	r = ooo_ping(s);
	assert_int_equal(r, -OOO_ESHUTDOWN);
	assert_non_null(strstr(ooo_last_error(), "shutting down"));
	/* a local failure has its own reason; a later call on the ended session gives the session's again */
	assert_int_equal(ooo_buf_alloc(s, 0, 0, NULL), -EINVAL);
	assert_null(strstr(ooo_last_error(), "shutting down"));
	assert_int_equal(ooo_ping(s), -OOO_ESHUTDOWN);
	assert_non_null(strstr(ooo_last_error(), "shutting down"));
	ooo_close(s);
	daemon_stop(&d);
}

static int run_cmd(char *out, size_t cap, const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	FILE *p;
	size_t n = 0;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	assert_non_null(p);
	if (out) {
		n = fread(out, 1, cap - 1, p);
		out[n] = '\0';
	} else {
		char sink[4096];
		while (fread(sink, 1, sizeof(sink), p) > 0)
			;
	}
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* An unprivileged oood that cannot make its run directory says to give --rundir. */
static void test_unprivileged_rundir_hint(void **state)
{
	char oood[256], bin[] = "/tmp/ooo-hint-bin-XXXXXX", dir[] = "/tmp/ooo-hint-run-XXXXXX", exe[320], out[4096];
	uid_t uid;
	gid_t gid;

	if (!have_nobody(&uid, &gid) || system("command -v setpriv >/dev/null 2>&1") != 0) {
		skip();
		return;
	}
	bin_path(oood, sizeof(oood), "oood");
	/* a copy nobody may run: the checkout may be in a directory only root can read */
	assert_non_null(mkdtemp(bin));
	assert_int_equal(chmod(bin, 0755), 0);
	snprintf(exe, sizeof(exe), "%s/oood", bin);
	assert_int_equal(run_cmd(NULL, 0, "cp %s %s && chmod 755 %s", oood, exe, exe), 0);
	/* root's own 0700 directory: nobody cannot make the run directory in it */
	assert_non_null(mkdtemp(dir));
	assert_int_equal(run_cmd(out, sizeof(out), "setpriv --reuid=%u --regid=%u --clear-groups %s -f --rundir %s/run 2>&1",
				 (unsigned)uid, (unsigned)gid, exe, dir),
			 1);
	assert_non_null(strstr(out, "cannot create run directory"));
	assert_non_null(strstr(out, "--rundir DIR"));
	assert_int_equal(run_cmd(NULL, 0, "rm -rf %s %s", bin, dir), 0);
}

static void test_second_instance_and_check(void **state)
{
	char oood[256], out[4096], bad[160];

	bin_path(oood, sizeof(oood), "oood");
	/* a second daemon on the same run directory refuses and leaves the first alone */
	assert_int_equal(run_cmd(out, sizeof(out), "%s -f --rundir %s 2>&1", oood, shared.dir), 1);
	assert_non_null(strstr(out, "another oood"));
	assert_true(daemon_answers(&shared));
	/* -n checks a configuration */
	assert_int_equal(run_cmd(out, sizeof(out), "%s -n -c %s 2>&1", oood, shared.conf), 0);
	assert_non_null(strstr(out, "OK (1 class"));
	snprintf(bad, sizeof(bad), "%s/bad.conf", shared.dir);
	write_file(bad, "[daemon]\nmax_sessions = 5\n[class x]\nmatch_uid = *\npriority = 500\n");
	assert_int_equal(run_cmd(out, sizeof(out), "%s -n -c %s 2>&1", oood, bad), 1);
	assert_non_null(strstr(out, "bad.conf:5: "));
	assert_non_null(strstr(out, "priority"));
	unlink(bad);
	assert_int_equal(run_cmd(out, sizeof(out), "%s -n -c /nonexistent.conf 2>&1", oood), 1);
	assert_int_equal(run_cmd(out, sizeof(out), "%s --bogus 2>&1", oood), 2);
	assert_int_equal(run_cmd(out, sizeof(out), "%s --help", oood), 0);
	assert_non_null(strstr(out, "--rundir"));
}

/*
 * line is one compact JSON value: brackets balance outside strings and close
 * only at its end. (The pretty-printed form spreads an object over lines.)
 */
static void assert_json_line(const char *line)
{
	int depth = 0;
	bool in_str = false;

	assert_true(line[0] == '{');
	for (const char *p = line; *p; p++) {
		if (in_str) {
			if (*p == '\\')
				p++;
			else if (*p == '"')
				in_str = false;
			continue;
		}
		if (*p == '"')
			in_str = true;
		else if (*p == '{' || *p == '[')
			depth++;
		else if (*p == '}' || *p == ']')
			depth--;
		if (depth == 0 && p[1])
			fail_msg("JSON value ends before its line does: %s", line);
		if (depth < 0 || *p == ' ')
			fail_msg("not a compact JSON line: %s", line);
	}
	assert_int_equal(depth, 0);
}

/* The other tools: one style of --version and of usage errors (ooo-run keeps 64: its status is COMMAND's). */
static void test_tool_conventions(void **state)
{
	static const struct {
		const char *name, *args;
		int rc;
		const char *msg;
	} bad[] = {
		{ "ooo-run", "--bogus", 64, "ooo-run: unknown option '--bogus'\nTry 'ooo-run --help'.\n" },
		{ "ooo-run", "", 64, "ooo-run: no command given\nTry 'ooo-run --help'.\n" },
		{ "ooo-run", "--sm 0 -- true", 64, "ooo-run: --sm must be a percentage 1..100, got '0'\nTry 'ooo-run --help'.\n" },
		{ "ooo-bench", "", 2, "ooo-bench: no workload given\nTry 'ooo-bench --help'.\n" },
		{ "ooo-bench", "--bogus", 2, "ooo-bench: unknown option '--bogus'\nTry 'ooo-bench --help'.\n" },
		{ "ooo-bench", "ping --seconds 1x", 2,
		  "ooo-bench: --seconds wants a time from 0.001 to 86400, not '1x'\nTry 'ooo-bench ping --help'.\n" },
		{ "ooo-jit", "", 2, "ooo-jit: no command given\nTry 'ooo-jit --help'.\n" },
		{ "ooo-jit", "--bogus", 2, "ooo-jit: unknown option '--bogus'\nTry 'ooo-jit --help'.\n" },
		{ "ooo-jit", "inspect --bogus", 2,
		  "ooo-jit: bad option '--bogus' (unknown, or without its argument)\nTry 'ooo-jit --help'.\n" },
		{ "ooo-jit", "bench --iters 5x x.ptx:k", 2, "ooo-jit: bench: --iters wants 1..100000, not '5x'\nTry 'ooo-jit --help'.\n" },
	};
	static const char *const tools[] = { "oooctl", "ooo-run", "ooo-bench", "ooo-jit" };
	char bin[256], out[4096], want[128];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bin_path(bin, sizeof(bin), bad[i].name);
		if (run_cmd(out, sizeof(out), "%s %s 2>&1", bin, bad[i].args) != bad[i].rc)
			fail_msg("%s %s: not exit %d: %s", bad[i].name, bad[i].args, bad[i].rc, out);
		assert_string_equal(out, bad[i].msg);
	}
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		bin_path(bin, sizeof(bin), tools[i]);
		assert_int_equal(run_cmd(out, sizeof(out), "%s --version", bin), 0);
		snprintf(want, sizeof(want), "%s %s (git ", tools[i], OOO_VERSION_STRING);
		if (strncmp(out, want, strlen(want)) || !strstr(out, ")\n"))
			fail_msg("%s --version: '%s', not '%s REV)'", tools[i], out, want);
		/* every --help documents the exit status */
		assert_int_equal(run_cmd(out, sizeof(out), "%s --help", bin), 0);
		if (!strstr(out, "xit status"))
			fail_msg("%s --help says nothing of its exit status", tools[i]);
	}
}

static void test_oooctl(void **state)
{
	char ctl[256], out[65536];
	ooo_session *s = ooo_open_opts(
		&(struct ooo_open_opts){ .sz = sizeof(struct ooo_open_opts), .path = shared.sock, .name = "ctltest" });

	assert_non_null(s);
	bin_path(ctl, sizeof(ctl), "oooctl");
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s status", ctl, shared.dir), 0);
	assert_non_null(strstr(out, shared.conf));
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s --json status", ctl, shared.dir), 0);
	assert_true(out[0] == '{');
	assert_non_null(strstr(out, "\"sessions\": 1") ? strstr(out, "\"sessions\": 1") : strstr(out, "\"sessions\":1"));
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s sessions", ctl, shared.dir), 0);
	assert_non_null(strstr(out, "ctltest"));
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s --json tenants", ctl, shared.dir), 0);
	assert_non_null(strstr(out, "\"default\""));
	assert_int_equal(run_cmd(out, sizeof(out), "%s config check %s", ctl, shared.conf), 0);
	assert_int_equal(run_cmd(out, sizeof(out), "%s config check /nonexistent.conf 2>&1", ctl), 1);
	{
		/* a valid file with an obsolete key: OK, and the warning said (on stderr) */
		char old[sizeof(shared.dir) + 32];
		FILE *f;

		snprintf(old, sizeof(old), "%s/old.conf", shared.dir);
		f = fopen(old, "we");
		assert_non_null(f);
		fputs("[daemon]\nexecutor_user = nobody\n", f);
		fclose(f);
		assert_int_equal(run_cmd(out, sizeof(out), "%s config check %s 2>&1", ctl, old), 0);
		assert_non_null(strstr(out, "executor_user is no longer used"));
		assert_non_null(strstr(out, ": OK ("));
		unlink(old);
	}
	{
		/* no FILE: what oood loads without -c, checked and named as oood -n does */
		char oood[256], want[4096];
		int rc;

		bin_path(oood, sizeof(oood), "oood");
		rc = run_cmd(want, sizeof(want), "%s -n 2>&1", oood);
		assert_int_equal(run_cmd(out, sizeof(out), "%s config check 2>&1", ctl), rc);
		assert_string_equal(out, want);
		assert_true(!strncmp(out, "/etc/ooo/oood.conf", 18) || !strncmp(out, "(embedded defaults): OK (", 25));
		/* --json config default: the embedded policy as JSON, not its INI text */
		assert_int_equal(run_cmd(out, sizeof(out), "%s --json config default", ctl), 0);
		assert_true(out[0] == '{');
		assert_non_null(strstr(out, "\"embedded_default\": true"));
		assert_non_null(strstr(out, "\"classes\": ["));
		assert_null(strstr(out, "[daemon]"));
		assert_int_equal(run_cmd(out, sizeof(out), "%s config default", ctl), 0);
		assert_non_null(strstr(out, "[daemon]"));
	}
	{
		/* --json top: JSON Lines, one compact object per refresh */
		char *line, *save = NULL;
		int lines = 0;

		assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s --json top -c 3 -i 100", ctl, shared.dir), 0);
		for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			assert_json_line(line);
			assert_non_null(strstr(line, "\"procs\":["));
			lines++;
		}
		assert_int_equal(lines, 3);
		/* where python3 is, each line parses as JSON on its own */
		if (run_cmd(NULL, 0, "command -v python3 >/dev/null 2>&1") == 0)
			assert_int_equal(run_cmd(out, sizeof(out),
						 "%s --rundir %s --json top -c 2 -i 100 | python3 -c 'import json, sys\n"
						 "n = sum(1 for l in sys.stdin if json.loads(l) is not None)\n"
						 "sys.exit(0 if n == 2 else 1)' 2>&1",
						 ctl, shared.dir),
					 0);
	}
	/* usage errors: exit 2, what was wrong, and where to look */
	assert_int_equal(run_cmd(out, sizeof(out), "%s 2>&1", ctl), 2);
	assert_string_equal(out, "oooctl: no command given\nTry 'oooctl --help'.\n");
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s status --bogus 2>&1", ctl, shared.dir), 2);
	assert_string_equal(out, "oooctl: unknown option '--bogus'\nTry 'oooctl status --help'.\n");
	assert_int_equal(run_cmd(out, sizeof(out), "%s --timeout 5x status 2>&1", ctl), 2);
	assert_non_null(strstr(out, "oooctl: --timeout wants milliseconds"));
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s top -i 99 2>&1", ctl, shared.dir), 2);
	assert_non_null(strstr(out, "Try 'oooctl top --help'."));
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir /tmp/ooo-test-nothing-here status 2>&1", ctl), 3);
	assert_non_null(strstr(out, "not running"));
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s nosuchcommand 2>&1", ctl, shared.dir), 2);
	assert_int_equal(run_cmd(out, sizeof(out), "%s --help", ctl), 0);
	{
		uid_t uid;
		gid_t gid;
		if (have_nobody(&uid, &gid)) {
			assert_int_equal(run_cmd(out, sizeof(out), "setpriv --reuid=%u --regid=%u --clear-groups "
							      "%s --rundir %s status 2>&1",
						 uid, gid, ctl, shared.dir),
					 4);
			assert_non_null(strstr(out, "ermission denied"));
		}
	}
	ooo_close(s);
	wait_sessions(&shared, 0);
}

/* OOO_MSG_SCHED and `oooctl sched` without a GPU: one record per GPU slot, no counters, and why. */
/* A class with binary_modules = no: a CUBIN or FATBIN load is refused with EPERM, the session goes on. */
static void send_module_load(int fd, uint32_t seq, uint32_t kind, int img)
{
	unsigned char m[128];
	struct ooo_msg_module_load ml = { .kind = kind, .len = 16 };
	ssize_t n = wire_encode(m, sizeof(m), OOO_MSG_MODULE_LOAD, seq, 0, &ml, sizeof(ml));
	struct iovec iov = { m, (size_t)n };
	union {
		struct cmsghdr c;
		char b[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	assert_true(n > 0);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &img, sizeof(int));
	assert_int_equal(sendmsg(fd, &mh, MSG_NOSIGNAL), n);
}

static void expect_reply(int fd, uint32_t seq, int status, const char *text)
{
	static unsigned char rb[OOO_MSG_MAX];
	struct wire_msg m;
	ssize_t n = raw_recv(fd, rb, sizeof(rb), 5000);

	assert_true(n > 0);
	assert_int_equal(wire_decode(rb, (size_t)n, WIRE_TO_PEER, &m, NULL), 0);
	assert_int_equal(m.hdr.seq, seq);
	assert_int_equal(m.hdr.status, status);
	if (text && !strstr(((const struct ooo_msg_error *)m.payload)->msg, text))
		fail_msg("error '%s' does not mention '%s'", ((const struct ooo_msg_error *)m.payload)->msg, text);
}

static void test_binary_modules_refused(void **state)
{
	struct daemon d;
	unsigned char rb[OOO_MSG_MAX];
	int img = open("/dev/null", O_RDONLY | O_CLOEXEC), fd, before;

	(void)state;
	assert_true(img >= 0);
	daemon_start(&d, "[daemon]\nexecutor = no\n[class ptxonly]\nmatch_uid = *\nbinary_modules = no\n");
	before = settled_fds(d.pid);
	fd = raw_connect(d.sock);
	raw_hello(fd);
	assert_true(raw_recv(fd, rb, sizeof(rb), 5000) > 0);
	send_module_load(fd, 2, OOO_MODULE_CUBIN, img);
	expect_reply(fd, 2, -EPERM, "binary_modules = no");
	send_module_load(fd, 3, OOO_MODULE_FATBIN, img);
	expect_reply(fd, 3, -EPERM, "class 'ptxonly' may not load CUBIN or FATBIN");
	/* PTX passes the class's check (and then needs an attached session: no GPU here) */
	send_module_load(fd, 4, OOO_MODULE_PTX, img);
	{
		struct wire_msg m;
		ssize_t n = raw_recv(fd, rb, sizeof(rb), 5000);

		assert_true(n > 0);
		assert_int_equal(wire_decode(rb, (size_t)n, WIRE_TO_PEER, &m, NULL), 0);
		assert_int_equal(m.hdr.seq, 4);
		assert_true(m.hdr.status < 0);
		assert_int_not_equal(m.hdr.status, -EPERM);
	}
	/* the session is still served, and the refused images were closed */
	raw_send(fd, OOO_MSG_PING, 5, "x", 1);
	expect_reply(fd, 5, 0, NULL);
	close(fd);
	close(img);
	wait_sessions(&d, 0);
	assert_int_equal(settled_fds(d.pid), before);
	daemon_stop(&d);
}

static void test_sched_without_gpu(void **state)
{
	struct daemon d;
	struct ooo_msg_list_req req = { 0 };
	struct ooo_sched_rec rec, zero;
	struct ooo_msg_list l;
	char ctl[256], out[65536];
	unsigned char buf[OOO_MSG_MAX];
	uint64_t deadline;
	ooo_session *a;
	int fd, n;

	bin_path(ctl, sizeof(ctl), "oooctl");
	daemon_start(&d, "[daemon]\nlibcuda = /nonexistent/libcuda.so.1\n[class default]\nmatch_uid = *\n");
	a = ooo_admin_open(d.admin, 5000);
	assert_non_null(a);
	/* until the executor has exited the slot may say starting; never any counters */
	deadline = now_ms() + 10000;
	for (;;) {
		n = ooo_admin_call(a, OOO_MSG_SCHED, &req, sizeof(req), buf, sizeof(buf));
		assert_int_equal(n, sizeof(l) + sizeof(rec));
		memcpy(&l, buf, sizeof(l));
		memcpy(&rec, buf + sizeof(l), sizeof(rec));
		assert_int_equal(l.total, 1);
		assert_int_equal(l.offset, 0);
		assert_int_equal(l.count, 1);
		assert_int_equal(l.rec_size, sizeof(rec));
		assert_int_equal(rec.index, 0);
		assert_int_equal(rec.have, 0);
		assert_int_equal(rec.age_ns, 0);
		memset(&zero, 0, sizeof(zero));
		assert_memory_equal(&rec.c, &zero.c, sizeof(rec.c));
		if (rec.state == OOO_DEV_FAILED || now_ms() > deadline)
			break;
		sleep_ms(20);
	}
	assert_int_equal(rec.state, OOO_DEV_FAILED);
	/* paged like the other lists: past the end, an empty page with the total */
	req.offset = 1;
	n = ooo_admin_call(a, OOO_MSG_SCHED, &req, sizeof(req), buf, sizeof(buf));
	assert_int_equal(n, sizeof(l));
	memcpy(&l, buf, sizeof(l));
	assert_int_equal(l.total, 1);
	assert_int_equal(l.count, 0);
	req.offset = 1000;
	n = ooo_admin_call(a, OOO_MSG_SCHED, &req, sizeof(req), buf, sizeof(buf));
	assert_int_equal(n, sizeof(l));
	ooo_close(a);
	/* an admin request: refused on the tenant socket */
	fd = raw_connect(d.sock);
	raw_hello(fd);
	assert_true(raw_recv(fd, buf, sizeof(buf), 5000) > 0);
	req.offset = 0;
	raw_send(fd, OOO_MSG_SCHED, 2, &req, sizeof(req));
	{
		struct wire_msg m;
		ssize_t r = raw_recv(fd, buf, sizeof(buf), 5000);
		assert_true(r > 0);
		assert_int_equal(wire_decode(buf, (size_t)r, WIRE_TO_PEER, &m, NULL), 0);
		assert_int_equal(m.hdr.status, -OOO_ENOTADMIN);
		assert_int_equal(m.hdr.seq, 2);
	}
	close(fd);

	/* oooctl: JSON, one snapshot */
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s sched --json --interval 0", ctl, d.dir), 0);
	assert_true(out[0] == '{');
	assert_non_null(strstr(out, "\"interval_ms\": 0"));
	assert_non_null(strstr(out, "\"index\": 0"));
	assert_non_null(strstr(out, "\"state\": \"failed\""));
	assert_non_null(strstr(out, "\"have_counters\": false"));
	assert_non_null(strstr(out, "no executor runs (failed: "));
	assert_non_null(strstr(out, "\"cumulative\": null"));
	/* the global --json, and the default interval: without counters there is nothing to wait for */
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s --json sched", ctl, d.dir), 0);
	assert_non_null(strstr(out, "\"interval_ms\": 1000"));
	assert_non_null(strstr(out, "\"have_counters\": false"));
	/* text */
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s sched -i 0 --device 0", ctl, d.dir), 0);
	assert_non_null(strstr(out, "gpu 0 (spare): no scheduler counters: no executor runs (failed: "));
	assert_non_null(strstr(out, "libcuda"));
	/* errors */
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s sched --device 3 2>&1", ctl, d.dir), 1);
	assert_non_null(strstr(out, "no GPU 3"));
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s sched --interval x 2>&1", ctl, d.dir), 2);
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s sched extra 2>&1", ctl, d.dir), 2);
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s status --interval 5 2>&1", ctl, d.dir), 2);
	assert_int_equal(run_cmd(out, sizeof(out), "%s sched --help", ctl), 0);
	assert_non_null(strstr(out, "--interval"));
	assert_int_equal(run_cmd(out, sizeof(out), "%s --help", ctl), 0);
	assert_non_null(strstr(out, "sched"));
	daemon_stop(&d);
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s sched -i 0 2>&1", ctl, d.dir), 3);

	/* no executors at all: an empty list */
	daemon_start(&d, "[daemon]\nexecutor = no\n[class default]\nmatch_uid = *\n");
	a = ooo_admin_open(d.admin, 5000);
	assert_non_null(a);
	req.offset = 0;
	n = ooo_admin_call(a, OOO_MSG_SCHED, &req, sizeof(req), buf, sizeof(buf));
	assert_int_equal(n, sizeof(l));
	memcpy(&l, buf, sizeof(l));
	assert_int_equal(l.total, 0);
	assert_int_equal(l.rec_size, sizeof(struct ooo_sched_rec));
	ooo_close(a);
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s sched", ctl, d.dir), 0);
	assert_non_null(strstr(out, "no GPU executors"));
	assert_int_equal(run_cmd(out, sizeof(out), "%s --rundir %s --json sched", ctl, d.dir), 0);
	assert_non_null(strstr(out, "\"gpus\": []"));
	daemon_stop(&d);
}

int main(void)
{
	const struct CMUnitTest shared_tests[] = {
		cmocka_unit_test(test_ping_and_status),
		cmocka_unit_test(test_env_socket_and_errors),
		cmocka_unit_test(test_no_daemon_names_socket),
		cmocka_unit_test(test_hundred_concurrent_sessions),
		cmocka_unit_test(test_one_session_many_threads),
		cmocka_unit_test(test_disconnect_mid_message),
		cmocka_unit_test(test_garbage_and_truncation),
		cmocka_unit_test(test_protocol_violations),
		cmocka_unit_test(test_passed_fds_are_closed),
		cmocka_unit_test(test_hello_timeout),
		cmocka_unit_test(test_second_instance_and_check),
		cmocka_unit_test(test_oooctl),
		cmocka_unit_test(test_tool_conventions),
	};
	const struct CMUnitTest own_tests[] = {
		cmocka_unit_test(test_unauthorized_uid),
		cmocka_unit_test(test_unprivileged_rundir_hint),
		cmocka_unit_test(test_session_limit_and_reclaim),
		cmocka_unit_test(test_pending_one_uid),
		cmocka_unit_test(test_pending_fair_share),
		cmocka_unit_test(test_sighup_reload),
		cmocka_unit_test(test_revoked_peer_that_never_reads),
		cmocka_unit_test(test_no_gpu_reported),
		cmocka_unit_test(test_sched_without_gpu),
		cmocka_unit_test(test_binary_modules_refused),
		cmocka_unit_test(test_local_failure_reason),
		cmocka_unit_test(test_sigterm_with_sessions),
		cmocka_unit_test(test_shutdown_notice),
	};
	int r;

	signal(SIGPIPE, SIG_IGN);
	r = cmocka_run_group_tests_name("shared daemon", shared_tests, setup_shared, teardown_shared);
	return r | cmocka_run_group_tests_name("own daemons", own_tests, NULL, NULL);
}
