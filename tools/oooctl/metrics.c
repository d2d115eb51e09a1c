/* SPDX-License-Identifier: MIT */
/*
 * oooctl metrics: every counter and histogram in the Prometheus text format
 * 0.0.4, formatted by tools/common/prom.c from the admin replies fetched here.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../proto/prom.h"
#include "oooctl.h"

int do_metrics(int argc, char **argv)
{
	struct ooo_msg_status st;
	struct ooo_msg_telemetry t;
	struct ooo_tenant_rec *tn = NULL;
	struct ooo_sched_rec *sr = NULL;
	struct ooo_proc_rec *pr = NULL;
	struct prom_buf out = { 0 };
	size_t ntn = 0, nsr = 0, npr = 0;
	bool have_tm;
	ooo_session *s;
	int rc, r;

	if ((rc = no_args(argc, argv)))
		return rc;
	if (opt_json)
		return usage_error("metrics prints the Prometheus text format only");
	if (!(s = admin_open(&rc)))
		return rc;
	r = get_status(s, &st);
	if (r >= 0)
		r = fetch_list(s, OOO_MSG_TENANTS, sizeof(*tn), (void **)&tn, &ntn);
	if (r >= 0)
		r = fetch_list(s, OOO_MSG_SCHED, sizeof(*sr), (void **)&sr, &nsr);
	have_tm = r >= 0 && get_telemetry(s, &t) == 0;
	if (r >= 0 && have_tm && t.state == OOO_TM_RUNNING)
		r = fetch_list(s, OOO_MSG_PROCS, sizeof(*pr), (void **)&pr, &npr);
	ooo_close(s);
	if (r >= 0) {
		struct prom_input in = { .st = &st, .tn = tn, .ntn = ntn, .sr = sr, .nsr = nsr,
					 .tm = have_tm ? &t : NULL, .pr = pr, .npr = npr };

		prom_procs_unique(pr, &in.npr);
		prom_buf_init(&out, 0);
		r = prom_write(&out, &in);
	}
	free(tn);
	free(sr);
	free(pr);
	if (r < 0) {
		prom_buf_free(&out);
		return report("metrics", r);
	}
	fwrite(out.data, 1, out.len, stdout);
	prom_buf_free(&out);
	return RC_OK;
}


