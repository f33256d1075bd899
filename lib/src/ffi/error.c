// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Error objects and the thread-local raised error.
 *
 * An Error is one allocation: the object, then its kind and message (both
 * NUL-terminated). The backtrace is a separate allocation so that
 * update_backtrace can replace or extend it. The raised error of a thread
 * lives in a TLS slot; a pthread key releases it when the thread exits.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "ffi/ffi_internal.h"

static TIO_TLS tio_object_t *raised;
static TIO_TLS int raised_key_set;
static pthread_key_t raised_key;
static pthread_once_t raised_once = PTHREAD_ONCE_INIT;

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

static void error_update_backtrace(void *self, const tio_byte_array_t *bt, int32_t mode)
{
	tio_error_obj_t *e = self;
	size_t old = mode == TIO_BACKTRACE_APPEND ? e->cell.backtrace.size : 0;
	char *p;

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

static int error_alloc(const char *kind, size_t klen, const char *msg, size_t msglen,
		       char *backtrace, size_t btlen, tio_object_t *cause,
		       tio_object_t *extra, tio_object_t **out)
{
	tio_error_obj_t *e;
	char *p;

	e = tio__obj_new(sizeof(*e) + klen + msglen + 2, TIO_TYPE_ERROR, error_deleter);
	if (!e)
		return -1;
	p = (char *)(e + 1);
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
	char *bt = NULL;

	if (!kind || !message || !out)
		return -1;
	if (backtrace) {
		bt = strdup(backtrace);
		if (!bt)
			return -1;
	} else if (tio_backtrace(1, &bt)) {
		bt = NULL;
	}
	if (error_alloc(kind, strlen(kind), message, strlen(message), bt,
			bt ? strlen(bt) : 0, cause, NULL, out)) {
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
			bt, btlen, cause, extra_context, out)) {
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

/* Takes over the reference @err carries. */
static void set_raised_owned(tio_object_t *err)
{
	tio_object_t *old = raised;

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

tio_object_t *tio_error_move_from_raised(void)
{
	tio_object_t *e = raised;

	if (e) {
		raised = NULL;
		pthread_setspecific(raised_key, NULL);
		raised_key_set = 0;
	}
	return e;
}

tio_object_t *tio_error_peek_raised(void)
{
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

static int vraise(const char *kind, tio_object_t *cause, const char *fmt, va_list ap)
{
	tio_object_t *err;
	char *msg = NULL, *bt = NULL;
	int len;

	len = vasprintf(&msg, fmt, ap);
	if (len < 0)
		return tio__oom();
	if (tio_backtrace(2, &bt))
		bt = NULL;
	if (error_alloc(kind, strlen(kind), msg, (size_t)len, bt, bt ? strlen(bt) : 0,
			cause, NULL, &err)) {
		free(bt);
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
