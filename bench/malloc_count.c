// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Counts allocations: the executable's malloc, calloc, realloc and the
 * aligned variants interpose glibc's for every shared object in the
 * process (libtensorio included) and forward to glibc's __libc_* entry
 * points. The counter is thread-local: incrementing it costs well under a
 * nanosecond, and the harness measures on one thread.
 */
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "bench.h"

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void __libc_free(void *p);

static __thread uint64_t nallocs;

uint64_t bench_malloc_count(void)
{
	return nallocs;
}

void *malloc(size_t size)
{
	nallocs++;
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	nallocs++;
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	nallocs++;
	return __libc_realloc(p, size);
}

void free(void *p)
{
	__libc_free(p);
}

void *memalign(size_t align, size_t size)
{
	nallocs++;
	return __libc_memalign(align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
	nallocs++;
	return __libc_memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	nallocs++;
	p = __libc_memalign(align, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}
