// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * TVM FFI compatibility: layouts read at the TVM FFI offsets (tvmffi_abi.h,
 * written from the public ABI), a module built the TVM way (fixture_tvm.c,
 * linked with -ltvm_ffi) raising and catching across both APIs, Tensors
 * with strides both ways, _hidden functions, the library context and the
 * embedded import tree, and every entry point of libtensorio-tvmffi with
 * good and bad arguments.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "ffi_test.h"
#include "kselftest_harness.h"
#include "tvmffi_abi.h"

#define FIX_TVM FIXTURE_DIR "/fixture_tvm.so"
#define FIX_BIN(n) FIXTURE_DIR "/fixture_tvm_bin" #n ".so"

static TVMFFIByteArray ba(const char *s)
{
	TVMFFIByteArray b = { s, strlen(s) };

	return b;
}

static const TVMFFIErrorCell *cell_of(void *err)
{
	return (const TVMFFIErrorCell *)((TVMFFIObject *)err + 1);
}

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

static int deleted;

static void count_delete(void *p)
{
	deleted += p == &deleted;
}

static int add_self(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	*ret = tio_any_int(args[0].v_int64 + *(int *)self);
	return 0;
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

/* Returns the self it was called with. */
static int echo_self(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *ret)
{
	ret->type_index = kTVMFFIOpaquePtr;
	ret->zero_padding = 0;
	ret->v_ptr = self;
	return 0;
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

TEST(entry_objects_functions)
{
	TVMFFIVersion v;
	TVMFFIObjectHandle o, f, g;
	TVMFFIByteArray name = { "test.tvmffi.addXXX", 15 };	/* not NUL-terminated */
	TVMFFIByteArray bad = { "a\0b", 3 };
	TVMFFIAny arg = { .type_index = kTVMFFIInt, .v_int64 = 5 }, ret, view, owned;
	static int three = 3;

	TVMFFIGetVersion(&v);
	EXPECT_EQ(0, v.major);
	EXPECT_EQ(1, v.minor);
	EXPECT_EQ(14, v.patch);
	TVMFFIGetVersion(NULL);

	deleted = 0;
	ASSERT_EQ(0, TVMFFIObjectCreateOpaque(&deleted, kTVMFFIOpaquePyObject, count_delete, &o));
	EXPECT_EQ(kTVMFFIOpaquePyObject, ((TVMFFIObject *)o)->type_index);
	EXPECT_EQ(&deleted, ((TVMFFIOpaqueObjectCell *)((TVMFFIObject *)o + 1))->handle);
	EXPECT_EQ(0, TVMFFIObjectIncRef(o));
	EXPECT_EQ(0, TVMFFIObjectDecRef(o));
	EXPECT_EQ(0, deleted);
	EXPECT_EQ(0, TVMFFIObjectDecRef(o));
	EXPECT_EQ(1, deleted);
	EXPECT_EQ(-1, TVMFFIObjectCreateOpaque(NULL, kTVMFFIObject, NULL, &o));
	ASSERT_RAISED("RuntimeError", "OpaquePyObject");
	EXPECT_EQ(0, TVMFFIObjectIncRef(NULL));
	EXPECT_EQ(0, TVMFFIObjectDecRef(NULL));

	deleted = 0;
	ASSERT_EQ(0, TVMFFIFunctionCreate(&three, (TVMFFISafeCallType)add_self, NULL, &f));
	ASSERT_EQ(0, TVMFFIFunctionSetGlobal(&name, f, 0));
	EXPECT_EQ(-1, TVMFFIFunctionSetGlobal(&name, f, 0));
	ASSERT_RAISED("KeyError", "test.tvmffi.add");
	EXPECT_EQ(-1, TVMFFIFunctionSetGlobal(&bad, f, 1));
	ASSERT_RAISED("ValueError", "NUL");
	ASSERT_EQ(0, TVMFFIFunctionGetGlobal(&name, &g));
	EXPECT_EQ(f, g);
	ret.type_index = kTVMFFINone;
	ASSERT_EQ(0, TVMFFIFunctionCall(g, &arg, 1, &ret));
	EXPECT_EQ(8, ret.v_int64);
	TVMFFIObjectDecRef(g);
	TVMFFIObjectDecRef(f);
	EXPECT_EQ(0, tio_func_remove_global("test.tvmffi.add"));
	name.size = 17;
	ASSERT_EQ(0, TVMFFIFunctionGetGlobal(&name, &g));
	EXPECT_EQ(NULL, g);
	EXPECT_EQ(-1, TVMFFIFunctionGetGlobal(NULL, &g));
	ASSERT_RAISED("ValueError", "NULL");
	EXPECT_EQ(-1, TVMFFIFunctionCreate(NULL, (TVMFFISafeCallType)add_self, NULL, NULL));
	ASSERT_RAISED("ValueError", "output");
	ASSERT_EQ(0, TVMFFIFunctionCreate(&deleted, (TVMFFISafeCallType)add_self, count_delete,
					  &f));
	TVMFFIObjectDecRef(f);
	EXPECT_EQ(1, deleted);

	view.type_index = kTVMFFIRawStr;
	view.zero_padding = 0;
	view.v_c_str = "a raw C string longer than seven bytes";
	ASSERT_EQ(0, TVMFFIAnyViewToOwnedAny(&view, &owned));
	EXPECT_EQ(kTVMFFIStr, owned.type_index);
	tio_any_decref((tio_any_t *)&owned);
	EXPECT_EQ(-1, TVMFFIAnyViewToOwnedAny(NULL, &owned));
	ASSERT_RAISED("ValueError", "NULL");
	ASSERT_NO_LEAKS();
}

struct counting_alloc {
	TVMFFICustomAllocator base;
	int calls;
};

static void *count_allocate(size_t size, size_t alignment, int32_t type_index, void *context)
{
	struct counting_alloc *a = context;

	a->calls++;
	return TVMFFIGetCustomAllocator()->allocate(size, alignment, type_index, NULL);
}

/* The custom allocator registry, as 0.1.14: kept and handed back, not applied. */
TEST(entry_custom_allocator)
{
	TVMFFICustomAllocator *builtin = TVMFFIGetCustomAllocator(), none = { NULL, NULL };
	struct counting_alloc mine = { { count_allocate, &mine }, 0 };
	TVMFFIObjectAllocHeader *h;
	TVMFFIByteArray text = { "a string longer than seven bytes", 32 };
	TVMFFIAny s;
	char *p;

	ASSERT_NE(NULL, builtin);
	ASSERT_NE(NULL, builtin->allocate);
	EXPECT_EQ(NULL, builtin->context);
	p = builtin->allocate(40, 16, kTVMFFIObject, NULL);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(0, (uintptr_t)p % 16);
	memset(p, 0xa5, 40);	/* the whole body is usable (ASan) */
	h = (TVMFFIObjectAllocHeader *)p - 1;
	ASSERT_NE(NULL, h->delete_space);
	h->delete_space(p);	/* frees the block with its header (ASan, valgrind) */
	p = builtin->allocate(0, 1, kTVMFFIStr, NULL);
	ASSERT_NE(NULL, p);
	((TVMFFIObjectAllocHeader *)p - 1)->delete_space(p);

	EXPECT_EQ(NULL, builtin->allocate(8, 0, kTVMFFIObject, NULL));
	ASSERT_RAISED("ValueError", "alignment 0");
	EXPECT_EQ(NULL, builtin->allocate(8, 12, kTVMFFIObject, NULL));
	ASSERT_RAISED("ValueError", "alignment 12");
	EXPECT_EQ(NULL, builtin->allocate(8, 4096, kTVMFFIObject, NULL));
	ASSERT_RAISED("ValueError", "power of two");
	EXPECT_EQ(NULL, builtin->allocate(SIZE_MAX - 8, 8, kTVMFFIObject, NULL));
	ASSERT_RAISED("ValueError", "too large");

	ASSERT_EQ(0, TVMFFISetCustomAllocator(&mine.base));
	EXPECT_EQ(&mine.base, TVMFFIGetCustomAllocator());
	/* Objects made now do not go through it (object tying is dormant in 0.1.14). */
	ASSERT_EQ(0, TVMFFIStringFromByteArray(&text, &s));
	TVMFFIObjectDecRef(s.v_obj);
	EXPECT_EQ(0, mine.calls);
	/* One without allocate is refused and changes nothing. */
	EXPECT_EQ(-1, TVMFFISetCustomAllocator(&none));
	ASSERT_RAISED("ValueError", "no allocate callback");
	EXPECT_EQ(&mine.base, TVMFFIGetCustomAllocator());
	ASSERT_EQ(0, TVMFFISetCustomAllocator(NULL));	/* back to the builtin one */
	EXPECT_EQ(builtin, TVMFFIGetCustomAllocator());
	p = mine.base.allocate(24, 8, kTVMFFIObject, mine.base.context);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(1, mine.calls);
	((TVMFFIObjectAllocHeader *)p - 1)->delete_space(p);
	ASSERT_NO_LEAKS();
}

TEST(entry_errors_strings_dtypes)
{
	TVMFFIByteArray k = ba("IndexError"), m = ba("out of range"), bt = ba("#0 here\n");
	TVMFFIByteArray lng = ba("a string of exactly forty bytes, no more"), sml = ba("abc");
	TVMFFIObjectHandle e, e2;
	TVMFFIAny out;
	DLDataType dt, f16x4 = { kDLFloat, 16, 4 }, bad = { 99, 0, 0 };
	TVMFFIByteArray f32 = ba("float32"), junk = ba("floaty");
	const char *s;
	size_t len;

	ASSERT_EQ(0, TVMFFIErrorCreate(&k, &m, &bt, &e));
	EXPECT_EQ(kTVMFFIError, ((TVMFFIObject *)e)->type_index);
	EXPECT_EQ(0, memcmp(cell_of(e)->backtrace.data, "#0 here\n", 8));
	EXPECT_EQ(NULL, cell_of(e)->cause_chain);
	ASSERT_EQ(0, TVMFFIErrorCreateWithCauseAndExtraContext(&k, &m, &bt, e, NULL, &e2));
	EXPECT_EQ(e, cell_of(e2)->cause_chain);
	TVMFFIObjectDecRef(e);
	EXPECT_EQ(1, tio_object_strong_count(cell_of(e2)->cause_chain));
	TVMFFIObjectDecRef(e2);
	EXPECT_EQ(-1, TVMFFIErrorCreate(NULL, &m, &bt, &e));
	EXPECT_EQ(NULL, tio_error_peek_raised());	/* as TVM FFI: nothing raised */

	ASSERT_EQ(0, TVMFFIStringFromByteArray(&sml, &out));
	EXPECT_EQ(kTVMFFISmallStr, out.type_index);
	ASSERT_EQ(0, TVMFFIStringFromByteArray(&lng, &out));
	EXPECT_EQ(kTVMFFIStr, out.type_index);
	ASSERT_EQ(0, tio_any_to_str((tio_any_t *)&out, &s, &len));
	EXPECT_EQ(40, len);
	tio_any_decref((tio_any_t *)&out);
	ASSERT_EQ(0, TVMFFIBytesFromByteArray(&lng, &out));
	EXPECT_EQ(kTVMFFIBytes, out.type_index);
	tio_any_decref((tio_any_t *)&out);
	EXPECT_EQ(-1, TVMFFIStringFromByteArray(NULL, &out));
	ASSERT_RAISED("ValueError", "NULL");

	ASSERT_EQ(0, TVMFFIDataTypeFromString(&f32, &dt));
	EXPECT_EQ(kDLFloat, dt.code);
	EXPECT_EQ(32, dt.bits);
	EXPECT_EQ(1, dt.lanes);
	EXPECT_EQ(-1, TVMFFIDataTypeFromString(&junk, &dt));
	ASSERT_RAISED("ValueError", "floaty");
	ASSERT_EQ(0, TVMFFIDataTypeToString(&f16x4, &out));
	ASSERT_EQ(0, tio_any_to_str((tio_any_t *)&out, &s, NULL));
	EXPECT_STREQ("float16x4", s);
	tio_any_decref((tio_any_t *)&out);
	EXPECT_EQ(-1, TVMFFIDataTypeToString(&bad, &out));
	tio_error_clear();
	ASSERT_NO_LEAKS();
}

/* TVM FFI 0.1.14's root entries for the values an Any holds in place. */
TEST(entry_pod_types)
{
	static const struct {
		const char *key;
		uint64_t hash;	/* as TVM FFI 0.1.14 (GCC build) gives it */
	} pods[] = {
		{ "None", 0xfb6ac968ce0ca5aaull },
		{ "int", 0xaed305094b3d4a9full },
		{ "bool", 0xe5d6c19a7b27cfcaull },
		{ "float", 0x30fc3255e503d0f0ull },
		{ "void*", 0x93fff46616d48774ull },
		{ "DataType", 0x4f8fea07e78b865bull },
		{ "Device", 0xbd3ec6f35b0ce31cull },
		{ "DLTensor*", 0xcb2d26b2d1d8c04eull },
		{ "const char*", 0xcd50ff68030dbbabull },
		{ "TVMFFIByteArray*", 0x32519e4e9ab631a9ull },
		{ "ObjectRValueRef", 0x189c622331ab3f34ull },
		{ "ffi.SmallStr", 0xf2ac8dbc73691e03ull },
		{ "ffi.SmallBytes", 0x168b84b7018a151dull },
	};
	TVMFFIByteArray key, sub = ba("test.tvmffi.SubInt");
	const TVMFFITypeInfo *ti;
	int32_t i, idx;

	for (i = 0; i < (int32_t)(sizeof(pods) / sizeof(pods[0])); i++) {
		key = ba(pods[i].key);
		idx = -1;
		ASSERT_EQ(0, TVMFFITypeKeyToIndex(&key, &idx));
		EXPECT_EQ(i, idx);
		EXPECT_EQ(i, TVMFFITypeGetOrAllocIndex(&key, -1, 0, 0, 0, -1));
		EXPECT_EQ(i, TVMFFITypeGetOrAllocIndex(&key, -1, 0, 0, 0, -2));
		ti = TVMFFIGetTypeInfo(i);
		ASSERT_NE(NULL, ti);
		EXPECT_EQ(i, ti->type_index);
		EXPECT_EQ(0, ti->type_depth);
		EXPECT_EQ(NULL, ti->type_ancestors);
		ASSERT_EQ(strlen(pods[i].key), ti->type_key.size);
		EXPECT_EQ(0, memcmp(ti->type_key.data, pods[i].key, ti->type_key.size));
		EXPECT_EQ(pods[i].hash, ti->type_key_hash);
		EXPECT_EQ(0, ti->num_fields);
		EXPECT_EQ(0, ti->num_methods);
		EXPECT_EQ(NULL, ti->metadata);
		EXPECT_EQ(ti, TVMFFIGetTypeInfo(i));
	}
	EXPECT_EQ(kTVMFFISmallBytes, i - 1);
	EXPECT_EQ(NULL, TVMFFIGetTypeInfo(kTVMFFISmallBytes + 1));
	EXPECT_EQ(NULL, TVMFFIGetTypeInfo(kTVMFFIStaticObjectBegin - 1));
	EXPECT_EQ(NULL, tio_error_peek_raised());
	key = ba("Any");
	EXPECT_EQ(-1, TVMFFITypeKeyToIndex(&key, &idx));
	ASSERT_RAISED("KeyError", "Any");
	/* TVM FFI refuses a subtype of a value type too (no child slots). */
	EXPECT_EQ(-1, TVMFFITypeGetOrAllocIndex(&sub, -1, 1, 0, 0, kTVMFFIInt));
	ASSERT_RAISED("ValueError", "'int' (1) is not an object type");
	EXPECT_EQ(-1, TVMFFITypeGetOrAllocIndex(&sub, 100, 1, 0, 0, kTVMFFIFloat));
	ASSERT_RAISED("ValueError", "'float' (3) is not an object type");
	EXPECT_EQ(-2, TVMFFITypeGetOrAllocIndex(&sub, -1, 1, 0, 0, -2));
	ASSERT_NO_LEAKS();
}

TEST(entry_types)
{
	TVMFFIByteArray key = ba("ffi.Tensor"), nope = ba("no.such.Type");
	TVMFFIByteArray mine = ba("test.tvmffi.Node"), stat = ba("test.tvmffi.Static");
	TVMFFIByteArray stat2 = ba("test.tvmffi.Static2");
	tio_field_info_t fi = { .struct_size = sizeof(fi), .name = "x", .offset = 24, .size = 8,
				.field_type_index = TIO_TYPE_INT };
	const TVMFFITypeInfo *ti;
	int32_t idx = 0, t;

	ASSERT_EQ(0, TVMFFITypeKeyToIndex(&key, &idx));
	EXPECT_EQ(kTVMFFITensor, idx);
	EXPECT_EQ(-1, TVMFFITypeKeyToIndex(&nope, &idx));
	ASSERT_RAISED("KeyError", "no.such.Type");
	EXPECT_EQ(-1, TVMFFITypeKeyToIndex(&key, NULL));
	ASSERT_RAISED("ValueError", "NULL");

	EXPECT_EQ(kTVMFFITensor, TVMFFITypeGetOrAllocIndex(&key, -1, 1, 0, 0, -2));
	EXPECT_EQ(-2, TVMFFITypeGetOrAllocIndex(&nope, -1, 1, 0, 0, -2));
	EXPECT_EQ(NULL, tio_error_peek_raised());
	EXPECT_EQ(kTVMFFITensor, TVMFFITypeGetOrAllocIndex(&key, kTVMFFITensor, 1, 0, 0, 64));
	/* As TVM FFI: a known key gives its index, whatever the rest says. */
	EXPECT_EQ(kTVMFFITensor, TVMFFITypeGetOrAllocIndex(&key, kTVMFFIArray, 1, 0, 0, 64));
	EXPECT_EQ(kTVMFFITensor, TVMFFITypeGetOrAllocIndex(&key, -1, 3, 0, 0, 100));
	EXPECT_EQ(NULL, tio_error_peek_raised());
	/* A new key with a static index is placed there. */
	EXPECT_EQ(100, TVMFFITypeGetOrAllocIndex(&stat, 100, 1, 0, 0, -1));
	EXPECT_EQ(100, TVMFFITypeGetOrAllocIndex(&stat, 101, 1, 0, 0, -1));
	EXPECT_EQ(101, TVMFFITypeGetOrAllocIndex(&stat2, 101, 2, 0, 0, 100));
	ti = TVMFFIGetTypeInfo(101);
	ASSERT_NE(NULL, ti);
	EXPECT_EQ(2, ti->type_depth);
	EXPECT_EQ(100, ti->type_ancestors[1]->type_index);
	EXPECT_EQ(0x118a6d12b1608fd1ull, ti->type_key_hash);
	EXPECT_EQ(-1, TVMFFITypeGetOrAllocIndex(&nope, 100, 1, 0, 0, -1));
	ASSERT_RAISED("ValueError", "taken by 'test.tvmffi.Static'");
	EXPECT_EQ(-1, TVMFFITypeGetOrAllocIndex(&nope, 4000, 1, 0, 0, -1));
	ASSERT_RAISED("ValueError", "outside");
	EXPECT_EQ(-1, TVMFFITypeGetOrAllocIndex(&nope, -1, 1, 0, 0, 4000));
	ASSERT_RAISED("ValueError", "parent type index 4000");
	EXPECT_EQ(-1, TVMFFITypeGetOrAllocIndex(NULL, -1, 1, 0, 0, -1));
	ASSERT_RAISED("ValueError", "NULL");
	EXPECT_EQ(-2, TVMFFITypeGetOrAllocIndex(&nope, -1, 1, 0, 0, -2));
	t = TVMFFITypeGetOrAllocIndex(&mine, -1, 1, 0, 1, kTVMFFIObject);
	EXPECT_GE(t, kTVMFFIDynObjectBegin);
	EXPECT_EQ(t, TVMFFITypeGetOrAllocIndex(&mine, -1, 1, 0, 1, kTVMFFIObject));

	ti = TVMFFIGetTypeInfo(kTVMFFITensor);
	ASSERT_NE(NULL, ti);
	EXPECT_EQ(kTVMFFITensor, ti->type_index);
	EXPECT_EQ(1, ti->type_depth);
	EXPECT_EQ(0, memcmp(ti->type_key.data, "ffi.Tensor", 10));
	EXPECT_EQ(kTVMFFIObject, ti->type_ancestors[0]->type_index);
	/* TVM FFI's hashes (std::hash of the key, GNU libstdc++), 8n and 8n + k bytes. */
	EXPECT_EQ(0xa0c01a8167c48cc0ull, ti->type_key_hash);
	EXPECT_EQ(0x33a211b274fa0106ull, ti->type_ancestors[0]->type_key_hash);
	EXPECT_EQ(ti, TVMFFIGetTypeInfo(kTVMFFITensor));	/* kept */
	ti = TVMFFIGetTypeInfo(t);
	ASSERT_NE(NULL, ti);
	EXPECT_EQ(0, ti->num_fields);
	EXPECT_EQ(0x8edd03dc5bf658c8ull, ti->type_key_hash);
	ASSERT_EQ(0, tio_type_register_field(t, &fi));
	ti = TVMFFIGetTypeInfo(t);
	ASSERT_EQ(1, ti->num_fields);
	EXPECT_EQ(0, memcmp(ti->fields[0].name.data, "x", 1));
	EXPECT_EQ(24, ti->fields[0].offset);
	EXPECT_NE(NULL, ti->fields[0].getter);
	EXPECT_EQ(NULL, TVMFFIGetTypeInfo(-5));
	EXPECT_EQ(NULL, TVMFFIGetTypeInfo(4000));
	ASSERT_NO_LEAKS();
}

static void keep_deleter(DLManagedTensor *self)
{
	deleted++;
}

static int test_alloc(DLTensor *proto, DLManagedTensorVersioned **out, void *ctx,
		      void (*set_error)(void *, const char *, const char *))
{
	tio_object_t *t;

	if (proto->ndim > 4) {
		set_error(ctx, "ValueError", "too many dimensions");
		return -1;
	}
	if (tio_tensor_empty(proto->ndim, proto->shape, proto->dtype, 0, &t))
		return -1;
	tio_tensor_to_dlpack_versioned(t, out);
	tio_object_decref(t);
	return 0;
}

TEST(entry_dlpack_env)
{
	float data[6];
	int64_t shape[5] = { 2, 3, 1, 1, 1 };
	DLManagedTensor mt = { .dl_tensor = { .data = data, .device = { kDLCPU, 0 }, .ndim = 2,
					      .dtype = { kDLFloat, 32, 1 }, .shape = shape },
			       .deleter = keep_deleter };
	DLManagedTensor *back;
	DLManagedTensorVersioned *vback;
	DLPackManagedTensorAllocator old = NULL;
	TVMFFIObjectHandle t, t2;
	TVMFFIStreamHandle s = NULL;

	deleted = 0;
	ASSERT_EQ(0, TVMFFITensorFromDLPack(&mt, 4, 1, &t));
	ASSERT_NE(NULL, ((DLTensor *)((TVMFFIObject *)t + 1))->strides);
	ASSERT_EQ(0, TVMFFITensorToDLPack(t, &back));
	ASSERT_EQ(0, TVMFFITensorFromDLPack(back, 0, 0, &t2));
	EXPECT_EQ(t, t2);
	TVMFFIObjectDecRef(t2);
	ASSERT_EQ(0, TVMFFITensorToDLPackVersioned(t, &vback));
	ASSERT_EQ(0, TVMFFITensorFromDLPackVersioned(vback, 0, 0, &t2));
	EXPECT_EQ(t, t2);
	TVMFFIObjectDecRef(t2);
	TVMFFIObjectDecRef(t);
	EXPECT_EQ(1, deleted);
	EXPECT_EQ(-1, TVMFFITensorFromDLPack(NULL, 0, 0, &t));
	ASSERT_RAISED("ValueError", "NULL");
	EXPECT_EQ(-1, TVMFFITensorToDLPack(NULL, &back));
	ASSERT_RAISED("TypeError", "not a Tensor");
	EXPECT_EQ(-1, TVMFFITensorFromDLPackVersioned(NULL, 0, 0, &t));
	ASSERT_RAISED("ValueError", "NULL");

	EXPECT_EQ(NULL, TVMFFIEnvGetStream(kDLCUDA, 1));
	ASSERT_EQ(0, TVMFFIEnvSetStream(kDLCUDA, 1, (void *)0x10, &s));
	EXPECT_EQ(NULL, s);
	ASSERT_EQ(0, TVMFFIEnvSetStream(kDLCUDA, 1, (void *)0x20, &s));
	EXPECT_EQ((void *)0x10, s);
	EXPECT_EQ((void *)0x20, TVMFFIEnvGetStream(kDLCUDA, 1));
	EXPECT_EQ(NULL, TVMFFIEnvGetStream(kDLCUDA, 0));
	EXPECT_EQ(-1, TVMFFIEnvSetStream(-1, 0, NULL, NULL));
	ASSERT_RAISED("ValueError", "invalid");
	ASSERT_EQ(0, TVMFFIEnvSetStream(kDLCUDA, 1, NULL, NULL));

	EXPECT_EQ(-1, TVMFFIEnvTensorAlloc(&mt.dl_tensor, &t));
	ASSERT_RAISED("RuntimeError", "no DLPack tensor allocator");
	ASSERT_EQ(0, TVMFFIEnvSetDLPackManagedTensorAllocator(test_alloc, 0, &old));
	EXPECT_EQ(NULL, old);
	EXPECT_TRUE(test_alloc == TVMFFIEnvGetDLPackManagedTensorAllocator());
	ASSERT_EQ(0, TVMFFIEnvTensorAlloc(&mt.dl_tensor, &t));
	EXPECT_EQ(3, ((DLTensor *)((TVMFFIObject *)t + 1))->shape[1]);
	TVMFFIObjectDecRef(t);
	mt.dl_tensor.ndim = 5;
	EXPECT_EQ(-1, TVMFFIEnvTensorAlloc(&mt.dl_tensor, &t));
	ASSERT_RAISED("ValueError", "too many dimensions");
	ASSERT_EQ(0, TVMFFIEnvSetDLPackManagedTensorAllocator(NULL, 0, NULL));
	EXPECT_EQ(0, TVMFFIEnvCheckSignals());
	ASSERT_NO_LEAKS();
}

static int inits;

static int init_fn(void **out)
{
	inits++;
	*out = &inits;
	return 0;
}

static int deinit_fn(void *h)
{
	inits--;
	return 0;
}

TEST(entry_init_once)
{
	void *h = NULL;

	inits = 0;
	ASSERT_EQ(0, TVMFFIHandleInitOnce(&h, init_fn));
	ASSERT_EQ(0, TVMFFIHandleInitOnce(&h, init_fn));
	EXPECT_EQ(1, inits);
	EXPECT_EQ(&inits, h);
	ASSERT_EQ(0, TVMFFIHandleDeinitOnce(&h, deinit_fn));
	ASSERT_EQ(0, TVMFFIHandleDeinitOnce(&h, deinit_fn));
	EXPECT_EQ(0, inits);
	EXPECT_EQ(NULL, h);
	EXPECT_EQ(-1, TVMFFIHandleInitOnce(NULL, init_fn));
	ASSERT_RAISED("ValueError", "NULL");
	EXPECT_EQ(-1, TVMFFIEnvModLookupFromImports(NULL, "x", &h));
	tio_error_clear();
	ASSERT_NO_LEAKS();
}

/* The global @name called with the int @x: its int result, or INT64_MIN. */
static int64_t call_global(const TVMFFIByteArray *name, int64_t x)
{
	TVMFFIAny arg = { .type_index = kTVMFFIInt, .v_int64 = x };
	TVMFFIAny ret = { .type_index = kTVMFFINone };
	TVMFFIObjectHandle g;

	if (TVMFFIFunctionGetGlobal(name, &g) || !g)
		return INT64_MIN;
	if (TVMFFIFunctionCall(g, &arg, 1, &ret) || ret.type_index != kTVMFFIInt)
		ret.v_int64 = INT64_MIN;
	TVMFFIObjectDecRef(g);
	return ret.v_int64;
}

TEST(entry_method_info_global)
{
	TVMFFIMethodInfo mi = { .name = { "test.tvmffi.mi", 14 }, .doc = { "doc", 3 } };
	TVMFFIObjectHandle f;
	static int two = 2;

	ASSERT_EQ(0, TVMFFIFunctionCreate(&two, (TVMFFISafeCallType)add_self, NULL, &f));
	mi.method.type_index = kTVMFFIFunction;
	mi.method.v_obj = f;
	ASSERT_EQ(0, TVMFFIFunctionSetGlobalFromMethodInfo(&mi, 0));
	EXPECT_EQ(-1, TVMFFIFunctionSetGlobalFromMethodInfo(&mi, 0));
	ASSERT_RAISED("KeyError", "test.tvmffi.mi");
	ASSERT_EQ(0, TVMFFIFunctionSetGlobalFromMethodInfo(&mi, 1));
	EXPECT_EQ(7, call_global(&mi.name, 5));
	TVMFFIObjectDecRef(f);
	EXPECT_EQ(0, tio_func_remove_global("test.tvmffi.mi"));

	mi.method.type_index = kTVMFFIInt;
	EXPECT_EQ(-1, TVMFFIFunctionSetGlobalFromMethodInfo(&mi, 1));
	ASSERT_RAISED("TypeError", "ffi.Function");
	EXPECT_EQ(-1, TVMFFIFunctionSetGlobalFromMethodInfo(NULL, 1));
	ASSERT_RAISED("ValueError", "NULL");
	ASSERT_NO_LEAKS();
}

TEST(entry_unsafe_view)
{
	int64_t shape[2] = { 2, 3 }, vshape[2] = { 3, 2 }, vstrides[2] = { 1, 3 };
	DLDataType f32 = { kDLFloat, 32, 1 };
	TVMFFIObjectHandle v;
	tio_object_t *src, *fn;
	DLTensor proto, *d;
	float *data;

	ASSERT_EQ(0, tio_tensor_empty(2, shape, f32, 0, &src));
	data = tio_tensor_dl(src)->data;
	data[1] = 1.5f;
	/* The transpose, one element in, as int32: not checked, as TVM FFI. */
	proto = (DLTensor){ .data = data, .device = { kDLCPU, 0 }, .ndim = 2,
			    .dtype = { kDLInt, 32, 1 }, .shape = vshape, .strides = vstrides,
			    .byte_offset = 4 };
	ASSERT_EQ(0, TVMFFITensorCreateUnsafeView(src, &proto, &v));
	vshape[0] = vstrides[0] = 99;	/* copied, not borrowed */
	d = tio_tensor_dl(v);
	EXPECT_EQ(data, d->data);
	EXPECT_EQ(4, d->byte_offset);
	EXPECT_EQ(kDLInt, d->dtype.code);
	EXPECT_EQ(2, d->ndim);
	EXPECT_EQ(3, d->shape[0]);
	EXPECT_EQ(2, d->shape[1]);
	EXPECT_EQ(1, d->strides[0]);
	EXPECT_EQ(3, d->strides[1]);
	EXPECT_EQ(0, tio_tensor_is_readonly(v));
	tio_object_decref(src);		/* the view keeps it */
	EXPECT_EQ(1.5f, *(float *)((char *)d->data + d->byte_offset));
	TVMFFIObjectDecRef(v);

	ASSERT_EQ(0, tio_tensor_empty(0, NULL, f32, 0, &src));
	proto = *tio_tensor_dl(src);
	ASSERT_EQ(0, TVMFFITensorCreateUnsafeView(src, &proto, &v));
	EXPECT_EQ(0, tio_tensor_dl(v)->ndim);
	TVMFFIObjectDecRef(v);

	proto.ndim = 1;
	proto.shape = shape;
	proto.strides = NULL;
	EXPECT_EQ(-1, TVMFFITensorCreateUnsafeView(src, &proto, &v));
	ASSERT_RAISED("ValueError", "strides");
	proto.ndim = -1;
	EXPECT_EQ(-1, TVMFFITensorCreateUnsafeView(src, &proto, &v));
	ASSERT_RAISED("ValueError", "-1 dimensions");
	EXPECT_EQ(-1, TVMFFITensorCreateUnsafeView(src, NULL, &v));
	ASSERT_RAISED("ValueError", "NULL");
	EXPECT_EQ(-1, TVMFFITensorCreateUnsafeView(src, &proto, NULL));
	ASSERT_RAISED("ValueError", "NULL");
	ASSERT_EQ(0, TVMFFIFunctionCreate(NULL, echo_self, NULL, (TVMFFIObjectHandle *)&fn));
	proto.ndim = 0;
	EXPECT_EQ(-1, TVMFFITensorCreateUnsafeView(fn, &proto, &v));
	ASSERT_RAISED("TypeError", "ffi.Tensor");
	EXPECT_EQ(-1, TVMFFITensorCreateUnsafeView(NULL, &proto, &v));
	ASSERT_RAISED("TypeError", "ffi.Tensor");
	tio_object_decref(fn);
	tio_object_decref(src);
	ASSERT_NO_LEAKS();
}

static void *backtrace_thread(void *arg)
{
	const TVMFFIByteArray *b = TVMFFIBacktrace("t.c", 7, "in_thread", 1);

	return (void *)(uintptr_t)(b->size > 0 && !strncmp(b->data, "in_thread at t.c:7\n", 19));
}

TEST(entry_backtrace)
{
	const TVMFFIByteArray *b;
	pthread_t th;
	void *ok;

	b = TVMFFIBacktrace("file.c", 42, "my_func", 0);
	ASSERT_NE(NULL, b);
	ASSERT_GE(b->size, 21);
	EXPECT_EQ(0, strncmp(b->data, "my_func at file.c:42\n", 21));
	EXPECT_EQ(strlen(b->data), b->size);
	b = TVMFFIBacktrace(NULL, 0, NULL, 1);
	ASSERT_NE(NULL, b);
	EXPECT_EQ(strlen(b->data), b->size);
	EXPECT_EQ(NULL, strstr(b->data, "my_func at"));
	ASSERT_EQ(0, pthread_create(&th, NULL, backtrace_thread, NULL));
	ASSERT_EQ(0, pthread_join(th, &ok));
	EXPECT_EQ((void *)1, ok);
	ASSERT_NO_LEAKS();
}

static int signals_checked, gil_held, signal_result;

static int fake_check_signals(void)
{
	signals_checked += gil_held;
	return signal_result;
}

static void *fake_gil_ensure(void)
{
	gil_held = 1;
	return &gil_held;
}

static void fake_gil_release(void *state)
{
	gil_held -= state == &gil_held;
}

TEST(entry_env_capi)
{
	EXPECT_EQ(0, TVMFFIEnvCheckSignals());
	ASSERT_EQ(0, TVMFFIEnvRegisterCAPI("PyErr_CheckSignals", (void *)fake_check_signals));
	EXPECT_EQ(-1, TVMFFIEnvCheckSignals());
	ASSERT_RAISED("RuntimeError", "PyGILState_Ensure");
	EXPECT_EQ(0, signals_checked);
	ASSERT_EQ(0, TVMFFIEnvRegisterCAPI("PyGILState_Ensure", (void *)fake_gil_ensure));
	ASSERT_EQ(0, TVMFFIEnvRegisterCAPI("PyGILState_Release", (void *)fake_gil_release));
	EXPECT_EQ(0, TVMFFIEnvCheckSignals());
	EXPECT_EQ(1, signals_checked);
	EXPECT_EQ(0, gil_held);
	signal_result = -1;	/* the interpreter holds the error: nothing raised here */
	EXPECT_EQ(-1, TVMFFIEnvCheckSignals());
	EXPECT_EQ(NULL, tio_error_peek_raised());
	EXPECT_EQ(2, signals_checked);
	EXPECT_EQ(0, gil_held);
	ASSERT_EQ(0, TVMFFIEnvRegisterCAPI("PyErr_CheckSignals", NULL));
	EXPECT_EQ(0, TVMFFIEnvCheckSignals());
	EXPECT_EQ(2, signals_checked);

	EXPECT_EQ(-1, TVMFFIEnvRegisterCAPI("Py_Nothing", (void *)fake_gil_ensure));
	ASSERT_RAISED("ValueError", "Unknown env API Py_Nothing");
	EXPECT_EQ(-1, TVMFFIEnvRegisterCAPI(NULL, NULL));
	ASSERT_RAISED("ValueError", "NULL");
	ASSERT_NO_LEAKS();
}

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

TEST(entry_type_attr)
{
	TVMFFIByteArray name = ba("test.tvmffi.attr"), other = ba("test.tvmffi.none");
	TVMFFIAny none = { .type_index = kTVMFFINone };
	TVMFFIAny five = { .type_index = kTVMFFIInt, .v_int64 = 5 };
	TVMFFIAny text = { .type_index = kTVMFFIRawStr, .v_c_str = "a value longer than seven" };
	TVMFFIAny func = { .type_index = kTVMFFIFunction };
	const TVMFFITypeAttrColumn *col, *again;
	TVMFFIObjectHandle f;

	EXPECT_EQ(NULL, TVMFFIGetTypeAttrColumn(&name));
	ASSERT_EQ(0, TVMFFITypeRegisterAttr(kTVMFFINone, &other, &none));	/* only makes it */
	col = TVMFFIGetTypeAttrColumn(&other);
	ASSERT_NE(NULL, col);
	EXPECT_EQ(0, col->size);

	ASSERT_EQ(0, TVMFFITypeRegisterAttr(kTVMFFITensor, &name, &five));
	col = TVMFFIGetTypeAttrColumn(&name);
	ASSERT_NE(NULL, col);
	EXPECT_EQ(0, col->begin_index);
	EXPECT_EQ(kTVMFFITensor + 1, col->size);
	EXPECT_EQ(kTVMFFIInt, col->data[kTVMFFITensor].type_index);
	EXPECT_EQ(5, col->data[kTVMFFITensor].v_int64);
	EXPECT_EQ(kTVMFFINone, col->data[kTVMFFITensor - 1].type_index);
	EXPECT_EQ(-1, TVMFFITypeRegisterAttr(kTVMFFITensor, &name, &five));
	ASSERT_RAISED("RuntimeError", "`test.tvmffi.attr` is already registered for type index 70");

	/* Values are owned (a raw string becomes a String); the data never moves. */
	ASSERT_EQ(0, TVMFFITypeRegisterAttr(100, &name, &text));
	ASSERT_EQ(0, TVMFFIFunctionCreate(NULL, echo_self, NULL, &f));
	func.v_obj = f;
	ASSERT_EQ(0, TVMFFITypeRegisterAttr(kTVMFFIModule, &name, &func));
	TVMFFIObjectDecRef(f);
	again = TVMFFIGetTypeAttrColumn(&name);
	EXPECT_EQ(col, again);
	EXPECT_EQ(101, col->size);
	EXPECT_EQ(kTVMFFIStr, col->data[100].type_index);
	EXPECT_EQ(f, col->data[kTVMFFIModule].v_obj);
	EXPECT_EQ(2, LIVE());	/* held by the column, as long as the process */

	EXPECT_EQ(-1, TVMFFITypeRegisterAttr(-1, &name, &five));
	ASSERT_RAISED("ValueError", "outside");
	EXPECT_EQ(-1, TVMFFITypeRegisterAttr(4096, &name, &five));
	ASSERT_RAISED("ValueError", "outside");
	EXPECT_EQ(-1, TVMFFITypeRegisterAttr(101, NULL, &five));
	ASSERT_RAISED("ValueError", "NULL");
	EXPECT_EQ(-1, TVMFFITypeRegisterAttr(101, &name, NULL));
	ASSERT_RAISED("ValueError", "NULL");
	EXPECT_EQ(NULL, TVMFFIGetTypeAttrColumn(NULL));
	EXPECT_EQ(101, col->size);
	EXPECT_EQ(NULL, tio_error_peek_raised());
}

static int get_42(void *field, TVMFFIAny *out)
{
	out->type_index = kTVMFFIInt;
	out->zero_padding = 0;
	out->v_int64 = 42;
	return 0;
}

TEST(entry_type_register)
{
	TVMFFIByteArray key = ba("test.tvmffi.Reg");
	TVMFFIFieldInfo fi = { .name = { "x", 1 }, .doc = { "an x", 4 }, .size = 8, .offset = 24,
			       .flags = kTVMFFIFieldFlagBitMaskWritable, .getter = get_42,
			       .field_static_type_index = kTVMFFIInt };
	TVMFFIMethodInfo mi = { .name = { "add3", 4 },
				.flags = kTVMFFIFieldFlagBitMaskIsStaticMethod };
	TVMFFITypeMetadata md = { .doc = { "a node", 6 }, .total_size = 32 };
	tio_any_t arg = tio_any_int(5), ret = tio_any_none();
	const tio_method_info_t *m;
	const TVMFFITypeInfo *ti;
	TVMFFIObjectHandle f;
	static int three = 3;
	int32_t t;

	t = TVMFFITypeGetOrAllocIndex(&key, -1, 1, 0, 0, kTVMFFIObject);
	ASSERT_GE(t, kTVMFFIDynObjectBegin);
	ASSERT_EQ(0, TVMFFITypeRegisterField(t, &fi));
	ASSERT_NE(NULL, tio_type_find_field(t, "x"));
	EXPECT_STREQ("an x", tio_type_find_field(t, "x")->doc);
	ti = TVMFFIGetTypeInfo(t);
	ASSERT_NE(NULL, ti);
	ASSERT_EQ(1, ti->num_fields);
	EXPECT_EQ((void *)get_42, (void *)ti->fields[0].getter);
	EXPECT_EQ(kTVMFFIFieldFlagBitMaskWritable, ti->fields[0].flags);
	EXPECT_EQ(24, ti->fields[0].offset);
	EXPECT_EQ(NULL, ti->metadata);

	ASSERT_EQ(0, TVMFFIFunctionCreate(&three, (TVMFFISafeCallType)add_self, NULL, &f));
	mi.method.type_index = kTVMFFIFunction;
	mi.method.v_obj = f;
	ASSERT_EQ(0, TVMFFITypeRegisterMethod(t, &mi));
	TVMFFIObjectDecRef(f);		/* the type keeps it */
	m = tio_type_find_method(t, "add3");
	ASSERT_NE(NULL, m);
	EXPECT_EQ(TIO_METHOD_STATIC, m->flags);
	ASSERT_EQ(0, tio_func_call(m->func, &arg, 1, &ret));
	EXPECT_EQ(8, ret.v_int64);
	ti = TVMFFIGetTypeInfo(t);
	ASSERT_EQ(1, ti->num_methods);
	EXPECT_EQ(0, memcmp(ti->methods[0].name.data, "add3", 4));
	EXPECT_EQ(kTVMFFIFieldFlagBitMaskIsStaticMethod, ti->methods[0].flags);

	ASSERT_EQ(0, TVMFFITypeRegisterMetadata(t, &md));
	EXPECT_STREQ("a node", tio_type_info(t)->doc);
	ti = TVMFFIGetTypeInfo(t);
	ASSERT_NE(NULL, ti->metadata);
	EXPECT_EQ(32, ti->metadata->total_size);
	EXPECT_EQ(6, ti->metadata->doc.size);
	EXPECT_EQ(0, memcmp(ti->metadata->doc.data, "a node", 6));
	md.total_size = 40;
	ASSERT_EQ(0, TVMFFITypeRegisterMetadata(t, &md));
	EXPECT_EQ(40, TVMFFIGetTypeInfo(t)->metadata->total_size);
	EXPECT_EQ(32, ti->metadata->total_size);	/* the old info stays readable */

	EXPECT_EQ(-1, TVMFFITypeRegisterField(t, &fi));
	ASSERT_RAISED("ValueError", "already has a field 'x'");
	fi.flags |= kTVMFFIFieldFlagBitSetterIsFunctionObj;
	EXPECT_EQ(-1, TVMFFITypeRegisterField(t, &fi));
	ASSERT_RAISED("ValueError", "Function objects");
	fi.flags = 0;
	fi.name = (TVMFFIByteArray){ "y\0z", 3 };
	EXPECT_EQ(-1, TVMFFITypeRegisterField(t, &fi));
	ASSERT_RAISED("ValueError", "NUL");
	fi.name = (TVMFFIByteArray){ "y", 1 };
	EXPECT_EQ(-1, TVMFFITypeRegisterField(4000, &fi));
	ASSERT_RAISED("ValueError", "4000");
	EXPECT_EQ(-1, TVMFFITypeRegisterField(t, NULL));
	ASSERT_RAISED("ValueError", "NULL");
	mi.method.type_index = kTVMFFIInt;
	EXPECT_EQ(-1, TVMFFITypeRegisterMethod(t, &mi));
	ASSERT_RAISED("TypeError", "ffi.Function");
	EXPECT_EQ(-1, TVMFFITypeRegisterMethod(t, NULL));
	ASSERT_RAISED("ValueError", "NULL");
	EXPECT_EQ(-1, TVMFFITypeRegisterMetadata(t, NULL));
	ASSERT_RAISED("ValueError", "NULL");
	EXPECT_EQ(-1, TVMFFITypeRegisterMetadata(4000, &md));
	ASSERT_RAISED("ValueError", "4000");
	EXPECT_EQ(1, LIVE());	/* the method's Function, kept by the type */
	EXPECT_EQ(NULL, tio_error_peek_raised());
}

TEST_HARNESS_MAIN
