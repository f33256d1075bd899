/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Timelines: the fence state of a stream, shared by tio_timeline.c (the
 * timeline and its fences, struct tio_fence private there), tio_stream.c
 * (the stream object and the STREAM_/FENCE_ commands) and tio_resv.c (the
 * dma_resv commands). Other parts of the driver use only
 * tio_stream_fence() (tio_priv.h).
 *
 * Lifetimes: a struct tio_stream is the handle-table object; it owns one
 * reference to its struct tio_timeline. Every fence of the timeline owns
 * another, so the timeline (whose spinlock is every one of its fences'
 * lock) outlives the stream for as long as a sync_file, a dma_resv or any
 * other holder keeps one of its fences; the expiry work holds one while
 * armed. Every fence also holds a module reference: its dma_fence_ops
 * live in this module.
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
	char name[32];
	struct rcu_head rcu;
};

/* tio_timeline.c */
struct tio_timeline *tio_timeline_create(u32 timeout_ms);
void tio_timeline_put(struct tio_timeline *tl);
void tio_timeline_cancel(struct tio_timeline *tl);
int tio_timeline_emit(struct tio_timeline *tl, u64 *seqno);
int tio_timeline_signal(struct tio_timeline *tl, u64 seqno, int error);
struct dma_fence *tio_timeline_fence(struct tio_timeline *tl, u64 seqno,
				     bool expose);
int tio_timeline_import(struct tio_timeline *tl, struct dma_fence *dep,
			u64 *seqno);
void tio_timeline_show(struct tio_timeline *tl, struct seq_file *m);
long tio_timeout_jiffies(u32 flags, s64 timeout_ns);
int tio_fence_wait(struct dma_fence *fence, u32 flags, s64 timeout_ns);

#endif /* _TIO_TIMELINE_H */
