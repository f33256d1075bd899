// SPDX-License-Identifier: GPL-2.0
/*
 * Doorbells (TIO_STREAM_F_DOORBELL): a page per stream, mapped read-write
 * by userspace, whose first __u64 userspace or a device sets to the last
 * point that completed. A GPU writes it from its own stream with a stream
 * memory operation (cuStreamWriteValue64, hipStreamWriteValue64) once the
 * work before it is done, so that a point completes without a host
 * callback and without a system call.
 *
 * Nothing tells the driver of a write, so it reads the doorbell:
 * - when a fence of the stream is asked for (wait, export, dma_resv), so
 *   that a point already rung signals at once;
 * - while a waiter is on a pending point: dma_fence's enable_signaling
 *   (a sleeping FENCE_WAIT, a parked uring wait, a sync_file polled, a
 *   dma_resv consumer) arms a soft hrtimer that reads it every
 *   doorbell_poll_us, the period doubling at each read that finds nothing
 *   new up to doorbell_poll_max_us, so that the cost of a long wait stays
 *   bounded; it stops when no pending point has a waiter left.
 * A value read signals every point up to it, cleanly, as FENCE_SIGNAL
 * would (tio_timeline_signal()): never past the last point emitted, never
 * backwards, an imported point still waits for its dependency, and a
 * point that expired stays expired: the deadline of a point seen outside
 * the file (tio_deadline.c) holds whatever the doorbell says.
 * Locking: see tio_timeline.h; the poll state is under the timeline lock.
 */
#include <linux/dma-fence.h>
#include <linux/gfp.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>

#include "tio_compat.h"
#include "tio_priv.h"
#include "tio_timeline.h"

static unsigned int tio_doorbell_poll_us = 10;
static unsigned int tio_doorbell_poll_max_us = 1000;

static int tio_doorbell_us_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, USEC_PER_SEC);
}

static const struct kernel_param_ops tio_doorbell_us_ops = {
	.set = tio_doorbell_us_set,
	.get = param_get_uint,
};

module_param_cb(doorbell_poll_us, &tio_doorbell_us_ops, &tio_doorbell_poll_us, 0644);
MODULE_PARM_DESC(doorbell_poll_us,
		 "While a point of a doorbell stream has a waiter, read the doorbell this often, us (default 10)");
module_param_cb(doorbell_poll_max_us, &tio_doorbell_us_ops, &tio_doorbell_poll_max_us, 0644);
MODULE_PARM_DESC(doorbell_poll_max_us,
		 "The period grows to at most this while the doorbell stays silent, us (default 1000)");

/* The doorbell's value as a point to signal up to: at most the last emitted. */
static u64 tio_doorbell_value(struct tio_timeline *tl)
{
	u64 v = READ_ONCE(*tl->bell);
	u64 emitted = (u64)atomic64_read(&tl->emitted);

	return min(v, emitted);
}

/**
 * tio_doorbell_ring() - signal the points up to the doorbell's value
 * @tl: the timeline (not locked); one with a doorbell
 *
 * Any context but under the timeline lock.
 *
 * Return: true when points completed.
 */
bool tio_doorbell_ring(struct tio_timeline *tl)
{
	u64 v = tio_doorbell_value(tl);

	/* A racy look first: the usual answer is "nothing new". */
	if (v <= data_race(READ_ONCE(tl->completed)))
		return false;
	/* An expired point stays expired: -ETIMEDOUT changes nothing. */
	return !tio_timeline_signal(tl, v, 0);
}

/* Whether a pending point has a waiter. Under lock. */
static bool tio_doorbell_watched(struct tio_timeline *tl)
{
	struct tio_fence *f;

	lockdep_assert_held(&tl->lock);
	list_for_each_entry(f, &tl->pending, link)
		if (test_bit(DMA_FENCE_FLAG_ENABLE_SIGNAL_BIT, &f->base.flags))
			return true;
	return false;
}

static enum hrtimer_restart tio_doorbell_poll(struct hrtimer *timer)
{
	struct tio_timeline *tl = container_of(timer, struct tio_timeline, poll);
	bool rang = tio_doorbell_ring(tl);
	enum hrtimer_restart ret = HRTIMER_RESTART;
	u64 max = (u64)READ_ONCE(tio_doorbell_poll_max_us) * NSEC_PER_USEC;
	unsigned long flags;

	spin_lock_irqsave(&tl->lock, flags);
	if (tl->dead || !tio_doorbell_watched(tl)) {
		tl->polling = false;
		ret = HRTIMER_NORESTART;
	} else {
		if (rang)
			tl->poll_ns = (u64)READ_ONCE(tio_doorbell_poll_us) * NSEC_PER_USEC;
		else if (tl->poll_ns < max)
			tl->poll_ns = min(tl->poll_ns * 2, max);
		hrtimer_forward_now(timer, ns_to_ktime(tl->poll_ns));
	}
	spin_unlock_irqrestore(&tl->lock, flags);
	return ret;
}

/**
 * tio_doorbell_watch_locked() - a pending point got a waiter: poll
 * @tl: the timeline, locked
 *
 * Called from the fences' enable_signaling. Arms the poll unless it runs
 * already (it then sees the new waiter at its next read) or the stream is
 * gone. Does nothing for a timeline without a doorbell.
 */
void tio_doorbell_watch_locked(struct tio_timeline *tl)
{
	lockdep_assert_held(&tl->lock);
	if (!tl->bell || tl->polling || tl->dead)
		return;
	tl->polling = true;
	tl->poll_ns = (u64)READ_ONCE(tio_doorbell_poll_us) * NSEC_PER_USEC;
	hrtimer_start(&tl->poll, ns_to_ktime(tl->poll_ns), HRTIMER_MODE_REL_SOFT);
}

/**
 * tio_doorbell_init() - give a new timeline its doorbell page
 * @tl: the timeline, not yet shared
 *
 * Return: 0 or -ENOMEM.
 */
int tio_doorbell_init(struct tio_timeline *tl)
{
	tl->bell_page = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!tl->bell_page)
		return -ENOMEM;
	tl->bell = page_address(tl->bell_page);
	tio_hrtimer_setup(&tl->poll, tio_doorbell_poll, CLOCK_MONOTONIC,
			  HRTIMER_MODE_REL_SOFT);
	return 0;
}

/**
 * tio_doorbell_stop() - the stream is gone: stop polling
 * @tl: the timeline, marked dead, so that nothing arms the poll again
 *
 * May sleep (waits for a running poll).
 */
void tio_doorbell_stop(struct tio_timeline *tl)
{
	if (tl->bell)
		hrtimer_cancel(&tl->poll);
}

/**
 * tio_doorbell_free() - free the doorbell page of a timeline
 * @tl: the timeline, stopped (tio_doorbell_stop()) or never polled
 *
 * Userspace mappings hold their own page references.
 */
void tio_doorbell_free(struct tio_timeline *tl)
{
	if (tl->bell_page)
		put_page(tl->bell_page);
}
