// SPDX-License-Identifier: GPL-2.0
/*
 * Fences of tensorio streams: their dma_fence_ops and lifetime, the wait
 * helper shared by FENCE_WAIT and the io_uring path, sync_file export and
 * import, and implicit sync through a buffer's dma_resv.
 * Locking: see tio_stream.h.
 */
#include <linux/dma-fence.h>
#include <linux/dma-resv.h>
#include <linux/err.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sync_file.h>
#include <linux/timekeeping.h>

#include "tio_priv.h"
#include "tio_stream.h"

static const char *tio_fence_driver_name(struct dma_fence *fence)
{
	return TIO_DRV_NAME;
}

static const char *tio_fence_timeline_name(struct dma_fence *fence)
{
	return container_of(fence, struct tio_fence, base)->tl->name;
}

static void tio_timeline_free(struct kref *ref)
{
	struct tio_timeline *tl = container_of(ref, struct tio_timeline, ref);

	/* Userspace mappings hold their own page references. */
	put_page(tl->page);
	/* RCU readers of a fence may still look at its lock. */
	kfree_rcu(tl, rcu);
}

/**
 * tio_timeline_put() - drop a timeline reference
 * @tl: the timeline; the last reference frees it (any context)
 */
void tio_timeline_put(struct tio_timeline *tl)
{
	kref_put(&tl->ref, tio_timeline_free);
}

static void tio_fence_release(struct dma_fence *fence)
{
	struct tio_fence *f = container_of(fence, struct tio_fence, base);

	if (f->dep)
		dma_fence_put(f->dep);
	tio_timeline_put(f->tl);
	dma_fence_free(fence);
	/* Last: the ops of this fence live in this module. */
	module_put(THIS_MODULE);
}

static const struct dma_fence_ops tio_fence_ops = {
	.use_64bit_seqno = true,
	.get_driver_name = tio_fence_driver_name,
	.get_timeline_name = tio_fence_timeline_name,
	.release = tio_fence_release,
};

/**
 * tio_fence_alloc() - allocate a point of @tl, not yet initialised
 * @tl: the timeline; the point takes a reference
 *
 * Return: the point, or NULL. Finish with tio_fence_init() or undo with
 * tio_fence_free_unused().
 */
struct tio_fence *tio_fence_alloc(struct tio_timeline *tl)
{
	struct tio_fence *f;

	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return NULL;
	kref_get(&tl->ref);
	f->tl = tl;
	INIT_LIST_HEAD(&f->link);
	INIT_LIST_HEAD(&f->cb.node);
	/* Callers hold a file (or fence) whose module reference pins us. */
	__module_get(THIS_MODULE);
	return f;
}

/**
 * tio_fence_init() - make an allocated point a fence with one reference
 * @f: from tio_fence_alloc()
 * @seqno: its seqno on its timeline
 *
 * Safe under the timeline lock.
 */
void tio_fence_init(struct tio_fence *f, u64 seqno)
{
	dma_fence_init(&f->base, &tio_fence_ops, &f->tl->lock, f->tl->context,
		       seqno);
}

/**
 * tio_fence_free_unused() - free a point tio_fence_init() never saw
 * @f: from tio_fence_alloc(); its @dep, if any, is put
 */
void tio_fence_free_unused(struct tio_fence *f)
{
	if (f->dep)
		dma_fence_put(f->dep);
	tio_timeline_put(f->tl);
	kfree(f);
	module_put(THIS_MODULE);
}

/**
 * tio_timeout_jiffies() - convert a uapi timeout to a schedule timeout
 * @flags: TIO_WAIT_F_ABSOLUTE or zero
 * @timeout_ns: relative nanoseconds, or CLOCK_MONOTONIC nanoseconds with
 *		TIO_WAIT_F_ABSOLUTE; negative means forever
 *
 * A deadline is rounded up to the next jiffy, so that a wait never ends
 * early.
 *
 * Return: 0 to poll (a zero or elapsed timeout), MAX_SCHEDULE_TIMEOUT, or
 * a jiffies count.
 */
long tio_timeout_jiffies(u32 flags, s64 timeout_ns)
{
	u64 ns, j;

	if (timeout_ns < 0)
		return MAX_SCHEDULE_TIMEOUT;
	ns = timeout_ns;
	if (flags & TIO_WAIT_F_ABSOLUTE) {
		u64 now = ktime_get_ns();

		ns = ns > now ? ns - now : 0;
	}
	if (!ns)
		return 0;
	j = nsecs_to_jiffies64(ns) + 1;
	return min_t(u64, j, MAX_SCHEDULE_TIMEOUT - 1);
}

/**
 * tio_fence_wait() - wait for a fence with a uapi timeout
 * @fence: the fence
 * @flags: TIO_WAIT_F_ABSOLUTE or zero
 * @timeout_ns: as for tio_timeout_jiffies(); zero only polls
 *
 * Interruptible. The synchronous half of waiting: the io_uring path parks
 * a command with dma_fence_add_callback() on the same fence instead.
 *
 * Return: 0 once @fence has signalled (read its error for the outcome),
 * -ETIME when the timeout passed first, -ERESTARTSYS on a signal.
 */
int tio_fence_wait(struct dma_fence *fence, u32 flags, s64 timeout_ns)
{
	long timeout = tio_timeout_jiffies(flags, timeout_ns);
	long ret;

	if (!timeout)
		return dma_fence_is_signaled(fence) ? 0 : -ETIME;
	ret = dma_fence_wait_timeout(fence, true, timeout);
	if (ret < 0)
		return ret;
	return ret ? 0 : -ETIME;
}

int tio_cmd_fence_export(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_fence_export *args = data;
	struct dma_fence *fence;
	struct sync_file *sf;
	int fd;

	if ((args->flags & ~TIO_EXPORT_F_CLOEXEC) || args->pad)
		return -EINVAL;
	fence = tio_stream_fence_expose(tf, args->stream, args->seqno);
	if (IS_ERR(fence))
		return PTR_ERR(fence);
	sf = sync_file_create(fence);	/* takes its own reference */
	dma_fence_put(fence);
	if (!sf)
		return -ENOMEM;
	fd = tio_fd_reserve(call, sf->file, args->flags & TIO_EXPORT_F_CLOEXEC);
	if (fd < 0) {
		fput(sf->file);
		return fd;
	}
	args->fd = fd;
	return 0;
}

int tio_cmd_fence_import(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_fence_import *args = data;
	struct dma_fence *dep;
	struct file *file;

	if (args->flags || args->pad)
		return -EINVAL;
	if (args->fd < 0)
		return -EBADF;
	dep = sync_file_get_fence(args->fd);
	if (!dep) {
		/* Tell a closed fd from one that is not a sync_file. */
		file = fget(args->fd);
		if (!file)
			return -EBADF;
		fput(file);
		return -EINVAL;
	}
	return tio_stream_import(tf, args->stream, dep, &args->seqno);
}

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
	usage = args->flags & TIO_RESV_F_WRITE ? DMA_RESV_USAGE_WRITE :
						 DMA_RESV_USAGE_READ;
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
	/* READ usage covers readers and writers; WRITE only writers. */
	usage = args->flags & TIO_RESV_F_WRITE ? DMA_RESV_USAGE_WRITE :
						 DMA_RESV_USAGE_READ;
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
