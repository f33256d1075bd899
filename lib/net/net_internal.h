/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtensorio-net's internals (it uses libtensorio's public API only): a
 * worker owns a UCP context and worker and a progress thread; every UCP
 * call is made under the worker's mutex
 * (UCS_THREAD_MODE_SERIALIZED). Operations in flight are counted. The
 * progress thread spins on ucp_worker_progress() a while after the last
 * progress, then sleeps on the worker's event fd (worker.c). Transfers that signal a stream point complete in issue order.
 */
#ifndef TIO_NET_INTERNAL_H
#define TIO_NET_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <ucp/api/ucp.h>

#include <tensorio/buffer.h>
#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/net.h>
#include <tensorio/object.h>
#include <tensorio/stream.h>

struct tio_net_op {
	struct tio_net_op *next;	/* stream FIFO, or orphans */
	tio_net_worker_t *w;
	tio_net_ep_t *ep;		/* for the error message; NULL if orphan */
	const char *what;		/* "put", "get", ... */
	tio_stream_t *stream;		/* holds a reference, or NULL */
	uint64_t seqno;
	bool done;
	bool orphan;			/* its endpoint closed: freed on completion */
	int64_t deadline;		/* CLOCK_MONOTONIC ns to give up at, or 0 */
	int status;			/* 0 or a negative errno */
	void *req;			/* the UCP request while in flight */
	size_t length;			/* bytes received (tag receive) */
};

struct tio_net_worker {
	ucp_context_h ctx;
	ucp_worker_h worker;
	pthread_mutex_t lock;
	pthread_cond_t done;		/* from it, to waiters */
	pthread_t thread;
	int efd;			/* the UCP worker's event fd, or -1 */
	int wake;			/* eventfd: new work or stop, to the thread */
	bool sleeping;			/* the thread waits in poll() */
	bool stop;
	unsigned int inflight;
	struct tio_net_op *head, *tail;	/* stream ops in issue order */
	struct tio_net_op *orphans;	/* close requests UCX never completed */
	unsigned int eps, mems;		/* live children (mems: until unmapped) */
	bool destroyed;			/* freed when the last mem goes */
	int64_t close_timeout_ns;	/* bound on an endpoint's closing flush */
};

struct tio_net_ep {
	tio_net_worker_t *w;
	ucp_ep_h ep;
	char *peer;
	char transports[128];
	int failed;			/* negative errno from the error handler */
	char why[96];			/* what failed it, if not UCX ("" else) */
	bool peer_checked;		/* UCX notices a dead peer (keepalive) */
};

struct tio_net_mem {
	tio_net_worker_t *w;
	tio_buffer_t *buf;
	ucp_mem_h memh;
	void *addr;
	uint64_t size;
	bool allocated;			/* UCX's memory (tio_net_mem_alloc) */
	unsigned int refs;		/* handle, and @buf's release if allocated */
};

struct tio_net_rkey {
	tio_net_ep_t *ep;
	ucp_rkey_h rkey;
	uint64_t addr;
	uint64_t size;
};

/* worker.c */
int tio_net_errno(ucs_status_t st);
int64_t tio_net_now(void);
struct tio_net_op *tio_net_op_new(tio_net_ep_t *ep, const char *what);
void tio_net_op_start(tio_net_worker_t *w, struct tio_net_op *op);
void tio_net_op_track(tio_net_worker_t *w, struct tio_net_op *op, ucs_status_ptr_t req);
int tio_net_op_wait(tio_net_worker_t *w, struct tio_net_op *op, int64_t timeout_ns);
void tio_net_req_cb(void *req, ucs_status_t st, void *user);
void tio_net_free_cb(void *req, ucs_status_t st, void *user);
void tio_net_op_orphan(tio_net_worker_t *w, struct tio_net_op *op);
void tio_net_kick(tio_net_worker_t *w);
void tio_net_ep_cancel_ops(tio_net_worker_t *w, tio_net_ep_t *ep);
void tio_net_worker_free(tio_net_worker_t *w);

#define TIO_NET_CLOSE_TIMEOUT_MS 10000	/* default; TIO_NET_CLOSE_TIMEOUT_MS */

/* ep.c */
int tio_net_raise(tio_net_ep_t *ep, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* TIO_NET_INTERNAL_H */
