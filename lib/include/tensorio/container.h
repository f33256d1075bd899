/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Containers: Array (a vector of owned Anys), Map (Any keys to Any values,
 * insertion ordered) and Shape (an immutable vector of int64).
 *
 * Containers are not locked: concurrent readers are fine, a writer needs
 * the container to itself.
 *
 * Layer: ffi (lib/src/ffi/, the FFI core)
 */
#ifndef TENSORIO_CONTAINER_H
#define TENSORIO_CONTAINER_H

#include <stddef.h>
#include <stdint.h>

#include <tensorio/any.h>
#include <tensorio/object.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct tio_array_obj - an Array
 * @header: the object header (TIO_TYPE_ARRAY)
 * @data: the elements (owned Anys)
 * @size: their number
 * @capacity: room allocated
 * @data_deleter: frees @data (always free(): the elements live in their own
 *	allocation; the TVM FFI sequence cell's last field)
 */
typedef struct tio_array_obj {
	tio_object_t header;
	tio_any_t *data;
	int64_t size;
	int64_t capacity;
	void (*data_deleter)(void *data);
} tio_array_obj_t;

/**
 * tio_array_new() - a new Array
 * @items: initial elements (copied as by tio_any_copy()), or NULL
 * @n: their number
 * @out: the Array (owned)
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_array_new(const tio_any_t *items, int64_t n, tio_object_t **out);

/** tio_array_size() - the number of elements of an Array */
static inline int64_t tio_array_size(const tio_object_t *arr)
{
	return ((const tio_array_obj_t *)arr)->size;
}

/**
 * tio_array_at() - element @i of an Array, as a view (no bounds check)
 * @arr: the Array
 * @i: the index, 0 <= @i < size
 *
 * Return: a pointer to the element, valid while the Array is unchanged.
 */
static inline const tio_any_t *tio_array_at(const tio_object_t *arr, int64_t i)
{
	return &((const tio_array_obj_t *)arr)->data[i];
}

/**
 * tio_array_get() - an owned copy of element @i
 * @arr: the Array
 * @i: the index (negative counts from the end)
 * @out: the copy
 *
 * Return: 0, or -1 with an IndexError raised.
 */
TIO_API int tio_array_get(tio_object_t *arr, int64_t i, tio_any_t *out);

/**
 * tio_array_set() - replace element @i
 * @arr: the Array
 * @i: the index (negative counts from the end)
 * @value: the new value (copied)
 *
 * Return: 0, or -1 with an error raised (IndexError).
 */
TIO_API int tio_array_set(tio_object_t *arr, int64_t i, const tio_any_t *value);

/**
 * tio_array_push() - append an element
 * @arr: the Array
 * @value: the value (copied)
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_array_push(tio_object_t *arr, const tio_any_t *value);

/**
 * tio_array_pop() - remove the last element
 * @arr: the Array
 * @out: the element (owned), or NULL to drop it
 *
 * Return: 0, or -1 with an IndexError raised when empty.
 */
TIO_API int tio_array_pop(tio_object_t *arr, tio_any_t *out);

/**
 * tio_map_new() - a new, empty Map
 * @out: the Map (owned)
 *
 * Keys are compared with tio_any_equal() and hashed with tio_any_hash():
 * strings and bytes by content, numbers by value, objects by identity.
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_map_new(tio_object_t **out);

/**
 * tio_map_size() - number of entries of a Map
 * @map: the Map
 *
 * Return: the number of entries.
 */
TIO_API int64_t tio_map_size(const tio_object_t *map);

/**
 * tio_map_set() - insert or replace an entry
 * @map: the Map
 * @key: the key (copied)
 * @value: the value (copied)
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_map_set(tio_object_t *map, const tio_any_t *key, const tio_any_t *value);

/**
 * tio_map_get() - look a key up
 * @map: the Map
 * @key: the key
 * @out: an owned copy of the value
 *
 * Return: 0, or -1 with a KeyError raised when absent.
 */
TIO_API int tio_map_get(tio_object_t *map, const tio_any_t *key, tio_any_t *out);

/**
 * tio_map_contains() - whether a key is present
 * @map: the Map
 * @key: the key
 *
 * Return: 1 or 0.
 */
TIO_API int tio_map_contains(const tio_object_t *map, const tio_any_t *key);

/**
 * tio_map_erase() - remove an entry
 * @map: the Map
 * @key: the key
 *
 * Return: 0, or -1 with a KeyError raised when absent.
 */
TIO_API int tio_map_erase(tio_object_t *map, const tio_any_t *key);

/**
 * tio_map_next() - iterate over entries in insertion order
 * @map: the Map
 * @pos: the iterator, 0 to start
 * @key: the entry's key (a view), or NULL
 * @value: the entry's value (a view), or NULL
 *
 * Return: 1 with an entry, 0 at the end.
 */
TIO_API int tio_map_next(const tio_object_t *map, int64_t *pos,
			 const tio_any_t **key, const tio_any_t **value);

/**
 * struct tio_shape_obj - a Shape (TVM FFI ABI: header, then data and size)
 * @header: the object header (TIO_TYPE_SHAPE)
 * @data: the dimensions
 * @size: their number
 */
typedef struct tio_shape_obj {
	tio_object_t header;
	const int64_t *data;
	size_t size;
} tio_shape_obj_t;

/**
 * tio_shape_new() - a Shape
 * @dims: the dimensions (copied)
 * @ndim: their number
 * @out: the Shape (owned)
 *
 * Return: 0, or -1 with an error raised (ValueError for a negative
 * dimension or count).
 */
TIO_API int tio_shape_new(const int64_t *dims, int64_t ndim, tio_object_t **out);

/** tio_shape_ndim() - number of dimensions of a Shape */
static inline size_t tio_shape_ndim(const tio_object_t *shape)
{
	return ((const tio_shape_obj_t *)shape)->size;
}

/** tio_shape_data() - the dimensions of a Shape */
static inline const int64_t *tio_shape_data(const tio_object_t *shape)
{
	return ((const tio_shape_obj_t *)shape)->data;
}

/**
 * tio_shape_numel() - product of the dimensions of a Shape (1 for none)
 * @shape: the Shape
 *
 * Return: the product of the dimensions, 1 for a Shape of none.
 */
TIO_API int64_t tio_shape_numel(const tio_object_t *shape);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_CONTAINER_H */
