// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtensorio-tvmffi's C entry points for objects, Functions and globals,
 * the custom allocator registry, errors, strings and dtypes, DLPack and
 * the environment (streams, tensor allocator, Python C API), handles
 * initialised once, unsafe Tensor views and backtraces: each with good
 * and bad arguments.
 */
#include <pthread.h>

#include "kselftest_harness.h"
#include "tvmffi_test.h"

static int deleted;

static void count_delete(void *p)
{
	deleted += p == &deleted;
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

TEST_HARNESS_MAIN
