// SPDX-License-Identifier: GPL-2.0
/*
 * Tensor descriptors: DLPack-style dtype, shape, strides and byte offset
 * laid over a buffer. The kernel only stores them; it checks that they are
 * well formed and that every element they address lies inside the buffer,
 * so that any consumer can trust a descriptor read back from a buffer.
 */
#include <linux/overflow.h>
#include <linux/uaccess.h>

#include "tio_buffer.h"

/* The largest DLPack type code we know (kDLBool). */
#define TIO_DTYPE_MAX	TIO_DTYPE_BOOL

static int tio_desc_check_dtype(const struct tio_tensor_desc *d)
{
	if (d->code > TIO_DTYPE_MAX || !d->lanes || !d->bits)
		return -EINVAL;
	/* Sub-byte types (1..7 bits) or whole bytes. */
	if (d->bits > 8 && d->bits % 8)
		return -EINVAL;
	return 0;
}

/*
 * The element index range [*lo, *hi] the descriptor addresses, relative to
 * element 0; *numel is zero for an empty tensor.
 */
static int tio_desc_extent(const struct tio_tensor_desc *d, u64 *numel,
			   s64 *lo, s64 *hi)
{
	bool strided = d->flags & TIO_DESC_F_STRIDED;
	s64 ext, row = 1;
	unsigned int i;
	u64 n = 1;

	*lo = 0;
	*hi = 0;
	for (i = 0; i < d->ndim; i++) {
		if (d->shape[i] < 0)
			return -EINVAL;
		if (check_mul_overflow(n, (u64)d->shape[i], &n))
			return -EOVERFLOW;
	}
	*numel = n;
	if (!n)
		return 0;
	/* Row-major strides of a compact tensor, innermost first. */
	for (i = d->ndim; i-- > 0;) {
		s64 stride = strided ? d->strides[i] : row;

		if (check_mul_overflow(d->shape[i] - 1, stride, &ext))
			return -EOVERFLOW;
		if (ext >= 0 ? check_add_overflow(*hi, ext, hi) :
			       check_add_overflow(*lo, ext, lo))
			return -EOVERFLOW;
		if (!strided && check_mul_overflow(row, d->shape[i], &row))
			return -EOVERFLOW;
	}
	return 0;
}

/**
 * tio_desc_check() - validate a descriptor against a buffer size
 * @d: the descriptor (kernel copy)
 * @size: the buffer's size in bytes
 *
 * Return: 0; -EINVAL for a malformed descriptor (unknown type code, zero
 * bits or lanes, bits not 1..7 or a multiple of 8, ndim above
 * TIO_MAX_NDIM, unknown flags, a negative extent, non-zero entries past
 * ndim, strides without TIO_DESC_F_STRIDED); -EOVERFLOW when its extent
 * overflows 64 bits; -ERANGE when it addresses bytes outside the buffer.
 */
int tio_desc_check(const struct tio_tensor_desc *d, u64 size)
{
	u64 numel, elem_bits, off_bits, end_bits;
	s64 lo, hi, lo_bits, hi_bits;
	unsigned int i;
	int ret;

	ret = tio_desc_check_dtype(d);
	if (ret)
		return ret;
	if (d->ndim > TIO_MAX_NDIM || d->flags & ~TIO_DESC_F_STRIDED)
		return -EINVAL;
	for (i = 0; i < TIO_MAX_NDIM; i++) {
		if (i >= d->ndim && (d->shape[i] || d->strides[i]))
			return -EINVAL;
		if (!(d->flags & TIO_DESC_F_STRIDED) && d->strides[i])
			return -EINVAL;
	}
	ret = tio_desc_extent(d, &numel, &lo, &hi);
	if (ret)
		return ret;
	if (d->byte_offset > size)
		return -ERANGE;
	if (!numel)
		return 0;
	elem_bits = (u64)d->bits * d->lanes;
	if (check_mul_overflow(d->byte_offset, (u64)8, &off_bits))
		return -EOVERFLOW;
	/* First bit addressed: off_bits + lo * elem_bits must be >= 0. */
	if (check_mul_overflow(lo, (s64)elem_bits, &lo_bits))
		return -EOVERFLOW;
	if (lo_bits < 0 && (u64)-lo_bits > off_bits)
		return -ERANGE;
	/* One past the last bit: off_bits + (hi + 1) * elem_bits. */
	if (check_add_overflow(hi, (s64)1, &hi) ||
	    check_mul_overflow(hi, (s64)elem_bits, &hi_bits) ||
	    check_add_overflow(off_bits, (u64)hi_bits, &end_bits))
		return -EOVERFLOW;
	if (DIV_ROUND_UP_ULL(end_bits, 8) > size)
		return -ERANGE;
	return 0;
}

/**
 * tio_desc_from_user() - copy in and validate a descriptor
 * @d: where to put it
 * @uptr: the user's struct tio_tensor_desc *
 * @size: the buffer's size in bytes
 *
 * Return: 0, -EFAULT, or an error of tio_desc_check().
 */
int tio_desc_from_user(struct tio_tensor_desc *d, u64 uptr, u64 size)
{
	if (copy_from_user(d, u64_to_user_ptr(uptr), sizeof(*d)))
		return -EFAULT;
	return tio_desc_check(d, size);
}
