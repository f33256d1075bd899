// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtensorio-tvmffi's system library and context symbols: symbols
 * registered through TVMFFIEnvModRegisterSystemLibSymbol(), prefixes
 * through ffi.SystemLib, a library built with TVM FFI's system-library
 * option (fixture_tvm_syslib.c), and context symbols a module reads.
 */
#include <dlfcn.h>

#include "kselftest_harness.h"
#include "tvmffi_test.h"

static int sys_add_one(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *ret)
{
	ret->type_index = kTVMFFIInt;
	ret->zero_padding = 0;
	ret->v_int64 = args[0].v_int64 + 1;
	return 0;
}

static int sys_add_two(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *ret)
{
	ret->type_index = kTVMFFIInt;
	ret->zero_padding = 0;
	ret->v_int64 = args[0].v_int64 + 2;
	return 0;
}

TEST(entry_system_lib_symbol)
{
	tio_any_t arg = tio_any_int(41), ret = tio_any_none();
	tio_object_t *lib, *f;
	void *ctx = NULL;

	ASSERT_EQ(0, TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_tvmtest_add_one",
							 (void *)sys_add_one));
	ASSERT_EQ(0, tio_module_system_lib(&lib));
	ASSERT_EQ(0, tio_module_get_function(lib, "tvmtest_add_one", &f));
	ASSERT_NE(NULL, f);
	ASSERT_EQ(0, tio_func_call(f, &arg, 1, &ret));
	EXPECT_EQ(42, ret.v_int64);
	tio_object_decref(f);
	ASSERT_EQ(0, TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi__library_ctx", &ctx));
	EXPECT_EQ(lib, ctx);

	/* As TVM FFI: registered again, the later address wins. */
	ASSERT_EQ(0, TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_tvmtest_add_one",
							 (void *)sys_add_two));
	ASSERT_EQ(0, tio_module_get_function(lib, "tvmtest_add_one", &f));
	ASSERT_EQ(0, tio_func_call(f, &arg, 1, &ret));
	EXPECT_EQ(43, ret.v_int64);
	tio_object_decref(f);
	/* Any other name, as TVM FFI: a variable for a context symbol, no function. */
	ASSERT_EQ(0, TVMFFIEnvModRegisterSystemLibSymbol("tvmtest_var", &ctx));
	ASSERT_EQ(0, TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_", &ctx));
	EXPECT_FALSE(tio_module_implements_function(lib, "tvmtest_var"));
	EXPECT_FALSE(tio_module_implements_function(lib, ""));
	EXPECT_EQ(lib, ctx);
	tio_object_decref(lib);

	EXPECT_EQ(-1, TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi__library_bin", &ctx));
	ASSERT_RAISED("ImportError", "binary");
	EXPECT_EQ(-1, TVMFFIEnvModRegisterSystemLibSymbol("", (void *)sys_add_one));
	ASSERT_RAISED("ValueError", "empty");
	EXPECT_EQ(-1, TVMFFIEnvModRegisterSystemLibSymbol(NULL, (void *)sys_add_one));
	ASSERT_RAISED("ValueError", "NULL");
	EXPECT_EQ(-1, TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_x", NULL));
	ASSERT_RAISED("ValueError", "NULL");
	ASSERT_NO_LEAKS();
}

/* Symbol prefixes through TVM FFI's ffi.SystemLib global, as a binding calls it. */
TEST(entry_system_lib_prefix)
{
	TVMFFIByteArray name = ba("ffi.SystemLib");
	TVMFFIObjectHandle get, mod = NULL, f = NULL;
	TVMFFIAny args[2], ret = { .type_index = kTVMFFINone };
	tio_any_t arg = tio_any_int(1), r = tio_any_none();
	tio_object_t *sys;
	void *ctx = NULL;

	ASSERT_EQ(0, TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_mylib_add_one",
							 (void *)sys_add_one));
	ASSERT_EQ(0, TVMFFIEnvModRegisterSystemLibSymbol("mylib___tvm_ffi__library_ctx", &ctx));
	ASSERT_EQ(0, TVMFFIFunctionGetGlobal(&name, &get));
	ASSERT_NE(NULL, get);
	args[0].type_index = kTVMFFIRawStr;
	args[0].zero_padding = 0;
	args[0].v_c_str = "mylib_";
	ASSERT_EQ(0, TVMFFIFunctionCall(get, args, 1, &ret));
	ASSERT_EQ(kTVMFFIModule, ret.type_index);
	mod = ret.v_obj;
	EXPECT_EQ(mod, ctx);
	ASSERT_EQ(0, tio_module_get_function((tio_object_t *)mod, "add_one", (tio_object_t **)&f));
	ASSERT_NE(NULL, f);
	ASSERT_EQ(0, tio_func_call((tio_object_t *)f, &arg, 1, &r));
	EXPECT_EQ(2, r.v_int64);
	TVMFFIObjectDecRef(f);
	/* Same prefix, same Module; no argument, the unprefixed one. */
	ret.type_index = kTVMFFINone;
	ASSERT_EQ(0, TVMFFIFunctionCall(get, args, 1, &ret));
	EXPECT_EQ(mod, ret.v_obj);
	TVMFFIObjectDecRef(ret.v_obj);
	ret.type_index = kTVMFFINone;
	ASSERT_EQ(0, TVMFFIFunctionCall(get, args, 0, &ret));
	ASSERT_EQ(0, tio_module_system_lib(&sys));
	EXPECT_EQ((void *)sys, ret.v_obj);
	tio_object_decref(sys);
	TVMFFIObjectDecRef(ret.v_obj);
	TVMFFIObjectDecRef(mod);

	args[1] = args[0];
	EXPECT_EQ(-1, TVMFFIFunctionCall(get, args, 2, &ret));
	ASSERT_RAISED("TypeError", "at most 1 argument");
	args[0].type_index = kTVMFFIInt;
	args[0].v_int64 = 3;
	EXPECT_EQ(-1, TVMFFIFunctionCall(get, args, 1, &ret));
	ASSERT_RAISED("TypeError", "int");
	TVMFFIObjectDecRef(get);
	ASSERT_NO_LEAKS();
}

/*
 * A library built with TVM FFI's system-library option (prefix fx_)
 * registers its functions and its context from a constructor; a binding
 * finds them through ffi.SystemLib("fx_").
 */
TEST(system_lib_module_with_prefix)
{
	TVMFFIByteArray name = ba("ffi.SystemLib");
	TVMFFIAny arg = { .type_index = kTVMFFIRawStr }, ret = { .type_index = kTVMFFINone };
	TVMFFIObjectHandle get, mod, f;
	void **ctx, **env, **plain, **late, *h;
	static int marker, other;
	tio_object_t *sys;

	h = dlopen(FIXTURE_DIR "/fixture_tvm_syslib.so", RTLD_NOW | RTLD_LOCAL);
	ASSERT_NE(NULL, h);
	ctx = dlsym(h, "fixture_syslib_ctx");
	env = dlsym(h, "fixture_syslib_env");
	plain = dlsym(h, "fixture_syslib_plain");
	late = dlsym(h, "fixture_syslib_late");
	ASSERT_TRUE(ctx && env && plain && late);
	EXPECT_EQ(NULL, *ctx);		/* no library of prefix fx_ yet */
	ASSERT_EQ(0, TVMFFIEnvModRegisterContextSymbol("tvmtest_env", &marker));
	ASSERT_EQ(0, TVMFFIEnvModRegisterContextSymbol("tvmtest_plain", &other));
	EXPECT_EQ(NULL, *env);		/* set when the library is made */
	ASSERT_EQ(0, TVMFFIFunctionGetGlobal(&name, &get));
	arg.v_c_str = "fx_";
	ASSERT_EQ(0, TVMFFIFunctionCall(get, &arg, 1, &ret));
	ASSERT_EQ(kTVMFFIModule, ret.type_index);
	mod = ret.v_obj;
	EXPECT_EQ(mod, *ctx);
	EXPECT_EQ(&marker, *env);	/* fx_tvmtest_env */
	EXPECT_EQ(&other, *plain);	/* tvmtest_plain, no prefixed one */
	/* As TVM FFI: registered after the library was made, not applied. */
	ASSERT_EQ(0, TVMFFIEnvModRegisterContextSymbol("tvmtest_late", &marker));
	ret.type_index = kTVMFFINone;
	ASSERT_EQ(0, TVMFFIFunctionCall(get, &arg, 1, &ret));
	EXPECT_EQ(mod, ret.v_obj);
	TVMFFIObjectDecRef(ret.v_obj);
	EXPECT_EQ(NULL, *late);
	ASSERT_EQ(0, tio_module_get_function(mod, "add_one", (tio_object_t **)&f));
	ASSERT_NE(NULL, f);
	arg.type_index = kTVMFFIInt;
	arg.v_int64 = 41;
	ret.type_index = kTVMFFINone;
	ASSERT_EQ(0, TVMFFIFunctionCall(f, &arg, 1, &ret));
	EXPECT_EQ(42, ret.v_int64);
	/* Its error crosses to the tio_ side. */
	arg.type_index = kTVMFFINone;
	EXPECT_EQ(-1, TVMFFIFunctionCall(f, &arg, 1, &ret));
	ASSERT_RAISED("TypeError", "add_one takes one int");
	TVMFFIObjectDecRef(f);
	ASSERT_EQ(0, tio_module_get_function(mod, "version", (tio_object_t **)&f));
	ASSERT_NE(NULL, f);
	ASSERT_EQ(0, TVMFFIFunctionCall(f, NULL, 0, &ret));
	EXPECT_EQ(2, ret.v_int64);	/* registered twice: the later one */
	TVMFFIObjectDecRef(f);
	/* Not under the unprefixed name in the library of another prefix... */
	ASSERT_EQ(0, tio_module_system_lib(&sys));
	ASSERT_EQ(0, tio_module_get_function(sys, "add_one", (tio_object_t **)&f));
	EXPECT_EQ(NULL, f);
	/* ...but, as TVM FFI, under its whole name in the unprefixed one. */
	EXPECT_TRUE(tio_module_implements_function(sys, "fx_add_one"));
	EXPECT_NE(sys, *ctx);
	tio_object_decref(sys);
	TVMFFIObjectDecRef(mod);
	TVMFFIObjectDecRef(get);
	/* Not dlclose'd: the registry keeps its functions' addresses. */
	ASSERT_NO_LEAKS();
}

TEST(entry_context_symbol)
{
	static int marker, other;
	tio_object_t *m;
	tio_any_t ret;

	ASSERT_EQ(0, tio_module_load(FIX_TVM, &m));
	ASSERT_EQ(0, call_named(m, "context", NULL, 0, &ret));
	EXPECT_EQ(TIO_TYPE_NONE, ret.type_index);	/* not registered: left alone */
	tio_object_decref(m);

	ASSERT_EQ(0, TVMFFIEnvModRegisterContextSymbol("tvmtest_context", &other));
	ASSERT_EQ(0, TVMFFIEnvModRegisterContextSymbol("tvmtest_context", &marker));
	ASSERT_EQ(0, TVMFFIEnvModRegisterContextSymbol("tvmtest_absent", &other));
	ASSERT_EQ(0, tio_module_load(FIX_TVM, &m));
	ASSERT_EQ(0, call_named(m, "context", NULL, 0, &ret));
	EXPECT_EQ(&marker, ret.v_ptr);
	tio_object_decref(m);

	EXPECT_EQ(-1, TVMFFIEnvModRegisterContextSymbol(NULL, &marker));
	ASSERT_RAISED("ValueError", "name");
	EXPECT_EQ(-1, tio_module_register_context_symbol("", &marker));
	ASSERT_RAISED("ValueError", "name");
	ASSERT_NO_LEAKS();
}

TEST_HARNESS_MAIN
