// SPDX-License-Identifier: GPL-2.0
/*
 * Implicit sync through a buffer's dma_resv: BUF_ATTACH_FENCE adds a
 * stream's point to it (bounded from then on, see tio_timeline.c) and
 * BUF_WAIT waits for its fences, as other drivers do.
 * Locking: the dma_resv lock, taken interruptibly, nothing held inside it
 * but what dma_resv_add_fence() takes.
 */
#include <linux/dma-fence.h>
#include <linux/dma-resv.h>
#include <linux/err.h>

#include "tio_priv.h"
#include "tio_timeline.h"

/**
 * tio_cmd_buf_attach_fence() - TIO_IOC_BUF_ATTACH_FENCE: put a point in a
 * buffer's dma_resv, bounded from now on
 * @tf: the calling file
 * @data: kernel copy of the struct tio_buf_attach payload
 * @call: the call
 *
 * Return: 0, -EINVAL, -ENOENT, -ENOMEM or -ERESTARTSYS.
 */
int tio_cmd_buf_attach_fence(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_buf_attach *args = data;
	enum dma_resv_usage usage;
	struct tio_buffer *buf;
	struct dma_fence *fence;
	struct dma_resv *resv;
	int ret;

	if ((args->flags & ~TIO_RESV_F_WRITE) || args->pad)
		return -EINVAL;
	usage = tio_resv_usage(args->flags);
	buf = tio_buffer_get(tf, args->handle);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	fence = tio_stream_fence_expose(tf, args->stream, args->seqno);
	if (IS_ERR(fence)) {
		ret = PTR_ERR(fence);
		goto out_buf;
	}
	resv = tio_buffer_resv(buf);
	ret = dma_resv_lock_interruptible(resv, NULL);
	if (ret)
		goto out_fence;
	ret = dma_resv_reserve_fences(resv, 1);
	if (!ret)
		dma_resv_add_fence(resv, fence, usage);	/* takes a reference */
	dma_resv_unlock(resv);
out_fence:
	dma_fence_put(fence);
out_buf:
	tio_buffer_put(buf);
	return ret;
}

/*
 * The first error among the fences of @usage still in @resv, signalled
 * ones included (the unlocked iterator skips those), or 0. Return: that,
 * or -ERESTARTSYS from taking the lock.
 */
static int tio_resv_status(struct dma_resv *resv, enum dma_resv_usage usage,
			   int *status)
{
	struct dma_resv_iter cursor;
	struct dma_fence *fence;
	int ret;

	ret = dma_resv_lock_interruptible(resv, NULL);
	if (ret)
		return ret;
	*status = 0;
	dma_resv_for_each_fence(&cursor, resv, usage, fence) {
		if (fence->error < 0) {
			*status = fence->error;
			break;
		}
	}
	dma_resv_unlock(resv);
	return 0;
}

/**
 * tio_cmd_buf_wait() - TIO_IOC_BUF_WAIT: wait for a buffer's fences, blocking
 * @tf: the calling file
 * @data: kernel copy of the struct tio_buf_wait payload
 * @call: the call
 *
 * Return: 0 with the first error in status, -ETIME, -ERESTARTSYS, -EINVAL or -ENOENT.
 */
int tio_cmd_buf_wait(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_buf_wait *args = data;
	enum dma_resv_usage usage;
	struct tio_buffer *buf;
	struct dma_resv *resv;
	long timeout, ret;

	if ((args->flags & ~(TIO_RESV_F_WRITE | TIO_WAIT_F_ABSOLUTE)) ||
	    args->pad)
		return -EINVAL;
	usage = tio_resv_usage(args->flags);
	buf = tio_buffer_get(tf, args->handle);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	resv = tio_buffer_resv(buf);
	timeout = tio_timeout_jiffies(args->flags, args->timeout_ns);
	if (!timeout)
		ret = dma_resv_test_signaled(resv, usage) ? 1 : 0;
	else
		ret = dma_resv_wait_timeout(resv, usage, true, timeout);
	if (ret > 0)
		ret = tio_resv_status(resv, usage, &args->status);
	else if (!ret)
		ret = -ETIME;
	tio_buffer_put(buf);
	return ret;
}
