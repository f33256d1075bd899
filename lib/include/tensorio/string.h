/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Strings and bytes: up to TIO_SMALL_STR_MAX (7) bytes inline in the Any
 * (SmallStr, SmallBytes), heap objects beyond (Str, Bytes). The text of
 * both is always followed by a NUL that the length does not count.
 *
 * Layer: ffi (lib/src/ffi/, the FFI core)
 */
#ifndef TENSORIO_STRING_H
#define TENSORIO_STRING_H

#include <stddef.h>

#include <tensorio/any.h>
#include <tensorio/object.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct tio_str_obj - a Str or Bytes object (TVM FFI ABI: header, then a
 * byte array)
 * @header: the object header (TIO_TYPE_STR or TIO_TYPE_BYTES)
 * @bytes: the contents, which this library stores right after the struct
 */
typedef struct tio_str_obj {
	tio_object_t header;
	tio_byte_array_t bytes;
} tio_str_obj_t;

/**
 * tio_str_new() - a string
 * @data: its bytes (need not be NUL-terminated; may hold NULs)
 * @len: their number
 * @out: an owned Any: a SmallStr when @len <= 7, else a Str object
 *
 * Return: 0, or -1 with a MemoryError raised (@out is None then).
 */
TIO_API int tio_str_new(const char *data, size_t len, tio_any_t *out);

/**
 * tio_str_from_cstr() - a string from a C string
 * @s: the NUL-terminated text
 * @out: an owned Any (as tio_str_new())
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_str_from_cstr(const char *s, tio_any_t *out);

/**
 * tio_bytes_new() - bytes
 * @data: the bytes
 * @len: their number
 * @out: an owned Any: SmallBytes when @len <= 7, else a Bytes object
 *
 * Return: 0, or -1 with a MemoryError raised.
 */
TIO_API int tio_bytes_new(const void *data, size_t len, tio_any_t *out);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_STRING_H */
