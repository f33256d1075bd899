// SPDX-License-Identifier: GPL-2.0
/*
 * The command ring: struct tio_cmd records in pages the driver allocates
 * (zeroed, vmap()ed for the kernel) and userspace maps shared at
 * TIO_RING_MMAP_OFFSET.
 * Userspace writes records and publishes them by advancing tail (release);
 * TIO_IOC_RING_ENTER, by ioctl or uring_cmd, runs them in place and
 * publishes head (release) once their results are written.
 *
 * What the kernel trusts: nothing in the shared pages. Its own copy of head
 * (struct tio_ring.head) decides which records run; tail is read once per
 * enter (acquire) and refused unless 0..entries records ahead of head; the
 * head word userspace sees must still be the kernel's (else the enter is
 * refused and the word restored), so a rewound or skipped head never runs
 * a record twice or skips one.
 *
 * No double fetch: every word of a slot the kernel uses is read exactly
 * once, with READ_ONCE(), and only the value read is checked and used.
 *  - The header words (op and flags; result and pad) go to a stack copy
 *    first; the copy's op, flags and pad decide the path.
 *  - INFO with zero flags and pad runs in its slot (tio_ring_info()): of
 *    its payload only the two inputs, flags and pad, are read, once each;
 *    its outputs are written with WRITE_ONCE() and never read back.
 *  - Every other record (and an INFO whose header fails, or with handler
 *    timing on) has its six payload words read once into the stack copy,
 *    which is all that is checked and run; its result and returned
 *    payload are written back into the slot.
 * A thread rewriting records meanwhile changes which command runs, never
 * what a checked command sees. A racing writer may overwrite results or
 * an INFO's zero inputs after the check, which only it sees.
 *
 * Locking: ring->lock serialises enters (ioctl, uring_cmd, forked
 * children sharing the file), which own head. A non-blocking io_uring
 * issue only trylocks it and punts (-EAGAIN) to io-wq when it is busy or a
 * record may sleep; nothing has run then. tf->ring is set once (cmpxchg)
 * and freed at release, when no enter can run.
 *
 * Fork: the mapping is MAP_SHARED (a private one is refused), so a child
 * shares the ring with its parent through the same file, as io_uring's
 * rings are shared; enters from both are serialised by ring->lock.
 */
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "tio_compat.h"
#include "tio_buffer.h"
#include "tio_dispatch.h"
#include "tio_priv.h"

/**
 * struct tio_ring - a file's command ring
 * @lock: serialises enters (sleeps: records may wait); protects @head
 * @head: records consumed, the kernel's own copy
 * @entries: size in records, a power of two
 * @hdr: the shared mapping's start (the kernel's vmap() of @pages)
 * @cmds: its records
 * @pages: the ring's pages
 * @npages: how many, charged to the file's mm
 */
struct tio_ring {
	struct mutex lock;	/* serialises enters, owns @head */
	u32 head;
	u32 entries;
	struct tio_ring_hdr *hdr;
	struct tio_cmd *cmds;
	struct page **pages;
	unsigned long npages;
};

static_assert(sizeof(struct tio_ring_hdr) == TIO_RING_CMDS_OFFSET);
static_assert(sizeof(struct tio_ring_setup) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_ring_enter) <= TIO_CMD_PAYLOAD);

static size_t tio_ring_bytes(u32 entries)
{
	return PAGE_ALIGN(TIO_RING_CMDS_OFFSET + (size_t)entries * sizeof(struct tio_cmd));
}

/* Pages, their vmap and the ring; @ring->pages may be partly filled. */
static void tio_ring_free(struct tio_ring *ring)
{
	unsigned long i;

	if (ring->hdr)
		vunmap(ring->hdr);
	for (i = 0; ring->pages && i < ring->npages && ring->pages[i]; i++)
		__free_page(ring->pages[i]);
	kvfree(ring->pages);
	kfree(ring);
}

/*
 * Zeroed pages, without the allocation-failure splat (vmalloc warns): a
 * failed setup is an ordinary -ENOMEM.
 */
static int tio_ring_alloc(struct tio_ring *ring)
{
	unsigned long i;

	ring->pages = kvcalloc(ring->npages, sizeof(*ring->pages), GFP_KERNEL);
	if (!ring->pages)
		return -ENOMEM;
	for (i = 0; i < ring->npages; i++) {
		ring->pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO |
					    __GFP_ACCOUNT | __GFP_NOWARN);
		if (!ring->pages[i])
			return -ENOMEM;
	}
	ring->hdr = vmap(ring->pages, ring->npages, VM_MAP, PAGE_KERNEL);
	return ring->hdr ? 0 : -ENOMEM;
}

/**
 * tio_cmd_ring_setup() - TIO_IOC_RING_SETUP: give the file its command ring
 * @tf: the calling file
 * @data: kernel copy of the struct tio_ring_setup payload
 * @call: unused
 *
 * Return: 0; -EINVAL for a bad size or flags, -EBUSY when the file has a
 * ring, -ENOMEM or -EPERM when it cannot be allocated or charged.
 */
int tio_cmd_ring_setup(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_ring_setup *rs = data;
	struct tio_ring *ring;
	size_t bytes;
	int ret;

	if (rs->flags || !rs->entries || rs->entries > TIO_RING_MAX_ENTRIES ||
	    !is_power_of_2(rs->entries))
		return -EINVAL;
	if (READ_ONCE(tf->ring))
		return -EBUSY;
	bytes = tio_ring_bytes(rs->entries);
	ring = kzalloc(sizeof(*ring), GFP_KERNEL);
	if (!ring)
		return -ENOMEM;
	ring->npages = bytes >> PAGE_SHIFT;
	ret = tio_memlock_charge(tf->mm, ring->npages);
	if (ret)
		goto err_free;
	ret = tio_ring_alloc(ring);
	if (ret)
		goto err_uncharge;
	mutex_init(&ring->lock);
	ring->entries = rs->entries;
	ring->cmds = (struct tio_cmd *)((u8 *)ring->hdr + TIO_RING_CMDS_OFFSET);
	ring->hdr->entries = rs->entries;
	ring->hdr->mask = rs->entries - 1;
	/* Published whole: enters and mmap read it with acquire. */
	if (cmpxchg_release(&tf->ring, NULL, ring)) {
		ret = -EBUSY;
		goto err_uncharge;
	}
	rs->size = bytes;
	rs->mmap_offset = TIO_RING_MMAP_OFFSET;
	return 0;

err_uncharge:
	tio_memlock_uncharge(tf->mm, ring->npages);
err_free:
	tio_ring_free(ring);
	return ret;
}

/**
 * tio_ring_mmap() - map the file's ring (offset TIO_RING_MMAP_OFFSET)
 * @tf: the file
 * @vma: the mapping: shared, at most the ring's size, from its start
 *
 * Return: 0; -ENOENT without a ring, -EINVAL for a private or
 * oversized mapping.
 */
int tio_ring_mmap(struct tio_file *tf, struct vm_area_struct *vma)
{
	/* Pairs with the cmpxchg_release() of setup: a whole ring. */
	struct tio_ring *ring = smp_load_acquire(&tf->ring);
	unsigned long n = vma_pages(vma);

	if (!ring)
		return -ENOENT;
	if (!(vma->vm_flags & VM_SHARED) || vma->vm_pgoff || n > ring->npages)
		return -EINVAL;
	tio_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	return vm_insert_pages(vma, vma->vm_start, ring->pages, &n);
}

/**
 * tio_ring_release() - free the file's ring at release
 * @tf: the file; no enter runs and no mapping is left (each holds the file)
 */
void tio_ring_release(struct tio_file *tf)
{
	if (!tf->ring)
		return;
	tio_memlock_uncharge(tf->mm, tf->ring->npages);
	tio_ring_free(tf->ring);
	tf->ring = NULL;
}

/*
 * A slot's header words (op and flags; result and pad) into the kernel's
 * copy, each read exactly once.
 */
static __always_inline void tio_ring_read_hdr(struct tio_cmd *dst,
					      const struct tio_cmd *slot)
{
	const u64 *src = (const u64 *)slot;
	u64 *d = (u64 *)dst;

	BUILD_BUG_ON(sizeof(*dst) != 8 * sizeof(u64));
	BUILD_BUG_ON(offsetof(struct tio_cmd, payload) != 2 * sizeof(u64));
	d[0] = READ_ONCE(src[0]);
	d[1] = READ_ONCE(src[1]);
}

/*
 * The payload's six words into the copy, each read exactly once
 * (unrolled: a loop costs as much again in counting).
 */
static __always_inline void tio_ring_read_payload(struct tio_cmd *dst,
						  const struct tio_cmd *slot)
{
	const u64 *src = (const u64 *)slot;
	u64 *d = (u64 *)dst;

	d[2] = READ_ONCE(src[2]);
	d[3] = READ_ONCE(src[3]);
	d[4] = READ_ONCE(src[4]);
	d[5] = READ_ONCE(src[5]);
	d[6] = READ_ONCE(src[6]);
	d[7] = READ_ONCE(src[7]);
}

/* The whole record, for the non-blocking enter's scan. */
static __always_inline void tio_ring_read(struct tio_cmd *dst,
					  const struct tio_cmd *slot)
{
	tio_ring_read_hdr(dst, slot);
	tio_ring_read_payload(dst, slot);
}

/*
 * INFO, its header already checked, run in the slot: its two input
 * fields (flags and pad, which must be zero) are each read once, its
 * outputs written with WRITE_ONCE() and nothing of them read back, so
 * no value is fetched twice. The same result, statistics and
 * tracepoints as tio_record_hot() on a copy; a failed INFO leaves the
 * payload as it was.
 */
static __always_inline int tio_ring_info(struct tio_file *tf,
					 struct tio_cmd *slot)
{
	struct tio_info *info = (struct tio_info *)slot->payload.bytes;
	const unsigned int nr = _IOC_NR(TIO_IOC_INFO);
	int ret;

	ret = tio_info_enter(tf, info);
	if (likely(!ret)) {
		WRITE_ONCE(info->version, TIO_UAPI_VERSION);
		WRITE_ONCE(info->features, tio_info_features());
		WRITE_ONCE(info->max_buf_size, READ_ONCE(tio_max_buf_size));
		WRITE_ONCE(info->max_pinned, READ_ONCE(tio_max_pinned));
		WRITE_ONCE(info->pinned, atomic64_read(&tio_pinned_total));
		WRITE_ONCE(info->max_submit, TIO_MAX_SUBMIT);
	}
	WRITE_ONCE(slot->result, ret);
	trace_tio_cmd_exit(tf, nr, ret);
	return ret;
}

/* A record's result and the @out bytes of its payload back into its slot. */
static __always_inline void tio_ring_write(struct tio_cmd *slot,
					   const struct tio_cmd *rec,
					   unsigned int out, int result)
{
	const u64 *src = (const u64 *)rec->payload.bytes;
	u64 *d = (u64 *)slot->payload.bytes;
	unsigned int i;

	BUILD_BUG_ON(TIO_CMD_PAYLOAD != 6 * sizeof(u64));
	if (likely(out == TIO_CMD_PAYLOAD)) {
		WRITE_ONCE(d[0], src[0]);
		WRITE_ONCE(d[1], src[1]);
		WRITE_ONCE(d[2], src[2]);
		WRITE_ONCE(d[3], src[3]);
		WRITE_ONCE(d[4], src[4]);
		WRITE_ONCE(d[5], src[5]);
	} else if (likely(!(out % sizeof(u64)))) {
		for (i = 0; i < out / sizeof(u64); i++)
			WRITE_ONCE(d[i], src[i]);
	} else {
		memcpy(slot->payload.bytes, rec->payload.bytes, out);
	}
	WRITE_ONCE(slot->result, result);
}

/*
 * Run @n records from @head, each word read once (INFO in its slot, the
 * others from a stack copy), results and payloads written back into their
 * slots; @nonblock a constant, so that the blocking path's loop has no
 * test for it. Return: records consumed
 * (all @n, or up to the first failure without @cont); *@failed counts
 * the failed ones.
 */
static __always_inline unsigned int
tio_ring_run(struct tio_file *tf, struct tio_ring *ring, u32 head, u32 n,
	     bool cont, struct tio_call *call, const bool nonblock,
	     unsigned int *failed)
{
	struct tio_cmd *slot = &ring->cmds[head & (ring->entries - 1)];
	struct tio_cmd *end = &ring->cmds[ring->entries];
	unsigned int i, out;
	struct tio_cmd rec;
	int ret;

	for (i = 0; i < n;) {
		tio_ring_read_hdr(&rec, slot);
		i++;
		if (rec.op == TIO_IOC_INFO && likely(!(rec.flags | rec.pad)) &&
		    !static_branch_unlikely(&tio_stats_timing)) {
			ret = tio_ring_info(tf, slot);
		} else {
			tio_ring_read_payload(&rec, slot);
			/* Rewritten since the scan: not run in this context. */
			if (nonblock && unlikely(tio_record_may_block(&rec))) {
				out = 0;
				ret = -EAGAIN;
			} else {
				ret = tio_record_run_fast(tf, &rec, call, &out);
			}
			if (unlikely(ret < 0))
				ret = tio_user_errno(ret);
			tio_ring_write(slot, &rec, out, ret);
		}
		if (unlikely(ret < 0)) {
			(*failed)++;
			if (!cont)
				break;
		}
		if (unlikely(++slot == end))
			slot = ring->cmds;
	}
	return i;
}

/**
 * tio_cmd_ring_enter() - TIO_IOC_RING_ENTER: run the ring's new records
 * @tf: the calling file
 * @data: kernel copy of the struct tio_ring_enter payload
 * @call: the call; records' new fds join its queue
 *
 * Return: the number of failed records (0: all consumed records
 * succeeded); -EINVAL for bad flags, a tail more than entries ahead of
 * head or a head word userspace moved (nothing ran; the head word is
 * restored); -ENXIO without a ring; -EAGAIN for a non-blocking issue that
 * would wait (nothing ran); -EINTR when a signal came while waiting for
 * another enter.
 */
int tio_cmd_ring_enter(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_ring_enter *e = data;
	/* Pairs with the cmpxchg_release() of setup: a whole ring. */
	struct tio_ring *ring = smp_load_acquire(&tf->ring);
	bool cont = e->flags & TIO_SUBMIT_F_CONTINUE;
	unsigned int i, n, failed = 0;
	struct tio_cmd rec;
	u32 mask, head;
	int ret;

	if (e->flags & ~TIO_SUBMIT_F_CONTINUE)
		return -EINVAL;
	if (!ring)
		return -ENXIO;
	if (call->nonblock) {
		if (!mutex_trylock(&ring->lock))
			return -EAGAIN;
	} else if (mutex_lock_interruptible(&ring->lock)) {
		return -EINTR;
	}
	head = ring->head;
	mask = ring->entries - 1;
	/* Pairs with userspace's release store: the records it published. */
	n = smp_load_acquire(&ring->hdr->tail) - head;
	if (n > ring->entries || READ_ONCE(ring->hdr->head) != head) {
		WRITE_ONCE(ring->hdr->head, head);
		ret = -EINVAL;
		goto out;
	}
	/* Nothing ran yet: io-wq can take the whole enter. */
	if (call->nonblock) {
		for (i = 0; i < n; i++) {
			tio_ring_read(&rec, &ring->cmds[(head + i) & mask]);
			if (tio_record_may_block(&rec)) {
				ret = -EAGAIN;
				goto out;
			}
		}
	}
	if (call->nonblock)
		i = tio_ring_run(tf, ring, head, n, cont, call, true, &failed);
	else
		i = tio_ring_run(tf, ring, head, n, cont, call, false, &failed);
	ring->head = head + i;
	/* Results before head are visible to whoever reads head (acquire). */
	smp_store_release(&ring->hdr->head, ring->head);
	e->done = i;
	ret = failed;
out:
	mutex_unlock(&ring->lock);
	return ret;
}
