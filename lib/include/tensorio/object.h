/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * FFI objects: the 24-byte header every heap object starts with, and its
 * reference counting.
 *
 * Layout (TVM FFI C ABI): a 64-bit combined reference count (strong count
 * in the low 32 bits, weak count in the high 32), the type index, 4 bytes of
 * padding and the deleter. A new object has strong 1 and weak 1: the strong
 * references together hold one weak reference, dropped after the last
 * strong one goes. The deleter is called with TIO_DELETER_STRONG when the
 * last strong reference goes (destroy the contents, keep the memory), with
 * TIO_DELETER_WEAK when the last weak reference goes (free the memory), or
 * with TIO_DELETER_BOTH when both go at once.
 *
 * Layer: ffi (lib/src/ffi/, the FFI core)
 */
#ifndef TENSORIO_OBJECT_H
#define TENSORIO_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
#define TIO_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define TIO_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/* Deleter flags. */
#define TIO_DELETER_STRONG 1
#define TIO_DELETER_WEAK 2
#define TIO_DELETER_BOTH 3

/* The combined count of a new object: strong 1, weak 1. */
#define TIO_REFCOUNT_INIT ((UINT64_C(1) << 32) | UINT64_C(1))
#define TIO_REFCOUNT_WEAK_ONE (UINT64_C(1) << 32)

/**
 * struct tio_object - the header of every FFI object (24 bytes)
 * @combined_ref_count: strong count (low 32 bits) and weak count (high 32)
 * @type_index: the object's type (TIO_TYPE_OBJECT and up)
 * @padding_: zero
 * @deleter: called as described above; never NULL
 * @align_: keeps the header 24 bytes with 8-byte alignment on 32-bit ABIs
 */
typedef struct tio_object {
	uint64_t combined_ref_count;
	int32_t type_index;
	uint32_t padding_;
	union {
		void (*deleter)(void *self, int flags);
		int64_t align_;
	};
} tio_object_t;

TIO_STATIC_ASSERT(sizeof(tio_object_t) == 24, "object header is 24 bytes");

/**
 * tio_object_init() - initialise the header of an object allocated by the caller
 * @obj: the object
 * @type_index: its type index
 * @deleter: its deleter (see the flags above)
 *
 * The object starts with one strong reference, owned by the caller.
 */
static inline void tio_object_init(tio_object_t *obj, int32_t type_index,
				   void (*deleter)(void *self, int flags))
{
	obj->combined_ref_count = TIO_REFCOUNT_INIT;
	obj->type_index = type_index;
	obj->padding_ = 0;
	obj->deleter = deleter;
}

/**
 * tio_object_incref() - take one more strong reference
 * @obj: the object, or NULL (nothing happens)
 *
 * The caller must already hold a strong reference (or have obtained @obj
 * from something that holds one for the duration of the call).
 */
TIO_INLINE void tio_object_incref(tio_object_t *obj)
{
	if (obj)
		__atomic_fetch_add(&obj->combined_ref_count, 1, __ATOMIC_RELAXED);
}

/**
 * tio_object_weak_incref() - take a weak reference
 * @obj: the object; the caller holds a strong or weak reference to it
 */
TIO_INLINE void tio_object_weak_incref(tio_object_t *obj)
{
	__atomic_fetch_add(&obj->combined_ref_count, TIO_REFCOUNT_WEAK_ONE,
			   __ATOMIC_RELAXED);
}

/**
 * tio_object_weak_decref() - drop a weak reference
 * @obj: the object
 *
 * Frees the memory (deleter with TIO_DELETER_WEAK) when it was the last
 * weak reference and no strong one is left.
 */
TIO_INLINE void tio_object_weak_decref(tio_object_t *obj)
{
	uint64_t old = __atomic_fetch_sub(&obj->combined_ref_count,
					  TIO_REFCOUNT_WEAK_ONE, __ATOMIC_RELEASE);

	if ((old >> 32) == 1) {
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		obj->deleter(obj, TIO_DELETER_WEAK);
	}
}

/**
 * tio_object_decref() - drop a strong reference
 * @obj: the object, or NULL (nothing happens)
 *
 * The last strong reference destroys the object's contents; its memory goes
 * when no weak reference is left either.
 */
TIO_INLINE void tio_object_decref(tio_object_t *obj)
{
	uint64_t old;

	if (!obj)
		return;
	/*
	 * The only strong reference and no weak one: no other thread may
	 * touch the object any more, so it dies without an atomic RMW. The
	 * acquire load pairs with the release of whoever dropped theirs.
	 */
	if (__atomic_load_n(&obj->combined_ref_count, __ATOMIC_ACQUIRE) ==
	    TIO_REFCOUNT_INIT) {
		obj->deleter(obj, TIO_DELETER_BOTH);
		return;
	}
	old = __atomic_fetch_sub(&obj->combined_ref_count, 1, __ATOMIC_RELEASE);
	if (old == TIO_REFCOUNT_INIT) {
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		obj->deleter(obj, TIO_DELETER_BOTH);
	} else if ((uint32_t)old == 1) {
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		obj->deleter(obj, TIO_DELETER_STRONG);
		tio_object_weak_decref(obj);
	}
}

/**
 * tio_object_weak_lock() - turn a weak reference into a new strong one
 * @obj: the object; the caller holds a weak reference
 *
 * Return: 1 with a new strong reference taken, or 0 when the object has
 * already been destroyed (no strong reference was left).
 */
static inline int tio_object_weak_lock(tio_object_t *obj)
{
	uint64_t old = __atomic_load_n(&obj->combined_ref_count, __ATOMIC_RELAXED);

	do {
		if ((uint32_t)old == 0)
			return 0;
	} while (!__atomic_compare_exchange_n(&obj->combined_ref_count, &old,
					      old + 1, 1, __ATOMIC_ACQUIRE,
					      __ATOMIC_RELAXED));
	return 1;
}

/**
 * tio_object_strong_count() - the current strong count (for tests and asserts)
 * @obj: the object
 *
 * Return: the strong reference count.
 */
static inline uint32_t tio_object_strong_count(const tio_object_t *obj)
{
	return (uint32_t)__atomic_load_n(&obj->combined_ref_count, __ATOMIC_RELAXED);
}

/**
 * tio_object_weak_count() - the current weak count, including the one the
 * strong references hold together while any is left
 * @obj: the object
 *
 * Return: the weak reference count.
 */
static inline uint32_t tio_object_weak_count(const tio_object_t *obj)
{
	return (uint32_t)(__atomic_load_n(&obj->combined_ref_count,
					  __ATOMIC_RELAXED) >> 32);
}

/**
 * tio_object_alloc() - allocate a zeroed object of a custom type
 * @size: the object's size, header included (at least sizeof(tio_object_t))
 * @type_index: its type index (a registered type, see tensorio/type.h)
 * @finalize: called once when the last strong reference goes, to release
 *	what the object holds (not the object's memory); may be NULL
 *
 * The library owns the memory and frees it when no reference of either kind
 * is left. The object counts in tio_debug_live_objects().
 *
 * Return: the object with one strong reference, or NULL with a MemoryError
 * or ValueError raised.
 */
TIO_API void *tio_object_alloc(size_t size, int32_t type_index,
			       void (*finalize)(void *self));

/**
 * tio_debug_live_objects() - the number of objects allocated by this
 * library and not yet freed
 *
 * Counts every object the library allocated (strings, functions, errors,
 * containers, tensors, modules, tio_object_alloc()) whose memory has not
 * been freed, in all threads. Objects the library keeps for the whole
 * process (registered type methods, the system library) are not counted.
 * Frees the calling thread's global-function lookup cache first, so that it
 * holds no reference.
 *
 * Return: the count; 0 when nothing leaked.
 */
TIO_API int64_t tio_debug_live_objects(void);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_OBJECT_H */
