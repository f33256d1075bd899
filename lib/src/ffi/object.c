// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Objects: allocation of custom-typed objects and the debug live-object
 * counter.
 *
 * The counter is kept per thread: each thread adds to its own slot with a
 * plain store (no locked instruction on the allocation path); slots are on
 * a list, under live_lock, that tio_debug_live_objects() sums. A thread's
 * count is folded into live_exited when it exits.
 */
#include <errno.h>
#include <pthread.h>

#include "ffi/ffi_internal.h"

TIO_TLS struct tio_live_slot tio__live;

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tio_live_slot live_head = { 0, 1, &live_head, &live_head };
static int64_t live_exited;		/* under live_lock */
static pthread_key_t live_key;
static pthread_once_t live_once = PTHREAD_ONCE_INIT;

static void live_thread_exit(void *arg)
{
	struct tio_live_slot *s = arg;

	pthread_mutex_lock(&live_lock);
	live_exited += s->count;
	s->count = 0;
	s->prev->next = s->next;
	s->next->prev = s->prev;
	s->registered = 0;
	pthread_mutex_unlock(&live_lock);
}

static void live_key_init(void)
{
	if (pthread_key_create(&live_key, live_thread_exit))
		abort();
}

void tio__live_register(void)
{
	struct tio_live_slot *s = &tio__live;

	pthread_once(&live_once, live_key_init);
	pthread_mutex_lock(&live_lock);
	s->next = live_head.next;
	s->prev = &live_head;
	live_head.next->prev = s;
	live_head.next = s;
	s->registered = 1;
	pthread_mutex_unlock(&live_lock);
	pthread_setspecific(live_key, s);
}

static void (*live_flush)(void);

void tio__live_set_flush(void (*flush)(void))
{
	__atomic_store_n(&live_flush, flush, __ATOMIC_RELEASE);
}

int64_t tio_debug_live_objects(void)
{
	void (*flush)(void) = __atomic_load_n(&live_flush, __ATOMIC_ACQUIRE);
	struct tio_live_slot *s;
	int64_t n;

	if (flush)
		flush();
	pthread_mutex_lock(&live_lock);
	n = live_exited;
	for (s = live_head.next; s != &live_head; s = s->next)
		n += __atomic_load_n(&s->count, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&live_lock);
	return n;
}

/*
 * Objects from tio_object_alloc() carry their finaliser in a 16-byte
 * prefix, so the deleter needs no look-up.
 */
struct alloc_prefix {
	void (*finalize)(void *self);
	uint64_t pad;
};

static void alloc_deleter(void *self, int flags)
{
	struct alloc_prefix *p = (struct alloc_prefix *)self - 1;

	if ((flags & TIO_DELETER_STRONG) && p->finalize)
		p->finalize(self);
	if (flags & TIO_DELETER_WEAK) {
		tio__live_add(-1);
		free(p);
	}
}

void *tio_object_alloc(size_t size, int32_t type_index, void (*finalize)(void *self))
{
	struct alloc_prefix *p;
	tio_object_t *o;

	if (size < sizeof(tio_object_t) || size > (SIZE_MAX >> 2)) {
		tio_error_raise("ValueError", "object size %zu is invalid", size);
		return NULL;
	}
	if (type_index < TIO_TYPE_STATIC_OBJECT_BEGIN || !tio_type_info(type_index)) {
		tio_error_raise("ValueError", "type index %d is not a registered object type",
				type_index);
		return NULL;
	}
	p = calloc(1, sizeof(*p) + size);
	if (!p) {
		tio__oom();
		return NULL;
	}
	p->finalize = finalize;
	o = (tio_object_t *)(p + 1);
	tio_object_init(o, type_index, alloc_deleter);
	tio__live_add(1);
	return o;
}
