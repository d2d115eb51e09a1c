/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus exposition (text format 0.0.4) of oood's figures: what
 * `oooctl metrics` prints and what oood's [metrics] listener serves
 * (daemon/metrics.c). Pure: the caller fetches the admin replies (over
 * admin.sock, or from the modules' build handlers) and this file only
 * formats them into a growable text buffer; no I/O, no global state.
 *
 * Ownership: a prom_buf owns its text (data). prom_write() and
 * prom_printf() grow it with realloc; prom_buf_free() releases it. The
 * input records stay the caller's and are only read.
 */
#ifndef OOO_TOOLS_COMMON_PROM_H
#define OOO_TOOLS_COMMON_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ooo/proto.h>

/* The content type of the text this file writes (the format's version 0.0.4). */
#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Growable text: zero-initialise (or prom_buf_init) before the first write. */
struct prom_buf {
	char *data; /* len bytes of text and a NUL; NULL until something is written */
	size_t len;
	size_t cap; /* bytes allocated at data */
	size_t max; /* the text never grows past this many bytes (0: no limit) */
	int err;    /* the first failure, sticky: -ENOMEM, or -EMSGSIZE past max; writes after it do nothing */
};

/* An empty buffer whose text may grow to max bytes (0: no limit). */
void prom_buf_init(struct prom_buf *b, size_t max);
/* Free b's text and make it empty again (err cleared, max kept). Accepts NULL. */
void prom_buf_free(struct prom_buf *b);
/* Append formatted text: 0, or b->err (negative) if this or an earlier write failed. */
__attribute__((format(printf, 2, 3))) int prom_printf(struct prom_buf *b, const char *fmt, ...);
/* Append n bytes: 0, or b->err as prom_printf. */
int prom_append(struct prom_buf *b, const void *p, size_t n);

/*
 * What the exposition is made of: the admin replies, as their records.
 * tm NULL: the telemetry reply could not be had (ooo_telemetry_running 0);
 * procs are looked at only when tm says the probes run. The arrays may be
 * NULL when their count is 0.
 */
struct prom_input {
	const struct ooo_msg_status *st;   /* OOO_MSG_STATUS; required */
	const struct ooo_tenant_rec *tn;   /* every page of OOO_MSG_TENANTS */
	size_t ntn;
	const struct ooo_sched_rec *sr;    /* every page of OOO_MSG_SCHED */
	size_t nsr;
	const struct ooo_msg_telemetry *tm; /* OOO_MSG_TELEMETRY, or NULL */
	const struct ooo_proc_rec *pr;     /* every page of OOO_MSG_PROCS, one record per pid (prom_procs_unique) */
	size_t npr;
};

/* Append the whole exposition of in to b: 0, or b->err. */
int prom_write(struct prom_buf *b, const struct prom_input *in);

/*
 * Sort v by pid and keep one record of each pid, in place; *n
 * shrinks. Pages of OOO_MSG_PROCS are separate snapshots of maps the
 * kernel updates meanwhile, so a pid can come twice.
 */
void prom_procs_unique(struct ooo_proc_rec *v, size_t *n);

#endif
