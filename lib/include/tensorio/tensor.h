/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Tensors: an object embedding a DLTensor (TVM FFI ABI: header, then the
 * DLTensor), shared zero-copy with DLPack producers and consumers, both the
 * legacy DLManagedTensor and the DLPack 1.x DLManagedTensorVersioned.
 *
 * Ownership: an imported tensor keeps the producer's managed tensor and
 * calls its deleter exactly once, when the Tensor object goes. An exported
 * managed tensor holds a reference to the Tensor until the consumer calls
 * its deleter.
 *
 * Layer: ffi (lib/src/ffi/, the FFI core)
 */
#ifndef TENSORIO_TENSOR_H
#define TENSORIO_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include <tensorio/dlpack.h>
#include <tensorio/object.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct tio_tensor_obj - the public start of a Tensor object
 * @header: the object header (TIO_TYPE_TENSOR)
 * @dl: the tensor; shape and strides point into memory the object keeps
 */
typedef struct tio_tensor_obj {
	tio_object_t header;
	DLTensor dl;
} tio_tensor_obj_t;

/** tio_tensor_dl() - the DLTensor of a Tensor object (borrowed) */
static inline DLTensor *tio_tensor_dl(tio_object_t *t)
{
	return &((tio_tensor_obj_t *)t)->dl;
}

/**
 * tio_tensor_from_dlpack() - wrap a legacy DLPack tensor, zero-copy
 * @mt: the producer's managed tensor
 * @require_alignment: data + byte_offset must be a multiple of this (0 or
 *	1 for none; a power of two otherwise)
 * @require_contiguous: non-zero to refuse a non-compact-row-major tensor
 * @out: the Tensor (owned); on success it owns @mt
 *
 * Return: 0, or -1 with an error raised (ValueError for a failed check,
 * a malformed tensor); @mt then still belongs to the caller.
 */
TIO_API int tio_tensor_from_dlpack(DLManagedTensor *mt, int32_t require_alignment,
				   int32_t require_contiguous, tio_object_t **out);

/**
 * tio_tensor_from_dlpack_versioned() - wrap a DLPack 1.x tensor, zero-copy
 * @mt: the producer's managed tensor (version.major must be 1)
 * @require_alignment: as for tio_tensor_from_dlpack()
 * @require_contiguous: as for tio_tensor_from_dlpack()
 * @out: the Tensor (owned); on success it owns @mt
 *
 * The read-only flag is kept (tio_tensor_is_readonly()).
 *
 * Return: 0, or -1 with an error raised; @mt then still belongs to the caller.
 */
TIO_API int tio_tensor_from_dlpack_versioned(DLManagedTensorVersioned *mt,
					     int32_t require_alignment,
					     int32_t require_contiguous,
					     tio_object_t **out);

/**
 * tio_tensor_to_dlpack() - share a Tensor as a legacy DLPack tensor
 * @t: the Tensor
 * @out: a managed tensor sharing @t's memory; its deleter drops its reference
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_tensor_to_dlpack(tio_object_t *t, DLManagedTensor **out);

/**
 * tio_tensor_to_dlpack_versioned() - share a Tensor as a DLPack 1.x tensor
 * @t: the Tensor
 * @out: a managed tensor (version 1.1, read-only flag as @t's)
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_tensor_to_dlpack_versioned(tio_object_t *t, DLManagedTensorVersioned **out);

/**
 * tio_tensor_empty() - allocate a compact row-major CPU tensor
 * @ndim: number of dimensions (0 ... 64)
 * @shape: the dimensions
 * @dtype: the element type
 * @alignment: data alignment, a power of two (0 for 64)
 * @out: the Tensor (owned), contents zeroed
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_tensor_empty(int32_t ndim, const int64_t *shape, DLDataType dtype,
			     size_t alignment, tio_object_t **out);

/**
 * tio_tensor_view() - a view of a Tensor's memory with another layout
 * @base: the Tensor viewed (kept alive by the view)
 * @ndim: number of dimensions of the view
 * @shape: its dimensions
 * @strides: its strides in elements, or NULL for compact row-major
 * @byte_offset: bytes from @base's first element to the view's
 * @out: the view (owned)
 *
 * The view has @base's dtype and device and must lie inside @base's extent.
 *
 * Return: 0, or -1 with an error raised (ValueError when out of bounds).
 */
TIO_API int tio_tensor_view(tio_object_t *base, int32_t ndim, const int64_t *shape,
			    const int64_t *strides, uint64_t byte_offset,
			    tio_object_t **out);

/**
 * tio_tensor_is_contiguous() - whether @t is compact row-major (NULL
 * strides, or strides equal to them; size-1 dimensions are ignored)
 * @t: the tensor
 *
 * Return: 1 when contiguous, else 0.
 */
TIO_API int tio_tensor_is_contiguous(const DLTensor *t);

/**
 * tio_tensor_is_aligned() - whether data + byte_offset is a multiple of
 * @alignment (a power of two)
 * @t: the tensor
 * @alignment: in bytes
 *
 * Return: 1 when aligned, else 0.
 */
TIO_API int tio_tensor_is_aligned(const DLTensor *t, size_t alignment);

/**
 * tio_tensor_numel() - number of elements (1 for a scalar)
 * @t: the tensor
 *
 * Return: the product of the extents, 1 for a scalar.
 */
TIO_API int64_t tio_tensor_numel(const DLTensor *t);

/**
 * tio_tensor_nbytes() - bytes of a compact tensor: numel * element size
 * @t: the tensor
 *
 * Return: the size in bytes of the compact tensor.
 */
TIO_API size_t tio_tensor_nbytes(const DLTensor *t);

/**
 * tio_tensor_is_readonly() - whether the producer marked the tensor read-only
 * @t: the Tensor object
 *
 * Return: 1 when read-only, else 0.
 */
TIO_API int tio_tensor_is_readonly(const tio_object_t *t);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_TENSOR_H */
