// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A stand-in for TVM FFI's own libtvm_ffi.so: a second, foreign runtime in
 * the process (built as fixtures/foreign/libtvm_ffi.so). It knows nothing
 * of tensorio: its own thread-local raised error, its own Error, String
 * and Function objects (the TVM FFI layouts, its own deleters, counted),
 * and the entry points fixture_tvm.c and the interop test use, with TVM
 * FFI's semantics: TVMFFIErrorSetRaised takes a reference,
 * TVMFFIErrorMoveFromRaised hands the slot's over, TVMFFIFunctionCall is
 * one jump through the cell. tvmffi_standin_live() counts its objects.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tvmffi_abi.h"

#define EXPORT __attribute__((visibility("default")))

/* What the stand-in writes as the backtrace of the errors it makes. */
#define STANDIN_BACKTRACE "standin.frame at standin.cc:1\n"

static int64_t live;

EXPORT int64_t tvmffi_standin_live(void);
EXPORT int64_t tvmffi_standin_live(void)
{
	return __atomic_load_n(&live, __ATOMIC_RELAXED);
}

static void *obj_new(size_t size, int32_t type_index, void (*deleter)(void *, int))
{
	TVMFFIObject *o = calloc(1, size);

	if (!o)
		return NULL;
	o->combined_ref_count = (UINT64_C(1) << 32) | 1;
	o->type_index = type_index;
	o->deleter = deleter;
	__atomic_fetch_add(&live, 1, __ATOMIC_RELAXED);
	return o;
}

static void obj_free(void *o)
{
	__atomic_fetch_sub(&live, 1, __ATOMIC_RELAXED);
	free(o);
}

static void obj_incref(void *h)
{
	if (h)
		__atomic_fetch_add(&((TVMFFIObject *)h)->combined_ref_count, 1, __ATOMIC_RELAXED);
}

/* TVM FFI's DecRef: the last strong reference, then the last weak one. */
static void obj_decref(void *h)
{
	TVMFFIObject *o = h;
	uint64_t old;

	if (!o)
		return;
	old = __atomic_fetch_sub(&o->combined_ref_count, 1, __ATOMIC_ACQ_REL);
	if ((uint32_t)old != 1)
		return;
	if ((old >> 32) == 1) {
		o->deleter(o, kTVMFFIObjectDeleterFlagBitMaskBoth);
		return;
	}
	o->deleter(o, kTVMFFIObjectDeleterFlagBitMaskStrong);
	old = __atomic_fetch_sub(&o->combined_ref_count, UINT64_C(1) << 32, __ATOMIC_ACQ_REL);
	if ((old >> 32) == 1)
		o->deleter(o, kTVMFFIObjectDeleterFlagBitMaskWeak);
}

EXPORT void TVMFFIGetVersion(TVMFFIVersion *v)
{
	v->major = TVM_FFI_VERSION_MAJOR;
	v->minor = TVM_FFI_VERSION_MINOR;
	v->patch = TVM_FFI_VERSION_PATCH;
}

EXPORT int TVMFFIObjectIncRef(TVMFFIObjectHandle obj)
{
	obj_incref(obj);
	return 0;
}

EXPORT int TVMFFIObjectDecRef(TVMFFIObjectHandle obj)
{
	obj_decref(obj);
	return 0;
}

/* Errors: the header, the cell, then kind, message and backtrace. */
struct error {
	TVMFFIObject header;
	TVMFFIErrorCell cell;
	char text[];
};

static void error_deleter(void *self, int flags)
{
	struct error *e = self;

	if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
		obj_decref(e->cell.cause_chain);
		obj_decref(e->cell.extra_context);
	}
	if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak)
		obj_free(e);
}

static void put(char **p, TVMFFIByteArray *field, const char *s, size_t n)
{
	memcpy(*p, s, n);
	(*p)[n] = '\0';
	field->data = *p;
	field->size = n;
	*p += n + 1;
}

static struct error *error_new(const char *kind, size_t kn, const char *msg, size_t mn,
			       const char *bt, size_t bn)
{
	struct error *e = obj_new(sizeof(*e) + kn + mn + bn + 3, kTVMFFIError, error_deleter);
	char *p;

	if (!e)
		return NULL;
	p = e->text;
	put(&p, &e->cell.kind, kind, kn);
	put(&p, &e->cell.message, msg, mn);
	put(&p, &e->cell.backtrace, bt, bn);
	return e;	/* no update_backtrace: nobody here calls it */
}

/* The thread's raised error, released when the thread exits. */
static __thread void *slot;
static pthread_key_t slot_key;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;

static void slot_exit(void *e)
{
	slot = NULL;
	obj_decref(e);
}

static void slot_key_init(void)
{
	pthread_key_create(&slot_key, slot_exit);
}

/* Takes over @e's reference. */
static void slot_set(void *e)
{
	void *old = slot;

	pthread_once(&slot_once, slot_key_init);
	slot = e;
	pthread_setspecific(slot_key, e);
	obj_decref(old);
}

EXPORT void TVMFFIErrorSetRaised(TVMFFIObjectHandle error)
{
	obj_incref(error);
	slot_set(error);
}

EXPORT void TVMFFIErrorMoveFromRaised(TVMFFIObjectHandle *result)
{
	void *e = slot;

	slot = NULL;
	pthread_setspecific(slot_key, NULL);
	if (result)
		*result = e;
	else
		obj_decref(e);
}

EXPORT void TVMFFIErrorSetRaisedFromCStr(const char *kind, const char *message)
{
	slot_set(error_new(kind, strlen(kind), message, strlen(message), STANDIN_BACKTRACE,
			   strlen(STANDIN_BACKTRACE)));
}

EXPORT void TVMFFIErrorSetRaisedFromCStrParts(const char *kind, const char **parts, int32_t n)
{
	char msg[512];
	size_t len = 0, k;
	int32_t i;

	for (i = 0; i < n; i++) {
		if (!parts[i])
			continue;
		k = strlen(parts[i]);
		if (k > sizeof(msg) - 1 - len)
			k = sizeof(msg) - 1 - len;
		memcpy(msg + len, parts[i], k);
		len += k;
	}
	msg[len] = '\0';
	TVMFFIErrorSetRaisedFromCStr(kind, msg);
}

EXPORT int TVMFFIErrorCreate(const TVMFFIByteArray *kind, const TVMFFIByteArray *message,
			     const TVMFFIByteArray *backtrace, TVMFFIObjectHandle *out)
{
	*out = error_new(kind->data, kind->size, message->data, message->size, backtrace->data,
			 backtrace->size);
	return *out ? 0 : -1;
}

/* Functions: the cell, then the callback's self and deleter. */
struct function {
	TVMFFIObject header;
	TVMFFIFunctionCell cell;
	void *self;
	TVMFFISafeCallType call;
	void (*self_deleter)(void *self);
};

static void function_deleter(void *obj, int flags)
{
	struct function *f = obj;

	if ((flags & kTVMFFIObjectDeleterFlagBitMaskStrong) && f->self_deleter)
		f->self_deleter(f->self);
	if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak)
		obj_free(f);
}

static int with_self(void *obj, const TVMFFIAny *args, int32_t n, TVMFFIAny *ret)
{
	struct function *f = obj;

	return f->call(f->self, args, n, ret);
}

/* As TVM FFI: without self and deleter the callback is the cell itself. */
EXPORT int TVMFFIFunctionCreate(void *self, TVMFFISafeCallType call, void (*deleter)(void *),
				TVMFFIObjectHandle *out)
{
	struct function *f = obj_new(sizeof(*f), kTVMFFIFunction, function_deleter);

	if (!f) {
		TVMFFIErrorSetRaisedFromCStr("MemoryError", "out of memory");
		return -1;
	}
	f->cell.safe_call = self || deleter ? with_self : call;
	f->self = self;
	f->call = call;
	f->self_deleter = deleter;
	*out = f;
	return 0;
}

/* As TVM FFI: a tail call through the cell. */
EXPORT int TVMFFIFunctionCall(TVMFFIObjectHandle func, TVMFFIAny *args, int32_t n,
			      TVMFFIAny *ret)
{
	return ((TVMFFIFunctionCell *)((TVMFFIObject *)func + 1))->safe_call(func, args, n, ret);
}

/* Strings: the header, { data, size }, then the bytes. */
static void str_deleter(void *self, int flags)
{
	if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak)
		obj_free(self);
}

EXPORT int TVMFFIStringFromByteArray(const TVMFFIByteArray *in, TVMFFIAny *out)
{
	TVMFFIObject *s = obj_new(sizeof(*s) + sizeof(TVMFFIByteArray) + in->size + 1,
				  kTVMFFIStr, str_deleter);
	TVMFFIByteArray *b;
	char *p;

	if (!s) {
		TVMFFIErrorSetRaisedFromCStr("MemoryError", "out of memory");
		return -1;
	}
	b = (TVMFFIByteArray *)(s + 1);
	p = (char *)(b + 1);
	memcpy(p, in->data, in->size);
	p[in->size] = '\0';
	b->data = p;
	b->size = in->size;
	out->type_index = kTVMFFIStr;
	out->zero_padding = 0;
	out->v_obj = s;
	return 0;
}

/* Entry points fixture_tvm.c links to but the interop test never calls. */
EXPORT int TVMFFIEnvModLookupFromImports(TVMFFIObjectHandle ctx, const char *name,
					 TVMFFIObjectHandle *out)
{
	(void)ctx, (void)name, (void)out;
	TVMFFIErrorSetRaisedFromCStr("RuntimeError", "the stand-in has no module imports");
	return -1;
}

EXPORT int TVMFFITensorFromDLPack(DLManagedTensor *from, int32_t align, int32_t contiguous,
				  TVMFFIObjectHandle *out)
{
	(void)from, (void)align, (void)contiguous, (void)out;
	TVMFFIErrorSetRaisedFromCStr("RuntimeError", "the stand-in has no Tensors");
	return -1;
}
