/* SPDX-License-Identifier: MIT */
/*
 * The [metrics] listener: Prometheus scrapes over HTTP, served from the
 * loop. GET /metrics is answered with the exposition of tools/common/prom.c
 * (what `oooctl metrics` prints), built from the admin views' build
 * handlers (server_build); the request head is parsed by http.c.
 *
 * Every step is an io_uring operation of this module (server_add_op):
 * accept (re-armed), recv, send; sockets are CLOEXEC|NONBLOCK and nothing
 * blocks. One request per connection: the response has Connection: close,
 * then the connection is read until the peer closes it, so that unread
 * request bytes do not turn the close into a reset.
 *
 * Limits: METRICS_CONNS connections (one more is answered 503 and closed
 * at once), each closed METRICS_DEADLINE_NS after its accept whatever it
 * is doing (checked every tick), a request head of HTTP_HEAD_MAX bytes, an
 * exposition of METRICS_TEXT_MAX bytes. Requests within METRICS_REUSE_NS of
 * the text's rendering share it, so at most one text per METRICS_REUSE_NS
 * of a connection's deadline is alive.
 *
 * Ownership: the module owns srv->metrics: the listening socket, the
 * connections and their sockets, and the rendered texts (reference counted:
 * the newest one, and each connection sending one, hold a reference).
 * [metrics] listen is read at start only: a reload that changes it logs a
 * warning and keeps the running listener.
 */
#ifndef OOO_METRICS_H
#define OOO_METRICS_H

#define METRICS_CONNS 16u
#define METRICS_BACKLOG 16
#define METRICS_DEADLINE_NS (5ull * 1000000000ull)
#define METRICS_REUSE_NS (1ull * 1000000000ull)
#define METRICS_TEXT_MAX (64u << 20)
#define METRICS_PATH "/metrics"

struct module;

/* The module (server.h): last in the table; it handles no request type. */
extern const struct module metrics_module;

#endif
