// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Functions: callbacks with self and deleter, the fast and checked call
 * paths, the TVM FFI cell, the global registry (set, override, get,
 * remove, list, the per-thread lookup cache), concurrent registration and
 * calls.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ffi_test.h"
#include "kselftest_harness.h"

static int add(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	int64_t a, b;

	if (nargs != 2)
		return tio_error_raise("TypeError", "add takes 2 arguments, got %d", nargs);
	if (tio_any_to_int(&args[0], &a) || tio_any_to_int(&args[1], &b))
		return -1;
	*ret = tio_any_int(a + b + (self ? *(int64_t *)self : 0));
	return 0;
}

static int deleted;

static void self_deleter(void *self)
{
	deleted++;
}

TEST(create_and_call)
{
	tio_any_t args[2] = { tio_any_int(2), tio_any_int(3) }, ret = tio_any_none();
	int64_t bias = 100;
	tio_object_t *f;

	deleted = 0;
	ASSERT_EQ(0, tio_func_new(add, &bias, self_deleter, &f));
	EXPECT_EQ(TIO_TYPE_FUNCTION, f->type_index);
	ASSERT_EQ(0, tio_func_call(f, args, 2, &ret));
	EXPECT_EQ(105, ret.v_int64);
	ret = tio_any_float(9);
	ASSERT_EQ(0, tio_func_call_any(f, args, 2, &ret));
	EXPECT_EQ(TIO_TYPE_INT, ret.type_index);
	EXPECT_EQ(105, ret.v_int64);
	/* The TVM FFI cell, called with the Function itself. */
	ret = tio_any_none();
	ASSERT_EQ(0, ((tio_func_obj_t *)f)->safe_call(f, args, 2, &ret));
	EXPECT_EQ(105, ret.v_int64);
	EXPECT_EQ(NULL, ((tio_func_obj_t *)f)->cpp_call);
	EXPECT_EQ(-1, tio_func_call(f, args, 1, &ret));
	ASSERT_RAISED("TypeError", "add takes 2 arguments, got 1");
	EXPECT_EQ(0, deleted);
	tio_object_decref(f);
	EXPECT_EQ(1, deleted);
	ASSERT_NO_LEAKS();
}

TEST(bad_function_inputs)
{
	tio_any_t ret, s;
	tio_object_t *f;

	EXPECT_EQ(-1, tio_func_new(NULL, NULL, NULL, &f));
	ASSERT_RAISED("ValueError", "callback");
	ASSERT_EQ(0, tio_str_new("not a function at all", 21, &s));
	EXPECT_EQ(-1, tio_func_call_any(s.v_obj, NULL, 0, &ret));
	ASSERT_RAISED("TypeError", "expected ffi.Function, got ffi.String");
	EXPECT_EQ(-1, tio_func_set_global("x", s.v_obj, 0));
	ASSERT_RAISED("TypeError", "must be a Function");
	tio_any_decref(&s);
	EXPECT_EQ(-1, tio_func_get_global(NULL, &f));
	ASSERT_RAISED("ValueError", "name");
	ASSERT_NO_LEAKS();
}

TEST(global_registry)
{
	tio_any_t args[2] = { tio_any_int(1), tio_any_int(1) }, ret = tio_any_none(), names;
	tio_object_t *f, *g, *got;
	const char *p;
	int64_t bias = 1000;

	ASSERT_EQ(0, tio_func_new(add, NULL, NULL, &f));
	ASSERT_EQ(0, tio_func_new(add, &bias, NULL, &g));
	ASSERT_EQ(0, tio_func_get_global("test.add", &got));
	EXPECT_EQ(NULL, got);
	ASSERT_EQ(0, tio_func_set_global("test.add", f, 0));
	EXPECT_EQ(2, tio_object_strong_count(f));
	EXPECT_EQ(-1, tio_func_set_global("test.add", g, 0));
	ASSERT_RAISED("KeyError", "already registered");
	ASSERT_EQ(0, tio_func_get_global("test.add", &got));
	EXPECT_EQ(f, got);
	tio_object_decref(got);
	/* Cached now; an override must still be seen. */
	ASSERT_EQ(0, tio_func_get_global("test.add", &got));
	EXPECT_EQ(f, got);
	tio_object_decref(got);
	ASSERT_EQ(0, tio_func_set_global("test.add", g, 1));
	ASSERT_EQ(0, tio_func_get_global("test.add", &got));
	EXPECT_EQ(g, got);
	tio_object_decref(got);
	ASSERT_EQ(0, tio_func_call_global("test.add", args, 2, &ret));
	EXPECT_EQ(1002, ret.v_int64);
	ASSERT_EQ(0, tio_func_set_global("test.b", f, 0));
	ASSERT_EQ(0, tio_func_set_global("test.a", f, 0));
	ASSERT_EQ(0, tio_func_list_globals(&names));
	ASSERT_EQ(TIO_TYPE_ARRAY, names.type_index);
	ASSERT_EQ(3, tio_array_size(names.v_obj));
	ASSERT_EQ(0, tio_any_to_str(tio_array_at(names.v_obj, 0), &p, NULL));
	EXPECT_STREQ("test.a", p);
	ASSERT_EQ(0, tio_any_to_str(tio_array_at(names.v_obj, 2), &p, NULL));
	EXPECT_STREQ("test.b", p);
	tio_any_decref(&names);
	ASSERT_EQ(0, tio_func_remove_global("test.add"));
	ASSERT_EQ(0, tio_func_get_global("test.add", &got));
	EXPECT_EQ(NULL, got);
	EXPECT_EQ(-1, tio_func_remove_global("test.add"));
	ASSERT_RAISED("KeyError", "no global function 'test.add'");
	EXPECT_EQ(-1, tio_func_call_global("test.add", args, 2, &ret));
	ASSERT_RAISED("KeyError", "test.add");
	ASSERT_EQ(0, tio_func_remove_global("test.a"));
	ASSERT_EQ(0, tio_func_remove_global("test.b"));
	tio_object_decref(f);
	tio_object_decref(g);
	ASSERT_NO_LEAKS();
}

TEST(permanent_global_functions)
{
	tio_any_t args[2] = { tio_any_int(4), tio_any_int(5) }, ret = tio_any_none();
	tio_object_t *got;

	ASSERT_EQ(0, tio_func_register_global("test.perm", add, NULL, 0));
	EXPECT_EQ(0, LIVE());
	EXPECT_EQ(-1, tio_func_register_global("test.perm", add, NULL, 0));
	ASSERT_RAISED("KeyError", "already registered");
	ASSERT_EQ(0, tio_func_get_global("test.perm", &got));
	ASSERT_NE(NULL, got);
	ASSERT_EQ(0, tio_func_call(got, args, 2, &ret));
	EXPECT_EQ(9, ret.v_int64);
	tio_object_decref(got);
	ASSERT_EQ(0, tio_func_register_global("test.perm", add, NULL, 1));
	ASSERT_EQ(0, tio_func_remove_global("test.perm"));
	EXPECT_EQ(-1, tio_func_register_global("test.perm", NULL, NULL, 0));
	ASSERT_RAISED("ValueError", "NULL callback");
	ASSERT_NO_LEAKS();
}

static int ident(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	*ret = tio_any_int((int64_t)(intptr_t)self);
	return 0;
}

/*
 * Names that share a length and differ only in one byte, before, inside
 * and after the hash's whole words: every lookup (the first, then from the
 * per-thread cache) finds its own function, and a near miss finds none.
 */
TEST(lookup_tells_near_names_apart)
{
	static const char *const names[] = {
		"n.a", "n.b", "n.ab", "n.ba", "n.abcX", "n.abcY", "Xn.abc", "near.name.1234a",
		"near.name.1234b", "near.name.12345678a", "near.name.12345678b",
		"xear.name.12345678b", "16.bytes.name.ab", "16.bytes.name.ba",
	};
	const int n = sizeof(names) / sizeof(names[0]);
	tio_any_t ret = tio_any_none();
	tio_object_t *got;
	int i, round;

	for (i = 0; i < n; i++)
		ASSERT_EQ(0, tio_func_register_global(names[i], ident,
						      (void *)(intptr_t)(i + 1), 1));
	for (round = 0; round < 2; round++) {
		for (i = 0; i < n; i++) {
			ASSERT_EQ(0, tio_func_get_global(names[i], &got));
			ASSERT_NE(NULL, got);
			ASSERT_EQ(0, tio_func_call(got, NULL, 0, &ret));
			EXPECT_EQ(i + 1, ret.v_int64) TH_LOG("%s", names[i]);
			tio_object_decref(got);
		}
	}
	ASSERT_EQ(0, tio_func_get_global("near.name.12345678c", &got));
	EXPECT_EQ(NULL, got);
	ASSERT_EQ(0, tio_func_get_global("n.c", &got));
	EXPECT_EQ(NULL, got);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, tio_func_remove_global(names[i]));
	ASSERT_NO_LEAKS();
}

/*
 * Lookups hand out spare references the thread's cache took in batches:
 * counts and lifetimes are as if each lookup took its own. The same name
 * from several pointers, and a buffer whose name changes, find theirs.
 */
TEST(lookup_cache_references)
{
	int64_t one = 1, two = 2;
	tio_object_t *f, *g, *got[300];
	tio_any_t args[2] = { tio_any_int(1), tio_any_int(2) }, ret;
	char buf[32];
	int i;

	deleted = 0;
	ASSERT_EQ(0, tio_func_new(add, &one, self_deleter, &f));
	ASSERT_EQ(0, tio_func_new(add, &two, self_deleter, &g));
	ASSERT_EQ(0, tio_func_set_global("test.spare.f", f, 0));
	ASSERT_EQ(0, tio_func_set_global("test.spare.g", g, 0));
	for (i = 0; i < 300; i++) {
		ASSERT_EQ(0, tio_func_get_global("test.spare.f", &got[i]));
		ASSERT_EQ(f, got[i]);
	}
	for (i = 0; i < 300; i++)
		tio_object_decref(got[i]);
	/* Another pointer to the same name; a buffer renamed between lookups. */
	strcpy(buf, "test.spare.f");
	ASSERT_EQ(0, tio_func_get_global(buf, &got[0]));
	strcpy(buf, "test.spare.g");
	ASSERT_EQ(0, tio_func_get_global(buf, &got[1]));
	EXPECT_EQ(f, got[0]);
	EXPECT_EQ(g, got[1]);
	ASSERT_EQ(0, tio_func_call(got[1], args, 2, &ret));
	EXPECT_EQ(5, ret.v_int64);
	strcpy(buf, "test.spare.x");
	ASSERT_EQ(0, tio_func_get_global(buf, &got[2]));
	EXPECT_EQ(NULL, got[2]);
	tio_object_decref(got[0]);
	tio_object_decref(got[1]);

	/* The registry's reference and ours; the cache's go with the flush. */
	tio_debug_live_objects();
	EXPECT_EQ(2, tio_object_strong_count(f));
	ASSERT_EQ(0, tio_func_get_global("test.spare.f", &got[0]));
	ASSERT_EQ(0, tio_func_remove_global("test.spare.f"));
	ASSERT_EQ(0, tio_func_get_global("test.spare.f", &got[1]));
	EXPECT_EQ(NULL, got[1]);
	tio_object_decref(got[0]);
	tio_object_decref(f);
	EXPECT_EQ(0, deleted);	/* the thread's cache still holds it */
	tio_debug_live_objects();
	EXPECT_EQ(1, deleted);
	ASSERT_EQ(0, tio_func_remove_global("test.spare.g"));
	tio_object_decref(g);
	ASSERT_NO_LEAKS();
	EXPECT_EQ(2, deleted);
}

TEST(registry_grows_and_long_names)
{
	char name[128];
	tio_object_t *f, *got;
	tio_any_t names;
	int i;

	ASSERT_EQ(0, tio_func_new(add, NULL, NULL, &f));
	for (i = 0; i < 500; i++) {
		snprintf(name, sizeof(name), "test.grow.%d.with.a.name.longer.than.the.cache.slot.%d",
			 i, i);
		ASSERT_EQ(0, tio_func_set_global(name, f, 0));
	}
	for (i = 0; i < 500; i += 7) {
		snprintf(name, sizeof(name), "test.grow.%d.with.a.name.longer.than.the.cache.slot.%d",
			 i, i);
		ASSERT_EQ(0, tio_func_get_global(name, &got));
		ASSERT_EQ(f, got);
		tio_object_decref(got);
		ASSERT_EQ(0, tio_func_remove_global(name));
	}
	ASSERT_EQ(0, tio_func_list_globals(&names));
	EXPECT_EQ(500 - 72, tio_array_size(names.v_obj));
	tio_any_decref(&names);
	for (i = 0; i < 500; i++) {
		if (i % 7 == 0)
			continue;
		snprintf(name, sizeof(name), "test.grow.%d.with.a.name.longer.than.the.cache.slot.%d",
			 i, i);
		ASSERT_EQ(0, tio_func_remove_global(name));
	}
	EXPECT_EQ(1, tio_object_strong_count(f));
	tio_object_decref(f);
	ASSERT_NO_LEAKS();
}

#define NTHREADS 4
#define NCALLS 20000

static void *worker(void *arg)
{
	long id = (long)arg;
	tio_any_t args[2], ret;
	tio_object_t *f, *got;
	char name[64];
	long i;

	snprintf(name, sizeof(name), "test.mt.%ld", id);
	if (tio_func_new(add, NULL, NULL, &f) || tio_func_set_global(name, f, 0))
		return (void *)1;
	tio_object_decref(f);
	for (i = 0; i < NCALLS; i++) {
		/* Look up our own and the shared one, call both. */
		if (tio_func_get_global(i & 1 ? name : "test.mt.shared", &got) || !got)
			return (void *)2;
		args[0] = tio_any_int(i);
		args[1] = tio_any_int(id);
		ret = tio_any_none();
		if (tio_func_call(got, args, 2, &ret) || ret.v_int64 != i + id)
			return (void *)3;
		/* Registry changes while others look up. */
		if (i % 1000 == 0 && tio_func_set_global("test.mt.churn", got, 1))
			return (void *)4;
		tio_object_decref(got);
	}
	return NULL;
}

TEST(concurrent_registration_and_calls)
{
	pthread_t th[NTHREADS];
	tio_object_t *shared;
	tio_any_t names;
	void *r;
	long i;

	ASSERT_EQ(0, tio_func_new(add, NULL, NULL, &shared));
	ASSERT_EQ(0, tio_func_set_global("test.mt.shared", shared, 0));
	tio_object_decref(shared);
	for (i = 0; i < NTHREADS; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, worker, (void *)i));
	for (i = 0; i < NTHREADS; i++) {
		ASSERT_EQ(0, pthread_join(th[i], &r));
		EXPECT_EQ(NULL, r);
	}
	ASSERT_EQ(0, tio_func_list_globals(&names));
	EXPECT_EQ(NTHREADS + 2, tio_array_size(names.v_obj));
	tio_any_decref(&names);
	for (i = 0; i < NTHREADS; i++) {
		char name[64];

		snprintf(name, sizeof(name), "test.mt.%ld", i);
		ASSERT_EQ(0, tio_func_remove_global(name));
	}
	ASSERT_EQ(0, tio_func_remove_global("test.mt.shared"));
	ASSERT_EQ(0, tio_func_remove_global("test.mt.churn"));
	ASSERT_NO_LEAKS();
}

TEST_HARNESS_MAIN
