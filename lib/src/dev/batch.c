// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Batches of FFI calls (tensorio/batch.h).
 *
 * Entries live in two parallel arrays: e[] (kind, result slot, kept
 * references) and cmds[] (the command record of a driver entry), so that
 * adjacent driver entries are already a contiguous struct tio_cmd vector
 * that one TIO_IOC_SUBMIT carries without copying.
 *
 * A backend with an asynchronous queue (struct tio_queue_ops; the kernel
 * backend's io_uring) gets the batch segment by segment, a segment being
 * the driver entries between two userspace calls: records are pushed in
 * order (how they reach the driver is the batch's mode), waits are
 * parked by the driver and complete later, and a flush sends the segment
 * and waits for its records, not for the waits.
 *
 * Without a queue (the user backend, a kernel without io_uring commands):
 * each run of adjacent records goes to the backend's vectored submit;
 * waits are "deferred": polled once at the end of the submission and
 * waited for in tio_batch_wait().
 *
 * A batch is not thread-safe: one thread at a time (the kernel queue's
 * ring is IORING_SETUP_SINGLE_ISSUER where the kernel has it).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tensorio/batch.h>
#include <tensorio/error.h>
#include <tensorio/function.h>

#include "dev/dev_internal.h"

/* Where FENCE_WAIT and BUF_WAIT keep their TIO_WAIT_F_* flags. */
#define TIO_WAIT_FLAGS_OFFSET 4
_Static_assert(offsetof(struct tio_fence_wait, flags) == TIO_WAIT_FLAGS_OFFSET &&
	       offsetof(struct tio_buf_wait, flags) == TIO_WAIT_FLAGS_OFFSET,
	       "wait flags move");

enum { E_CALL, E_CMD, E_WAIT };

struct tio_bentry {
	int kind;
	const struct tio_cmd_desc *cmd;	/* E_CMD, E_WAIT: its row */
	int status;
	int deferred;		/* a wait run in userspace, not the ring */
	int in_ring;		/* pushed to the queue, not completed */
	tio_any_t ret;
	tio_object_t *err;
	tio_object_t *func;
	tio_any_t *args;
	int32_t nargs;
	tio_object_t *keep[2];
	int64_t deadline;	/* waits: absolute CLOCK_MONOTONIC ns, -1 none */
	int64_t timeout;	/* waits: as queued */
};

struct tio_batch {
	unsigned int flags;
	int mode;		/* as set (TIO_BATCH_AUTO: the best there is) */
	int used;		/* what the last submission used */
	int submitted;
	int stopped;
	struct tio_ctx *ctx;
	struct tio_bentry *e;
	struct tio_cmd *cmds;
	size_t n, cap;
	int64_t done, failed;
	int sync;		/* the backend has no queue */
	struct tio_queue *q;	/* the backend's queue, opened on first use */
};

static int64_t tio_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static const char *const tio_batch_mode_names[] = {
	[TIO_BATCH_VECTORED] = "vectored",
	[TIO_BATCH_URING] = "uring",
	[TIO_BATCH_IOCTL] = "ioctl",
	[TIO_BATCH_CMD_RING] = "ring",
};

/* The default mode: TIO_BATCH_MODE from the environment, else auto. */
static int tio_batch_default_mode(int *mode)
{
	const char *env = getenv("TIO_BATCH_MODE");
	size_t i;

	*mode = TIO_BATCH_AUTO;
	if (!env || !*env || !strcmp(env, "auto"))
		return 0;
	for (i = 0; i < sizeof(tio_batch_mode_names) / sizeof(tio_batch_mode_names[0]); i++)
		if (!strcmp(env, tio_batch_mode_names[i])) {
			*mode = (int)i;
			return 0;
		}
	return tio_raise_errno(EINVAL, "TIO_BATCH_MODE=%s: not auto, ring, vectored, uring or ioctl",
			       env);
}

int tio_batch_new(unsigned int flags, tio_batch_t **out)
{
	struct tio_ctx *ctx;
	struct tio_batch *b;
	int mode;

	if (flags & ~TIO_BATCH_STOP_ON_ERROR)
		return tio_raise_errno(EINVAL, "tio_batch_new: unknown flags 0x%x", flags);
	if (tio_batch_default_mode(&mode))
		return -1;
	b = calloc(1, sizeof(*b));
	if (!b)
		return tio_raise_errno(ENOMEM, "tio_batch_new");
	/* The batch keeps the context (its fd, its ring's file) alive. */
	ctx = tio_ctx_hold_current();
	if (!ctx) {
		free(b);
		return -1;
	}
	b->flags = flags;
	b->mode = b->used = mode;
	b->ctx = ctx;
	*out = b;
	return 0;
}

int tio_batch_set_mode(tio_batch_t *b, int mode)
{
	if (mode != TIO_BATCH_AUTO && (mode < TIO_BATCH_VECTORED || mode > TIO_BATCH_CMD_RING))
		return tio_raise_errno(EINVAL, "tio_batch_set_mode: unknown mode %d", mode);
	b->mode = b->used = mode;
	return 0;
}

static int tio_batch_grow(struct tio_batch *b)
{
	size_t ncap;
	void *p;

	if (b->submitted)
		return tio_raise_errno(EBUSY, "batch already submitted: reset it first");
	if (b->n < b->cap)
		return 0;
	ncap = b->cap ? b->cap * 2 : 64;
	p = realloc(b->e, ncap * sizeof(*b->e));
	if (!p)
		return tio_raise_errno(ENOMEM, "growing a batch to %zu entries", ncap);
	b->e = p;
	p = realloc(b->cmds, ncap * sizeof(*b->cmds));
	if (!p)
		return tio_raise_errno(ENOMEM, "growing a batch to %zu entries", ncap);
	b->cmds = p;
	b->cap = ncap;
	return 0;
}

static struct tio_bentry *tio_batch_slot(struct tio_batch *b, int kind)
{
	struct tio_bentry *e = &b->e[b->n];

	memset(e, 0, sizeof(*e));
	memset(&b->cmds[b->n], 0, sizeof(b->cmds[0]));
	e->kind = kind;
	e->status = TIO_BATCH_PENDING;
	e->ret = tio_any_none();
	e->deadline = -1;
	return e;
}

static int64_t tio_batch_queue(struct tio_batch *b, const struct tio_cmd_desc *cmd,
				    tio_object_t **keep)
{
	struct tio_bentry *e = &b->e[b->n];
	struct tio_cmd *c = &b->cmds[b->n];
	int i;

	e->kind = cmd->flags & TIO_CMD_F_WAIT ? E_WAIT : E_CMD;
	e->cmd = cmd;
	e->timeout = -1;
	if (e->kind == E_WAIT)
		memcpy(&e->timeout, c->payload.bytes + cmd->timeout_offset, sizeof(int64_t));
	c->op = cmd->op;
	for (i = 0; i < 2; i++) {
		e->keep[i] = keep[i];
		tio_object_incref(keep[i]);
	}
	return (int64_t)b->n++;
}

/* Queue @cmd with its FFI arguments: the one encoder (cmd_table.c). */
static int64_t tio_batch_add_row(struct tio_batch *b, const struct tio_cmd_desc *cmd,
				 const tio_any_t *args, int32_t nargs)
{
	tio_object_t *keep[2] = { NULL, NULL };

	if (tio_batch_grow(b))
		return -1;
	tio_batch_slot(b, E_CMD);
	if (tio_cmd_encode(cmd, args, nargs, b->cmds[b->n].payload.bytes, keep))
		return -1;
	return tio_batch_queue(b, cmd, keep);
}

int64_t tio_batch_add(tio_batch_t *b, tio_object_t *func, const tio_any_t *args,
		      int32_t nargs)
{
	const struct tio_cmd_desc *cmd;
	struct tio_bentry *e;
	int32_t i;

	if (!func || func->type_index != TIO_TYPE_FUNCTION)
		return tio_raise_errno(EINVAL, "tio_batch_add: not a Function");
	if (nargs < 0 || (nargs && !args))
		return tio_raise_errno(EINVAL, "tio_batch_add: bad arguments");
	cmd = tio_cmd_of_func(func);
	if (cmd)
		return tio_batch_add_row(b, cmd, args, nargs);
	if (tio_batch_grow(b))
		return -1;
	e = tio_batch_slot(b, E_CALL);
	if (nargs) {
		e->args = calloc((size_t)nargs, sizeof(*e->args));
		if (!e->args)
			return tio_raise_errno(ENOMEM, "tio_batch_add: copying arguments");
	}
	for (i = 0; i < nargs; i++) {
		if (tio_any_copy(&e->args[i], &args[i])) {
			while (i-- > 0)
				tio_any_decref(&e->args[i]);
			free(e->args);
			e->args = NULL;
			return -1;
		}
	}
	e->nargs = nargs;
	e->func = func;
	tio_object_incref(func);
	return (int64_t)b->n++;
}

int64_t tio_batch_add_record(tio_batch_t *b, unsigned int op, const void *payload,
			  size_t size)
{
	const struct tio_cmd_desc *cmd = tio_cmd_of(op);
	tio_object_t *keep[2] = { NULL, NULL };

	if (!cmd)
		return tio_raise_errno(EINVAL, "tio_batch_add_record: 0x%x is not a command", op);
	if (cmd->flags & TIO_CMD_F_NESTS)
		return tio_raise_errno(EINVAL, "tio_batch_add_record: %s runs records, "
				       "a record cannot carry it", cmd->name);
	if (size > TIO_CMD_PAYLOAD || (size && !payload))
		return tio_raise_errno(EINVAL, "tio_batch_add_record: bad payload size %zu", size);
	if (tio_batch_grow(b))
		return -1;
	tio_batch_slot(b, E_CMD);
	if (size)
		memcpy(b->cmds[b->n].payload.bytes, payload, size);
	return tio_batch_queue(b, cmd, keep);
}

/* A fence command on @s and its other arguments. */
static int64_t tio_batch_fence(tio_batch_t *b, enum tio_cmd_id id, tio_stream_t *s,
			       tio_any_t *args, int32_t nargs)
{
	if (!s)
		return tio_raise_errno(EINVAL, "batch: NULL stream");
	args[0] = tio_any_object(&s->header);
	return tio_batch_add_row(b, &tio_cmds[id], args, nargs);
}

int64_t tio_batch_fence_emit(tio_batch_t *b, tio_stream_t *s)
{
	tio_any_t args[1];

	return tio_batch_fence(b, TIO_CMD_FENCE_EMIT, s, args, 1);
}

int64_t tio_batch_fence_signal(tio_batch_t *b, tio_stream_t *s, uint64_t seqno,
			       int error)
{
	tio_any_t args[3] = { { 0 }, tio_any_int((int64_t)seqno), tio_any_int(error) };

	return tio_batch_fence(b, TIO_CMD_FENCE_SIGNAL, s, args, 3);
}

int64_t tio_batch_fence_wait(tio_batch_t *b, tio_stream_t *s, uint64_t seqno,
			     int64_t timeout_ns)
{
	tio_any_t args[3] = { { 0 }, tio_any_int((int64_t)seqno), tio_any_int(timeout_ns) };

	return tio_batch_fence(b, TIO_CMD_FENCE_WAIT, s, args, 3);
}

/* Completion of entry @i with @res (0 or a negative errno). */
static void tio_batch_complete(struct tio_batch *b, size_t i, int res)
{
	struct tio_bentry *e = &b->e[i];
	char what[96];

	if (e->status != TIO_BATCH_PENDING)
		return;
	if (!res && e->kind != E_CALL) {
		if (tio_cmd_decode(b->ctx, e->cmd, b->cmds[i].payload.bytes, &e->ret)) {
			e->err = tio_error_move_from_raised();
			res = tio_errno() ? -tio_errno() : -ENOMEM;
		}
	} else if (res) {
		snprintf(what, sizeof(what), "%s (batch entry %zu)", e->cmd->name, i);
		if (tio_error_from_errno(res, what, &e->err))
			e->err = NULL;
	}
	e->status = res;
	b->done++;
	if (res) {
		b->failed++;
		if (b->flags & TIO_BATCH_STOP_ON_ERROR)
			b->stopped = 1;
	}
}

static void tio_batch_cancel(struct tio_batch *b, size_t i)
{
	struct tio_bentry *e = &b->e[i];

	if (e->status != TIO_BATCH_PENDING || e->in_ring)
		return;
	e->deferred = 0;
	if (e->kind == E_CALL) {
		tio_error_from_errno(-ECANCELED, "skipped after an earlier failure", &e->err);
		e->status = -ECANCELED;
		b->done++;
		b->failed++;
	} else {
		b->cmds[i].result = -ECANCELED;
		tio_batch_complete(b, i, -ECANCELED);
	}
}

static void tio_batch_run_call(struct tio_batch *b, size_t i)
{
	struct tio_bentry *e = &b->e[i];
	int err;

	tio_set_errno(0);
	if (!tio_func_call_any(e->func, e->args, e->nargs, &e->ret)) {
		e->status = 0;
		b->done++;
		return;
	}
	err = tio_errno();
	e->err = tio_error_move_from_raised();
	e->status = err ? -err : -EIO;
	b->done++;
	b->failed++;
	if (b->flags & TIO_BATCH_STOP_ON_ERROR)
		b->stopped = 1;
}

/*
 * Deferred waits (FENCE_WAIT, BUF_WAIT): run one through the backend,
 * bounded by @limit (abs ns). Both payloads keep their flags at offset 4.
 */
static int tio_batch_run_wait(struct tio_batch *b, size_t i, int64_t limit)
{
	struct tio_bentry *e = &b->e[i];
	const struct tio_cmd_desc *cmd = e->cmd;
	struct tio_cmd w;
	int64_t dl = e->deadline;
	uint32_t flags;
	int ret, call_limit = 0;

	memcpy(&w, &b->cmds[i], sizeof(w));
	if (limit >= 0 && (dl < 0 || limit < dl)) {
		dl = limit;
		call_limit = 1;
	}
	if (dl >= 0) {
		memcpy(&flags, w.payload.bytes + TIO_WAIT_FLAGS_OFFSET, sizeof(flags));
		flags |= TIO_WAIT_F_ABSOLUTE;
		memcpy(w.payload.bytes + TIO_WAIT_FLAGS_OFFSET, &flags, sizeof(flags));
	}
	memcpy(w.payload.bytes + cmd->timeout_offset, &dl, sizeof(dl));
	ret = b->ctx->ops->exec(b->ctx, cmd->op, w.payload.bytes);
	if (ret == -ETIME && call_limit)
		return -ETIME;	/* the caller's limit, not the entry's */
	if (!ret)
		memcpy(b->cmds[i].payload.bytes, w.payload.bytes, TIO_CMD_PAYLOAD);
	b->cmds[i].result = ret;
	e->deferred = 0;
	tio_batch_complete(b, i, ret);
	return 0;
}

/* Poll the deferred waits without blocking. */
static void tio_batch_poll_deferred(struct tio_batch *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		if (b->e[i].deferred)
			tio_batch_run_wait(b, i, 0);
}

/* The queue's completion of entry @tag. */
static void tio_batch_completed(void *arg, uint64_t tag, int res)
{
	struct tio_batch *b = arg;

	b->e[tag].in_ring = 0;
	b->cmds[tag].result = res;
	tio_batch_complete(b, (size_t)tag, res);
}

/* Open the backend's queue; 1 when it has none (then run synchronously). */
static int tio_batch_open_queue(struct tio_batch *b)
{
	const struct tio_queue_ops *qops = b->ctx->ops->queue;
	int ret;

	if (b->q || b->sync)
		return b->sync;
	ret = qops ? qops->open(b->ctx, &b->q) : -EOPNOTSUPP;
	if (ret == -EOPNOTSUPP) {
		b->sync = 1;
		return 1;
	}
	if (ret)
		return -1;
	b->q->complete = tio_batch_completed;
	b->q->arg = b;
	return 0;
}

/* Push the segment [@i, @j) of driver entries to the queue. */
static int tio_batch_queue_segment(struct tio_batch *b, size_t i, size_t j)
{
	unsigned int flags = b->flags & TIO_BATCH_STOP_ON_ERROR ? 0 : TIO_SUBMIT_F_CONTINUE;
	struct tio_queue *q = b->q;
	size_t k = i, m, run = i;
	int n;

	while (k < j && !b->stopped) {
		if (b->e[k].kind == E_WAIT) {
			if (q->ops->park(q, &b->cmds[k], k))
				return -1;
			b->e[k++].in_ring = 1;
			continue;
		}
		if (run <= k)	/* the adjacent records from k on */
			for (run = k; run < j && b->e[run].kind == E_CMD; run++)
				;
		n = q->ops->push(q, b->used, &b->cmds[k], (uint32_t)(run - k), flags, k);
		if (n < 0)
			return -1;
		/* Those the push did not already complete are in flight. */
		for (m = k; m < k + (size_t)n; m++)
			b->e[m].in_ring = b->e[m].status == TIO_BATCH_PENDING;
		k += (size_t)n;
		/* Stop-on-error: know the outcome before sending more. */
		if (!flags && q->ops->flush(q, 1))
			return -1;
	}
	return q->ops->flush(q, 1);
}

/* With the queue: userspace calls in place, driver segments through it. */
static int tio_batch_run_queue(struct tio_batch *b)
{
	size_t i = 0, j;
	int used = b->q->ops->mode(b->q, b->mode);

	if (used < 0)
		return -1;
	b->used = used;
	while (i < b->n && !b->stopped) {
		if (b->e[i].kind == E_CALL) {
			tio_batch_run_call(b, i++);
			continue;
		}
		for (j = i; j < b->n && b->e[j].kind != E_CALL; j++)
			;
		if (tio_batch_queue_segment(b, i, j))
			return -1;
		i = j;
	}
	return 0;
}

/*
 * Without a queue: calls run in place, waits are deferred, and each run
 * of adjacent records goes to the backend's vectored submit.
 */
static void tio_batch_run_sync(struct tio_batch *b)
{
	unsigned int flags = b->flags & TIO_BATCH_STOP_ON_ERROR ? 0 : TIO_SUBMIT_F_CONTINUE;
	uint32_t done, k;
	size_t i = 0, j;
	int r;

	while (i < b->n && !b->stopped) {
		struct tio_bentry *e = &b->e[i];

		if (e->kind != E_CMD) {
			if (e->kind == E_CALL)
				tio_batch_run_call(b, i);
			else
				e->deferred = 1;
			i++;
			continue;
		}
		for (j = i; j < b->n && b->e[j].kind == E_CMD; j++)
			;
		done = 0;
		r = b->ctx->ops->submit(b->ctx, &b->cmds[i], (uint32_t)(j - i), flags, &done);
		for (k = 0; k < done; k++)
			tio_batch_complete(b, i + k, b->cmds[i + k].result);
		if (r < 0)	/* the envelope failed: nothing of it ran */
			for (k = done; k < j - i; k++) {
				b->cmds[i + k].result = r;
				tio_batch_complete(b, i + k, r);
			}
		i += done && r >= 0 ? done : j - i;
	}
}

int tio_batch_submit(tio_batch_t *b)
{
	int64_t now = tio_now_ns();
	size_t i;
	int ret = 0;

	if (b->submitted)
		return tio_raise_errno(EBUSY, "batch already submitted: reset it first");
	b->submitted = 1;
	for (i = 0; i < b->n; i++)
		if (b->e[i].kind == E_WAIT && b->e[i].timeout >= 0)
			b->e[i].deadline = now + b->e[i].timeout;
	ret = tio_batch_open_queue(b);
	if (ret > 0) {
		ret = 0;
		b->used = TIO_BATCH_VECTORED;	/* the backend's vectored submit */
		tio_batch_run_sync(b);
	} else if (!ret) {
		ret = tio_batch_run_queue(b);
	}
	if (b->stopped)
		for (i = 0; i < b->n; i++)
			tio_batch_cancel(b, i);
	tio_batch_poll_deferred(b);
	return ret;
}

int64_t tio_batch_wait(tio_batch_t *b, int64_t min_done, int64_t timeout_ns)
{
	int64_t limit = timeout_ns >= 0 ? tio_now_ns() + timeout_ns : -1;
	int64_t want = min_done > (int64_t)b->n || min_done < 0 ? (int64_t)b->n : min_done;
	size_t i;
	int ret;

	while (b->done < want) {
		for (i = 0; i < b->n && !b->e[i].deferred; i++)
			;
		if (i < b->n) {
			if (tio_batch_run_wait(b, i, limit))
				goto timeout;
			continue;
		}
		if (!b->q || !b->q->in_flight)
			break;
		ret = b->q->ops->wait(b->q, limit);
		if (ret == -ETIME)
			goto timeout;
		if (ret)
			return -1;
	}
	return b->done;
timeout:
	return tio_raise_errno(ETIME, "tio_batch_wait: %lld of %lld done",
			       (long long)b->done, (long long)want);
}

int64_t tio_batch_count(const tio_batch_t *b)
{
	return (int64_t)b->n;
}

int64_t tio_batch_failed(const tio_batch_t *b)
{
	return b->failed;
}

int tio_batch_status(const tio_batch_t *b, int64_t i)
{
	if (i < 0 || (size_t)i >= b->n)
		return -ERANGE;
	return b->e[i].status;
}

int tio_batch_result(tio_batch_t *b, int64_t i, tio_any_t *out)
{
	struct tio_bentry *e;

	*out = tio_any_none();
	if (i < 0 || (size_t)i >= b->n)
		return tio_raise_errno(ERANGE, "batch entry %lld of %zu", (long long)i, b->n);
	e = &b->e[i];
	if (e->status == TIO_BATCH_PENDING)
		return tio_raise_errno(EAGAIN, "batch entry %lld has not completed",
				       (long long)i);
	if (e->status) {
		if (!e->err)
			return tio_raise_errno(e->status, "batch entry %lld", (long long)i);
		tio_error_set_raised(e->err);
		tio_set_errno(-e->status);
		return -1;
	}
	return tio_any_copy(out, &e->ret);
}

tio_object_t *tio_batch_error(const tio_batch_t *b, int64_t i)
{
	if (i < 0 || (size_t)i >= b->n)
		return NULL;
	return b->e[i].err;
}

const struct tio_cmd *tio_batch_record(const tio_batch_t *b, int64_t i)
{
	if (i < 0 || (size_t)i >= b->n || b->e[i].kind == E_CALL)
		return NULL;
	return &b->cmds[i];
}

/* The one place a batch's uapi record becomes the public struct tio_record. */
int tio_batch_record_get(const tio_batch_t *b, int64_t i, struct tio_record *out)
{
	const struct tio_cmd *c = tio_batch_record(b, i);

	if (!c)
		return tio_raise_errno(ERANGE, "batch entry %lld of %zu has no command record",
				       (long long)i, b->n);
	out->op = c->op;
	out->result = b->e[i].status;
	out->payload = c->payload.bytes;
	out->size = tio_op_size(c->op);
	return 0;
}

int tio_batch_mode(const tio_batch_t *b)
{
	return b->used;
}

unsigned int tio_batch_ring_flags(const tio_batch_t *b)
{
	return b->q ? b->q->flags : 0;
}

int64_t tio_batch_enters(const tio_batch_t *b)
{
	return b->q ? b->q->enters : 0;
}

void tio_batch_reset(tio_batch_t *b)
{
	size_t i;
	int32_t k;

	/*
	 * Waits parked in the kernel write their payload back: let them
	 * finish first. Deferred ones hold nothing: drop them.
	 */
	while (b->q && b->q->in_flight)
		if (b->q->ops->wait(b->q, -1))
			break;	/* a broken ring: nothing will complete */
	for (i = 0; i < b->n; i++) {
		struct tio_bentry *e = &b->e[i];

		tio_any_decref(&e->ret);
		tio_object_decref(e->err);
		tio_object_decref(e->func);
		tio_object_decref(e->keep[0]);
		tio_object_decref(e->keep[1]);
		for (k = 0; k < e->nargs; k++)
			tio_any_decref(&e->args[k]);
		free(e->args);
	}
	b->n = 0;
	b->done = b->failed = 0;
	b->submitted = 0;
	b->stopped = 0;
}

void tio_batch_free(tio_batch_t *b)
{
	if (!b)
		return;
	tio_batch_reset(b);
	if (b->q)
		b->q->ops->close(b->q);
	free(b->e);
	free(b->cmds);
	tio_ctx_put(b->ctx, TIO_CTX_HOLDER);
	free(b);
}
