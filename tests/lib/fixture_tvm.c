// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A module built the TVM FFI way: against the TVM FFI C ABI only
 * (tvmffi_abi.h stands in for tvm/ffi/c_api.h; no tensorio header), linked
 * with -ltvm_ffi, raising and catching errors with the TVMFFI* entry
 * points. Built as is, and with -DFIXTURE_BIN=<variant> carrying a
 * __tvm_ffi__library_bin (an import tree).
 */
#include <stdio.h>
#include <string.h>

#include "tvmffi_abi.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT void *__tvm_ffi__library_ctx;

static void set_int(TVMFFIAny *ret, int64_t v)
{
	ret->type_index = kTVMFFIInt;
	ret->zero_padding = 0;
	ret->v_int64 = v;
}

/* raise(): raises a ValueError the TVM way. */
EXPORT int __tvm_ffi_raise(void *self, const TVMFFIAny *args, int32_t nargs, TVMFFIAny *ret)
{
	(void)self, (void)args, (void)nargs, (void)ret;
	TVMFFIErrorSetRaisedFromCStr("ValueError", "raised the TVM way");
	return -1;
}

/* raise_parts(): the message in parts, NULL parts skipped. */
EXPORT int __tvm_ffi_raise_parts(void *self, const TVMFFIAny *args, int32_t nargs,
				 TVMFFIAny *ret)
{
	const char *parts[] = { "argument 1 of ", NULL, "f(x)", ": bad" };

	(void)self, (void)args, (void)nargs, (void)ret;
	TVMFFIErrorSetRaisedFromCStrParts("TypeError", parts, 4);
	return -1;
}

/*
 * catch(f): calls f, which must fail; takes its error with
 * TVMFFIErrorMoveFromRaised and returns "<kind>: <message>" read from the
 * error cell, with the cause's kind appended when there is one.
 */
EXPORT int __tvm_ffi_catch(void *self, const TVMFFIAny *args, int32_t nargs, TVMFFIAny *ret)
{
	TVMFFIAny none = { .type_index = kTVMFFINone };
	const TVMFFIErrorCell *cell;
	TVMFFIObjectHandle err = NULL;
	TVMFFIByteArray text;
	char buf[256];
	int n;

	(void)self;
	if (nargs != 1 || args[0].type_index != kTVMFFIFunction) {
		TVMFFIErrorSetRaisedFromCStr("TypeError", "catch(f) takes a Function");
		return -1;
	}
	if (TVMFFIFunctionCall(args[0].v_obj, NULL, 0, &none) == 0) {
		TVMFFIErrorSetRaisedFromCStr("RuntimeError", "f did not fail");
		return -1;
	}
	TVMFFIErrorMoveFromRaised(&err);
	if (!err) {
		TVMFFIErrorSetRaisedFromCStr("RuntimeError", "nothing was raised");
		return -1;
	}
	cell = (const TVMFFIErrorCell *)((TVMFFIObject *)err + 1);
	n = snprintf(buf, sizeof(buf), "%.*s: %.*s", (int)cell->kind.size, cell->kind.data,
		     (int)cell->message.size, cell->message.data);
	if (cell->cause_chain) {
		const TVMFFIErrorCell *c =
			(const TVMFFIErrorCell *)((TVMFFIObject *)cell->cause_chain + 1);

		n += snprintf(buf + n, sizeof(buf) - (size_t)n, " (cause %.*s)",
			      (int)c->kind.size, c->kind.data);
	}
	TVMFFIObjectDecRef(err);
	text.data = buf;
	text.size = (size_t)n;
	return TVMFFIStringFromByteArray(&text, ret);
}

/* _hidden() -> 7: found as "_hidden", as TVM FFI's loader finds it. */
EXPORT int __tvm_ffi__hidden(void *self, const TVMFFIAny *args, int32_t nargs, TVMFFIAny *ret)
{
	(void)self, (void)args, (void)nargs;
	set_int(ret, 7);
	return 0;
}

/* A metadata getter: not a function of the module. */
EXPORT int __tvm_ffi__metadata_raise(void *self, const TVMFFIAny *args, int32_t nargs,
				     TVMFFIAny *ret)
{
	(void)self, (void)args, (void)nargs;
	set_int(ret, 0);
	return 0;
}

/* ctx() -> whether the loader set __tvm_ffi__library_ctx */
EXPORT int __tvm_ffi_ctx(void *self, const TVMFFIAny *args, int32_t nargs, TVMFFIAny *ret)
{
	(void)self, (void)args, (void)nargs;
	set_int(ret, __tvm_ffi__library_ctx != NULL);
	return 0;
}

/* Set by the loader when registered as a context symbol. */
EXPORT void *tvmtest_context;

/* context() -> tvmtest_context, an opaque pointer */
EXPORT int __tvm_ffi_context(void *self, const TVMFFIAny *args, int32_t nargs, TVMFFIAny *ret)
{
	(void)self, (void)args, (void)nargs;
	ret->type_index = tvmtest_context ? kTVMFFIOpaquePtr : kTVMFFINone;
	ret->zero_padding = 0;
	ret->v_ptr = tvmtest_context;
	return 0;
}

/* via_imports(name, x) -> name(x), found from the library context. */
EXPORT int __tvm_ffi_via_imports(void *self, const TVMFFIAny *args, int32_t nargs,
				 TVMFFIAny *ret)
{
	TVMFFIObjectHandle f;

	(void)self;
	if (nargs != 2 || args[0].type_index != kTVMFFIRawStr) {
		TVMFFIErrorSetRaisedFromCStr("TypeError", "via_imports(name, x)");
		return -1;
	}
	if (TVMFFIEnvModLookupFromImports(__tvm_ffi__library_ctx, args[0].v_c_str, &f))
		return -1;
	return TVMFFIFunctionCall(f, (TVMFFIAny *)&args[1], 1, ret);	/* f is borrowed */
}

/*
 * strides(t) -> t.strides[ndim - 1], read from a Tensor object at the TVM
 * FFI offsets; fails when the strides are NULL (as TVM FFI's strides()).
 */
EXPORT int __tvm_ffi_strides(void *self, const TVMFFIAny *args, int32_t nargs, TVMFFIAny *ret)
{
	const DLTensor *t;

	(void)self;
	if (nargs != 1 || args[0].type_index != kTVMFFITensor) {
		TVMFFIErrorSetRaisedFromCStr("TypeError", "strides(Tensor)");
		return -1;
	}
	t = (const DLTensor *)((TVMFFIObject *)args[0].v_obj + 1);
	if (t->ndim > 0 && !t->strides) {
		TVMFFIErrorSetRaisedFromCStr("ValueError", "Tensor without strides");
		return -1;
	}
	set_int(ret, t->ndim ? t->strides[t->ndim - 1] : 0);
	return 0;
}

static int64_t shape_2x3[2] = { 2, 3 };
static float data_2x3[6];

static void no_delete(DLManagedTensor *self)
{
	(void)self;
}

/* make() -> a 2x3 Tensor made by TVMFFITensorFromDLPack from a compact tensor. */
EXPORT int __tvm_ffi_make(void *self, const TVMFFIAny *args, int32_t nargs, TVMFFIAny *ret)
{
	static DLManagedTensor mt;
	TVMFFIObjectHandle t;

	(void)self, (void)args, (void)nargs;
	mt.dl_tensor.data = data_2x3;
	mt.dl_tensor.device.device_type = kDLCPU;
	mt.dl_tensor.ndim = 2;
	mt.dl_tensor.dtype.code = kDLFloat;
	mt.dl_tensor.dtype.bits = 32;
	mt.dl_tensor.dtype.lanes = 1;
	mt.dl_tensor.shape = shape_2x3;
	mt.dl_tensor.strides = NULL;
	mt.deleter = no_delete;
	if (TVMFFITensorFromDLPack(&mt, 0, 1, &t))
		return -1;
	ret->type_index = kTVMFFITensor;
	ret->zero_padding = 0;
	ret->v_obj = t;
	return 0;
}

#ifdef FIXTURE_BIN
/*
 * The import tree: module 0 is this library ("_lib") and imports module 1,
 * of kind "tiotest", whose bytes are a path the test's loader opens.
 * Variants: 1 good, 2 an unknown kind, 3 a size past the symbol's end,
 * 4 an import cycle.
 */
#define PATH FIXTURE_DIR "/fixture_module.so"
struct __attribute__((packed)) blob {
	uint64_t nbytes;
	uint64_t nptr, ptr[3];
	uint64_t nchild, child[2];
	uint64_t k0len;
	char k0[4];
	uint64_t k1len;
	char k1[7];
	uint64_t plen;
	char path[sizeof(PATH) - 1];
};

#if FIXTURE_BIN == 2
#define KIND "nokind!"
#else
#define KIND "tiotest"
#endif
#if FIXTURE_BIN == 3
#define NBYTES (UINT64_C(1) << 40)
#else
#define NBYTES (sizeof(struct blob) - 8)
#endif
#if FIXTURE_BIN == 4
#define EDGES { 0, 1, 2 }, 2, { 1, 0 }
#else
#define EDGES { 0, 1, 1 }, 2, { 1, 1 }
#endif

EXPORT const struct blob __tvm_ffi__library_bin = {
	NBYTES, 3, EDGES, 4, "_lib", 7, KIND, sizeof(PATH) - 1, PATH,
};
#endif
