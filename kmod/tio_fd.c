// SPDX-License-Identifier: GPL-2.0
/*
 * New fds (dma-buf, sync_file) are installed only once the command's
 * result has reached userspace: a handler reserves a number with
 * get_unused_fd_flags() and queues it with its file in the caller's
 * struct tio_call; the submission form installs the queue after it wrote
 * the payload back, or gives every number and file back when it could not
 * (the fd never existed for userspace, so nothing leaks into its table).
 * A call runs on one thread: its queue needs no lock.
 */
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/slab.h>

#include "tio_priv.h"

/* Room for one more entry: the first comes inline, SUBMIT doubles. */
static int tio_call_grow(struct tio_call *q)
{
	struct tio_call_fd *ent;
	unsigned int cap;

	if (q->n < q->cap)
		return 0;
	cap = q->cap * 2;
	ent = kvmalloc_array(cap, sizeof(*ent), GFP_KERNEL);
	if (!ent)
		return -ENOMEM;
	memcpy(ent, q->ent, q->n * sizeof(*ent));
	if (q->ent != &q->one)
		kvfree(q->ent);
	q->ent = ent;
	q->cap = cap;
	return 0;
}

/**
 * tio_fd_reserve() - reserve an fd for @file, installed by tio_call_install_fds()
 * @q: the call's queue
 * @file: a referenced file; on success the queue owns the reference
 * @cloexec: open the fd with O_CLOEXEC
 *
 * Return: the fd number, or -ENOMEM / -EMFILE with @file still the
 * caller's.
 */
int tio_fd_reserve(struct tio_call *q, struct file *file, bool cloexec)
{
	int fd, ret;

	ret = tio_call_grow(q);
	if (ret)
		return ret;
	fd = get_unused_fd_flags(cloexec ? O_CLOEXEC : 0);
	if (fd < 0)
		return fd;
	q->ent[q->n].fd = fd;
	q->ent[q->n].file = file;
	q->n++;
	return fd;
}

static void tio_call_free_fds(struct tio_call *q)
{
	if (q->ent != &q->one)
		kvfree(q->ent);
	tio_call_init(q, q->nonblock);
}

/**
 * __tio_call_install_fds() - install every reserved fd: their numbers
 * reached userspace
 * @q: the queue, empty on return
 *
 * Called through tio_call_install_fds() when the queue is not empty.
 */
void __tio_call_install_fds(struct tio_call *q)
{
	unsigned int i;

	for (i = 0; i < q->n; i++)
		fd_install(q->ent[i].fd, q->ent[i].file);
	tio_call_free_fds(q);
}

/**
 * tio_call_abort_from() - give back the fds reserved since entry @n
 * @q: the queue
 * @n: entries before it stay (a SUBMIT's earlier records' fds)
 */
void tio_call_abort_from(struct tio_call *q, unsigned int n)
{
	while (q->n > n) {
		q->n--;
		put_unused_fd(q->ent[q->n].fd);
		fput(q->ent[q->n].file);
	}
}

/**
 * tio_call_fds_returned() - fail a command whose new fds would not reach
 * userspace
 * @q: the call's queue
 * @n: its entries before the command ran
 * @dir: the _IOC_ direction both numbers share
 * @usize: the caller's structure size
 * @ksize: the kernel's
 * @ret: the command's result
 *
 * A command that reserved fds returns them in its payload: when the
 * caller's number does not have the payload written back (no _IOC_READ)
 * or its structure is shorter than the kernel's, the numbers would never
 * reach userspace, so the fds are given back and the command fails.
 *
 * Return: @ret, or -EINVAL.
 */
int tio_call_fds_returned(struct tio_call *q, unsigned int n, unsigned int dir,
			  unsigned int usize, unsigned int ksize, int ret)
{
	if (ret < 0 || q->n == n || ((dir & _IOC_READ) && usize >= ksize))
		return ret;
	tio_call_abort_from(q, n);
	return -EINVAL;
}

/**
 * __tio_call_abort_fds() - give back every reserved fd and drop its file
 * @q: the queue, empty on return
 *
 * Called through tio_call_abort_fds() when the queue is not empty.
 * For a result that could not be written back: userspace never learnt
 * the numbers, so they must not appear in its table.
 */
void __tio_call_abort_fds(struct tio_call *q)
{
	unsigned int i;

	for (i = 0; i < q->n; i++) {
		put_unused_fd(q->ent[i].fd);
		fput(q->ent[i].file);
	}
	tio_call_free_fds(q);
}
