// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tensor objects: allocation, views, layout checks.
 */
#include "ffi/tensor_internal.h"

#define MAX_NDIM 64

TIO_HOT_ALIGN
void tio__tensor_deleter(void *self, int flags)
{
	struct tensor_obj *t = self;
	DLManagedTensorVersioned *vmt;
	DLManagedTensor *mt;

	if (flags & TIO_DELETER_STRONG) {
		/* Imports first: DLPack import + release is a hot path. */
		if (TIO_LIKELY(t->kind == TENSOR_LEGACY)) {
			mt = t->manager;
			if (mt->deleter)
				mt->deleter(mt);
		} else if (t->kind == TENSOR_VERSIONED) {
			vmt = t->manager;
			if (vmt->deleter)
				vmt->deleter(vmt);
		} else if (t->kind == TENSOR_OWNED) {
			free(t->manager);
		} else {
			tio_object_decref(t->manager);	/* TENSOR_VIEW */
		}
		t->manager = NULL;
	}
	if (flags & TIO_DELETER_WEAK)
		tio__tensor_obj_free(t);
}

static size_t elem_bytes(DLDataType dt)
{
	return ((size_t)dt.bits * dt.lanes + 7) / 8;
}

int64_t tio_tensor_numel(const DLTensor *t)
{
	int64_t n = 1;
	int i;

	for (i = 0; i < t->ndim; i++)
		n *= t->shape[i];
	return n;
}

size_t tio_tensor_nbytes(const DLTensor *t)
{
	return (size_t)tio_tensor_numel(t) * elem_bytes(t->dtype);
}

int tio_tensor_is_contiguous(const DLTensor *t)
{
	int64_t expect = 1;
	int i;

	if (!t->strides)
		return 1;
	for (i = t->ndim - 1; i >= 0; i--) {
		if (t->shape[i] == 1)
			continue;
		if (t->strides[i] != expect)
			return 0;
		expect *= t->shape[i];
	}
	return 1;
}

int tio_tensor_is_aligned(const DLTensor *t, size_t alignment)
{
	if (alignment <= 1)
		return 1;
	return (((uintptr_t)t->data + t->byte_offset) & (alignment - 1)) == 0;
}

int tio_tensor_is_readonly(const tio_object_t *t)
{
	return ((const struct tensor_obj *)t)->readonly;
}

int tio__tensor_check(const DLTensor *t, int32_t require_alignment, int32_t require_contiguous)
{
	int i;

	if (t->ndim < 0 || t->ndim > MAX_NDIM || (t->ndim && !t->shape))
		return tio_error_raise("ValueError", "tensor rank %d is invalid", t->ndim);
	if (!t->dtype.lanes || !t->dtype.bits)
		return tio_error_raise("ValueError", "tensor dtype has 0 bits or lanes");
	for (i = 0; i < t->ndim; i++)
		if (t->shape[i] < 0)
			return tio_error_raise("ValueError", "tensor dimension %d is negative", i);
	if (require_alignment > 1) {
		if (require_alignment & (require_alignment - 1))
			return tio_error_raise("ValueError", "alignment %d is not a power of two",
					       require_alignment);
		if (!tio_tensor_is_aligned(t, (size_t)require_alignment))
			return tio_error_raise("ValueError",
					       "tensor data is not aligned to %d bytes",
					       require_alignment);
	}
	if (require_contiguous && !tio_tensor_is_contiguous(t))
		return tio_error_raise("ValueError", "tensor is not contiguous");
	return 0;
}

void tio__tensor_fill_strides(int32_t ndim, const int64_t *shape, int64_t *strides)
{
	int64_t stride = 1;
	int32_t i;

	for (i = ndim - 1; i >= 0; i--) {
		strides[i] = stride;
		stride *= shape[i] ? shape[i] : 1;
	}
}

/*
 * Shape and strides live after the object; strides are always there for
 * ndim > 0 (TVM FFI requires them on a Tensor object): the caller copies
 * its own or calls tio__tensor_fill_strides().
 */
static struct tensor_obj *tensor_alloc(int32_t ndim)
{
	size_t extra = sizeof(int64_t) * (size_t)ndim * 2;
	struct tensor_obj *t;

	t = tio__tensor_obj_new(sizeof(*t) + extra);
	if (!t)
		return NULL;
	memset(&t->pub.dl, 0, sizeof(t->pub.dl));
	t->kind = TENSOR_OWNED;
	t->readonly = 0;
	t->manager = NULL;
	t->pub.dl.ndim = ndim;
	t->pub.dl.shape = ndim ? t->dims : NULL;
	t->pub.dl.strides = ndim ? t->dims + ndim : NULL;
	return t;
}

int tio_tensor_empty(int32_t ndim, const int64_t *shape, DLDataType dtype, size_t alignment,
		     tio_object_t **out)
{
	struct tensor_obj *t;
	size_t bytes;
	int i;

	if (ndim < 0 || ndim > MAX_NDIM || (ndim && !shape) || !out)
		return tio_error_raise("ValueError", "tensor rank %d is invalid", ndim);
	if (!alignment)
		alignment = 64;
	if (alignment & (alignment - 1) || alignment < sizeof(void *))
		return tio_error_raise("ValueError", "alignment %zu is invalid", alignment);
	if (!dtype.bits || !dtype.lanes)
		return tio_error_raise("ValueError", "dtype has 0 bits or lanes");
	bytes = elem_bytes(dtype);
	for (i = 0; i < ndim; i++) {
		if (shape[i] < 0)
			return tio_error_raise("ValueError", "dimension %d is negative", i);
		if (shape[i] && bytes > SIZE_MAX / (size_t)shape[i])
			return tio_error_raise("ValueError", "tensor too large");
		bytes *= (size_t)shape[i];
	}
	t = tensor_alloc(ndim);
	if (!t)
		return tio__oom();
	bytes = (bytes + alignment - 1) & ~(alignment - 1);
	t->manager = aligned_alloc(alignment, bytes ? bytes : alignment);
	if (!t->manager) {
		tio_object_decref(&t->pub.header);
		return tio__oom();
	}
	memset(t->manager, 0, bytes);
	if (ndim) {
		memcpy(t->dims, shape, sizeof(int64_t) * (size_t)ndim);
		tio__tensor_fill_strides(ndim, shape, t->dims + ndim);
	}
	t->pub.dl.data = t->manager;
	t->pub.dl.device.device_type = kDLCPU;
	t->pub.dl.device.device_id = 0;
	t->pub.dl.dtype = dtype;
	*out = &t->pub.header;
	return 0;
}

/* Byte extent [*lo, *hi) of a tensor's elements relative to its first. */
static int extent(int32_t ndim, const int64_t *shape, const int64_t *strides, size_t esize,
		  int64_t *lo, int64_t *hi)
{
	int64_t mn = 0, mx = 0, stride = 1;
	int i;

	for (i = ndim - 1; i >= 0; i--) {
		int64_t s = strides ? strides[i] : stride;

		if (!shape[i])
			return 0;	/* empty */
		if (s > 0)
			mx += (shape[i] - 1) * s;
		else
			mn += (shape[i] - 1) * s;
		stride *= shape[i];
	}
	*lo = mn * (int64_t)esize;
	*hi = (mx + 1) * (int64_t)esize;
	return 1;
}

int tio_tensor_view(tio_object_t *base, int32_t ndim, const int64_t *shape,
		    const int64_t *strides, uint64_t byte_offset, tio_object_t **out)
{
	const DLTensor *b;
	struct tensor_obj *t;
	int64_t blo = 0, bhi = 0, vlo = 0, vhi = 0;
	size_t esize;
	int i;

	if (!base || base->type_index != TIO_TYPE_TENSOR || !out)
		return tio_error_raise("TypeError", "view of something that is not a Tensor");
	if (ndim < 0 || ndim > MAX_NDIM || (ndim && !shape))
		return tio_error_raise("ValueError", "view rank %d is invalid", ndim);
	for (i = 0; i < ndim; i++)
		if (shape[i] < 0)
			return tio_error_raise("ValueError", "view dimension %d is negative", i);
	if (byte_offset > (uint64_t)INT64_MAX / 2)
		return tio_error_raise("ValueError", "view byte offset too large");
	b = tio_tensor_dl(base);
	esize = elem_bytes(b->dtype);
	if (extent(ndim, shape, strides, esize, &vlo, &vhi)) {
		if (!extent(b->ndim, b->shape, b->strides, esize, &blo, &bhi) ||
		    (int64_t)byte_offset + vlo < blo || (int64_t)byte_offset + vhi > bhi)
			return tio_error_raise("ValueError",
					       "view [%lld, %lld) lies outside its base [%lld, %lld)",
					       (long long)((int64_t)byte_offset + vlo),
					       (long long)((int64_t)byte_offset + vhi),
					       (long long)blo, (long long)bhi);
	}
	t = tensor_alloc(ndim);
	if (!t)
		return tio__oom();
	if (ndim) {
		memcpy(t->dims, shape, sizeof(int64_t) * (size_t)ndim);
		if (strides)
			memcpy(t->dims + ndim, strides, sizeof(int64_t) * (size_t)ndim);
		else
			tio__tensor_fill_strides(ndim, shape, t->dims + ndim);
	}
	t->pub.dl.data = b->data;
	t->pub.dl.device = b->device;
	t->pub.dl.dtype = b->dtype;
	t->pub.dl.byte_offset = b->byte_offset + byte_offset;
	t->kind = TENSOR_VIEW;
	t->readonly = ((const struct tensor_obj *)base)->readonly;
	tio_object_incref(base);
	t->manager = base;
	*out = &t->pub.header;
	return 0;
}
