// SPDX-License-Identifier: GPL-2.0
/*
 * Pinned-memory accounting. Every page a buffer keeps resident (allocated
 * by BUF_ALLOC or pinned by BUF_PIN_USER) is charged twice:
 *
 *  - to the owner's mm as pinned_vm (shown as VmPin in /proc/PID/status),
 *    checked against the caller's RLIMIT_MEMLOCK unless it has
 *    CAP_IPC_LOCK, as RDMA and io_uring do for long-term pins;
 *  - to tio_pinned_total, checked against the max_pinned module parameter.
 *
 * Both counters are atomics, so a charge is returned from any context,
 * including munmap (mmap_lock held) and a dma-buf release after the owning
 * file and process are gone: the buffer holds an mmgrab() reference on
 * the charged mm until then.
 */
#include <linux/capability.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>

#include "tio_buffer.h"

/**
 * tio_memlock_charge() - charge pinned pages before pinning them
 * @mm: the owner's mm
 * @npages: pages about to be pinned
 *
 * Return: 0; -ENOMEM when the module-wide cap or RLIMIT_MEMLOCK would be
 * exceeded; -EPERM when RLIMIT_MEMLOCK is zero and the caller lacks
 * CAP_IPC_LOCK (as mlock(2)). Nothing is charged on failure.
 */
int tio_memlock_charge(struct mm_struct *mm, unsigned long npages)
{
	s64 bytes = (s64)npages << PAGE_SHIFT;
	unsigned long limit;
	int ret = -ENOMEM;
	s64 pinned;

	if (atomic64_add_return(bytes, &tio_pinned_total) >
	    (s64)READ_ONCE(tio_max_pinned))
		goto err_total;
	/*
	 * The limit first, the capability only when it is exceeded (as
	 * mlock(2) does): within the limit the answer is the same, without
	 * a capability check and its LSM hooks on every allocation.
	 */
	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	pinned = atomic64_add_return(npages, &mm->pinned_vm);
	if (limit && pinned >= 0 && (u64)pinned <= limit)
		return 0;
	if (capable(CAP_IPC_LOCK))
		return 0;
	if (!limit)
		ret = -EPERM;
	atomic64_sub(npages, &mm->pinned_vm);
err_total:
	atomic64_sub(bytes, &tio_pinned_total);
	return ret;
}

/**
 * tio_memlock_uncharge() - return a charge taken by tio_memlock_charge()
 * @mm: the mm charged (still referenced by the caller)
 * @npages: pages charged
 *
 * Context: any; does not sleep.
 */
void tio_memlock_uncharge(struct mm_struct *mm, unsigned long npages)
{
	atomic64_sub(npages, &mm->pinned_vm);
	atomic64_sub((s64)npages << PAGE_SHIFT, &tio_pinned_total);
}
