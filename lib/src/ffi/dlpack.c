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

/*
 * The producer's shape is used in place; its strides too, unless it has
 * none (legacy compact tensors): then compact strides follow the object,
 * as TVM FFI requires strides on a Tensor with ndim > 0.
 */
static struct tensor_obj *wrap(const DLTensor *dl, int32_t kind, void *manager, int readonly)
{
	int fill = !dl->strides && dl->ndim > 0;
	struct tensor_obj *t;

	t = tio__obj_new(sizeof(*t) + (fill ? sizeof(int64_t) * (size_t)dl->ndim : 0),
			 TIO_TYPE_TENSOR, tio__tensor_deleter);
	if (TIO_UNLIKELY(!t))
		return NULL;
	t->pub.dl = *dl;
	if (fill) {
		tio__tensor_fill_strides(dl->ndim, dl->shape, t->dims);
		t->pub.dl.strides = t->dims;
	}
	t->kind = kind;
	t->readonly = readonly;
	t->manager = manager;
	return t;
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

int tio_tensor_from_dlpack(DLManagedTensor *mt, int32_t require_alignment,
			   int32_t require_contiguous, tio_object_t **out)
{
	struct tensor_obj *t;

	if (TIO_UNLIKELY(!mt || !out))
		return tio_error_raise("ValueError", "NULL managed tensor");
	if (tio__tensor_check(&mt->dl_tensor, require_alignment, require_contiguous))
		return -1;
	if (mt->deleter == export_deleter) {
		/* One of ours: give the Tensor back, drop the wrapper. */
		*out = mt->manager_ctx;
		free(mt);
		return 0;
	}
	t = wrap(&mt->dl_tensor, TENSOR_LEGACY, mt, 0);
	if (TIO_UNLIKELY(!t))
		return tio__oom();
	*out = &t->pub.header;
	return 0;
}

int tio_tensor_from_dlpack_versioned(DLManagedTensorVersioned *mt, int32_t require_alignment,
				     int32_t require_contiguous, tio_object_t **out)
{
	struct tensor_obj *t;
	int ro;

	if (TIO_UNLIKELY(!mt || !out))
		return tio_error_raise("ValueError", "NULL managed tensor");
	if (mt->version.major != TIO_DLPACK_MAJOR)
		return tio_error_raise("ValueError",
				       "DLPack version %u.%u is not supported (major %d)",
				       mt->version.major, mt->version.minor, TIO_DLPACK_MAJOR);
	if (tio__tensor_check(&mt->dl_tensor, require_alignment, require_contiguous))
		return -1;
	ro = (mt->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
	if (mt->deleter == export_versioned_deleter) {
		*out = mt->manager_ctx;
		free(mt);
		return 0;
	}
	t = wrap(&mt->dl_tensor, TENSOR_VERSIONED, mt, ro);
	if (TIO_UNLIKELY(!t))
		return tio__oom();
	*out = &t->pub.header;
	return 0;
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
