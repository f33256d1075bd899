// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The type registry: type keys to indices, indices to infos, ancestors.
 *
 * Infos live in a fixed table indexed by type index, published with
 * release stores and read without a lock. Registration, the key index and
 * metadata are under type_lock. Nothing here is freed while the process
 * runs: replaced arrays go on a retired list so that a reader that loaded
 * the old pointer can still use it.
 */
#include <stdio.h>

#include "ffi/type_internal.h"

pthread_mutex_t type_lock = PTHREAD_MUTEX_INITIALIZER;

static struct type_entry *table[TIO_TYPE_TABLE_SIZE];
static int32_t next_dyn_index = TIO_TYPE_DYN_OBJECT_BEGIN;	/* under type_lock */

/* Open-addressing key index: slots hold type indices + 1 (0 = empty). */
#define KEY_SLOTS (2 * TIO_TYPE_TABLE_SIZE)
static int32_t key_slots[KEY_SLOTS];				/* under type_lock */

struct retired {
	struct retired *next;
	void *p;
};
static struct retired *retired_list;				/* under type_lock */

void tio__type_retire(void *p)
{
	struct retired *r = malloc(sizeof(*r));

	if (!r)
		return;		/* still reachable by nothing: a small leak, never a fault */
	r->p = p;
	r->next = retired_list;
	retired_list = r;
}

struct type_entry *tio__type_entry(int32_t index)
{
	if (index < 0 || index >= TIO_TYPE_TABLE_SIZE)
		return NULL;
	return __atomic_load_n(&table[index], __ATOMIC_ACQUIRE);
}

const tio_type_info_t *tio_type_info(int32_t type_index)
{
	struct type_entry *e = tio__type_entry(type_index);

	return e ? &e->info : NULL;
}

int tio_type_is_subtype(int32_t type_index, int32_t base_index)
{
	struct type_entry *t, *b;

	if (type_index == base_index)
		return 1;
	t = tio__type_entry(type_index);
	b = tio__type_entry(base_index);
	if (!t || !b)
		return 0;
	return b->info.type_depth < t->info.type_depth &&
	       t->info.ancestors[b->info.type_depth] == base_index;
}

/* Under type_lock. Return: the slot for @key (holding it, or empty). */
static int32_t *key_slot(const char *key)
{
	size_t i = tio__hash_bytes(key, strlen(key)) & (KEY_SLOTS - 1);
	struct type_entry *e;

	for (;; i = (i + 1) & (KEY_SLOTS - 1)) {
		if (!key_slots[i])
			return &key_slots[i];
		e = table[key_slots[i] - 1];
		if (!strcmp(e->info.type_key, key))
			return &key_slots[i];
	}
}

/* Under type_lock. */
static int add_type(const char *key, int32_t index, struct type_entry *parent)
{
	int32_t depth = parent ? parent->info.type_depth + 1 : 0;
	struct type_entry *e;
	int32_t *anc = NULL;
	char *k;

	e = calloc(1, sizeof(*e));
	k = strdup(key);
	if (depth)
		anc = malloc(sizeof(*anc) * (size_t)depth);
	if (!e || !k || (depth && !anc)) {
		free(e);
		free(k);
		free(anc);
		return tio__oom();
	}
	if (depth) {
		if (depth > 1)
			memcpy(anc, parent->info.ancestors, sizeof(*anc) * (size_t)(depth - 1));
		anc[depth - 1] = parent->info.type_index;
	}
	e->info.struct_size = sizeof(e->info);
	e->info.type_index = index;
	e->info.type_depth = depth;
	e->info.parent_index = parent ? parent->info.type_index : -1;
	e->info.type_key = k;
	e->info.ancestors = anc;
	*key_slot(k) = index + 1;
	__atomic_store_n(&table[index], e, __ATOMIC_RELEASE);
	return 0;
}

/* The entry of @index if it can be a parent (an object type), else NULL and raised. */
static struct type_entry *object_parent(int32_t index)
{
	struct type_entry *e = tio__type_entry(index);

	if (!e)
		tio_error_raise("ValueError", "parent type index %d is not registered", index);
	else if (index < TIO_TYPE_STATIC_OBJECT_BEGIN)
		tio_error_raise("ValueError", "parent type '%s' (%d) is not an object type",
				e->info.type_key, index);
	else
		return e;
	return NULL;
}

int tio_type_register(const char *type_key, int32_t parent_index, int32_t *out_index)
{
	struct type_entry *parent, *e;
	int32_t *slot;
	int ret = 0;

	if (!type_key || !*type_key || !out_index)
		return tio_error_raise("ValueError", "type key and output must be given");
	pthread_mutex_lock(&type_lock);
	parent = object_parent(parent_index);
	if (!parent) {
		ret = -1;
		goto out;
	}
	slot = key_slot(type_key);
	if (*slot) {
		e = table[*slot - 1];
		if (e->info.parent_index != parent_index)
			ret = tio_error_raise("ValueError",
					      "type '%s' is already registered with parent %d, not %d",
					      type_key, e->info.parent_index, parent_index);
		else
			*out_index = e->info.type_index;
		goto out;
	}
	if (next_dyn_index >= TIO_TYPE_TABLE_SIZE) {
		ret = tio_error_raise("ValueError", "type table full (%d types)",
				      TIO_TYPE_TABLE_SIZE);
		goto out;
	}
	ret = add_type(type_key, next_dyn_index, parent);
	if (!ret)
		*out_index = next_dyn_index++;
out:
	pthread_mutex_unlock(&type_lock);
	return ret;
}

int tio_type_register_static(const char *type_key, int32_t parent_index, int32_t type_index,
			     int32_t *out_index)
{
	struct type_entry *parent, *e;
	int32_t *slot;
	int ret = 0;

	if (!type_key || !*type_key || !out_index)
		return tio_error_raise("ValueError", "type key and output must be given");
	if (type_index < TIO_TYPE_STATIC_OBJECT_BEGIN || type_index >= TIO_TYPE_DYN_OBJECT_BEGIN)
		return tio_error_raise("ValueError",
				       "static type index %d is outside [%d, %d)", type_index,
				       TIO_TYPE_STATIC_OBJECT_BEGIN, TIO_TYPE_DYN_OBJECT_BEGIN);
	pthread_mutex_lock(&type_lock);
	parent = object_parent(parent_index);
	slot = key_slot(type_key);
	e = table[type_index];
	if (!parent)
		ret = -1;
	else if (*slot && (*slot - 1 != type_index || e->info.parent_index != parent_index))
		ret = tio_error_raise("ValueError",
				      "type '%s' is already registered at %d with parent %d",
				      type_key, *slot - 1, table[*slot - 1]->info.parent_index);
	else if (!*slot && e)
		ret = tio_error_raise("ValueError", "type index %d is taken by '%s'", type_index,
				      e->info.type_key);
	else if (!*slot)
		ret = add_type(type_key, type_index, parent);
	if (!ret)
		*out_index = type_index;
	pthread_mutex_unlock(&type_lock);
	return ret;
}

int tio_type_key_to_index(const char *type_key, int32_t *out_index)
{
	int32_t v;

	if (!type_key)
		return tio_error_raise("ValueError", "NULL type key");
	pthread_mutex_lock(&type_lock);
	v = *key_slot(type_key);
	pthread_mutex_unlock(&type_lock);
	if (!v)
		return tio_error_raise("KeyError", "no type '%s'", type_key);
	*out_index = v - 1;
	return 0;
}

int tio_type_set_doc(int32_t type_index, const char *doc)
{
	struct type_entry *e = tio__type_entry(type_index);
	char *d;

	if (!e)
		return tio_error_raise("ValueError", "type index %d is not registered", type_index);
	d = strdup(doc ? doc : "");
	if (!d)
		return tio__oom();
	pthread_mutex_lock(&type_lock);
	if (e->info.doc)
		tio__type_retire((void *)e->info.doc);
	__atomic_store_n(&e->info.doc, d, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&type_lock);
	return 0;
}

int tio_type_set_metadata(int32_t type_index, const char *key, const tio_any_t *value)
{
	struct type_entry *e = tio__type_entry(type_index);
	struct type_meta *m;
	tio_any_t v, old;
	int32_t i;
	char *k;

	if (!e)
		return tio_error_raise("ValueError", "type index %d is not registered", type_index);
	if (!key || !value)
		return tio_error_raise("ValueError", "metadata key and value must be given");
	if (tio_any_copy(&v, value))
		return -1;
	pthread_mutex_lock(&type_lock);
	for (i = 0; i < e->num_meta; i++) {
		if (!strcmp(e->meta[i].key, key)) {
			old = e->meta[i].value;
			e->meta[i].value = v;
			pthread_mutex_unlock(&type_lock);
			tio_any_decref(&old);
			return 0;
		}
	}
	k = strdup(key);
	if (!k)
		goto oom;
	if (e->num_meta == e->cap_meta) {
		int32_t cap = e->cap_meta ? 2 * e->cap_meta : 4;

		m = realloc(e->meta, sizeof(*m) * (size_t)cap);
		if (!m)
			goto oom;
		e->meta = m;
		e->cap_meta = cap;
	}
	e->meta[e->num_meta].key = k;
	e->meta[e->num_meta].value = v;
	e->num_meta++;
	pthread_mutex_unlock(&type_lock);
	return 0;
oom:
	pthread_mutex_unlock(&type_lock);
	free(k);
	tio_any_decref(&v);
	return tio__oom();
}

int tio_type_get_metadata(int32_t type_index, const char *key, tio_any_t *out)
{
	struct type_entry *e = tio__type_entry(type_index);
	int32_t i;
	int ret;

	*out = tio_any_none();
	if (!e)
		return tio_error_raise("ValueError", "type index %d is not registered", type_index);
	if (!key)
		return tio_error_raise("ValueError", "NULL metadata key");
	pthread_mutex_lock(&type_lock);
	for (i = 0; i < e->num_meta; i++) {
		if (!strcmp(e->meta[i].key, key)) {
			ret = tio_any_copy(out, &e->meta[i].value);
			pthread_mutex_unlock(&type_lock);
			return ret;
		}
	}
	pthread_mutex_unlock(&type_lock);
	return tio_error_raise("KeyError", "type '%s' has no metadata '%s'",
			       e->info.type_key, key);
}

struct static_type {
	int32_t index;
	const char *key;
};

/* The values an Any holds in place: roots, no parent, TVM FFI's keys. */
static const struct static_type pod_types[] = {
	{ TIO_TYPE_NONE, "None" },
	{ TIO_TYPE_INT, "int" },
	{ TIO_TYPE_BOOL, "bool" },
	{ TIO_TYPE_FLOAT, "float" },
	{ TIO_TYPE_OPAQUE_PTR, "void*" },
	{ TIO_TYPE_DATA_TYPE, "DataType" },
	{ TIO_TYPE_DEVICE, "Device" },
	{ TIO_TYPE_DLTENSOR_PTR, "DLTensor*" },
	{ TIO_TYPE_RAW_STR, "const char*" },
	{ TIO_TYPE_BYTE_ARRAY_PTR, "TVMFFIByteArray*" },
	{ TIO_TYPE_OBJECT_RVALUE_REF, "ObjectRValueRef" },
	{ TIO_TYPE_SMALL_STR, "ffi.SmallStr" },
	{ TIO_TYPE_SMALL_BYTES, "ffi.SmallBytes" },
};

static const struct static_type static_types[] = {
	{ TIO_TYPE_STR, "ffi.String" },
	{ TIO_TYPE_BYTES, "ffi.Bytes" },
	{ TIO_TYPE_ERROR, "ffi.Error" },
	{ TIO_TYPE_FUNCTION, "ffi.Function" },
	{ TIO_TYPE_SHAPE, "ffi.Shape" },
	{ TIO_TYPE_TENSOR, "ffi.Tensor" },
	{ TIO_TYPE_ARRAY, "ffi.Array" },
	{ TIO_TYPE_MAP, "ffi.Map" },
	{ TIO_TYPE_MODULE, "ffi.Module" },
	{ TIO_TYPE_OPAQUE_PY_OBJECT, "ffi.OpaquePyObject" },
	{ TIO_TYPE_LIST, "ffi.List" },
	{ TIO_TYPE_DICT, "ffi.Dict" },
	{ TIO_TYPE_VISIT_INTERRUPT, "ffi.VisitInterrupt" },
};

__attribute__((constructor)) static void types_init(void)
{
	size_t i;

	pthread_mutex_lock(&type_lock);
	if (add_type("ffi.Object", TIO_TYPE_OBJECT, NULL))
		abort();
	for (i = 0; i < sizeof(pod_types) / sizeof(pod_types[0]); i++)
		if (add_type(pod_types[i].key, pod_types[i].index, NULL))
			abort();
	for (i = 0; i < sizeof(static_types) / sizeof(static_types[0]); i++)
		if (add_type(static_types[i].key, static_types[i].index, table[TIO_TYPE_OBJECT]))
			abort();
	pthread_mutex_unlock(&type_lock);
}
