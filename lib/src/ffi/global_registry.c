// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The global function registry.
 *
 * Writers (set, remove) hold reg_lock and bump reg_gen after every change.
 * Readers go through a per-thread direct-mapped cache whose entries own a
 * reference to their Function and remember the generation they were filled
 * at: an entry whose generation is the current one is still what the
 * registry holds, so a hit takes no lock and touches no shared cache line
 * except the Function's refcount. A miss looks the name up under reg_lock
 * and refills the entry. A thread's cache is released when it exits (and
 * by tio_debug_live_objects() for the calling thread).
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

struct cache_entry {
	uint64_t gen;
	uint64_t hash;
	tio_object_t *func;
	uint32_t len;
	char name[CACHE_NAME_MAX + 1];
};

static TIO_TLS struct cache_entry *cache;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void cache_free(void *arg)
{
	struct cache_entry *c = arg;
	int i;

	if (c == cache)
		cache = NULL;
	for (i = 0; i < CACHE_SIZE; i++)
		tio_object_decref(c[i].func);
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
	struct cache_entry *c = cache;

	if (!c)
		return;
	cache = NULL;
	pthread_setspecific(cache_key, NULL);
	cache_free(c);
}

static struct cache_entry *cache_get(void)
{
	struct cache_entry *c = cache;

	if (c)
		return c;
	pthread_once(&cache_once, cache_key_init);
	c = calloc(CACHE_SIZE, sizeof(*c));
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

static int lookup_slow(const char *name, size_t len, uint64_t hash,
		       struct cache_entry *ce, tio_object_t **out)
{
	tio_object_t *f = NULL, *drop = NULL;
	struct entry *e;

	pthread_mutex_lock(&reg_lock);
	e = find(name, len, hash);
	if (e) {
		f = e->func;
		tio_object_incref(f);
		if (ce) {
			drop = ce->func;
			tio_object_incref(f);
			ce->func = f;
			ce->gen = reg_gen;
			ce->hash = hash;
			ce->len = (uint32_t)len;
			memcpy(ce->name, name, len);
			ce->name[len] = '\0';
		}
	}
	pthread_mutex_unlock(&reg_lock);
	tio_object_decref(drop);
	*out = f;
	return 0;
}

int tio_func_get_global(const char *name, tio_object_t **out)
{
	if (TIO_UNLIKELY(!name || !out))
		return tio_error_raise("ValueError", "name and output must be given");
	return tio_func_get_global_n(name, strlen(name), out);
}

int tio_func_get_global_n(const char *name, size_t len, tio_object_t **out)
{
	struct cache_entry *c = cache, *ce = NULL;
	uint64_t hash;

	if (TIO_UNLIKELY((!name && len) || !out))
		return tio_error_raise("ValueError", "name and output must be given");
	hash = tio__hash_bytes(name, len);
	if (TIO_LIKELY(c && len <= CACHE_NAME_MAX)) {
		ce = &c[hash & (CACHE_SIZE - 1)];
		if (ce->gen == __atomic_load_n(&reg_gen, __ATOMIC_ACQUIRE) && ce->hash == hash &&
		    ce->len == len && tio__bytes_eq(ce->name, name, len)) {
			tio_object_incref(ce->func);
			*out = ce->func;
			return 0;
		}
	} else if (len <= CACHE_NAME_MAX) {
		c = cache_get();
		if (c)
			ce = &c[hash & (CACHE_SIZE - 1)];
	}
	return lookup_slow(name, len, hash, ce, out);
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
