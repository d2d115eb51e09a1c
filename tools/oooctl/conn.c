/* SPDX-License-Identifier: MIT */
/* oooctl's admin connection to oood, and what its failures mean. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../json.h"
#include "../common/admin_list.h"
#include "oooctl.h"

/*
 * Describe a failed libooo call (err negative: -errno or -OOO_E*) in buf and
 * return the exit code for it. The daemon's reason, if any, is in `reason`.
 */
int describe(int err, char *buf, size_t cap)
{
	int e = err < 0 ? -err : err;
	const char *sep = reason[0] ? ": " : "";

	switch (e) {
	case ENOENT:
	case ENOTDIR:
		snprintf(buf, cap, "oood is not running (no socket at %s)", admin_path);
		return RC_DOWN;
	case ECONNREFUSED:
		snprintf(buf, cap, "oood is not running (nothing listens on %s)", admin_path);
		return RC_DOWN;
	case EACCES:
	case EPERM:
	case OOO_ENOTADMIN:
		snprintf(buf, cap, "permission denied: %s is for root and the admin group%s%s", admin_path, sep,
			 reason);
		return RC_PERM;
	case ETIMEDOUT:
	case EAGAIN:
		snprintf(buf, cap, "timed out: oood did not answer on %s within %d ms (see --timeout)", admin_path,
			 opt_timeout_ms);
		return RC_PROTO;
	case OOO_EPROTO:
	case OOO_EVERSION:
	case EMSGSIZE:
	case EPROTO:
		snprintf(buf, cap, "protocol error talking to oood on %s: %s%s%s", admin_path, ooo_strerror(e), sep,
			 reason);
		return RC_PROTO;
	case OOO_ECLOSED:
	case OOO_ESHUTDOWN:
	case ECONNRESET:
	case EPIPE:
		snprintf(buf, cap, "oood is unreachable on %s: %s%s%s", admin_path, ooo_strerror(e), sep, reason);
		return RC_DOWN;
	case ENAMETOOLONG:
		snprintf(buf, cap, "socket path too long: %s", admin_path);
		return RC_USAGE;
	default:
		/* What the daemon refused: its own words are the useful part. */
		if (reason[0])
			snprintf(buf, cap, "%s", reason);
		else
			snprintf(buf, cap, "%s", ooo_strerror(e));
		return RC_FAIL;
	}
}

/* Print a failure of `what` on stderr; returns the exit code. */
int report(const char *what, int err)
{
	char buf[1024];
	int rc = describe(err, buf, sizeof(buf));

	if (rc == RC_FAIL && what)
		err_msg("%s failed: %s", what, buf);
	else
		err_msg("%s", buf);
	if (rc == RC_DOWN && (-err == ENOENT || -err == ECONNREFUSED || -err == ENOTDIR))
		fprintf(stderr, "oooctl: if oood runs with another run directory, pass --rundir DIR or set OOO_RUNDIR\n");
	return rc;
}

void take_reason(void)
{
	snprintf(reason, sizeof(reason), "%s", ooo_last_error());
}

ooo_session *admin_open_quiet(int *err)
{
	ooo_session *s;

	reason[0] = 0;
	s = ooo_admin_open(admin_path, opt_timeout_ms);
	if (!s) {
		*err = -errno;
		take_reason();
	}
	return s;
}

/* Open the admin session or report why not; *rc gets the exit code. */
ooo_session *admin_open(int *rc)
{
	ooo_session *s;
	int err;

	s = admin_open_quiet(&err);
	if (!s)
		*rc = report(NULL, err);
	return s;
}

int admin_call(ooo_session *s, uint16_t type, const void *req, size_t req_len, void *reply, size_t cap)
{
	int r;

	reason[0] = 0;
	r = ooo_admin_call(s, type, req, req_len, reply, cap);
	if (r < 0)
		take_reason();
	return r;
}

int get_status(ooo_session *s, struct ooo_msg_status *st)
{
	int r = admin_call(s, OOO_MSG_STATUS, NULL, 0, st, sizeof(*st));

	if (r >= 0 && (size_t)r != sizeof(*st)) {
		snprintf(reason, sizeof(reason), "status reply of %d bytes, expected %zu", r, sizeof(*st));
		return -OOO_EPROTO;
	}
	return r < 0 ? r : 0;
}

/* Every page of a list (admin_list_fetch); the reason of a failure in `reason`. */
int fetch_list(ooo_session *s, uint16_t type, size_t rec_size, void **out, size_t *nout)
{
	int r;

	reason[0] = 0;
	r = admin_list_fetch(s, type, rec_size, out, nout, reason, sizeof(reason));
	if (r < 0 && !reason[0])
		take_reason(); /* the call's own: ooo_last_error() */
	return r;
}


/*
 * The common part of the list commands: no arguments, one admin session,
 * every page of the list. Returns RC_OK with a malloc'd array, or an exit code.
 */
int list_command(int argc, char **argv, uint16_t type, size_t rec_size, const char *what, void **out,
			size_t *n)
{
	ooo_session *s;
	int rc, r;

	if ((rc = no_args(argc, argv)))
		return rc;
	if (!(s = admin_open(&rc)))
		return rc;
	r = fetch_list(s, type, rec_size, out, n);
	ooo_close(s);
	return r < 0 ? report(what, r) : RC_OK;
}

