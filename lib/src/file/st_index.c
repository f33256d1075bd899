// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The index of a sharded checkpoint: its text (for a sharded save,
 * st_save.c) and tio_safetensors_write_index(), which writes it from the
 * shards' headers, for saves split among processes: each writes its own
 * shards, one then writes the index that names them all. The metadata
 * map the writer checks (UTF-8, as the parser's st_strict.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include <tensorio/error.h>

#include "file/save_internal.h"
#include "file/st_internal.h"

/* Whether @a and @b are in the same directory. */
static int ix_same_dir(const char *a, const char *b)
{
	const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');
	struct stat x, y;
	char *da, *db;
	int same;

	if (asprintf(&da, "%.*s", sa ? (int)(sa - a) + 1 : 1, sa ? a : ".") < 0)
		return -1;
	if (asprintf(&db, "%.*s", sb ? (int)(sb - b) + 1 : 1, sb ? b : ".") < 0) {
		free(da);
		return -1;
	}
	same = !stat(da, &x) && !stat(db, &y) && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
	free(da);
	free(db);
	return same;
}

/* A metadata map of @nmeta string pairs, checked (NULL, UTF-8). */
json_object *sv_meta_json(const char *path, const char *const *meta, int64_t nmeta)
{
	json_object *m = json_object_new_object();
	int64_t i;

	if (!m) {
		tio_raise_errno(ENOMEM, "%s", path);
		return NULL;
	}
	for (i = 0; i < nmeta; i++) {
		const char *k = meta[2 * i], *v = meta[2 * i + 1];

		if (!k || !v || !tio_st_utf8(k, strlen(k)) || !tio_st_utf8(v, strlen(v))) {
			tio_raise_errno(EINVAL, "%s: metadata entry %lld is NULL or not UTF-8",
					path, (long long)i);
			json_object_put(m);
			return NULL;
		}
		json_object_object_add(m, k, json_object_new_string(v));
	}
	return m;
}

static int ix_by_name(const void *a, const void *b)
{
	return strcmp(((const struct sv_ix *)a)->name, ((const struct sv_ix *)b)->name);
}

static const char *ix_base(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/*
 * The index as transformers writes it: {"metadata": {"total_size": the
 * tensors' bytes, ...}, "weight_map": {tensor: shard file}}, names sorted,
 * two-space indents. A name in two shards is refused.
 */
char *sv_index_text(const char *path, struct sv_ix *ix, int64_t n, const char *const *meta,
		    int64_t nmeta)
{
	json_object *root = json_object_new_object(), *m = sv_meta_json(path, meta, nmeta);
	json_object *wm = json_object_new_object();
	uint64_t total = 0;
	char *text = NULL;
	int64_t i;

	qsort(ix, (size_t)n, sizeof(*ix), ix_by_name);
	for (i = 0; root && m && wm && i < n; i++) {
		if (i && !strcmp(ix[i - 1].name, ix[i].name)) {
			tio_raise_errno(EINVAL, "%s: tensor %s is in two shards, %s and %s", path,
					ix[i].name, ix[i - 1].file, ix[i].file);
			goto out;
		}
		total += ix[i].bytes;
		json_object_object_add(wm, ix[i].name, json_object_new_string(ix_base(ix[i].file)));
	}
	if (root && m && wm) {
		json_object_object_add(m, "total_size", json_object_new_uint64(total));
		json_object_object_add(root, "metadata", m);
		json_object_object_add(root, "weight_map", wm);
		m = wm = NULL;
		if (asprintf(&text, "%s\n", json_object_to_json_string_ext(root,
				JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
				JSON_C_TO_STRING_NOSLASHESCAPE)) < 0)
			text = NULL;
	}
	if (!text && !tio_error_peek_raised())
		tio_raise_errno(ENOMEM, "%s", path);
out:
	json_object_put(m);
	json_object_put(wm);
	json_object_put(root);
	return text;
}

int tio_safetensors_write_index(const char *path, const char *const *shards, int64_t n,
				const char *const *meta, int64_t nmeta)
{
	struct tio_safetensors *st;
	struct sv_ix *ix = NULL;
	char *text = NULL;
	int64_t i;
	int ret = -1;

	if (!path || n < 1 || !shards || nmeta < 0 || (nmeta && !meta))
		return tio_raise_errno(EINVAL, "tio_safetensors_write_index: NULL or no shards");
	st = calloc(1, sizeof(*st));
	if (st)
		st->sh = calloc((size_t)n, sizeof(*st->sh));
	if (!st || !st->sh) {
		free(st);
		return tio_raise_errno(ENOMEM, "%s", path);
	}
	for (i = 0; i < n; i++) {
		st->sh[i].it.fd = st->sh[i].it.dfd = -1;
		st->sh[i].path = shards[i] ? strdup(shards[i]) : NULL;
		st->nsh++;
		if (!shards[i] || !st->sh[i].path) {
			tio_raise_errno(shards[i] ? ENOMEM : EINVAL, "%s: shard %lld", path,
					(long long)i);
			goto out;
		}
		if (ix_same_dir(path, shards[i]) != 1) {
			tio_raise_errno(EINVAL, "%s: shard %s is not in the index's directory",
					path, shards[i]);
			goto out;
		}
		if (tio_st_header(st, (int)i))
			goto out;
	}
	ix = calloc((size_t)st->n + 1, sizeof(*ix));
	if (!ix) {
		tio_raise_errno(ENOMEM, "%s", path);
		goto out;
	}
	for (i = 0; i < st->n; i++)
		ix[i] = (struct sv_ix){ st->e[i].name, st->sh[st->e[i].shard].path,
				       st->e[i].end - st->e[i].begin };
	text = sv_index_text(path, ix, st->n, meta, nmeta);
	if (text && !sv_write_text(path, text, strlen(text)))
		ret = 0;
out:
	free(ix);
	free(text);
	tio_safetensors_free(st);
	if (!ret)
		tio_set_errno(0);
	return ret;
}
