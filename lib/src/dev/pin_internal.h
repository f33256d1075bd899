/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal interface of the pinned-memory cache (pin_cache.c): destinations
 * whose population and pinning the loader overlaps with its reads.
 */
#ifndef TIO_PIN_INTERNAL_H
#define TIO_PIN_INTERNAL_H

#include <stddef.h>

#include "dev/dev_internal.h"

/**
 * struct tio_pinned_mem - a destination from the pinned cache
 * @addr: its memory
 * @size: its size (the size class)
 * @buf: the buffer once pinned: at once on a cache hit, else after
 *	tio_pinned_finish()
 * @lazy: the memory is mapped but not yet populated or pinned: the loader
 *	populates it window by window ahead of its reads
 */
struct tio_pinned_mem {
	void *addr;
	size_t size;
	tio_buffer_t *buf;
	int lazy;
};

/* A cache hit (@m->buf set), or fresh memory not yet populated (@m->lazy). */
int tio_pinned_get(size_t size, struct tio_pinned_mem *m);
/* Pin what tio_pinned_get() mapped lazily: @m->buf. */
int tio_pinned_finish(struct tio_pinned_mem *m);
/* Give back what tio_pinned_get() returned, pinned or not. */
void tio_pinned_abort(struct tio_pinned_mem *m);
/* Free every cached buffer of @ctx (tio_shutdown()). */
void tio_pinned_trim_ctx(struct tio_ctx *ctx);

#endif /* TIO_PIN_INTERNAL_H */
