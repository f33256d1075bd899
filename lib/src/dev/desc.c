// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tensor descriptor checks, the same as the driver's (kmod/tio_desc.c), so
 * that the user backend accepts and refuses exactly what the kernel does
 * and callers can check a descriptor before sending it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dev/dev_internal.h"

/* Record why, when the caller asked; returns @err for the caller. */
__attribute__((format(printf, 4, 5)))
static int fault(int err, char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return err;
}

static int desc_extent(const struct tio_tensor_desc *d, uint64_t *numel,
		       int64_t *lo, int64_t *hi, char *why, size_t len)
{
	int strided = d->flags & TIO_DESC_F_STRIDED;
	int64_t ext, row = 1;
	uint64_t n = 1;
	unsigned int i;

	*lo = 0;
	*hi = 0;
	for (i = 0; i < d->ndim; i++) {
		if (d->shape[i] < 0)
			return fault(-EINVAL, why, len, "shape[%u] = %lld is a negative extent",
				     i, (long long)d->shape[i]);
		if (__builtin_mul_overflow(n, (uint64_t)d->shape[i], &n))
			return fault(-EOVERFLOW, why, len, "the extents overflow 64 bits");
	}
	*numel = n;
	if (!n)
		return 0;
	for (i = d->ndim; i-- > 0;) {
		int64_t stride = strided ? d->strides[i] : row;

		if (__builtin_mul_overflow(d->shape[i] - 1, stride, &ext) ||
		    (ext >= 0 ? __builtin_add_overflow(*hi, ext, hi) :
				__builtin_add_overflow(*lo, ext, lo)) ||
		    (!strided && __builtin_mul_overflow(row, d->shape[i], &row)))
			return fault(-EOVERFLOW, why, len, "the extents overflow 64 bits");
	}
	return 0;
}

static int desc_fields(const struct tio_tensor_desc *d, char *why, size_t len)
{
	unsigned int i;

	if (d->code > TIO_DTYPE_BOOL)
		return fault(-EINVAL, why, len,
			     "dtype code %u is not a DLPack type code (0..%u)",
			     d->code, TIO_DTYPE_BOOL);
	if (!d->bits)
		return fault(-EINVAL, why, len, "bits 0: an element has at least 1 bit");
	if (d->bits > 8 && d->bits % 8)
		return fault(-EINVAL, why, len,
			     "bits %u: above 8, bits come in whole bytes", d->bits);
	if (!d->lanes)
		return fault(-EINVAL, why, len, "lanes 0: an element has at least 1 lane");
	if (d->ndim > TIO_MAX_NDIM)
		return fault(-EINVAL, why, len, "ndim %u above the maximum of %d",
			     d->ndim, TIO_MAX_NDIM);
	if (d->flags & ~TIO_DESC_F_STRIDED)
		return fault(-EINVAL, why, len, "unknown descriptor flags %#x",
			     d->flags & ~TIO_DESC_F_STRIDED);
	for (i = 0; i < TIO_MAX_NDIM; i++) {
		if (i >= d->ndim && (d->shape[i] || d->strides[i]))
			return fault(-EINVAL, why, len,
				     "shape[%u] or strides[%u] set past ndim %u", i, i, d->ndim);
		if (!(d->flags & TIO_DESC_F_STRIDED) && d->strides[i])
			return fault(-EINVAL, why, len,
				     "strides[%u] set without TIO_DESC_F_STRIDED", i);
	}
	return 0;
}

/* The bytes @d reaches from the buffer's start (byte_offset included). */
static int desc_span(const struct tio_tensor_desc *d, uint64_t *bytes,
		     char *why, size_t len)
{
	uint64_t numel, elem_bits, off_bits, end_bits;
	int64_t lo, hi, lo_bits, hi_bits;
	int ret;

	ret = desc_fields(d, why, len);
	if (ret)
		return ret;
	ret = desc_extent(d, &numel, &lo, &hi, why, len);
	if (ret)
		return ret;
	*bytes = d->byte_offset;
	if (!numel)
		return 0;
	elem_bits = (uint64_t)d->bits * d->lanes;
	if (__builtin_mul_overflow(d->byte_offset, (uint64_t)8, &off_bits) ||
	    __builtin_mul_overflow(lo, (int64_t)elem_bits, &lo_bits))
		return fault(-EOVERFLOW, why, len, "the byte extent overflows 64 bits");
	if (lo_bits < 0 && (uint64_t)-lo_bits > off_bits)
		return fault(-ERANGE, why, len,
			     "negative strides reach %llu bytes before the buffer's start",
			     (unsigned long long)(((uint64_t)-lo_bits - off_bits + 7) / 8));
	if (__builtin_add_overflow(hi, (int64_t)1, &hi) ||
	    __builtin_mul_overflow(hi, (int64_t)elem_bits, &hi_bits) ||
	    __builtin_add_overflow(off_bits, (uint64_t)hi_bits, &end_bits))
		return fault(-EOVERFLOW, why, len, "the byte extent overflows 64 bits");
	*bytes = (end_bits + 7) / 8;
	return 0;
}

/**
 * tio_desc_explain() - the driver's tio_desc_check(), saying what is wrong
 * @d: the descriptor
 * @size: the buffer's size
 * @why: where to write the fault (the field and why), or NULL
 * @len: room at @why
 *
 * Return: 0, -EINVAL, -EOVERFLOW or -ERANGE.
 */
int tio_desc_explain(const struct tio_tensor_desc *d, uint64_t size, char *why, size_t len)
{
	uint64_t bytes;
	int ret = desc_span(d, &bytes, why, len);

	if (ret)
		return ret;
	if (d->byte_offset > size)
		return fault(-ERANGE, why, len,
			     "byte_offset %llu is past the buffer's %llu bytes",
			     (unsigned long long)d->byte_offset, (unsigned long long)size);
	if (bytes > size)
		return fault(-ERANGE, why, len,
			     "the tensor needs %llu bytes (byte_offset %llu + its extent) but the buffer has %llu",
			     (unsigned long long)bytes,
			     (unsigned long long)d->byte_offset, (unsigned long long)size);
	return 0;
}

/**
 * tio_desc_validate() - the driver's tio_desc_check()
 * @d: the descriptor
 * @size: the buffer's size
 *
 * Return: 0, -EINVAL, -EOVERFLOW or -ERANGE.
 */
/* The library's descriptor is the driver's, field for field (tio_desc_uapi()). */
#define TIO_DESC_SAME(f) \
	(offsetof(struct tio_desc, f) == offsetof(struct tio_tensor_desc, f) && \
	 sizeof(((struct tio_desc *)0)->f) == sizeof(((struct tio_tensor_desc *)0)->f))
_Static_assert(sizeof(struct tio_desc) == sizeof(struct tio_tensor_desc) &&
	       TIO_DESC_SAME(code) && TIO_DESC_SAME(bits) && TIO_DESC_SAME(lanes) &&
	       TIO_DESC_SAME(ndim) && TIO_DESC_SAME(flags) && TIO_DESC_SAME(byte_offset) &&
	       TIO_DESC_SAME(shape) && TIO_DESC_SAME(strides),
	       "struct tio_desc and the uapi's struct tio_tensor_desc differ: convert in tio_desc_uapi()");

int tio_desc_validate(const struct tio_tensor_desc *d, uint64_t size)
{
	return tio_desc_explain(d, size, NULL, 0);
}

int tio_desc_nbytes(const struct tio_desc *desc, uint64_t *bytes)
{
	char why[160];
	int ret = desc_span(tio_desc_uapi(desc), bytes, why, sizeof(why));

	if (ret)
		return tio_raise_errno(ret, "tensor descriptor: %s", why);
	tio_set_errno(0);
	return 0;
}

int tio_desc_init(struct tio_desc *desc, DLDataType dtype, int ndim,
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

int tio_desc_check(const struct tio_desc *desc, uint64_t size)
{
	char why[160];
	int ret;

	if (!desc)
		return tio_raise_errno(EINVAL, "tio_desc_check: NULL descriptor");
	ret = tio_desc_explain(tio_desc_uapi(desc), size, why, sizeof(why));
	if (ret)
		return tio_raise_errno(ret, "tensor descriptor over %llu bytes: %s",
				       (unsigned long long)size, why);
	tio_set_errno(0);
	return 0;
}
