// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The global function registry.
 *
 * Writers (set, remove) hold reg_lock and bump reg_gen after every change.
 * Readers go through a per-thread direct-mapped cache whose entries own
 * references to their Function and remember the generation they were
 * filled at: an entry whose generation is the current one is still what
 * the registry holds, so a hit takes no lock and touches no shared cache
 * line. A miss looks the name up under reg_lock and refills the entry. A
 * thread's cache is released when it exits (and by
 * tio_debug_live_objects() for the calling thread).
 *
 * A hit is a lookup of a name the thread looked up before, mostly from the
 * same pointer (a string literal, a name kept): a small table indexed by
 * the pointer finds the entry without hashing the name, whose bytes are
 * then compared. Each entry also holds a batch of spare strong references
 * taken with one atomic add: a hit hands out one of them, so that a lookup
 * and the caller's release are one atomic operation, not two. The spares
 * go back when the entry is refilled or released.
 */
#include <pthread.h>

#include "ffi/ffi_internal.h"

struct entry {
	char *name;
	size_t len;
	uint64_t hash;
	tio_object_t *func;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *slots;		/* open addressing, under reg_lock */
static size_t nslots, nused;		/* nused counts tombstones too */
static size_t nlive;
static uint64_t reg_gen = 1;		/* written under reg_lock, read lock-free */

#define TOMBSTONE ((char *)&reg_lock)

#define CACHE_SIZE 64
#define CACHE_NAME_MAX 47
#define CACHE_BY_PTR 16
#define CACHE_SPARE 64		/* references taken at a time */

struct cache_entry {
	uint64_t gen;
	uint64_t hash;
	tio_object_t *func;	/* holds 1 + spare references */
	const char *key;	/* the pointer last looked up with */
	uint32_t len;
	uint32_t spare;
	char name[CACHE_NAME_MAX + 1];
};

struct cache {
	struct cache_entry e[CACHE_SIZE];
	struct cache_entry *by_ptr[CACHE_BY_PTR];
};

static TIO_TLS struct cache *cache;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

/* Drop the references of @ce. */
static void entry_release(struct cache_entry *ce)
{
	tio__object_decref_n(ce->func, 1 + ce->spare);
	ce->func = NULL;
	ce->spare = 0;
}

static void cache_free(void *arg)
{
	struct cache *c = arg;
	int i;

	if (c == cache)
		cache = NULL;
	for (i = 0; i < CACHE_SIZE; i++)
		entry_release(&c->e[i]);
	free(c);
}

static void cache_key_init(void)
{
	if (pthread_key_create(&cache_key, cache_free))
		abort();
	/* The cache holds references: drop them before objects are counted. */
	tio__live_set_flush(tio__func_cache_flush);
}

void tio__func_cache_flush(void)
{
	struct cache *c = cache;

	if (!c)
		return;
	cache = NULL;
	pthread_setspecific(cache_key, NULL);
	cache_free(c);
}

static struct cache *cache_get(void)
{
	struct cache *c = cache;

	if (c)
		return c;
	pthread_once(&cache_once, cache_key_init);
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	cache = c;
	pthread_setspecific(cache_key, c);
	return c;
}

/* Under reg_lock: the slot holding @name, or NULL. */
static struct entry *find(const char *name, size_t len, uint64_t hash)
{
	size_t i;

	if (!nslots)
		return NULL;
	for (i = hash & (nslots - 1);; i = (i + 1) & (nslots - 1)) {
		struct entry *e = &slots[i];

		if (!e->name)
			return NULL;
		if (e->name != TOMBSTONE && e->hash == hash && e->len == len &&
		    !memcmp(e->name, name, len))
			return e;
	}
}

/* Under reg_lock: make room for one more entry. */
static int reserve(void)
{
	struct entry *old = slots, *n;
	size_t oldn = nslots, size = nslots ? nslots : 64, i, j;

	if ((nused + 1) * 4 < nslots * 3)
		return 0;
	while ((nlive + 1) * 2 >= size)
		size *= 2;
	n = calloc(size, sizeof(*n));
	if (!n)
		return -1;
	for (i = 0; i < oldn; i++) {
		if (!old[i].name || old[i].name == TOMBSTONE)
			continue;
		for (j = old[i].hash & (size - 1); n[j].name; j = (j + 1) & (size - 1))
			;
		n[j] = old[i];
	}
	free(old);
	slots = n;
	nslots = size;
	nused = nlive;
	return 0;
}

int tio_func_set_global(const char *name, tio_object_t *func, int allow_override)
{
	size_t len;
	uint64_t hash;
	struct entry *e;
	tio_object_t *old = NULL;
	char *copy;
	size_t i;

	if (!name || !func)
		return tio_error_raise("ValueError", "name and function must be given");
	if (func->type_index != TIO_TYPE_FUNCTION)
		return tio_error_raise("TypeError", "global '%s' must be a Function", name);
	len = strlen(name);
	hash = tio__hash_bytes(name, len);
	pthread_mutex_lock(&reg_lock);
	e = find(name, len, hash);
	if (e) {
		if (!allow_override) {
			pthread_mutex_unlock(&reg_lock);
			return tio_error_raise("KeyError",
					       "global function '%s' is already registered", name);
		}
		old = e->func;
		tio_object_incref(func);
		e->func = func;
		goto done;
	}
	copy = malloc(len + 1);
	if (!copy || reserve()) {
		pthread_mutex_unlock(&reg_lock);
		free(copy);
		return tio__oom();
	}
	memcpy(copy, name, len + 1);
	for (i = hash & (nslots - 1); slots[i].name && slots[i].name != TOMBSTONE;
	     i = (i + 1) & (nslots - 1))
		;
	if (!slots[i].name)
		nused++;
	nlive++;
	tio_object_incref(func);
	slots[i] = (struct entry){ copy, len, hash, func };
done:
	__atomic_store_n(&reg_gen, reg_gen + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&reg_lock);
	tio_object_decref(old);
	return 0;
}

int tio_func_register_global(const char *name, tio_safe_call_t call, void *self,
			     int allow_override)
{
	tio_object_t *f;
	int r;

	if (!call)
		return tio_error_raise("ValueError", "NULL callback for '%s'", name ? name : "");
	if (tio__func_new_permanent(call, self, &f))
		return -1;
	r = tio_func_set_global(name, f, allow_override);
	if (r)
		free(f);	/* never shared */
	return r;
}

int tio_func_remove_global(const char *name)
{
	size_t len;
	struct entry *e;
	tio_object_t *old;

	if (!name)
		return tio_error_raise("ValueError", "NULL name");
	len = strlen(name);
	pthread_mutex_lock(&reg_lock);
	e = find(name, len, tio__hash_bytes(name, len));
	if (!e) {
		pthread_mutex_unlock(&reg_lock);
		return tio_error_raise("KeyError", "no global function '%s'", name);
	}
	old = e->func;
	free(e->name);
	e->name = TOMBSTONE;
	e->func = NULL;
	nlive--;
	__atomic_store_n(&reg_gen, reg_gen + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&reg_lock);
	tio_object_decref(old);
	return 0;
}

static unsigned int by_ptr_slot(const char *name)
{
	return (unsigned int)(((uintptr_t)name * 0x9e3779b97f4a7c15ull) >> 60) &
	       (CACHE_BY_PTR - 1);
}

/* A hit: one of the entry's spare references, or a new batch of them. */
static int hand_out(struct cache_entry *ce, tio_object_t **out)
{
	if (TIO_LIKELY(ce->spare)) {
		ce->spare--;
	} else {
		__atomic_fetch_add(&ce->func->combined_ref_count, CACHE_SPARE, __ATOMIC_RELAXED);
		ce->spare = CACHE_SPARE - 1;
	}
	*out = ce->func;
	return 0;
}

static int lookup_slow(const char *name, size_t len, uint64_t hash,
		       struct cache *c, tio_object_t **out)
{
	struct cache_entry *ce = c ? &c->e[hash & (CACHE_SIZE - 1)] : NULL;
	struct cache_entry old = { 0 };
	tio_object_t *f = NULL;
	struct entry *e;

	pthread_mutex_lock(&reg_lock);
	e = find(name, len, hash);
	if (e) {
		f = e->func;
		tio_object_incref(f);
		if (ce) {
			old = *ce;
			tio_object_incref(f);
			ce->func = f;
			ce->spare = 0;
			ce->gen = reg_gen;
			ce->hash = hash;
			ce->len = (uint32_t)len;
			memcpy(ce->name, name, len);
			ce->name[len] = '\0';
			ce->key = name;
			c->by_ptr[by_ptr_slot(name)] = ce;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	entry_release(&old);
	*out = f;
	return 0;
}

/* The cache's fast path: 0 on a hit (*out set), else -1. No call: a leaf. */
static inline int lookup_hit(const char *name, size_t len, tio_object_t **out)
{
	struct cache *c = cache;
	struct cache_entry *ce;

	if (TIO_UNLIKELY(!c || !out || len > CACHE_NAME_MAX))
		return -1;
	ce = c->by_ptr[by_ptr_slot(name)];
	if (TIO_LIKELY(ce && ce->key == name && ce->len == len &&
		       ce->gen == __atomic_load_n(&reg_gen, __ATOMIC_ACQUIRE) &&
		       tio__bytes_eq(ce->name, name, len)))
		return hand_out(ce, out);
	return -1;
}

/* Not found from the pointer: the name's hash, then the registry. */
static __attribute__((noinline)) int lookup_miss(const char *name, size_t len,
						 tio_object_t **out)
{
	struct cache *c = len <= CACHE_NAME_MAX ? cache_get() : NULL;
	uint64_t hash = tio__hash_bytes(name, len);
	struct cache_entry *ce;

	if (c) {
		ce = &c->e[hash & (CACHE_SIZE - 1)];
		if (ce->gen == __atomic_load_n(&reg_gen, __ATOMIC_ACQUIRE) && ce->hash == hash &&
		    ce->len == len && tio__bytes_eq(ce->name, name, len)) {
			ce->key = name;
			c->by_ptr[by_ptr_slot(name)] = ce;
			return hand_out(ce, out);
		}
	}
	return lookup_slow(name, len, hash, c, out);
}

TIO_HOT_ALIGN
int tio_func_get_global(const char *name, tio_object_t **out)
{
	size_t len;

	if (TIO_UNLIKELY(!name || !out))
		return tio_error_raise("ValueError", "name and output must be given");
	len = strlen(name);
	if (TIO_LIKELY(!lookup_hit(name, len, out)))
		return 0;
	return lookup_miss(name, len, out);
}

TIO_HOT_ALIGN
int tio_func_get_global_n(const char *name, size_t len, tio_object_t **out)
{
	if (TIO_LIKELY(!lookup_hit(name, len, out)))
		return 0;
	if (TIO_UNLIKELY((!name && len) || !out))
		return tio_error_raise("ValueError", "name and output must be given");
	return lookup_miss(name, len, out);
}

int tio_func_call_global(const char *name, const tio_any_t *args, int32_t nargs,
			 tio_any_t *ret)
{
	tio_object_t *f;
	int r;

	*ret = tio_any_none();
	if (tio_func_get_global(name, &f))
		return -1;
	if (!f)
		return tio_error_raise("KeyError", "no global function '%s'", name);
	r = tio_func_call(f, args, nargs, ret);
	tio_object_decref(f);
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int tio_func_list_globals(tio_any_t *out)
{
	char **names;
	size_t i, n = 0;
	int r = -1;

	*out = tio_any_none();
	pthread_mutex_lock(&reg_lock);
	names = calloc(nlive ? nlive : 1, sizeof(*names));
	if (!names)
		goto unlock;
	for (i = 0; i < nslots; i++) {
		if (!slots[i].name || slots[i].name == TOMBSTONE)
			continue;
		names[n] = strdup(slots[i].name);
		if (!names[n])
			goto unlock;
		n++;
	}
	r = 0;
unlock:
	pthread_mutex_unlock(&reg_lock);
	if (!r) {
		qsort(names, n, sizeof(*names), cmp_str);
		r = tio__str_array(names, n, out);
	} else {
		tio__oom();
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r;
}
