/* SPDX-License-Identifier: MIT */
/* `oooctl cdi`'s spec (cdi_spec.h). */
#include <errno.h>
#include <stdio.h>

#include "../json.h"
#include "cdi_spec.h"

static void edits(const char *sock, const char *device)
{
	char env[4200];

	j_obj("containerEdits");
	j_arr("env");
	if (sock) {
		snprintf(env, sizeof(env), "OOO_SOCKET=%s", sock);
		j_str(NULL, env);
	}
	if (device) {
		snprintf(env, sizeof(env), "OOO_CDI_DEVICE=%s", device);
		j_str(NULL, env);
	}
	j_arr_end();
	if (sock) {
		j_arr("mounts");
		j_obj(NULL);
		j_str("hostPath", sock);
		j_str("containerPath", sock);
		j_arr("options");
		j_str(NULL, "bind");
		j_arr_end();
		j_obj_end();
		j_arr_end();
	}
	j_obj_end();
}

int cdi_write(FILE *f, const unsigned *gpus, size_t n, const char *sock)
{
	char name[32];

	j_set_output(f);
	j_set_compact(false);
	j_obj(NULL);
	j_str("cdiVersion", CDI_VERSION);
	j_str("kind", CDI_KIND);
	j_arr("devices");
	for (size_t i = 0; i <= n; i++) {
		if (i < n)
			snprintf(name, sizeof(name), "gpu%u", gpus[i]);
		else
			snprintf(name, sizeof(name), "all");
		j_obj(NULL);
		j_str("name", name);
		edits(NULL, name);
		j_obj_end();
	}
	j_arr_end();
	edits(sock, NULL);
	j_obj_end(); /* and the final newline */
	j_set_output(NULL);
	return fflush(f) || ferror(f) ? -EIO : 0;
}
