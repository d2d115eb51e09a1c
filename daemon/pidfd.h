/* SPDX-License-Identifier: MIT */
/* pidfd system calls (glibc 2.36 has wrappers, Debian 12's headers not all of them). */
#ifndef OOO_PIDFD_H
#define OOO_PIDFD_H

#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/* A pidfd of pid (close-on-exec, as every pidfd), or -1 with errno. */
static inline int sys_pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Signal the process the pidfd names (never a later holder of its pid); 0 or -1 with errno. */
static inline int sys_pidfd_signal(int fd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
}

#endif
