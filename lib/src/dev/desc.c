// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tensor descriptor checks, the same as the driver's (kmod/tio_desc.c), so
 * that the user backend accepts and refuses exactly what the kernel does
 * and callers can check a descriptor before sending it.
 */
#include <errno.h>
#include <string.h>

#include "dev/dev_internal.h"

static int desc_extent(const struct tio_tensor_desc *d, uint64_t *numel,
		       int64_t *lo, int64_t *hi)
{
	int strided = d->flags & TIO_DESC_F_STRIDED;
	int64_t ext, row = 1;
	uint64_t n = 1;
	unsigned int i;

	*lo = 0;
	*hi = 0;
	for (i = 0; i < d->ndim; i++) {
		if (d->shape[i] < 0)
			return -EINVAL;
		if (__builtin_mul_overflow(n, (uint64_t)d->shape[i], &n))
			return -EOVERFLOW;
	}
	*numel = n;
	if (!n)
		return 0;
	for (i = d->ndim; i-- > 0;) {
		int64_t stride = strided ? d->strides[i] : row;

		if (__builtin_mul_overflow(d->shape[i] - 1, stride, &ext))
			return -EOVERFLOW;
		if (ext >= 0 ? __builtin_add_overflow(*hi, ext, hi) :
			       __builtin_add_overflow(*lo, ext, lo))
			return -EOVERFLOW;
		if (!strided && __builtin_mul_overflow(row, d->shape[i], &row))
			return -EOVERFLOW;
	}
	return 0;
}

/* The bytes @d reaches from the buffer's start (byte_offset included). */
static int desc_span(const struct tio_tensor_desc *d, uint64_t *bytes)
{
	uint64_t numel, elem_bits, off_bits, end_bits;
	int64_t lo, hi, lo_bits, hi_bits;
	unsigned int i;
	int ret;

	if (d->code > TIO_DTYPE_BOOL || !d->lanes || !d->bits ||
	    (d->bits > 8 && d->bits % 8))
		return -EINVAL;
	if (d->ndim > TIO_MAX_NDIM || d->flags & ~TIO_DESC_F_STRIDED)
		return -EINVAL;
	for (i = 0; i < TIO_MAX_NDIM; i++) {
		if (i >= d->ndim && (d->shape[i] || d->strides[i]))
			return -EINVAL;
		if (!(d->flags & TIO_DESC_F_STRIDED) && d->strides[i])
			return -EINVAL;
	}
	ret = desc_extent(d, &numel, &lo, &hi);
	if (ret)
		return ret;
	*bytes = d->byte_offset;
	if (!numel)
		return 0;
	elem_bits = (uint64_t)d->bits * d->lanes;
	if (__builtin_mul_overflow(d->byte_offset, (uint64_t)8, &off_bits))
		return -EOVERFLOW;
	if (__builtin_mul_overflow(lo, (int64_t)elem_bits, &lo_bits))
		return -EOVERFLOW;
	if (lo_bits < 0 && (uint64_t)-lo_bits > off_bits)
		return -ERANGE;
	if (__builtin_add_overflow(hi, (int64_t)1, &hi) ||
	    __builtin_mul_overflow(hi, (int64_t)elem_bits, &hi_bits) ||
	    __builtin_add_overflow(off_bits, (uint64_t)hi_bits, &end_bits))
		return -EOVERFLOW;
	*bytes = (end_bits + 7) / 8;
	return 0;
}

/**
 * tio_desc_validate() - the driver's tio_desc_check()
 * @d: the descriptor
 * @size: the buffer's size
 *
 * Return: 0, -EINVAL, -EOVERFLOW or -ERANGE.
 */
int tio_desc_validate(const struct tio_tensor_desc *d, uint64_t size)
{
	uint64_t bytes;
	int ret = desc_span(d, &bytes);

	if (ret)
		return ret;
	return d->byte_offset > size || bytes > size ? -ERANGE : 0;
}

int tio_desc_nbytes(const struct tio_tensor_desc *desc, uint64_t *bytes)
{
	int ret = desc_span(desc, bytes);

	if (ret)
		return tio_raise_errno(ret, "tensor descriptor");
	tio_set_errno(0);
	return 0;
}

int tio_desc_init(struct tio_tensor_desc *desc, DLDataType dtype, int ndim,
		  const int64_t *shape)
{
	uint64_t bytes;
	int i;

	memset(desc, 0, sizeof(*desc));
	if (ndim < 0 || ndim > TIO_MAX_NDIM || (ndim && !shape))
		return tio_raise_errno(EINVAL, "tio_desc_init: ndim %d (0 to %d, with a shape)",
				       ndim, TIO_MAX_NDIM);
	desc->code = dtype.code;
	desc->bits = dtype.bits;
	desc->lanes = dtype.lanes;
	desc->ndim = (uint16_t)ndim;
	for (i = 0; i < ndim; i++)
		desc->shape[i] = shape[i];
	return tio_desc_nbytes(desc, &bytes);
}

int tio_desc_check(const struct tio_tensor_desc *desc, uint64_t size)
{
	int ret;

	if (!desc)
		return tio_raise_errno(EINVAL, "tio_desc_check: NULL descriptor");
	ret = tio_desc_validate(desc, size);
	if (ret)
		return tio_raise_errno(ret, "tensor descriptor over %llu bytes",
				       (unsigned long long)size);
	tio_set_errno(0);
	return 0;
}
