// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Array: a growable vector of owned Anys.
 */
#include "ffi/ffi_internal.h"

static void array_deleter(void *self, int flags)
{
	tio_array_obj_t *a = self;
	int64_t i;

	if (flags & TIO_DELETER_STRONG) {
		for (i = 0; i < a->size; i++)
			tio_any_decref(&a->data[i]);
		free(a->data);
		a->data = NULL;
		a->size = 0;
	}
	if (flags & TIO_DELETER_WEAK)
		tio__obj_free(a);
}

static int reserve(tio_array_obj_t *a, int64_t n)
{
	int64_t cap = a->capacity ? a->capacity : 4;
	tio_any_t *d;

	if (n <= a->capacity)
		return 0;
	while (cap < n)
		cap *= 2;
	if ((uint64_t)cap > SIZE_MAX / sizeof(tio_any_t))
		return tio__oom();
	d = realloc(a->data, sizeof(*d) * (size_t)cap);
	if (!d)
		return tio__oom();
	a->data = d;
	a->capacity = cap;
	return 0;
}

static tio_array_obj_t *as_array(tio_object_t *o)
{
	tio_any_t a;

	if (o && o->type_index == TIO_TYPE_ARRAY)
		return (tio_array_obj_t *)o;
	a = tio_any_object(o);
	tio_any_type_error(&a, "ffi.Array");
	return NULL;
}

int tio_array_new(const tio_any_t *items, int64_t n, tio_object_t **out)
{
	tio_array_obj_t *a;
	int64_t i;

	if (n < 0 || (n && !items) || !out)
		return tio_error_raise("ValueError", "bad array items (%lld)", (long long)n);
	a = tio__obj_new(sizeof(*a), TIO_TYPE_ARRAY, array_deleter);
	if (!a)
		return tio__oom();
	a->data = NULL;
	a->size = 0;
	a->capacity = 0;
	a->data_deleter = free;
	if (reserve(a, n))
		goto fail;
	for (i = 0; i < n; i++) {
		if (tio_any_copy(&a->data[i], &items[i]))
			goto fail;
		a->size++;
	}
	*out = &a->header;
	return 0;
fail:
	tio_object_decref(&a->header);
	return -1;
}

static int index_of(tio_array_obj_t *a, int64_t *i)
{
	if (*i < 0)
		*i += a->size;
	if (*i < 0 || *i >= a->size)
		return tio_error_raise("IndexError", "index %lld out of range for size %lld",
				       (long long)*i, (long long)a->size);
	return 0;
}

int tio_array_get(tio_object_t *arr, int64_t i, tio_any_t *out)
{
	tio_array_obj_t *a = as_array(arr);

	*out = tio_any_none();
	if (!a || index_of(a, &i))
		return -1;
	return tio_any_copy(out, &a->data[i]);
}

int tio_array_set(tio_object_t *arr, int64_t i, const tio_any_t *value)
{
	tio_array_obj_t *a = as_array(arr);
	tio_any_t v;

	if (!a || index_of(a, &i) || tio_any_copy(&v, value))
		return -1;
	tio_any_decref(&a->data[i]);
	a->data[i] = v;
	return 0;
}

int tio_array_push(tio_object_t *arr, const tio_any_t *value)
{
	tio_array_obj_t *a = as_array(arr);

	if (!a || reserve(a, a->size + 1) || tio_any_copy(&a->data[a->size], value))
		return -1;
	a->size++;
	return 0;
}

int tio_array_pop(tio_object_t *arr, tio_any_t *out)
{
	tio_array_obj_t *a = as_array(arr);

	if (!a)
		return -1;
	if (!a->size)
		return tio_error_raise("IndexError", "pop from an empty array");
	a->size--;
	if (out)
		*out = a->data[a->size];
	else
		tio_any_decref(&a->data[a->size]);
	return 0;
}
