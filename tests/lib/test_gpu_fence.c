// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * CUDA fences through stream memory operations (tensorio/gpu.h), on the
 * driver dev_pick_cuda() picks (the fake one where no GPU is: gpu_test.h):
 * stream -> fence writes the point into the stream's doorbell after the
 * work before it (no host function), and falls back to a host function
 * without memory operations, on a stream without a doorbell, or where a
 * write from another GPU stream could land below an earlier one; fence ->
 * stream waits on the doorbell for a point a GPU stream is to write
 * there. Each signal holds its stream until it is done.
 */
#include <stdlib.h>

#include "kselftest_harness.h"
#include "gpu_test.h"

/* A registered host buffer of @n bytes, filled with @fill; NULL raised. */
static tio_buffer_t *host_buf(size_t n, int fill)
{
	tio_buffer_t *b;

	if (tio_buffer_alloc(n, NULL, &b))
		return NULL;
	if (tio_gpu_buffer_register(kDLCUDA, b)) {
		tio_buffer_decref(b);
		return NULL;
	}
	memset(tio_buffer_data(b), fill, n);
	return b;
}

/*
 * The point is written into the doorbell once the copies before it are
 * done: what the CPU reads after the wait is what the GPU copied.
 */
TEST_F(cuda, doorbell_write_after_work)
{
	tio_buffer_t *in, *out;
	tio_gpu_stream_t *cs;
	tio_object_t *t;
	int64_t shape = 1 << 16;
	int status = 1, round;
	tio_stream_t *s;
	uint64_t p;

	NEED_CUDA();
	if (tio_gpu_device_supports(CUDA_DEV(0), TIO_GPU_CAP_WRITE_VALUE64) != 1)
		SKIP(return, "CUDA device 0 has no 64-bit stream writes");
	in = host_buf((size_t)shape, 0x5a);
	out = host_buf((size_t)shape, 0);
	ASSERT_NE(NULL, in);
	ASSERT_NE(NULL, out);
	ASSERT_OK(tio_stream_create_flags(TIO_STREAM_DOORBELL, &s));
	ASSERT_OK(tio_gpu_stream_create(CUDA_DEV(0), &cs));
	ASSERT_OK(tio_gpu_tensor_empty(CUDA_DEV(0), 1, &shape, u8, &t));
	for (round = 0; round < 3; round++) {
		memset(tio_buffer_data(in), 0x10 + round, (size_t)shape);
		ASSERT_OK(tio_gpu_copy_htod(cs, dptr_of(t), tio_buffer_data(in), (size_t)shape));
		ASSERT_OK(tio_gpu_copy_dtoh(cs, tio_buffer_data(out), dptr_of(t), (size_t)shape));
		ASSERT_OK(tio_gpu_stream_record_fence(cs, s, &p));
		ASSERT_OK(tio_fence_wait(s, p, 5000000000LL, &status));
		EXPECT_EQ(0, status);
		EXPECT_EQ(0x10 + round, ((unsigned char *)tio_buffer_data(out))[shape - 1]);
		/* The GPU wrote it: the doorbell holds the point. */
		EXPECT_EQ(p, *tio_stream_doorbell(s));
		EXPECT_LE(p, tio_stream_signalled(s));
	}
	ASSERT_OK(tio_gpu_stream_sync(cs));
	tio_object_decref(t);
	tio_gpu_stream_destroy(cs);
	tio_buffer_decref(in);
	tio_buffer_decref(out);
	tio_stream_decref(s);
}

/* A stream without a doorbell: the host function signals, as before. */
TEST_F(cuda, no_doorbell_host_function)
{
	tio_gpu_stream_t *cs;
	tio_stream_t *s;
	uint64_t p;

	NEED_CUDA();
	ASSERT_OK(tio_stream_create(&s));
	ASSERT_OK(tio_gpu_stream_create(CUDA_DEV(0), &cs));
	ASSERT_OK(tio_gpu_stream_record_fence(cs, s, &p));
	ASSERT_OK(tio_fence_wait(s, p, 5000000000LL, NULL));
	ASSERT_OK(tio_gpu_stream_sync(cs));
	tio_gpu_stream_destroy(cs);
	tio_stream_decref(s);
}

/*
 * The signal holds its stream: released by the caller at once, the
 * doorbell and its registration stay until the write landed.
 */
TEST_F(cuda, doorbell_outlives_caller)
{
	tio_gpu_stream_t *cs;
	tio_stream_t *s;
	uint64_t p;

	NEED_CUDA();
	ASSERT_OK(tio_stream_create_flags(TIO_STREAM_DOORBELL, &s));
	ASSERT_OK(tio_gpu_stream_create(CUDA_DEV(0), &cs));
	ASSERT_OK(tio_gpu_stream_record_fence(cs, s, &p));
	tio_stream_decref(s);
	ASSERT_OK(tio_gpu_stream_sync(cs));
	tio_gpu_stream_destroy(cs);
	EXPECT_EQ(0, tio_debug_live_handles());
}

/*
 * GPU -> GPU: stream B waits for a point stream A writes into the
 * doorbell (B waits on the doorbell, where it shows first), and A waits
 * for the CPU; B's copy runs only after both.
 */
TEST_F(cuda, doorbell_chain)
{
	tio_stream_t *gate, *s, *done;
	tio_gpu_stream_t *a, *b;
	tio_buffer_t *in, *out;
	uint64_t g, p, q;
	tio_object_t *t;
	int64_t shape = 4096;

	NEED_CUDA();
	if (tio_gpu_device_supports(CUDA_DEV(0), TIO_GPU_CAP_WAIT_VALUE64) != 1 ||
	    tio_gpu_device_supports(CUDA_DEV(0), TIO_GPU_CAP_WRITE_VALUE64) != 1)
		SKIP(return, "CUDA device 0 has no 64-bit stream memory operations");
	in = host_buf((size_t)shape, 0x11);
	out = host_buf((size_t)shape, 0);
	ASSERT_NE(NULL, in);
	ASSERT_NE(NULL, out);
	ASSERT_OK(tio_stream_create(&gate));
	ASSERT_OK(tio_stream_create_flags(TIO_STREAM_DOORBELL, &s));
	ASSERT_OK(tio_stream_create(&done));
	ASSERT_OK(tio_gpu_stream_create(CUDA_DEV(0), &a));
	ASSERT_OK(tio_gpu_stream_create(CUDA_DEV(0), &b));
	ASSERT_OK(tio_gpu_tensor_empty(CUDA_DEV(0), 1, &shape, u8, &t));
	ASSERT_OK(tio_fence_emit(gate, &g));
	ASSERT_OK(tio_gpu_stream_wait_fence(a, gate, g));
	ASSERT_OK(tio_gpu_copy_htod(a, dptr_of(t), tio_buffer_data(in), (size_t)shape));
	ASSERT_OK(tio_gpu_stream_record_fence(a, s, &p));
	ASSERT_OK(tio_gpu_stream_wait_fence(b, s, p));
	ASSERT_OK(tio_gpu_copy_dtoh(b, tio_buffer_data(out), dptr_of(t), (size_t)shape));
	ASSERT_OK(tio_gpu_stream_record_fence(b, done, &q));
	EXPECT_EQ(-1, tio_fence_wait(done, q, 20000000, NULL));
	ASSERT_DEV_ERR(ETIME, "TimeoutError");
	/* What the CPU writes before opening the gate is what arrives. */
	memset(tio_buffer_data(in), 0x22, (size_t)shape);
	ASSERT_OK(tio_fence_signal(gate, g, 0));
	ASSERT_OK(tio_fence_wait(done, q, 5000000000LL, NULL));
	EXPECT_EQ(0x22, ((unsigned char *)tio_buffer_data(out))[shape - 1]);
	ASSERT_OK(tio_gpu_stream_sync(a));
	ASSERT_OK(tio_gpu_stream_sync(b));
	tio_object_decref(t);
	tio_gpu_stream_destroy(a);
	tio_gpu_stream_destroy(b);
	tio_buffer_decref(in);
	tio_buffer_decref(out);
	tio_stream_decref(gate);
	tio_stream_decref(s);
	tio_stream_decref(done);
}

/*
 * Writes never land below one another: while stream A's write of point 1
 * is held (A waits for the CPU), stream B's point 2 goes by a host
 * function, and so does a point at or below one already written. The
 * doorbell then ends at 1 while the points up to 2 signalled, and
 * nothing moves back.
 */
TEST_F(cuda, doorbell_writes_only_grow)
{
	tio_gpu_stream_t *a, *b;
	tio_stream_t *gate, *s;
	uint64_t g, p1, p2;

	NEED_CUDA();
	if (tio_gpu_device_supports(CUDA_DEV(0), TIO_GPU_CAP_WAIT_VALUE64) != 1 ||
	    tio_gpu_device_supports(CUDA_DEV(0), TIO_GPU_CAP_WRITE_VALUE64) != 1)
		SKIP(return, "CUDA device 0 has no 64-bit stream memory operations");
	ASSERT_OK(tio_stream_create(&gate));
	ASSERT_OK(tio_stream_create_flags(TIO_STREAM_DOORBELL, &s));
	ASSERT_OK(tio_gpu_stream_create(CUDA_DEV(0), &a));
	ASSERT_OK(tio_gpu_stream_create(CUDA_DEV(0), &b));
	ASSERT_OK(tio_fence_emit(gate, &g));
	ASSERT_OK(tio_gpu_stream_wait_fence(a, gate, g));
	ASSERT_OK(tio_gpu_stream_record_fence(a, s, &p1));
	ASSERT_OK(tio_gpu_stream_record_fence(b, s, &p2));
	ASSERT_OK(tio_fence_wait(s, p2, 5000000000LL, NULL));
	EXPECT_EQ(0, *tio_stream_doorbell(s));
	/* A point below the last write: a host function, on A, after it. */
	ASSERT_OK(tio_gpu_stream_signal_fence(a, s, p1));
	ASSERT_OK(tio_fence_signal(gate, g, 0));
	ASSERT_OK(tio_gpu_stream_sync(a));
	ASSERT_OK(tio_gpu_stream_sync(b));
	EXPECT_EQ(p1, *tio_stream_doorbell(s));
	EXPECT_EQ(p2, tio_stream_signalled(s));
	ASSERT_OK(tio_fence_wait(s, p2, 0, NULL));
	EXPECT_EQ(p2, *tio_stream_seqno_word(s));
	tio_gpu_stream_destroy(a);
	tio_gpu_stream_destroy(b);
	tio_stream_decref(gate);
	tio_stream_decref(s);
}

/* A point never emitted is refused before anything is enqueued. */
TEST_F(cuda, doorbell_bad_point)
{
	tio_gpu_stream_t *cs;
	tio_stream_t *s;

	NEED_CUDA();
	ASSERT_OK(tio_stream_create_flags(TIO_STREAM_DOORBELL, &s));
	ASSERT_OK(tio_gpu_stream_create(CUDA_DEV(0), &cs));
	EXPECT_EQ(-1, tio_gpu_stream_signal_fence(cs, s, 7));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	EXPECT_EQ(-1, tio_gpu_stream_wait_fence(cs, s, 7));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	EXPECT_EQ(0, *tio_stream_doorbell(s));
	tio_gpu_stream_destroy(cs);
	tio_stream_decref(s);
}

/*
 * The fake driver without stream memory operations (as an old driver, or
 * NVreg_EnableStreamMemOPs=0): the capability says so, stream -> fence
 * falls back to a host function (the doorbell stays untouched) and fence
 * -> stream reports EOPNOTSUPP.
 */
TEST(fallback_without_memops)
{
	tio_gpu_stream_t *cs;
	tio_stream_t *s;
	uint64_t p;
	int status = 1;

	if (getenv("TIO_CUDA_LIBRARY") && !strstr(getenv("TIO_CUDA_LIBRARY"), "fake_cuda"))
		SKIP(return, "not the fake driver");
	dev_pick_cuda();
	if (!strstr(getenv("TIO_CUDA_LIBRARY") ?: "", "fake_cuda"))
		SKIP(return, "a real driver: its memory operations cannot be turned off");
	setenv("FAKE_CUDA_NO_MEMOPS", "1", 1);
	ASSERT_OK(tio_init());
	if (tio_gpu_init(kDLCUDA))
		SKIP(return, "%s", tio_error_message(tio_error_peek_raised()));
	EXPECT_EQ(0, tio_gpu_device_supports(CUDA_DEV(0), TIO_GPU_CAP_WRITE_VALUE64));
	EXPECT_EQ(0, tio_gpu_device_supports(CUDA_DEV(0), TIO_GPU_CAP_WAIT_VALUE64));
	ASSERT_OK(tio_stream_create_flags(TIO_STREAM_DOORBELL, &s));
	ASSERT_OK(tio_gpu_stream_create(CUDA_DEV(0), &cs));
	ASSERT_OK(tio_gpu_stream_record_fence(cs, s, &p));
	ASSERT_OK(tio_fence_wait(s, p, 5000000000LL, &status));
	EXPECT_EQ(0, status);
	EXPECT_EQ(0, *tio_stream_doorbell(s));
	EXPECT_EQ(-1, tio_gpu_stream_wait_fence(cs, s, p));
	ASSERT_DEV_MSG(EOPNOTSUPP, "lacks 64-bit stream memory operations");
	ASSERT_OK(tio_gpu_stream_sync(cs));
	tio_gpu_stream_destroy(cs);
	tio_stream_decref(s);
	EXPECT_EQ(0, tio_gpu_debug_live(kDLCUDA));
}

/* Failures the fake driver injects are reported with the call's name. */
TEST_F(cuda, injected_failures)
{
	tio_gpu_stream_t *cs;
	tio_object_t *t = NULL;
	int64_t shape = 4096;
	unsigned char host[4096];

	NEED_CUDA();
	if (!cuda_is_fake())
		SKIP(return, "a real driver: nothing to inject");
	ASSERT_OK(tio_gpu_stream_create(CUDA_DEV(0), &cs));
	setenv("FAKE_CUDA_FAIL_ALLOC", "1", 1);
	EXPECT_EQ(-1, tio_gpu_tensor_empty(CUDA_DEV(0), 1, &shape, u8, &t));
	ASSERT_DEV_MSG(ENOMEM, "CUDA_ERROR_OUT_OF_MEMORY");
	unsetenv("FAKE_CUDA_FAIL_ALLOC");
	setenv("FAKE_CUDA_MEM_LIMIT", "1000", 1);
	EXPECT_EQ(-1, tio_gpu_tensor_empty(CUDA_DEV(0), 1, &shape, u8, &t));
	ASSERT_DEV_MSG(ENOMEM, "cuMemAlloc");
	unsetenv("FAKE_CUDA_MEM_LIMIT");
	ASSERT_OK(tio_gpu_tensor_empty(CUDA_DEV(0), 1, &shape, u8, &t));
	setenv("FAKE_CUDA_FAIL_HTOD", "2", 1);
	ASSERT_OK(tio_gpu_copy_htod(cs, dptr_of(t), host, sizeof(host)));
	EXPECT_EQ(-1, tio_gpu_copy_htod(cs, dptr_of(t), host, sizeof(host)));
	ASSERT_DEV_MSG(EINVAL, "cuMemcpyHtoDAsync");
	unsetenv("FAKE_CUDA_FAIL_HTOD");
	setenv("FAKE_CUDA_FAIL_DTOH", "1", 1);
	EXPECT_EQ(-1, tio_gpu_copy_dtoh(cs, host, dptr_of(t), sizeof(host)));
	ASSERT_DEV_MSG(EINVAL, "cuMemcpyDtoHAsync");
	unsetenv("FAKE_CUDA_FAIL_DTOH");
	/* Outside the allocation: the fake refuses what a GPU would fault on. */
	EXPECT_EQ(-1, tio_gpu_copy_dtoh(cs, host, dptr_of(t) + 1, sizeof(host)));
	ASSERT_DEV_MSG(EINVAL, "CUDA_ERROR_INVALID_VALUE");
	ASSERT_OK(tio_gpu_stream_sync(cs));
	tio_object_decref(t);
	tio_gpu_stream_destroy(cs);
}

TEST_HARNESS_MAIN
