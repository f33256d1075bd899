// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A library built as TVM FFI's system-library option builds one, with
 * symbol prefix "fx_": against the TVM FFI C ABI only, linked with
 * -ltvm_ffi, its functions registered from a constructor (none exported
 * by name), its library context found as "fx___tvm_ffi__library_ctx".
 */
#include "tvmffi_abi.h"

#define EXPORT __attribute__((visibility("default")))

/* The system library of prefix fx_, once it is made (read by the test). */
EXPORT void *fixture_syslib_ctx;
/* Context symbols, set when the library is made (read by the test). */
EXPORT void *fixture_syslib_env;	/* as fx_tvmtest_env */
EXPORT void *fixture_syslib_plain;	/* as tvmtest_plain */
EXPORT void *fixture_syslib_late;	/* as fx_tvmtest_late */

static int add_one(void *self, const TVMFFIAny *args, int32_t nargs, TVMFFIAny *ret)
{
	(void)self;
	if (nargs != 1 || args[0].type_index != kTVMFFIInt) {
		TVMFFIErrorSetRaisedFromCStr("TypeError", "add_one takes one int");
		return -1;
	}
	ret->type_index = kTVMFFIInt;
	ret->zero_padding = 0;
	ret->v_int64 = args[0].v_int64 + 1;
	return 0;
}

static int version(void *self, const TVMFFIAny *args, int32_t nargs, TVMFFIAny *ret, int v)
{
	(void)self, (void)args, (void)nargs;
	ret->type_index = kTVMFFIInt;
	ret->zero_padding = 0;
	ret->v_int64 = v;
	return 0;
}

static int version1(void *self, const TVMFFIAny *args, int32_t nargs, TVMFFIAny *ret)
{
	return version(self, args, nargs, ret, 1);
}

static int version2(void *self, const TVMFFIAny *args, int32_t nargs, TVMFFIAny *ret)
{
	return version(self, args, nargs, ret, 2);
}

/* Failures are seen by the test: the functions are then missing. */
__attribute__((constructor)) static void fixture_syslib_register(void)
{
	TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_fx_add_one", (void *)add_one);
	/* Registered twice: the later one counts, as in TVM FFI. */
	TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_fx_version", (void *)version1);
	TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_fx_version", (void *)version2);
	TVMFFIEnvModRegisterSystemLibSymbol("fx___tvm_ffi__library_ctx", &fixture_syslib_ctx);
	TVMFFIEnvModRegisterSystemLibSymbol("fx_tvmtest_env", &fixture_syslib_env);
	TVMFFIEnvModRegisterSystemLibSymbol("tvmtest_plain", &fixture_syslib_plain);
	TVMFFIEnvModRegisterSystemLibSymbol("fx_tvmtest_late", &fixture_syslib_late);
}
