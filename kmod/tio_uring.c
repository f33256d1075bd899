// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring commands: IORING_OP_URING_CMD on /dev/tensorio, with cmd_op the
 * TIO_IOC_* number and the first eight bytes of sqe->cmd the payload's
 * user address. Every command runs through the ioctl dispatch table
 * (tio_cmd_user()); FENCE_WAIT and BUF_WAIT that would block park instead
 * and complete from a fence callback.
 *
 * A parked wait (struct tio_uwait) is completed exactly once, by whoever
 * first claims it (atomic cmpxchg on @claimed): the fence callback, its
 * timeout timer, ->flush (file closed or task exiting), or io_uring's
 * cancel call (IO_URING_F_CANCEL, where the kernel has it). The claimer
 * only records the result and queues task work, which is safe from any
 * context; the task work (tio_uwait_tw()) undoes everything, writes the
 * payload back and posts the CQE.
 *
 * Locking: tf->uring_lock (a spinlock) protects tf->parked. It is taken in
 * process context only (issue, task work, ->flush) and never from the
 * fence callback or the timer, which run in atomic context and touch
 * nothing but @claimed and @result.
 *
 * Without io_uring cancellation (6.1, which lacks IO_URING_F_CANCEL and
 * io_uring_cmd_mark_cancelable(), added in 6.7), nothing tells a uring
 * command that its issuer exits without closing a descriptor of the file
 * (an SQPOLL thread shares the file table it keeps alive; a registered
 * file needs no descriptor) or that its ring is torn down while the
 * process and the file live: io_uring's exit work then waits, and after
 * five minutes warns, for requests it cannot cancel. 6.1 has no hook for
 * either event that a driver can use (task exit reaches a file only
 * through ->flush of a descriptor; ring teardown calls no file operation
 * for a parked uring_cmd), so a per-file monitor looks, every
 * TIO_MONITOR_PERIOD and only while waits are parked, for waits whose
 * submitting task (the request's, not an io-wq worker's) is exiting or
 * exec'ing or whose ring is dying, and cancels them. Kernels with
 * cancelable commands never arm it.
 *
 * Lifetime: a wait holds two references, one for the issue path (it may
 * still be arming the timer when the wait completes elsewhere) and one
 * for the completion. io_uring holds the file for as long as the command
 * is in flight, so ->release never sees a parked wait.
 */
#include <linux/dma-fence.h>
#include <linux/dma-resv.h>
#include <linux/err.h>
#include <linux/hrtimer.h>
#include <linux/refcount.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "tio_compat.h"
#include "tio_dispatch.h"
#include "tio_priv.h"
#include "tio_trace.h"

#define TIO_MONITOR_PERIOD	(HZ / 4)

/* Parked waits, module-wide (debugfs). */
atomic_t tio_parked_total = ATOMIC_INIT(0);

union tio_wait_payload {
	struct tio_fence_wait fence;
	struct tio_buf_wait buf;
};

/**
 * struct tio_uwait - an asynchronous wait parked by an io_uring command
 * @node: on tf->parked, under tf->uring_lock
 * @cb: the fence callback
 * @timer: the timeout, when there is one
 * @ioucmd: the command
 * @tf: its file
 * @fence: the fence waited for (referenced)
 * @uptr: the payload in user memory
 * @owner: the issuer's file table, matched by ->flush
 * @task: the submitting task (referenced), watched by the monitor
 * @ref: see the file comment
 * @claimed: set once by whoever completes the wait
 * @result: the command's result, written by the claimer
 * @cmd: the caller's FENCE_WAIT or BUF_WAIT number (of its size)
 * @p: the kernel copy of the payload
 */
struct tio_uwait {
	struct list_head node;
	struct dma_fence_cb cb;
	struct hrtimer timer;
	struct io_uring_cmd *ioucmd;
	struct tio_file *tf;
	struct dma_fence *fence;
	void __user *uptr;
	fl_owner_t owner;
	struct task_struct *task;
	refcount_t ref;
	atomic_t claimed;
	int result;
	unsigned int cmd;
	union tio_wait_payload p;
};

static struct tio_uwait **tio_uwait_slot(struct io_uring_cmd *ioucmd)
{
	BUILD_BUG_ON(sizeof(struct tio_uwait *) > sizeof(ioucmd->pdu));
	return (struct tio_uwait **)ioucmd->pdu;
}

static void tio_uwait_put(struct tio_uwait *w)
{
	if (refcount_dec_and_test(&w->ref)) {
		dma_fence_put(w->fence);
		put_task_struct(w->task);
		kfree(w);
	}
}

TIO_URING_TW_CB(tio_uwait_tw)
{
	struct tio_uwait *w = *tio_uwait_slot(ioucmd);
	struct tio_file *tf = w->tf;
	int ret = w->result;
	int status = 0;

	hrtimer_cancel(&w->timer);
	dma_fence_remove_callback(w->fence, &w->cb);
	spin_lock(&tf->uring_lock);
	list_del(&w->node);
	spin_unlock(&tf->uring_lock);
	atomic_dec(&tf->nr_parked);
	atomic_dec(&tio_parked_total);

	if (!ret) {
		status = dma_fence_get_status(w->fence);
		status = min(status, 0);
		if (tio_cmd_kernel(w->cmd) == TIO_IOC_FENCE_WAIT)
			w->p.fence.status = status;
		else
			w->p.buf.status = status;
		/* Written back as ioctl() would, unless the issuer is gone. */
		if (!(current->flags & (PF_EXITING | PF_KTHREAD)) &&
		    tio_cmd_copy_out(w->cmd, w->uptr, &w->p))
			ret = -EFAULT;
	}
	trace_tio_uring_wait_done(tf, w->fence->context, w->fence->seqno, ret ?: status);
	tio_cmd_account(w->cmd, ret, 0);
	tio_uring_cmd_done(ioucmd, ret, status, issue_flags);
	tio_uwait_put(w);
}

/* Claim @w for completion with @result; any context. */
static void tio_uwait_complete(struct tio_uwait *w, int result)
{
	if (atomic_cmpxchg(&w->claimed, 0, 1))
		return;
	w->result = result;
	io_uring_cmd_complete_in_task(w->ioucmd, tio_uwait_tw);
}

static void tio_uwait_fence_cb(struct dma_fence *fence, struct dma_fence_cb *cb)
{
	tio_uwait_complete(container_of(cb, struct tio_uwait, cb), 0);
}

static enum hrtimer_restart tio_uwait_timeout(struct hrtimer *timer)
{
	struct tio_uwait *w = container_of(timer, struct tio_uwait, timer);

	/* As dma_fence_wait_timeout(): a fence signalled by now counts. */
	tio_uwait_complete(w, dma_fence_is_signaled(w->fence) ? 0 : -ETIME);
	return HRTIMER_NORESTART;
}

/* The fences BUF_WAIT waits for, as one fence (a signalled stub if none). */
static struct dma_fence *tio_uwait_buf_fence(struct tio_file *tf,
					     const struct tio_buf_wait *a)
{
	enum dma_resv_usage usage = tio_resv_usage(a->flags);
	struct dma_fence *fence = NULL;
	struct tio_buffer *buf;
	struct dma_resv *resv;
	int ret = 0;

	buf = tio_buffer_get(tf, a->handle);
	if (IS_ERR(buf))
		return ERR_CAST(buf);
	resv = tio_buffer_resv(buf);
	if (resv) {
		ret = dma_resv_lock_interruptible(resv, NULL);
		if (!ret) {
			ret = dma_resv_get_singleton(resv, usage, &fence);
			dma_resv_unlock(resv);
		}
	}
	tio_buffer_put(buf);
	if (ret)
		return ERR_PTR(ret);
	return fence ?: dma_fence_get_stub();
}

/* Park a wait that did not complete when polled; -EIOCBQUEUED or errno. */
static int tio_uwait_park(struct io_uring_cmd *ioucmd, struct tio_file *tf,
			  unsigned int cmd, void __user *uptr,
			  const union tio_wait_payload *p, unsigned int issue_flags)
{
	bool fence_wait = tio_cmd_kernel(cmd) == TIO_IOC_FENCE_WAIT;
	u32 flags = fence_wait ? p->fence.flags : p->buf.flags;
	s64 timeout = fence_wait ? p->fence.timeout_ns : p->buf.timeout_ns;
	enum hrtimer_mode mode = flags & TIO_WAIT_F_ABSOLUTE ?
				 HRTIMER_MODE_ABS : HRTIMER_MODE_REL;
	struct dma_fence *fence;
	struct tio_uwait *w;

	if (fence_wait)
		fence = tio_stream_fence(tf, p->fence.stream, p->fence.seqno);
	else
		fence = tio_uwait_buf_fence(tf, &p->buf);
	if (IS_ERR(fence))
		return PTR_ERR(fence);
	w = kzalloc(sizeof(*w), GFP_KERNEL);
	if (!w) {
		dma_fence_put(fence);
		return -ENOMEM;
	}
	INIT_LIST_HEAD(&w->cb.node);
	hrtimer_init(&w->timer, CLOCK_MONOTONIC, mode);
	w->timer.function = tio_uwait_timeout;
	w->ioucmd = ioucmd;
	w->tf = tf;
	w->fence = fence;
	w->uptr = uptr;
	w->owner = current->files;
	w->task = get_task_struct(tio_uring_cmd_task(ioucmd));
	refcount_set(&w->ref, 2);
	w->cmd = cmd;
	w->p = *p;
	*tio_uwait_slot(ioucmd) = w;

	tio_uring_cmd_mark_cancelable(ioucmd, issue_flags);
	spin_lock(&tf->uring_lock);
	list_add_tail(&w->node, &tf->parked);
	spin_unlock(&tf->uring_lock);
	atomic_inc(&tf->nr_parked);
	atomic_inc(&tio_parked_total);
	if (!TIO_URING_HAS_CANCEL)
		schedule_delayed_work(&tf->uring_monitor, TIO_MONITOR_PERIOD);
	trace_tio_uring_wait_park(tf, fence->context, fence->seqno, timeout);

	if (dma_fence_add_callback(fence, &w->cb, tio_uwait_fence_cb))
		tio_uwait_complete(w, 0);	/* signalled meanwhile */
	if (timeout >= 0)
		hrtimer_start(&w->timer, ns_to_ktime(timeout), mode);
	/* Completed while arming: its task work may have missed the timer. */
	if (atomic_read(&w->claimed))
		hrtimer_cancel(&w->timer);
	tio_uwait_put(w);
	return -EIOCBQUEUED;
}

/*
 * FENCE_WAIT and BUF_WAIT: poll through the shared handler first, so that
 * validation, errors and already signalled fences give exactly what
 * ioctl() gives; park only what would have blocked.
 */
static int tio_uring_wait(struct io_uring_cmd *ioucmd, struct tio_file *tf,
			  unsigned int cmd, void __user *uptr,
			  unsigned int issue_flags)
{
	unsigned int kcmd = tio_cmd_kernel(cmd);
	union tio_wait_payload p;
	s64 *timeout, saved;
	int ret;

	ret = tio_cmd_copy_in(cmd, &p, uptr);
	if (ret) {
		tio_cmd_account(cmd, ret, 0);
		return ret;
	}
	timeout = kcmd == TIO_IOC_FENCE_WAIT ? &p.fence.timeout_ns :
					       &p.buf.timeout_ns;
	saved = *timeout;
	*timeout = 0;
	ret = tio_cmd_poll(tf, cmd, &p);
	*timeout = saved;
	if (ret == -ETIME && saved) {
		ret = tio_uwait_park(ioucmd, tf, cmd, uptr, &p, issue_flags);
		if (ret == -EIOCBQUEUED)
			return ret;
	} else if (ret >= 0 && tio_cmd_copy_out(cmd, uptr, &p)) {
		ret = -EFAULT;
	}
	tio_cmd_account(cmd, ret, 0);
	return ret;
}

/* IO_URING_F_CANCEL: the issuing task exits or the ring goes away. */
static int tio_uring_cancel(struct io_uring_cmd *ioucmd)
{
	tio_uwait_complete(*tio_uwait_slot(ioucmd), -ECANCELED);
	return 0;
}

/*
 * INFO in the SQE: of its payload only the two inputs, flags and pad
 * (which must be zero), are read, once each; its outputs go word by word
 * to result_ptr (tio_words_out()) and nothing of them is read back, so no
 * value is fetched twice and no six-word copy of the payload is made. The
 * same result, statistics and tracepoints as the record path; with
 * handler timing on, INFO takes that path.
 */
static __always_inline int tio_uring_info(struct io_uring_cmd *ioucmd,
					  struct tio_file *tf,
					  const struct tio_info *in, u64 uout,
					  unsigned int issue_flags)
{
	struct tio_info info;
	int ret;

	ret = tio_info_enter(tf, in);
	trace_tio_cmd_exit(tf, _IOC_NR(TIO_IOC_INFO), ret);
	if (likely(!ret)) {
		info.flags = 0;
		info.pad = 0;
		tio_info_set(&info);
		if (uout && unlikely(!tio_words_out(u64_to_user_ptr(uout),
						    (const u64 *)&info,
						    sizeof(info))))
			ret = -EFAULT;
		else
			return tio_uring_cmd_complete(ioucmd, info.features,
						      issue_flags);
	}
	tio_uring_cmd_done(ioucmd, ret, 0, issue_flags);
	return -EIOCBQUEUED;
}

/*
 * The payload in a 128-byte SQE (struct tio_uring_inline), read once from
 * the SQE (no user copy in) and run as a command ring record; the result
 * in res, bytes 8..15 of the returned payload in res2 (CQE32 rings), the
 * whole of it at result_ptr if given; fds the command created installed
 * only after they reached result_ptr. A success without an extra word
 * completes at issue (tio_uring_cmd_complete()); INFO runs in the SQE
 * (tio_uring_info()).
 *
 * Not inlined into tio_uring_cmd(): this path then sets up only its own
 * frame, not the pointer form's.
 */
static noinline int tio_uring_inline(struct io_uring_cmd *ioucmd,
				     const u64 *area, unsigned int issue_flags)
{
	struct tio_file *tf = ioucmd->file->private_data;
	bool nonblock = issue_flags & IO_URING_F_NONBLOCK;
	const u64 *src = area + 2;
	struct tio_call call;
	struct tio_cmd rec;
	unsigned int out;
	u64 uout, res2 = 0;
	u64 *w;
	int ret;

	if (!(issue_flags & IO_URING_F_SQE128))
		return -EINVAL;
	uout = READ_ONCE(area[0]);
	rec.op = ioucmd->cmd_op;
	if (rec.op == TIO_IOC_INFO && !static_branch_unlikely(&tio_stats_timing))
		return tio_uring_info(ioucmd, tf, (const struct tio_info *)src,
				      uout, issue_flags);
	rec.flags = 0;
	rec.result = 0;
	rec.pad = 0;
	/* Unrolled: a loop costs as much again in counting. */
	w = (u64 *)rec.payload.bytes;
	w[0] = READ_ONCE(src[0]);
	w[1] = READ_ONCE(src[1]);
	w[2] = READ_ONCE(src[2]);
	w[3] = READ_ONCE(src[3]);
	w[4] = READ_ONCE(src[4]);
	w[5] = READ_ONCE(src[5]);
	/* Directly dispatched commands never block (TIO_NB_INLINE). */
	if (nonblock && !tio_record_direct(rec.op) && tio_record_may_block(&rec))
		return -EAGAIN;
	tio_call_init(&call, nonblock);
	ret = tio_record_run_fast(tf, &rec, &call, &out);
	/* Whole words (every hot command's size) without copy_to_user(). */
	if (ret >= 0 && out && uout &&
	    (out % sizeof(u64) ?
	     copy_to_user(u64_to_user_ptr(uout), w, out) :
	     !tio_words_out(u64_to_user_ptr(uout), w, out)))
		ret = -EFAULT;
	if (ret >= 0 && call.n && !uout)
		ret = -EINVAL;		/* an fd nobody would learn */
	if (ret >= 0) {
		tio_call_install_fds(&call);
		if (out >= 2 * sizeof(u64))
			res2 = w[1];
	} else {
		tio_call_abort_fds(&call);
	}
	ret = tio_user_errno(ret);
	if (!ret)
		return tio_uring_cmd_complete(ioucmd, res2, issue_flags);
	if (ret == -EAGAIN && nonblock)
		return ret;
	/* Posted here as for SUBMIT: 6.1 cannot return res > 0. */
	tio_uring_cmd_done(ioucmd, ret, res2, issue_flags);
	return -EIOCBQUEUED;
}

/* The pointer form: the payload's user address in the SQE's first word. */
static noinline int tio_uring_ptr(struct io_uring_cmd *ioucmd, const u64 *area,
				  unsigned int issue_flags)
{
	struct tio_file *tf = ioucmd->file->private_data;
	void __user *uptr = u64_to_user_ptr(READ_ONCE(area[0]));
	long ret;

	switch (tio_cmd_kernel(ioucmd->cmd_op)) {
	case TIO_IOC_FENCE_WAIT:
	case TIO_IOC_BUF_WAIT:
		ret = tio_uring_wait(ioucmd, tf, ioucmd->cmd_op, uptr,
				     issue_flags);
		break;
	default:
		ret = tio_cmd_user(tf, ioucmd->cmd_op, uptr,
				   issue_flags & IO_URING_F_NONBLOCK);
		break;
	}
	ret = tio_user_errno(ret);
	/*
	 * A positive result (SUBMIT's failed-record count) is posted here:
	 * 6.1's io_uring_cmd() returns it to its caller, and io-wq
	 * (IOSQE_ASYNC) never completes a request that returned > 0.
	 */
	if (ret > 0) {
		tio_uring_cmd_done(ioucmd, ret, 0, issue_flags);
		return -EIOCBQUEUED;
	}
	return ret;
}

/**
 * tio_uring_cmd() - file_operations.uring_cmd of /dev/tensorio
 * @ioucmd: the command: cmd_op is a TIO_IOC_* number, the first eight
 *	    bytes of sqe->cmd the payload's address, the next eight zero
 * @issue_flags: IO_URING_F_*
 *
 * Return: the command's result (the CQE's res), or -EIOCBQUEUED for a
 * parked wait, whose CQE comes when its fence signals, its timeout passes
 * or it is cancelled (-ECANCELED).
 */
int tio_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	const u64 *area;

	if (issue_flags & TIO_URING_F_CANCEL)
		return tio_uring_cancel(ioucmd);
	area = tio_uring_cmd_area(ioucmd);
	switch (READ_ONCE(area[1])) {
	case TIO_URING_F_INLINE:
		return tio_uring_inline(ioucmd, area, issue_flags);
	case 0:
		return tio_uring_ptr(ioucmd, area, issue_flags);
	default:
		return -EINVAL;
	}
}

/**
 * tio_uring_flush() - file_operations.flush: cancel the closer's waits
 * @file: the file
 * @id: the file table closing a descriptor of @file
 *
 * io_uring holds the file while a command is in flight, so ->release
 * cannot cancel parked waits. Closing a descriptor (explicitly or by task
 * exit) completes, with -ECANCELED, every wait parked by a task of the
 * same file table.
 *
 * Return: 0.
 */
int tio_uring_flush(struct file *file, fl_owner_t id)
{
	struct tio_file *tf = file->private_data;
	struct tio_uwait *w;

	spin_lock(&tf->uring_lock);
	list_for_each_entry(w, &tf->parked, node)
		if (w->owner == id)
			tio_uwait_complete(w, -ECANCELED);
	spin_unlock(&tf->uring_lock);
	return 0;
}

/*
 * The issuer or its thread group is exiting or exec'ing. Read without
 * siglock: a stale answer only delays the cancel by one period.
 */
static bool tio_issuer_gone(struct task_struct *task)
{
	const struct signal_struct *sig = task->signal;

	return (READ_ONCE(task->flags) & PF_EXITING) ||
	       (READ_ONCE(sig->flags) & SIGNAL_GROUP_EXIT) ||
	       READ_ONCE(sig->group_exec_task);
}

/* Cancel the waits of issuers and rings that are gone (file comment). */
static void tio_uring_monitor(struct work_struct *work)
{
	struct tio_file *tf = container_of(to_delayed_work(work),
					   struct tio_file, uring_monitor);
	struct tio_uwait *w;
	bool again;

	spin_lock(&tf->uring_lock);
	list_for_each_entry(w, &tf->parked, node)
		if (tio_issuer_gone(w->task) ||
		    tio_uring_cmd_ring_dying(w->ioucmd))
			tio_uwait_complete(w, -ECANCELED);
	again = !list_empty(&tf->parked);
	spin_unlock(&tf->uring_lock);
	if (again)
		schedule_delayed_work(&tf->uring_monitor, TIO_MONITOR_PERIOD);
}

/**
 * tio_uring_file_init() - initialise a new file's io_uring state
 * @tf: the file
 */
void tio_uring_file_init(struct tio_file *tf)
{
	spin_lock_init(&tf->uring_lock);
	INIT_LIST_HEAD(&tf->parked);
	atomic_set(&tf->nr_parked, 0);
	atomic_set(&tf->nr_waits, 0);
	INIT_DELAYED_WORK(&tf->uring_monitor, tio_uring_monitor);
}

/**
 * tio_uring_file_release() - stop the monitor of a file being released
 * @tf: the file
 */
void tio_uring_file_release(struct tio_file *tf)
{
	WARN_ON_ONCE(!list_empty(&tf->parked));
	cancel_delayed_work_sync(&tf->uring_monitor);
}
