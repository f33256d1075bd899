// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Strings and bytes: inline in the Any up to 7 bytes, else one allocation
 * holding the object and its NUL-terminated contents. Those of up to
 * STR_BLOCK bytes in all are one block size, whose blocks the releasing
 * thread keeps for its next string (obj_cache.h).
 */
#include "ffi/obj_cache.h"

#define STR_BLOCK 128

static size_t str_size(size_t len)
{
	return sizeof(tio_str_obj_t) + len + 1;
}

TIO_HOT_ALIGN
static void str_deleter(void *self, int flags)
{
	tio_str_obj_t *s = self;

	if (!(flags & TIO_DELETER_WEAK))
		return;
	if (str_size(s->bytes.size) <= STR_BLOCK)
		tio__obj_cache_free(OBJ_CACHE_STR, s);
	else
		tio__obj_free(s);
}

static int make(int32_t small, int32_t big, const void *data, size_t len, tio_any_t *out)
{
	tio_str_obj_t *s;
	char *p;

	if (len <= TIO_SMALL_STR_MAX) {
		out->type_index = small;
		out->small_len = (uint32_t)len;
		out->v_uint64 = 0;
		if (len)
			memcpy(out->v_bytes, data, len);
		return 0;
	}
	if (TIO_LIKELY(str_size(len) <= STR_BLOCK))
		s = tio__obj_cache_new(OBJ_CACHE_STR, STR_BLOCK, big, str_deleter);
	else
		s = tio__obj_new(str_size(len), big, str_deleter);
	if (TIO_UNLIKELY(!s)) {
		*out = tio_any_none();
		return tio__oom();
	}
	p = (char *)(s + 1);
	memcpy(p, data, len);
	p[len] = '\0';
	s->bytes.data = p;
	s->bytes.size = len;
	out->type_index = big;
	out->zero_padding = 0;
	out->v_obj = &s->header;
	return 0;
}

TIO_HOT_ALIGN
int tio_str_new(const char *data, size_t len, tio_any_t *out)
{
	return make(TIO_TYPE_SMALL_STR, TIO_TYPE_STR, data, len, out);
}

int tio_str_from_cstr(const char *s, tio_any_t *out)
{
	if (!s) {
		*out = tio_any_none();
		return tio_error_raise("ValueError", "NULL string");
	}
	return make(TIO_TYPE_SMALL_STR, TIO_TYPE_STR, s, strlen(s), out);
}

int tio_bytes_new(const void *data, size_t len, tio_any_t *out)
{
	return make(TIO_TYPE_SMALL_BYTES, TIO_TYPE_BYTES, data, len, out);
}

int tio__str_array(char **names, size_t n, tio_any_t *out)
{
	tio_object_t *arr;
	tio_any_t s;
	size_t i;

	*out = tio_any_none();
	if (tio_array_new(NULL, 0, &arr))
		return -1;
	for (i = 0; i < n; i++) {
		if (tio_str_from_cstr(names[i], &s))
			goto fail;
		if (tio_array_push(arr, &s)) {
			tio_any_decref(&s);
			goto fail;
		}
		tio_any_decref(&s);
	}
	*out = tio_any_object(arr);
	return 0;
fail:
	tio_object_decref(arr);
	return -1;
}
