/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tio_any_t: the 16-byte tagged value every FFI call passes and returns.
 *
 * Layout (TVM FFI C ABI): int32 type index; a uint32 that is zero except
 * for the length of an inline small string or small bytes; an 8-byte union.
 *
 * Ownership. An Any is either *owned* or a *view*:
 *  - an owned Any holding an object (type index >= TIO_TYPE_OBJECT) owns one
 *    strong reference to it; drop it with tio_any_decref();
 *  - a view borrows: it is valid only while whoever owns the value keeps it.
 *    Call arguments are views: a callee that keeps one calls tio_any_copy().
 *  - values below TIO_TYPE_OBJECT own nothing, except that RawStr,
 *    ByteArrayPtr and DLTensorPtr point at memory the Any does not own (so
 *    they only ever appear in views) and SmallStr/SmallBytes carry their
 *    bytes inline (up to 7, always followed by a NUL).
 *  - a call's result (ret) is owned by the caller; it starts as None.
 *
 * Layer: ffi (lib/src/ffi/, the FFI core)
 */
#ifndef TENSORIO_ANY_H
#define TENSORIO_ANY_H

#include <stddef.h>
#include <stdint.h>

#include <tensorio/dlpack.h>
#include <tensorio/object.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Type indices (TVM FFI values). */
enum {
	TIO_TYPE_ANY = -1,		/* only in reflection: "any value" */
	TIO_TYPE_NONE = 0,
	TIO_TYPE_INT = 1,
	TIO_TYPE_BOOL = 2,
	TIO_TYPE_FLOAT = 3,
	TIO_TYPE_OPAQUE_PTR = 4,
	TIO_TYPE_DATA_TYPE = 5,
	TIO_TYPE_DEVICE = 6,
	TIO_TYPE_DLTENSOR_PTR = 7,
	TIO_TYPE_RAW_STR = 8,
	TIO_TYPE_BYTE_ARRAY_PTR = 9,
	TIO_TYPE_OBJECT_RVALUE_REF = 10,
	TIO_TYPE_SMALL_STR = 11,
	TIO_TYPE_SMALL_BYTES = 12,
	TIO_TYPE_STATIC_OBJECT_BEGIN = 64,
	TIO_TYPE_OBJECT = 64,
	TIO_TYPE_STR = 65,
	TIO_TYPE_BYTES = 66,
	TIO_TYPE_ERROR = 67,
	TIO_TYPE_FUNCTION = 68,
	TIO_TYPE_SHAPE = 69,
	TIO_TYPE_TENSOR = 70,
	TIO_TYPE_ARRAY = 71,
	TIO_TYPE_MAP = 72,
	TIO_TYPE_MODULE = 73,
	TIO_TYPE_OPAQUE_PY_OBJECT = 74,	/* an Opaque object: header, handle */
	TIO_TYPE_LIST = 75,
	TIO_TYPE_DICT = 76,
	TIO_TYPE_VISIT_INTERRUPT = 77,
	TIO_TYPE_STATIC_OBJECT_END = 78,
	TIO_TYPE_DYN_OBJECT_BEGIN = 128,
};

/* The longest string or bytes an Any holds inline. */
#define TIO_SMALL_STR_MAX 7

/**
 * struct tio_byte_array - a pointer and a length (not owned)
 * @data: the bytes
 * @size: their number
 */
typedef struct tio_byte_array {
	const char *data;
	size_t size;
} tio_byte_array_t;

/**
 * struct tio_any - a tagged value (16 bytes)
 * @type_index: one of TIO_TYPE_*, or a registered object type
 * @zero_padding: zero, except ...
 * @small_len: ... the length of a SmallStr/SmallBytes
 * @v_int64: Int, Bool (0 or 1)
 * @v_float64: Float
 * @v_ptr: OpaquePtr, DLTensorPtr, ByteArrayPtr, ObjectRValueRef
 * @v_c_str: RawStr
 * @v_obj: objects
 * @v_dtype: DataType
 * @v_device: Device
 * @v_bytes: SmallStr, SmallBytes
 * @v_uint64: raw bits
 */
typedef struct tio_any {
	int32_t type_index;
	union {
		uint32_t zero_padding;
		uint32_t small_len;
	};
	union {
		int64_t v_int64;
		double v_float64;
		void *v_ptr;
		const char *v_c_str;
		tio_object_t *v_obj;
		DLDataType v_dtype;
		DLDevice v_device;
		char v_bytes[8];
		uint64_t v_uint64;
	};
} tio_any_t;

TIO_STATIC_ASSERT(sizeof(tio_any_t) == 16, "Any is 16 bytes");

/* Constructors. None of them takes or adds a reference. */

/** tio_any_none() - None */
static inline tio_any_t tio_any_none(void)
{
	tio_any_t a;

	a.type_index = TIO_TYPE_NONE;
	a.zero_padding = 0;
	a.v_int64 = 0;
	return a;
}

/** tio_any_int() - an Int @v */
static inline tio_any_t tio_any_int(int64_t v)
{
	tio_any_t a;

	a.type_index = TIO_TYPE_INT;
	a.zero_padding = 0;
	a.v_int64 = v;
	return a;
}

/** tio_any_bool() - a Bool (@v != 0) */
static inline tio_any_t tio_any_bool(int v)
{
	tio_any_t a;

	a.type_index = TIO_TYPE_BOOL;
	a.zero_padding = 0;
	a.v_int64 = v != 0;
	return a;
}

/** tio_any_float() - a Float @v */
static inline tio_any_t tio_any_float(double v)
{
	tio_any_t a;

	a.type_index = TIO_TYPE_FLOAT;
	a.zero_padding = 0;
	a.v_float64 = v;
	return a;
}

/** tio_any_ptr() - an OpaquePtr @p (NULL gives None) */
static inline tio_any_t tio_any_ptr(void *p)
{
	tio_any_t a;

	a.type_index = p ? TIO_TYPE_OPAQUE_PTR : TIO_TYPE_NONE;
	a.zero_padding = 0;
	a.v_int64 = 0;
	a.v_ptr = p;
	return a;
}

/** tio_any_dtype() - a DataType @dt */
static inline tio_any_t tio_any_dtype(DLDataType dt)
{
	tio_any_t a;

	a.type_index = TIO_TYPE_DATA_TYPE;
	a.zero_padding = 0;
	a.v_int64 = 0;
	a.v_dtype = dt;
	return a;
}

/** tio_any_device() - a Device @dev */
static inline tio_any_t tio_any_device(DLDevice dev)
{
	tio_any_t a;

	a.type_index = TIO_TYPE_DEVICE;
	a.zero_padding = 0;
	a.v_device = dev;
	return a;
}

/** tio_any_dltensor() - a view of a DLTensor @t (not owned; NULL gives None) */
static inline tio_any_t tio_any_dltensor(DLTensor *t)
{
	tio_any_t a;

	a.type_index = t ? TIO_TYPE_DLTENSOR_PTR : TIO_TYPE_NONE;
	a.zero_padding = 0;
	a.v_int64 = 0;
	a.v_ptr = t;
	return a;
}

/** tio_any_raw_str() - a view of the C string @s (not copied; NULL gives None) */
static inline tio_any_t tio_any_raw_str(const char *s)
{
	tio_any_t a;

	a.type_index = s ? TIO_TYPE_RAW_STR : TIO_TYPE_NONE;
	a.zero_padding = 0;
	a.v_int64 = 0;
	a.v_c_str = s;
	return a;
}

/**
 * tio_any_object() - an Any holding @obj (NULL gives None)
 * @obj: the object, or NULL
 *
 * No reference is taken: the result is a view, or an owned Any when the
 * caller hands over a reference it owns.
 *
 * Return: the Any (type index None for NULL).
 */
static inline tio_any_t tio_any_object(tio_object_t *obj)
{
	tio_any_t a;

	a.type_index = obj ? obj->type_index : TIO_TYPE_NONE;
	a.zero_padding = 0;
	a.v_obj = obj;
	return a;
}

/** tio_any_is_object() - whether @a holds an object */
static inline int tio_any_is_object(const tio_any_t *a)
{
	return a->type_index >= TIO_TYPE_STATIC_OBJECT_BEGIN;
}

/**
 * tio_any_decref() - drop the reference an owned Any holds; set it to None
 * @a: the Any
 */
TIO_INLINE void tio_any_decref(tio_any_t *a)
{
	if (a->type_index >= TIO_TYPE_STATIC_OBJECT_BEGIN)
		tio_object_decref(a->v_obj);
	*a = tio_any_none();
}

/**
 * tio_any_copy() - make an owned copy of a value (a view or an owned Any)
 * @dst: where the copy goes (overwritten, not decref'd first)
 * @src: the value
 *
 * Objects gain a reference; RawStr and ByteArrayPtr are copied into a
 * string or bytes (SmallStr/SmallBytes, or an object); an ObjectRValueRef
 * moves the object out of the slot it points to. DLTensorPtr and OpaquePtr
 * stay pointers: what they point at is never owned.
 *
 * Return: 0, or -1 with a MemoryError raised (@dst is then None).
 */
TIO_API int tio_any_copy(tio_any_t *dst, const tio_any_t *src);

/**
 * tio_any_type_name() - a readable name of @a's type ("int", "ffi.String", ...)
 * @a: the value
 *
 * Return: a static string.
 */
TIO_API const char *tio_any_type_name(const tio_any_t *a);

/**
 * tio_any_type_error() - raise "TypeError: expected <what>, got <type>"
 * @a: the value that did not convert
 * @what: what was expected
 *
 * Return: -1, always.
 */
TIO_API int tio_any_type_error(const tio_any_t *a, const char *what) __attribute__((cold));

/*
 * Conversions. Each returns 0 with *out set, or -1 with a TypeError raised
 * (and *out zeroed) when the value is of another kind. Results are views
 * of @a. The error path returns a constant after the (cold) raise, so that
 * a callee's fast path saves no register for it.
 */

/** tio_any_to_int() - Int or Bool as an int64 */
static inline int tio_any_to_int(const tio_any_t *a, int64_t *out)
{
	if (a->type_index == TIO_TYPE_INT || a->type_index == TIO_TYPE_BOOL) {
		*out = a->v_int64;
		return 0;
	}
	*out = 0;
	tio_any_type_error(a, "int");
	return -1;
}

/** tio_any_to_bool() - Bool or Int as 0/1 */
static inline int tio_any_to_bool(const tio_any_t *a, int *out)
{
	if (a->type_index == TIO_TYPE_INT || a->type_index == TIO_TYPE_BOOL) {
		*out = a->v_int64 != 0;
		return 0;
	}
	*out = 0;
	tio_any_type_error(a, "bool");
	return -1;
}

/** tio_any_to_float() - Float, Int or Bool as a double */
static inline int tio_any_to_float(const tio_any_t *a, double *out)
{
	if (a->type_index == TIO_TYPE_FLOAT) {
		*out = a->v_float64;
		return 0;
	}
	if (a->type_index == TIO_TYPE_INT || a->type_index == TIO_TYPE_BOOL) {
		*out = (double)a->v_int64;
		return 0;
	}
	*out = 0;
	tio_any_type_error(a, "float");
	return -1;
}

/** tio_any_to_ptr() - OpaquePtr, or None as NULL */
static inline int tio_any_to_ptr(const tio_any_t *a, void **out)
{
	if (a->type_index == TIO_TYPE_OPAQUE_PTR || a->type_index == TIO_TYPE_NONE) {
		*out = a->type_index == TIO_TYPE_NONE ? NULL : a->v_ptr;
		return 0;
	}
	*out = NULL;
	tio_any_type_error(a, "opaque pointer");
	return -1;
}

/** tio_any_to_dtype() - DataType */
static inline int tio_any_to_dtype(const tio_any_t *a, DLDataType *out)
{
	if (a->type_index == TIO_TYPE_DATA_TYPE) {
		*out = a->v_dtype;
		return 0;
	}
	out->code = 0;
	out->bits = 0;
	out->lanes = 0;
	tio_any_type_error(a, "dtype");
	return -1;
}

/** tio_any_to_device() - Device */
static inline int tio_any_to_device(const tio_any_t *a, DLDevice *out)
{
	if (a->type_index == TIO_TYPE_DEVICE) {
		*out = a->v_device;
		return 0;
	}
	out->device_type = (DLDeviceType)0;
	out->device_id = 0;
	tio_any_type_error(a, "device");
	return -1;
}

/**
 * tio_any_to_dltensor() - DLTensorPtr, or the DLTensor inside a Tensor
 * object (borrowed from @a)
 * @a: the value
 * @out: the DLTensor; NULL with a type error raised when @a holds neither
 *
 * Return: 0, or -1 with a TypeError raised.
 */
static inline int tio_any_to_dltensor(const tio_any_t *a, DLTensor **out)
{
	if (a->type_index == TIO_TYPE_DLTENSOR_PTR) {
		*out = (DLTensor *)a->v_ptr;
		return 0;
	}
	if (a->type_index == TIO_TYPE_TENSOR) {
		*out = (DLTensor *)((char *)a->v_obj + sizeof(tio_object_t));
		return 0;
	}
	*out = NULL;
	tio_any_type_error(a, "tensor");
	return -1;
}

/**
 * tio_any_to_object() - the object in @a, if it is an instance of @type_index
 * @a: the value
 * @type_index: the type wanted (TIO_TYPE_OBJECT accepts any object)
 * @out: the object, borrowed from @a
 *
 * Return: 0, or -1 with a TypeError raised (None is an error too).
 */
TIO_API int tio_any_to_object(const tio_any_t *a, int32_t type_index,
			      tio_object_t **out);

/**
 * tio_any_to_str() - the text of a string (SmallStr, Str or RawStr)
 * @a: the value
 * @data: the bytes, NUL-terminated, borrowed from @a (a SmallStr's live in
 *	@a itself)
 * @len: their number, without the NUL (may be NULL)
 *
 * Return: 0, or -1 with a TypeError raised.
 */
TIO_API int tio_any_to_str(const tio_any_t *a, const char **data, size_t *len);

/**
 * tio_any_to_bytes() - the contents of bytes (SmallBytes, Bytes or
 * ByteArrayPtr; strings are accepted too)
 * @a: the value
 * @data: the bytes, borrowed from @a
 * @len: their number
 *
 * Return: 0, or -1 with a TypeError raised.
 */
TIO_API int tio_any_to_bytes(const tio_any_t *a, const void **data, size_t *len);

/**
 * tio_any_equal() - whether two values are equal as map keys are compared
 * @a: one
 * @b: the other
 *
 * Strings and bytes compare by content (a SmallStr equals a Str of the same
 * text), numbers and PODs by value, other objects by identity.
 *
 * Return: 1 or 0.
 */
TIO_API int tio_any_equal(const tio_any_t *a, const tio_any_t *b);

/**
 * tio_any_hash() - the hash consistent with tio_any_equal()
 * @a: the value
 *
 * Return: the hash; equal values (tio_any_equal()) hash equal.
 */
TIO_API uint64_t tio_any_hash(const tio_any_t *a);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_ANY_H */
