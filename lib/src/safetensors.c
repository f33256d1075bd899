// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * safetensors load (into one pinned buffer, zero-copy views) and save.
 * Format: u64 little-endian header length N, N bytes of JSON
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}, ...,
 * "__metadata__": {..}}, then the data; offsets count from its start.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <tensorio/io.h>
#include <tensorio/safetensors.h>

#include "dev_internal.h"

static const struct {
	const char *name;
	uint8_t code, bits;
} st_dtypes[] = {
	{ "F64", kDLFloat, 64 }, { "F32", kDLFloat, 32 }, { "F16", kDLFloat, 16 },
	{ "BF16", kDLBfloat, 16 }, { "I64", kDLInt, 64 }, { "I32", kDLInt, 32 },
	{ "I16", kDLInt, 16 }, { "I8", kDLInt, 8 }, { "U64", kDLUInt, 64 },
	{ "U32", kDLUInt, 32 }, { "U16", kDLUInt, 16 }, { "U8", kDLUInt, 8 },
	{ "BOOL", TIO_DTYPE_BOOL, 8 },
};

struct st_entry {
	char *name;
	struct tio_tensor_desc desc;
	uint64_t begin, end;
};

struct tio_safetensors {
	tio_buffer_t *buf;
	struct st_entry *e;
	int64_t n;
};

static int st_bad(const char *path, const char *why, const char *name)
{
	return tio_raise_errno(EINVAL, "%s: malformed safetensors file: %s%s%s", path,
			       why, name ? " in entry " : "", name ? name : "");
}

static int st_cmp(const void *a, const void *b)
{
	const struct st_entry *x = a, *y = b;

	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static int st_entry_parse(const char *path, const char *name, json_object *v,
			  uint64_t data_len, struct st_entry *e)
{
	json_object *dt, *shape, *offs;
	uint64_t numel = 1, bytes;
	const char *d;
	size_t i, k, nd;

	if (!json_object_is_type(v, json_type_object) ||
	    !json_object_object_get_ex(v, "dtype", &dt) ||
	    !json_object_object_get_ex(v, "shape", &shape) ||
	    !json_object_object_get_ex(v, "data_offsets", &offs) ||
	    !json_object_is_type(dt, json_type_string) ||
	    !json_object_is_type(shape, json_type_array) ||
	    !json_object_is_type(offs, json_type_array) ||
	    json_object_array_length(offs) != 2)
		return st_bad(path, "needs dtype, shape and data_offsets", name);
	d = json_object_get_string(dt);
	for (k = 0; k < sizeof(st_dtypes) / sizeof(st_dtypes[0]); k++)
		if (!strcmp(d, st_dtypes[k].name))
			break;
	if (k == sizeof(st_dtypes) / sizeof(st_dtypes[0]))
		return st_bad(path, "unknown dtype", name);
	nd = json_object_array_length(shape);
	if (nd > TIO_MAX_NDIM)
		return st_bad(path, "more than 8 dimensions", name);
	memset(&e->desc, 0, sizeof(e->desc));
	e->desc.code = st_dtypes[k].code;
	e->desc.bits = st_dtypes[k].bits;
	e->desc.lanes = 1;
	e->desc.ndim = (uint16_t)nd;
	for (i = 0; i < nd; i++) {
		json_object *x = json_object_array_get_idx(shape, i);
		int64_t s;

		if (!json_object_is_type(x, json_type_int) ||
		    (s = json_object_get_int64(x)) < 0)
			return st_bad(path, "bad shape", name);
		e->desc.shape[i] = s;
		if (__builtin_mul_overflow(numel, (uint64_t)s, &numel))
			return st_bad(path, "shape overflows", name);
	}
	for (i = 0; i < 2; i++) {
		json_object *x = json_object_array_get_idx(offs, i);

		if (!json_object_is_type(x, json_type_int) || json_object_get_int64(x) < 0)
			return st_bad(path, "bad data_offsets", name);
	}
	e->begin = (uint64_t)json_object_get_int64(json_object_array_get_idx(offs, 0));
	e->end = (uint64_t)json_object_get_int64(json_object_array_get_idx(offs, 1));
	if (e->begin > e->end || e->end > data_len)
		return st_bad(path, "data_offsets out of range", name);
	if (__builtin_mul_overflow(numel, (uint64_t)st_dtypes[k].bits / 8, &bytes) ||
	    bytes != e->end - e->begin)
		return st_bad(path, "data_offsets do not match dtype and shape", name);
	e->name = strdup(name);
	return e->name ? 0 : tio_raise_errno(ENOMEM, "%s", path);
}

static int st_parse(const char *path, struct tio_safetensors *st, const char *json,
		    uint64_t hlen, uint64_t data_start, uint64_t data_len)
{
	struct json_tokener *tok = json_tokener_new();
	json_object *root = NULL;
	int ret = -1;
	int64_t i;

	if (!tok)
		return tio_raise_errno(ENOMEM, "%s", path);
	root = json_tokener_parse_ex(tok, json, (int)hlen);
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    !json_object_is_type(root, json_type_object)) {
		st_bad(path, "the header is not a JSON object", NULL);
		goto out;
	}
	st->e = calloc((size_t)json_object_object_length(root) + 1, sizeof(*st->e));
	if (!st->e) {
		tio_raise_errno(ENOMEM, "%s", path);
		goto out;
	}
	{
		json_object_object_foreach(root, key, val) {
			if (!strcmp(key, "__metadata__"))
				continue;
			if (st_entry_parse(path, key, val, data_len, &st->e[st->n]))
				goto out;
			st->e[st->n].desc.byte_offset = data_start + st->e[st->n].begin;
			st->n++;
		}
	}
	qsort(st->e, (size_t)st->n, sizeof(*st->e), st_cmp);
	for (i = 1; i < st->n; i++)
		if (st->e[i].begin < st->e[i - 1].end &&
		    st->e[i].end > st->e[i].begin && st->e[i - 1].end > st->e[i - 1].begin) {
			st_bad(path, "overlapping data_offsets", st->e[i].name);
			goto out;
		}
	ret = 0;
out:
	json_object_put(root);
	json_tokener_free(tok);
	return ret;
}

int tio_safetensors_load(const char *path, tio_safetensors_t **out)
{
	struct tio_safetensors *st;
	unsigned char *mem;
	uint64_t hlen, size;
	struct stat sb;
	char *json;
	int i;

	if (!path)
		return tio_raise_errno(EINVAL, "tio_safetensors_load: NULL path");
	if (stat(path, &sb) < 0)
		return tio_raise_file_errno(errno, "opening %s", path);
	size = (uint64_t)sb.st_size;
	if (size < 8)
		return st_bad(path, "shorter than its 8-byte header length", NULL);
	st = calloc(1, sizeof(*st));
	if (!st)
		return tio_raise_errno(ENOMEM, "%s", path);
	if (tio_buffer_alloc(size, NULL, &st->buf) ||
	    tio_file_read(path, 0, size, st->buf, 0, NULL))
		goto err;
	mem = tio_buffer_data(st->buf);
	for (hlen = 0, i = 7; i >= 0; i--)
		hlen = hlen << 8 | mem[i];
	if (hlen > TIO_SAFETENSORS_MAX_HEADER) {
		tio_raise_errno(E2BIG, "%s: safetensors header of %llu bytes (limit %u)",
				path, (unsigned long long)hlen, TIO_SAFETENSORS_MAX_HEADER);
		goto err;
	}
	if (hlen > size - 8) {
		st_bad(path, "truncated header", NULL);
		goto err;
	}
	json = malloc(hlen + 1);
	if (!json) {
		tio_raise_errno(ENOMEM, "%s", path);
		goto err;
	}
	memcpy(json, mem + 8, hlen);
	json[hlen] = 0;
	i = st_parse(path, st, json, hlen, 8 + hlen, size - 8 - hlen);
	free(json);
	if (i)
		goto err;
	*out = st;
	return 0;
err:
	tio_safetensors_free(st);
	return -1;
}

void tio_safetensors_free(tio_safetensors_t *st)
{
	int64_t i;

	if (!st)
		return;
	for (i = 0; i < st->n; i++)
		free(st->e[i].name);
	free(st->e);
	tio_buffer_release(st->buf);
	free(st);
}

int64_t tio_safetensors_count(const tio_safetensors_t *st)
{
	return st->n;
}

const char *tio_safetensors_name(const tio_safetensors_t *st, int64_t i)
{
	return i >= 0 && i < st->n ? st->e[i].name : NULL;
}

tio_buffer_t *tio_safetensors_buffer(const tio_safetensors_t *st)
{
	return st->buf;
}

int tio_safetensors_tensor(const tio_safetensors_t *st, const char *name,
			   tio_object_t **out)
{
	int64_t i;

	for (i = 0; i < st->n; i++)
		if (!strcmp(st->e[i].name, name))
			return tio_buffer_tensor(st->buf, &st->e[i].desc, out);
	return tio_raise_errno(ENOENT, "no tensor named \"%s\"", name);
}

int tio_safetensors_save(const char *path, const char *const *names,
			 const DLTensor *const *tensors, int64_t n)
{
	json_object *root = json_object_new_object();
	uint64_t off = 0, hlen, pad;
	const char *text;
	unsigned char len8[8];
	FILE *f = NULL;
	int64_t i, d;
	size_t k;
	int ret = -1;

	if (!root)
		return tio_raise_errno(ENOMEM, "%s", path);
	for (i = 0; i < n; i++) {
		const DLTensor *t = tensors[i];
		json_object *e, *shape, *offs;
		uint64_t bytes = (t->dtype.bits / 8u) * t->dtype.lanes;

		for (k = 0; k < sizeof(st_dtypes) / sizeof(st_dtypes[0]); k++)
			if (st_dtypes[k].code == t->dtype.code &&
			    st_dtypes[k].bits == t->dtype.bits && t->dtype.lanes == 1)
				break;
		if (k == sizeof(st_dtypes) / sizeof(st_dtypes[0])) {
			tio_raise_errno(EINVAL, "%s: tensor %s: no safetensors dtype", path, names[i]);
			goto out;
		}
		if (t->strides) {
			tio_raise_errno(EINVAL, "%s: tensor %s is strided", path, names[i]);
			goto out;
		}
		e = json_object_new_object();
		shape = json_object_new_array();
		offs = json_object_new_array();
		for (d = 0; d < t->ndim; d++) {
			json_object_array_add(shape, json_object_new_int64(t->shape[d]));
			bytes *= (uint64_t)t->shape[d];
		}
		json_object_array_add(offs, json_object_new_int64((int64_t)off));
		json_object_array_add(offs, json_object_new_int64((int64_t)(off + bytes)));
		json_object_object_add(e, "dtype", json_object_new_string(st_dtypes[k].name));
		json_object_object_add(e, "shape", shape);
		json_object_object_add(e, "data_offsets", offs);
		json_object_object_add(root, names[i], e);
		off += bytes;
	}
	text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
	hlen = strlen(text);
	pad = (8 - hlen % 8) % 8;
	for (k = 0; k < 8; k++)
		len8[k] = (unsigned char)((hlen + pad) >> (8 * k));
	f = fopen(path, "wbe");
	if (!f) {
		tio_raise_file_errno(errno, "creating %s", path);
		goto out;
	}
	if (fwrite(len8, 8, 1, f) != 1 || fwrite(text, hlen, 1, f) != 1 ||
	    fprintf(f, "%*s", (int)pad, "") < 0)
		goto io_err;
	for (i = 0; i < n; i++) {
		const DLTensor *t = tensors[i];
		uint64_t bytes = (t->dtype.bits / 8u) * t->dtype.lanes;

		for (d = 0; d < t->ndim; d++)
			bytes *= (uint64_t)t->shape[d];
		if (bytes && fwrite((const char *)t->data + t->byte_offset, bytes, 1, f) != 1)
			goto io_err;
	}
	if (fclose(f)) {
		f = NULL;
		goto io_err;
	}
	f = NULL;
	ret = 0;
	goto out;
io_err:
	tio_raise_file_errno(errno ? errno : EIO, "writing %s", path);
out:
	if (f)
		fclose(f);
	json_object_put(root);
	return ret;
}
