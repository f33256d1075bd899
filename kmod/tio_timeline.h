/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Timelines: the fence state of a stream, kept by tio_timeline.c (the
 * timeline: its points, spans and fences on demand), tio_fence.c (the
 * points' fences, imported points, waits), tio_deadline.c (bounded
 * fences: deadlines and expiry) and tio_doorbell.c (points completed by
 * a write to the stream's doorbell page), and used by tio_stream.c (the stream
 * object and the STREAM_/FENCE_ commands) and tio_resv.c (the dma_resv
 * commands). Other parts of the driver use only tio_stream_fence()
 * (tio_priv.h).
 *
 * Lifetimes: a struct tio_stream is the handle-table object; it owns one
 * reference to its struct tio_timeline. Every fence of the timeline owns
 * another, so the timeline (whose spinlock is every one of its fences'
 * lock) outlives the stream for as long as a sync_file, a dma_resv or any
 * other holder keeps one of its fences; the expiry work holds one while
 * armed. Every fence also holds a module reference: its dma_fence_ops
 * live in this module. The doorbell's poll holds no reference: only a
 * live stream arms it, and cancelling the timeline stops it.
 *
 * Locking: tio_timeline.lock (irqsave: it is the fences' lock and the
 * dma_fence core takes it from any context) protects every field of the
 * timeline and of its fences marked "under lock". Nothing sleeps under it
 * and no other lock is taken inside it but the workqueue's (arming the
 * expiry work). Dependency callbacks of imported fences run under the
 * foreign fence's lock, so they only queue an irq_work; the irq_work
 * takes the timeline lock.
 */
#ifndef _TIO_TIMELINE_H
#define _TIO_TIMELINE_H

#include <linux/dma-fence.h>
#include <linux/hrtimer.h>
#include <linux/irq_work.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include "tio_priv.h"

struct seq_file;

/**
 * struct tio_timeline - the fence state of one stream
 * @ref: one for the stream object, one per fence
 * @lock: the lock of the timeline and of all its fences
 * @context: dma_fence context of every point
 * @emitted: last seqno handed out; FENCE_EMIT takes the next one without
 *	     the lock (tio_timeline_emit()), readers under the lock see a
 *	     value at least as new as any seqno returned before they locked
 * @signalled: last seqno signalled; every point up to it is (under lock)
 * @completed: every point up to it that waits for no dependency has
 *	       completed (FENCE_SIGNAL or expiry reached it); never below
 *	       @signalled (under lock)
 * @pending: the unsignalled points that have a fence (someone asked for
 *	     one, or an imported point), in seqno order, each holding its
 *	     list reference (under lock)
 * @errored: signalled points with a fence that keep it, so that later
 *	     requests get the same fence and its error (under lock)
 * @spans: struct tio_span, in seqno order: the errors of points that
 *	   completed with one, fence or not (under lock)
 * @dead: the stream is gone; every point has been cancelled (under lock)
 * @timeout_ms: the bound on points seen outside the file (STREAM_CREATE)
 * @expire: signals points whose deadline passed with -ETIMEDOUT; holds a
 *	    timeline reference while @expire_armed
 * @expire_armed: @expire is queued or about to requeue itself (under lock)
 * @expired_upto: the last seqno that expired, 0 if none (under lock)
 * @nr_expired: points that expired (under lock)
 * @page: the seqno page, mapped read-only by userspace
 * @word: the page's first __u64: @signalled, published before waking
 * @bell_page: the doorbell page (TIO_STREAM_F_DOORBELL), mapped read-write
 *	       by userspace, else NULL
 * @bell: its first __u64: the last point userspace or a device completed
 * @poll: reads @bell while a pending point has a waiter (tio_doorbell.c)
 * @poll_ns: @poll's period (under lock)
 * @polling: @poll is armed (under lock)
 * @name: timeline name reported by the fences
 * @rcu: frees the timeline after RCU readers of its fences are done
 */
struct tio_timeline {
	struct kref ref;
	spinlock_t lock;	/* see the locking rules above */
	u64 context;
	atomic64_t emitted;
	u64 signalled;
	u64 completed;
	struct list_head pending;
	struct list_head errored;
	struct list_head spans;
	bool dead;
	u32 timeout_ms;
	struct delayed_work expire;
	bool expire_armed;
	u64 expired_upto;
	u64 nr_expired;
	struct page *page;
	u64 *word;
	struct page *bell_page;
	u64 *bell;
	struct hrtimer poll;
	u64 poll_ns;
	bool polling;
	char name[32];
	struct rcu_head rcu;
};

/* tio_timeline.c */
struct tio_timeline *tio_timeline_create(u32 timeout_ms, bool doorbell);
void tio_timeline_put(struct tio_timeline *tl);
void tio_timeline_cancel(struct tio_timeline *tl);
int tio_timeline_emit(struct tio_timeline *tl, u64 *seqno);
int tio_timeline_signal(struct tio_timeline *tl, u64 seqno, int error);
struct dma_fence *tio_timeline_fence(struct tio_timeline *tl, u64 seqno,
				     bool expose);
void tio_timeline_show(struct tio_timeline *tl, struct seq_file *m);

/* tio_fence.c */
int tio_timeline_import(struct tio_timeline *tl, struct dma_fence *dep,
			u64 *seqno);
long tio_timeout_jiffies(u32 flags, s64 timeout_ns);
int tio_fence_wait(struct dma_fence *fence, u32 flags, s64 timeout_ns);

/*
 * Between the three timeline files only: a point's fence, the error spans
 * and what each file gives the others.
 */

/**
 * struct tio_fence - one point of a timeline
 * @base: the dma_fence; base.lock is &@tl->lock
 * @tl: the timeline, referenced
 * @link: in @tl->pending or @tl->errored (under lock)
 * @status: 0 or the error the point signals with, once @ready (under lock)
 * @ready: completed; signals once every earlier point has (under lock)
 * @imported: completes when @dep signals (FENCE_IMPORT)
 * @visible: seen outside the file: expires at @deadline (under lock)
 * @deadline: jiffies by which it must have signalled, once @visible
 * @dep: the imported fence, referenced until this fence is released
 * @cb: callback on @dep
 * @work: completes the point outside @dep's lock
 */
struct tio_fence {
	struct dma_fence base;
	struct tio_timeline *tl;
	struct list_head link;
	int status;
	bool ready;
	bool imported;
	bool visible;
	unsigned long deadline;
	struct dma_fence *dep;
	struct dma_fence_cb cb;
	struct irq_work work;
};

/**
 * struct tio_span - a run of points that completed with one error
 * @link: in tio_timeline.spans, in seqno order
 * @first: the first point
 * @last: the last point
 * @error: the negative errno they signal with
 *
 * Imported points inside a span keep their own status: their fences stay
 * in tio_timeline.errored once signalled (tio_timeline_advance()).
 */
struct tio_span {
	struct list_head link;
	u64 first;
	u64 last;
	int error;
};

/**
 * tio_span_add() - record that points completed with an error
 * @tl: the timeline, locked
 * @sp: a new span, used unless the last span can grow instead
 * @first: the first point; spans are added in seqno order, so @first is
 *	   always the point after @tl->completed
 * @last: the last point
 * @error: the negative errno
 *
 * Inline: tio_timeline_signal() and the expiry work each keep it in
 * their own frame.
 *
 * Return: true when @sp was used.
 */
static inline bool tio_span_add(struct tio_timeline *tl, struct tio_span *sp,
				u64 first, u64 last, int error)
{
	struct tio_span *tail;

	lockdep_assert_held(&tl->lock);
	if (!list_empty(&tl->spans)) {
		tail = list_last_entry(&tl->spans, struct tio_span, link);
		if (tail->error == error && tail->last + 1 == first) {
			tail->last = last;
			return false;
		}
	}
	sp->first = first;
	sp->last = last;
	sp->error = error;
	list_add_tail(&sp->link, &tl->spans);
	return true;
}

/* tio_timeline.c */
void tio_timeline_advance(struct tio_timeline *tl, struct list_head *retired);
int tio_timeline_add(struct tio_timeline *tl, struct tio_fence *f, u64 *seqno);

/* tio_fence.c */
struct tio_fence *tio_fence_alloc(struct tio_timeline *tl);
void tio_fence_init(struct tio_fence *f, u64 seqno);
void tio_fence_free_unused(struct tio_fence *f);
void tio_fence_put_list(struct list_head *list);

/* tio_deadline.c */
void tio_fence_expose_locked(struct tio_timeline *tl, struct tio_fence *f);
void tio_timeline_expire(struct work_struct *work);

/* tio_doorbell.c */
int tio_doorbell_init(struct tio_timeline *tl);
bool tio_doorbell_ring(struct tio_timeline *tl);
void tio_doorbell_watch_locked(struct tio_timeline *tl);
void tio_doorbell_stop(struct tio_timeline *tl);
void tio_doorbell_free(struct tio_timeline *tl);

#endif /* _TIO_TIMELINE_H */
