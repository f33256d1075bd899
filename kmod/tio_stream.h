/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Streams (fence timelines) and their fences, shared by tio_stream.c (the
 * timeline and the stream objects) and tio_fence.c (fence operations,
 * waits, sync_file and dma_resv commands). Other parts of the driver use
 * only tio_stream_fence() (tio_priv.h) and tio_fence_wait() below.
 *
 * Lifetimes: a struct tio_stream is the handle-table object; it owns one
 * reference to its struct tio_timeline. Every fence of the timeline owns
 * another, so the timeline (whose spinlock is every one of its fences'
 * lock) outlives the stream for as long as a sync_file, a dma_resv or any
 * other holder keeps one of its fences. Every fence also holds a module
 * reference: its dma_fence_ops live in this module.
 *
 * Locking: tio_timeline.lock (irqsave: it is the fences' lock and the
 * dma_fence core takes it from any context) protects every field of the
 * timeline and of its fences marked "under lock". Nothing sleeps under it
 * and no other lock is taken inside it. Dependency callbacks of imported
 * fences run under the foreign fence's lock, so they only queue an
 * irq_work; the irq_work takes the timeline lock.
 */
#ifndef _TIO_STREAM_H
#define _TIO_STREAM_H

#include <linux/dma-fence.h>
#include <linux/irq_work.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include "tio_priv.h"

/**
 * struct tio_timeline - the fence state of one stream
 * @ref: one for the stream object, one per fence
 * @lock: the lock of the timeline and of all its fences
 * @context: dma_fence context of every point
 * @emitted: last seqno handed out (under lock)
 * @signalled: last seqno signalled; every point up to it is (under lock)
 * @pending: unsignalled points in seqno order, each holding its list
 *	     reference (under lock)
 * @errored: signalled points that carry an error, kept so that later
 *	     waits on them report it (under lock)
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
	u64 emitted;
	u64 signalled;
	struct list_head pending;
	struct list_head errored;
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

/* tio_fence.c */
struct tio_fence *tio_fence_alloc(struct tio_timeline *tl);
void tio_fence_init(struct tio_fence *f, u64 seqno);
void tio_fence_free_unused(struct tio_fence *f);
void tio_timeline_put(struct tio_timeline *tl);
long tio_timeout_jiffies(u32 flags, s64 timeout_ns);
int tio_fence_wait(struct dma_fence *fence, u32 flags, s64 timeout_ns);

/* tio_stream.c */
int tio_stream_import(struct tio_file *tf, u32 stream, struct dma_fence *dep,
		      u64 *seqno);

#endif /* _TIO_STREAM_H */
