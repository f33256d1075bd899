// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Batches of FFI calls (tensorio/batch.h).
 *
 * Entries live in two parallel arrays: e[] (kind, result slot, kept
 * references) and cmds[] (the command record of a driver entry), so that
 * adjacent driver entries are already a contiguous struct tio_cmd vector
 * that one TIO_IOC_SUBMIT carries without copying.
 *
 * Kernel backend: the batch runs segment by segment, a segment being the
 * driver entries between two userspace calls. A segment's records go into
 * SQEs (vectored SUBMITs of up to max_submit records, or one uring_cmd
 * each, or ioctls), a fence wait into its own uring_cmd that the driver
 * parks; one io_uring_submit_and_wait() sends the segment and waits for
 * its synchronous part. io_uring issues SQEs in ring order, inline, so
 * records run in batch order -- except those the driver punts to io-wq
 * (TIO_CMD_F_PUNT: pinning user pages, importing a dma-buf), which would
 * let later SQEs overtake them: the segment is flushed after each SQE
 * carrying one (a link would chain the parked waits in between too).
 *
 * User backend (or a driver without asynchronous waits): records run
 * through the backend in order; waits are "deferred": polled once at the
 * end of the submission and waited for in tio_batch_wait().
 *
 * A batch is not thread-safe: one thread at a time (the ring is
 * IORING_SETUP_SINGLE_ISSUER where the kernel has it).
 */
#include <errno.h>
#include <stddef.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tensorio/batch.h>
#include <tensorio/error.h>
#include <tensorio/function.h>

#include "dev/dev_internal.h"

#define TIO_RING_ENTRIES 128

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
	int in_ring;		/* submitted to the ring, no CQE yet */
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
	int mode;
	int submitted;
	int stopped;
	struct tio_ctx *ctx;
	struct tio_bentry *e;
	struct tio_cmd *cmds;
	size_t n, cap;
	struct tio_submit *subs;
	size_t nsubs;
	int64_t done, failed;
	int64_t enters;
	int64_t in_ring;	/* SQEs sent and not completed */
	int64_t sync_left;	/* of them, those a segment waits for */
	int ring_ok;
	unsigned int ring_flags;
	struct io_uring ring;
};

static int64_t tio_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int tio_batch_new(unsigned int flags, tio_batch_t **out)
{
	struct tio_ctx *ctx;
	struct tio_batch *b;

	if (flags & ~TIO_BATCH_STOP_ON_ERROR)
		return tio_raise_errno(EINVAL, "tio_batch_new: unknown flags 0x%x", flags);
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
	b->ctx = ctx;
	*out = b;
	return 0;
}

int tio_batch_set_mode(tio_batch_t *b, int mode)
{
	if (mode != TIO_BATCH_VECTORED && mode != TIO_BATCH_URING &&
	    mode != TIO_BATCH_IOCTL)
		return tio_raise_errno(EINVAL, "tio_batch_set_mode: unknown mode %d", mode);
	b->mode = mode;
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

	if (!cmd || op == TIO_IOC_SUBMIT)
		return tio_raise_errno(EINVAL, "tio_batch_add_record: 0x%x is not a command", op);
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
	if (b->ctx->kind == TIO_BACKEND_KERNEL)
		b->enters++;
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

/* Ring. */
static int tio_batch_ring_setup(struct tio_batch *b)
{
	struct io_uring_params p;
	int ret;

	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	ret = io_uring_queue_init_params(TIO_RING_ENTRIES, &b->ring, &p);
	if (ret == -EINVAL) {
		/* Older kernel: no single-issuer or deferred task work. */
		memset(&p, 0, sizeof(p));
		ret = io_uring_queue_init_params(TIO_RING_ENTRIES, &b->ring, &p);
	} else if (!ret) {
		b->ring_flags |= TIO_BATCH_RING_SINGLE_ISSUER | TIO_BATCH_RING_DEFER_TASKRUN;
	}
	if (ret)
		return tio_raise_errno(ret, "setting up the batch's io_uring");
	if (!io_uring_register_files(&b->ring, &b->ctx->fd, 1))
		b->ring_flags |= TIO_BATCH_RING_FIXED_FILE;
	if (io_uring_register_ring_fd(&b->ring) == 1)
		b->ring_flags |= TIO_BATCH_RING_REGISTERED_RING;
	b->ring_ok = 1;
	return 0;
}

#define TAG_SUBMIT 1ULL

static void tio_batch_reap_one(struct tio_batch *b, struct io_uring_cqe *cqe)
{
	uint64_t tag = cqe->user_data;
	int res = cqe->res;

	b->in_ring--;
	if (tag & TAG_SUBMIT) {
		struct tio_submit *s = &b->subs[tag >> 1];
		size_t start = (size_t)((struct tio_cmd *)(uintptr_t)s->cmds_ptr - b->cmds);
		uint32_t k;

		b->sync_left--;
		for (k = 0; k < s->count; k++) {
			size_t i = start + k;
			int r;

			b->e[i].in_ring = 0;
			if (k < s->done && res >= 0)
				r = b->cmds[i].result;
			else if (k < s->done)
				r = b->cmds[i].result ? b->cmds[i].result : 0;
			else
				r = (res < 0 && !(b->flags & TIO_BATCH_STOP_ON_ERROR)) ?
				    res : -ECANCELED;
			b->cmds[i].result = r;
			tio_batch_complete(b, i, r);
		}
		return;
	}
	tag >>= 1;
	b->e[tag].in_ring = 0;
	if (b->e[tag].kind != E_WAIT)
		b->sync_left--;
	b->cmds[tag].result = res < 0 ? res : 0;
	tio_batch_complete(b, (size_t)tag, res < 0 ? res : 0);
}

static void tio_batch_reap(struct tio_batch *b)
{
	struct io_uring_cqe *cqe;
	unsigned int head, seen = 0;

	io_uring_for_each_cqe(&b->ring, head, cqe) {
		tio_batch_reap_one(b, cqe);
		seen++;
	}
	io_uring_cq_advance(&b->ring, seen);
}

/* Submit what is queued and wait until the segment's synchronous SQEs are done. */
static int tio_batch_flush(struct tio_batch *b, int wait_sync)
{
	int ret;

	for (;;) {
		unsigned int want = wait_sync && b->sync_left > 0 ? 1 : 0;

		ret = io_uring_submit_and_wait(&b->ring, want);
		b->enters++;
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			return tio_raise_errno(ret, "io_uring_enter for a batch");
		tio_batch_reap(b);
		if (!wait_sync || b->sync_left <= 0)
			return 0;
	}
}

static struct io_uring_sqe *tio_batch_sqe(struct tio_batch *b)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);

	if (!sqe) {
		/* Ring full: send what is there, then take a slot. */
		if (tio_batch_flush(b, 0))
			return NULL;
		sqe = io_uring_get_sqe(&b->ring);
		if (!sqe)
			tio_raise_errno(EBUSY, "no io_uring submission slot");
	}
	return sqe;
}

static void tio_prep_uring_cmd(struct tio_batch *b, struct io_uring_sqe *sqe,
			       unsigned int op, void *payload, uint64_t tag)
{
	int fixed = b->ring_flags & TIO_BATCH_RING_FIXED_FILE;

	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fixed ? 0 : b->ctx->fd, NULL, 0, 0);
	sqe->cmd_op = op;
	sqe->addr3 = (uint64_t)(uintptr_t)payload;	/* first 8 bytes of sqe->cmd */
	sqe->__pad2[0] = 0;
	if (fixed)
		sqe->flags |= IOSQE_FIXED_FILE;
	sqe->user_data = tag;
	b->in_ring++;
}

/* Does the driver run @op from io-wq when io_uring issues it? */
static int tio_cmd_punts(unsigned int op)
{
	const struct tio_cmd_desc *row = tio_cmd_of(op);

	return row && (row->flags & TIO_CMD_F_PUNT);
}

static int tio_batch_kernel_segment(struct tio_batch *b, size_t i, size_t j)
{
	int stop = b->flags & TIO_BATCH_STOP_ON_ERROR;
	int async = b->ctx->info.features & TIO_FEAT_ASYNC_WAIT;
	uint32_t max = b->ctx->info.max_submit ? b->ctx->info.max_submit : 1;
	struct io_uring_sqe *sqe;
	size_t k, m;
	int punt;

	for (k = i; k < j && !b->stopped; ) {
		struct tio_bentry *e = &b->e[k];

		if (e->kind == E_WAIT) {
			if (!async) {
				e->deferred = 1;
				k++;
				continue;
			}
			sqe = tio_batch_sqe(b);
			if (!sqe)
				return -1;
			tio_prep_uring_cmd(b, sqe, e->cmd->op,
					   b->cmds[k].payload.bytes, (uint64_t)k << 1);
			e->in_ring = 1;
			k++;
			continue;
		}
		if (b->mode == TIO_BATCH_IOCTL) {
			int r = b->ctx->ops->exec(b->ctx, b->cmds[k].op,
						  b->cmds[k].payload.bytes);

			b->enters++;
			b->cmds[k].result = r;
			tio_batch_complete(b, k, r);
			k++;
			continue;
		}
		sqe = tio_batch_sqe(b);
		if (!sqe)
			return -1;
		punt = 0;
		if (b->mode == TIO_BATCH_URING) {
			tio_prep_uring_cmd(b, sqe, b->cmds[k].op,
					   b->cmds[k].payload.bytes, (uint64_t)k << 1);
			e->in_ring = 1;
			b->sync_left++;
			punt = tio_cmd_punts(b->cmds[k].op);
			k++;
		} else {
			struct tio_submit *s = &b->subs[b->nsubs];

			for (m = k; m < j && m - k < max && b->e[m].kind == E_CMD; m++) {
				b->e[m].in_ring = 1;
				punt |= tio_cmd_punts(b->cmds[m].op);
			}
			memset(s, 0, sizeof(*s));
			s->cmds_ptr = (uint64_t)(uintptr_t)&b->cmds[k];
			s->count = (uint32_t)(m - k);
			s->flags = stop ? 0 : TIO_SUBMIT_F_CONTINUE;
			tio_prep_uring_cmd(b, sqe, TIO_IOC_SUBMIT, s,
					   ((uint64_t)b->nsubs << 1) | TAG_SUBMIT);
			b->nsubs++;
			b->sync_left++;
			k = m;
		}
		/* Stop-on-error: know the outcome before sending more. */
		if ((stop || punt) && tio_batch_flush(b, 1))
			return -1;
	}
	return tio_batch_flush(b, 1);
}

static int tio_batch_run_kernel(struct tio_batch *b)
{
	size_t i = 0, j;

	if (!b->ring_ok && tio_batch_ring_setup(b))
		return -1;
	free(b->subs);
	b->nsubs = 0;
	b->subs = calloc(b->n, sizeof(*b->subs));
	if (!b->subs)
		return tio_raise_errno(ENOMEM, "batch of %zu entries", b->n);
	while (i < b->n && !b->stopped) {
		if (b->e[i].kind == E_CALL) {
			tio_batch_run_call(b, i++);
			continue;
		}
		for (j = i; j < b->n && b->e[j].kind != E_CALL; j++)
			;
		if (tio_batch_kernel_segment(b, i, j))
			return -1;
		i = j;
	}
	return 0;
}

/*
 * Without the ring: calls run in place, waits are deferred, and each run
 * of adjacent records goes to the backend's vectored submit.
 */
static void tio_batch_run_user(struct tio_batch *b)
{
	unsigned int flags = b->flags & TIO_BATCH_STOP_ON_ERROR ? 0 : TIO_SUBMIT_F_CONTINUE;
	uint32_t max = b->ctx->info.max_submit ? b->ctx->info.max_submit : 1;
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
		for (j = i; j < b->n && j - i < max && b->e[j].kind == E_CMD; j++)
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
	if (b->ctx->kind == TIO_BACKEND_KERNEL)
		ret = tio_batch_run_kernel(b);
	else
		tio_batch_run_user(b);
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
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts;
	size_t i;
	int ret;

	while (b->done < want) {
		for (i = 0; i < b->n && !b->e[i].deferred; i++)
			;
		if (i < b->n) {
			if (tio_batch_run_wait(b, i, limit))
				return tio_raise_errno(ETIME, "tio_batch_wait: %lld of %lld done",
						       (long long)b->done, (long long)want);
			continue;
		}
		if (!b->in_ring)
			break;
		if (limit >= 0) {
			int64_t left = limit - tio_now_ns();

			if (left < 0)
				left = 0;
			ts.tv_sec = left / 1000000000;
			ts.tv_nsec = left % 1000000000;
		}
		ret = io_uring_wait_cqe_timeout(&b->ring, &cqe, limit >= 0 ? &ts : NULL);
		b->enters++;
		if (ret == -ETIME)
			return tio_raise_errno(ETIME, "tio_batch_wait: %lld of %lld done",
					       (long long)b->done, (long long)want);
		if (ret && ret != -EINTR)
			return tio_raise_errno(ret, "tio_batch_wait");
		tio_batch_reap(b);
	}
	return b->done;
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

unsigned int tio_batch_ring_flags(const tio_batch_t *b)
{
	return b->ring_flags;
}

int64_t tio_batch_enters(const tio_batch_t *b)
{
	return b->enters;
}

void tio_batch_reset(tio_batch_t *b)
{
	size_t i;
	int32_t k;

	/*
	 * Waits parked in the kernel write their payload back: let them
	 * finish first. Deferred ones hold nothing: drop them.
	 */
	while (b->in_ring) {
		struct io_uring_cqe *cqe;

		if (io_uring_wait_cqe(&b->ring, &cqe) && !b->in_ring)
			break;
		tio_batch_reap(b);
	}
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
	b->sync_left = 0;
}

void tio_batch_free(tio_batch_t *b)
{
	if (!b)
		return;
	tio_batch_reset(b);
	if (b->ring_ok)
		io_uring_queue_exit(&b->ring);
	free(b->subs);
	free(b->e);
	free(b->cmds);
	tio_ctx_put(b->ctx, TIO_CTX_HOLDER);
	free(b);
}
