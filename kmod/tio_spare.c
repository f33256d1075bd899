// SPDX-License-Identifier: GPL-2.0
/*
 * Spare pages: BUF_FREE of an ALLOC buffer that never left the driver
 * keeps its pages, still zeroed, for the file's next BUF_ALLOC, which then
 * skips the page allocator and the clearing it does (a page's worth of
 * stores: most of an unbatched alloc+free).
 *
 * A page is spare only if nothing but the driver can have seen it: the
 * buffer was never mapped (device fd or dma-buf) nor exported — the only
 * ways its pages leave the driver; buf->exposed is set before either — and
 * BUF_FREE dropped its last reference, so that no lookup can expose it
 * afterwards. Every other page goes back to the page allocator as before.
 *
 * Spare pages are not memlock-charged (no buffer holds them); they stay
 * charged to the memory cgroup of their first allocation, at most
 * TIO_SPARE_PAGES per file, and are freed when the file is released.
 */
#include <linux/mm.h>
#include <linux/spinlock.h>

#include "tio_buffer.h"

/**
 * tio_spare_init() - an open file's empty set of spare pages
 * @tf: the file
 */
void tio_spare_init(struct tio_file *tf)
{
	spin_lock_init(&tf->spare.lock);
	tf->spare.nr = 0;
}

/**
 * tio_spare_take() - zeroed pages for a new buffer, as far as there are any
 * @tf: the file
 * @pages: filled from the start
 * @n: pages wanted
 *
 * Return: how many of @pages were filled; the caller owns their reference.
 */
unsigned long tio_spare_take(struct tio_file *tf, struct page **pages,
			     unsigned long n)
{
	struct tio_spare *sp = &tf->spare;
	unsigned long i;

	if (!READ_ONCE(sp->nr))
		return 0;
	spin_lock(&sp->lock);
	for (i = 0; i < n && sp->nr; i++)
		pages[i] = sp->pages[--sp->nr];
	spin_unlock(&sp->lock);
	return i;
}

/**
 * tio_spare_give() - keep the pages of a buffer being released unseen
 * @tf: the file that freed it
 * @buf: an ALLOC buffer whose last reference is gone and whose pages were
 *	 never mapped nor exported
 *
 * Moves what fits (pages only the buffer references) out of @buf->pages;
 * the release puts the rest.
 */
void tio_spare_give(struct tio_file *tf, struct tio_buffer *buf)
{
	struct tio_spare *sp = &tf->spare;
	unsigned long i;

	spin_lock(&sp->lock);
	for (i = 0; i < buf->npages && sp->nr < TIO_SPARE_PAGES; i++) {
		struct page *page = buf->pages[i];

		/* Someone else's transient reference: let it go back. */
		if (!page || page_ref_count(page) != 1)
			continue;
		sp->pages[sp->nr++] = page;
		buf->pages[i] = NULL;
	}
	spin_unlock(&sp->lock);
}

/**
 * tio_spare_release() - free a released file's spare pages
 * @tf: the file; no command can run on it any more
 */
void tio_spare_release(struct tio_file *tf)
{
	while (tf->spare.nr)
		put_page(tf->spare.pages[--tf->spare.nr]);
}
