/* SPDX-License-Identifier: MIT */
/* The systemd watchdog and STATUS= lines, from the loop's tick (see watchdog.h). */
#include "watchdog.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executors/gpu.h"
#include "log.h"
#include "notify.h"
#include "server.h"

#define STATUS_MIN_NS 1000000000ull /* a changed STATUS= line waits this long after the last one */

/* ---- the module ------------------------------------------------------------------------------ */

struct notifier {
	uint64_t wd_every_ns; /* WATCHDOG=1 at least this often; 0: no watchdog */
	uint64_t wd_last_ns;  /* when the last WATCHDOG=1 went (0: none yet) */
	uint64_t status_last_ns;
	char status[256];     /* the last STATUS= line sent, without "STATUS=" */
	bool failing;         /* the last send failed (logged when it started) */
};

static void send_state(struct notifier *nt, const char *state)
{
	int r = notify_send(state);

	if (r < 0 && !nt->failing)
		log_warn("cannot notify the service manager (%.20s...): %s; retrying quietly", state, strerror(-r));
	else if (r > 0 && nt->failing)
		log_info("notifying the service manager again");
	if (r != 0)
		nt->failing = r < 0;
}

static void status_text(const struct server *srv, char *buf, size_t cap)
{
	uint32_t known, ready;
	const char *why;

	if (srv->stopping) {
		snprintf(buf, cap, "stopping: %u sessions open", srv->reg.nsessions);
		return;
	}
	gpu_counts(srv, &known, &ready);
	why = ready ? "" : gpu_reason(srv);
	snprintf(buf, cap, "%u sessions, %u of %u GPUs ready%s%.120s%s, policy generation %" PRIu64,
		 srv->reg.nsessions, ready, known, why[0] ? " (" : "", why, why[0] ? ")" : "",
		 srv->policy_generation);
}

/* Send the STATUS= line if it changed: at once when `now`, else STATUS_MIN_NS after the last one. */
static void send_status(struct server *srv, uint64_t now_ns, bool now)
{
	struct notifier *nt = srv->notifier;
	char text[sizeof(nt->status)], msg[sizeof(nt->status) + 8];

	status_text(srv, text, sizeof(text));
	if (!strcmp(text, nt->status) || (!now && now_ns < nt->status_last_ns + STATUS_MIN_NS))
		return;
	memcpy(nt->status, text, sizeof(text));
	nt->status_last_ns = now_ns;
	snprintf(msg, sizeof(msg), "STATUS=%s", text);
	send_state(nt, msg);
}

static int notify_init(struct server *srv)
{
	const char *usec = getenv("WATCHDOG_USEC");
	struct notifier *nt;
	uint64_t u = 0;
	int r;

	nt = calloc(1, sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	srv->notifier = nt;
	r = notify_watchdog_parse(usec, getenv("WATCHDOG_PID"), getpid(), &u);
	if (r < 0)
		log_warn("watchdog off: WATCHDOG_USEC=%.30s WATCHDOG_PID=%.30s do not parse", usec ? usec : "",
			 getenv("WATCHDOG_PID") ? getenv("WATCHDOG_PID") : "");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	if (r <= 0)
		return 0;
	nt->wd_every_ns = u * UINT64_C(1000) / 2;
	if (nt->wd_every_ns < SERVER_TICK_NS)
		log_warn("watchdog: WatchdogSec=%" PRIu64 " ms is less than two ticks (%llu ms): WATCHDOG=1 goes every tick",
			 u / 1000, SERVER_TICK_NS * 2 / 1000000ull);
	else
		log_info("watchdog: WATCHDOG=1 every %" PRIu64 " ms at most", nt->wd_every_ns / UINT64_C(1000000));
	return 0;
}

static void notify_tick(struct server *srv, uint64_t now_ns)
{
	struct notifier *nt = srv->notifier;

	/* the next tick may come SERVER_TICK_NS late: send on the last one before the half interval ends */
	if (nt->wd_every_ns && (!nt->wd_last_ns || now_ns + SERVER_TICK_NS >= nt->wd_last_ns + nt->wd_every_ns)) {
		nt->wd_last_ns = now_ns;
		send_state(nt, "WATCHDOG=1");
	}
	send_status(srv, now_ns, false);
}

static void notify_reload(struct server *srv)
{
	send_status(srv, server_now_ns(), true);
}

static void notify_stop(struct server *srv)
{
	send_status(srv, server_now_ns(), true);
}

static void notify_fini(struct server *srv)
{
	free(srv->notifier);
	srv->notifier = NULL;
}

const struct module watchdog_module = {
	.name = "notify",
	.init = notify_init,
	.tick = notify_tick,
	.reload = notify_reload,
	.stop = notify_stop,
	.fini = notify_fini,
};
