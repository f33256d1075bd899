// SPDX-License-Identifier: GPL-2.0
/*
 * The fences of timeline points (struct tio_fence): their dma_fence ops
 * and life, imported points, which complete when a foreign fence
 * signals, and the wait helpers of the wait commands. Locking: see
 * tio_timeline.h.
 */
#include <linux/dma-fence.h>
#include <linux/irq_work.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>

#include "tio_priv.h"
#include "tio_timeline.h"

static const char *tio_fence_driver_name(struct dma_fence *fence)
{
	return TIO_DRV_NAME;
}

static const char *tio_fence_timeline_name(struct dma_fence *fence)
{
	return container_of(fence, struct tio_fence, base)->tl->name;
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

/* Someone waits on a pending point: a doorbell stream starts polling. */
static bool tio_fence_enable_signaling(struct dma_fence *fence)
{
	tio_doorbell_watch_locked(container_of(fence, struct tio_fence, base)->tl);
	return true;
}

static const struct dma_fence_ops tio_fence_ops = {
	.use_64bit_seqno = true,
	.get_driver_name = tio_fence_driver_name,
	.get_timeline_name = tio_fence_timeline_name,
	.enable_signaling = tio_fence_enable_signaling,
	.release = tio_fence_release,
};

/**
 * tio_fence_alloc() - allocate a point of a timeline, not yet initialised
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
 * tio_fence_put_list() - drop the list references of fences
 * @list: fences off their timeline's lists, each holding its list
 *	  reference; empty on return
 */
void tio_fence_put_list(struct list_head *list)
{
	struct tio_fence *f, *tmp;

	list_for_each_entry_safe(f, tmp, list, link) {
		list_del_init(&f->link);
		dma_fence_put(&f->base);
	}
}

/*
 * Complete an imported point from its dependency: runs from irq_work (or
 * directly when the dependency had signalled already) and consumes the
 * reference taken for the callback.
 */
static void tio_fence_dep_done(struct tio_fence *f)
{
	struct tio_timeline *tl = f->tl;
	int status = dma_fence_get_status(f->dep);
	unsigned long flags;
	LIST_HEAD(retired);

	spin_lock_irqsave(&tl->lock, flags);
	if (!tl->dead && !f->ready) {
		f->ready = true;
		f->status = status < 0 ? status : 0;
		tio_timeline_advance(tl, &retired);
	}
	spin_unlock_irqrestore(&tl->lock, flags);
	tio_fence_put_list(&retired);
	dma_fence_put(&f->base);
}

static void tio_fence_dep_work(struct irq_work *work)
{
	tio_fence_dep_done(container_of(work, struct tio_fence, work));
}

/* Runs under the dependency's lock, maybe in irq context: defer. */
static void tio_fence_dep_cb(struct dma_fence *dep, struct dma_fence_cb *cb)
{
	struct tio_fence *f = container_of(cb, struct tio_fence, cb);

	irq_work_queue(&f->work);
}

/**
 * tio_timeline_import() - add a point that waits for a foreign fence
 * @tl: the timeline
 * @dep: the fence to wait for; its reference is consumed in every case
 * @seqno: out, the new point
 *
 * The point completes with @dep's error when @dep signals, and signals
 * once every earlier point of the timeline has. The caller holds the
 * stream, so the timeline cannot be cancelled meanwhile.
 *
 * Return: 0, -ENOMEM or -EOVERFLOW.
 */
int tio_timeline_import(struct tio_timeline *tl, struct dma_fence *dep,
			u64 *seqno)
{
	struct tio_fence *f;
	int ret;

	f = tio_fence_alloc(tl);
	if (!f) {
		dma_fence_put(dep);
		return -ENOMEM;
	}
	f->imported = true;
	f->dep = dep;	/* put by the fence's release from here on */
	init_irq_work(&f->work, tio_fence_dep_work);
	ret = tio_timeline_add(tl, f, seqno);
	if (ret) {
		tio_fence_free_unused(f);
		return ret;
	}
	/* The callback's reference. */
	dma_fence_get(&f->base);
	if (dma_fence_add_callback(dep, &f->cb, tio_fence_dep_cb))
		tio_fence_dep_done(f);	/* already signalled */
	return 0;
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
