/* SPDX-License-Identifier: MIT */
/*
 * The CDI spec of `oooctl cdi` (Container Device Interface, cdiVersion
 * 0.6.0): kind ooo.dev/gpu, a device per GPU ("gpuN") and "all", the
 * tenants' socket bind-mounted at its own path and OOO_SOCKET set in the
 * spec's containerEdits (applied with any of its devices), and
 * OOO_CDI_DEVICE=NAME in each device's (CDI wants every device's edits
 * non-empty). Writes through tools/json.c; no other I/O.
 */
#ifndef OOO_TOOLS_OOOCTL_CDI_SPEC_H
#define OOO_TOOLS_OOOCTL_CDI_SPEC_H

#include <stddef.h>
#include <stdio.h>

#define CDI_VERSION "0.6.0"
#define CDI_KIND "ooo.dev/gpu"

/*
 * Write the spec for the GPUs gpus[0, n) (oood's indices, ascending, no
 * duplicates) and the socket `sock` (an absolute path) to f, indented, with
 * a final newline. Returns 0, or -EIO when f reports an error.
 */
int cdi_write(FILE *f, const unsigned *gpus, size_t n, const char *sock);

#endif
