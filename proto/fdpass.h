/* SPDX-License-Identifier: MIT */
/*
 * Passing descriptors with a datagram (SCM_RIGHTS): the one implementation
 * that libooo, oood and the executors use on both sides of their sockets.
 * Pure apart from close(2) on descriptors it is told to drop; no I/O of its
 * own, so callers keep their own sendmsg/recvmsg (blocking, non-blocking or
 * io_uring).
 */
#ifndef OOO_PROTO_FDPASS_H
#define OOO_PROTO_FDPASS_H

#include <stddef.h>
#include <sys/socket.h>

#define FDPASS_MAX 4 /* descriptors one message sends */
/* Control buffer bytes for n descriptors; declare it as a union with struct cmsghdr for alignment. */
#define FDPASS_SPACE(n) CMSG_SPACE(sizeof(int) * (n))

/*
 * Attach nfds (0..FDPASS_MAX) descriptors to mh, using ctl (at least
 * FDPASS_SPACE(nfds) bytes, aligned for struct cmsghdr) as its control
 * data; with nfds == 0 mh gets none. The descriptors stay the caller's.
 * Returns 0, or -EINVAL for a bad count or a buffer too small.
 */
int fdpass_pack(struct msghdr *mh, void *ctl, size_t cap, const int *fds, int nfds);

/*
 * Take the descriptors a received message carried (mh as recvmsg left it):
 * the first `keep` go into fds[0..keep) in order (the rest of fds set to
 * -1), every other one is closed. Returns how many came, kept or not (a
 * count to refuse messages that carry descriptors where none belong).
 */
unsigned fdpass_take(struct msghdr *mh, int *fds, unsigned keep);

#endif
