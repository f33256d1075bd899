// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Map: Any keys to Any values. Entries live in a dense array in insertion
 * order (erased ones become holes, compacted on growth); an open-addressing
 * index of int32 positions finds them by hash.
 */
#include "ffi/ffi_internal.h"

struct map_entry {
	tio_any_t key;
	tio_any_t value;
	uint64_t hash;
	int live;
};

struct map_obj {
	tio_object_t header;
	struct map_entry *entries;
	int64_t nentries, cap_entries;	/* nentries includes holes */
	int64_t size;
	int32_t *index;			/* entry position + 1; 0 empty, -1 deleted */
	int64_t nindex;			/* power of two */
};

#define IDX_DELETED (-1)

static void map_deleter(void *self, int flags)
{
	struct map_obj *m = self;
	int64_t i;

	if (flags & TIO_DELETER_STRONG) {
		for (i = 0; i < m->nentries; i++) {
			if (!m->entries[i].live)
				continue;
			tio_any_decref(&m->entries[i].key);
			tio_any_decref(&m->entries[i].value);
		}
		free(m->entries);
		free(m->index);
		m->entries = NULL;
		m->index = NULL;
	}
	if (flags & TIO_DELETER_WEAK)
		tio__obj_free(m);
}

static struct map_obj *as_map(const tio_object_t *o)
{
	tio_any_t a;

	if (o && o->type_index == TIO_TYPE_MAP)
		return (struct map_obj *)o;
	a = tio_any_object((tio_object_t *)o);
	tio_any_type_error(&a, "ffi.Map");
	return NULL;
}

int tio_map_new(tio_object_t **out)
{
	struct map_obj *m;

	if (!out)
		return tio_error_raise("ValueError", "NULL output");
	m = tio__obj_new(sizeof(*m), TIO_TYPE_MAP, map_deleter);
	if (!m)
		return tio__oom();
	m->entries = NULL;
	m->nentries = m->cap_entries = m->size = 0;
	m->index = NULL;
	m->nindex = 0;
	*out = &m->header;
	return 0;
}

int64_t tio_map_size(const tio_object_t *map)
{
	const struct map_obj *m = as_map(map);

	return m ? m->size : -1;
}

/* The index slot of @key, or -1 (and *insert_at the first free slot). */
static int64_t lookup(const struct map_obj *m, const tio_any_t *key, uint64_t hash,
		      int64_t *insert_at)
{
	int64_t i, first_free = -1;
	int32_t v;

	if (!m->nindex) {
		if (insert_at)
			*insert_at = -1;
		return -1;
	}
	for (i = (int64_t)(hash & (uint64_t)(m->nindex - 1));;
	     i = (i + 1) & (m->nindex - 1)) {
		v = m->index[i];
		if (v == 0) {
			if (insert_at)
				*insert_at = first_free >= 0 ? first_free : i;
			return -1;
		}
		if (v == IDX_DELETED) {
			if (first_free < 0)
				first_free = i;
			continue;
		}
		if (m->entries[v - 1].hash == hash && tio_any_equal(&m->entries[v - 1].key, key))
			return i;
	}
}

/* Rebuild: compact the entries, size the index for @want entries. */
static int rebuild(struct map_obj *m, int64_t want)
{
	int64_t nidx = 8, cap = 4, i, j, n = 0;
	struct map_entry *e;
	int32_t *idx;

	while (nidx < want * 2)
		nidx *= 2;
	while (cap < want)
		cap *= 2;
	if (nidx > INT32_MAX)
		return tio_error_raise("ValueError", "map too large");
	e = malloc(sizeof(*e) * (size_t)cap);
	idx = calloc((size_t)nidx, sizeof(*idx));
	if (!e || !idx) {
		free(e);
		free(idx);
		return tio__oom();
	}
	for (i = 0; i < m->nentries; i++) {
		if (!m->entries[i].live)
			continue;
		e[n] = m->entries[i];
		for (j = (int64_t)(e[n].hash & (uint64_t)(nidx - 1)); idx[j];
		     j = (j + 1) & (nidx - 1))
			;
		idx[j] = (int32_t)(n + 1);
		n++;
	}
	free(m->entries);
	free(m->index);
	m->entries = e;
	m->cap_entries = cap;
	m->nentries = n;
	m->index = idx;
	m->nindex = nidx;
	return 0;
}

int tio_map_set(tio_object_t *map, const tio_any_t *key, const tio_any_t *value)
{
	struct map_obj *m = as_map(map);
	uint64_t hash;
	int64_t slot, at;
	tio_any_t k, v;

	if (!m)
		return -1;
	hash = tio_any_hash(key);
	slot = lookup(m, key, hash, NULL);
	if (slot >= 0) {
		struct map_entry *e = &m->entries[m->index[slot] - 1];

		if (tio_any_copy(&v, value))
			return -1;
		tio_any_decref(&e->value);
		e->value = v;
		return 0;
	}
	if (m->nentries == m->cap_entries || (m->nentries + 1) * 2 > m->nindex) {
		if (rebuild(m, m->size + 1 > m->size * 2 ? m->size + 1 : m->size * 2))
			return -1;
	}
	if (tio_any_copy(&k, key))
		return -1;
	if (tio_any_copy(&v, value)) {
		tio_any_decref(&k);
		return -1;
	}
	lookup(m, key, hash, &at);
	m->entries[m->nentries] = (struct map_entry){ k, v, hash, 1 };
	m->index[at] = (int32_t)(m->nentries + 1);
	m->nentries++;
	m->size++;
	return 0;
}

/* The slot of @key, or -1 with KeyError raised (get and erase). */
static int64_t lookup_or_raise(const struct map_obj *m, const tio_any_t *key)
{
	int64_t slot = lookup(m, key, tio_any_hash(key), NULL);

	if (slot < 0)
		tio_error_raise("KeyError", "key of type %s not in map",
				tio_any_type_name(key));
	return slot;
}

int tio_map_get(tio_object_t *map, const tio_any_t *key, tio_any_t *out)
{
	struct map_obj *m = as_map(map);
	int64_t slot;

	*out = tio_any_none();
	if (!m)
		return -1;
	slot = lookup_or_raise(m, key);
	if (slot < 0)
		return -1;
	return tio_any_copy(out, &m->entries[m->index[slot] - 1].value);
}

int tio_map_contains(const tio_object_t *map, const tio_any_t *key)
{
	const struct map_obj *m = as_map(map);

	return m && lookup(m, key, tio_any_hash(key), NULL) >= 0;
}

int tio_map_erase(tio_object_t *map, const tio_any_t *key)
{
	struct map_obj *m = as_map(map);
	struct map_entry *e;
	int64_t slot;

	if (!m)
		return -1;
	slot = lookup_or_raise(m, key);
	if (slot < 0)
		return -1;
	e = &m->entries[m->index[slot] - 1];
	m->index[slot] = IDX_DELETED;
	e->live = 0;
	m->size--;
	tio_any_decref(&e->key);
	tio_any_decref(&e->value);
	return 0;
}

int tio_map_next(const tio_object_t *map, int64_t *pos, const tio_any_t **key,
		 const tio_any_t **value)
{
	const struct map_obj *m = as_map(map);

	if (!m)
		return 0;
	while (*pos >= 0 && *pos < m->nentries) {
		const struct map_entry *e = &m->entries[(*pos)++];

		if (!e->live)
			continue;
		if (key)
			*key = &e->key;
		if (value)
			*value = &e->value;
		return 1;
	}
	return 0;
}
