// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The type registry and reflection: keys and indices, ancestors and
 * is-instance, fields (default and custom accessors, writable flag),
 * methods, __ffi_init__, metadata, concurrent registration.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ffi_test.h"
#include "kselftest_harness.h"

struct point {
	tio_object_t header;
	int64_t x;
	int32_t y;
	double w;
	uint8_t visible;
	tio_object_t *label;	/* an ffi.String */
	tio_any_t extra;
	int64_t secret;
};

static void point_fin(void *self)
{
	struct point *p = self;

	tio_object_decref(p->label);
	tio_any_decref(&p->extra);
}

static int32_t point_type(void)
{
	int32_t t;

	if (tio_type_register("test.Point", TIO_TYPE_OBJECT, &t))
		return -1;
	return t;
}

#define FIELD(n, type, idx, fl) {					\
	.struct_size = sizeof(tio_field_info_t), .flags = (fl),		\
	.name = #n, .doc = "field " #n,					\
	.offset = offsetof(struct point, n),				\
	.size = sizeof(((struct point *)0)->n),				\
	.field_type_index = (idx) }

static int register_fields(int32_t t)
{
	tio_field_info_t f[] = {
		FIELD(x, int64_t, TIO_TYPE_INT, TIO_FIELD_WRITABLE),
		FIELD(y, int32_t, TIO_TYPE_INT, TIO_FIELD_WRITABLE),
		FIELD(w, double, TIO_TYPE_FLOAT, TIO_FIELD_WRITABLE),
		FIELD(visible, uint8_t, TIO_TYPE_BOOL, TIO_FIELD_WRITABLE),
		FIELD(label, void *, TIO_TYPE_STR, TIO_FIELD_WRITABLE),
		FIELD(extra, tio_any_t, TIO_TYPE_ANY, TIO_FIELD_WRITABLE),
		FIELD(secret, int64_t, TIO_TYPE_INT, 0),
	};
	size_t i;

	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (tio_type_register_field(t, &f[i]))
			return -1;
	return 0;
}

TEST(register_and_look_up)
{
	const tio_type_info_t *ti;
	int32_t a, b, c, again, idx;

	ASSERT_EQ(0, tio_type_register("test.A", TIO_TYPE_OBJECT, &a));
	EXPECT_GE(a, TIO_TYPE_DYN_OBJECT_BEGIN);
	ASSERT_EQ(0, tio_type_register("test.B", a, &b));
	ASSERT_EQ(0, tio_type_register("test.C", b, &c));
	ASSERT_EQ(0, tio_type_register("test.B", a, &again));
	EXPECT_EQ(b, again);
	EXPECT_EQ(-1, tio_type_register("test.B", TIO_TYPE_OBJECT, &again));
	ASSERT_RAISED("ValueError", "already registered with parent");
	EXPECT_EQ(-1, tio_type_register("test.D", 4000, &again));
	ASSERT_RAISED("ValueError", "parent type index 4000");
	EXPECT_EQ(-1, tio_type_register("", TIO_TYPE_OBJECT, &again));
	ASSERT_RAISED("ValueError", "type key");
	ASSERT_EQ(0, tio_type_key_to_index("test.C", &idx));
	EXPECT_EQ(c, idx);
	ASSERT_EQ(0, tio_type_key_to_index("ffi.Tensor", &idx));
	EXPECT_EQ(TIO_TYPE_TENSOR, idx);
	EXPECT_EQ(-1, tio_type_key_to_index("test.nope", &idx));
	ASSERT_RAISED("KeyError", "no type 'test.nope'");
	ti = tio_type_info(c);
	ASSERT_NE(NULL, ti);
	EXPECT_EQ(sizeof(tio_type_info_t), ti->struct_size);
	EXPECT_STREQ("test.C", ti->type_key);
	EXPECT_EQ(3, ti->type_depth);
	EXPECT_EQ(TIO_TYPE_OBJECT, ti->ancestors[0]);
	EXPECT_EQ(a, ti->ancestors[1]);
	EXPECT_EQ(b, ti->ancestors[2]);
	EXPECT_EQ(b, ti->parent_index);
	EXPECT_EQ(NULL, tio_type_info(-5));
	EXPECT_EQ(NULL, tio_type_info(5000));
	EXPECT_STREQ("ffi.Module", tio_type_info(TIO_TYPE_MODULE)->type_key);
	ASSERT_EQ(0, tio_type_set_doc(c, "a C"));
	EXPECT_STREQ("a C", tio_type_info(c)->doc);
	ASSERT_NO_LEAKS();
}

/* The values an Any holds in place have root entries under TVM FFI's keys. */
TEST(pod_types)
{
	static const char *const keys[] = {
		"None", "int", "bool", "float", "void*", "DataType", "Device", "DLTensor*",
		"const char*", "TVMFFIByteArray*", "ObjectRValueRef", "ffi.SmallStr",
		"ffi.SmallBytes",
	};
	const tio_type_info_t *ti;
	int32_t i, idx;

	for (i = 0; i < (int32_t)(sizeof(keys) / sizeof(keys[0])); i++) {
		idx = -1;
		ASSERT_EQ(0, tio_type_key_to_index(keys[i], &idx));
		EXPECT_EQ(i, idx);
		ti = tio_type_info(i);
		ASSERT_NE(NULL, ti);
		EXPECT_STREQ(keys[i], ti->type_key);
		EXPECT_EQ(i, ti->type_index);
		EXPECT_EQ(0, ti->type_depth);
		EXPECT_EQ(-1, ti->parent_index);
		EXPECT_EQ(0, ti->num_fields);
		EXPECT_EQ(0, tio_type_is_subtype(i, TIO_TYPE_OBJECT));
	}
	EXPECT_EQ(TIO_TYPE_SMALL_BYTES, i - 1);
	EXPECT_EQ(NULL, tio_type_info(TIO_TYPE_SMALL_BYTES + 1));
	EXPECT_EQ(NULL, tio_type_info(TIO_TYPE_STATIC_OBJECT_BEGIN - 1));
	EXPECT_EQ(-1, tio_type_key_to_index("Any", &idx));
	ASSERT_RAISED("KeyError", "no type 'Any'");
	/* Not object types: nothing derives from them. */
	EXPECT_EQ(-1, tio_type_register("test.SubInt", TIO_TYPE_INT, &idx));
	ASSERT_RAISED("ValueError", "parent type 'int' (1) is not an object type");
	EXPECT_EQ(-1, tio_type_register_static("test.SubNone", TIO_TYPE_NONE, 102, &idx));
	ASSERT_RAISED("ValueError", "'None' (0) is not an object type");
	EXPECT_EQ(-1, tio_type_register("int", TIO_TYPE_OBJECT, &idx));
	ASSERT_RAISED("ValueError", "'int' is already registered with parent -1");
	EXPECT_EQ(-1, tio_type_key_to_index("test.SubInt", &idx));
	ASSERT_RAISED("KeyError", "test.SubInt");
	EXPECT_EQ(NULL, tio_type_info(102));
	ASSERT_NO_LEAKS();
}

TEST(register_static)
{
	int32_t a, idx = 0;

	ASSERT_EQ(0, tio_type_register_static("test.S", TIO_TYPE_OBJECT, 100, &idx));
	EXPECT_EQ(100, idx);
	ASSERT_EQ(0, tio_type_register_static("test.SS", 100, 101, &idx));
	EXPECT_EQ(101, idx);
	EXPECT_EQ(1, tio_type_is_subtype(101, 100));
	EXPECT_EQ(2, tio_type_info(101)->type_depth);
	ASSERT_EQ(0, tio_type_key_to_index("test.SS", &idx));
	EXPECT_EQ(101, idx);
	idx = 0;
	ASSERT_EQ(0, tio_type_register_static("test.S", TIO_TYPE_OBJECT, 100, &idx));
	EXPECT_EQ(100, idx);
	ASSERT_EQ(0, tio_type_register("test.S", TIO_TYPE_OBJECT, &a));
	EXPECT_EQ(100, a);

	EXPECT_EQ(-1, tio_type_register_static("test.S", TIO_TYPE_OBJECT, 102, &idx));
	ASSERT_RAISED("ValueError", "'test.S' is already registered at 100");
	EXPECT_EQ(-1, tio_type_register_static("test.S", 101, 100, &idx));
	ASSERT_RAISED("ValueError", "with parent 64");
	EXPECT_EQ(-1, tio_type_register_static("test.T", TIO_TYPE_OBJECT, 100, &idx));
	ASSERT_RAISED("ValueError", "type index 100 is taken by 'test.S'");
	EXPECT_EQ(-1, tio_type_register_static("test.T", TIO_TYPE_OBJECT, TIO_TYPE_TENSOR, &idx));
	ASSERT_RAISED("ValueError", "taken by 'ffi.Tensor'");
	EXPECT_EQ(-1, tio_type_register_static("test.T", TIO_TYPE_OBJECT, 128, &idx));
	ASSERT_RAISED("ValueError", "outside [64, 128)");
	EXPECT_EQ(-1, tio_type_register_static("test.T", TIO_TYPE_OBJECT, 63, &idx));
	ASSERT_RAISED("ValueError", "63 is outside");
	EXPECT_EQ(-1, tio_type_register_static("test.T", 4000, 102, &idx));
	ASSERT_RAISED("ValueError", "parent type index 4000");
	EXPECT_EQ(-1, tio_type_register_static("", TIO_TYPE_OBJECT, 102, &idx));
	ASSERT_RAISED("ValueError", "type key");
	EXPECT_EQ(-1, tio_type_register_static("test.T", TIO_TYPE_OBJECT, 102, NULL));
	ASSERT_RAISED("ValueError", "output");
	EXPECT_EQ(NULL, tio_type_info(102));
	EXPECT_EQ(-1, tio_type_key_to_index("test.T", &idx));
	ASSERT_RAISED("KeyError", "test.T");
	ASSERT_NO_LEAKS();
}

TEST(is_instance_through_ancestors)
{
	tio_object_t *o;
	int32_t a, b, c, other;

	ASSERT_EQ(0, tio_type_register("test.A", TIO_TYPE_OBJECT, &a));
	ASSERT_EQ(0, tio_type_register("test.B", a, &b));
	ASSERT_EQ(0, tio_type_register("test.C", b, &c));
	ASSERT_EQ(0, tio_type_register("test.Other", a, &other));
	o = tio_object_alloc(sizeof(tio_object_t), b, NULL);
	ASSERT_NE(NULL, o);
	EXPECT_TRUE(tio_object_is_instance(o, b));
	EXPECT_TRUE(tio_object_is_instance(o, a));
	EXPECT_TRUE(tio_object_is_instance(o, TIO_TYPE_OBJECT));
	EXPECT_FALSE(tio_object_is_instance(o, c));
	EXPECT_FALSE(tio_object_is_instance(o, other));
	EXPECT_FALSE(tio_object_is_instance(o, TIO_TYPE_STR));
	EXPECT_TRUE(tio_type_is_subtype(c, a));
	EXPECT_FALSE(tio_type_is_subtype(a, c));
	EXPECT_TRUE(tio_type_is_subtype(TIO_TYPE_TENSOR, TIO_TYPE_OBJECT));
	EXPECT_FALSE(tio_type_is_subtype(4000, TIO_TYPE_OBJECT));
	tio_object_decref(o);
	ASSERT_NO_LEAKS();
}

TEST(fields_default_accessors)
{
	tio_any_t v, s;
	struct point *p;
	int32_t t = point_type();
	const char *str;

	ASSERT_GE(t, TIO_TYPE_DYN_OBJECT_BEGIN);
	ASSERT_EQ(0, register_fields(t));
	EXPECT_EQ(7, tio_type_info(t)->num_fields);
	EXPECT_STREQ("field w", tio_type_find_field(t, "w")->doc);
	p = tio_object_alloc(sizeof(*p), t, point_fin);
	ASSERT_NE(NULL, p);
	v = tio_any_int(-7);
	ASSERT_EQ(0, tio_object_set_field(&p->header, "x", &v));
	EXPECT_EQ(-7, p->x);
	v = tio_any_int(1LL << 40);
	EXPECT_EQ(-1, tio_object_set_field(&p->header, "y", &v));
	ASSERT_RAISED("ValueError", "does not fit in 4 bytes");
	v = tio_any_int(12);
	ASSERT_EQ(0, tio_object_set_field(&p->header, "y", &v));
	EXPECT_EQ(12, p->y);
	ASSERT_EQ(0, tio_object_get_field(&p->header, "y", &v));
	EXPECT_EQ(TIO_TYPE_INT, v.type_index);
	EXPECT_EQ(12, v.v_int64);
	v = tio_any_int(2);
	ASSERT_EQ(0, tio_object_set_field(&p->header, "w", &v));
	EXPECT_EQ(2.0, p->w);
	v = tio_any_bool(1);
	ASSERT_EQ(0, tio_object_set_field(&p->header, "visible", &v));
	EXPECT_EQ(1, p->visible);
	v = tio_any_float(1.5);
	EXPECT_EQ(-1, tio_object_set_field(&p->header, "visible", &v));
	ASSERT_RAISED("TypeError", "expected bool, got float");
	/* Object field: type-checked, reference-counted. */
	ASSERT_EQ(0, tio_str_new("a label longer than seven", 25, &s));
	ASSERT_EQ(0, tio_object_set_field(&p->header, "label", &s));
	EXPECT_EQ(2, tio_object_strong_count(s.v_obj));
	ASSERT_EQ(0, tio_object_get_field(&p->header, "label", &v));
	ASSERT_EQ(0, tio_any_to_str(&v, &str, NULL));
	EXPECT_STREQ("a label longer than seven", str);
	tio_any_decref(&v);
	v = tio_any_object(&p->header);
	EXPECT_EQ(-1, tio_object_set_field(&p->header, "label", &v));
	ASSERT_RAISED("TypeError", "field 'label' expects ffi.String, got test.Point");
	v = tio_any_none();
	ASSERT_EQ(0, tio_object_set_field(&p->header, "label", &v));
	EXPECT_EQ(NULL, p->label);
	EXPECT_EQ(1, tio_object_strong_count(s.v_obj));
	/* Any field owns a copy. */
	ASSERT_EQ(0, tio_object_set_field(&p->header, "extra", &s));
	EXPECT_EQ(2, tio_object_strong_count(s.v_obj));
	tio_any_decref(&s);
	/* Read-only and unknown fields. */
	v = tio_any_int(1);
	EXPECT_EQ(-1, tio_object_set_field(&p->header, "secret", &v));
	ASSERT_RAISED("AttributeError", "field 'secret' of 'test.Point' is read-only");
	ASSERT_EQ(0, tio_object_get_field(&p->header, "secret", &v));
	EXPECT_EQ(-1, tio_object_get_field(&p->header, "nope", &v));
	ASSERT_RAISED("AttributeError", "'test.Point' has no field 'nope'");
	tio_object_decref(&p->header);
	ASSERT_NO_LEAKS();
}

TEST(field_registration_errors)
{
	tio_field_info_t f = FIELD(x, int64_t, TIO_TYPE_INT, 0);
	int32_t t = point_type();

	ASSERT_EQ(0, tio_type_register_field(t, &f));
	EXPECT_EQ(-1, tio_type_register_field(t, &f));
	ASSERT_RAISED("ValueError", "already has a field 'x'");
	f.name = "small";
	f.struct_size = 8;
	EXPECT_EQ(-1, tio_type_register_field(t, &f));
	ASSERT_RAISED("ValueError", "struct_size");
	f.struct_size = sizeof(f);
	f.size = 3;
	EXPECT_EQ(-1, tio_type_register_field(t, &f));
	ASSERT_RAISED("ValueError", "no default accessor");
	f.size = 8;
	f.offset = 4;
	EXPECT_EQ(-1, tio_type_register_field(t, &f));
	ASSERT_RAISED("ValueError", "offset");
	EXPECT_EQ(-1, tio_type_register_field(4000, &f));
	ASSERT_RAISED("ValueError", "not registered");
	ASSERT_NO_LEAKS();
}

/* A derived type inherits fields; a custom getter doubles x. */
static int get_double(void *field, tio_any_t *out)
{
	*out = tio_any_int(2 * *(int64_t *)field);
	return 0;
}

TEST(inherited_fields_and_custom_getter)
{
	tio_field_info_t f = FIELD(secret, int64_t, TIO_TYPE_INT, 0);
	int32_t t = point_type(), d;
	struct point *p;
	tio_any_t v;

	ASSERT_EQ(0, register_fields(t));
	ASSERT_EQ(0, tio_type_register("test.Point3", t, &d));
	f.name = "twice_secret";
	f.getter = get_double;
	ASSERT_EQ(0, tio_type_register_field(d, &f));
	p = tio_object_alloc(sizeof(*p), d, point_fin);
	ASSERT_NE(NULL, p);
	p->x = 4;
	p->secret = 21;
	ASSERT_EQ(0, tio_object_get_field(&p->header, "x", &v));
	EXPECT_EQ(4, v.v_int64);
	ASSERT_EQ(0, tio_object_get_field(&p->header, "twice_secret", &v));
	EXPECT_EQ(42, v.v_int64);
	tio_object_decref(&p->header);
	ASSERT_NO_LEAKS();
}

static int32_t the_type;

static int point_init(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	struct point *p;
	int64_t x = 0;

	if (nargs > 1)
		return tio_error_raise("TypeError", "Point takes at most 1 argument");
	if (nargs == 1 && tio_any_to_int(&args[0], &x))
		return -1;
	p = tio_object_alloc(sizeof(*p), the_type, point_fin);
	if (!p)
		return -1;
	p->x = x;
	*ret = tio_any_object(&p->header);
	return 0;
}

static int point_norm1(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	struct point *p = (struct point *)args[0].v_obj;
	int64_t scale = 1;

	if (nargs == 2 && tio_any_to_int(&args[1], &scale))
		return -1;
	*ret = tio_any_int((p->x < 0 ? -p->x : p->x) * scale);
	return 0;
}

static int bad_init(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	*ret = tio_any_int(1);
	return 0;
}

TEST(methods_and_init)
{
	tio_method_info_t init = { sizeof(init), TIO_METHOD_STATIC, TIO_INIT_METHOD,
				   "make a point", point_init, NULL, NULL };
	tio_method_info_t norm = { sizeof(norm), 0, "norm1", NULL, point_norm1, NULL, NULL };
	tio_method_info_t bad = { sizeof(bad), TIO_METHOD_STATIC, TIO_INIT_METHOD, NULL,
				  bad_init, NULL, NULL };
	tio_any_t arg = tio_any_int(-5), obj, ret, s3 = tio_any_int(3);
	const tio_method_info_t *m;
	int32_t other;

	the_type = point_type();
	ASSERT_EQ(0, tio_type_register_method(the_type, &init));
	ASSERT_EQ(0, tio_type_register_method(the_type, &norm));
	EXPECT_EQ(-1, tio_type_register_method(the_type, &norm));
	ASSERT_RAISED("ValueError", "already has a method 'norm1'");
	m = tio_type_find_method(the_type, "norm1");
	ASSERT_NE(NULL, m);
	EXPECT_EQ(TIO_TYPE_FUNCTION, m->func->type_index);
	EXPECT_EQ(2, tio_type_info(the_type)->num_methods);
	ASSERT_EQ(0, tio_type_create(the_type, &arg, 1, &obj));
	ASSERT_EQ(the_type, obj.type_index);
	EXPECT_EQ(-5, ((struct point *)obj.v_obj)->x);
	ASSERT_EQ(0, tio_object_call_method(obj.v_obj, "norm1", &s3, 1, &ret));
	EXPECT_EQ(15, ret.v_int64);
	EXPECT_EQ(-1, tio_object_call_method(obj.v_obj, "nope", NULL, 0, &ret));
	ASSERT_RAISED("AttributeError", "has no method 'nope'");
	tio_any_decref(&obj);
	EXPECT_EQ(-1, tio_type_create(the_type, (tio_any_t[]){ arg, arg }, 2, &obj));
	ASSERT_RAISED("TypeError", "at most 1 argument");
	ASSERT_EQ(0, tio_type_register("test.NoInit", TIO_TYPE_OBJECT, &other));
	EXPECT_EQ(-1, tio_type_create(other, NULL, 0, &obj));
	ASSERT_RAISED("TypeError", "has no __ffi_init__");
	ASSERT_EQ(0, tio_type_register_method(other, &bad));
	EXPECT_EQ(-1, tio_type_create(other, NULL, 0, &obj));
	ASSERT_RAISED("TypeError", "did not return one");
	/* Methods live with the process: not counted as leaks. */
	ASSERT_NO_LEAKS();
}

TEST(metadata)
{
	int32_t t = point_type();
	tio_any_t v = tio_any_int(7), out, s;
	const char *p;

	ASSERT_EQ(0, tio_type_set_metadata(t, "version", &v));
	ASSERT_EQ(0, tio_type_get_metadata(t, "version", &out));
	EXPECT_EQ(7, out.v_int64);
	v = tio_any_int(8);
	ASSERT_EQ(0, tio_type_set_metadata(t, "version", &v));
	ASSERT_EQ(0, tio_type_get_metadata(t, "version", &out));
	EXPECT_EQ(8, out.v_int64);
	v = tio_any_raw_str("cpu-only");
	ASSERT_EQ(0, tio_type_set_metadata(t, "where", &v));
	ASSERT_EQ(0, tio_type_get_metadata(t, "where", &s));
	ASSERT_EQ(0, tio_any_to_str(&s, &p, NULL));
	EXPECT_STREQ("cpu-only", p);
	tio_any_decref(&s);
	EXPECT_EQ(-1, tio_type_get_metadata(t, "missing", &out));
	ASSERT_RAISED("KeyError", "no metadata 'missing'");
	EXPECT_EQ(-1, tio_type_get_metadata(TIO_TYPE_STR, "version", &out));
	ASSERT_RAISED("KeyError", "ffi.String");
	/* The registry holds the heap string copy for the process' life. */
	EXPECT_EQ(1, LIVE());
}

#define NTHREADS 4
#define NTYPES 50

static void *register_many(void *arg)
{
	int32_t parent, t, again;
	char key[64];
	int i;

	if (tio_type_register("test.mt.Base", TIO_TYPE_OBJECT, &parent))
		return (void *)1;
	for (i = 0; i < NTYPES; i++) {
		/* Half the keys are shared between threads. */
		snprintf(key, sizeof(key), "test.mt.%s%d", i & 1 ? "shared" : "own",
			 i & 1 ? i : i * 100 + (int)(long)arg);
		if (tio_type_register(key, parent, &t))
			return (void *)2;
		if (tio_type_key_to_index(key, &again) || again != t ||
		    !tio_type_is_subtype(t, parent))
			return (void *)3;
	}
	return NULL;
}

TEST(concurrent_registration)
{
	pthread_t th[NTHREADS];
	int32_t base, last;
	void *r;
	long i;

	for (i = 0; i < NTHREADS; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, register_many, (void *)i));
	for (i = 0; i < NTHREADS; i++) {
		ASSERT_EQ(0, pthread_join(th[i], &r));
		EXPECT_EQ(NULL, r);
	}
	ASSERT_EQ(0, tio_type_key_to_index("test.mt.Base", &base));
	ASSERT_EQ(0, tio_type_register("test.mt.last", base, &last));
	/* 1 base + 25 shared + 4 * 25 own, then this one. */
	EXPECT_EQ(base + 1 + NTYPES / 2 + NTHREADS * NTYPES / 2, last);
	ASSERT_NO_LEAKS();
}

TEST_HARNESS_MAIN
