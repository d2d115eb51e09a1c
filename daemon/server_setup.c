/* SPDX-License-Identifier: MIT */
/*
 * The loop's own resources, made once at start: the run directory and its
 * lock, the signalfd, the ring and the two listening sockets.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "../proto/wire.h"
#include "log.h"
#include "server.h"

static int mkdir_p(const char *dir, mode_t mode)
{
	char buf[OOO_PATH_MAX];
	struct stat st;

	wire_strcpy(buf, sizeof(buf), dir);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	if (stat(buf, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

static int take_lock(struct server *srv)
{
	char path[OOO_PATH_MAX], pid[32];
	int fd, n;

	n = snprintf(path, sizeof(path), "%s/oood.pid", srv->rundir);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return log_errno(LOG_ERR, -errno, "cannot open %s", path);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		ssize_t k = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[k > 0 ? k : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		close(fd);
		if (e == EWOULDBLOCK) {
			log_err("another oood (pid %s) is running on %s", pid[0] ? pid : "?", srv->rundir);
			return -EADDRINUSE;
		}
		return log_errno(LOG_ERR, -e, "cannot lock %s", path);
	}
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n)
		log_warn("cannot write %s: %s, ignoring", path, strerror(errno));
	srv->lock_fd = fd;
	return 0;
}

static int make_listener(struct server *srv, int i, const char *name, mode_t mode)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old;
	int fd, n, r;

	n = snprintf(srv->sock_path[i], sizeof(srv->sock_path[i]), "%s/%s", srv->rundir, name);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path)) {
		log_err("socket path %s/%s is too long", srv->rundir, name);
		srv->sock_path[i][0] = '\0';
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, srv->sock_path[i], (size_t)n + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return log_errno(LOG_ERR, -errno, "socket");
	/* We hold the run directory's lock, so a socket file left here is stale. */
	unlink(sa.sun_path);
	old = umask(0177); /* never reachable with looser permissions than `mode` */
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0) {
		r = log_errno(LOG_ERR, -errno, "cannot bind %s", sa.sun_path);
		close(fd);
		srv->sock_path[i][0] = '\0';
		return r;
	}
	if (chmod(sa.sun_path, mode) < 0 || listen(fd, 4096) < 0) {
		r = log_errno(LOG_ERR, -errno, "cannot set up %s", sa.sun_path);
		close(fd);
		return r;
	}
	srv->listen_fd[i] = fd;
	return 0;
}

static int setup_ring(struct server *srv)
{
	struct io_uring_params p;
	int r;

	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN |
		  IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	p.cq_entries = 16384;
	r = io_uring_queue_init_params(1024, &srv->ring, &p);
	if (r == -EINVAL) {
		/* older kernels: plain ring */
		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_CQSIZE;
		p.cq_entries = 16384;
		r = io_uring_queue_init_params(1024, &srv->ring, &p);
	}
	if (r < 0)
		return log_errno(LOG_ERR, r, "io_uring_queue_init");
	srv->ring_ok = true;
	return 0;
}

static int setup_signals(struct server *srv)
{
	sigset_t mask;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return log_errno(LOG_ERR, -errno, "sigprocmask");
	srv->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (srv->sig_fd < 0)
		return log_errno(LOG_ERR, -errno, "signalfd");
	return 0;
}

int server_setup(struct server *srv)
{
	int r = mkdir_p(srv->rundir, 0755);

	if (r < 0) {
		if ((r == -EACCES || r == -EPERM) && geteuid() != 0)
			return log_errno(LOG_ERR, r,
					 "cannot create run directory %s (oood runs as root; as another user, give it "
					 "--rundir DIR)",
					 srv->rundir);
		return log_errno(LOG_ERR, r, "cannot create run directory %s", srv->rundir);
	}
	r = take_lock(srv);
	if (r < 0)
		return r;
	r = setup_signals(srv);
	if (r < 0)
		return r;
	r = setup_ring(srv);
	if (r < 0)
		return r;
	r = make_listener(srv, 0, OOO_SOCKET_NAME, 0666);
	if (r < 0)
		return r;
	return make_listener(srv, 1, OOO_ADMIN_SOCKET_NAME, 0660);
}
