/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Tensor object's private layout, shared by tensor.c and dlpack.c.
 */
#ifndef TIO_TENSOR_INTERNAL_H
#define TIO_TENSOR_INTERNAL_H

#include "ffi/ffi_internal.h"

enum tensor_kind {
	TENSOR_OWNED,		/* manager: data from aligned_alloc */
	TENSOR_LEGACY,		/* manager: the producer's DLManagedTensor */
	TENSOR_VERSIONED,	/* manager: the producer's DLManagedTensorVersioned */
	TENSOR_VIEW,		/* manager: the base Tensor object */
};

struct tensor_obj {
	tio_tensor_obj_t pub;
	int32_t kind;
	uint16_t readonly;
	uint16_t cached;	/* an IMPORT_BLOCK, for the thread's cache when freed */
	void *manager;
	int64_t dims[];		/* shape then strides, when the object owns them */
};

void tio__tensor_deleter(void *self, int flags);

/*
 * Blocks of imported Tensors, kept per thread for the next import: DLPack
 * import + release, once per tensor argument of a call, is a hot path, and
 * malloc + free were 45 % of its instructions (callgrind). A block holds
 * an import of up to IMPORT_CACHED_NDIM dimensions with the strides it
 * fills; a thread keeps up to TENSOR_CACHE_N, freed when it exits. Off
 * under ASan, whose use-after-free checks need every block freed.
 */
#define IMPORT_CACHED_NDIM 4
#define IMPORT_BLOCK (sizeof(struct tensor_obj) + IMPORT_CACHED_NDIM * sizeof(int64_t))
#define TENSOR_CACHE_N 4
#ifdef __SANITIZE_ADDRESS__
#define TENSOR_CACHE_ON 0
#else
#define TENSOR_CACHE_ON 1
#endif

struct tensor_cache {
	void *blocks[TENSOR_CACHE_N];
	int n;
	int state;	/* 0 new, 1 registered for thread exit, -1 exited: off */
};

extern TIO_TLS struct tensor_cache tio__tensor_cache;
int tio__tensor_cache_register(void);

/* A Tensor object of @size bytes, header initialised, cached flag set. */
static inline struct tensor_obj *tio__tensor_obj_new(size_t size)
{
	struct tensor_cache *c = &tio__tensor_cache;
	struct tensor_obj *t;

	if (TIO_LIKELY(size <= IMPORT_BLOCK)) {
		if (TENSOR_CACHE_ON && TIO_LIKELY(c->n)) {
			t = c->blocks[--c->n];
			tio_object_init(&t->pub.header, TIO_TYPE_TENSOR, tio__tensor_deleter);
			tio__live_add(1);
		} else {
			t = tio__obj_new(IMPORT_BLOCK, TIO_TYPE_TENSOR, tio__tensor_deleter);
		}
		if (t)
			t->cached = 1;
		return t;
	}
	t = tio__obj_new(size, TIO_TYPE_TENSOR, tio__tensor_deleter);
	if (t)
		t->cached = 0;
	return t;
}

/* Free @t's memory (its contents are gone): into the cache when it has room. */
static inline void tio__tensor_obj_free(struct tensor_obj *t)
{
	struct tensor_cache *c = &tio__tensor_cache;

	if (TENSOR_CACHE_ON && t->cached && c->n < TENSOR_CACHE_N &&
	    TIO_LIKELY(c->state > 0 || (!c->state && !tio__tensor_cache_register()))) {
		c->blocks[c->n++] = t;
		tio__live_add(-1);
		return;
	}
	tio__obj_free(t);
}

/* Compact row-major strides of @shape (in elements). */
void tio__tensor_fill_strides(int32_t ndim, const int64_t *shape, int64_t *strides);

/* Checks a DLTensor from outside; raises ValueError. */
int tio__tensor_check(const DLTensor *t, int32_t require_alignment, int32_t require_contiguous);

#endif /* TIO_TENSOR_INTERNAL_H */
