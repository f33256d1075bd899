// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The per-thread caches of object blocks (obj_cache.h): registered for
 * thread exit on first use, emptied then.
 */
#include <pthread.h>

#include "ffi/obj_cache.h"

TIO_TLS struct obj_cache tio__obj_cache;

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static int cache_key_ok;

/* At thread exit: the blocks go, and later frees on this thread skip the cache. */
static void cache_thread_exit(void *arg)
{
	struct obj_cache *c = arg;
	int k;

	for (k = 0; k < OBJ_CACHE_CLASSES; k++)
		while (c->n[k])
			free(c->blocks[k][--c->n[k]]);
	c->state = -1;
}

static void cache_key_init(void)
{
	cache_key_ok = !pthread_key_create(&cache_key, cache_thread_exit);
}

/* 0 when the calling thread's cache will be emptied at its exit. */
int tio__obj_cache_register(void)
{
	struct obj_cache *c = &tio__obj_cache;

	pthread_once(&cache_once, cache_key_init);
	if (!cache_key_ok || pthread_setspecific(cache_key, c)) {
		c->state = -1;	/* no cache on this thread, nothing lost */
		return -1;
	}
	c->state = 1;
	return 0;
}
