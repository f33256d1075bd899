/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Blocks of released objects, kept per thread for that thread's next
 * object of the same class: an object made and released over and over (a
 * DLPack import per tensor argument of a call, a string per name) is then
 * no malloc + free pair, which were about half of its cost. Each class is
 * one block size; a thread keeps up to OBJ_CACHE_N blocks a class, freed
 * when it exits. A block is taken by the thread that releases the object,
 * whichever made it. Off under ASan, whose use-after-free checks need
 * every block freed.
 */
#ifndef TIO_OBJ_CACHE_H
#define TIO_OBJ_CACHE_H

#include "ffi/ffi_internal.h"

enum obj_cache_class {
	OBJ_CACHE_TENSOR,	/* tensor_internal.h: IMPORT_BLOCK */
	OBJ_CACHE_STR,		/* string.c: STR_BLOCK */
	OBJ_CACHE_CLASSES
};

#define OBJ_CACHE_N 4
#ifdef __SANITIZE_ADDRESS__
#define OBJ_CACHE_ON 0
#else
#define OBJ_CACHE_ON 1
#endif

/* The counts first: what a take or a put reads sits in the first bytes. */
struct obj_cache {
	int state;	/* 0 new, 1 registered for thread exit, -1 exited: off */
	int n[OBJ_CACHE_CLASSES];
	void *blocks[OBJ_CACHE_CLASSES][OBJ_CACHE_N];
};

extern TIO_TLS struct obj_cache tio__obj_cache;
int tio__obj_cache_register(void);

/*
 * An object of class @cls (@size bytes, the class's block size), header
 * initialised and counted live; NULL without memory.
 */
static inline void *tio__obj_cache_new(int cls, size_t size, int32_t type_index,
				       void (*deleter)(void *self, int flags))
{
	struct obj_cache *c = &tio__obj_cache;
	tio_object_t *o;

	if (!OBJ_CACHE_ON || TIO_UNLIKELY(!c->n[cls]))
		return tio__obj_new(size, type_index, deleter);
	o = (tio_object_t *)c->blocks[cls][--c->n[cls]];
	tio_object_init(o, type_index, deleter);
	tio__live_add(1);
	return o;
}

/* Release the memory of an object of class @cls: kept when there is room. */
static inline void tio__obj_cache_free(int cls, void *o)
{
	struct obj_cache *c = &tio__obj_cache;

	if (OBJ_CACHE_ON && c->n[cls] < OBJ_CACHE_N &&
	    TIO_LIKELY(c->state > 0 || (!c->state && !tio__obj_cache_register()))) {
		c->blocks[cls][c->n[cls]++] = o;
		tio__live_add(-1);
		return;
	}
	tio__obj_free(o);
}

#endif /* TIO_OBJ_CACHE_H */
