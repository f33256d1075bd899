// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * DLPack import and export, zero-copy, legacy and versioned.
 *
 * Import keeps the producer's managed tensor (its shape and strides are
 * used in place) and calls its deleter once, from the Tensor's deleter.
 * Export hands out a managed tensor that holds a reference to the Tensor;
 * importing one of our own exports unwraps it back to the same Tensor.
 */
#include "ffi/tensor_internal.h"

#define IMPORT_MAX_NDIM 64	/* as tio__tensor_check() */

/*
 * The producer's shape is used in place; its strides too, unless it has
 * none (legacy compact tensors): then compact strides follow the object,
 * as TVM FFI requires strides on a Tensor with ndim > 0. The hot path is
 * one block (from the thread's cache when it has one) and one pass over
 * the shape (strides and the sign check together); alignment, contiguity
 * and every error go to
 * tio__tensor_check(), off that path.
 */
static __attribute__((always_inline)) inline int
import(const DLTensor *dl, int32_t kind, void *manager, int readonly, int32_t require_alignment,
       int32_t require_contiguous, tio_object_t **out)
{
	int32_t ndim = dl->ndim, i;
	const int64_t *shape = dl->shape;
	int fill = !dl->strides && ndim > 0;
	uint64_t stride = 1;	/* unsigned: no overflow to fear from a huge shape */
	int64_t sign = 0;
	struct tensor_obj *t;

	if (TIO_UNLIKELY((uint32_t)ndim > IMPORT_MAX_NDIM || (ndim && !shape) ||
			 !dl->dtype.bits || !dl->dtype.lanes || require_alignment > 1 ||
			 require_contiguous) &&
	    tio__tensor_check(dl, require_alignment, require_contiguous))
		return -1;
	t = tio__tensor_obj_new(sizeof(*t) + (fill ? sizeof(int64_t) * (size_t)ndim : 0));
	if (TIO_UNLIKELY(!t))
		return tio__oom();
	t->pub.dl = *dl;
	if (fill) {
		for (i = ndim - 1; i >= 0; i--) {
			t->dims[i] = (int64_t)stride;
			sign |= shape[i];
			stride *= shape[i] ? (uint64_t)shape[i] : 1;
		}
		t->pub.dl.strides = t->dims;
	} else {
		for (i = 0; i < ndim; i++)
			sign |= shape[i];
	}
	if (TIO_UNLIKELY(sign < 0)) {
		tio__tensor_obj_free(t);
		return tio__tensor_check(dl, 0, 0);	/* raises: a negative dimension */
	}
	t->kind = kind;
	t->readonly = readonly;
	t->manager = manager;
	*out = &t->pub.header;
	return 0;
}

static void export_deleter(DLManagedTensor *mt)
{
	tio_object_decref(mt->manager_ctx);
	free(mt);
}

static void export_versioned_deleter(DLManagedTensorVersioned *mt)
{
	tio_object_decref(mt->manager_ctx);
	free(mt);
}

TIO_HOT_ALIGN
int tio_tensor_from_dlpack(DLManagedTensor *mt, int32_t require_alignment,
			   int32_t require_contiguous, tio_object_t **out)
{
	if (TIO_UNLIKELY(!mt || !out))
		return tio_error_raise("ValueError", "NULL managed tensor");
	if (TIO_UNLIKELY(mt->deleter == export_deleter)) {
		/* One of ours: give the Tensor back, drop the wrapper. */
		if (tio__tensor_check(&mt->dl_tensor, require_alignment, require_contiguous))
			return -1;
		*out = mt->manager_ctx;
		free(mt);
		return 0;
	}
	return import(&mt->dl_tensor, TENSOR_LEGACY, mt, 0, require_alignment,
		      require_contiguous, out);
}

TIO_HOT_ALIGN
int tio_tensor_from_dlpack_versioned(DLManagedTensorVersioned *mt, int32_t require_alignment,
				     int32_t require_contiguous, tio_object_t **out)
{
	if (TIO_UNLIKELY(!mt || !out))
		return tio_error_raise("ValueError", "NULL managed tensor");
	if (TIO_UNLIKELY(mt->version.major != TIO_DLPACK_MAJOR))
		return tio_error_raise("ValueError",
				       "DLPack version %u.%u is not supported (major %d)",
				       mt->version.major, mt->version.minor, TIO_DLPACK_MAJOR);
	if (TIO_UNLIKELY(mt->deleter == export_versioned_deleter)) {
		if (tio__tensor_check(&mt->dl_tensor, require_alignment, require_contiguous))
			return -1;
		*out = mt->manager_ctx;
		free(mt);
		return 0;
	}
	return import(&mt->dl_tensor, TENSOR_VERSIONED, mt,
		      (mt->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0, require_alignment,
		      require_contiguous, out);
}

int tio_tensor_to_dlpack(tio_object_t *t, DLManagedTensor **out)
{
	DLManagedTensor *mt;

	if (!t || t->type_index != TIO_TYPE_TENSOR || !out)
		return tio_error_raise("TypeError", "export of something that is not a Tensor");
	mt = malloc(sizeof(*mt));
	if (!mt)
		return tio__oom();
	mt->dl_tensor = *tio_tensor_dl(t);
	tio_object_incref(t);
	mt->manager_ctx = t;
	mt->deleter = export_deleter;
	*out = mt;
	return 0;
}

int tio_tensor_to_dlpack_versioned(tio_object_t *t, DLManagedTensorVersioned **out)
{
	DLManagedTensorVersioned *mt;

	if (!t || t->type_index != TIO_TYPE_TENSOR || !out)
		return tio_error_raise("TypeError", "export of something that is not a Tensor");
	mt = malloc(sizeof(*mt));
	if (!mt)
		return tio__oom();
	mt->version.major = TIO_DLPACK_MAJOR;
	mt->version.minor = TIO_DLPACK_MINOR;
	mt->flags = tio_tensor_is_readonly(t) ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
	mt->dl_tensor = *tio_tensor_dl(t);
	tio_object_incref(t);
	mt->manager_ctx = t;
	mt->deleter = export_versioned_deleter;
	*out = mt;
	return 0;
}
