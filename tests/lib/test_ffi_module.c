// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Modules: loading the fixture (plain C, documented ABI only), listing and
 * calling its functions, the ABI version check, unloading with the last
 * reference, the export macros, the system library.
 */
#include <dlfcn.h>
#include <string.h>

#include "ffi_test.h"
#include "kselftest_harness.h"

#define FIX_MOD FIXTURE_DIR "/fixture_module.so"
#define FIX_BADABI FIXTURE_DIR "/fixture_badabi.so"
#define FIX_MACRO FIXTURE_DIR "/fixture_macro.so"

static int is_loaded(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);

	if (h)
		dlclose(h);
	return h != NULL;
}

TEST(load_list_call)
{
	tio_any_t arg = tio_any_int(41), ret = tio_any_none(), names;
	tio_any_t fl[3] = { tio_any_float(0.5), tio_any_int(2), tio_any_float(0.25) };
	tio_object_t *m, *f;
	const char *p;
	int64_t i;

	ASSERT_EQ(0, tio_module_load(FIX_MOD, &m));
	EXPECT_EQ(TIO_TYPE_MODULE, m->type_index);
	EXPECT_TRUE(is_loaded(FIX_MOD));
	ASSERT_EQ(0, tio_module_list_functions(m, &names));
	ASSERT_EQ(4, tio_array_size(names.v_obj));
	for (i = 0; i < 4; i++) {
		static const char *const want[] = { "add_one", "apply", "greet", "sum" };

		ASSERT_EQ(0, tio_any_to_str(tio_array_at(names.v_obj, i), &p, NULL));
		EXPECT_STREQ(want[i], p);
	}
	tio_any_decref(&names);
	EXPECT_TRUE(tio_module_implements_function(m, "sum"));
	EXPECT_FALSE(tio_module_implements_function(m, "not_a_function"));
	EXPECT_FALSE(tio_module_implements_function(m, "helper"));
	EXPECT_FALSE(tio_module_implements_function(m, "_tio_abi_version"));
	ASSERT_EQ(0, tio_module_get_function(m, "add_one", &f));
	ASSERT_NE(NULL, f);
	ASSERT_EQ(0, tio_func_call(f, &arg, 1, &ret));
	EXPECT_EQ(42, ret.v_int64);
	tio_object_decref(f);
	ASSERT_EQ(0, tio_module_get_function(m, "sum", &f));
	ASSERT_EQ(0, tio_func_call(f, fl, 3, &ret));
	EXPECT_EQ(2.75, ret.v_float64);
	tio_object_decref(f);
	ASSERT_EQ(0, tio_module_get_function(m, "greet", &f));
	ASSERT_EQ(0, tio_func_call(f, NULL, 0, &ret));
	ASSERT_EQ(0, tio_any_to_str(&ret, &p, NULL));
	EXPECT_STREQ("hi", p);
	tio_object_decref(f);
	ASSERT_EQ(0, tio_module_get_function(m, "missing", &f));
	EXPECT_EQ(NULL, f);
	tio_object_decref(m);
	EXPECT_FALSE(is_loaded(FIX_MOD));
	ASSERT_NO_LEAKS();
}

static int negate(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	if (args[0].v_int64 < 0)
		return tio_error_raise("ValueError", "negative input %lld",
				       (long long)args[0].v_int64);
	*ret = tio_any_int(-args[0].v_int64);
	return 0;
}

TEST(module_calls_back_through_the_cell)
{
	tio_object_t *m, *apply, *neg;
	tio_any_t args[2], ret = tio_any_none();

	ASSERT_EQ(0, tio_module_load(FIX_MOD, &m));
	ASSERT_EQ(0, tio_module_get_function(m, "apply", &apply));
	ASSERT_EQ(0, tio_func_new(negate, NULL, NULL, &neg));
	args[0] = tio_any_object(neg);
	args[1] = tio_any_int(7);
	ASSERT_EQ(0, tio_func_call(apply, args, 2, &ret));
	EXPECT_EQ(-7, ret.v_int64);
	/* The callback's error crosses the module intact. */
	args[1] = tio_any_int(-1);
	EXPECT_EQ(-1, tio_func_call(apply, args, 2, &ret));
	ASSERT_RAISED("ValueError", "negative input -1");
	tio_object_decref(neg);
	tio_object_decref(m);
	/* The function keeps the module loaded. */
	EXPECT_TRUE(is_loaded(FIX_MOD));
	tio_object_decref(apply);
	EXPECT_FALSE(is_loaded(FIX_MOD));
	ASSERT_NO_LEAKS();
}

TEST(abi_mismatch_refused_before_running)
{
	tio_object_t *m = NULL;

	EXPECT_EQ(-1, tio_module_load(FIX_BADABI, &m));
	ASSERT_RAISED("ImportError", "was built for ABI version 32767");
	EXPECT_FALSE(is_loaded(FIX_BADABI));
	EXPECT_EQ(-1, tio_module_load(FIXTURE_DIR "/nope.so", &m));
	ASSERT_RAISED("OSError", "cannot open module");
	EXPECT_EQ(-1, tio_module_load("/proc/self/status", &m));
	ASSERT_RAISED("OSError", "not an ELF object");
	EXPECT_EQ(-1, tio_module_load(NULL, &m));
	ASSERT_RAISED("ValueError", "path");
	ASSERT_NO_LEAKS();
}

TEST(export_macros)
{
	tio_any_t arg = tio_any_int(5), ret = tio_any_none();
	tio_object_t *m, *f;

	ASSERT_EQ(0, tio_module_load(FIX_MACRO, &m));
	EXPECT_TRUE(tio_module_implements_function(m, "triple"));
	ASSERT_EQ(0, tio_module_get_function(m, "triple", &f));
	ASSERT_EQ(0, tio_func_call(f, &arg, 1, &ret));
	EXPECT_EQ(15, ret.v_int64);
	tio_object_decref(f);
	tio_object_decref(m);
	ASSERT_NO_LEAKS();
}

static int syslib_double(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	*ret = tio_any_int(2 * args[0].v_int64);
	return 0;
}

static int syslib_triple(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	*ret = tio_any_int(3 * args[0].v_int64);
	return 0;
}

TIO_SYSTEM_LIB_FUNC(test_double, syslib_double)

TEST(system_library)
{
	tio_any_t arg = tio_any_int(21), ret = tio_any_none(), names;
	tio_object_t *sys, *sys2, *f;

	ASSERT_EQ(0, tio_module_system_lib(&sys));
	ASSERT_EQ(0, tio_module_system_lib(&sys2));
	EXPECT_EQ(sys, sys2);
	tio_object_decref(sys2);
	EXPECT_TRUE(tio_module_implements_function(sys, "test_double"));
	ASSERT_EQ(0, tio_module_get_function(sys, "test_double", &f));
	ASSERT_NE(NULL, f);
	ASSERT_EQ(0, tio_func_call(f, &arg, 1, &ret));
	EXPECT_EQ(42, ret.v_int64);
	tio_object_decref(f);
	/* As TVM FFI: a name registered again takes the new function. */
	ASSERT_EQ(0, tio_system_lib_register("test_double", syslib_triple));
	ASSERT_EQ(0, tio_module_get_function(sys, "test_double", &f));
	ASSERT_EQ(0, tio_func_call(f, &arg, 1, &ret));
	EXPECT_EQ(63, ret.v_int64);
	tio_object_decref(f);
	ASSERT_EQ(0, tio_system_lib_register("test_later", syslib_double));
	ASSERT_EQ(0, tio_module_list_functions(sys, &names));
	EXPECT_EQ(2, tio_array_size(names.v_obj));	/* test_double once */
	tio_any_decref(&names);

	EXPECT_EQ(-1, tio_system_lib_register("_library_ctx", syslib_double));
	ASSERT_RAISED("ValueError", "'_library_ctx' is a library symbol");
	EXPECT_EQ(-1, tio_system_lib_register("_library_bin", syslib_double));
	ASSERT_RAISED("ValueError", "not a function");
	EXPECT_EQ(-1, tio_system_lib_register("", syslib_double));
	ASSERT_RAISED("ValueError", "must be given");
	EXPECT_EQ(-1, tio_system_lib_register("x", NULL));
	ASSERT_RAISED("ValueError", "must be given");
	EXPECT_EQ(-1, tio_system_lib_register(NULL, syslib_double));
	ASSERT_RAISED("ValueError", "must be given");
	{
		char longname[300];

		memset(longname, 'a', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = 0;
		EXPECT_EQ(-1, tio_system_lib_register(longname, syslib_double));
		ASSERT_RAISED("ValueError", "longer than 245 bytes");
	}
	EXPECT_FALSE(tio_module_implements_function(sys, "nope"));
	tio_object_decref(sys);
	ASSERT_NO_LEAKS();
}

/* ffi.SystemLib(prefix): __tvm_ffi_<prefix><NAME> first, then __tvm_ffi_<NAME>. */
TEST(system_library_prefixed)
{
	tio_any_t arg = tio_any_int(7), ret = tio_any_none(), names, s;
	tio_object_t *sys, *p, *p2, *q, *f;
	void *ctx_p = NULL, *ctx_q = NULL, *ctx = NULL;
	const char *t;

	ASSERT_EQ(0, tio_system_lib_register_symbol("__tvm_ffi_pfx_double", (void *)syslib_double));
	ASSERT_EQ(0, tio_system_lib_register_symbol("__tvm_ffi_same", (void *)syslib_double));
	ASSERT_EQ(0, tio_system_lib_register_symbol("__tvm_ffi_pfx_same", (void *)syslib_triple));
	ASSERT_EQ(0, tio_system_lib_register_symbol("pfx___tvm_ffi__library_ctx", &ctx_p));
	EXPECT_EQ(NULL, ctx_p);		/* set when the library of pfx_ is made */
	ASSERT_EQ(0, tio_module_system_lib_prefixed("pfx_", &p));
	EXPECT_EQ(p, ctx_p);
	ASSERT_EQ(0, tio_module_system_lib_prefixed("pfx_", &p2));
	EXPECT_EQ(p, p2);		/* one per prefix, kept */
	tio_object_decref(p2);
	ASSERT_EQ(0, tio_module_system_lib(&sys));
	EXPECT_NE(sys, p);
	ASSERT_EQ(0, tio_system_lib_register_symbol("__tvm_ffi__library_ctx", &ctx));
	EXPECT_EQ(sys, ctx);		/* the unprefixed one always exists */
	ASSERT_EQ(0, tio_system_lib_register_symbol("pfx___tvm_ffi__library_ctx", &ctx_q));
	EXPECT_EQ(p, ctx_q);		/* made already: set at once */

	ASSERT_EQ(0, tio_module_get_function(p, "double", &f));	/* __tvm_ffi_pfx_double */
	ASSERT_NE(NULL, f);
	ASSERT_EQ(0, tio_func_call(f, &arg, 1, &ret));
	EXPECT_EQ(14, ret.v_int64);
	tio_object_decref(f);
	ASSERT_EQ(0, tio_module_get_function(p, "same", &f));	/* the prefixed one first */
	ASSERT_EQ(0, tio_func_call(f, &arg, 1, &ret));
	EXPECT_EQ(21, ret.v_int64);
	tio_object_decref(f);
	ASSERT_EQ(0, tio_module_get_function(sys, "same", &f));
	ASSERT_EQ(0, tio_func_call(f, &arg, 1, &ret));
	EXPECT_EQ(14, ret.v_int64);
	tio_object_decref(f);
	ASSERT_EQ(0, tio_module_get_function(p, "test_double", &f));	/* unprefixed fallback */
	ASSERT_NE(NULL, f);
	tio_object_decref(f);
	EXPECT_TRUE(tio_module_implements_function(p, "double"));
	EXPECT_FALSE(tio_module_implements_function(sys, "double"));
	EXPECT_TRUE(tio_module_implements_function(sys, "pfx_double"));
	ASSERT_EQ(0, tio_module_get_function(sys, "double", &f));
	EXPECT_EQ(NULL, f);
	ASSERT_EQ(0, tio_module_list_functions(p, &names));
	/* double, pfx_double, pfx_same, same, test_double: sorted, once each */
	ASSERT_EQ(5, tio_array_size(names.v_obj));
	ASSERT_EQ(0, tio_array_get(names.v_obj, 0, &s));
	ASSERT_EQ(0, tio_any_to_str(&s, &t, NULL));
	EXPECT_EQ(0, strncmp(t, "double", 6));
	tio_any_decref(&s);
	tio_any_decref(&names);
	ASSERT_EQ(0, tio_module_system_lib_prefixed("other_", &q));
	EXPECT_NE(q, ctx_q);
	EXPECT_FALSE(tio_module_implements_function(q, "double"));
	EXPECT_TRUE(tio_module_implements_function(q, "same"));
	tio_object_decref(q);

	/* Other names (TVM FFI takes any) are variables, never functions. */
	ASSERT_EQ(0, tio_system_lib_register_symbol("plain_name", (void *)syslib_double));
	EXPECT_FALSE(tio_module_implements_function(p, "plain_name"));
	EXPECT_FALSE(tio_module_implements_function(sys, "plain_name"));
	EXPECT_EQ(-1, tio_system_lib_register_symbol("pfx___tvm_ffi__library_bin", &ctx));
	ASSERT_RAISED("ImportError", "no embedded library binary");
	EXPECT_EQ(-1, tio_system_lib_register_symbol(NULL, &ctx));
	ASSERT_RAISED("ValueError", "NULL");
	EXPECT_EQ(-1, tio_system_lib_register_symbol("__tvm_ffi_x", NULL));
	ASSERT_RAISED("ValueError", "NULL");
	EXPECT_EQ(-1, tio_module_system_lib_prefixed(NULL, &q));
	ASSERT_RAISED("ValueError", "prefix and output");
	EXPECT_EQ(-1, tio_module_system_lib_prefixed("pfx_", NULL));
	ASSERT_RAISED("ValueError", "prefix and output");
	tio_object_decref(p);
	tio_object_decref(sys);
	ASSERT_NO_LEAKS();
}

/*
 * Context symbols reach system libraries as TVM FFI sets them: when the
 * library of prefix P is made, NAME registered as <P>NAME, else as NAME.
 */
TEST(system_library_context_symbols)
{
	static void *plain, *prefixed, *ctx;
	static int marker;
	tio_object_t *sys, *p;

	ASSERT_EQ(0, tio_system_lib_register_symbol("tiotest_env", &plain));
	ASSERT_EQ(0, tio_system_lib_register_symbol("cq_tiotest_env", &prefixed));
	ASSERT_EQ(0, tio_system_lib_register_symbol("__tvm_ffi__library_ctx", &ctx));
	EXPECT_EQ(NULL, ctx);		/* the unprefixed library is not made yet */
	ASSERT_EQ(0, tio_module_register_context_symbol("tiotest_env", &marker));
	EXPECT_EQ(NULL, plain);
	ASSERT_EQ(0, tio_module_system_lib_prefixed("cq_", &p));
	EXPECT_EQ(&marker, prefixed);	/* the prefixed name first */
	EXPECT_EQ(NULL, plain);
	EXPECT_FALSE(tio_module_implements_function(p, "tiotest_env"));
	ASSERT_EQ(0, tio_module_system_lib(&sys));
	EXPECT_EQ(&marker, plain);
	EXPECT_EQ(sys, ctx);
	prefixed = plain = NULL;	/* made once: not set again */
	tio_object_decref(sys);
	ASSERT_EQ(0, tio_module_system_lib(&sys));
	EXPECT_EQ(NULL, plain);
	tio_object_decref(sys);
	tio_object_decref(p);
	EXPECT_EQ(-1, tio_system_lib_register_symbol("", &plain));
	ASSERT_RAISED("ValueError", "empty");
	ASSERT_NO_LEAKS();
}

TEST_HARNESS_MAIN
