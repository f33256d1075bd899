// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The device objects and operations in the FFI: types tio.Buffer and
 * tio.Stream with reflected fields, and global functions (tio.buffer.alloc,
 * tio.stream.signal, ...) that a caller knowing only the FFI can drive the
 * driver with. The functions that map to one driver command carry that
 * encoding (struct tio_drv_fn), which batch.c uses to turn calls into
 * command records.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <tensorio/error.h>
#include <tensorio/function.h>
#include <tensorio/string.h>
#include <tensorio/type.h>

#include "dev/dev_internal.h"

static pthread_once_t tio_dev_types_once = PTHREAD_ONCE_INIT;
static int32_t tio_dev_type_buffer = -1;	/* written once, under the once */
static int32_t tio_dev_type_stream = -1;

static void tio_dev_field(int32_t type, const char *name, const char *doc,
			  size_t offset, size_t size)
{
	tio_field_info_t f;

	memset(&f, 0, sizeof(f));
	f.struct_size = sizeof(f);
	f.name = name;
	f.doc = doc;
	f.offset = (int64_t)offset;
	f.size = (int64_t)size;
	f.field_type_index = TIO_TYPE_INT;
	if (tio_type_register_field(type, &f))
		tio_error_clear();	/* already registered: keep going */
}

static void tio_dev_types_register(void)
{
	int32_t b, s;

	if (tio_type_register("tio.Buffer", TIO_TYPE_OBJECT, &b) ||
	    tio_type_register("tio.Stream", TIO_TYPE_OBJECT, &s))
		return;
	tio_dev_field(b, "handle", "the backend's buffer handle",
		      offsetof(struct tio_buffer, handle), sizeof(int64_t));
	tio_dev_field(b, "kind", "TIO_BUF_KIND_* (1 alloc, 2 user, 3 import)",
		      offsetof(struct tio_buffer, kind), sizeof(int64_t));
	tio_dev_field(b, "size", "size in bytes",
		      offsetof(struct tio_buffer, size), sizeof(int64_t));
	tio_dev_field(s, "handle", "the backend's stream handle",
		      offsetof(struct tio_stream, handle), sizeof(int64_t));
	tio_dev_field(s, "context", "the timeline's dma_fence context",
		      offsetof(struct tio_stream, context), sizeof(int64_t));
	tio_type_set_doc(b, "a tensorio buffer (pinned memory, dma-buf)");
	tio_type_set_doc(s, "a tensorio stream (fence timeline)");
	tio_error_clear();
	__atomic_store_n(&tio_dev_type_buffer, b, __ATOMIC_RELEASE);
	__atomic_store_n(&tio_dev_type_stream, s, __ATOMIC_RELEASE);
}

static int32_t tio_dev_type(int32_t *which, const char *name)
{
	int32_t t;

	pthread_once(&tio_dev_types_once, tio_dev_types_register);
	t = __atomic_load_n(which, __ATOMIC_ACQUIRE);
	if (t < 0)
		tio_raise_errno(ENOMEM, "registering the FFI type %s", name);
	return t;
}

/** tio_buffer_type_index() - tio.Buffer's type index, or -1 with an error raised */
int32_t tio_buffer_type_index(void)
{
	return tio_dev_type(&tio_dev_type_buffer, "tio.Buffer");
}

/** tio_stream_type_index() - tio.Stream's type index, or -1 with an error raised */
int32_t tio_stream_type_index(void)
{
	return tio_dev_type(&tio_dev_type_stream, "tio.Stream");
}

/* Arguments. */
static int arg_count(const struct tio_drv_fn *fn, int32_t nargs, int32_t lo, int32_t hi)
{
	if (nargs < lo || nargs > hi)
		return tio_raise_errno(EINVAL, "%s takes %d to %d arguments, got %d",
				       fn->name, lo, hi, nargs);
	return 0;
}

static int arg_int(const struct tio_drv_fn *fn, const tio_any_t *args, int32_t nargs,
		   int32_t i, int64_t dflt, int64_t *out)
{
	if (i >= nargs) {
		*out = dflt;
		return 0;
	}
	if (tio_any_to_int(&args[i], out))
		return tio_raise_errno(EINVAL, "%s: argument %d must be an int",
				       fn->name, i + 1);
	return 0;
}

static int arg_obj(const struct tio_drv_fn *fn, const tio_any_t *args, int32_t i,
		   int32_t type, const char *what, tio_object_t **keep)
{
	tio_object_t *o;

	if (type < 0 || tio_any_to_object(&args[i], type, &o))
		return tio_raise_errno(EINVAL, "%s: argument %d must be a %s",
				       fn->name, i + 1, what);
	*keep = o;
	return 0;
}

#define BUF_ARG(i, k) \
	arg_obj(fn, args, i, tio_buffer_type_index(), "tio.Buffer", &keep[k])
#define STREAM_ARG(i, k) \
	arg_obj(fn, args, i, tio_stream_type_index(), "tio.Stream", &keep[k])
#define HANDLE(k) ((uint32_t)((struct tio_buffer *)keep[k])->handle)
#define SHANDLE(k) ((uint32_t)((struct tio_stream *)keep[k])->handle)

static const struct tio_drv_fn drv_fns[];
#define FN(n) (&drv_fns[n])

static int enc_info(const tio_any_t *args, int32_t nargs, void *p, tio_object_t **keep)
{
	(void)args; (void)p; (void)keep;
	return arg_count(FN(0), nargs, 0, 0);
}

static int enc_buf_alloc(const tio_any_t *args, int32_t nargs, void *p, tio_object_t **keep)
{
	const struct tio_drv_fn *fn = FN(1);
	struct tio_buf_alloc *a = p;
	int64_t v;

	(void)keep;
	if (arg_count(fn, nargs, 1, 1) || arg_int(fn, args, nargs, 0, 0, &v))
		return -1;
	if (v <= 0)
		return tio_raise_errno(EINVAL, "%s: size must be positive", fn->name);
	a->size = (uint64_t)v;
	return 0;
}

static int enc_buf_import(const tio_any_t *args, int32_t nargs, void *p, tio_object_t **keep)
{
	const struct tio_drv_fn *fn = FN(2);
	struct tio_buf_import *a = p;
	int64_t v;

	(void)keep;
	if (arg_count(fn, nargs, 1, 1) || arg_int(fn, args, nargs, 0, 0, &v))
		return -1;
	a->fd = (int32_t)v;
	return 0;
}

static int enc_buf_export(const tio_any_t *args, int32_t nargs, void *p, tio_object_t **keep)
{
	const struct tio_drv_fn *fn = FN(3);
	struct tio_buf_export *a = p;
	int64_t v;

	if (arg_count(fn, nargs, 1, 2) || BUF_ARG(0, 0) ||
	    arg_int(fn, args, nargs, 1, TIO_EXPORT_F_CLOEXEC, &v))
		return -1;
	a->handle = HANDLE(0);
	a->flags = (uint32_t)v;
	return 0;
}

static int enc_buf_info(const tio_any_t *args, int32_t nargs, void *p, tio_object_t **keep)
{
	const struct tio_drv_fn *fn = FN(4);
	struct tio_buf_info *a = p;

	if (arg_count(fn, nargs, 1, 1) || BUF_ARG(0, 0))
		return -1;
	a->handle = HANDLE(0);
	return 0;
}

static int enc_buf_attach(const tio_any_t *args, int32_t nargs, void *p, tio_object_t **keep)
{
	const struct tio_drv_fn *fn = FN(5);
	struct tio_buf_attach *a = p;
	int64_t seqno, w;

	if (arg_count(fn, nargs, 3, 4) || BUF_ARG(0, 0) || STREAM_ARG(1, 1) ||
	    arg_int(fn, args, nargs, 2, 0, &seqno) ||
	    arg_int(fn, args, nargs, 3, 0, &w))
		return -1;
	a->handle = HANDLE(0);
	a->stream = SHANDLE(1);
	a->seqno = (uint64_t)seqno;
	a->flags = w ? TIO_RESV_F_WRITE : 0;
	return 0;
}

static int enc_buf_wait(const tio_any_t *args, int32_t nargs, void *p, tio_object_t **keep)
{
	const struct tio_drv_fn *fn = FN(6);
	struct tio_buf_wait *a = p;
	int64_t t, w;

	if (arg_count(fn, nargs, 1, 3) || BUF_ARG(0, 0) ||
	    arg_int(fn, args, nargs, 1, -1, &t) || arg_int(fn, args, nargs, 2, 0, &w))
		return -1;
	a->handle = HANDLE(0);
	a->timeout_ns = t;
	a->flags = w ? TIO_RESV_F_WRITE : 0;
	return 0;
}

static int enc_stream_create(const tio_any_t *args, int32_t nargs, void *p,
			     tio_object_t **keep)
{
	(void)args; (void)p; (void)keep;
	return arg_count(FN(7), nargs, 0, 0);
}

static int enc_emit(const tio_any_t *args, int32_t nargs, void *p, tio_object_t **keep)
{
	const struct tio_drv_fn *fn = FN(8);
	struct tio_fence_emit *a = p;

	if (arg_count(fn, nargs, 1, 1) || STREAM_ARG(0, 0))
		return -1;
	a->stream = SHANDLE(0);
	return 0;
}

static int enc_signal(const tio_any_t *args, int32_t nargs, void *p, tio_object_t **keep)
{
	const struct tio_drv_fn *fn = FN(9);
	struct tio_fence_signal *a = p;
	int64_t seqno, err;

	if (arg_count(fn, nargs, 2, 3) || STREAM_ARG(0, 0) ||
	    arg_int(fn, args, nargs, 1, 0, &seqno) ||
	    arg_int(fn, args, nargs, 2, 0, &err))
		return -1;
	if (err > 0 || err < -4095)
		return tio_raise_errno(EINVAL, "%s: error must be 0 or a negative errno",
				       fn->name);
	a->stream = SHANDLE(0);
	a->seqno = (uint64_t)seqno;
	a->error = (int32_t)err;
	return 0;
}

static int enc_wait(const tio_any_t *args, int32_t nargs, void *p, tio_object_t **keep)
{
	const struct tio_drv_fn *fn = FN(10);
	struct tio_fence_wait *a = p;
	int64_t seqno, t;

	if (arg_count(fn, nargs, 2, 3) || STREAM_ARG(0, 0) ||
	    arg_int(fn, args, nargs, 1, 0, &seqno) ||
	    arg_int(fn, args, nargs, 2, -1, &t))
		return -1;
	a->stream = SHANDLE(0);
	a->seqno = (uint64_t)seqno;
	a->timeout_ns = t;
	return 0;
}

static int enc_fexport(const tio_any_t *args, int32_t nargs, void *p, tio_object_t **keep)
{
	const struct tio_drv_fn *fn = FN(11);
	struct tio_fence_export *a = p;
	int64_t seqno;

	if (arg_count(fn, nargs, 2, 2) || STREAM_ARG(0, 0) ||
	    arg_int(fn, args, nargs, 1, 0, &seqno))
		return -1;
	a->stream = SHANDLE(0);
	a->seqno = (uint64_t)seqno;
	a->flags = TIO_EXPORT_F_CLOEXEC;
	return 0;
}

static int enc_fimport(const tio_any_t *args, int32_t nargs, void *p, tio_object_t **keep)
{
	const struct tio_drv_fn *fn = FN(12);
	struct tio_fence_import *a = p;
	int64_t fd;

	if (arg_count(fn, nargs, 2, 2) || STREAM_ARG(0, 0) ||
	    arg_int(fn, args, nargs, 1, 0, &fd))
		return -1;
	a->stream = SHANDLE(0);
	a->fd = (int32_t)fd;
	return 0;
}

/* Indices are used by FN(): keep the order. */
static const struct tio_drv_fn drv_fns[] = {
	{ "tio.driver.info", TIO_IOC_INFO, enc_info },
	{ "tio.buffer.alloc", TIO_IOC_BUF_ALLOC, enc_buf_alloc },
	{ "tio.buffer.import", TIO_IOC_BUF_IMPORT, enc_buf_import },
	{ "tio.buffer.export", TIO_IOC_BUF_EXPORT, enc_buf_export },
	{ "tio.buffer.info", TIO_IOC_BUF_INFO, enc_buf_info },
	{ "tio.buffer.attach_fence", TIO_IOC_BUF_ATTACH_FENCE, enc_buf_attach },
	{ "tio.buffer.wait", TIO_IOC_BUF_WAIT, enc_buf_wait },
	{ "tio.stream.create", TIO_IOC_STREAM_CREATE, enc_stream_create },
	{ "tio.stream.emit", TIO_IOC_FENCE_EMIT, enc_emit },
	{ "tio.stream.signal", TIO_IOC_FENCE_SIGNAL, enc_signal },
	{ "tio.stream.wait", TIO_IOC_FENCE_WAIT, enc_wait },
	{ "tio.stream.export_sync_file", TIO_IOC_FENCE_EXPORT, enc_fexport },
	{ "tio.stream.import_sync_file", TIO_IOC_FENCE_IMPORT, enc_fimport },
};

/**
 * tio_cmd_decode() - the FFI value of a completed command
 * @ctx: the context
 * @c: the record, its outputs written back
 * @ret: the value (owned): a new Buffer or Stream object for the commands
 *	that create one (which then owns the handle), an int for those that
 *	produce one, None otherwise
 *
 * Return: 0, or -1 with an error raised (the handle is released then).
 */
int tio_cmd_decode(struct tio_ctx *ctx, const struct tio_cmd *c, tio_any_t *ret)
{
	const void *p = c->payload.bytes;
	tio_buffer_t *buf;
	tio_stream_t *s;
	uint64_t pg = ctx->page_size;

	*ret = tio_any_none();
	switch (c->op) {
	case TIO_IOC_INFO:
		*ret = tio_any_int((int64_t)((const struct tio_info *)p)->features);
		return 0;
	case TIO_IOC_BUF_ALLOC: {
		const struct tio_buf_alloc *a = p;

		if (tio_buffer_wrap(ctx, a->handle, TIO_BUF_KIND_ALLOC,
				    (a->size + pg - 1) & ~(pg - 1), a->mmap_offset,
				    NULL, &buf))
			return -1;
		*ret = tio_any_object(&buf->header);
		return 0;
	}
	case TIO_IOC_BUF_PIN_USER: {
		const struct tio_buf_pin *a = p;

		if (tio_buffer_wrap(ctx, a->handle, TIO_BUF_KIND_USER, a->size,
				    a->mmap_offset, (void *)(uintptr_t)a->addr, &buf))
			return -1;
		*ret = tio_any_object(&buf->header);
		return 0;
	}
	case TIO_IOC_BUF_IMPORT: {
		const struct tio_buf_import *a = p;

		if (tio_buffer_wrap(ctx, a->handle, TIO_BUF_KIND_IMPORT, a->size,
				    a->mmap_offset, NULL, &buf))
			return -1;
		*ret = tio_any_object(&buf->header);
		return 0;
	}
	case TIO_IOC_STREAM_CREATE:
		if (tio_stream_wrap(ctx, p, &s))
			return -1;
		*ret = tio_any_object(&s->header);
		return 0;
	case TIO_IOC_BUF_INFO:
		*ret = tio_any_int((int64_t)((const struct tio_buf_info *)p)->size);
		return 0;
	case TIO_IOC_BUF_EXPORT:
		*ret = tio_any_int(((const struct tio_buf_export *)p)->fd);
		return 0;
	case TIO_IOC_BUF_WAIT:
		*ret = tio_any_int(((const struct tio_buf_wait *)p)->status);
		return 0;
	case TIO_IOC_FENCE_EMIT:
		*ret = tio_any_int((int64_t)((const struct tio_fence_emit *)p)->seqno);
		return 0;
	case TIO_IOC_FENCE_WAIT:
		*ret = tio_any_int(((const struct tio_fence_wait *)p)->status);
		return 0;
	case TIO_IOC_FENCE_EXPORT:
		*ret = tio_any_int(((const struct tio_fence_export *)p)->fd);
		return 0;
	case TIO_IOC_FENCE_IMPORT:
		*ret = tio_any_int((int64_t)((const struct tio_fence_import *)p)->seqno);
		return 0;
	}
	return 0;
}

/* The safe call of every driver function: encode, run, decode. */
static int tio_drv_call(void *self, const tio_any_t *args, int32_t nargs,
			tio_any_t *ret)
{
	const struct tio_drv_fn *fn = self;
	tio_object_t *keep[2] = { NULL, NULL };
	struct tio_ctx *ctx = tio_ctx_get();
	struct tio_cmd c;

	if (!ctx)
		return -1;
	memset(&c, 0, sizeof(c));
	c.op = fn->op;
	if (fn->encode(args, nargs, c.payload.bytes, keep))
		return -1;
	if (tio_exec(ctx, fn->op, c.payload.bytes))
		return -1;
	return tio_cmd_decode(ctx, &c, ret);
}

/**
 * tio_drv_fn_of() - the driver encoding of a Function, if it has one
 * @func: a Function
 *
 * Return: the encoding, or NULL for any other function.
 */
const struct tio_drv_fn *tio_drv_fn_of(tio_object_t *func)
{
	const tio_func_obj_t *f = (const tio_func_obj_t *)func;

	return f->call == tio_drv_call ? f->self : NULL;
}

/* Plain userspace functions. */
static int fn_signalled(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	tio_object_t *o;
	const volatile uint64_t *w;

	(void)self;
	if (nargs != 1 || tio_any_to_object(&args[0], tio_stream_type_index(), &o))
		return tio_raise_errno(EINVAL, "tio.stream.signalled takes one tio.Stream");
	w = tio_stream_seqno_word((tio_stream_t *)o);
	if (!w)
		return -1;
	*ret = tio_any_int((int64_t)__atomic_load_n(w, __ATOMIC_ACQUIRE));
	return 0;
}

static int fn_backend(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	const char *name;

	(void)self; (void)args;
	if (nargs)
		return tio_raise_errno(EINVAL, "tio.backend takes no arguments");
	name = tio_backend_name();
	if (!name)
		return -1;
	return tio_str_from_cstr(name, ret);
}

static int fn_tensor(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	tio_object_t *o, *t;

	(void)self;
	if (nargs != 1 || tio_any_to_object(&args[0], tio_buffer_type_index(), &o))
		return tio_raise_errno(EINVAL, "tio.buffer.tensor takes one tio.Buffer");
	if (tio_buffer_tensor((tio_buffer_t *)o, NULL, &t))
		return -1;
	*ret = tio_any_object(t);
	return 0;
}

static const struct {
	const char *name;
	tio_safe_call_t call;
} user_fns[] = {
	{ "tio.stream.signalled", fn_signalled },
	{ "tio.backend", fn_backend },
	{ "tio.buffer.tensor", fn_tensor },
};

static int tio_register_one(const char *name, tio_safe_call_t call, void *self)
{
	tio_object_t *f;
	int ret;

	if (tio_func_new(call, self, NULL, &f))
		return -1;
	ret = tio_func_set_global(name, f, 1);
	tio_object_decref(f);
	return ret;
}

static pthread_once_t tio_dev_functions_once = PTHREAD_ONCE_INIT;

static void tio_dev_functions_init(void)
{
	size_t i;

	for (i = 0; i < sizeof(drv_fns) / sizeof(drv_fns[0]); i++)
		tio_register_one(drv_fns[i].name, tio_drv_call, (void *)&drv_fns[i]);
	for (i = 0; i < sizeof(user_fns) / sizeof(user_fns[0]); i++)
		tio_register_one(user_fns[i].name, user_fns[i].call, NULL);
	tio_error_clear();
}

/**
 * tio_device_register_globals() - register the tio.* global functions
 *
 * Done once per process, on the first call of this function or the first
 * use of the device API (tio_init()). Not done when the library loads, so
 * that a program using only the FFI core sees no extra globals.
 *
 * Return: 0.
 */
int tio_device_register_globals(void)
{
	pthread_once(&tio_dev_functions_once, tio_dev_functions_init);
	return 0;
}
