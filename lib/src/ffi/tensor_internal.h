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
	int32_t readonly;
	void *manager;
	int64_t dims[];		/* shape then strides, when the object owns them */
};

void tio__tensor_deleter(void *self, int flags);

/* Compact row-major strides of @shape (in elements). */
void tio__tensor_fill_strides(int32_t ndim, const int64_t *shape, int64_t *strides);

/* Checks a DLTensor from outside; raises ValueError. */
int tio__tensor_check(const DLTensor *t, int32_t require_alignment, int32_t require_contiguous);

#endif /* TIO_TENSOR_INTERNAL_H */
