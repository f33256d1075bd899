// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Any: copying views into owned values, type names and errors,
 * conversions that need more than the inline fast paths, equality and
 * hashing.
 */
#include <math.h>

#include "ffi/ffi_internal.h"

static const char *const pod_names[] = {
	[TIO_TYPE_NONE] = "None",
	[TIO_TYPE_INT] = "int",
	[TIO_TYPE_BOOL] = "bool",
	[TIO_TYPE_FLOAT] = "float",
	[TIO_TYPE_OPAQUE_PTR] = "opaque pointer",
	[TIO_TYPE_DATA_TYPE] = "dtype",
	[TIO_TYPE_DEVICE] = "device",
	[TIO_TYPE_DLTENSOR_PTR] = "DLTensor*",
	[TIO_TYPE_RAW_STR] = "const char*",
	[TIO_TYPE_BYTE_ARRAY_PTR] = "byte array",
	[TIO_TYPE_OBJECT_RVALUE_REF] = "object rvalue reference",
	[TIO_TYPE_SMALL_STR] = "str",
	[TIO_TYPE_SMALL_BYTES] = "bytes",
};

const char *tio_any_type_name(const tio_any_t *a)
{
	const tio_type_info_t *ti;

	if (a->type_index >= 0 && a->type_index <= TIO_TYPE_SMALL_BYTES)
		return pod_names[a->type_index];
	ti = tio_type_info(a->type_index);
	return ti ? ti->type_key : "unknown type";
}

int tio_any_type_error(const tio_any_t *a, const char *what)
{
	return tio_error_raise("TypeError", "expected %s, got %s", what,
			       tio_any_type_name(a));
}

int tio_any_copy(tio_any_t *dst, const tio_any_t *src)
{
	const tio_byte_array_t *ba;
	tio_object_t **slot;

	switch (src->type_index) {
	case TIO_TYPE_RAW_STR:
		return tio_str_new(src->v_c_str, strlen(src->v_c_str), dst);
	case TIO_TYPE_BYTE_ARRAY_PTR:
		ba = src->v_ptr;
		return tio_bytes_new(ba->data, ba->size, dst);
	case TIO_TYPE_OBJECT_RVALUE_REF:
		slot = src->v_ptr;
		*dst = tio_any_object(*slot);
		*slot = NULL;
		return 0;
	default:
		*dst = *src;
		if (src->type_index >= TIO_TYPE_STATIC_OBJECT_BEGIN)
			tio_object_incref(src->v_obj);
		return 0;
	}
}

int tio_any_to_object(const tio_any_t *a, int32_t type_index, tio_object_t **out)
{
	const tio_type_info_t *ti;

	if (a->type_index >= TIO_TYPE_STATIC_OBJECT_BEGIN &&
	    (type_index == TIO_TYPE_OBJECT || tio_object_is_instance(a->v_obj, type_index))) {
		*out = a->v_obj;
		return 0;
	}
	ti = tio_type_info(type_index);
	return tio_any_type_error(a, ti ? ti->type_key : "object");
}

int tio_any_to_str(const tio_any_t *a, const char **data, size_t *len)
{
	const tio_str_obj_t *s;

	switch (a->type_index) {
	case TIO_TYPE_SMALL_STR:
		*data = a->v_bytes;
		if (len)
			*len = a->small_len;
		return 0;
	case TIO_TYPE_STR:
		s = (const tio_str_obj_t *)a->v_obj;
		*data = s->bytes.data;
		if (len)
			*len = s->bytes.size;
		return 0;
	case TIO_TYPE_RAW_STR:
		*data = a->v_c_str;
		if (len)
			*len = strlen(a->v_c_str);
		return 0;
	default:
		return tio_any_type_error(a, "str");
	}
}

int tio_any_to_bytes(const tio_any_t *a, const void **data, size_t *len)
{
	const tio_byte_array_t *ba;
	const tio_str_obj_t *s;

	switch (a->type_index) {
	case TIO_TYPE_SMALL_BYTES:
	case TIO_TYPE_SMALL_STR:
		*data = a->v_bytes;
		*len = a->small_len;
		return 0;
	case TIO_TYPE_BYTES:
	case TIO_TYPE_STR:
		s = (const tio_str_obj_t *)a->v_obj;
		*data = s->bytes.data;
		*len = s->bytes.size;
		return 0;
	case TIO_TYPE_BYTE_ARRAY_PTR:
		ba = a->v_ptr;
		*data = ba->data;
		*len = ba->size;
		return 0;
	case TIO_TYPE_RAW_STR:
		*data = a->v_c_str;
		*len = strlen(a->v_c_str);
		return 0;
	default:
		return tio_any_type_error(a, "bytes");
	}
}

/* Strings (1) and bytes (2) compare by content; 0 for anything else. */
static int text_kind(const tio_any_t *a, const char **p, size_t *n)
{
	switch (a->type_index) {
	case TIO_TYPE_SMALL_STR:
	case TIO_TYPE_STR:
	case TIO_TYPE_RAW_STR:
		tio_any_to_str(a, p, n);
		return 1;
	case TIO_TYPE_SMALL_BYTES:
	case TIO_TYPE_BYTES:
	case TIO_TYPE_BYTE_ARRAY_PTR:
		tio_any_to_bytes(a, (const void **)p, n);
		return 2;
	default:
		return 0;
	}
}

int tio_any_equal(const tio_any_t *a, const tio_any_t *b)
{
	const char *pa, *pb;
	size_t na, nb;
	int ka = text_kind(a, &pa, &na), kb = text_kind(b, &pb, &nb);

	if (ka || kb)
		return ka == kb && na == nb && !memcmp(pa, pb, na);
	if (a->type_index != b->type_index) {
		/* 1 == True, as in Python. */
		if ((a->type_index == TIO_TYPE_INT || a->type_index == TIO_TYPE_BOOL) &&
		    (b->type_index == TIO_TYPE_INT || b->type_index == TIO_TYPE_BOOL))
			return a->v_int64 == b->v_int64;
		return 0;
	}
	switch (a->type_index) {
	case TIO_TYPE_NONE:
		return 1;
	case TIO_TYPE_FLOAT:
		return a->v_float64 == b->v_float64;
	case TIO_TYPE_DATA_TYPE:
		return a->v_dtype.code == b->v_dtype.code && a->v_dtype.bits == b->v_dtype.bits &&
		       a->v_dtype.lanes == b->v_dtype.lanes;
	case TIO_TYPE_DEVICE:
		return a->v_device.device_type == b->v_device.device_type &&
		       a->v_device.device_id == b->v_device.device_id;
	default:
		return a->v_uint64 == b->v_uint64;
	}
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

uint64_t tio_any_hash(const tio_any_t *a)
{
	const char *p;
	size_t n;
	int k = text_kind(a, &p, &n);
	uint64_t v;

	if (k)
		return tio__hash_bytes(p, n) + (uint64_t)k;
	switch (a->type_index) {
	case TIO_TYPE_BOOL:
	case TIO_TYPE_INT:
		return mix64((uint64_t)a->v_int64);
	case TIO_TYPE_FLOAT:
		if (a->v_float64 == 0)
			return mix64(0x5a5a);	/* 0.0 and -0.0 are equal */
		memcpy(&v, &a->v_float64, sizeof(v));
		return mix64(v ^ 0x5a5a);
	case TIO_TYPE_DATA_TYPE:
		v = (uint64_t)a->v_dtype.code | (uint64_t)a->v_dtype.bits << 8 |
		    (uint64_t)a->v_dtype.lanes << 16;
		return mix64(v ^ ((uint64_t)TIO_TYPE_DATA_TYPE << 56));
	case TIO_TYPE_DEVICE:
		v = (uint64_t)(uint32_t)a->v_device.device_type |
		    (uint64_t)(uint32_t)a->v_device.device_id << 32;
		return mix64(v ^ ((uint64_t)TIO_TYPE_DEVICE << 58));
	case TIO_TYPE_NONE:
		return 0;
	default:
		return mix64(a->v_uint64 ^ (uint64_t)(uint32_t)a->type_index);
	}
}
