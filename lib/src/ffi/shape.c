// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Shape: an immutable vector of int64, stored right after the object.
 */
#include "ffi/ffi_internal.h"

static void shape_deleter(void *self, int flags)
{
	if (flags & TIO_DELETER_WEAK)
		tio__obj_free(self);
}

int tio_shape_new(const int64_t *dims, int64_t ndim, tio_object_t **out)
{
	tio_shape_obj_t *s;
	int64_t *d, i;

	if (ndim < 0 || ndim > (1 << 20) || (ndim && !dims) || !out)
		return tio_error_raise("ValueError", "bad shape rank %lld", (long long)ndim);
	for (i = 0; i < ndim; i++)
		if (dims[i] < 0)
			return tio_error_raise("ValueError", "dimension %lld is negative (%lld)",
					       (long long)i, (long long)dims[i]);
	s = tio__obj_new(sizeof(*s) + sizeof(int64_t) * (size_t)ndim, TIO_TYPE_SHAPE,
			 shape_deleter);
	if (!s)
		return tio__oom();
	d = (int64_t *)(s + 1);
	if (ndim)
		memcpy(d, dims, sizeof(*d) * (size_t)ndim);
	s->data = d;
	s->size = (size_t)ndim;
	*out = &s->header;
	return 0;
}

int64_t tio_shape_numel(const tio_object_t *shape)
{
	const tio_shape_obj_t *s = (const tio_shape_obj_t *)shape;
	int64_t n = 1;
	size_t i;

	for (i = 0; i < s->size; i++)
		n *= s->data[i];
	return n;
}
