// SPDX-License-Identifier: GPL-2.0
/*
 * Timelines: dma_fence timelines with a 64-bit seqno and a read-only
 * seqno page. Points signal strictly in seqno order: a point completes
 * when FENCE_SIGNAL reaches it (or, for an imported point, when its
 * dependency signals: tio_fence.c), or expires when it was seen outside
 * the file and missed its deadline (tio_deadline.c), and signals once
 * every earlier point has signalled. Cancelling the timeline (its stream
 * is gone) ends every unsignalled point with -ECANCELED, so no waiter or
 * sync_file holder ever hangs. Locking: see tio_timeline.h.
 *
 * Fences on demand: emitting a point only advances @emitted, and
 * signalling points nobody holds a fence of only advances @completed,
 * @signalled and the seqno word. A point gets a struct tio_fence when it
 * is imported (it waits for a dependency) or when a fence of it is asked
 * for (wait, export, dma_resv) before it signalled; from then on that
 * fence is the point's, so every holder sees the same one. What a point
 * without a fence needs is derived: it has completed when its seqno is
 * at most @completed, and its error is that of the span that covers it
 * (none: it completed cleanly). A fence asked for after its point
 * signalled is a new, already signalled fence with the point's seqno and
 * error.
 *
 * Fences are not recycled: a dma_fence is freed by dma_fence_free() after
 * an RCU grace period and may be read under RCU (dma_resv, sync_file)
 * until then, so reuse would need SLAB_TYPESAFE_BY_RCU and revalidation
 * by every reader, as i915 does for its requests. With fences made only
 * on demand, the points that need one are the ones that meet another
 * party, where the allocation is the smaller cost.
 */
#include <linux/dma-fence.h>
#include <linux/err.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "tio_priv.h"
#include "tio_timeline.h"

/* The error a point without a fence completed with (0: none). Under lock. */
static int tio_span_error(struct tio_timeline *tl, u64 seqno)
{
	struct tio_span *sp;

	lockdep_assert_held(&tl->lock);
	list_for_each_entry_reverse(sp, &tl->spans, link) {
		if (seqno > sp->last)
			break;
		if (seqno >= sp->first)
			return sp->error;
	}
	return 0;
}

static void tio_timeline_free(struct kref *ref)
{
	struct tio_timeline *tl = container_of(ref, struct tio_timeline, ref);
	struct tio_span *sp, *tmp;

	list_for_each_entry_safe(sp, tmp, &tl->spans, link)
		kfree(sp);

	/* Userspace mappings hold their own page references. */
	put_page(tl->page);
	tio_doorbell_free(tl);
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

/**
 * tio_timeline_advance() - signal every point that can
 * @tl: the timeline, locked
 * @retired: signalled fences that carry no error move here, for the
 *	     caller to put outside the lock (tio_fence_put_list())
 *
 * The points up to @tl->completed that wait for nothing and the imported
 * points that completed signal, up to the first point that has not
 * completed. The seqno word is published (release order) before any
 * fence signals, so a woken waiter, or anyone who sees the fence
 * signalled, reads a word at least as new.
 */
void tio_timeline_advance(struct tio_timeline *tl, struct list_head *retired)
{
	struct tio_fence *f, *tmp;
	u64 last = tl->completed;

	lockdep_assert_held(&tl->lock);
	list_for_each_entry(f, &tl->pending, link) {
		if (f->base.seqno <= last) {
			if (!f->ready) {	/* an import holds the rest back */
				last = f->base.seqno - 1;
				break;
			}
		} else if (f->base.seqno == last + 1 && f->ready) {
			last++;	/* an import that completed on its own */
		} else {
			break;
		}
	}
	if (last <= tl->signalled)
		return;
	tl->signalled = last;
	if (tl->completed < last)
		tl->completed = last;
	smp_wmb();	/* the caller's writes before the seqno word */
	WRITE_ONCE(*tl->word, last);
	list_for_each_entry_safe(f, tmp, &tl->pending, link) {
		if (f->base.seqno > last)
			break;
		if (f->status)
			dma_fence_set_error(&f->base, f->status);
		dma_fence_signal_locked(&f->base);
		/* An import's clean status is not in the spans: keep it. */
		if (f->status || (f->imported && !list_empty(&tl->spans) &&
				  tio_span_error(tl, f->base.seqno)))
			list_move_tail(&f->link, &tl->errored);
		else
			list_move_tail(&f->link, retired);
	}
}

/*
 * Hand out the next seqno: lock-free, so that emitting a point takes no
 * lock at all. A caller holds the stream, so the timeline is not being
 * cancelled. Return: 0, or -EOVERFLOW once U64_MAX was handed out.
 */
static int tio_timeline_next(struct tio_timeline *tl, u64 *seqno)
{
	s64 old = atomic64_read(&tl->emitted);

	do {
		if (unlikely((u64)old == U64_MAX))
			return -EOVERFLOW;
	} while (!atomic64_try_cmpxchg(&tl->emitted, &old, old + 1));
	*seqno = (u64)old + 1;
	return 0;
}

/* The last seqno handed out. */
static u64 tio_timeline_emitted(struct tio_timeline *tl)
{
	return (u64)atomic64_read(&tl->emitted);
}

/**
 * tio_timeline_add() - publish a fence as the next point
 * @tl: the timeline
 * @f: from tio_fence_alloc(); its initial reference becomes the pending
 *     list's
 * @seqno: out, its seqno
 *
 * Return: 0, or -EOVERFLOW when the seqno space is spent (the caller
 * frees @f).
 */
int tio_timeline_add(struct tio_timeline *tl, struct tio_fence *f, u64 *seqno)
{
	unsigned long flags;
	int ret;

	spin_lock_irqsave(&tl->lock, flags);
	/*
	 * Under the lock, so that @f joins the pending list at its tail: a
	 * point gets a fence under the lock only once it has been emitted.
	 */
	ret = tio_timeline_next(tl, seqno);
	if (!ret) {
		tio_fence_init(f, *seqno);
		/* The initial reference is the pending list's. */
		list_add_tail(&f->link, &tl->pending);
	}
	spin_unlock_irqrestore(&tl->lock, flags);
	return ret;
}

/**
 * tio_timeline_emit() - add the next point
 * @tl: the timeline
 * @seqno: out, the new point's seqno
 *
 * The point has no fence until one is asked for (tio_timeline_fence()).
 *
 * Return: 0 or -EOVERFLOW.
 */
int tio_timeline_emit(struct tio_timeline *tl, u64 *seqno)
{
	return tio_timeline_next(tl, seqno);
}

/**
 * tio_timeline_signal() - complete every point up to a seqno
 * @tl: the timeline
 * @seqno: the last point to complete
 * @error: 0 or the negative errno the points complete with
 *
 * Points signal in order, so a point behind an imported point that has
 * not completed waits for it; an error also completes imported points
 * (the way to abandon a dependency).
 *
 * Return: 0; -EINVAL for a seqno never emitted; -ETIMEDOUT up to a point
 * that expired (nothing changes).
 */
int tio_timeline_signal(struct tio_timeline *tl, u64 seqno, int error)
{
	struct tio_span *sp = NULL;
	struct tio_fence *f;
	unsigned long flags;
	LIST_HEAD(retired);
	int ret = 0;

	/* Points completing with an error need a span, maybe. */
	if (unlikely(error)) {
		sp = kmalloc(sizeof(*sp), GFP_KERNEL_ACCOUNT);
		if (!sp)
			return -ENOMEM;
	}
	spin_lock_irqsave(&tl->lock, flags);
	if (seqno > tio_timeline_emitted(tl)) {
		ret = -EINVAL;
		goto unlock;
	}
	/* Too late: the point was given up on (as vgem answers). */
	if (seqno && seqno <= tl->expired_upto) {
		ret = -ETIMEDOUT;
		goto unlock;
	}
	if (seqno <= tl->completed && !error)
		goto unlock;	/* nothing to complete */
	if (seqno > tl->completed) {
		if (sp && tio_span_add(tl, sp, tl->completed + 1, seqno, error))
			sp = NULL;
		tl->completed = seqno;
	}
	if (likely(list_empty(&tl->pending))) {
		/* No point has a fence: every completed point signals. */
		if (tl->completed > tl->signalled) {
			tl->signalled = tl->completed;
			smp_wmb();	/* as in tio_timeline_advance() */
			WRITE_ONCE(*tl->word, tl->completed);
		}
		goto unlock;
	}
	/* Only points with a fence are visited: imports, and those asked for. */
	list_for_each_entry(f, &tl->pending, link) {
		if (f->base.seqno > seqno)
			break;
		if (f->ready || (f->imported && !error))
			continue;
		f->ready = true;
		f->status = error;
	}
	tio_timeline_advance(tl, &retired);
unlock:
	spin_unlock_irqrestore(&tl->lock, flags);
	if (unlikely(sp))
		kfree(sp);
	if (!list_empty(&retired))
		tio_fence_put_list(&retired);
	return ret;
}

/*
 * The fence of a pending point, made from @nf if it has none yet: it
 * joins @tl->pending in seqno order, completed already when a signal
 * reached it. Return: the fence (not referenced), or NULL when it has
 * none and @nf is NULL. Called with @tl->lock held.
 */
static struct tio_fence *tio_timeline_pending(struct tio_timeline *tl,
					      u64 seqno, struct tio_fence **nf)
{
	struct list_head *pos = &tl->pending;
	struct tio_fence *f;

	lockdep_assert_held(&tl->lock);
	/* Waits mostly ask for recent points: search from the newest. */
	list_for_each_entry_reverse(f, &tl->pending, link) {
		if (f->base.seqno == seqno)
			return f;
		if (f->base.seqno < seqno) {
			pos = &f->link;
			break;
		}
	}
	f = *nf;
	if (!f)
		return NULL;
	*nf = NULL;
	tio_fence_init(f, seqno);
	if (seqno <= tl->completed) {
		f->ready = true;
		f->status = tio_span_error(tl, seqno);
	}
	/* The initial reference is the pending list's. */
	list_add(&f->link, pos);
	return f;
}

/**
 * tio_timeline_fence() - the fence of an emitted point
 * @tl: the timeline
 * @seqno: an emitted seqno
 * @expose: the fence is about to be seen outside the file: a pending
 *	    point gets its deadline (tio_fence_expose_locked())
 *
 * A pending point gets its fence on the first request. A point that
 * signalled without keeping a fence is represented by a new, already
 * signalled fence of the same context, seqno and error. May sleep.
 *
 * Return: a referenced fence, ERR_PTR(-EINVAL) for a seqno never emitted,
 * or ERR_PTR(-ENOMEM).
 */
struct dma_fence *tio_timeline_fence(struct tio_timeline *tl, u64 seqno,
				     bool expose)
{
	struct dma_fence *fence = NULL;
	struct tio_fence *f, *nf = NULL;
	unsigned long flags;
	int error = 0;

	/* A point already rung signals before anyone waits for it. */
	if (tl->bell)
		tio_doorbell_ring(tl);
again:
	spin_lock_irqsave(&tl->lock, flags);
	if (!seqno || seqno > tio_timeline_emitted(tl)) {
		fence = ERR_PTR(-EINVAL);
	} else if (seqno > tl->signalled) {
		f = tio_timeline_pending(tl, seqno, &nf);
		if (!f) {
			/* Allocate outside the lock, then look again. */
			spin_unlock_irqrestore(&tl->lock, flags);
			nf = tio_fence_alloc(tl);
			if (!nf)
				return ERR_PTR(-ENOMEM);
			goto again;
		}
		fence = dma_fence_get(&f->base);
		if (expose)
			tio_fence_expose_locked(tl, f);
	} else {
		list_for_each_entry_reverse(f, &tl->errored, link) {
			if (f->base.seqno == seqno) {
				fence = dma_fence_get(&f->base);
				break;
			}
		}
		if (!fence)
			error = tio_span_error(tl, seqno);
	}
	spin_unlock_irqrestore(&tl->lock, flags);
	if (fence) {
		if (nf)
			tio_fence_free_unused(nf);
		return fence;
	}

	/* Signalled without a fence: a fresh, signalled one stands for it. */
	f = nf ?: tio_fence_alloc(tl);
	if (!f)
		return ERR_PTR(-ENOMEM);
	tio_fence_init(f, seqno);
	if (error)
		dma_fence_set_error(&f->base, error);
	dma_fence_signal(&f->base);
	return &f->base;
}

/**
 * tio_timeline_cancel() - the stream is gone: end every point
 * @tl: the timeline; no other user of it runs (the stream had no
 *	references left, dependency work sees @dead)
 *
 * Every unsignalled point signals with -ECANCELED (a point that already
 * carries an error keeps it), the seqno word is published and the list
 * references dropped. Stops the expiry work. May sleep.
 */
void tio_timeline_cancel(struct tio_timeline *tl)
{
	struct tio_fence *f;
	unsigned long flags;
	u64 emitted;
	LIST_HEAD(pending);
	LIST_HEAD(errored);

	spin_lock_irqsave(&tl->lock, flags);
	tl->dead = true;
	list_splice_init(&tl->pending, &pending);
	spin_unlock_irqrestore(&tl->lock, flags);

	/*
	 * Nothing arms the expiry work once @dead is set; a run that sees
	 * @dead drops its own reference, a queued one is ours to drop.
	 */
	if (cancel_delayed_work_sync(&tl->expire))
		tio_timeline_put(tl);
	/* Nothing arms the doorbell's poll once @dead is set either. */
	tio_doorbell_stop(tl);

	/*
	 * Unhook dependency callbacks outside our lock: a dependency may be a
	 * point of this very timeline. A callback that already ran leaves its
	 * reference to the irq_work, which sees @dead and only drops it.
	 */
	list_for_each_entry(f, &pending, link) {
		/* Never the last reference: the list holds one. */
		if (f->imported && dma_fence_remove_callback(f->dep, &f->cb))
			dma_fence_put(&f->base);
	}

	spin_lock_irqsave(&tl->lock, flags);
	emitted = tio_timeline_emitted(tl);
	if (tl->signalled < emitted) {
		tl->signalled = emitted;
		tl->completed = emitted;
		smp_wmb();	/* as in tio_timeline_advance() */
		WRITE_ONCE(*tl->word, emitted);
	}
	list_for_each_entry(f, &pending, link) {
		dma_fence_set_error(&f->base, f->status ?: -ECANCELED);
		dma_fence_signal_locked(&f->base);
	}
	list_splice_init(&tl->errored, &errored);
	spin_unlock_irqrestore(&tl->lock, flags);

	tio_fence_put_list(&pending);
	tio_fence_put_list(&errored);
}

/**
 * tio_timeline_create() - a new timeline with one reference
 * @timeout_ms: the bound on points seen outside the file
 * @doorbell: give it a doorbell page (tio_doorbell.c)
 *
 * Return: the timeline, or NULL.
 */
struct tio_timeline *tio_timeline_create(u32 timeout_ms, bool doorbell)
{
	struct tio_timeline *tl;

	tl = kzalloc(sizeof(*tl), GFP_KERNEL_ACCOUNT);
	if (!tl)
		return NULL;
	tl->page = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!tl->page)
		goto err_free;
	if (doorbell && tio_doorbell_init(tl)) {
		put_page(tl->page);
		goto err_free;
	}
	tl->word = page_address(tl->page);
	kref_init(&tl->ref);
	spin_lock_init(&tl->lock);
	tl->context = dma_fence_context_alloc(1);
	tl->timeout_ms = timeout_ms;
	INIT_DELAYED_WORK(&tl->expire, tio_timeline_expire);
	INIT_LIST_HEAD(&tl->pending);
	INIT_LIST_HEAD(&tl->errored);
	INIT_LIST_HEAD(&tl->spans);
	snprintf(tl->name, sizeof(tl->name), "stream-%d", task_tgid_nr(current));
	return tl;

err_free:
	kfree(tl);
	return NULL;
}

/**
 * tio_timeline_show() - one debugfs line of a timeline's state
 * @tl: the timeline
 * @m: the seq_file
 */
void tio_timeline_show(struct tio_timeline *tl, struct seq_file *m)
{
	u64 context, emitted, signalled, expired;
	unsigned long flags;
	bool polling;

	spin_lock_irqsave(&tl->lock, flags);
	context = tl->context;
	emitted = tio_timeline_emitted(tl);
	signalled = tl->signalled;
	expired = tl->nr_expired;
	polling = tl->polling;
	spin_unlock_irqrestore(&tl->lock, flags);
	seq_printf(m, "stream context=%llu emitted=%llu signalled=%llu pending=%llu timeout_ms=%u expired=%llu",
		   context, emitted, signalled, emitted - signalled, tl->timeout_ms,
		   expired);
	if (tl->bell)
		seq_printf(m, " doorbell=%llu polling=%d", READ_ONCE(*tl->bell), polling);
	seq_putc(m, '\n');
}
