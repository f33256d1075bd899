// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Error objects and the thread-local raised error.
 *
 * An Error is one allocation: the object, the raw return addresses
 * captured when it was made, then its kind and message (both
 * NUL-terminated). The addresses become text only when the backtrace is
 * first read (tio_error_backtrace(), update_backtrace); the text is a
 * separate allocation so that update_backtrace can replace or extend it.
 * The raised error of a thread lives in a TLS slot, which a pthread key
 * releases when the thread exits; or, once another TVM FFI runtime is
 * found in the process (foreign_rt.c), in that runtime's slot.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "ffi/ffi_internal.h"

#define BT_FRAMES 64

/*
 * Our Error: the public layout, then the raw return addresses captured at
 * raise, symbolised into cell.backtrace on first read (@ready set, with
 * release order, once cell.backtrace is final). Errors of another
 * library's making (same type index) are told apart by update_backtrace.
 */
struct error_impl {
	tio_error_obj_t pub;
	int32_t nframes;
	int32_t ready;
	void *frames[];
};

static TIO_TLS tio_object_t *raised;
static TIO_TLS int raised_key_set;
static pthread_key_t raised_key;
static pthread_once_t raised_once = PTHREAD_ONCE_INIT;
/* Serialises the symbolising of one error read by several threads. */
static pthread_mutex_t symbolise_lock = PTHREAD_MUTEX_INITIALIZER;

static void error_deleter(void *self, int flags)
{
	tio_error_obj_t *e = self;

	if (flags & TIO_DELETER_STRONG) {
		free((void *)e->cell.backtrace.data);
		e->cell.backtrace.data = NULL;
		tio_object_decref(e->cell.cause_chain);
		e->cell.cause_chain = NULL;
		tio_object_decref(e->cell.extra_context);
		e->cell.extra_context = NULL;
	}
	if (flags & TIO_DELETER_WEAK)
		tio__obj_free(e);
}

static void error_update_backtrace(void *self, const tio_byte_array_t *bt, int32_t mode);

static struct error_impl *impl_of(const tio_object_t *err)
{
	const tio_error_obj_t *e = (const tio_error_obj_t *)err;

	return e->cell.update_backtrace == error_update_backtrace ?
	       (struct error_impl *)err : NULL;
}

/* Make cell.backtrace final: symbolise the captured frames once. */
static void error_symbolise(struct error_impl *x)
{
	char *text;

	if (__atomic_load_n(&x->ready, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&symbolise_lock);
	if (!x->ready) {
		text = tio__backtrace_symbolise(x->frames, x->nframes);
		if (text) {	/* else, without memory, no backtrace */
			x->pub.cell.backtrace.data = text;
			x->pub.cell.backtrace.size = strlen(text);
		}
		__atomic_store_n(&x->ready, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&symbolise_lock);
}

const char *tio_error_backtrace(const tio_object_t *err)
{
	const tio_error_obj_t *e = (const tio_error_obj_t *)err;
	struct error_impl *x = impl_of(err);

	if (x)
		error_symbolise(x);
	return e->cell.backtrace.data ? e->cell.backtrace.data : "";
}

static void error_update_backtrace(void *self, const tio_byte_array_t *bt, int32_t mode)
{
	struct error_impl *x = self;
	tio_error_obj_t *e = self;
	size_t old;
	char *p;

	error_symbolise(x);
	old = mode == TIO_BACKTRACE_APPEND ? e->cell.backtrace.size : 0;
	p = malloc(old + bt->size + 1);
	if (!p)
		return;		/* keeps the old backtrace */
	if (old)
		memcpy(p, e->cell.backtrace.data, old);
	memcpy(p + old, bt->data, bt->size);
	p[old + bt->size] = '\0';
	free((void *)e->cell.backtrace.data);
	e->cell.backtrace.data = p;
	e->cell.backtrace.size = old + bt->size;
}

/* The MemoryError raised when memory runs out: static, never freed. */
static void static_deleter(void *self, int flags)
{
	(void)self;
	(void)flags;
}

static tio_error_obj_t oom_error = {
	.header = { .combined_ref_count = UINT64_C(1) << 30,
		    .type_index = TIO_TYPE_ERROR,
		    .deleter = static_deleter },
	.cell = { .kind = { "MemoryError", 11 },
		  .message = { "out of memory", 13 },
		  .backtrace = { NULL, 0 },
		  .update_backtrace = NULL,
		  .cause_chain = NULL,
		  .extra_context = NULL },
};

/*
 * One allocation: the error, @nframes raw addresses, kind and message.
 * @backtrace (taken over) is the text when one was given, else NULL.
 */
static int error_alloc(const char *kind, size_t klen, const char *msg, size_t msglen,
		       char *backtrace, size_t btlen, void *const *frames, int nframes,
		       tio_object_t *cause, tio_object_t *extra, tio_object_t **out)
{
	size_t fsize = (size_t)nframes * sizeof(void *);
	struct error_impl *x;
	tio_error_obj_t *e;
	char *p;

	x = tio__obj_new(sizeof(*x) + fsize + klen + msglen + 2, TIO_TYPE_ERROR,
			 error_deleter);
	if (!x)
		return -1;
	e = &x->pub;
	x->nframes = nframes;
	x->ready = !nframes;
	if (nframes)
		memcpy(x->frames, frames, fsize);
	p = (char *)x->frames + fsize;
	memcpy(p, kind, klen);
	p[klen] = '\0';
	e->cell.kind.data = p;
	e->cell.kind.size = klen;
	p += klen + 1;
	memcpy(p, msg, msglen);
	p[msglen] = '\0';
	e->cell.message.data = p;
	e->cell.message.size = msglen;
	e->cell.backtrace.data = backtrace;
	e->cell.backtrace.size = btlen;
	e->cell.update_backtrace = error_update_backtrace;
	tio_object_incref(cause);
	e->cell.cause_chain = cause;
	tio_object_incref(extra);
	e->cell.extra_context = extra;
	*out = &e->header;
	return 0;
}

int tio_error_new(const char *kind, const char *message, const char *backtrace,
		  tio_object_t *cause, tio_object_t **out)
{
	void *frames[BT_FRAMES];
	char *bt = NULL;
	int n = 0;

	if (!kind || !message || !out)
		return -1;
	if (backtrace) {
		bt = strdup(backtrace);
		if (!bt)
			return -1;
	} else {
		n = tio__backtrace_capture(frames, BT_FRAMES, 1);
	}
	if (error_alloc(kind, strlen(kind), message, strlen(message), bt,
			bt ? strlen(bt) : 0, frames, n, cause, NULL, out)) {
		free(bt);
		return -1;
	}
	return 0;
}

static int byte_array_ok(const tio_byte_array_t *b)
{
	return b && (b->data || !b->size);
}

int tio_error_create(const tio_byte_array_t *kind, const tio_byte_array_t *message,
		     const tio_byte_array_t *backtrace, tio_object_t *cause,
		     tio_object_t *extra_context, tio_object_t **out)
{
	char *bt = NULL;
	size_t btlen = 0;

	if (!byte_array_ok(kind) || !byte_array_ok(message) || !out ||
	    (backtrace && !byte_array_ok(backtrace)))
		return -1;
	if (backtrace && backtrace->size) {
		bt = strndup(backtrace->data, backtrace->size);
		if (!bt)
			return -1;
		btlen = strlen(bt);
	}
	if (error_alloc(kind->data ? kind->data : "", kind->size,
			message->data ? message->data : "", message->size,
			bt, btlen, NULL, 0, cause, extra_context, out)) {
		free(bt);
		return -1;
	}
	return 0;
}

static void raised_release(void *arg)
{
	tio_object_t *e = arg;

	if (e == raised)
		raised = NULL;
	tio_object_decref(e);
}

static void raised_key_init(void)
{
	if (pthread_key_create(&raised_key, raised_release))
		abort();
}

/* Takes the thread's own slot's error (a new reference), or NULL. */
static tio_object_t *local_take(void)
{
	tio_object_t *e = raised;

	if (e) {
		raised = NULL;
		pthread_setspecific(raised_key, NULL);
		raised_key_set = 0;
	}
	return e;
}

/*
 * With a foreign runtime: its slot is the thread's raised error. It reads
 * the backtrace from the cell, so ours is symbolised first.
 */
static void foreign_set_owned(const struct tio__foreign_rt *rt, tio_object_t *err)
{
	struct error_impl *x = err ? impl_of(err) : NULL;
	void *old = NULL;

	if (x)
		error_symbolise(x);
	tio_object_decref(local_take());
	if (err)
		rt->set(err);
	else
		rt->move(&old);
	tio_object_decref(old);
	tio_object_decref(err);
}

/* Takes over the reference @err carries. */
static void set_raised_owned(tio_object_t *err)
{
	const struct tio__foreign_rt *rt = tio__foreign_rt();
	tio_object_t *old = raised;

	if (rt) {
		foreign_set_owned(rt, err);
		return;
	}
	if (!raised_key_set) {
		pthread_once(&raised_once, raised_key_init);
		raised_key_set = 1;
	}
	raised = err;
	pthread_setspecific(raised_key, err);
	if (!err)
		raised_key_set = 0;
	tio_object_decref(old);
}

void tio_error_set_raised(tio_object_t *err)
{
	tio_object_incref(err);
	set_raised_owned(err);
}

/*
 * The foreign runtime's slot holds what was raised since it was found;
 * ours, what was raised before (nothing when the foreign one has one).
 */
tio_object_t *tio_error_move_from_raised(void)
{
	tio_object_t *e = local_take();
	const struct tio__foreign_rt *rt = e ? tio__foreign_rt_joined() : tio__foreign_rt();
	void *f = NULL;

	if (rt) {
		rt->move(&f);
		if (f) {
			tio_object_decref(e);
			e = f;
		}
	}
	return e;
}

tio_object_t *tio_error_peek_raised(void)
{
	const struct tio__foreign_rt *rt = raised ? tio__foreign_rt_joined() : tio__foreign_rt();
	void *f = NULL;

	if (rt) {
		rt->move(&f);
		if (f) {	/* put back: the slot's reference keeps it valid */
			rt->set(f);
			tio_object_decref(f);
			return f;
		}
	}
	return raised;
}

void tio_error_clear(void)
{
	tio_object_decref(tio_error_move_from_raised());
}

int tio__oom(void)
{
	tio_error_set_raised(&oom_error.header);
	return -1;
}

/* noinline: the frames skipped at capture are this one and its caller. */
__attribute__((noinline))
static int vraise(const char *kind, tio_object_t *cause, const char *fmt, va_list ap)
{
	void *frames[BT_FRAMES];
	tio_object_t *err;
	char *msg = NULL;
	int len, n;

	len = vasprintf(&msg, fmt, ap);
	if (len < 0)
		return tio__oom();
	n = tio__backtrace_capture(frames, BT_FRAMES, 2);
	if (error_alloc(kind, strlen(kind), msg, (size_t)len, NULL, 0, frames, n,
			cause, NULL, &err)) {
		free(msg);
		return tio__oom();
	}
	free(msg);
	set_raised_owned(err);
	return -1;
}

int tio_error_raise(const char *kind, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vraise(kind, NULL, fmt, ap);
	va_end(ap);
	return r;
}

int tio_error_raise_chained(const char *kind, const char *fmt, ...)
{
	tio_object_t *cause = tio_error_move_from_raised();
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vraise(kind, cause, fmt, ap);
	va_end(ap);
	tio_object_decref(cause);
	return r;
}
