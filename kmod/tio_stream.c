// SPDX-License-Identifier: GPL-2.0
/*
 * Streams: dma_fence timelines with a 64-bit seqno and a read-only seqno
 * page. Points signal strictly in seqno order: a point completes when
 * FENCE_SIGNAL reaches it (or, for an imported point, when its sync_file's
 * fence signals) and signals once every earlier point has signalled.
 * Destroying the stream (or closing the file) cancels every unsignalled
 * point with -ECANCELED, so no waiter or sync_file holder ever hangs.
 * Locking: see tio_stream.h.
 */
#include <linux/err.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "tio_compat.h"
#include "tio_priv.h"
#include "tio_stream.h"
#include "tio_trace.h"

/* Points that expired, module-wide (debugfs stats). */
atomic64_t tio_fences_expired = ATOMIC64_INIT(0);

/**
 * struct tio_stream - a stream handle
 * @obj: the table object
 * @tl: the timeline, one reference
 */
struct tio_stream {
	struct tio_obj obj;
	struct tio_timeline *tl;
};

static struct tio_stream *tio_stream_get(struct tio_file *tf, u32 handle)
{
	struct tio_obj *obj = tio_obj_get(tf, handle, TIO_OBJ_STREAM);

	if (IS_ERR(obj))
		return ERR_CAST(obj);
	return container_of(obj, struct tio_stream, obj);
}

static void tio_stream_put(struct tio_stream *s)
{
	tio_obj_put(&s->obj);
}

/*
 * Signal the run of ready points at the head of @tl->pending. The seqno
 * word is published (release order) before any of them signals, so a
 * woken waiter, or anyone who sees the fence signalled, reads a word at
 * least as new. Retired points that carry no error move to @retired for
 * the caller to put outside the lock. Called with @tl->lock held.
 */
static void tio_timeline_advance(struct tio_timeline *tl,
				 struct list_head *retired)
{
	struct tio_fence *f, *tmp;
	u64 last = tl->signalled;

	lockdep_assert_held(&tl->lock);
	list_for_each_entry(f, &tl->pending, link) {
		if (!f->ready)
			break;
		last = f->base.seqno;
	}
	if (last == tl->signalled)
		return;
	tl->signalled = last;
	smp_wmb();	/* the caller's writes before the seqno word */
	WRITE_ONCE(*tl->word, last);
	list_for_each_entry_safe(f, tmp, &tl->pending, link) {
		if (f->base.seqno > last)
			break;
		if (f->status)
			dma_fence_set_error(&f->base, f->status);
		dma_fence_signal_locked(&f->base);
		list_move_tail(&f->link, f->status ? &tl->errored : retired);
	}
}

static void tio_fence_put_list(struct list_head *list)
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

/*
 * Publish @f as the next point of @tl. Return: 0, or -EOVERFLOW when the
 * seqno space is spent (the caller frees @f).
 */
static int tio_timeline_add(struct tio_timeline *tl, struct tio_fence *f,
			    u64 *seqno)
{
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&tl->lock, flags);
	if (tl->emitted == U64_MAX) {
		ret = -EOVERFLOW;
	} else {
		*seqno = ++tl->emitted;
		tio_fence_init(f, *seqno);
		/* The initial reference is the pending list's. */
		list_add_tail(&f->link, &tl->pending);
	}
	spin_unlock_irqrestore(&tl->lock, flags);
	return ret;
}

static int tio_timeline_emit(struct tio_timeline *tl, u64 *seqno)
{
	struct tio_fence *f;
	int ret;

	f = tio_fence_alloc(tl);
	if (!f)
		return -ENOMEM;
	ret = tio_timeline_add(tl, f, seqno);
	if (ret)
		tio_fence_free_unused(f);
	return ret;
}

/*
 * Complete every point up to @seqno. Points signal in order, so a point
 * behind an imported point that has not completed waits for it; an error
 * also completes imported points (the way to abandon a dependency).
 */
static int tio_timeline_signal(struct tio_timeline *tl, u64 seqno, int error)
{
	struct tio_fence *f;
	unsigned long flags;
	LIST_HEAD(retired);
	int ret = 0;

	spin_lock_irqsave(&tl->lock, flags);
	if (seqno > tl->emitted) {
		ret = -EINVAL;
		goto unlock;
	}
	/* Too late: the point was given up on (as vgem answers). */
	if (seqno <= tl->expired_upto) {
		ret = -ETIMEDOUT;
		goto unlock;
	}
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
	tio_fence_put_list(&retired);
	return ret;
}

/*
 * Give a point about to be seen outside the file its deadline, and make
 * sure the expiry work runs by then. Deadlines of a timeline are handed
 * out in time order with one bound, so an armed work is never late for a
 * newer one. Called with @tl->lock held.
 */
static void tio_fence_expose_locked(struct tio_timeline *tl, struct tio_fence *f)
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
 * A referenced fence for point @seqno of @tl, or ERR_PTR(); @expose bounds
 * a pending point (tio_fence_expose_locked()). May sleep.
 */
static struct dma_fence *tio_timeline_fence(struct tio_timeline *tl, u64 seqno,
					    bool expose)
{
	struct dma_fence *fence = NULL;
	struct tio_fence *f;
	unsigned long flags;

	spin_lock_irqsave(&tl->lock, flags);
	if (!seqno || seqno > tl->emitted) {
		fence = ERR_PTR(-EINVAL);
	} else if (seqno > tl->signalled) {
		/* Pending seqnos are contiguous; waits mostly ask for recent ones. */
		list_for_each_entry_reverse(f, &tl->pending, link) {
			if (f->base.seqno == seqno) {
				fence = dma_fence_get(&f->base);
				if (expose)
					tio_fence_expose_locked(tl, f);
				break;
			}
		}
	} else {
		list_for_each_entry_reverse(f, &tl->errored, link) {
			if (f->base.seqno == seqno) {
				fence = dma_fence_get(&f->base);
				break;
			}
		}
	}
	spin_unlock_irqrestore(&tl->lock, flags);
	if (fence)
		return fence;

	/* Retired cleanly: a fresh, signalled fence stands for the point. */
	f = tio_fence_alloc(tl);
	if (!f)
		return ERR_PTR(-ENOMEM);
	tio_fence_init(f, seqno);
	dma_fence_signal(&f->base);
	return &f->base;
}

/*
 * Expire every point up to the last visible one whose deadline passed:
 * each signals with -ETIMEDOUT (in order, so earlier points go too).
 * Return: the points expired. Called with @tl->lock held.
 */
static u64 tio_timeline_expire_locked(struct tio_timeline *tl,
				      struct list_head *retired, u64 *upto,
				      unsigned long *next)
{
	unsigned long now = jiffies;
	struct tio_fence *f;
	u64 n = 0;

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
		if (f->ready)
			continue;
		f->ready = true;
		f->status = -ETIMEDOUT;
		n++;
	}
	tl->expired_upto = *upto;
	tl->nr_expired += n;
	tio_timeline_advance(tl, retired);
	return n;
}

/* The expiry work: see tio_fence_expose_locked(). */
static void tio_timeline_expire(struct work_struct *work)
{
	struct tio_timeline *tl = container_of(to_delayed_work(work),
					       struct tio_timeline, expire);
	unsigned long flags, next = 0;
	bool again = false;
	LIST_HEAD(retired);
	u64 n = 0, upto = 0;

	spin_lock_irqsave(&tl->lock, flags);
	tl->expire_armed = false;
	if (!tl->dead) {
		n = tio_timeline_expire_locked(tl, &retired, &upto, &next);
		if (next) {
			/* Keeps the reference this run had. */
			tl->expire_armed = true;
			again = true;
			queue_delayed_work(system_wq, &tl->expire,
					   time_after(next, jiffies) ? next - jiffies : 0);
		}
	}
	spin_unlock_irqrestore(&tl->lock, flags);
	tio_fence_put_list(&retired);
	if (n) {
		atomic64_add(n, &tio_fences_expired);
		trace_tio_fence_expire(tl->context, upto, n, tl->timeout_ms);
	}
	if (!again)
		tio_timeline_put(tl);
}

/*
 * The stream is gone: cancel every unsignalled point with -ECANCELED (a
 * point that already carries an error keeps it), publish the seqno word
 * and drop the list references. No other timeline user can run: the
 * stream had no references left, and dependency work sees @dead.
 */
static void tio_timeline_cancel(struct tio_timeline *tl)
{
	struct tio_fence *f;
	unsigned long flags;
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
	if (!list_empty(&pending)) {
		tl->signalled = tl->emitted;
		smp_wmb();	/* as in tio_timeline_advance() */
		WRITE_ONCE(*tl->word, tl->emitted);
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

static void tio_stream_release(struct tio_obj *obj)
{
	struct tio_stream *s = container_of(obj, struct tio_stream, obj);

	tio_timeline_cancel(s->tl);
	tio_timeline_put(s->tl);
	kfree_rcu(s, obj.rcu);
}

/*
 * The seqno page: exactly one page at offset 0, read-only for good
 * (VM_MAYWRITE cleared, so mprotect() cannot make it writable either).
 */
static int tio_stream_mmap(struct tio_obj *obj, struct vm_area_struct *vma)
{
	struct tio_stream *s = container_of(obj, struct tio_stream, obj);

	if (vma->vm_pgoff || vma->vm_end - vma->vm_start != PAGE_SIZE)
		return -EINVAL;
	if (vma->vm_flags & VM_WRITE)
		return -EPERM;
	tio_vm_flags_clear(vma, VM_MAYWRITE);
	tio_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	return vm_insert_page(vma, vma->vm_start, s->tl->page);
}

/* debugfs files/PID.N/objects: the timeline's fence state. */
static void tio_stream_show(struct tio_obj *obj, struct seq_file *m)
{
	struct tio_stream *s = container_of(obj, struct tio_stream, obj);
	struct tio_timeline *tl = s->tl;
	u64 context, emitted, signalled, expired;
	unsigned long flags;

	spin_lock_irqsave(&tl->lock, flags);
	context = tl->context;
	emitted = tl->emitted;
	signalled = tl->signalled;
	expired = tl->nr_expired;
	spin_unlock_irqrestore(&tl->lock, flags);
	seq_printf(m, "stream context=%llu emitted=%llu signalled=%llu pending=%llu timeout_ms=%u expired=%llu\n",
		   context, emitted, signalled, emitted - signalled, tl->timeout_ms,
		   expired);
}

static const struct tio_obj_ops tio_stream_ops = {
	.release = tio_stream_release,
	.mmap = tio_stream_mmap,
	.show = tio_stream_show,
};

static struct tio_timeline *tio_timeline_create(u32 timeout_ms)
{
	struct tio_timeline *tl;

	tl = kzalloc(sizeof(*tl), GFP_KERNEL_ACCOUNT);
	if (!tl)
		return NULL;
	tl->page = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!tl->page) {
		kfree(tl);
		return NULL;
	}
	tl->word = page_address(tl->page);
	kref_init(&tl->ref);
	spin_lock_init(&tl->lock);
	tl->context = dma_fence_context_alloc(1);
	tl->timeout_ms = timeout_ms;
	INIT_DELAYED_WORK(&tl->expire, tio_timeline_expire);
	INIT_LIST_HEAD(&tl->pending);
	INIT_LIST_HEAD(&tl->errored);
	snprintf(tl->name, sizeof(tl->name), "stream-%d", task_tgid_nr(current));
	return tl;
}

int tio_cmd_stream_create(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_stream_create *args = data;
	u32 bound = READ_ONCE(tio_fence_timeout_ms);
	struct tio_stream *s;
	int ret;

	if (args->flags || args->pad || args->fence_timeout_ms > bound)
		return -EINVAL;
	s = kzalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	if (!s)
		return -ENOMEM;
	s->tl = tio_timeline_create(args->fence_timeout_ms ?: bound);
	if (!s->tl) {
		ret = -ENOMEM;
		goto err_free;
	}
	tio_obj_init(&s->obj, TIO_OBJ_STREAM, &tio_stream_ops);
	args->context = s->tl->context;
	ret = tio_obj_insert(tf, &s->obj);
	if (ret)
		goto err_tl;
	args->handle = s->obj.handle;
	args->seqno_offset = tio_obj_mmap_offset(&s->obj);
	args->fence_timeout_ms = s->tl->timeout_ms;
	return 0;

err_tl:
	tio_timeline_put(s->tl);
err_free:
	kfree(s);
	return ret;
}

int tio_cmd_stream_destroy(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_handle_op *args = data;
	struct tio_obj *obj;

	if (args->flags)
		return -EINVAL;
	obj = tio_obj_remove(tf, args->handle, TIO_OBJ_STREAM);
	if (IS_ERR(obj))
		return PTR_ERR(obj);
	/* Cancels the points once in-flight commands drop their references. */
	tio_obj_put(obj);
	return 0;
}

int tio_cmd_fence_emit(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_fence_emit *args = data;
	struct tio_stream *s;
	int ret;

	if (args->flags)
		return -EINVAL;
	s = tio_stream_get(tf, args->stream);
	if (IS_ERR(s))
		return PTR_ERR(s);
	ret = tio_timeline_emit(s->tl, &args->seqno);
	tio_stream_put(s);
	return ret;
}

int tio_cmd_fence_signal(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_fence_signal *args = data;
	struct tio_stream *s;
	int ret;

	if (args->flags || args->pad)
		return -EINVAL;
	if (args->error > 0 || args->error < -MAX_ERRNO)
		return -EINVAL;
	s = tio_stream_get(tf, args->stream);
	if (IS_ERR(s))
		return PTR_ERR(s);
	ret = tio_timeline_signal(s->tl, args->seqno, args->error);
	tio_stream_put(s);
	return ret;
}

int tio_cmd_fence_wait(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_fence_wait *args = data;
	struct dma_fence *fence;
	int ret;

	if ((args->flags & ~TIO_WAIT_F_ABSOLUTE) || args->pad)
		return -EINVAL;
	fence = tio_stream_fence(tf, args->stream, args->seqno);
	if (IS_ERR(fence))
		return PTR_ERR(fence);
	/* Holds the fence only: destroying the stream wakes us. */
	ret = tio_fence_wait(fence, args->flags, args->timeout_ns);
	if (!ret)
		args->status = fence->error;
	dma_fence_put(fence);
	return ret;
}

/**
 * tio_stream_fence() - the fence of an emitted point
 * @tf: the file
 * @stream: a stream handle of @tf
 * @seqno: an emitted seqno of that stream
 *
 * The fence outlives the stream and the file. A point that signalled long
 * ago may be represented by a new, already signalled fence of the same
 * context, seqno and error. May sleep.
 *
 * Return: a referenced fence, ERR_PTR(-ENOENT) for an unknown handle,
 * ERR_PTR(-EINVAL) for a seqno never emitted, or ERR_PTR(-ENOMEM).
 */
struct dma_fence *tio_stream_fence(struct tio_file *tf, u32 stream, u64 seqno)
{
	struct tio_stream *s = tio_stream_get(tf, stream);
	struct dma_fence *fence;

	if (IS_ERR(s))
		return ERR_CAST(s);
	fence = tio_timeline_fence(s->tl, seqno, false);
	tio_stream_put(s);
	return fence;
}

/**
 * tio_stream_fence_expose() - the fence of a point other drivers will see
 * @tf: the file
 * @stream: a stream handle of @tf
 * @seqno: an emitted seqno of that stream
 *
 * As tio_stream_fence(), for FENCE_EXPORT and BUF_ATTACH_FENCE: a pending
 * point gets its deadline (the stream's fence_timeout_ms from now, unless
 * it had one), after which it and every earlier point signal with
 * -ETIMEDOUT. No indefinite fence leaves the file
 * (Documentation/driver-api/dma-buf.rst, "Indefinite DMA Fences").
 *
 * Return: as tio_stream_fence().
 */
struct dma_fence *tio_stream_fence_expose(struct tio_file *tf, u32 stream,
					  u64 seqno)
{
	struct tio_stream *s = tio_stream_get(tf, stream);
	struct dma_fence *fence;

	if (IS_ERR(s))
		return ERR_CAST(s);
	fence = tio_timeline_fence(s->tl, seqno, true);
	tio_stream_put(s);
	return fence;
}

/**
 * tio_stream_import() - add a point that waits for a foreign fence
 * @tf: the file
 * @stream: a stream handle of @tf
 * @dep: the fence to wait for; its reference is consumed in every case
 * @seqno: out, the new point
 *
 * The point completes with @dep's error when @dep signals, and signals
 * once every earlier point of the stream has.
 *
 * Return: 0, -ENOENT, -ENOMEM or -EOVERFLOW.
 */
int tio_stream_import(struct tio_file *tf, u32 stream, struct dma_fence *dep,
		      u64 *seqno)
{
	struct tio_stream *s;
	struct tio_fence *f;
	int ret;

	s = tio_stream_get(tf, stream);
	if (IS_ERR(s)) {
		ret = PTR_ERR(s);
		goto out_dep;
	}
	f = tio_fence_alloc(s->tl);
	if (!f) {
		ret = -ENOMEM;
		goto out_stream;
	}
	f->imported = true;
	f->dep = dep;	/* put by the fence's release from here on */
	init_irq_work(&f->work, tio_fence_dep_work);
	ret = tio_timeline_add(s->tl, f, seqno);
	if (ret) {
		tio_fence_free_unused(f);
		goto out_stream;
	}
	/* The callback's reference; the stream (ours) cannot cancel yet. */
	dma_fence_get(&f->base);
	if (dma_fence_add_callback(dep, &f->cb, tio_fence_dep_cb))
		tio_fence_dep_done(f);	/* already signalled */
	tio_stream_put(s);
	return 0;

out_stream:
	tio_stream_put(s);
out_dep:
	dma_fence_put(dep);
	return ret;
}
