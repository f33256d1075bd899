// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtensorio-tvmffi's type registry entry points: the root entries of
 * the values an Any holds in place, keys, indices and hashes as TVM FFI
 * gives them, fields, methods, metadata and type attribute columns, and
 * globals from method infos: each with good and bad arguments.
 */
#include "kselftest_harness.h"
#include "tvmffi_test.h"

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
