/* SPDX-License-Identifier: MIT */
/* SCM_RIGHTS descriptor passing (see fdpass.h). */
#include "fdpass.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int fdpass_pack(struct msghdr *mh, void *ctl, size_t cap, const int *fds, int nfds)
{
	struct cmsghdr *cm;

	if (nfds < 0 || nfds > FDPASS_MAX || (nfds && cap < FDPASS_SPACE((size_t)nfds)))
		return -EINVAL;
	if (!nfds) {
		mh->msg_control = NULL;
		mh->msg_controllen = 0;
		return 0;
	}
	memset(ctl, 0, FDPASS_SPACE((size_t)nfds));
	mh->msg_control = ctl;
	mh->msg_controllen = FDPASS_SPACE((size_t)nfds);
	cm = CMSG_FIRSTHDR(mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	return 0;
}

unsigned fdpass_take(struct msghdr *mh, int *fds, unsigned keep)
{
	unsigned n = 0;

	for (unsigned i = 0; i < keep; i++)
		fds[i] = -1;
	if (!mh->msg_control || mh->msg_controllen < sizeof(struct cmsghdr))
		return 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len < CMSG_LEN(0))
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int f;

			memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (f < 0)
				continue;
			if (n < keep)
				fds[n] = f;
			else
				close(f);
			n++;
		}
	}
	return n;
}
