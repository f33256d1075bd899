// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A module written against the documented ABI only (docs/ffi.md), with no
 * tensorio header: its own Any and object header, functions exported as
 * __tvm_ffi_<name>, the ABI version symbol. Built twice: as is, and with
 * -DFIXTURE_BAD_ABI claiming an ABI version the library does not have.
 */
#include <stdint.h>
#include <string.h>

typedef struct {
	uint64_t combined_ref_count;
	int32_t type_index;
	uint32_t padding;
	void (*deleter)(void *self, int flags);
} obj_t;

typedef struct {
	int32_t type_index;
	uint32_t small_len;
	union {
		int64_t v_int64;
		double v_float64;
		void *v_ptr;
		obj_t *v_obj;
		char v_bytes[8];
	};
} any_t;

/* A Function object: header, then the cell { safe_call, cpp_call }. */
typedef int (*safe_call_t)(void *self, const any_t *args, int32_t nargs, any_t *ret);
typedef struct {
	obj_t header;
	safe_call_t safe_call;
	void *cpp_call;
} func_t;

enum { T_NONE = 0, T_INT = 1, T_FLOAT = 3, T_SMALL_STR = 11, T_FUNCTION = 68 };

#define EXPORT __attribute__((visibility("default")))

#ifdef FIXTURE_BAD_ABI
EXPORT const uint32_t __tvm_ffi__tio_abi_version = 0x7fff;
#else
EXPORT const uint32_t __tvm_ffi__tio_abi_version = 0;
#endif

int constructed;

__attribute__((constructor)) static void init(void)
{
	constructed = 1;	/* must never run for the bad-ABI build */
}

/* add_one(int) -> int; with a non-int it fails, having raised nothing. */
EXPORT int __tvm_ffi_add_one(void *self, const any_t *args, int32_t nargs, any_t *ret)
{
	if (self || nargs != 1 || args[0].type_index != T_INT)
		return -1;
	ret->type_index = T_INT;
	ret->small_len = 0;
	ret->v_int64 = args[0].v_int64 + 1;
	return 0;
}

/* sum(float, ...) -> float */
EXPORT int __tvm_ffi_sum(void *self, const any_t *args, int32_t nargs, any_t *ret)
{
	double s = 0;
	int32_t i;

	(void)self;
	for (i = 0; i < nargs; i++)
		s += args[i].type_index == T_INT ? (double)args[i].v_int64 : args[i].v_float64;
	ret->type_index = T_FLOAT;
	ret->small_len = 0;
	ret->v_float64 = s;
	return 0;
}

/* greet() -> "hi" as a SmallStr */
EXPORT int __tvm_ffi_greet(void *self, const any_t *args, int32_t nargs, any_t *ret)
{
	(void)self;
	(void)args;
	(void)nargs;
	ret->type_index = T_SMALL_STR;
	ret->small_len = 2;
	ret->v_int64 = 0;
	memcpy(ret->v_bytes, "hi", 2);
	return 0;
}

/*
 * apply(f, x) -> f(x): calls a Function object through its cell, as any
 * TVM-FFI-compatible caller would; an error f raises passes through.
 */
EXPORT int __tvm_ffi_apply(void *self, const any_t *args, int32_t nargs, any_t *ret)
{
	func_t *f;

	(void)self;
	if (nargs != 2 || args[0].type_index != T_FUNCTION)
		return -1;
	f = (func_t *)args[0].v_obj;
	return f->safe_call(f, &args[1], 1, ret);
}

/* Not a function: data under the prefix is not listed. */
EXPORT int __tvm_ffi_not_a_function = 42;

/* Not exported under the prefix. */
EXPORT int helper(void)
{
	return constructed;
}
