// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Objects: the combined strong/weak count, deleter flags, weak references,
 * custom-typed objects and the live-object counter, across threads.
 */
#include <pthread.h>
#include <string.h>

#include "ffi_test.h"
#include "kselftest_harness.h"

static int calls[4];
static int last_flags;

static void count_deleter(void *self, int flags)
{
	calls[flags]++;
	last_flags = flags;
}

TEST(strong_only_deletes_both_at_once)
{
	tio_object_t o;

	memset(calls, 0, sizeof(calls));
	tio_object_init(&o, TIO_TYPE_OBJECT, count_deleter);
	EXPECT_EQ(TIO_REFCOUNT_INIT, o.combined_ref_count);
	tio_object_incref(&o);
	EXPECT_EQ(2, tio_object_strong_count(&o));
	tio_object_decref(&o);
	EXPECT_EQ(0, calls[TIO_DELETER_BOTH]);
	tio_object_decref(&o);
	EXPECT_EQ(1, calls[TIO_DELETER_BOTH]);
	EXPECT_EQ(0, calls[TIO_DELETER_STRONG]);
	EXPECT_EQ(0, calls[TIO_DELETER_WEAK]);
	tio_object_decref(NULL);
	tio_object_incref(NULL);
}

TEST(weak_reference_outlives_strong)
{
	tio_object_t o;

	memset(calls, 0, sizeof(calls));
	tio_object_init(&o, TIO_TYPE_OBJECT, count_deleter);
	tio_object_weak_incref(&o);
	EXPECT_EQ(2, tio_object_weak_count(&o));
	ASSERT_EQ(1, tio_object_weak_lock(&o));
	EXPECT_EQ(2, tio_object_strong_count(&o));
	tio_object_decref(&o);
	tio_object_decref(&o);
	/* Contents destroyed, memory kept for the weak holder. */
	EXPECT_EQ(1, calls[TIO_DELETER_STRONG]);
	EXPECT_EQ(0, calls[TIO_DELETER_WEAK]);
	EXPECT_EQ(0, tio_object_weak_lock(&o));
	tio_object_weak_decref(&o);
	EXPECT_EQ(1, calls[TIO_DELETER_WEAK]);
	EXPECT_EQ(0, calls[TIO_DELETER_BOTH]);
}

static int finalized;

static void fin(void *self)
{
	finalized++;
}

TEST(custom_objects_and_live_count)
{
	tio_object_t *o;
	int32_t t;

	finalized = 0;
	ASSERT_EQ(0, tio_type_register("test.Thing", TIO_TYPE_OBJECT, &t));
	o = tio_object_alloc(64, t, fin);
	ASSERT_NE(NULL, o);
	EXPECT_EQ(t, o->type_index);
	EXPECT_EQ(0, ((char *)o)[63]);
	EXPECT_EQ(1, LIVE());
	tio_object_weak_incref(o);
	tio_object_decref(o);
	EXPECT_EQ(1, finalized);
	EXPECT_EQ(1, LIVE());	/* memory still held */
	tio_object_weak_decref(o);
	EXPECT_EQ(1, finalized);
	ASSERT_NO_LEAKS();
}

TEST(alloc_rejects_bad_input)
{
	EXPECT_EQ(NULL, tio_object_alloc(8, TIO_TYPE_OBJECT, NULL));
	ASSERT_RAISED("ValueError", "size");
	EXPECT_EQ(NULL, tio_object_alloc(32, TIO_TYPE_INT, NULL));
	ASSERT_RAISED("ValueError", "type index");
	EXPECT_EQ(NULL, tio_object_alloc(32, 3000, NULL));
	ASSERT_RAISED("ValueError", "type index");
	ASSERT_NO_LEAKS();
}

#define NTHREADS 4
#define NITER 100000

static void *hammer(void *arg)
{
	tio_object_t *o = arg;
	tio_any_t s;
	int i;

	for (i = 0; i < NITER; i++) {
		tio_object_incref(o);
		tio_object_weak_incref(o);
		tio_object_weak_decref(o);
		tio_object_decref(o);
	}
	/* Allocate here, free on the main thread. */
	if (tio_str_new("allocated on a worker thread", 28, &s))
		return NULL;
	return s.v_obj;
}

TEST(refcounts_are_atomic_across_threads)
{
	pthread_t th[NTHREADS];
	tio_object_t *o, *r[NTHREADS];
	int i;

	finalized = 0;
	o = tio_object_alloc(32, TIO_TYPE_OBJECT, fin);
	ASSERT_NE(NULL, o);
	for (i = 0; i < NTHREADS; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, hammer, o));
	for (i = 0; i < NTHREADS; i++)
		ASSERT_EQ(0, pthread_join(th[i], (void **)&r[i]));
	EXPECT_EQ(TIO_REFCOUNT_INIT, o->combined_ref_count);
	EXPECT_EQ(0, finalized);
	EXPECT_EQ(1 + NTHREADS, LIVE());
	for (i = 0; i < NTHREADS; i++) {
		ASSERT_NE(NULL, r[i]);
		tio_object_decref(r[i]);
	}
	tio_object_decref(o);
	EXPECT_EQ(1, finalized);
	ASSERT_NO_LEAKS();
}

TEST_HARNESS_MAIN
