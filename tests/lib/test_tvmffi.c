// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * TVM FFI compatibility: layouts read at the TVM FFI offsets (tvmffi_abi.h,
 * written from the public ABI), a module built the TVM way (fixture_tvm.c,
 * linked with -ltvm_ffi) raising and catching across both APIs, Tensors
 * with strides both ways, _hidden functions, the library context and the
 * embedded import tree, Functions laid out by other code. The entry points
 * of libtensorio-tvmffi: test_tvmffi_entry.c, test_tvmffi_types.c,
 * test_tvmffi_syslib.c.
 */
#include <stddef.h>

#include "kselftest_harness.h"
#include "tvmffi_test.h"

TEST(layouts)
{
	EXPECT_EQ(16, sizeof(TVMFFIAny));
	EXPECT_EQ(24, sizeof(TVMFFIObject));
	EXPECT_EQ(72, sizeof(TVMFFIErrorCell));
	EXPECT_EQ(sizeof(TVMFFIObject) + sizeof(TVMFFIErrorCell), sizeof(tio_error_obj_t));
	EXPECT_EQ(24 + offsetof(TVMFFIErrorCell, cause_chain),
		  offsetof(tio_error_obj_t, cell.cause_chain));
	EXPECT_EQ(80, offsetof(tio_error_obj_t, cell.cause_chain));
	EXPECT_EQ(88, offsetof(tio_error_obj_t, cell.extra_context));
	EXPECT_EQ(24 + offsetof(TVMFFISeqCell, data_deleter),
		  offsetof(tio_array_obj_t, data_deleter));
	EXPECT_EQ(24 + offsetof(TVMFFIFunctionCell, cpp_call), offsetof(tio_func_obj_t, cpp_call));
	EXPECT_EQ(24, offsetof(tio_tensor_obj_t, dl));
	EXPECT_EQ(kTVMFFIOpaquePyObject, TIO_TYPE_OPAQUE_PY_OBJECT);
	EXPECT_EQ(kTVMFFIList, TIO_TYPE_LIST);
	EXPECT_EQ(kTVMFFIDict, TIO_TYPE_DICT);
	EXPECT_EQ(kTVMFFIVisitInterrupt, TIO_TYPE_VISIT_INTERRUPT);
	EXPECT_EQ(kTVMFFIStaticObjectEnd, TIO_TYPE_STATIC_OBJECT_END);
	EXPECT_STREQ("ffi.OpaquePyObject", tio_type_info(74)->type_key);
	EXPECT_STREQ("ffi.List", tio_type_info(75)->type_key);
	EXPECT_STREQ("ffi.Dict", tio_type_info(76)->type_key);
	EXPECT_STREQ("ffi.VisitInterrupt", tio_type_info(77)->type_key);
}

/* An Error raised by tio_, read field by field at the TVM FFI offsets. */
TEST(error_fields)
{
	tio_object_t *e, *ctx;
	const TVMFFIErrorCell *c;
	tio_byte_array_t k = { "KeyError", 8 }, m = { "no such key", 11 };
	tio_any_t s;

	tio_error_raise("OSError", "the cause");
	tio_error_raise_chained("ValueError", "bad value %d", 3);
	e = tio_error_move_from_raised();
	ASSERT_NE(NULL, e);
	c = cell_of(e);
	EXPECT_EQ(10, c->kind.size);
	EXPECT_EQ(0, memcmp(c->kind.data, "ValueError", 10));
	EXPECT_EQ(11, c->message.size);
	EXPECT_EQ(0, memcmp(c->message.data, "bad value 3", 11));
	EXPECT_NE(NULL, c->update_backtrace);
	ASSERT_NE(NULL, c->cause_chain);
	EXPECT_EQ(tio_error_cause(e), c->cause_chain);
	EXPECT_EQ(0, memcmp(cell_of(c->cause_chain)->kind.data, "OSError", 7));
	EXPECT_EQ(NULL, c->extra_context);
	tio_object_decref(e);

	ASSERT_EQ(0, tio_str_new("some context of forty bytes or so ......", 40, &s));
	ctx = s.v_obj;
	ASSERT_EQ(0, tio_error_create(&k, &m, NULL, NULL, ctx, &e));
	EXPECT_EQ(2, tio_object_strong_count(ctx));
	EXPECT_EQ(ctx, cell_of(e)->extra_context);
	EXPECT_EQ(ctx, tio_error_extra_context(e));
	EXPECT_STREQ("KeyError", tio_error_kind(e));
	EXPECT_STREQ("no such key", tio_error_message(e));
	EXPECT_STREQ("", tio_error_backtrace(e));
	tio_object_decref(e);
	EXPECT_EQ(1, tio_object_strong_count(ctx));
	tio_object_decref(ctx);
	EXPECT_EQ(-1, tio_error_create(NULL, &m, NULL, NULL, NULL, &e));
	EXPECT_EQ(NULL, tio_error_peek_raised());
	ASSERT_NO_LEAKS();
}

/* Raised with TVMFFIErrorSetRaisedFromCStr, caught by tio_. */
TEST(raise_tvm_catch_tio)
{
	tio_object_t *m;
	tio_any_t ret;

	ASSERT_EQ(0, tio_module_load(FIX_TVM, &m));
	EXPECT_EQ(-1, call_named(m, "raise", NULL, 0, &ret));
	ASSERT_RAISED("ValueError", "raised the TVM way");
	EXPECT_EQ(-1, call_named(m, "raise_parts", NULL, 0, &ret));
	ASSERT_RAISED("TypeError", "argument 1 of f(x): bad");
	tio_object_decref(m);
	ASSERT_NO_LEAKS();
}

static int raise_key(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	tio_error_raise("IndexError", "deep down");
	return tio_error_raise_chained("KeyError", "no '%s'", "k");
}

/* Raised by tio_, caught with TVMFFIErrorMoveFromRaised inside the module. */
TEST(raise_tio_catch_tvm)
{
	tio_object_t *m, *f;
	tio_any_t arg, ret;
	const char *s;

	ASSERT_EQ(0, tio_module_load(FIX_TVM, &m));
	ASSERT_EQ(0, tio_func_new(raise_key, NULL, NULL, &f));
	arg = tio_any_object(f);
	ASSERT_EQ(0, call_named(m, "catch", &arg, 1, &ret));
	ASSERT_EQ(0, tio_any_to_str(&ret, &s, NULL));
	EXPECT_STREQ("KeyError: no 'k' (cause IndexError)", s);
	tio_any_decref(&ret);
	EXPECT_EQ(NULL, tio_error_peek_raised());
	/* And a module's own error, caught by the module. */
	arg = tio_any_int(1);
	EXPECT_EQ(-1, call_named(m, "catch", &arg, 1, &ret));
	ASSERT_RAISED("TypeError", "takes a Function");
	tio_object_decref(f);
	tio_object_decref(m);
	ASSERT_NO_LEAKS();
}

/* The same thread-local slot through either API, directly. */
TEST(one_raised_slot)
{
	TVMFFIObjectHandle h = (void *)1;
	tio_object_t *e;

	tio_error_raise("ValueError", "from tio");
	TVMFFIErrorMoveFromRaised(&h);
	ASSERT_NE(NULL, h);
	EXPECT_EQ(0, memcmp(cell_of(h)->message.data, "from tio", 8));
	TVMFFIErrorSetRaised(h);		/* takes its own reference */
	TVMFFIObjectDecRef(h);
	e = tio_error_move_from_raised();
	ASSERT_NE(NULL, e);
	EXPECT_STREQ("from tio", tio_error_message(e));
	tio_object_decref(e);
	TVMFFIErrorMoveFromRaised(&h);
	EXPECT_EQ(NULL, h);
	TVMFFIErrorSetRaisedFromCStr("RuntimeError", "from TVMFFI");
	ASSERT_RAISED("RuntimeError", "from TVMFFI");
	TVMFFIErrorMoveFromRaised(NULL);	/* nothing raised: no effect */
	ASSERT_NO_LEAKS();
}

/* Tensors carry strides both ways. */
TEST(tensor_strides)
{
	int64_t shape[2] = { 4, 5 };
	DLDataType f32 = { kDLFloat, 32, 1 };
	tio_object_t *m, *t, *v;
	tio_any_t arg, ret;
	DLTensor *dl;

	ASSERT_EQ(0, tio_module_load(FIX_TVM, &m));
	ASSERT_EQ(0, tio_tensor_empty(2, shape, f32, 0, &t));
	dl = tio_tensor_dl(t);
	ASSERT_NE(NULL, dl->strides);
	EXPECT_EQ(5, dl->strides[0]);
	EXPECT_EQ(1, dl->strides[1]);
	arg = tio_any_object(t);
	ASSERT_EQ(0, call_named(m, "strides", &arg, 1, &ret));
	EXPECT_EQ(1, ret.v_int64);
	ASSERT_EQ(0, tio_tensor_view(t, 1, shape + 1, NULL, 0, &v));
	ASSERT_NE(NULL, tio_tensor_dl(v)->strides);
	EXPECT_EQ(1, tio_tensor_dl(v)->strides[0]);
	tio_object_decref(v);
	tio_object_decref(t);
	/* Made by the module from a compact DLPack tensor. */
	ASSERT_EQ(0, call_named(m, "make", NULL, 0, &ret));
	ASSERT_EQ(TIO_TYPE_TENSOR, ret.type_index);
	dl = tio_tensor_dl(ret.v_obj);
	ASSERT_NE(NULL, dl->strides);
	EXPECT_EQ(3, dl->strides[0]);
	EXPECT_EQ(1, dl->strides[1]);
	EXPECT_TRUE(tio_tensor_is_contiguous(dl));
	tio_any_decref(&ret);
	tio_object_decref(m);
	ASSERT_NO_LEAKS();
}

TEST(hidden_and_ctx)
{
	tio_object_t *m;
	tio_any_t names, ret;
	const char *p;

	ASSERT_EQ(0, tio_module_load(FIX_TVM, &m));
	EXPECT_TRUE(tio_module_implements_function(m, "_hidden"));
	EXPECT_FALSE(tio_module_implements_function(m, "_metadata_raise"));
	EXPECT_FALSE(tio_module_implements_function(m, "_library_ctx"));
	ASSERT_EQ(0, call_named(m, "_hidden", NULL, 0, &ret));
	EXPECT_EQ(7, ret.v_int64);
	ASSERT_EQ(0, tio_module_list_functions(m, &names));
	ASSERT_EQ(0, tio_any_to_str(tio_array_at(names.v_obj, 0), &p, NULL));
	EXPECT_STREQ("_hidden", p);
	tio_any_decref(&names);
	ASSERT_EQ(0, call_named(m, "ctx", NULL, 0, &ret));
	EXPECT_EQ(1, ret.v_int64);
	ASSERT_EQ(0, tio_module_imports(m, &names));
	EXPECT_EQ(0, tio_array_size(names.v_obj));
	tio_any_decref(&names);
	tio_object_decref(m);
	ASSERT_NO_LEAKS();
}

/* ffi.Module.load_from_bytes.tiotest: the bytes are a path to load. */
static int load_tiotest(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	const void *data;
	size_t len;
	char path[512];
	tio_object_t *m;

	if (nargs != 1 || tio_any_to_bytes(&args[0], &data, &len) || len >= sizeof(path))
		return tio_error_raise("TypeError", "load_from_bytes(bytes)");
	memcpy(path, data, len);
	path[len] = '\0';
	if (tio_module_load(path, &m))
		return -1;
	*ret = tio_any_object(m);
	return 0;
}

TEST(library_bin)
{
	tio_any_t args[2], ret, imports;
	tio_object_t *m;

	ASSERT_EQ(0, tio_func_register_global("ffi.Module.load_from_bytes.tiotest",
					      load_tiotest, NULL, 1));
	ASSERT_EQ(0, tio_module_load(FIX_BIN(1), &m));
	ASSERT_EQ(0, tio_module_imports(m, &imports));
	ASSERT_EQ(1, tio_array_size(imports.v_obj));
	tio_any_decref(&imports);
	EXPECT_TRUE(tio_module_implements_function(m, "add_one"));
	args[0] = tio_any_int(41);
	ASSERT_EQ(0, call_named(m, "add_one", args, 1, &ret));
	EXPECT_EQ(42, ret.v_int64);
	args[0] = tio_any_raw_str("add_one");
	args[1] = tio_any_int(1);
	ASSERT_EQ(0, call_named(m, "via_imports", args, 2, &ret));
	EXPECT_EQ(2, ret.v_int64);
	ASSERT_EQ(0, call_named(m, "via_imports", args, 2, &ret));	/* cached */
	EXPECT_EQ(2, ret.v_int64);
	args[0] = tio_any_raw_str("nowhere");
	EXPECT_EQ(-1, call_named(m, "via_imports", args, 2, &ret));
	ASSERT_RAISED("RuntimeError", "Cannot find function nowhere");
	tio_object_decref(m);

	EXPECT_EQ(-1, tio_module_load(FIX_BIN(2), &m));
	ASSERT_RAISED("ImportError", "no loader 'ffi.Module.load_from_bytes.nokind!'");
	EXPECT_EQ(-1, tio_module_load(FIX_BIN(3), &m));
	ASSERT_RAISED("ImportError", "size past the symbol's end");
	EXPECT_EQ(-1, tio_module_load(FIX_BIN(4), &m));
	ASSERT_RAISED("ImportError", "import cycle");
	ASSERT_EQ(0, tio_func_remove_global("ffi.Module.load_from_bytes.tiotest"));
	EXPECT_EQ(-1, tio_module_load(FIX_BIN(1), &m));
	ASSERT_RAISED("ImportError", "no loader");
	ASSERT_NO_LEAKS();
}

/* A Function laid out by other code: header and cell only. */
struct foreign_func {
	TVMFFIObject header;
	TVMFFIFunctionCell cell;
};

static int foreign_call(void *handle, const TVMFFIAny *args, int32_t n, TVMFFIAny *ret)
{
	ret->type_index = kTVMFFIOpaquePtr;
	ret->zero_padding = 0;
	ret->v_ptr = handle;	/* the cell gets the Function itself */
	return 0;
}

static void foreign_deleter(void *self, int flags)
{
}

TEST(call_foreign_function)
{
	struct foreign_func f = {
		.header = { .combined_ref_count = 1, .type_index = kTVMFFIFunction,
			    .deleter = foreign_deleter },
		.cell = { .safe_call = foreign_call },
	};
	TVMFFIAny ret = { .type_index = kTVMFFINone };
	tio_any_t r = tio_any_none();

	ASSERT_EQ(0, TVMFFIFunctionCall(&f, NULL, 0, &ret));
	EXPECT_EQ(&f, ret.v_ptr);
	ASSERT_EQ(0, tio_func_call_any((tio_object_t *)&f, NULL, 0, &r));
	EXPECT_EQ(&f, r.v_ptr);
}

/*
 * As in TVM FFI: a callback made a Function with neither self nor deleter
 * is the cell itself and gets the Function as its self, on every path.
 */
TEST(null_self_is_the_cell)
{
	TVMFFIObjectHandle f, g;
	TVMFFIAny ret = { .type_index = kTVMFFINone };
	tio_any_t r = tio_any_none();
	int x = 0;

	ASSERT_EQ(0, TVMFFIFunctionCreate(NULL, echo_self, NULL, &f));
	EXPECT_EQ((void *)echo_self,
		  (void *)((TVMFFIFunctionCell *)((TVMFFIObject *)f + 1))->safe_call);
	ASSERT_EQ(0, TVMFFIFunctionCall(f, NULL, 0, &ret));
	EXPECT_EQ(f, ret.v_ptr);
	ASSERT_EQ(0, tio_func_call(f, NULL, 0, &r));
	EXPECT_EQ(f, r.v_ptr);
	r = tio_any_none();
	ASSERT_EQ(0, tio_func_call_any(f, NULL, 0, &r));
	EXPECT_EQ(f, r.v_ptr);
	TVMFFIObjectDecRef(f);

	/* With a self, the callback gets that self, through a trampoline. */
	ASSERT_EQ(0, TVMFFIFunctionCreate(&x, echo_self, NULL, &g));
	EXPECT_NE((void *)echo_self,
		  (void *)((TVMFFIFunctionCell *)((TVMFFIObject *)g + 1))->safe_call);
	ASSERT_EQ(0, TVMFFIFunctionCall(g, NULL, 0, &ret));
	EXPECT_EQ(&x, ret.v_ptr);
	r = tio_any_none();
	ASSERT_EQ(0, tio_func_call(g, NULL, 0, &r));
	EXPECT_EQ(&x, r.v_ptr);
	TVMFFIObjectDecRef(g);
	ASSERT_NO_LEAKS();
}

TEST_HARNESS_MAIN
