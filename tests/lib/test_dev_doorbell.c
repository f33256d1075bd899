// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Stream doorbells (tio_stream_create_flags(TIO_STREAM_DOORBELL)), on
 * whichever backend the context picks: a word written here, as a GPU's
 * stream write would, completes the points up to it; waiters see it
 * without anyone calling into the library (a waiting thread wakes);
 * never past the last point emitted, never backwards, errors already
 * signalled kept; a stream without one refuses the accessor; the FFI
 * global takes the flag and refuses others.
 */
#include <pthread.h>
#include <time.h>

#include "kselftest_harness.h"
#include "dev_test.h"

DEV_FIXTURE(bell);

static void ring(tio_stream_t *s, uint64_t v)
{
	__atomic_store_n(tio_stream_doorbell(s), v, __ATOMIC_RELEASE);
}

TEST_F(bell, create_and_map)
{
	tio_stream_t *s, *plain;
	volatile uint64_t *w;

	ASSERT_OK(tio_stream_create_flags(TIO_STREAM_DOORBELL, &s));
	w = tio_stream_doorbell(s);
	ASSERT_NE(NULL, w);
	EXPECT_EQ(0, *w);
	/* Mapped once: the same word again. */
	EXPECT_EQ(w, tio_stream_doorbell(s));
	ASSERT_OK(tio_stream_create(&plain));
	EXPECT_EQ(NULL, tio_stream_doorbell(plain));
	ASSERT_DEV_MSG(EINVAL, "has no doorbell");
	EXPECT_EQ(-1, tio_stream_create_flags(2, &plain));
	ASSERT_DEV_MSG(EINVAL, "unknown flags");
	tio_stream_decref(s);
	tio_stream_decref(plain);
}

TEST_F(bell, ring_completes_points)
{
	uint64_t a, b, c;
	tio_stream_t *s;
	int status = 1;

	ASSERT_OK(tio_stream_create_flags(TIO_STREAM_DOORBELL, &s));
	ASSERT_OK(tio_fence_emit(s, &a));
	ASSERT_OK(tio_fence_emit(s, &b));
	ASSERT_OK(tio_fence_emit(s, &c));
	EXPECT_EQ(-1, tio_fence_wait(s, a, 0, NULL));
	ASSERT_DEV_ERR(ETIME, "TimeoutError");
	ring(s, b);
	/* The doorbell shows at once; the points signal at the next look. */
	EXPECT_EQ(b, tio_stream_signalled(s));
	ASSERT_OK(tio_fence_wait(s, a, 0, &status));
	EXPECT_EQ(0, status);
	EXPECT_EQ(b, *tio_stream_seqno_word(s));
	ASSERT_OK(tio_fence_wait(s, b, 0, &status));
	EXPECT_EQ(-1, tio_fence_wait(s, c, 0, NULL));
	ASSERT_DEV_ERR(ETIME, "TimeoutError");
	/* The CPU can still signal the rest itself. */
	ASSERT_OK(tio_fence_signal(s, c, 0));
	ASSERT_OK(tio_fence_wait(s, c, 0, NULL));
	tio_stream_decref(s);
}

/* A value past the last point emitted signals only what was emitted. */
TEST_F(bell, never_past_emitted_never_backwards)
{
	tio_stream_t *s;
	uint64_t a, b;

	ASSERT_OK(tio_stream_create_flags(TIO_STREAM_DOORBELL, &s));
	ASSERT_OK(tio_fence_emit(s, &a));
	ASSERT_OK(tio_fence_emit(s, &b));
	ring(s, 100);
	ASSERT_OK(tio_fence_wait(s, b, 0, NULL));
	EXPECT_EQ(b, *tio_stream_seqno_word(s));
	/* A lower value changes nothing. */
	ring(s, a);
	ASSERT_OK(tio_fence_wait(s, a, 0, NULL));
	ASSERT_OK(tio_fence_wait(s, b, 0, NULL));
	EXPECT_EQ(b, *tio_stream_seqno_word(s));
	EXPECT_EQ(b, tio_stream_signalled(s));
	tio_stream_decref(s);
}

/* Points that signalled with an error keep it; the doorbell's are clean. */
TEST_F(bell, errors_kept)
{
	tio_stream_t *s;
	uint64_t a, b;
	int status = 0;

	ASSERT_OK(tio_stream_create_flags(TIO_STREAM_DOORBELL, &s));
	ASSERT_OK(tio_fence_emit(s, &a));
	ASSERT_OK(tio_fence_emit(s, &b));
	ASSERT_OK(tio_fence_signal(s, a, -EIO));
	ring(s, b);
	ASSERT_OK(tio_fence_wait(s, b, 0, &status));
	EXPECT_EQ(0, status);
	ASSERT_OK(tio_fence_wait(s, a, 0, &status));
	EXPECT_EQ(-EIO, status);
	tio_stream_decref(s);
}

struct waiter {
	tio_stream_t *s;
	uint64_t seqno;
	int ret, status;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	w->status = 1;
	w->ret = tio_fence_wait(w->s, w->seqno, -1, &w->status);
	if (w->ret)
		tio_error_clear();
	return NULL;
}

/*
 * A thread waiting without a timeout wakes when the doorbell is written,
 * though nothing calls into the library: in its spin, and after it
 * settled into its naps.
 */
TEST_F(bell, sleeping_waiter_wakes)
{
	struct timespec pause[2] = { { 0, 1000000 }, { 0, 30000000 } };
	struct waiter w = { 0 };
	pthread_t t;
	int i;

	ASSERT_OK(tio_stream_create_flags(TIO_STREAM_DOORBELL, &w.s));
	for (i = 0; i < 2; i++) {
		ASSERT_OK(tio_fence_emit(w.s, &w.seqno));
		ASSERT_EQ(0, pthread_create(&t, NULL, wait_thread, &w));
		nanosleep(&pause[i], NULL);
		ring(w.s, w.seqno);
		ASSERT_EQ(0, pthread_join(t, NULL));
		EXPECT_EQ(0, w.ret);
		EXPECT_EQ(0, w.status);
	}
	tio_stream_decref(w.s);
}

/* A buffer's fence from a doorbell stream: BUF_WAIT sees the doorbell. */
TEST_F(bell, buffer_wait)
{
	tio_stream_t *s;
	tio_buffer_t *b;
	uint64_t a;
	int status = 1;

	ASSERT_OK(tio_stream_create_flags(TIO_STREAM_DOORBELL, &s));
	ASSERT_OK(tio_buffer_alloc(4096, NULL, &b));
	ASSERT_OK(tio_fence_emit(s, &a));
	ASSERT_OK(tio_buffer_attach_fence(b, s, a, 0));
	EXPECT_EQ(-1, tio_buffer_wait(b, 0, 0, &status));
	ASSERT_DEV_ERR(ETIME, "TimeoutError");
	ring(s, a);
	ASSERT_OK(tio_buffer_wait(b, 0, 1000000000LL, &status));
	EXPECT_EQ(0, status);
	tio_buffer_decref(b);
	tio_stream_decref(s);
}

/* tio.stream.create(flags): the doorbell flag, and nothing else. */
TEST_F(bell, ffi_global)
{
	tio_object_t *f;
	tio_any_t arg = tio_any_int(TIO_STREAM_DOORBELL), ret = tio_any_none();

	ASSERT_OK(tio_func_get_global("tio.stream.create", &f));
	ASSERT_OK(tio_func_call(f, &arg, 1, &ret));
	ASSERT_LE(TIO_TYPE_STATIC_OBJECT_BEGIN, ret.type_index);
	EXPECT_NE(NULL, tio_stream_doorbell((tio_stream_t *)ret.v_obj));
	tio_any_decref(&ret);
	arg = tio_any_int(2);
	EXPECT_EQ(-1, tio_func_call(f, &arg, 1, &ret));
	ASSERT_DEV_MSG(EINVAL, "TIO_STREAM_F_DOORBELL");
	tio_object_decref(f);
}

TEST_HARNESS_MAIN
