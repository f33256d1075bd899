/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal helpers shared by the FFI sources.
 */
#ifndef TIO_FFI_INTERNAL_H
#define TIO_FFI_INTERNAL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tensorio/ffi.h>

#define TIO_LIKELY(x) __builtin_expect(!!(x), 1)
#define TIO_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TIO_TLS __thread __attribute__((tls_model("initial-exec")))

/*
 * The entry points whose speed is a goal start on a 64-byte boundary, so
 * that the library's layout (a file added, a function grown) does not move
 * their loops across fetch blocks: DLPack import + release ran 0.7 ns (6 %)
 * slower when an unrelated change moved it by 32 bytes.
 */
#define TIO_HOT_ALIGN __attribute__((aligned(64)))

/*
 * The live-object counter: one slot per thread (no atomic read-modify-write
 * on the hot path), summed on demand. See object.c.
 */
struct tio_live_slot {
	int64_t count;
	int registered;
	struct tio_live_slot *prev, *next;
};

extern TIO_TLS struct tio_live_slot tio__live;
void tio__live_register(void);

static inline void tio__live_add(int64_t d)
{
	if (TIO_UNLIKELY(!tio__live.registered))
		tio__live_register();
	__atomic_store_n(&tio__live.count, tio__live.count + d, __ATOMIC_RELAXED);
}

/* Allocate an object of @size bytes (not zeroed), header initialised. */
static inline void *tio__obj_new(size_t size, int32_t type_index,
				 void (*deleter)(void *self, int flags))
{
	tio_object_t *o = (tio_object_t *)malloc(size);

	if (TIO_UNLIKELY(!o))
		return NULL;
	tio_object_init(o, type_index, deleter);
	tio__live_add(1);
	return o;
}

static inline void tio__obj_free(void *o)
{
	tio__live_add(-1);
	free(o);
}

/* Drop @n strong references at once (tio_object_decref() @n times). */
static inline void tio__object_decref_n(tio_object_t *o, uint32_t n)
{
	uint64_t old;

	if (!o || !n)
		return;
	old = __atomic_fetch_sub(&o->combined_ref_count, n, __ATOMIC_RELEASE);
	if ((uint32_t)old != n)
		return;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if ((old >> 32) == 1) {
		o->deleter(o, TIO_DELETER_BOTH);
	} else {
		o->deleter(o, TIO_DELETER_STRONG);
		tio_object_weak_decref(o);
	}
}

/* Raise a MemoryError (preallocated-free path; never fails). */
int tio__oom(void);

/* backtrace.c: raw capture at raise, symbolised when read (error.c). */
int tio__backtrace_capture(void **frames, int max, int skip);
char *tio__backtrace_symbolise(void *const *frames, int n);

/*
 * foreign_rt.c: the error entry points of another TVM FFI runtime in the
 * process, whose slot holds the raised error once it is found.
 */
struct tio__foreign_rt {
	void (*set)(void *err);		/* TVMFFIErrorSetRaised: takes a reference */
	void (*move)(void **out);	/* TVMFFIErrorMoveFromRaised */
};

/* own_symbol.c: a loaded object's own function @name, or NULL. */
struct dl_phdr_info;
void *tio__own_symbol(const struct dl_phdr_info *info, const char *name);

/* The runtime, looked for first when objects were loaded since; or NULL. */
const struct tio__foreign_rt *tio__foreign_rt(void);
/* The runtime if found already (no look); or NULL. */
const struct tio__foreign_rt *tio__foreign_rt_joined(void);

static inline uint64_t tio__load64(const unsigned char *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return w;
}

static inline uint64_t tio__load32(const unsigned char *p)
{
	uint32_t w;

	memcpy(&w, p, 4);
	return w;
}

/*
 * Hash of a byte string (64-bit, word at a time; the last word overlaps
 * the one before it when the length is not a multiple of 8).
 */
static inline uint64_t tio__hash_bytes(const void *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (n * 0xff51afd7ed558ccdull);
	uint64_t w;
	size_t i;

	if (n >= 8) {
		for (i = 0; i + 8 < n; i += 8)
			h = (h ^ tio__load64(s + i)) * 0xbf58476d1ce4e5b9ull;
		w = tio__load64(s + n - 8);
	} else if (n >= 4) {
		w = tio__load32(s) | tio__load32(s + n - 4) << 32;
	} else {
		/* Byte by byte: a memcpy() of variable size is a call. */
		for (w = 0; n; n--)
			w = (w << 8) | s[n - 1];
	}
	h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 29;
	return h;
}

/* Equality of two byte strings of length @n, inline (short names). */
static inline int tio__bytes_eq(const void *a, const void *b, size_t n)
{
	const unsigned char *x = (const unsigned char *)a;
	const unsigned char *y = (const unsigned char *)b;
	size_t i;

	if (n >= 8) {
		for (i = 0; i + 8 < n; i += 8)
			if (tio__load64(x + i) != tio__load64(y + i))
				return 0;
		return tio__load64(x + n - 8) == tio__load64(y + n - 8);
	}
	if (n >= 4)
		return tio__load32(x) == tio__load32(y) &&
		       tio__load32(x + n - 4) == tio__load32(y + n - 4);
	for (; n; n--)
		if (*x++ != *y++)
			return 0;
	return 1;
}

/* Array of strings from a list of C strings (sorted by the caller). */
int tio__str_array(char **names, size_t n, tio_any_t *out);

/* The global-function lookup cache of the calling thread. */
void tio__func_cache_flush(void);

/*
 * object.c: what tio_debug_live_objects() calls first, so that a cache
 * above the object layer (the function cache) drops the references it
 * holds; set once, by that layer, without object.c depending on it.
 */
void tio__live_set_flush(void (*flush)(void));

/* A process-lifetime Function (not counted as live). */
int tio__func_new_permanent(tio_safe_call_t call, void *self, tio_object_t **out);

/* A Function whose call gets self NULL and which keeps @owner alive. */
int tio__func_new_owned(tio_safe_call_t call, tio_object_t *owner, tio_object_t **out);


#endif /* TIO_FFI_INTERNAL_H */
