// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * TVMFFIGetCustomAllocator / TVMFFISetCustomAllocator as TVM FFI 0.1.14
 * has them: a process-wide registry that hands back the allocator last
 * set, or a builtin one that never is NULL. In 0.1.14 object tying is
 * staged dormant: no object is allocated through the registered
 * allocator (TVM FFI's own objects are plain aligned allocations, and its
 * Python binding probes no memory before an object body), and neither is
 * any of libtensorio's objects, which have no TVMFFIObjectAllocHeader
 * before them. The builtin allocator works for a caller that uses it.
 */
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>

#include "compat.h"

/* One fixed offset: delete_space gets only the body pointer. */
#define BODY_OFFSET alignof(max_align_t)
_Static_assert(BODY_OFFSET >= sizeof(TVMFFIObjectAllocHeader), "the header fits before a body");

static void builtin_delete_space(void *ptr)
{
	free((char *)ptr - BODY_OFFSET);
}

static void *builtin_allocate(size_t size, size_t alignment, int32_t type_index, void *context)
{
	TVMFFIObjectAllocHeader *h;
	char *base;

	(void)context;
	if (!alignment || (alignment & (alignment - 1)) || alignment > BODY_OFFSET) {
		tio_error_raise("ValueError", "object alignment %zu (type %d) is not a power of "
				"two up to %zu", alignment, (int)type_index, (size_t)BODY_OFFSET);
		return NULL;
	}
	if (size > SIZE_MAX - BODY_OFFSET) {
		tio_error_raise("ValueError", "object size %zu (type %d) is too large", size,
				(int)type_index);
		return NULL;
	}
	base = malloc(BODY_OFFSET + size);	/* aligned to max_align_t */
	if (!base) {
		tio_error_raise("MemoryError", "out of memory for an object of %zu bytes", size);
		return NULL;
	}
	h = (TVMFFIObjectAllocHeader *)(base + BODY_OFFSET) - 1;
	h->delete_space = builtin_delete_space;
	return base + BODY_OFFSET;
}

static TVMFFICustomAllocator builtin = { builtin_allocate, NULL };
static TVMFFICustomAllocator *current = &builtin;	/* atomic */

TVMFFICustomAllocator *TVMFFIGetCustomAllocator(void)
{
	return __atomic_load_n(&current, __ATOMIC_ACQUIRE);
}

int TVMFFISetCustomAllocator(TVMFFICustomAllocator *allocator)
{
	/* TVM FFI takes one without allocate too; it would crash its first user. */
	if (allocator && !allocator->allocate)
		return tio_error_raise("ValueError", "custom allocator has no allocate callback");
	__atomic_store_n(&current, allocator ? allocator : &builtin, __ATOMIC_RELEASE);
	return 0;
}
