// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * TVM FFI entry points on libtensorio: version, objects, functions,
 * errors, strings, dtypes, DLPack. Each is a thin call into libtensorio,
 * so that a module built against the TVM FFI header raises into and
 * catches from the same thread-local error as tio_ code does.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "compat.h"

#define TIO_UNLIKELY_(x) __builtin_expect(!!(x), 0)

int tvmffi__cname(struct cname *c, const TVMFFIByteArray *b)
{
	if (!b || (!b->data && b->size))
		return tio_error_raise("ValueError", "NULL byte array");
	if (b->size && memchr(b->data, 0, b->size))
		return tio_error_raise("ValueError", "name holds a NUL byte");
	c->s = b->size < sizeof(c->buf) ? c->buf : malloc(b->size + 1);
	if (!c->s)
		return tio_error_raise("MemoryError", "out of memory");
	if (b->size)
		memcpy(c->s, b->data, b->size);
	c->s[b->size] = '\0';
	return 0;
}

void TVMFFIGetVersion(TVMFFIVersion *out_version)
{
	if (!out_version)
		return;
	out_version->major = TVM_FFI_VERSION_MAJOR;
	out_version->minor = TVM_FFI_VERSION_MINOR;
	out_version->patch = TVM_FFI_VERSION_PATCH;
}

int TVMFFIObjectIncRef(TVMFFIObjectHandle obj)
{
	tio_object_incref(obj);
	return 0;
}

int TVMFFIObjectDecRef(TVMFFIObjectHandle obj)
{
	tio_object_decref(obj);
	return 0;
}

/* An opaque object: the header, the cell { handle }, then its deleter. */
struct opaque_obj {
	tio_object_t header;
	void *handle;
	void (*deleter)(void *handle);
};

static void opaque_finalize(void *self)
{
	struct opaque_obj *o = self;

	if (o->deleter)
		o->deleter(o->handle);
}

int TVMFFIObjectCreateOpaque(void *handle, int32_t type_index, void (*deleter)(void *handle),
			     TVMFFIObjectHandle *out)
{
	struct opaque_obj *o;

	if (!out)
		return tio_error_raise("ValueError", "NULL output");
	if (type_index != kTVMFFIOpaquePyObject)
		return tio_error_raise("RuntimeError",
				       "Only kTVMFFIOpaquePyObject is supported for now (got %d)",
				       type_index);
	o = tio_object_alloc(sizeof(*o), type_index, opaque_finalize);
	if (!o)
		return -1;
	o->handle = handle;
	o->deleter = deleter;
	*out = o;
	return 0;
}

/*
 * As in TVM FFI, a callback with neither self nor deleter becomes the cell
 * itself and is called with the Function object as its self, by every
 * path: TVMFFIFunctionCall then jumps straight to it, with no trampoline.
 */
int TVMFFIFunctionCreate(void *self, TVMFFISafeCallType safe_call, void (*deleter)(void *self),
			 TVMFFIObjectHandle *out)
{
	tio_func_obj_t *fo;
	tio_object_t *f;

	if (!out)
		return tio_error_raise("ValueError", "NULL output");
	if (tio_func_new((tio_safe_call_t)safe_call, self, deleter, &f))
		return -1;
	if (!self && !deleter) {
		fo = (tio_func_obj_t *)f;
		fo->safe_call = (tio_safe_call_t)safe_call;
		fo->self = f;
	}
	*out = f;
	return 0;
}

/* Lookups are hot: the counted name goes to the registry as it is. */
int TVMFFIFunctionGetGlobal(const TVMFFIByteArray *name, TVMFFIObjectHandle *out)
{
	if (TIO_UNLIKELY_(!name || !out))
		return tio_error_raise("ValueError", "NULL name or output");
	return tio_func_get_global_n(name->data, name->size, (tio_object_t **)out);
}

int TVMFFIFunctionSetGlobal(const TVMFFIByteArray *name, TVMFFIObjectHandle f,
			    int allow_override)
{
	struct cname c;
	int r;

	if (tvmffi__cname(&c, name))
		return -1;
	r = tio_func_set_global(c.s, f, allow_override);
	tvmffi__cname_free(&c);
	return r;
}

/* As TVM FFI: the method's name and Function; its doc and metadata are dropped. */
int TVMFFIFunctionSetGlobalFromMethodInfo(const TVMFFIMethodInfo *method_info,
					  int allow_override)
{
	if (!method_info)
		return tio_error_raise("ValueError", "NULL method info");
	if (method_info->method.type_index != kTVMFFIFunction)
		return tio_any_type_error((const tio_any_t *)&method_info->method, "ffi.Function");
	return TVMFFIFunctionSetGlobal(&method_info->name, method_info->method.v_obj,
				       allow_override);
}

/*
 * The hot path, as in TVM FFI: one jump through the cell. A Function made
 * by libtensorio has a trampoline there that calls its callback with its
 * self; one made by TVMFFIFunctionCreate without self has its callback.
 */
int TVMFFIFunctionCall(TVMFFIObjectHandle func, TVMFFIAny *args, int32_t num_args,
		       TVMFFIAny *result)
{
	const tio_func_obj_t *f = func;

	return f->safe_call(func, (tio_any_t *)args, num_args, (tio_any_t *)result);
}

int TVMFFIAnyViewToOwnedAny(const TVMFFIAny *any_view, TVMFFIAny *out)
{
	if (!any_view || !out)
		return tio_error_raise("ValueError", "NULL value");
	return tio_any_copy((tio_any_t *)out, (const tio_any_t *)any_view);
}

/* The caller reads the cell: the backtrace is made text first. */
void TVMFFIErrorMoveFromRaised(TVMFFIObjectHandle *result)
{
	tio_object_t *e = tio_error_move_from_raised();

	if (!result) {
		tio_object_decref(e);
		return;
	}
	if (e)
		tio_error_backtrace(e);
	*result = e;
}

void TVMFFIErrorSetRaised(TVMFFIObjectHandle error)
{
	tio_error_set_raised(error);
}

static pthread_key_t backtrace_key;	/* the thread's last backtrace text */
static pthread_once_t backtrace_once = PTHREAD_ONCE_INIT;

static void backtrace_key_init(void)
{
	if (pthread_key_create(&backtrace_key, free))
		abort();
}

/*
 * The calling thread's stack in libtensorio's backtrace format, most
 * recent call first; given a file and function, they stand for the
 * caller's frame, as in TVM FFI. The text is the thread's until its next
 * call. cross_ffi_boundary is ignored: the whole stack is given.
 */
const TVMFFIByteArray *TVMFFIBacktrace(const char *filename, int lineno, const char *func,
				       int cross_ffi_boundary)
{
	static __thread TVMFFIByteArray out;
	int here = filename && func;
	char *bt = NULL, *text = NULL;

	(void)cross_ffi_boundary;
	pthread_once(&backtrace_once, backtrace_key_init);
	if (tio_backtrace(here ? 2 : 1, &bt))
		bt = NULL;
	if (here && asprintf(&text, "%s at %s:%d\n%s", func, filename, lineno, bt ? bt : "") < 0)
		text = NULL;
	if (!here) {
		text = bt;
		bt = NULL;
	}
	free(bt);
	free(pthread_getspecific(backtrace_key));
	if (pthread_setspecific(backtrace_key, text)) {
		free(text);
		text = NULL;
	}
	out.data = text ? text : "";
	out.size = text ? strlen(text) : 0;
	return &out;
}

void TVMFFIErrorSetRaisedFromCStr(const char *kind, const char *message)
{
	tio_error_raise(kind ? kind : "RuntimeError", "%s", message ? message : "");
}

void TVMFFIErrorSetRaisedFromCStrParts(const char *kind, const char **message_parts,
				       int32_t num_parts)
{
	size_t len = 0, k;
	char *msg;
	int32_t i;

	for (i = 0; message_parts && i < num_parts; i++)
		if (message_parts[i])
			len += strlen(message_parts[i]);
	msg = malloc(len + 1);
	if (!msg) {
		tio_error_raise("MemoryError", "out of memory");
		return;
	}
	for (i = 0, len = 0; message_parts && i < num_parts; i++) {
		if (!message_parts[i])
			continue;
		k = strlen(message_parts[i]);
		memcpy(msg + len, message_parts[i], k);
		len += k;
	}
	msg[len] = '\0';
	TVMFFIErrorSetRaisedFromCStr(kind, msg);
	free(msg);
}

int TVMFFIErrorCreate(const TVMFFIByteArray *kind, const TVMFFIByteArray *message,
		      const TVMFFIByteArray *backtrace, TVMFFIObjectHandle *out)
{
	return TVMFFIErrorCreateWithCauseAndExtraContext(kind, message, backtrace, NULL, NULL,
							 out);
}

int TVMFFIErrorCreateWithCauseAndExtraContext(const TVMFFIByteArray *kind,
					      const TVMFFIByteArray *message,
					      const TVMFFIByteArray *backtrace,
					      TVMFFIObjectHandle cause_chain,
					      TVMFFIObjectHandle extra_context,
					      TVMFFIObjectHandle *out)
{
	tio_object_t *e;

	if (cause_chain && ((tio_object_t *)cause_chain)->type_index != TIO_TYPE_ERROR)
		return -1;
	if (tio_error_create((const tio_byte_array_t *)kind, (const tio_byte_array_t *)message,
			     (const tio_byte_array_t *)backtrace, cause_chain, extra_context, &e))
		return -1;
	*out = e;
	return 0;
}

static int from_byte_array(const TVMFFIByteArray *input, TVMFFIAny *out,
			   int (*make)(const char *, size_t, tio_any_t *))
{
	if (!input || !out || (!input->data && input->size))
		return tio_error_raise("ValueError", "NULL byte array");
	return make(input->data, input->size, (tio_any_t *)out);
}

static int bytes_new(const char *data, size_t len, tio_any_t *out)
{
	return tio_bytes_new(data, len, out);
}

int TVMFFIStringFromByteArray(const TVMFFIByteArray *input, TVMFFIAny *out)
{
	return from_byte_array(input, out, tio_str_new);
}

int TVMFFIBytesFromByteArray(const TVMFFIByteArray *input, TVMFFIAny *out)
{
	return from_byte_array(input, out, bytes_new);
}

int TVMFFIDataTypeFromString(const TVMFFIByteArray *str, DLDataType *out)
{
	struct cname c;
	int r;

	if (!out)
		return tio_error_raise("ValueError", "NULL output");
	if (tvmffi__cname(&c, str))
		return -1;
	r = tio_dtype_parse(c.s, out);
	tvmffi__cname_free(&c);
	return r;
}

int TVMFFIDataTypeToString(const DLDataType *dtype, TVMFFIAny *out)
{
	char buf[TIO_DTYPE_STR_MAX];
	int n;

	if (!dtype || !out)
		return tio_error_raise("ValueError", "NULL dtype or output");
	n = tio_dtype_print(*dtype, buf, sizeof(buf));
	if (n < 0)
		return -1;
	return tio_str_new(buf, (size_t)n, (tio_any_t *)out);
}

int TVMFFITensorFromDLPack(DLManagedTensor *from, int32_t require_alignment,
			   int32_t require_contiguous, TVMFFIObjectHandle *out)
{
	return tio_tensor_from_dlpack(from, require_alignment, require_contiguous,
				      (tio_object_t **)out);
}

int TVMFFITensorToDLPack(TVMFFIObjectHandle from, DLManagedTensor **out)
{
	return tio_tensor_to_dlpack(from, out);
}

int TVMFFITensorFromDLPackVersioned(DLManagedTensorVersioned *from, int32_t require_alignment,
				    int32_t require_contiguous, TVMFFIObjectHandle *out)
{
	return tio_tensor_from_dlpack_versioned(from, require_alignment, require_contiguous,
						(tio_object_t **)out);
}

int TVMFFITensorToDLPackVersioned(TVMFFIObjectHandle from, DLManagedTensorVersioned **out)
{
	return tio_tensor_to_dlpack_versioned(from, out);
}

#define VIEW_MAX_NDIM 64	/* libtensorio's Tensors' limit */

/* A view's managed tensor: the DLTensor, then its shape and strides. */
struct view_mt {
	DLManagedTensorVersioned mt;
	int64_t dims[];
};

static void view_deleter(DLManagedTensorVersioned *mt)
{
	tio_object_decref(mt->manager_ctx);
	free(mt);
}

/*
 * As TVM FFI: the prototype as it is (data, dtype, device, offset; not
 * checked against the source: "unsafe"), its shape and strides copied,
 * the source kept alive. The view is read-only when the source is.
 */
int TVMFFITensorCreateUnsafeView(TVMFFIObjectHandle source, const DLTensor *prototype,
				 TVMFFIObjectHandle *out)
{
	tio_any_t a = tio_any_object(source);
	struct view_mt *v;
	int32_t n;

	if (!prototype || !out)
		return tio_error_raise("ValueError", "NULL prototype or output");
	if (!source || ((tio_object_t *)source)->type_index != TIO_TYPE_TENSOR)
		return tio_any_type_error(&a, "ffi.Tensor");
	n = prototype->ndim;
	if (n < 0 || n > VIEW_MAX_NDIM)
		return tio_error_raise("ValueError", "prototype has %d dimensions", n);
	if (n && (!prototype->shape || !prototype->strides))
		return tio_error_raise("ValueError", "prototype without shape or strides");
	v = malloc(sizeof(*v) + sizeof(int64_t) * 2 * (size_t)n);
	if (!v)
		return tio_error_raise("MemoryError", "out of memory");
	memset(&v->mt, 0, sizeof(v->mt));
	v->mt.version.major = TIO_DLPACK_MAJOR;
	v->mt.version.minor = TIO_DLPACK_MINOR;
	v->mt.manager_ctx = source;
	v->mt.deleter = view_deleter;
	v->mt.flags = tio_tensor_is_readonly(source) ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
	v->mt.dl_tensor = *prototype;
	v->mt.dl_tensor.shape = v->dims;
	v->mt.dl_tensor.strides = v->dims + n;
	if (n) {
		memcpy(v->dims, prototype->shape, sizeof(int64_t) * (size_t)n);
		memcpy(v->dims + n, prototype->strides, sizeof(int64_t) * (size_t)n);
	}
	if (tio_tensor_from_dlpack_versioned(&v->mt, 0, 0, (tio_object_t **)out)) {
		free(v);
		return -1;
	}
	tio_object_incref(source);
	return 0;
}
