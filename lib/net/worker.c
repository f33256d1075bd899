// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Workers: the UCP context and worker, the progress thread, and the
 * operations in flight (net_internal.h has the model).
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/eventfd.h>

#include "net_internal.h"

int tio_net_errno(ucs_status_t st)
{
	switch (st) {
	case UCS_OK:
		return 0;
	case UCS_ERR_NO_MEMORY:
		return -ENOMEM;
	case UCS_ERR_INVALID_PARAM:
		return -EINVAL;
	case UCS_ERR_TIMED_OUT:
	case UCS_ERR_ENDPOINT_TIMEOUT:
		return -ETIMEDOUT;
	case UCS_ERR_CANCELED:
		return -ECANCELED;
	case UCS_ERR_UNREACHABLE:
		return -EHOSTUNREACH;
	case UCS_ERR_CONNECTION_RESET:
		return -ECONNRESET;
	case UCS_ERR_UNSUPPORTED:
		return -EOPNOTSUPP;
	case UCS_ERR_MESSAGE_TRUNCATED:
		return -EMSGSIZE;
	case UCS_ERR_NO_RESOURCE:
	case UCS_ERR_BUSY:
		return -EAGAIN;
	default:
		return -EIO;
	}
}

int64_t tio_net_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Signal the done prefix of the stream FIFO, in order. Lock held. */
static void tio_net_complete(tio_net_worker_t *w)
{
	struct tio_net_op *op;

	while ((op = w->head) && op->done) {
		w->head = op->next;
		if (!w->head)
			w->tail = NULL;
		if (tio_fence_signal(op->stream, op->seqno, op->status))
			tio_error_clear();	/* the stream is gone: no one waits */
		tio_stream_decref(op->stream);
		op->stream = NULL;
		tio_net_op_orphan(w, op);
	}
	pthread_cond_broadcast(&w->done);
}

/*
 * Free @op, or, while UCX still holds its request, keep it until the
 * request completes (tio_net_req_cb) or the worker goes. Lock held.
 */
void tio_net_op_orphan(tio_net_worker_t *w, struct tio_net_op *op)
{
	if (!op->req) {
		free(op);
		return;
	}
	op->ep = NULL;
	op->orphan = true;
	op->next = w->orphans;
	w->orphans = op;
}

/*
 * @ep was closed by force: UCX 1.13 leaves some of its requests (a flush
 * towards a dead shared-memory peer) pending. Their ops complete now with
 * -ECANCELED; the requests stay with the worker. Lock held.
 */
void tio_net_ep_cancel_ops(tio_net_worker_t *w, tio_net_ep_t *ep)
{
	struct tio_net_op *op;

	for (op = w->head; op; op = op->next) {
		if (op->ep != ep)
			continue;
		op->ep = NULL;
		if (!op->done) {
			op->done = true;
			op->status = -ECANCELED;
		}
	}
	tio_net_complete(w);
}

/*
 * A stream transfer towards a peer UCX does not watch (shared memory) that
 * is still in flight at its deadline: its peer is taken for dead. The
 * endpoint fails, and its unfinished stream points signal -ETIMEDOUT now
 * (their requests are cancelled; UCX may keep them until the close). Lock
 * held.
 */
static void tio_net_expire(tio_net_worker_t *w)
{
	struct tio_net_op *op, *o;
	tio_net_ep_t *ep;

	for (op = w->head; op && (op->done || !op->deadline); op = op->next)
		;
	if (!op || tio_net_now() < op->deadline)
		return;
	ep = op->ep;
	if (!ep->failed) {
		ep->failed = -ETIMEDOUT;
		snprintf(ep->why, sizeof(ep->why),
			 "a %s got no answer after %lld ms (TIO_NET_CLOSE_TIMEOUT_MS)",
			 op->what, (long long)(w->close_timeout_ns / 1000000));
	}
	for (o = op; o; o = o->next) {
		if (o->ep != ep || o->done)
			continue;
		o->done = true;		/* before the cancel: it may complete it */
		o->status = -ETIMEDOUT;
		if (o->req)
			ucp_request_cancel(w->worker, o->req);
	}
	tio_net_complete(w);
}

/*
 * The peer's one-sided operations and wire-up need this side to progress
 * too, so the thread never stops; but it does not spin. Once progress
 * finds nothing it arms the worker (ucp_worker_arm()) and sleeps in poll()
 * on the worker's event fd and on @w->wake (new local work, stop). A
 * spinning thread takes CPU time from whatever it waits for that runs on
 * the same CPUs (soft-RoCE's kernel work, a shared-memory peer: docs/net.md).
 * Arming fails while events wait to be progressed, and UCX 1.13 keeps
 * failing it towards a dead shared-memory peer: after TIO_NET_BUSY_ROUNDS
 * such rounds the thread naps unarmed for TIO_NET_NAP_MS, as it does where
 * the worker has no event fd. An armed sleep ends by TIO_NET_ARMED_MS at the
 * latest, or at the next stream op's deadline (tio_net_expire).
 */
#define TIO_NET_BUSY_ROUNDS 100
#define TIO_NET_NAP_MS 1
#define TIO_NET_ARMED_MS 100

/* How long an armed sleep may last: ms. Lock held. */
static int tio_net_poll_ms(tio_net_worker_t *w)
{
	const int max = TIO_NET_ARMED_MS;
	struct tio_net_op *op;
	int64_t left;

	for (op = w->head; op && (op->done || !op->deadline); op = op->next)
		;
	if (!op)
		return max;
	left = (op->deadline - tio_net_now() + 999999) / 1000000;
	return left < 0 ? 0 : left < max ? (int)left : max;
}

/* Empty @w->wake (nonblocking). */
static void tio_net_drain(tio_net_worker_t *w)
{
	uint64_t v;

	if (read(w->wake, &v, sizeof(v)) < 0)
		v = 0;	/* it was empty (EAGAIN) */
}

/* Wake the progress thread if it sleeps. Lock held. */
void tio_net_kick(tio_net_worker_t *w)
{
	uint64_t one = 1;

	if (!w->sleeping)
		return;
	w->sleeping = false;
	if (write(w->wake, &one, sizeof(one)) < 0)
		return;	/* a full counter: it wakes anyway */
}

static void *tio_net_progress(void *arg)
{
	tio_net_worker_t *w = arg;
	struct pollfd pfd[2] = {
		{ .fd = w->wake, .events = POLLIN },
		{ .fd = w->efd, .events = POLLIN },
	};
	unsigned int busy = 0;
	bool armed;
	int ms;

	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		while (ucp_worker_progress(w->worker))
			;
		tio_net_complete(w);
		if (w->head)
			tio_net_expire(w);
		armed = w->efd >= 0 && ucp_worker_arm(w->worker) == UCS_OK;
		if (!armed && busy++ < TIO_NET_BUSY_ROUNDS) {
			pthread_mutex_unlock(&w->lock);
			sched_yield();
			pthread_mutex_lock(&w->lock);
			continue;
		}
		busy = 0;
		ms = armed ? tio_net_poll_ms(w) : TIO_NET_NAP_MS;
		w->sleeping = true;
		pthread_mutex_unlock(&w->lock);
		poll(pfd, armed ? 2 : 1, ms);
		tio_net_drain(w);
		pthread_mutex_lock(&w->lock);
		w->sleeping = false;
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Completion callback of a tracked request; runs under the lock. */
void tio_net_req_cb(void *req, ucs_status_t st, void *user)
{
	struct tio_net_op *op = user, **pp;
	tio_net_worker_t *w = op->w;

	op->req = NULL;
	w->inflight--;
	ucp_request_free(req);
	if (!op->orphan) {
		if (!op->done) {
			op->done = true;
			op->status = tio_net_errno(st);
		}
		return;
	}
	for (pp = &w->orphans; *pp != op; pp = &(*pp)->next)
		;
	*pp = op->next;
	free(op);
}

/* Completion of an untracked request (@user: the worker). Lock held. */
void tio_net_free_cb(void *req, ucs_status_t st, void *user)
{
	tio_net_worker_t *w = user;

	(void)st;	/* the flush after it reports the failure */
	w->inflight--;
	ucp_request_free(req);
}

struct tio_net_op *tio_net_op_new(tio_net_ep_t *ep, const char *what)
{
	struct tio_net_op *op = calloc(1, sizeof(*op));

	if (!op) {
		tio_raise_errno(ENOMEM, "net %s: no memory for the operation", what);
		return NULL;
	}
	op->w = ep->w;
	op->ep = ep;
	op->what = what;
	return op;
}

/* A stream op joins the FIFO before its request is issued. Lock held. */
void tio_net_op_start(tio_net_worker_t *w, struct tio_net_op *op)
{
	if (!op->stream)
		return;
	if (w->tail)
		w->tail->next = op;
	else
		w->head = op;
	w->tail = op;
}

/* Account for what a UCP nbx call returned. Lock held. */
void tio_net_op_track(tio_net_worker_t *w, struct tio_net_op *op, ucs_status_ptr_t req)
{
	if (UCS_PTR_IS_ERR(req) || !req) {
		op->done = true;
		op->status = tio_net_errno(UCS_PTR_STATUS(req));
		tio_net_complete(w);
		return;
	}
	op->req = req;
	w->inflight++;
	tio_net_kick(w);
}

/* Wait for a sync op (no stream; the caller frees it): its status. Lock held. */
int tio_net_op_wait(tio_net_worker_t *w, struct tio_net_op *op, int64_t timeout_ns)
{
	struct timespec ts;

	if (timeout_ns >= 0) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += timeout_ns / 1000000000;
		ts.tv_nsec += timeout_ns % 1000000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
	}
	while (!op->done) {
		if (timeout_ns < 0) {
			pthread_cond_wait(&w->done, &w->lock);
		} else if (pthread_cond_timedwait(&w->done, &w->lock, &ts) == ETIMEDOUT &&
			   !op->done) {
			return -ETIMEDOUT;	/* the caller cancels, then waits */
		}
	}
	return op->status;
}

/*
 * How long tio_net_ep_close() waits for its flush: a dead peer behind a
 * shared-memory transport never answers and UCX 1.13 does not notice.
 */
static int tio_net_close_timeout(int64_t *ns)
{
	const char *e = getenv("TIO_NET_CLOSE_TIMEOUT_MS");
	long long ms = TIO_NET_CLOSE_TIMEOUT_MS;
	char *end;

	if (e && *e) {
		errno = 0;
		ms = strtoll(e, &end, 10);
		if (errno || *end || ms <= 0 || ms > 3600000)
			return tio_raise_errno(EINVAL,
					       "net: TIO_NET_CLOSE_TIMEOUT_MS=%s is not 1..3600000 ms",
					       e);
	}
	*ns = ms * 1000000;
	return 0;
}

int tio_net_worker_create(tio_net_worker_t **out)
{
	ucp_params_t cp = {
		.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
		.features = UCP_FEATURE_RMA | UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP,
		.mt_workers_shared = 0,
	};
	ucp_worker_params_t wp = {
		.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
		.thread_mode = UCS_THREAD_MODE_SERIALIZED,
	};
	tio_net_worker_t *w;
	ucs_status_t st;
	int ret;

	w = calloc(1, sizeof(*w));
	if (!w)
		return tio_raise_errno(ENOMEM, "net: no memory for a worker");
	if (tio_net_close_timeout(&w->close_timeout_ns)) {
		free(w);
		return -1;
	}
	st = ucp_init(&cp, NULL, &w->ctx);
	if (st != UCS_OK) {
		ret = tio_raise_errno(-tio_net_errno(st), "net: UCX init failed: %s",
				      ucs_status_string(st));
		goto err_free;
	}
	st = ucp_worker_create(w->ctx, &wp, &w->worker);
	if (st != UCS_OK) {
		ret = tio_raise_errno(-tio_net_errno(st), "net: UCX worker: %s",
				      ucs_status_string(st));
		goto err_ctx;
	}
	/* Without an event fd (no transport has events) the thread naps. */
	if (ucp_worker_get_efd(w->worker, &w->efd) != UCS_OK)
		w->efd = -1;
	w->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->wake < 0) {
		ret = tio_raise_errno(errno, "net: an eventfd for the progress thread");
		goto err_worker;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->done, NULL);
	ret = pthread_create(&w->thread, NULL, tio_net_progress, w);
	if (ret) {
		ret = tio_raise_errno(ret, "net: starting the progress thread");
		goto err_thread;
	}
	pthread_setname_np(w->thread, "tio-net");	/* for ps and the tests */
	*out = w;
	return 0;

err_thread:
	pthread_cond_destroy(&w->done);
	pthread_mutex_destroy(&w->lock);
	close(w->wake);
err_worker:
	ucp_worker_destroy(w->worker);
err_ctx:
	ucp_cleanup(w->ctx);
err_free:
	free(w);
	return ret;
}

void tio_net_worker_destroy(tio_net_worker_t *w)
{
	struct tio_net_op *op;
	bool last;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	/*
	 * Requests left by a forced close (a dead peer) hold UCX registrations
	 * that ucp_cleanup() asserts on: give them up to the close timeout to
	 * complete (over TCP keepalive fails them).
	 */
	if (w->inflight) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += w->close_timeout_ns / 1000000000;
		ts.tv_nsec += w->close_timeout_ns % 1000000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		while (w->inflight &&
		       pthread_cond_timedwait(&w->done, &w->lock, &ts) != ETIMEDOUT)
			;
	}
	w->stop = true;
	tio_net_kick(w);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	ucp_worker_destroy(w->worker);	/* may complete orphans */
	while ((op = w->orphans)) {
		w->orphans = op->next;
		free(op);
	}
	/* Buffers of tio_net_mem_alloc() memory may outlive us: they keep the context. */
	pthread_mutex_lock(&w->lock);
	w->destroyed = true;
	last = !w->mems;
	pthread_mutex_unlock(&w->lock);
	if (last)
		tio_net_worker_free(w);
}

/* The rest of a destroyed worker, once no memory is mapped in its context. */
void tio_net_worker_free(tio_net_worker_t *w)
{
	close(w->wake);
	pthread_cond_destroy(&w->done);
	pthread_mutex_destroy(&w->lock);
	ucp_cleanup(w->ctx);
	free(w);
}

int tio_net_worker_address(tio_net_worker_t *w, void **addr, size_t *len)
{
	ucp_address_t *a;
	ucs_status_t st;
	size_t n;
	void *p;

	pthread_mutex_lock(&w->lock);
	st = ucp_worker_get_address(w->worker, &a, &n);
	pthread_mutex_unlock(&w->lock);
	if (st != UCS_OK)
		return tio_raise_errno(-tio_net_errno(st), "net: worker address: %s",
				       ucs_status_string(st));
	p = malloc(n);
	if (p)
		memcpy(p, a, n);
	pthread_mutex_lock(&w->lock);
	ucp_worker_release_address(w->worker, a);
	pthread_mutex_unlock(&w->lock);
	if (!p)
		return tio_raise_errno(ENOMEM, "net: no memory for a worker address");
	*addr = p;
	*len = n;
	return 0;
}
