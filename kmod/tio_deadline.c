// SPDX-License-Identifier: GPL-2.0
/*
 * Bounded fences: a point about to be seen outside its file (a sync_file,
 * a dma_resv, a dependency of a visible stream) gets a deadline, the
 * timeline's bound from now, and a point that has not signalled by its
 * deadline expires: it and every earlier point signal with -ETIMEDOUT, as
 * vgem's fences do, so no fence another driver holds stays pending
 * forever (Documentation/driver-api/dma-buf.rst). One delayed work per
 * timeline runs the expiry. Locking: see tio_timeline.h.
 */
#include <linux/dma-fence.h>
#include <linux/jiffies.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "tio_priv.h"
#include "tio_timeline.h"
#include "tio_trace.h"

/* Points that expired, module-wide (debugfs stats). */
atomic64_t tio_fences_expired = ATOMIC64_INIT(0);

/**
 * tio_fence_expose_locked() - give a point about to be seen outside the
 * file its deadline
 * @tl: the timeline, locked
 * @f: the point
 *
 * Makes sure the expiry work runs by then. Deadlines of a timeline are
 * handed out in time order with one bound, so an armed work is never late
 * for a newer one.
 */
void tio_fence_expose_locked(struct tio_timeline *tl, struct tio_fence *f)
{
	unsigned long delay = msecs_to_jiffies(tl->timeout_ms);

	lockdep_assert_held(&tl->lock);
	if (f->visible || tl->dead)
		return;
	f->visible = true;
	f->deadline = jiffies + delay;
	if (tl->expire_armed)
		return;
	tl->expire_armed = true;
	kref_get(&tl->ref);	/* the work's, dropped when it stops */
	queue_delayed_work(system_wq, &tl->expire, delay);
}

/*
 * Expire every point up to the last visible one whose deadline passed:
 * each signals with -ETIMEDOUT (in order, so earlier points go too).
 * Points without a fence get their error from a span: @sp, set to NULL
 * once used (else the caller frees it).
 * Return: the points expired. Called with @tl->lock held.
 */
static u64 tio_timeline_expire_locked(struct tio_timeline *tl,
				      struct list_head *retired, u64 *upto,
				      unsigned long *next,
				      struct tio_span **sp)
{
	unsigned long now = jiffies;
	u64 n = 0, with_fence = 0;
	struct tio_fence *f;

	*upto = 0;
	*next = 0;
	list_for_each_entry(f, &tl->pending, link) {
		if (!f->visible)
			continue;
		if (time_after_eq(now, f->deadline))
			*upto = f->base.seqno;
		else if (!*next)
			*next = f->deadline;	/* the earliest: handed out in order */
	}
	if (!*upto)
		return 0;
	list_for_each_entry(f, &tl->pending, link) {
		if (f->base.seqno > *upto)
			break;
		if (f->base.seqno > tl->completed)
			with_fence++;
		if (f->ready)
			continue;
		f->ready = true;
		f->status = -ETIMEDOUT;
		n++;
	}
	if (*upto > tl->completed) {
		/* Points without a fence that had not completed expire too. */
		n += *upto - tl->completed - with_fence;
		if (tio_span_add(tl, *sp, tl->completed + 1, *upto, -ETIMEDOUT))
			*sp = NULL;
		tl->completed = *upto;
	}
	tl->expired_upto = *upto;
	tl->nr_expired += n;
	tio_timeline_advance(tl, retired);
	return n;
}

/**
 * tio_timeline_expire() - the expiry work of a timeline
 * @work: tio_timeline.expire; it holds a timeline reference while armed
 *
 * See tio_fence_expose_locked().
 */
void tio_timeline_expire(struct work_struct *work)
{
	struct tio_timeline *tl = container_of(to_delayed_work(work),
					       struct tio_timeline, expire);
	unsigned long flags, next = 0;
	struct tio_span *sp;
	bool again = false;
	LIST_HEAD(retired);
	u64 n = 0, upto = 0;

	/*
	 * Expiry must not fail (no fence may stay pending past its bound):
	 * the span for points without a fence is a small allocation made
	 * once per expiry run, in process context.
	 */
	sp = kmalloc(sizeof(*sp), GFP_KERNEL | __GFP_NOFAIL);
	spin_lock_irqsave(&tl->lock, flags);
	tl->expire_armed = false;
	if (!tl->dead) {
		n = tio_timeline_expire_locked(tl, &retired, &upto, &next, &sp);
		if (next) {
			/* Keeps the reference this run had. */
			tl->expire_armed = true;
			again = true;
			queue_delayed_work(system_wq, &tl->expire,
					   time_after(next, jiffies) ? next - jiffies : 0);
		}
	}
	spin_unlock_irqrestore(&tl->lock, flags);
	kfree(sp);
	tio_fence_put_list(&retired);
	if (n) {
		atomic64_add(n, &tio_fences_expired);
		trace_tio_fence_expire(tl->context, upto, n, tl->timeout_ms);
	}
	if (!again)
		tio_timeline_put(tl);
}
