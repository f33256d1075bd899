/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel API drift between the kernels tensorio builds against (6.1 on).
 *
 * Every TIO_HAVE_* symbol comes from a grep probe of the kernel headers in
 * kmod/Kbuild, so this file follows what a kernel provides (distribution
 * backports included) rather than its version number. Code elsewhere uses
 * only the tio_* wrappers below.
 */
#ifndef _TIO_COMPAT_H
#define _TIO_COMPAT_H

#include <linux/dma-buf.h>
#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/mm.h>

/* <linux/io_uring/cmd.h> split out of <linux/io_uring.h> in 6.7. */
#ifdef TIO_HAVE_IO_URING_CMD_H
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif
#ifndef TIO_HAVE_URING_CMD_CANCELABLE
#include <linux/io_uring_types.h>	/* the 6.1 monitor */
#include <linux/percpu-refcount.h>
#endif

/*
 * The 16 bytes of sqe->cmd: 6.1 points io_uring_cmd.cmd at them, later
 * kernels keep the SQE and provide io_uring_sqe_cmd().
 */
static inline const void *tio_uring_cmd_area(const struct io_uring_cmd *ioucmd)
{
#ifdef TIO_HAVE_IO_URING_SQE_CMD
	return io_uring_sqe_cmd(ioucmd->sqe);
#else
	return ioucmd->cmd;
#endif
}

/*
 * io_uring_cmd_done() gained @issue_flags in 6.3 (backported to 6.1.y);
 * @res2 became u64 in 6.7. @res2 reaches userspace only on CQE32 rings.
 */
static inline void tio_uring_cmd_done(struct io_uring_cmd *ioucmd, ssize_t ret,
				      s64 res2, unsigned int issue_flags)
{
#ifdef TIO_HAVE_URING_CMD_DONE_FLAGS
	io_uring_cmd_done(ioucmd, ret, res2, issue_flags);
#else
	io_uring_cmd_done(ioucmd, ret, res2);
#endif
}

/*
 * The SQE asks for no CQE on success (IOSQE_CQE_SKIP_SUCCESS). From 6.7,
 * io_uring clears a request's extra word only when it posts a CQE, so one
 * given to io_uring_cmd_done() for a skipped CQE would reach the next
 * request of the ring; 6.1 resets it per request. Read from the SQE,
 * whose flags io_uring has already acted on: a submitter rewriting them
 * meanwhile only loses or leaks its own extra word on its own ring.
 */
static inline bool tio_uring_cmd_skips_success(const struct io_uring_cmd *ioucmd)
{
#ifdef TIO_HAVE_IO_URING_SQE_CMD
	return READ_ONCE(ioucmd->sqe->flags) & IOSQE_CQE_SKIP_SUCCESS;
#else
	return false;
#endif
}

/*
 * A command that succeeded at issue, @res2 for the CQE32 extra word:
 * returns what ->uring_cmd returns. Returning 0 completes the request on
 * io_uring's batched path (one CQ commit per submission batch), but sets
 * only res; a CQE32 word needs io_uring_cmd_done(), which on 6.1 posts
 * each completion by itself (the completion lock, a commit and a
 * wakeup). The request's own fields are io_uring's: never written here.
 */
static inline int tio_uring_cmd_complete(struct io_uring_cmd *ioucmd, u64 res2,
					 unsigned int issue_flags)
{
	if (!res2 || !(issue_flags & IO_URING_F_CQE32) ||
	    tio_uring_cmd_skips_success(ioucmd))
		return 0;	/* no extra word to carry */
	tio_uring_cmd_done(ioucmd, 0, res2, issue_flags);
	return -EIOCBQUEUED;
}

/*
 * The task-work callback of io_uring_cmd_complete_in_task() takes the
 * issue flags since 6.1; tensorio callbacks always have that shape.
 */
#ifdef TIO_HAVE_URING_TW_FLAGS
#define TIO_URING_TW_CB(name)						\
	static void name(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
#else
#define TIO_URING_TW_CB(name)						\
	static void name##_flags(struct io_uring_cmd *ioucmd,		\
				 unsigned int issue_flags);		\
	static void name(struct io_uring_cmd *ioucmd)			\
	{								\
		name##_flags(ioucmd, 0);				\
	}								\
	static void name##_flags(struct io_uring_cmd *ioucmd,		\
				 unsigned int issue_flags)
#endif

/*
 * Cancelable uring commands (6.7): io_uring calls ->uring_cmd again with
 * IO_URING_F_CANCEL when the issuing task exits or the ring is torn down.
 * Without it (6.1) ->flush cancels on close and exit, and a monitor
 * (tio_uring.c) catches issuers that exit without closing and rings torn
 * down under a live process; see docs/uapi.md.
 */
#ifdef TIO_HAVE_URING_CMD_CANCELABLE
#define TIO_URING_HAS_CANCEL	true
#define TIO_URING_F_CANCEL	IO_URING_F_CANCEL
static inline void tio_uring_cmd_mark_cancelable(struct io_uring_cmd *ioucmd,
						 unsigned int issue_flags)
{
	io_uring_cmd_mark_cancelable(ioucmd, issue_flags);
}

static inline struct task_struct *tio_uring_cmd_task(struct io_uring_cmd *ioucmd)
{
	return current;	/* unused: io_uring cancels for us */
}

static inline bool tio_uring_cmd_ring_dying(struct io_uring_cmd *ioucmd)
{
	return false;
}
#else
#define TIO_URING_HAS_CANCEL	false
#define TIO_URING_F_CANCEL	0U
static inline void tio_uring_cmd_mark_cancelable(struct io_uring_cmd *ioucmd,
						 unsigned int issue_flags)
{
}

/*
 * 6.1 gives a uring command no way to learn that its issuer exits or its
 * ring is torn down; the monitor (tio_uring.c) looks at the request
 * itself. The task that submitted it: an io-wq worker may have issued it
 * (IOSQE_ASYNC), and that worker exits when idle, long before the issuer.
 */
static inline struct task_struct *tio_uring_cmd_task(struct io_uring_cmd *ioucmd)
{
	return cmd_to_io_kiocb(ioucmd)->task;
}

/* The ring is being torn down: its exit work waits for this request. */
static inline bool tio_uring_cmd_ring_dying(struct io_uring_cmd *ioucmd)
{
	return percpu_ref_is_dying(&cmd_to_io_kiocb(ioucmd)->ctx->refs);
}
#endif

/* vm_flags became read-only behind vm_flags_set() in 6.3. */
#ifndef TIO_HAVE_VM_FLAGS_SET
static inline void tio_vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void tio_vm_flags_clear(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#else
static inline void tio_vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vm_flags_set(vma, flags);
}

static inline void tio_vm_flags_clear(struct vm_area_struct *vma, vm_flags_t flags)
{
	vm_flags_clear(vma, flags);
}
#endif

/*
 * A reference on a file that is known not to be freed yet but whose count
 * may have dropped to zero: get_file_active() since 6.7, get_file_rcu()
 * (then a plain inc-not-zero) before. Return: true when referenced.
 */
static inline bool tio_file_get_live(struct file *file)
{
#ifdef TIO_HAVE_GET_FILE_ACTIVE
	return get_file_active(&file);
#else
	return get_file_rcu(file);
#endif
}

/* hrtimer_setup() sets the callback with the rest (6.13). */
static inline void tio_hrtimer_setup(struct hrtimer *timer,
				     enum hrtimer_restart (*fn)(struct hrtimer *),
				     clockid_t clock, enum hrtimer_mode mode)
{
#ifdef TIO_HAVE_HRTIMER_SETUP
	hrtimer_setup(timer, fn, clock, mode);
#else
	hrtimer_init(timer, clock, mode);
	timer->function = fn;
#endif
}

#endif /* _TIO_COMPAT_H */
