/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * DLDataType to and from text: "float32", "int8x4", "bfloat16", "bool",
 * "float8_e4m3fn", "uint16", "complex64", "handle", ...
 *
 * Layer: ffi (lib/src/ffi/, the FFI core)
 */
#ifndef TENSORIO_DTYPE_H
#define TENSORIO_DTYPE_H

#include <stddef.h>

#include <tensorio/dlpack.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Room enough for any dtype's text and its NUL. */
#define TIO_DTYPE_STR_MAX 32

/**
 * tio_dtype_parse() - parse a dtype
 * @s: the text: a base name (int, uint, float, bfloat, complex, bool,
 *	handle, float8_e4m3fn and the other DLPack 1.x low-precision float
 *	names), bits where the base takes them (int8 ... int64, float16/32/64,
 *	bfloat16, complex64/128), and an optional "xLANES" suffix
 * @out: the dtype
 *
 * Return: 0, or -1 with a ValueError raised for malformed text.
 */
TIO_API int tio_dtype_parse(const char *s, DLDataType *out);

/**
 * tio_dtype_print() - the text of a dtype
 * @dt: the dtype
 * @buf: where the text goes, NUL-terminated
 * @len: room in @buf (TIO_DTYPE_STR_MAX is always enough)
 *
 * Return: the text's length, or -1 with a ValueError raised (unknown code,
 * bad bits or lanes, @buf too small).
 */
TIO_API int tio_dtype_print(DLDataType dt, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_DTYPE_H */
