/* SPDX-License-Identifier: MIT */
/* oooctl cdi: a CDI spec for oood's tenant socket (cdi_spec.c writes it). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cdi_spec.h"
#include "oooctl.h"

int do_cdi(int argc, char **argv)
{
	char sock[sizeof(admin_path)], tmp[4200];
	const char *output = NULL, *sock_opt = NULL;
	struct ooo_device_rec *d;
	unsigned *gpus;
	size_t n, ng = 0;
	FILE *f = stdout;
	int c, rc, r, fd;

	optind = 0;
	while ((c = cmd_getopt(argc, argv, "o:s:")) != -1) {
		if (c == 'o')
			output = optarg;
		else if (c == 's')
			sock_opt = optarg;
		else
			return RC_USAGE;
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (sock_opt) {
		if (sock_opt[0] != '/' || strlen(sock_opt) >= sizeof(sock))
			return usage_error("--socket wants an absolute path of at most %zu bytes", sizeof(sock) - 1);
		snprintf(sock, sizeof(sock), "%s", sock_opt);
	} else {
		/* admin_path is RUNDIR/admin.sock: the tenants' socket is its neighbour */
		const char *slash = strrchr(admin_path, '/');
		int dl = slash ? (int)(slash - admin_path) : 0;

		if (!slash || admin_path[0] != '/')
			return usage_error("the run directory must be absolute for a CDI spec: %s (or pass --socket)",
					   admin_path);
		if (snprintf(sock, sizeof(sock), "%.*s/%s", dl, admin_path, OOO_SOCKET_NAME) >= (int)sizeof(sock))
			return usage_error("socket path too long");
	}
	rc = list_command(1, argv, OOO_MSG_DEVICES, sizeof(*d), "devices", (void **)&d, &n);
	if (rc != RC_OK)
		return rc;
	gpus = xrealloc(NULL, (n ? n : 1) * sizeof(*gpus));
	for (size_t i = 0; i < n; i++) { /* executors of one GPU come together, in device order */
		bool seen = false;

		for (size_t k = 0; k < ng; k++)
			seen |= gpus[k] == d[i].device;
		if (!seen)
			gpus[ng++] = d[i].device;
	}
	for (size_t i = 1; i < ng; i++) /* ascending: few GPUs, insertion sort */
		for (size_t k = i; k > 0 && gpus[k - 1] > gpus[k]; k--) {
			unsigned t = gpus[k];

			gpus[k] = gpus[k - 1];
			gpus[k - 1] = t;
		}
	free(d);
	if (output) {
		if (snprintf(tmp, sizeof(tmp), "%s.tmp", output) >= (int)sizeof(tmp)) {
			free(gpus);
			return usage_error("--output: path too long");
		}
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || !(f = fdopen(fd, "w"))) {
			err_msg("cannot write %s: %s", tmp, strerror(errno));
			if (fd >= 0)
				close(fd);
			free(gpus);
			return RC_FAIL;
		}
	}
	r = cdi_write(f, gpus, ng, sock);
	free(gpus);
	if (!output)
		return r ? (err_msg("cannot write the spec: %s", strerror(-r)), RC_FAIL) : RC_OK;
	if (fsync(fileno(f)))
		r = -errno;
	if (fclose(f) && !r)
		r = -EIO;
	if (!r && rename(tmp, output))
		r = -errno;
	if (r) {
		err_msg("cannot write %s: %s", output, strerror(-r));
		unlink(tmp);
		return RC_FAIL;
	}
	return RC_OK;
}
