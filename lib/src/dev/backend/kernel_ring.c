// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kernel backend's use of the driver's command ring (TIO_FEAT_RING):
 * records are copied into the ring's shared slots, published by a release
 * store of tail, run in place by one TIO_IOC_RING_ENTER ioctl, and their
 * results and payloads copied back from the slots.
 *
 * A file has one ring, so a context has one, set up on first use and
 * shared by every batch of the context under @lock (a batch belongs to one
 * thread, a context does not). An enter runs everything published, so
 * the lock covers fill, enter and read-back: no thread's records run in
 * another's enter. More records than the ring holds go in several
 * enters; slots wrap around at the mask. When an enter stops early (a
 * failure without TIO_SUBMIT_F_CONTINUE) the records after it were
 * published but not run: tail is moved back to head, which the driver
 * accepts, so that they never run later.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "dev/dev_internal.h"

/* 256 records: 16 KiB + a page of header, charged as locked memory. */
#define TIO_KRING_ENTRIES 256

/**
 * struct tio_kring - a context's command ring
 * @lock: serialises fill, enter and read-back (and the setup)
 * @state: 0 not tried yet, 1 ready, or the negative errno of the setup
 * @hdr: the shared header (head, tail)
 * @cmds: the shared slots
 * @size: the mapping's size
 * @entries: slots, a power of two
 * @tail: records published so far (the kernel's head after each enter)
 */
struct tio_kring {
	pthread_mutex_t lock;
	int state;
	struct tio_ring_hdr *hdr;
	struct tio_cmd *cmds;
	size_t size;
	uint32_t entries;
	uint32_t tail;
};

/**
 * tio_kring_new() - a context's ring state, not set up yet
 *
 * Return: the state, or NULL when out of memory.
 */
struct tio_kring *tio_kring_new(void)
{
	struct tio_kring *r = calloc(1, sizeof(*r));

	if (r && pthread_mutex_init(&r->lock, NULL)) {
		free(r);
		return NULL;
	}
	return r;
}

/**
 * tio_kring_free() - unmap the ring (the driver frees it with the file)
 * @r: the state, or NULL
 */
void tio_kring_free(struct tio_kring *r)
{
	if (!r)
		return;
	if (r->hdr)
		munmap(r->hdr, r->size);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* RING_SETUP and the mapping; under @r->lock. */
static int tio_kring_setup(struct tio_ctx *ctx, struct tio_kring *r)
{
	struct tio_ring_setup rs = { .entries = TIO_KRING_ENTRIES };
	void *p;

	if (!(ctx->info.features & TIO_FEAT_RING))
		return -EOPNOTSUPP;
	if (ioctl(ctx->fd, TIO_IOC_RING_SETUP, &rs) < 0)
		return -errno;
	p = mmap(NULL, rs.size, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->fd,
		 (off_t)rs.mmap_offset);
	if (p == MAP_FAILED)
		return -errno;
	r->hdr = p;
	r->cmds = (struct tio_cmd *)((char *)p + TIO_RING_CMDS_OFFSET);
	r->size = rs.size;
	r->entries = rs.entries;
	r->tail = __atomic_load_n(&r->hdr->head, __ATOMIC_ACQUIRE);
	return 1;
}

/* Set up on first use; under @r->lock. Return: 1, or a negative errno. */
static int tio_kring_ready_locked(struct tio_ctx *ctx, struct tio_kring *r)
{
	if (!r->state)
		r->state = tio_kring_setup(ctx, r);
	return r->state;
}

/**
 * tio_kring_ready() - does the context have a working command ring?
 * @ctx: a kernel-backend context
 *
 * Sets the ring up on first use.
 *
 * Return: 1, or the negative errno that keeps it from having one
 * (-EOPNOTSUPP: the driver does not offer it).
 */
int tio_kring_ready(struct tio_ctx *ctx)
{
	struct tio_kring *r = ctx->priv;
	int ret;

	if (!r)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&r->lock);
	ret = tio_kring_ready_locked(ctx, r);
	pthread_mutex_unlock(&r->lock);
	return ret;
}

/**
 * tio_kring_run() - run records through the context's command ring
 * @ctx: a kernel-backend context whose ring is ready (tio_kring_ready())
 * @cmds: the records; results and returned payloads are written back
 * @n: how many (at most the ring's size are taken)
 * @flags: TIO_SUBMIT_F_CONTINUE or 0
 * @taken: set to the number of records put into the ring
 * @done: set to the number the driver processed (the rest of @taken were
 *	  not run: a failure stopped the enter)
 *
 * Return: the number of processed records that failed, or a negative
 * errno when the enter was refused (then nothing ran).
 */
int tio_kring_run(struct tio_ctx *ctx, struct tio_cmd *cmds, uint32_t n,
		  unsigned int flags, uint32_t *taken, uint32_t *done)
{
	struct tio_kring *r = ctx->priv;
	struct tio_ring_enter e = { .flags = flags };
	uint32_t k, mask, head;
	int ret;

	*taken = *done = 0;
	pthread_mutex_lock(&r->lock);
	ret = tio_kring_ready_locked(ctx, r);
	if (ret < 0)
		goto out;
	mask = r->entries - 1;
	head = r->tail;
	if (n > r->entries)
		n = r->entries;
	for (k = 0; k < n; k++)
		r->cmds[(head + k) & mask] = cmds[k];
	/* The records before tail are written (the driver reads with acquire). */
	__atomic_store_n(&r->hdr->tail, head + n, __ATOMIC_RELEASE);
	do {
		ret = ioctl(ctx->fd, TIO_IOC_RING_ENTER, &e);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0) {
		ret = -errno;
		e.done = 0;
	}
	/* Pairs with the driver's release of head: the results are there. */
	if (ret >= 0 && __atomic_load_n(&r->hdr->head, __ATOMIC_ACQUIRE) != head + e.done)
		ret = -EPROTO;
	for (k = 0; k < e.done; k++)
		cmds[k] = r->cmds[(head + k) & mask];
	r->tail = head + e.done;
	/* Published, not run: withdrawn, so that no later enter runs them. */
	if (e.done < n)
		__atomic_store_n(&r->hdr->tail, r->tail, __ATOMIC_RELEASE);
	*taken = n;
	*done = e.done;
out:
	pthread_mutex_unlock(&r->lock);
	return ret;
}
