// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kernel backend's asynchronous queue (struct tio_queue_ops): an
 * io_uring whose SQEs are IORING_OP_URING_CMDs on /dev/tensorio, or, in
 * TIO_BATCH_CMD_RING mode, the driver's command ring (kernel_ring.c),
 * entered synchronously after what the io_uring holds was sent.
 *
 * io_uring issues SQEs in ring order, inline, so records run in the order
 * pushed -- except those the driver punts to io-wq (TIO_CMD_F_PUNT:
 * pinning user pages, importing a dma-buf), which would let later SQEs
 * overtake them: the queue is flushed after each SQE carrying one (a link
 * would chain the parked waits in between too). Waits are plain
 * uring_cmds: the driver parks them itself (TIO_NB_WAIT) and completes
 * them through their CQE, never holding the submitting thread.
 *
 * SQE user_data: a command's tag << 2 | KIND_ONE, a parked wait's
 * tag << 2 | KIND_PARKED, or an envelope's (a vectored SUBMIT's) index
 * << 2 | KIND_ENVELOPE.
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tensorio/batch.h>

#include "dev/dev_internal.h"

#define TIO_RING_ENTRIES 128
/* Envelopes in flight before the queue waits for them to reuse the slots. */
#define TIO_ENVELOPES 64
enum { KIND_ONE, KIND_ENVELOPE, KIND_PARKED };
#define KIND_MASK 3ULL

/* A vectored SUBMIT in flight: the driver reads and writes @s until its CQE. */
struct tio_envelope {
	struct tio_submit s;
	uint64_t tag;
};

struct tio_kqueue {
	struct tio_queue q;
	struct tio_ctx *ctx;
	struct io_uring ring;
	int64_t sync_left;	/* SQEs sent that flush() waits for */
	size_t nenv;
	struct tio_envelope env[TIO_ENVELOPES];
};

static struct tio_kqueue *kq_of(struct tio_queue *q)
{
	return (struct tio_kqueue *)q;
}

static int kq_open(struct tio_ctx *ctx, struct tio_queue **out)
{
	struct io_uring_params p;
	struct tio_kqueue *kq;
	int ret;

	if (!(ctx->info.features & TIO_FEAT_URING_CMD) ||
	    !(ctx->info.features & TIO_FEAT_ASYNC_WAIT))
		return -EOPNOTSUPP;
	kq = calloc(1, sizeof(*kq));
	if (!kq)
		return tio_raise_errno(ENOMEM, "allocating a batch queue");
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	ret = io_uring_queue_init_params(TIO_RING_ENTRIES, &kq->ring, &p);
	if (ret == -EINVAL) {
		/* Older kernel: no single-issuer or deferred task work. */
		memset(&p, 0, sizeof(p));
		ret = io_uring_queue_init_params(TIO_RING_ENTRIES, &kq->ring, &p);
	} else if (!ret) {
		kq->q.flags |= TIO_BATCH_RING_SINGLE_ISSUER | TIO_BATCH_RING_DEFER_TASKRUN;
	}
	if (ret) {
		free(kq);
		tio_raise_errno(-ret, "setting up the batch's io_uring");
		return ret;
	}
	if (!io_uring_register_files(&kq->ring, &ctx->fd, 1))
		kq->q.flags |= TIO_BATCH_RING_FIXED_FILE;
	if (io_uring_register_ring_fd(&kq->ring) == 1)
		kq->q.flags |= TIO_BATCH_RING_REGISTERED_RING;
	kq->q.ops = &tio_kernel_uring_ops;
	kq->ctx = ctx;
	*out = &kq->q;
	return 0;
}

static void kq_complete(struct tio_kqueue *kq, uint64_t tag, int res)
{
	kq->q.in_flight--;
	kq->q.complete(kq->q.arg, tag, res);
}

static void kq_reap_one(struct tio_kqueue *kq, struct io_uring_cqe *cqe)
{
	uint64_t data = cqe->user_data;
	int res = cqe->res;
	struct tio_envelope *env;
	struct tio_cmd *cmds;
	uint32_t k;

	if ((data & KIND_MASK) != KIND_ENVELOPE) {
		if ((data & KIND_MASK) == KIND_ONE)
			kq->sync_left--;
		kq_complete(kq, data >> 2, res < 0 ? res : 0);
		return;
	}
	env = &kq->env[data >> 2];
	cmds = (struct tio_cmd *)(uintptr_t)env->s.cmds_ptr;
	kq->sync_left--;
	for (k = 0; k < env->s.count; k++) {
		int r;

		if (k < env->s.done)
			r = cmds[k].result;
		else	/* not processed: the envelope failed, or a stop */
			r = res < 0 && (env->s.flags & TIO_SUBMIT_F_CONTINUE) ? res : -ECANCELED;
		cmds[k].result = r;
		kq_complete(kq, env->tag + k, r);
	}
}

static void kq_reap(struct tio_kqueue *kq)
{
	struct io_uring_cqe *cqe;
	unsigned int head, seen = 0;

	io_uring_for_each_cqe(&kq->ring, head, cqe) {
		kq_reap_one(kq, cqe);
		seen++;
	}
	io_uring_cq_advance(&kq->ring, seen);
}

static int kq_flush(struct tio_queue *q, int wait_sync)
{
	struct tio_kqueue *kq = kq_of(q);
	int ret;

	/* Nothing to send or wait for (records went through the command ring). */
	if (!io_uring_sq_ready(&kq->ring) && (!wait_sync || kq->sync_left <= 0)) {
		kq_reap(kq);
		return 0;
	}
	for (;;) {
		unsigned int want = wait_sync && kq->sync_left > 0 ? 1 : 0;

		ret = io_uring_submit_and_wait(&kq->ring, want);
		q->enters++;
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			return tio_raise_errno(-ret, "io_uring_enter for a batch");
		kq_reap(kq);
		if (!wait_sync || kq->sync_left <= 0)
			return 0;
	}
}

static struct io_uring_sqe *kq_sqe(struct tio_kqueue *kq)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&kq->ring);

	if (!sqe) {
		/* Ring full: send what is there, then take a slot. */
		if (kq_flush(&kq->q, 0))
			return NULL;
		sqe = io_uring_get_sqe(&kq->ring);
		if (!sqe)
			tio_raise_errno(EBUSY, "no io_uring submission slot");
	}
	return sqe;
}

/* One uring_cmd: @op on @payload, completing as @data. */
static int kq_prep(struct tio_kqueue *kq, unsigned int op, void *payload, uint64_t data)
{
	int fixed = kq->q.flags & TIO_BATCH_RING_FIXED_FILE;
	struct io_uring_sqe *sqe = kq_sqe(kq);

	if (!sqe)
		return -1;
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fixed ? 0 : kq->ctx->fd, NULL, 0, 0);
	sqe->cmd_op = op;
	sqe->addr3 = (uint64_t)(uintptr_t)payload;	/* first 8 bytes of sqe->cmd */
	sqe->__pad2[0] = 0;
	if (fixed)
		sqe->flags |= IOSQE_FIXED_FILE;
	sqe->user_data = data;
	return 0;
}

/* Does the driver run @op from io-wq when io_uring issues it? */
static int kq_punts(unsigned int op)
{
	const struct tio_cmd_desc *row = tio_cmd_of(op);

	return row && (row->flags & TIO_CMD_F_PUNT);
}

/* Run @cmd by ioctl, after what is queued before it. */
static int kq_push_ioctl(struct tio_kqueue *kq, struct tio_cmd *cmd, uint64_t tag)
{
	if (io_uring_sq_ready(&kq->ring) && kq_flush(&kq->q, 0))
		return -1;
	cmd->result = kq->ctx->ops->exec(kq->ctx, cmd->op, cmd->payload.bytes);
	kq->q.enters++;
	kq->q.in_flight++;
	kq_complete(kq, tag, cmd->result);
	return 1;
}

/*
 * Up to the ring's size of @cmds through the command ring, after what is
 * queued before them; they complete before this returns.
 */
static int kq_push_ring(struct tio_kqueue *kq, struct tio_cmd *cmds, uint32_t n,
			unsigned int flags, uint64_t tag)
{
	uint32_t taken, done, k;
	int ret;

	if (io_uring_sq_ready(&kq->ring) && kq_flush(&kq->q, 0))
		return -1;
	ret = tio_kring_run(kq->ctx, cmds, n, flags, &taken, &done);
	kq->q.enters++;
	if (!taken)
		return tio_raise_errno(-ret, "entering the command ring");
	kq->q.in_flight += taken;
	for (k = 0; k < taken; k++) {
		int r = cmds[k].result;

		if (ret < 0)		/* the enter was refused: none ran */
			r = ret;
		else if (k >= done)	/* stopped by an earlier failure */
			r = -ECANCELED;
		cmds[k].result = r;
		kq_complete(kq, tag + k, r);
	}
	return (int)taken;
}

static int kq_mode(struct tio_queue *q, int mode)
{
	struct tio_kqueue *kq = kq_of(q);
	int ret;

	if (mode != TIO_BATCH_AUTO && mode != TIO_BATCH_CMD_RING)
		return mode;
	ret = tio_kring_ready(kq->ctx);
	if (ret > 0)
		return TIO_BATCH_CMD_RING;
	if (mode == TIO_BATCH_AUTO)
		return TIO_BATCH_VECTORED;
	if (ret == -EOPNOTSUPP)
		return tio_raise_errno(EOPNOTSUPP,
				       "the driver has no command ring (features 0x%llx)",
				       (unsigned long long)kq->ctx->info.features);
	return tio_raise_errno(-ret, "setting up the command ring");
}

static int kq_push(struct tio_queue *q, int mode, struct tio_cmd *cmds, uint32_t n,
		   unsigned int flags, uint64_t tag)
{
	struct tio_kqueue *kq = kq_of(q);
	uint32_t max = kq->ctx->info.max_submit ? kq->ctx->info.max_submit : 1;
	struct tio_envelope *env;
	uint32_t k;
	int punt = 0;

	if (mode == TIO_BATCH_IOCTL)
		return kq_push_ioctl(kq, cmds, tag);
	if (mode == TIO_BATCH_CMD_RING)
		return kq_push_ring(kq, cmds, n, flags, tag);
	if (mode == TIO_BATCH_URING) {
		if (kq_prep(kq, cmds->op, cmds->payload.bytes, tag << 2 | KIND_ONE))
			return -1;
		n = 1;
		punt = kq_punts(cmds->op);
	} else {
		if (kq->nenv == TIO_ENVELOPES) {
			/* Every slot in use: let them complete, then reuse. */
			if (kq_flush(q, 1))
				return -1;
			kq->nenv = 0;
		}
		if (n > max)
			n = max;
		for (k = 0; k < n; k++)
			punt |= kq_punts(cmds[k].op);
		env = &kq->env[kq->nenv];
		memset(env, 0, sizeof(*env));
		env->s.cmds_ptr = (uint64_t)(uintptr_t)cmds;
		env->s.count = n;
		env->s.flags = flags;
		env->tag = tag;
		if (kq_prep(kq, TIO_IOC_SUBMIT, &env->s,
			    (uint64_t)kq->nenv << 2 | KIND_ENVELOPE))
			return -1;
		kq->nenv++;
	}
	q->in_flight += n;
	kq->sync_left++;
	if (punt && kq_flush(q, 1))
		return -1;
	return (int)n;
}

static int kq_park(struct tio_queue *q, struct tio_cmd *cmd, uint64_t tag)
{
	struct tio_kqueue *kq = kq_of(q);

	if (kq_prep(kq, cmd->op, cmd->payload.bytes, tag << 2 | KIND_PARKED))
		return -1;
	q->in_flight++;
	return 0;
}

static int kq_wait(struct tio_queue *q, int64_t deadline)
{
	struct tio_kqueue *kq = kq_of(q);
	struct __kernel_timespec ts;
	struct io_uring_cqe *cqe;
	int ret;

	if (deadline >= 0) {
		struct timespec now;
		int64_t left;

		clock_gettime(CLOCK_MONOTONIC, &now);
		left = deadline - ((int64_t)now.tv_sec * 1000000000 + now.tv_nsec);
		if (left < 0)
			left = 0;
		ts.tv_sec = left / 1000000000;
		ts.tv_nsec = left % 1000000000;
	}
	ret = io_uring_wait_cqe_timeout(&kq->ring, &cqe, deadline >= 0 ? &ts : NULL);
	q->enters++;
	if (ret == -ETIME)
		return -ETIME;
	if (ret && ret != -EINTR)
		return tio_raise_errno(-ret, "waiting for a batch's completions");
	kq_reap(kq);
	return 0;
}

static void kq_close(struct tio_queue *q)
{
	struct tio_kqueue *kq = kq_of(q);

	io_uring_queue_exit(&kq->ring);
	free(kq);
}

const struct tio_queue_ops tio_kernel_uring_ops = {
	.open = kq_open,
	.push = kq_push,
	.park = kq_park,
	.flush = kq_flush,
	.wait = kq_wait,
	.mode = kq_mode,
	.close = kq_close,
};
