/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Tensor object's private layout, shared by tensor.c and dlpack.c.
 */
#ifndef TIO_TENSOR_INTERNAL_H
#define TIO_TENSOR_INTERNAL_H

#include "ffi/obj_cache.h"

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
 * Imported Tensors of up to IMPORT_CACHED_NDIM dimensions, with the
 * strides they fill, and Tensors of up to 2 made here are one block size:
 * their blocks wait in the thread's object cache (obj_cache.h) for its
 * next one.
 */
#define IMPORT_CACHED_NDIM 4
#define IMPORT_BLOCK (sizeof(struct tensor_obj) + IMPORT_CACHED_NDIM * sizeof(int64_t))

/* A Tensor object of @size bytes, header initialised, cached flag set. */
static inline struct tensor_obj *tio__tensor_obj_new(size_t size)
{
	struct tensor_obj *t;
	int cached = size <= IMPORT_BLOCK;

	if (TIO_LIKELY(cached))
		t = tio__obj_cache_new(OBJ_CACHE_TENSOR, IMPORT_BLOCK, TIO_TYPE_TENSOR,
				       tio__tensor_deleter);
	else
		t = tio__obj_new(size, TIO_TYPE_TENSOR, tio__tensor_deleter);
	if (t)
		t->cached = (uint16_t)cached;
	return t;
}

/* Free @t's memory (its contents are gone): into the cache when it has room. */
static inline void tio__tensor_obj_free(struct tensor_obj *t)
{
	if (t->cached)
		tio__obj_cache_free(OBJ_CACHE_TENSOR, t);
	else
		tio__obj_free(t);
}

/* Compact row-major strides of @shape (in elements). */
void tio__tensor_fill_strides(int32_t ndim, const int64_t *shape, int64_t *strides);

/* Checks a DLTensor from outside; raises ValueError. */
int tio__tensor_check(const DLTensor *t, int32_t require_alignment, int32_t require_contiguous);

#endif /* TIO_TENSOR_INTERNAL_H */
