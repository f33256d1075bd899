/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The FFI operations timed through the TVM FFI C entry points of any
 * runtime (got with dlsym from a handle), shared by the ffi suite's
 * "tvmffi/..." rows and by tvmffi-peer, so that both run the same loops.
 */
#ifndef TIO_BENCH_TVMFFI_OPS_H
#define TIO_BENCH_TVMFFI_OPS_H

#include <dlfcn.h>

#include "../lib/tvmffi/tvmffi_abi.h"

/* The operations, in the order the peer's table lists them. */
enum tvmffi_op { OP_CALL0, OP_CALL_INT, OP_CALL_DLT, OP_LOOKUP, OP_REFS, OP_STR40,
		 OP_DLPACK, OP_COUNT };

#define TVMFFI_OPS_NOOP_NAME "bench.tvmffi.noop"

struct tvmffi_api {
	int (*create)(void *, TVMFFISafeCallType, void (*)(void *), TVMFFIObjectHandle *);
	int (*call)(TVMFFIObjectHandle, TVMFFIAny *, int32_t, TVMFFIAny *);
	int (*get_global)(const TVMFFIByteArray *, TVMFFIObjectHandle *);
	int (*set_global)(const TVMFFIByteArray *, TVMFFIObjectHandle, int);
	int (*incref)(TVMFFIObjectHandle);
	int (*decref)(TVMFFIObjectHandle);
	int (*str)(const TVMFFIByteArray *, TVMFFIAny *);
	int (*from_dlpack)(DLManagedTensor *, int32_t, int32_t, TVMFFIObjectHandle *);
	TVMFFIObjectHandle f[3];	/* no-op, int -> int, DLTensor* -> ndim */
};

static const TVMFFIByteArray tvmffi_ops_noop_name = {
	TVMFFI_OPS_NOOP_NAME, sizeof(TVMFFI_OPS_NOOP_NAME) - 1
};

static int tvmffi_ops_noop(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *ret)
{
	(void)self, (void)args, (void)n, (void)ret;
	return 0;
}

static int tvmffi_ops_int(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *ret)
{
	(void)self, (void)n;
	if (args[0].type_index != kTVMFFIInt)
		return -1;
	ret->type_index = kTVMFFIInt;
	ret->zero_padding = 0;
	ret->v_int64 = args[0].v_int64 + 1;
	return 0;
}

static int tvmffi_ops_dlt(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *ret)
{
	(void)self, (void)n;
	if (args[0].type_index != kTVMFFIDLTensorPtr)
		return -1;
	ret->type_index = kTVMFFIInt;
	ret->zero_padding = 0;
	ret->v_int64 = ((DLTensor *)args[0].v_ptr)->ndim;
	return 0;
}

static void tvmffi_ops_keep_mt(DLManagedTensor *self)
{
	__asm__ __volatile__("" : : "g"(self) : "memory");
}

#define TVMFFI_OPS_SYM(a, h, f, name) (*(void **)&(a)->f = dlsym(h, name))

/* Resolve the entry points in @h and make the callees. Return: 0 or -1. */
static inline int tvmffi_ops_open(struct tvmffi_api *a, void *h)
{
	if (!TVMFFI_OPS_SYM(a, h, create, "TVMFFIFunctionCreate") ||
	    !TVMFFI_OPS_SYM(a, h, call, "TVMFFIFunctionCall") ||
	    !TVMFFI_OPS_SYM(a, h, get_global, "TVMFFIFunctionGetGlobal") ||
	    !TVMFFI_OPS_SYM(a, h, set_global, "TVMFFIFunctionSetGlobal") ||
	    !TVMFFI_OPS_SYM(a, h, incref, "TVMFFIObjectIncRef") ||
	    !TVMFFI_OPS_SYM(a, h, decref, "TVMFFIObjectDecRef") ||
	    !TVMFFI_OPS_SYM(a, h, str, "TVMFFIStringFromByteArray") ||
	    !TVMFFI_OPS_SYM(a, h, from_dlpack, "TVMFFITensorFromDLPack"))
		return -1;
	if (a->create(NULL, tvmffi_ops_noop, NULL, &a->f[0]) ||
	    a->create(NULL, tvmffi_ops_int, NULL, &a->f[1]) ||
	    a->create(NULL, tvmffi_ops_dlt, NULL, &a->f[2]) ||
	    a->set_global(&tvmffi_ops_noop_name, a->f[0], 1))
		return -1;
	return 0;
}

static inline void tvmffi_ops_close(struct tvmffi_api *a)
{
	int i;

	for (i = 0; i < 3; i++)
		if (a->f[i])
			a->decref(a->f[i]);
}

#define TVMFFI_OPS_KEEP(v) __asm__ __volatile__("" : : "g"(v) : "memory")

/*
 * The call rows, one function each, never inlined (as suite_ffi.c's
 * CALL_ROW): the counter and the Function stay in registers.
 */
#define TVMFFI_OPS_CALL_ROW(name, set_arg, nargs)				\
static __attribute__((noinline)) int name(int (*call)(TVMFFIObjectHandle, TVMFFIAny *,	\
					      int32_t, TVMFFIAny *),		\
					  TVMFFIObjectHandle f, DLTensor *dl, uint64_t n) \
{										\
	TVMFFIAny arg = { 0 }, ret;						\
	uint64_t i;								\
	int err = 0;								\
										\
	(void)dl;								\
	for (i = 0; i < n; i++) {						\
		set_arg;							\
		ret.type_index = kTVMFFINone;					\
		err |= call(f, &arg, nargs, &ret);				\
		TVMFFI_OPS_KEEP(ret.v_int64);					\
	}									\
	return err;								\
}

TVMFFI_OPS_CALL_ROW(tvmffi_ops_call0, (void)0, 0)
TVMFFI_OPS_CALL_ROW(tvmffi_ops_call_int, (arg.type_index = kTVMFFIInt, arg.v_int64 = (int64_t)i), 1)
TVMFFI_OPS_CALL_ROW(tvmffi_ops_call_dlt, (arg.type_index = kTVMFFIDLTensorPtr, arg.v_ptr = dl), 1)

/*
 * @n operations @op: one tight loop each, the Function in a local. @dl is
 * the tensor passed and imported. Return: 0, or nonzero when one failed.
 */
static inline int tvmffi_ops_run(const struct tvmffi_api *a, enum tvmffi_op op, DLTensor *dl,
				 uint64_t n)
{
	static const char text40[] = "a string of exactly forty bytes, no more";
	int (*call)(TVMFFIObjectHandle, TVMFFIAny *, int32_t, TVMFFIAny *) = a->call;
	TVMFFIByteArray b = { text40, sizeof(text40) - 1 };
	TVMFFIAny ret;
	TVMFFIObjectHandle h;
	uint64_t i;
	int err = 0;

	switch (op) {
	case OP_CALL0:
		err = tvmffi_ops_call0(call, a->f[0], dl, n);
		break;
	case OP_CALL_INT:
		err = tvmffi_ops_call_int(call, a->f[1], dl, n);
		break;
	case OP_CALL_DLT:
		err = tvmffi_ops_call_dlt(call, a->f[2], dl, n);
		break;
	case OP_LOOKUP:
		for (i = 0; i < n; i++) {
			err |= a->get_global(&tvmffi_ops_noop_name, &h);
			err |= a->decref(h);
		}
		break;
	case OP_REFS:
		h = a->f[0];
		for (i = 0; i < n; i++) {
			err |= a->incref(h);
			TVMFFI_OPS_KEEP(h);
			err |= a->decref(h);
		}
		break;
	case OP_STR40:
		for (i = 0; i < n; i++) {
			err |= a->str(&b, &ret);
			err |= a->decref(ret.v_obj);
		}
		break;
	case OP_DLPACK: {
		/* Imports leave the managed tensor as it is: one serves all. */
		DLManagedTensor mt = { .dl_tensor = *dl, .deleter = tvmffi_ops_keep_mt };

		for (i = 0; i < n; i++) {
			err |= a->from_dlpack(&mt, 0, 0, &h);
			err |= a->decref(h);
		}
		break;
	}
	default:
		err = 1;
	}
	return err;
}

#endif /* TIO_BENCH_TVMFFI_OPS_H */
