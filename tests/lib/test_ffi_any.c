// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Any values: layout, constructors, conversions and their type errors,
 * strings and bytes (inline and heap), owned copies, equality and hashing.
 */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "ffi_test.h"
#include "kselftest_harness.h"

TEST(layout_matches_tvm_ffi)
{
	ASSERT_EQ(16, sizeof(tio_any_t));
	ASSERT_EQ(0, offsetof(tio_any_t, type_index));
	ASSERT_EQ(4, offsetof(tio_any_t, small_len));
	ASSERT_EQ(8, offsetof(tio_any_t, v_int64));
	ASSERT_EQ(24, sizeof(tio_object_t));
	ASSERT_EQ(0, offsetof(tio_object_t, combined_ref_count));
	ASSERT_EQ(8, offsetof(tio_object_t, type_index));
	ASSERT_EQ(16, offsetof(tio_object_t, deleter));
	ASSERT_EQ(24, offsetof(tio_str_obj_t, bytes));
	ASSERT_EQ(24, offsetof(tio_func_obj_t, safe_call));
	ASSERT_EQ(24, offsetof(tio_tensor_obj_t, dl));
	ASSERT_EQ(24, offsetof(tio_shape_obj_t, data));
	ASSERT_EQ(24, offsetof(tio_error_obj_t, cell));
	EXPECT_EQ(11, TIO_TYPE_SMALL_STR);
	EXPECT_EQ(73, TIO_TYPE_MODULE);
	EXPECT_EQ(128, TIO_TYPE_DYN_OBJECT_BEGIN);
}

TEST(pod_constructors_and_accessors)
{
	DLDataType dt = { kDLFloat, 32, 1 }, dt2;
	DLDevice dev = { kDLCUDA, 3 }, dev2;
	DLTensor t = { 0 }, *tp;
	tio_any_t a;
	int64_t i;
	double d;
	void *p;
	int b;

	a = tio_any_none();
	EXPECT_EQ(TIO_TYPE_NONE, a.type_index);
	EXPECT_EQ(0, tio_any_to_ptr(&a, &p));
	EXPECT_EQ(NULL, p);
	a = tio_any_int(-42);
	ASSERT_EQ(0, tio_any_to_int(&a, &i));
	EXPECT_EQ(-42, i);
	ASSERT_EQ(0, tio_any_to_float(&a, &d));
	EXPECT_EQ(-42.0, d);
	ASSERT_EQ(0, tio_any_to_bool(&a, &b));
	EXPECT_EQ(1, b);
	a = tio_any_bool(7);
	EXPECT_EQ(TIO_TYPE_BOOL, a.type_index);
	EXPECT_EQ(1, a.v_int64);
	a = tio_any_float(2.5);
	ASSERT_EQ(0, tio_any_to_float(&a, &d));
	EXPECT_EQ(2.5, d);
	a = tio_any_ptr(&i);
	ASSERT_EQ(0, tio_any_to_ptr(&a, &p));
	EXPECT_EQ(&i, p);
	EXPECT_EQ(TIO_TYPE_NONE, tio_any_ptr(NULL).type_index);
	a = tio_any_dtype(dt);
	ASSERT_EQ(0, tio_any_to_dtype(&a, &dt2));
	EXPECT_EQ(32, dt2.bits);
	a = tio_any_device(dev);
	ASSERT_EQ(0, tio_any_to_device(&a, &dev2));
	EXPECT_EQ(3, dev2.device_id);
	EXPECT_EQ(0, a.zero_padding);
	a = tio_any_dltensor(&t);
	ASSERT_EQ(0, tio_any_to_dltensor(&a, &tp));
	EXPECT_EQ(&t, tp);
	ASSERT_NO_LEAKS();
}

TEST(conversions_raise_type_errors)
{
	tio_any_t a = tio_any_float(1.5), s;
	DLDataType dt;
	DLDevice dev;
	DLTensor *tp;
	const char *str;
	tio_object_t *o;
	int64_t i = 99;
	void *p;
	int b;

	EXPECT_EQ(-1, tio_any_to_int(&a, &i));
	EXPECT_EQ(0, i);
	ASSERT_RAISED("TypeError", "expected int, got float");
	EXPECT_EQ(-1, tio_any_to_bool(&a, &b));
	ASSERT_RAISED("TypeError", "expected bool");
	a = tio_any_none();
	EXPECT_EQ(-1, tio_any_to_float(&a, (double *)&i));
	ASSERT_RAISED("TypeError", "got None");
	a = tio_any_int(1);
	EXPECT_EQ(-1, tio_any_to_ptr(&a, &p));
	ASSERT_RAISED("TypeError", "opaque pointer");
	EXPECT_EQ(-1, tio_any_to_dtype(&a, &dt));
	ASSERT_RAISED("TypeError", "dtype");
	EXPECT_EQ(-1, tio_any_to_device(&a, &dev));
	ASSERT_RAISED("TypeError", "device");
	EXPECT_EQ(-1, tio_any_to_dltensor(&a, &tp));
	ASSERT_RAISED("TypeError", "tensor");
	EXPECT_EQ(-1, tio_any_to_str(&a, &str, NULL));
	ASSERT_RAISED("TypeError", "expected str, got int");
	EXPECT_EQ(-1, tio_any_to_object(&a, TIO_TYPE_OBJECT, &o));
	ASSERT_RAISED("TypeError", "got int");
	ASSERT_EQ(0, tio_str_new("a long string, on the heap", 26, &s));
	EXPECT_EQ(-1, tio_any_to_object(&s, TIO_TYPE_ARRAY, &o));
	ASSERT_RAISED("TypeError", "expected ffi.Array, got ffi.String");
	ASSERT_EQ(0, tio_any_to_object(&s, TIO_TYPE_OBJECT, &o));
	EXPECT_EQ(s.v_obj, o);
	tio_any_decref(&s);
	ASSERT_NO_LEAKS();
}

TEST(small_strings_inline)
{
	const char *p;
	tio_any_t s;
	size_t n;

	ASSERT_EQ(0, tio_str_new("1234567", 7, &s));
	EXPECT_EQ(TIO_TYPE_SMALL_STR, s.type_index);
	EXPECT_EQ(7, s.small_len);
	ASSERT_EQ(0, tio_any_to_str(&s, &p, &n));
	EXPECT_EQ(7, n);
	EXPECT_STREQ("1234567", p);
	EXPECT_EQ((const char *)s.v_bytes, p);
	EXPECT_EQ(0, LIVE());
	tio_any_decref(&s);
	ASSERT_EQ(0, tio_str_new("", 0, &s));
	EXPECT_EQ(TIO_TYPE_SMALL_STR, s.type_index);
	EXPECT_EQ(0, s.small_len);
	ASSERT_EQ(0, tio_bytes_new("\0\1\2", 3, &s));
	EXPECT_EQ(TIO_TYPE_SMALL_BYTES, s.type_index);
	EXPECT_EQ(3, s.small_len);
	EXPECT_EQ(2, s.v_bytes[2]);
	ASSERT_NO_LEAKS();
}

TEST(heap_strings_and_bytes)
{
	const char *text = "eight+ bytes go to the heap, NUL-terminated";
	const void *d;
	const char *p;
	tio_any_t s, b;
	size_t n;

	ASSERT_EQ(0, tio_str_from_cstr(text, &s));
	EXPECT_EQ(TIO_TYPE_STR, s.type_index);
	EXPECT_EQ(1, LIVE());
	EXPECT_EQ(1, tio_object_strong_count(s.v_obj));
	ASSERT_EQ(0, tio_any_to_str(&s, &p, &n));
	EXPECT_EQ(strlen(text), n);
	EXPECT_STREQ(text, p);
	EXPECT_EQ('\0', p[n]);
	ASSERT_EQ(0, tio_bytes_new("12345678\0x", 10, &b));
	EXPECT_EQ(TIO_TYPE_BYTES, b.type_index);
	ASSERT_EQ(0, tio_any_to_bytes(&b, &d, &n));
	EXPECT_EQ(10, n);
	EXPECT_EQ(0, memcmp(d, "12345678\0x", 10));
	EXPECT_EQ(-1, tio_any_to_str(&b, &p, &n));
	ASSERT_RAISED("TypeError", "got ffi.Bytes");
	tio_any_decref(&s);
	tio_any_decref(&b);
	EXPECT_EQ(TIO_TYPE_NONE, s.type_index);
	EXPECT_EQ(-1, tio_str_from_cstr(NULL, &s));
	ASSERT_RAISED("ValueError", "NULL");
	ASSERT_NO_LEAKS();
}

static void *release_str(void *arg)
{
	tio_any_decref(arg);
	return NULL;
}

/*
 * Strings around the size whose blocks the releasing thread keeps: each
 * has its own bytes and NUL after a block is reused; one released by
 * another thread (kept there, freed when it exits) is gone too.
 */
TEST(string_blocks_reused)
{
	static const size_t lens[] = { 8, 40, 87, 88, 127, 300, 40, 8 };
	char text[301];
	const char *p;
	pthread_t t;
	tio_any_t s;
	size_t i, n;
	int round;

	for (round = 0; round < 3; round++) {
		for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			memset(text, 'a' + (int)((i + round) % 26), lens[i]);
			text[lens[i]] = '\0';
			ASSERT_EQ(0, tio_str_new(text, lens[i], &s));
			EXPECT_EQ(1, LIVE());
			ASSERT_EQ(0, tio_any_to_str(&s, &p, &n));
			EXPECT_EQ(lens[i], n);
			EXPECT_STREQ(text, p);
			tio_any_decref(&s);
			EXPECT_EQ(0, LIVE());
		}
	}
	ASSERT_EQ(0, tio_str_new(text, 40, &s));
	ASSERT_EQ(0, pthread_create(&t, NULL, release_str, &s));
	pthread_join(t, NULL);
	ASSERT_NO_LEAKS();
}

TEST(copy_views_into_owned_values)
{
	tio_byte_array_t ba = { "0123456789", 10 };
	tio_any_t v, owned, o2;
	tio_object_t *slot;
	const char *p;

	/* RawStr view -> a string that owns its bytes. */
	char buf[32] = "a raw C string here";

	v = tio_any_raw_str(buf);
	ASSERT_EQ(0, tio_any_copy(&owned, &v));
	EXPECT_EQ(TIO_TYPE_STR, owned.type_index);
	buf[0] = 'X';
	ASSERT_EQ(0, tio_any_to_str(&owned, &p, NULL));
	EXPECT_STREQ("a raw C string here", p);
	/* Copying an owned object takes a reference. */
	ASSERT_EQ(0, tio_any_copy(&o2, &owned));
	EXPECT_EQ(2, tio_object_strong_count(owned.v_obj));
	tio_any_decref(&o2);
	EXPECT_EQ(1, tio_object_strong_count(owned.v_obj));
	/* ByteArrayPtr -> Bytes. */
	v.type_index = TIO_TYPE_BYTE_ARRAY_PTR;
	v.v_ptr = &ba;
	ASSERT_EQ(0, tio_any_copy(&o2, &v));
	EXPECT_EQ(TIO_TYPE_BYTES, o2.type_index);
	tio_any_decref(&o2);
	/* ObjectRValueRef moves the object out of its slot. */
	slot = owned.v_obj;
	v.type_index = TIO_TYPE_OBJECT_RVALUE_REF;
	v.v_ptr = &slot;
	ASSERT_EQ(0, tio_any_copy(&o2, &v));
	EXPECT_EQ(NULL, slot);
	EXPECT_EQ(owned.v_obj, o2.v_obj);
	EXPECT_EQ(1, tio_object_strong_count(o2.v_obj));
	tio_any_decref(&o2);	/* the moved reference was owned's */
	ASSERT_NO_LEAKS();
}

TEST(equality_and_hash)
{
	tio_any_t a, b, c;

	ASSERT_EQ(0, tio_str_new("same text, longer than seven", 28, &a));
	ASSERT_EQ(0, tio_str_new("same text, longer than seven", 28, &b));
	EXPECT_NE(a.v_obj, b.v_obj);
	EXPECT_TRUE(tio_any_equal(&a, &b));
	EXPECT_EQ(tio_any_hash(&a), tio_any_hash(&b));
	c = tio_any_raw_str("same text, longer than seven");
	EXPECT_TRUE(tio_any_equal(&a, &c));
	EXPECT_EQ(tio_any_hash(&a), tio_any_hash(&c));
	tio_any_decref(&b);
	ASSERT_EQ(0, tio_bytes_new("same text, longer than seven", 28, &b));
	EXPECT_FALSE(tio_any_equal(&a, &b));	/* str != bytes */
	tio_any_decref(&b);
	b = tio_any_int(1);
	c = tio_any_bool(1);
	EXPECT_TRUE(tio_any_equal(&b, &c));
	EXPECT_EQ(tio_any_hash(&b), tio_any_hash(&c));
	c = tio_any_int(2);
	EXPECT_FALSE(tio_any_equal(&b, &c));
	b = tio_any_float(0.0);
	c = tio_any_float(-0.0);
	EXPECT_TRUE(tio_any_equal(&b, &c));
	EXPECT_EQ(tio_any_hash(&b), tio_any_hash(&c));
	b = tio_any_none();
	c = tio_any_none();
	EXPECT_TRUE(tio_any_equal(&b, &c));
	tio_any_decref(&a);
	ASSERT_NO_LEAKS();
}

TEST(type_names)
{
	tio_any_t a = tio_any_int(1), s;

	EXPECT_STREQ("int", tio_any_type_name(&a));
	a = tio_any_none();
	EXPECT_STREQ("None", tio_any_type_name(&a));
	ASSERT_EQ(0, tio_str_new("abcdefghijk", 11, &s));
	EXPECT_STREQ("ffi.String", tio_any_type_name(&s));
	tio_any_decref(&s);
	a.type_index = 4000;
	EXPECT_STREQ("unknown type", tio_any_type_name(&a));
	ASSERT_NO_LEAKS();
}

TEST_HARNESS_MAIN
