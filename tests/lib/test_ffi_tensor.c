// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tensors: zero-copy DLPack import/export (legacy and versioned), the
 * producer's deleter called exactly once, alignment and contiguity checks,
 * views with byte offsets and strides.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ffi_test.h"
#include "kselftest_harness.h"

/* A producer: a managed tensor over a static buffer, counting deletions. */
static float storage[64] __attribute__((aligned(64)));
static int64_t prod_shape[2] = { 4, 8 };
static int64_t prod_strides[2] = { 8, 1 };
static int legacy_deleted, versioned_deleted;

static void legacy_deleter(DLManagedTensor *mt)
{
	legacy_deleted++;
	free(mt);
}

static void versioned_deleter(DLManagedTensorVersioned *mt)
{
	versioned_deleted++;
	free(mt);
}

static DLTensor producer_tensor(void)
{
	DLTensor t = { 0 };

	t.data = storage;
	t.device.device_type = kDLCPU;
	t.ndim = 2;
	t.dtype.code = kDLFloat;
	t.dtype.bits = 32;
	t.dtype.lanes = 1;
	t.shape = prod_shape;
	t.strides = prod_strides;
	return t;
}

static DLManagedTensor *make_legacy(void)
{
	DLManagedTensor *mt = calloc(1, sizeof(*mt));

	mt->dl_tensor = producer_tensor();
	mt->deleter = legacy_deleter;
	return mt;
}

static DLManagedTensorVersioned *make_versioned(uint32_t major, uint64_t flags)
{
	DLManagedTensorVersioned *mt = calloc(1, sizeof(*mt));

	mt->version.major = major;
	mt->version.minor = 0;
	mt->flags = flags;
	mt->dl_tensor = producer_tensor();
	mt->deleter = versioned_deleter;
	return mt;
}

TEST(import_legacy_zero_copy)
{
	DLManagedTensor *mt = make_legacy();
	tio_object_t *t;
	DLTensor *dl;
	tio_any_t a;

	legacy_deleted = 0;
	ASSERT_EQ(0, tio_tensor_from_dlpack(mt, 64, 1, &t));
	EXPECT_EQ(TIO_TYPE_TENSOR, t->type_index);
	dl = tio_tensor_dl(t);
	EXPECT_EQ((void *)storage, dl->data);
	EXPECT_EQ(&prod_shape[0], dl->shape);	/* not copied */
	EXPECT_EQ(32, tio_tensor_numel(dl));
	EXPECT_EQ(128, tio_tensor_nbytes(dl));
	EXPECT_FALSE(tio_tensor_is_readonly(t));
	a = tio_any_object(t);
	ASSERT_EQ(0, tio_any_to_dltensor(&a, &dl));
	EXPECT_EQ(tio_tensor_dl(t), dl);
	tio_object_incref(t);
	tio_object_decref(t);
	EXPECT_EQ(0, legacy_deleted);
	tio_object_decref(t);
	EXPECT_EQ(1, legacy_deleted);
	ASSERT_NO_LEAKS();
}

#ifdef __SANITIZE_ADDRESS__
#define TIO_TEST_ASAN 1
#else
#define TIO_TEST_ASAN 0
#endif

static void keep_deleter(DLManagedTensor *mt)
{
	legacy_deleted++;
}

/* Import and release @n tensors of @dl together; the objects in @objs. */
static int import_n(DLManagedTensor *mt, int n, tio_object_t **objs)
{
	int i;

	for (i = 0; i < n; i++)
		if (tio_tensor_from_dlpack(mt, 0, 0, &objs[i]))
			return -1;
	return 0;
}

static void release_n(int n, tio_object_t **objs)
{
	while (n--)
		tio_object_decref(objs[n]);
}

static void *import_on_thread(void *arg)
{
	DLManagedTensor *mt = arg;
	tio_object_t *objs[3];

	if (import_n(mt, 3, objs))
		return NULL;
	release_n(3, objs);	/* into this thread's cache, freed at its exit */
	return mt;
}

/*
 * Blocks of released Tensors serve the next imports of the thread (up to
 * four); those left go when the thread exits (valgrind finds a leak
 * otherwise), more than four are freed, large ones are not kept.
 */
TEST(import_block_reuse)
{
	DLManagedTensor mt = { .dl_tensor = producer_tensor(), .deleter = keep_deleter };
	tio_object_t *objs[6], *again[6], *big, *t;
	int64_t shape[6] = { 1, 2, 1, 2, 1, 2 };
	pthread_t th;
	void *r, *next;
	size_t size;
	int i;

	legacy_deleted = 0;
	ASSERT_EQ(0, tio_tensor_from_dlpack(&mt, 0, 0, &t));
	size = malloc_usable_size(t);
	tio_object_decref(t);
	/*
	 * Freed, the block would be the next malloc of its size (glibc's
	 * tcache is last in, first out); kept, it is the next import's.
	 */
	next = malloc(size);
#ifndef __SANITIZE_ADDRESS__	/* the cache is off under ASan */
	EXPECT_NE((void *)t, next);
	ASSERT_EQ(0, tio_tensor_from_dlpack(&mt, 0, 0, &again[0]));
	EXPECT_EQ(t, again[0]);
	tio_object_decref(again[0]);
#endif
	free(next);

	mt.dl_tensor.strides = NULL;	/* strides filled in the object */
	ASSERT_EQ(0, import_n(&mt, 6, objs));
	release_n(6, objs);
	ASSERT_EQ(0, import_n(&mt, 6, again));
	for (i = 0; i < 6; i++) {
		EXPECT_EQ(1, tio_object_strong_count(again[i]));
		EXPECT_EQ(tio_tensor_dl(again[i])->strides[1], 1);
		EXPECT_EQ(tio_tensor_dl(again[i])->strides[0], 8);
	}
	EXPECT_EQ(6, LIVE());
	release_n(6, again);
	EXPECT_EQ(12 + 1 + !TIO_TEST_ASAN, legacy_deleted);
	EXPECT_EQ(0, LIVE());

	mt.dl_tensor.ndim = 6;	/* over IMPORT_CACHED_NDIM: its own size */
	mt.dl_tensor.shape = shape;
	ASSERT_EQ(0, tio_tensor_from_dlpack(&mt, 0, 0, &big));
	EXPECT_EQ(2, tio_tensor_dl(big)->strides[4]);
	EXPECT_EQ(1, tio_tensor_dl(big)->strides[5]);
	tio_object_decref(big);
	mt.dl_tensor = producer_tensor();

	ASSERT_EQ(0, pthread_create(&th, NULL, import_on_thread, &mt));
	ASSERT_EQ(0, pthread_join(th, &r));
	EXPECT_EQ(&mt, r);
	EXPECT_EQ(16 + 1 + !TIO_TEST_ASAN, legacy_deleted);
	ASSERT_NO_LEAKS();
}

TEST(import_versioned_and_flags)
{
	DLManagedTensorVersioned *mt = make_versioned(1, DLPACK_FLAG_BITMASK_READ_ONLY), *out;
	tio_object_t *t, *back;

	versioned_deleted = 0;
	ASSERT_EQ(0, tio_tensor_from_dlpack_versioned(mt, 0, 0, &t));
	EXPECT_TRUE(tio_tensor_is_readonly(t));
	/* Export keeps the flag, holds a reference, unwraps on re-import. */
	ASSERT_EQ(0, tio_tensor_to_dlpack_versioned(t, &out));
	EXPECT_EQ(1, out->version.major);
	EXPECT_EQ(DLPACK_FLAG_BITMASK_READ_ONLY, out->flags);
	EXPECT_EQ((void *)storage, out->dl_tensor.data);
	EXPECT_EQ(2, tio_object_strong_count(t));
	ASSERT_EQ(0, tio_tensor_from_dlpack_versioned(out, 0, 0, &back));
	EXPECT_EQ(t, back);
	tio_object_decref(back);
	EXPECT_EQ(0, versioned_deleted);
	tio_object_decref(t);
	EXPECT_EQ(1, versioned_deleted);
	/* An unsupported major version is refused; the caller keeps it. */
	mt = make_versioned(2, 0);
	EXPECT_EQ(-1, tio_tensor_from_dlpack_versioned(mt, 0, 0, &t));
	ASSERT_RAISED("ValueError", "DLPack version 2.0 is not supported");
	mt->deleter(mt);
	EXPECT_EQ(2, versioned_deleted);
	ASSERT_NO_LEAKS();
}

TEST(export_legacy_consumer_deleter)
{
	DLManagedTensor *out;
	int64_t shape[2] = { 3, 5 };
	tio_object_t *t;
	DLDataType f64 = { kDLFloat, 64, 1 };

	ASSERT_EQ(0, tio_tensor_empty(2, shape, f64, 0, &t));
	EXPECT_TRUE(tio_tensor_is_aligned(tio_tensor_dl(t), 64));
	EXPECT_EQ(0.0, ((double *)tio_tensor_dl(t)->data)[14]);
	ASSERT_EQ(0, tio_tensor_to_dlpack(t, &out));
	tio_object_decref(t);	/* the consumer's reference keeps it */
	EXPECT_EQ(1, LIVE());
	EXPECT_EQ(5, out->dl_tensor.shape[1]);
	((double *)out->dl_tensor.data)[14] = 1.0;
	out->deleter(out);
	ASSERT_NO_LEAKS();
}

TEST(checks_refuse_and_leave_ownership)
{
	DLManagedTensor *mt = make_legacy();
	int64_t bad_strides[2] = { 1, 4 }, neg[2] = { 4, -1 };
	tio_object_t *t;

	legacy_deleted = 0;
	mt->dl_tensor.byte_offset = 4;
	EXPECT_EQ(-1, tio_tensor_from_dlpack(mt, 64, 0, &t));
	ASSERT_RAISED("ValueError", "not aligned to 64 bytes");
	EXPECT_EQ(-1, tio_tensor_from_dlpack(mt, 3, 0, &t));
	ASSERT_RAISED("ValueError", "not a power of two");
	mt->dl_tensor.byte_offset = 0;
	mt->dl_tensor.strides = bad_strides;
	EXPECT_EQ(-1, tio_tensor_from_dlpack(mt, 0, 1, &t));
	ASSERT_RAISED("ValueError", "not contiguous");
	mt->dl_tensor.shape = neg;
	EXPECT_EQ(-1, tio_tensor_from_dlpack(mt, 0, 0, &t));
	ASSERT_RAISED("ValueError", "negative");
	mt->dl_tensor.strides = NULL;	/* found while the strides are filled in */
	EXPECT_EQ(-1, tio_tensor_from_dlpack(mt, 0, 0, &t));
	ASSERT_RAISED("ValueError", "dimension 1 is negative");
	{
		/* Strides filled in; a huge product of dimensions is no overflow. */
		int64_t huge[2] = { INT64_MAX, 3 };
		DLManagedTensor keep = { .dl_tensor = mt->dl_tensor };	/* no deleter */
		DLManagedTensorVersioned *vmt = make_versioned(1, 0);

		keep.dl_tensor.shape = huge;
		ASSERT_EQ(0, tio_tensor_from_dlpack(&keep, 0, 0, &t));
		EXPECT_EQ(3, tio_tensor_dl(t)->strides[0]);
		EXPECT_EQ(1, tio_tensor_dl(t)->strides[1]);
		tio_object_decref(t);
		vmt->dl_tensor.shape = neg;
		vmt->dl_tensor.strides = NULL;
		EXPECT_EQ(-1, tio_tensor_from_dlpack_versioned(vmt, 0, 0, &t));
		ASSERT_RAISED("ValueError", "dimension 1 is negative");
		vmt->deleter(vmt);
	}
	mt->dl_tensor.shape = NULL;
	EXPECT_EQ(-1, tio_tensor_from_dlpack(mt, 0, 0, &t));
	ASSERT_RAISED("ValueError", "rank 2");
	mt->dl_tensor.shape = neg;
	mt->dl_tensor.dtype.bits = 0;
	EXPECT_EQ(-1, tio_tensor_from_dlpack(mt, 0, 0, &t));
	ASSERT_RAISED("ValueError", "0 bits");
	mt->dl_tensor.dtype.bits = 32;
	mt->dl_tensor.ndim = 65;
	EXPECT_EQ(-1, tio_tensor_from_dlpack(mt, 0, 0, &t));
	ASSERT_RAISED("ValueError", "rank 65");
	mt->dl_tensor.ndim = -1;
	EXPECT_EQ(-1, tio_tensor_from_dlpack(mt, 0, 0, &t));
	ASSERT_RAISED("ValueError", "rank");
	EXPECT_EQ(0, legacy_deleted);
	mt->deleter(mt);
	EXPECT_EQ(1, legacy_deleted);
	EXPECT_EQ(-1, tio_tensor_from_dlpack(NULL, 0, 0, &t));
	ASSERT_RAISED("ValueError", "NULL");
	ASSERT_NO_LEAKS();
}

TEST(contiguity)
{
	int64_t shape[3] = { 2, 1, 3 }, s1[3] = { 3, 3, 1 }, s2[3] = { 3, 99, 1 },
		s3[3] = { 1, 1, 2 };
	DLTensor t = { 0 };

	t.ndim = 3;
	t.shape = shape;
	EXPECT_TRUE(tio_tensor_is_contiguous(&t));
	t.strides = s1;
	EXPECT_TRUE(tio_tensor_is_contiguous(&t));
	t.strides = s2;	/* size-1 dimension: its stride does not matter */
	EXPECT_TRUE(tio_tensor_is_contiguous(&t));
	t.strides = s3;
	EXPECT_FALSE(tio_tensor_is_contiguous(&t));
}

TEST(views)
{
	int64_t shape[2] = { 4, 6 }, vshape[2] = { 2, 3 }, vstrides[2] = { 6, 2 },
		tshape[2] = { 6, 4 }, tstrides[2] = { 1, 6 };
	DLDataType i32 = { kDLInt, 32, 1 };
	tio_object_t *base, *v, *vt, *vv;
	DLManagedTensor *mt;
	int32_t *d, *p;
	DLTensor *dl;
	int i;

	ASSERT_EQ(0, tio_tensor_empty(2, shape, i32, 0, &base));
	d = tio_tensor_dl(base)->data;
	for (i = 0; i < 24; i++)
		d[i] = i;
	/* Rows 1-2, every other column from column 1. */
	ASSERT_EQ(0, tio_tensor_view(base, 2, vshape, vstrides, (6 + 1) * 4, &v));
	EXPECT_EQ(28, tio_tensor_dl(v)->byte_offset);
	EXPECT_FALSE(tio_tensor_is_contiguous(tio_tensor_dl(v)));
	dl = tio_tensor_dl(v);
	p = (int32_t *)((char *)dl->data + dl->byte_offset);
	EXPECT_EQ(7, p[0]);
	EXPECT_EQ(9, p[dl->strides[1]]);
	EXPECT_EQ(13, p[dl->strides[0]]);
	/* A transposed view of the whole base; a view of a view. */
	ASSERT_EQ(0, tio_tensor_view(base, 2, tshape, tstrides, 0, &vt));
	ASSERT_EQ(0, tio_tensor_view(v, 1, &vshape[1], &vstrides[1], 0, &vv));
	EXPECT_EQ(4, LIVE());
	tio_object_decref(base);	/* views keep it */
	EXPECT_EQ(4, LIVE());
	/* Out of bounds. */
	EXPECT_EQ(-1, tio_tensor_view(vt, 2, shape, NULL, 4, &vv));
	ASSERT_RAISED("ValueError", "outside its base");
	EXPECT_EQ(-1, tio_tensor_view(v, 2, vshape, vstrides, 4, &vv));
	ASSERT_RAISED("ValueError", "outside its base");
	/* A view exports like any tensor. */
	ASSERT_EQ(0, tio_tensor_to_dlpack(v, &mt));
	EXPECT_EQ(28, mt->dl_tensor.byte_offset);
	mt->deleter(mt);
	tio_object_decref(vt);
	tio_object_decref(vv);
	tio_object_decref(v);
	ASSERT_NO_LEAKS();
}

TEST(empty_rejects_bad_input)
{
	int64_t shape[1] = { -3 };
	DLDataType f32 = { kDLFloat, 32, 1 }, zero = { kDLFloat, 0, 1 };
	tio_object_t *t;

	EXPECT_EQ(-1, tio_tensor_empty(1, shape, f32, 0, &t));
	ASSERT_RAISED("ValueError", "negative");
	shape[0] = 3;
	EXPECT_EQ(-1, tio_tensor_empty(1, shape, zero, 0, &t));
	ASSERT_RAISED("ValueError", "0 bits");
	EXPECT_EQ(-1, tio_tensor_empty(1, shape, f32, 48, &t));
	ASSERT_RAISED("ValueError", "alignment");
	EXPECT_EQ(-1, tio_tensor_empty(65, shape, f32, 0, &t));
	ASSERT_RAISED("ValueError", "rank");
	ASSERT_EQ(0, tio_tensor_empty(0, NULL, f32, 0, &t));
	EXPECT_EQ(1, tio_tensor_numel(tio_tensor_dl(t)));
	EXPECT_EQ(-1, tio_tensor_view(t, 1, shape, NULL, 0, &t));
	ASSERT_RAISED("ValueError", "outside");
	tio_object_decref(t);
	ASSERT_NO_LEAKS();
}

TEST_HARNESS_MAIN
