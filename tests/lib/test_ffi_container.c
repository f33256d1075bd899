// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Containers (Array, Map, Shape) and dtype/device text.
 */
#include <string.h>

#include "ffi_test.h"
#include "kselftest_harness.h"

TEST(array)
{
	tio_any_t items[3] = { tio_any_int(1), tio_any_raw_str("a raw string, copied"),
			       tio_any_float(3.5) }, v;
	tio_object_t *a;
	const char *p;
	int i;

	ASSERT_EQ(0, tio_array_new(items, 3, &a));
	EXPECT_EQ(3, tio_array_size(a));
	EXPECT_EQ(TIO_TYPE_STR, tio_array_at(a, 1)->type_index);
	EXPECT_EQ(2, LIVE());
	ASSERT_EQ(0, tio_array_get(a, -1, &v));
	EXPECT_EQ(3.5, v.v_float64);
	ASSERT_EQ(0, tio_array_get(a, 1, &v));
	EXPECT_EQ(2, tio_object_strong_count(v.v_obj));
	ASSERT_EQ(0, tio_any_to_str(&v, &p, NULL));
	EXPECT_STREQ("a raw string, copied", p);
	for (i = 0; i < 100; i++)
		ASSERT_EQ(0, tio_array_push(a, &v));
	EXPECT_EQ(103, tio_array_size(a));
	EXPECT_EQ(102, tio_object_strong_count(v.v_obj));
	tio_any_decref(&v);
	v = tio_any_int(9);
	ASSERT_EQ(0, tio_array_set(a, 1, &v));
	EXPECT_EQ(9, tio_array_at(a, 1)->v_int64);
	EXPECT_EQ(-1, tio_array_get(a, 103, &v));
	ASSERT_RAISED("IndexError", "index 103 out of range for size 103");
	EXPECT_EQ(-1, tio_array_set(a, -104, &v));
	ASSERT_RAISED("IndexError", "out of range");
	ASSERT_EQ(0, tio_array_pop(a, &v));
	EXPECT_EQ(TIO_TYPE_STR, v.type_index);
	tio_any_decref(&v);
	ASSERT_EQ(0, tio_array_pop(a, NULL));
	EXPECT_EQ(101, tio_array_size(a));
	v = tio_any_object(a);
	EXPECT_EQ(-1, tio_array_new(&v, -1, &a));
	ASSERT_RAISED("ValueError", "bad array items");
	tio_object_decref(v.v_obj);
	ASSERT_NO_LEAKS();
}

TEST(array_empty_and_type_checks)
{
	tio_object_t *a, *m;
	tio_any_t v;

	ASSERT_EQ(0, tio_array_new(NULL, 0, &a));
	EXPECT_EQ(0, tio_array_size(a));
	EXPECT_EQ(-1, tio_array_pop(a, &v));
	ASSERT_RAISED("IndexError", "empty");
	ASSERT_EQ(0, tio_map_new(&m));
	v = tio_any_int(1);
	EXPECT_EQ(-1, tio_array_push(m, &v));
	ASSERT_RAISED("TypeError", "expected ffi.Array, got ffi.Map");
	EXPECT_EQ(-1, tio_map_set(a, &v, &v));
	ASSERT_RAISED("TypeError", "expected ffi.Map, got ffi.Array");
	tio_object_decref(a);
	tio_object_decref(m);
	ASSERT_NO_LEAKS();
}

TEST(map)
{
	tio_any_t k, v, out, big, same;
	const tio_any_t *kp, *vp;
	tio_object_t *m, *obj;
	int64_t pos = 0, i;
	int n = 0;

	ASSERT_EQ(0, tio_map_new(&m));
	EXPECT_EQ(0, tio_map_size(m));
	/* String keys by content: SmallStr, Str and RawStr alike. */
	ASSERT_EQ(0, tio_str_new("key longer than seven", 21, &big));
	v = tio_any_int(1);
	ASSERT_EQ(0, tio_map_set(m, &big, &v));
	same = tio_any_raw_str("key longer than seven");
	ASSERT_EQ(0, tio_map_get(m, &same, &out));
	EXPECT_EQ(1, out.v_int64);
	k = tio_any_raw_str("short");
	v = tio_any_int(2);
	ASSERT_EQ(0, tio_map_set(m, &k, &v));
	ASSERT_EQ(0, tio_str_new("short", 5, &out));
	EXPECT_EQ(TIO_TYPE_SMALL_STR, out.type_index);
	EXPECT_TRUE(tio_map_contains(m, &out));
	/* Int keys by value, object keys by identity. */
	for (i = 0; i < 1000; i++) {
		k = tio_any_int(i);
		v = tio_any_int(i * i);
		ASSERT_EQ(0, tio_map_set(m, &k, &v));
	}
	ASSERT_EQ(0, tio_array_new(NULL, 0, &obj));
	k = tio_any_object(obj);
	ASSERT_EQ(0, tio_map_set(m, &k, &big));
	EXPECT_EQ(2, tio_object_strong_count(obj));
	EXPECT_EQ(1003, tio_map_size(m));
	k = tio_any_int(31);
	ASSERT_EQ(0, tio_map_get(m, &k, &out));
	EXPECT_EQ(961, out.v_int64);
	/* Replace, erase, miss. */
	v = tio_any_float(0.5);
	ASSERT_EQ(0, tio_map_set(m, &k, &v));
	ASSERT_EQ(0, tio_map_get(m, &k, &out));
	EXPECT_EQ(0.5, out.v_float64);
	EXPECT_EQ(1003, tio_map_size(m));
	for (i = 0; i < 1000; i += 2) {
		k = tio_any_int(i);
		ASSERT_EQ(0, tio_map_erase(m, &k));
	}
	EXPECT_EQ(503, tio_map_size(m));
	k = tio_any_int(2);
	EXPECT_EQ(-1, tio_map_get(m, &k, &out));
	ASSERT_RAISED("KeyError", "not in map");
	EXPECT_EQ(-1, tio_map_erase(m, &k));
	ASSERT_RAISED("KeyError", "not in map");
	/* Insertion order. */
	ASSERT_EQ(1, tio_map_next(m, &pos, &kp, &vp));
	EXPECT_EQ(TIO_TYPE_STR, kp->type_index);
	EXPECT_EQ(1, vp->v_int64);
	n = 1;
	while (tio_map_next(m, &pos, &kp, NULL))
		n++;
	EXPECT_EQ(503, n);
	k = tio_any_object(obj);
	ASSERT_EQ(0, tio_map_erase(m, &k));
	EXPECT_EQ(1, tio_object_strong_count(obj));
	/* Keys are still found after erasures and growth. */
	for (i = 0; i < 2000; i++) {
		k = tio_any_int(10000 + i);
		ASSERT_EQ(0, tio_map_set(m, &k, &k));
	}
	k = tio_any_int(999);
	ASSERT_EQ(0, tio_map_get(m, &k, &out));
	EXPECT_EQ(999 * 999, out.v_int64);
	tio_object_decref(obj);
	tio_any_decref(&big);
	tio_object_decref(m);
	ASSERT_NO_LEAKS();
}

TEST(shape)
{
	int64_t dims[3] = { 2, 3, 4 }, bad[2] = { 1, -1 };
	tio_object_t *s;

	ASSERT_EQ(0, tio_shape_new(dims, 3, &s));
	EXPECT_EQ(TIO_TYPE_SHAPE, s->type_index);
	EXPECT_EQ(3, tio_shape_ndim(s));
	EXPECT_EQ(4, tio_shape_data(s)[2]);
	EXPECT_NE(&dims[0], tio_shape_data(s));
	EXPECT_EQ(24, tio_shape_numel(s));
	tio_object_decref(s);
	ASSERT_EQ(0, tio_shape_new(NULL, 0, &s));
	EXPECT_EQ(1, tio_shape_numel(s));
	tio_object_decref(s);
	EXPECT_EQ(-1, tio_shape_new(bad, 2, &s));
	ASSERT_RAISED("ValueError", "dimension 1 is negative");
	EXPECT_EQ(-1, tio_shape_new(dims, -1, &s));
	ASSERT_RAISED("ValueError", "rank");
	ASSERT_NO_LEAKS();
}

static void dtype_roundtrip(struct __test_metadata *_metadata, const char *text,
			    uint8_t code, uint8_t bits, uint16_t lanes)
{
	char buf[TIO_DTYPE_STR_MAX];
	DLDataType dt;

	ASSERT_EQ(0, tio_dtype_parse(text, &dt)) TH_LOG("%s", text);
	EXPECT_EQ(code, dt.code) TH_LOG("%s", text);
	EXPECT_EQ(bits, dt.bits) TH_LOG("%s", text);
	EXPECT_EQ(lanes, dt.lanes) TH_LOG("%s", text);
	ASSERT_EQ(strlen(text), tio_dtype_print(dt, buf, sizeof(buf)));
	EXPECT_STREQ(text, buf);
}

TEST(dtype_text)
{
	static const char *const bad[] = {
		"", "float", "float31", "int7", "bfloat32", "int8x", "int8x0", "int8x65536",
		"int8x-1", "xint8", "float32 ", "Float32", "bool8", "float8_e4m3fnx",
		"int08", "uint1000", "complex32", "float8", NULL,
	};
	DLDataType dt = { 200, 8, 1 };
	char buf[8];
	int i;

	dtype_roundtrip(_metadata, "float32", TIO_DL_FLOAT, 32, 1);
	dtype_roundtrip(_metadata, "float16", TIO_DL_FLOAT, 16, 1);
	dtype_roundtrip(_metadata, "bfloat16", TIO_DL_BFLOAT, 16, 1);
	dtype_roundtrip(_metadata, "int8x4", TIO_DL_INT, 8, 4);
	dtype_roundtrip(_metadata, "uint64", TIO_DL_UINT, 64, 1);
	dtype_roundtrip(_metadata, "int1", TIO_DL_INT, 1, 1);
	dtype_roundtrip(_metadata, "bool", TIO_DL_BOOL, 8, 1);
	dtype_roundtrip(_metadata, "complex64", TIO_DL_COMPLEX, 64, 1);
	dtype_roundtrip(_metadata, "handle", TIO_DL_OPAQUE_HANDLE, 64, 1);
	dtype_roundtrip(_metadata, "float8_e4m3fn", TIO_DL_FLOAT8_E4M3FN, 8, 1);
	dtype_roundtrip(_metadata, "float8_e5m2x2", TIO_DL_FLOAT8_E5M2, 8, 2);
	dtype_roundtrip(_metadata, "float4_e2m1fn", TIO_DL_FLOAT4_E2M1FN, 4, 1);
	dtype_roundtrip(_metadata, "float6_e3m2fn", TIO_DL_FLOAT6_E3M2FN, 6, 1);
	dtype_roundtrip(_metadata, "float32x65535", TIO_DL_FLOAT, 32, 65535);
	for (i = 0; bad[i]; i++) {
		EXPECT_EQ(-1, tio_dtype_parse(bad[i], &dt)) TH_LOG("'%s' parsed", bad[i]);
		ASSERT_RAISED("ValueError", "is not a dtype");
	}
	dt = (DLDataType){ 200, 8, 1 };
	EXPECT_EQ(-1, tio_dtype_print(dt, buf, sizeof(buf)));
	ASSERT_RAISED("ValueError", "unknown");
	dt = (DLDataType){ TIO_DL_FLOAT, 32, 1000 };
	EXPECT_EQ(-1, tio_dtype_print(dt, buf, sizeof(buf)));
	ASSERT_RAISED("ValueError", "needs 13 bytes, 8 given");
	ASSERT_NO_LEAKS();
}

TEST(device_text)
{
	static const char *const bad[] = {
		"", "gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:1:2", "CPU", "cuda:01",
		"cuda:99999999999", "cuda :1", ":0", NULL,
	};
	char buf[TIO_DEVICE_STR_MAX];
	DLDevice d;
	int i;

	ASSERT_EQ(0, tio_device_parse("cpu", &d));
	EXPECT_EQ(kDLCPU, d.device_type);
	EXPECT_EQ(0, d.device_id);
	ASSERT_EQ(0, tio_device_parse("cuda:1", &d));
	EXPECT_EQ(kDLCUDA, d.device_type);
	EXPECT_EQ(1, d.device_id);
	ASSERT_EQ(6, tio_device_print(d, buf, sizeof(buf)));
	EXPECT_STREQ("cuda:1", buf);
	ASSERT_EQ(0, tio_device_parse("rocm:0", &d));
	EXPECT_EQ(kDLROCM, d.device_type);
	ASSERT_EQ(0, tio_device_parse("cuda_host", &d));
	EXPECT_EQ(kDLCUDAHost, d.device_type);
	ASSERT_EQ(0, tio_device_parse("trn:2147483647", &d));
	EXPECT_EQ(TIO_DL_TRN, (int)d.device_type);
	EXPECT_EQ(2147483647, d.device_id);
	ASSERT_EQ(0, tio_device_print(d, buf, sizeof(buf)) < 0);
	EXPECT_STREQ("trn:2147483647", buf);
	for (i = 0; bad[i]; i++) {
		EXPECT_EQ(-1, tio_device_parse(bad[i], &d)) TH_LOG("'%s' parsed", bad[i]);
		ASSERT_RAISED("ValueError", "is not a device");
	}
	d.device_type = (DLDeviceType)5;
	d.device_id = 0;
	EXPECT_EQ(-1, tio_device_print(d, buf, sizeof(buf)));
	ASSERT_RAISED("ValueError", "device type 5");
	d.device_type = kDLCPU;
	EXPECT_EQ(-1, tio_device_print(d, buf, 3));
	ASSERT_RAISED("ValueError", "needs 6 bytes");
	ASSERT_NO_LEAKS();
}

TEST_HARNESS_MAIN
