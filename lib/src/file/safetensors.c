// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * safetensors load (into one pinned buffer, zero-copy views); saving is
 * st_save.c.
 * Format: u64 little-endian header length N, N bytes of JSON
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}, ...,
 * "__metadata__": {"key": "value", ..}}, then the data; offsets count from
 * its start.
 *
 * Policy, as the format's reference implementation: the tensors tile the
 * data exactly: the first starts at 0, each starts where the one before
 * ends, the last ends at the end of the file. Gaps, overlaps and trailing
 * bytes are refused (EINVAL, naming which). The header is strict JSON, one
 * object padded with spaces only, its names UTF-8 and unique (st_strict.c).
 *
 * Sharded checkpoints: model.safetensors.index.json names, in "weight_map",
 * the shard of every tensor; the shards are read together by the loader
 * engine, each into its own pinned buffer from the pinned cache.
 */
#include <errno.h>
#include <pthread.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tensorio/io.h>
#include <tensorio/safetensors.h>
#include <tensorio/tensor.h>

#include "file/st_internal.h"

/*
 * Every dtype of the format; the float8 kinds map to their DLPack 1.x codes
 * (F8_E4M3 is PyTorch's float8_e4m3fn). The sub-byte F4/F6 kinds are
 * packed, which a DLPack tensor of whole elements cannot describe.
 */
static const struct {
	const char *name;
	uint8_t code, bits;
} st_dtypes[] = {
	{ "F64", kDLFloat, 64 }, { "F32", kDLFloat, 32 }, { "F16", kDLFloat, 16 },
	{ "BF16", kDLBfloat, 16 }, { "I64", kDLInt, 64 }, { "I32", kDLInt, 32 },
	{ "I16", kDLInt, 16 }, { "I8", kDLInt, 8 }, { "U64", kDLUInt, 64 },
	{ "U32", kDLUInt, 32 }, { "U16", kDLUInt, 16 }, { "U8", kDLUInt, 8 },
	{ "BOOL", TIO_DTYPE_BOOL, 8 }, { "C64", TIO_DL_COMPLEX, 64 },
	{ "F8_E4M3", TIO_DL_FLOAT8_E4M3FN, 8 }, { "F8_E5M2", TIO_DL_FLOAT8_E5M2, 8 },
	{ "F8_E8M0", TIO_DL_FLOAT8_E8M0FNU, 8 },
};

/* The format's name of a dtype, or NULL (for the writer, st_save.c). */
const char *tio_st_dtype_name(uint8_t code, uint8_t bits)
{
	size_t k;

	for (k = 0; k < sizeof(st_dtypes) / sizeof(st_dtypes[0]); k++)
		if (st_dtypes[k].code == code && st_dtypes[k].bits == bits)
			return st_dtypes[k].name;
	return NULL;
}

static int st_bad(const char *path, const char *why, const char *name)
{
	return tio_raise_errno(EINVAL, "%s: malformed safetensors file: %s%s%s", path,
			       why, name ? " in entry " : "", name ? name : "");
}

static int st_cmp(const void *a, const void *b)
{
	const struct st_entry *x = a, *y = b;

	if (x->shard != y->shard)
		return x->shard < y->shard ? -1 : 1;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

static int st_entry_parse(const char *path, const char *name, json_object *v,
			  uint64_t data_len, struct st_entry *e)
{
	json_object *dt, *shape, *offs;
	char text[40];
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
		return tio_raise_errno(EINVAL, "%s: malformed safetensors file: unknown dtype "
				       "\"%s\" in entry %s (sub-byte F4/F6 kinds are not "
				       "supported)", path,
				       tio_st_name_text(d, strlen(d), text, sizeof(text)), name);
	nd = json_object_array_length(shape);
	if (nd > TIO_MAX_NDIM)
		return st_bad(path, "more than 8 dimensions", name);
	memset(&e->desc, 0, sizeof(e->desc));
	e->code = st_dtypes[k].code;
	/* The driver's check knows codes up to BOOL; an 8-bit float is checked as U8. */
	e->desc.code = e->code > TIO_DTYPE_BOOL ? kDLUInt : e->code;
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

/* The metadata map: string values only, as the format says. */
static int st_meta(const char *path, struct tio_safetensors *st, json_object *m)
{
	char text[96];
	int64_t i = 0;

	if (!json_object_is_type(m, json_type_object))
		return st_bad(path, "__metadata__ is not an object", NULL);
	st->meta = calloc(2 * (size_t)json_object_object_length(m) + 1, sizeof(char *));
	if (!st->meta)
		return tio_raise_errno(ENOMEM, "%s", path);
	{
		json_object_object_foreach(m, key, val) {
			if (!json_object_is_type(val, json_type_string))
				return st_bad(path, "a __metadata__ value is not a string", key);
			if (!tio_st_utf8(key, strlen(key)))
				return st_bad(path, "a __metadata__ key that is not UTF-8",
					      tio_st_name_text(key, strlen(key), text, sizeof(text)));
			if (!tio_st_utf8(json_object_get_string(val),
					 (size_t)json_object_get_string_len(val)))
				return st_bad(path, "a __metadata__ value that is not UTF-8", key);
			if (strlen(json_object_get_string(val)) !=
			    (size_t)json_object_get_string_len(val))
				return st_bad(path, "a __metadata__ value with a NUL byte", key);
			st->meta[i] = strdup(key);
			st->meta[i + 1] = strdup(json_object_get_string(val));
			st->nmeta++;
			if (!st->meta[i] || !st->meta[i + 1])
				return tio_raise_errno(ENOMEM, "%s", path);
			i += 2;
		}
	}
	return 0;
}

/* Entries of shard @shard sorted: they must tile its data exactly. */
static int st_tiles(const char *path, struct st_entry *e, int64_t n, uint64_t data_len)
{
	uint64_t at = 0;
	int64_t i;

	qsort(e, (size_t)n, sizeof(*e), st_cmp);
	for (i = 0; i < n; i++) {
		if (e[i].begin < at)
			return st_bad(path, "overlapping data_offsets", e[i].name);
		if (e[i].begin > at)
			return tio_raise_errno(EINVAL, "%s: malformed safetensors file: a gap before "
					       "the data of entry %s", path, e[i].name);
		at = e[i].end;
	}
	if (at != data_len)
		return tio_raise_errno(EINVAL, "%s: malformed safetensors file: %llu trailing "
				       "bytes after the last tensor", path,
				       (unsigned long long)(data_len - at));
	return 0;
}

static int st_parse(const char *path, struct tio_safetensors *st, int shard,
		    const char *json, uint64_t hlen, uint64_t data_start, uint64_t data_len)
{
	struct json_tokener *tok = json_tokener_new();
	json_object *root = NULL;
	int64_t first = st->n, need;
	int ret = -1;

	if (!tok)
		return tio_raise_errno(ENOMEM, "%s", path);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);	/* JSON, as the format says */
	root = json_tokener_parse_ex(tok, json, (int)hlen);
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    !json_object_is_type(root, json_type_object)) {
		tio_st_not_json(path, json, hlen);
		goto out;
	}
	if (tio_st_strict(path, json, hlen, json_tokener_get_parse_end(tok),
			  (size_t)json_object_object_length(root)))
		goto out;
	need = st->n + json_object_object_length(root) + 1;
	if (need > st->cap) {
		struct st_entry *ne = realloc(st->e, (size_t)need * sizeof(*ne));

		if (!ne) {
			tio_raise_errno(ENOMEM, "%s", path);
			goto out;
		}
		st->e = ne;
		st->cap = need;
	}
	{
		json_object_object_foreach(root, key, val) {
			struct st_entry *e = &st->e[st->n];

			if (!strcmp(key, "__metadata__")) {
				if (!st->meta && st_meta(path, st, val))
					goto out;
				continue;
			}
			memset(e, 0, sizeof(*e));
			if (st_entry_parse(path, key, val, data_len, e))
				goto out;
			e->desc.byte_offset = data_start + e->begin;
			e->shard = shard;
			st->n++;
		}
	}
	ret = st_tiles(path, st->e + first, st->n - first, data_len);
out:
	json_object_put(root);
	json_tokener_free(tok);
	return ret;
}

/* Read and check one file's header (its buffered fd stays open). */
int tio_st_header(struct tio_safetensors *st, int shard)
{
	struct st_shard *s = &st->sh[shard];
	const char *path = s->path;
	unsigned char len8[8];
	uint64_t hlen = 0;
	struct stat sb;
	char *json;
	int i, ret;

	if (tio_load_open(path, 0, 0, TIO_IO_NO_DIRECT, &s->it))
		return -1;
	if (fstat(s->it.fd, &sb) < 0)
		return tio_raise_file_errno(errno, "%s", path);
	s->size = (uint64_t)sb.st_size;
	if (s->size < 8 || pread(s->it.fd, len8, 8, 0) != 8)
		return st_bad(path, "shorter than its 8-byte header length", NULL);
	for (i = 7; i >= 0; i--)
		hlen = hlen << 8 | len8[i];
	if (hlen > TIO_SAFETENSORS_MAX_HEADER)
		return tio_raise_errno(E2BIG, "%s: safetensors header of %llu bytes (limit %u)",
				       path, (unsigned long long)hlen, TIO_SAFETENSORS_MAX_HEADER);
	if (hlen > s->size - 8)
		return st_bad(path, "truncated header", NULL);
	json = malloc(hlen + 1);
	if (!json)
		return tio_raise_errno(ENOMEM, "%s", path);
	if (pread(s->it.fd, json, hlen, 8) != (ssize_t)hlen) {
		free(json);
		return tio_raise_errno(EIO, "reading the header of %s", path);
	}
	json[hlen] = 0;
	s->data_start = 8 + hlen;
	ret = st_parse(path, st, shard, json, hlen, 8 + hlen, s->size - 8 - hlen);
	free(json);
	return ret ? -1 : 0;
}

/* Read and check one file's header; set up its read into pinned memory. */
static int st_open_shard(struct tio_safetensors *st, int shard, unsigned int flags)
{
	struct st_shard *s = &st->sh[shard];

	if (tio_st_header(st, shard))
		return -1;
	/* The whole file, header included, into one pinned buffer. */
	tio_load_close(&s->it);
	if (tio_load_open(s->path, 0, s->size, flags, &s->it) ||
	    tio_pinned_get(s->size, &s->mem))
		return -1;
	s->it.mem = s->mem.addr;
	s->it.slack = s->mem.size - s->size;
	s->it.lazy = s->mem.lazy;
	return 0;
}

static char *st_join(const char *index, const char *name)
{
	const char *slash = strrchr(index, '/');
	int dir = slash ? (int)(slash - index) + 1 : 0;
	char *p;

	if (strchr(name, '/') || !strcmp(name, "..") || !*name)
		return NULL;	/* shards live next to the index */
	if (asprintf(&p, "%.*s%s", dir, index, name) < 0)
		return NULL;
	return p;
}

/* model.safetensors.index.json: the shards, and the map checked later. */
int tio_st_index(const char *path, struct tio_safetensors *st, json_object **map)
{
	json_object *root = json_object_from_file(path), *meta, *wm;
	int i, ret = -1;

	if (!root) {
		if (access(path, R_OK))
			return tio_raise_file_errno(errno, "opening %s", path);
		return tio_raise_errno(EINVAL, "%s: not a JSON file", path);
	}
	if (!json_object_object_get_ex(root, "weight_map", &wm) ||
	    !json_object_is_type(wm, json_type_object) || !json_object_object_length(wm)) {
		tio_raise_errno(EINVAL, "%s: safetensors index without a weight_map", path);
		goto out;
	}
	if (json_object_object_get_ex(root, "metadata", &meta) &&
	    json_object_is_type(meta, json_type_object)) {
		/* Index metadata is free-form (total_size is a number): keep strings. */
		json_object *m = json_object_new_object();

		if (!m) {
			tio_raise_errno(ENOMEM, "%s", path);
			goto out;
		}
		{
			json_object_object_foreach(meta, k, v)
				json_object_object_add(m, k, json_object_new_string(
					json_object_get_string(v)));
		}
		i = st_meta(path, st, m);
		json_object_put(m);
		if (i)
			goto out;
	}
	st->sh = calloc((size_t)json_object_object_length(wm), sizeof(*st->sh));
	if (!st->sh) {
		tio_raise_errno(ENOMEM, "%s", path);
		goto out;
	}
	{
		json_object_object_foreach(wm, name, file) {
			const char *f = json_object_get_string(file);

			if (!json_object_is_type(file, json_type_string)) {
				tio_raise_errno(EINVAL, "%s: tensor %s: the shard is not a "
						"file name", path, name);
				goto out;
			}
			for (i = 0; i < st->nsh; i++)
				if (!strcmp(strrchr(st->sh[i].path, '/') ?
					    strrchr(st->sh[i].path, '/') + 1 : st->sh[i].path, f))
					break;
			if (i < st->nsh)
				continue;
			st->sh[st->nsh].path = st_join(path, f);
			if (!st->sh[st->nsh].path) {
				tio_raise_errno(EINVAL, "%s: tensor %s: shard \"%s\" is not a "
						"file next to the index", path, name, f);
				goto out;
			}
			st->sh[st->nsh].it.fd = st->sh[st->nsh].it.dfd = -1;
			st->nsh++;
		}
	}
	*map = json_object_get(wm);
	ret = 0;
out:
	json_object_put(root);
	return ret;
}

/* Every tensor found where the index says, once, and nothing else. */
int tio_st_check_map(const char *path, struct tio_safetensors *st, json_object *map)
{
	json_object *f;
	int64_t i;

	for (i = 0; i < st->n; i++) {
		const char *shard = st->sh[st->e[i].shard].path;
		const char *base = strrchr(shard, '/') ? strrchr(shard, '/') + 1 : shard;

		if (!json_object_object_get_ex(map, st->e[i].name, &f))
			return tio_raise_errno(EINVAL, "%s: tensor %s of %s is not in the "
					       "weight_map", path, st->e[i].name, shard);
		if (strcmp(json_object_get_string(f), base))
			return tio_raise_errno(EINVAL, "%s: tensor %s is in %s, the weight_map "
					       "says %s", path, st->e[i].name, shard,
					       json_object_get_string(f));
	}
	for (i = 1; i < st->n; i++) {
		int64_t j;

		for (j = 0; j < i; j++)
			if (!strcmp(st->e[i].name, st->e[j].name))
				return tio_raise_errno(EINVAL, "%s: tensor %s is in two shards, "
						       "%s and %s", path, st->e[i].name,
						       st->sh[st->e[j].shard].path,
						       st->sh[st->e[i].shard].path);
	}
	if (json_object_object_length(map) != st->n) {
		json_object_object_foreach(map, name, file) {
			for (i = 0; i < st->n; i++)
				if (!strcmp(st->e[i].name, name))
					break;
			if (i == st->n)
				return tio_raise_errno(EINVAL, "%s: tensor %s is not in its shard %s",
						       path, name, json_object_get_string(file));
		}
	}
	return 0;
}

int tio_st_is_index(const char *path)
{
	size_t n = strlen(path);

	return n >= 5 && !strcmp(path + n - 5, ".json");
}

int tio_st_shards(const char *path, struct tio_safetensors *st, json_object **map)
{
	*map = NULL;
	if (tio_st_is_index(path))
		return tio_st_index(path, st, map);
	st->sh = calloc(1, sizeof(*st->sh));
	if (!st->sh || !(st->sh[0].path = strdup(path)))
		return tio_raise_errno(ENOMEM, "%s", path);
	st->sh[0].it.fd = st->sh[0].it.dfd = -1;
	st->nsh = 1;
	return 0;
}

int tio_safetensors_load_ex(const char *path, struct tio_io_opts *opts,
			    tio_safetensors_t **out)
{
	unsigned int flags = opts ? opts->flags : 0;
	struct tio_load_item *items = NULL;
	struct tio_safetensors *st;
	json_object *map = NULL;
	int i;

	if (!path || !out)
		return tio_raise_errno(EINVAL, "tio_safetensors_load: NULL path or out");
	st = calloc(1, sizeof(*st));
	if (!st)
		return tio_raise_errno(ENOMEM, "%s", path);
	if (tio_st_shards(path, st, &map))
		goto err;
	for (i = 0; i < st->nsh; i++)
		if (st_open_shard(st, i, flags))
			goto err;
	if (map && tio_st_check_map(path, st, map))
		goto err;
	items = calloc((size_t)(unsigned int)st->nsh, sizeof(*items));
	if (!items) {
		tio_raise_errno(ENOMEM, "%s", path);
		goto err;
	}
	for (i = 0; i < st->nsh; i++)
		items[i] = st->sh[i].it;
	if (tio_load_run(items, st->nsh, opts))
		goto err;
	for (i = 0; i < st->nsh; i++) {
		tio_load_close(&st->sh[i].it);
		if (tio_pinned_finish(&st->sh[i].mem))
			goto err;
	}
	free(items);
	json_object_put(map);
	*out = st;
	tio_set_errno(0);
	return 0;
err:
	free(items);
	json_object_put(map);
	tio_safetensors_free(st);
	return -1;
}

int tio_safetensors_load(const char *path, tio_safetensors_t **out)
{
	return tio_safetensors_load_ex(path, NULL, out);
}

void tio_safetensors_free(tio_safetensors_t *st)
{
	int64_t i;

	if (!st)
		return;
	for (i = 0; i < st->n; i++) {
		free(st->e[i].name);
		if (st->dev)
			tio_object_decref(st->dev[i]);
	}
	free(st->dev);
	free(st->e);
	for (i = 0; i < 2 * st->nmeta; i++)
		free(st->meta[i]);
	free(st->meta);
	for (i = 0; st->sh && i < st->nsh; i++) {
		tio_load_close(&st->sh[i].it);
		tio_pinned_abort(&st->sh[i].mem);
		free(st->sh[i].path);
	}
	free(st->sh);
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
	return st->sh ? st->sh[0].mem.buf : NULL;
}

int tio_safetensors_shards(const tio_safetensors_t *st)
{
	return st->nsh;
}

const char *tio_safetensors_metadata(const tio_safetensors_t *st, const char *key)
{
	int64_t i;

	for (i = 0; key && i < st->nmeta; i++)
		if (!strcmp(st->meta[2 * i], key))
			return st->meta[2 * i + 1];
	return NULL;
}

const char *tio_safetensors_metadata_key(const tio_safetensors_t *st, int64_t i)
{
	return i >= 0 && i < st->nmeta ? st->meta[2 * i] : NULL;
}

int tio_safetensors_tensor(const tio_safetensors_t *st, const char *name,
			   tio_object_t **out)
{
	DLManagedTensorVersioned *mt;
	int64_t i;

	for (i = 0; i < st->n; i++) {
		if (strcmp(st->e[i].name, name))
			continue;
		if (st->dev) {
			tio_object_incref(st->dev[i]);
			*out = st->dev[i];
			return 0;
		}
		if (tio_buffer_to_dlpack(st->sh[st->e[i].shard].mem.buf, &st->e[i].desc, &mt))
			return -1;
		mt->dl_tensor.dtype.code = st->e[i].code;
		if (tio_tensor_from_dlpack_versioned(mt, 0, 0, out)) {
			mt->deleter(mt);
			return -1;
		}
		return 0;
	}
	return tio_raise_errno(ENOENT, "no tensor named \"%s\"", name);
}
