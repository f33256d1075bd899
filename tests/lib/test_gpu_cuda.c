// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * CUDA (tensorio/gpu.h): device tensors, registered buffers, copies,
 * stream -> fence and fence -> stream, dma-buf export. The driver is
 * TIO_CUDA_LIBRARY's, else libcuda.so.1 where it loads, else the tests'
 * fake driver (fixture_fake_cuda.c: dev_pick_cuda()), so every test runs
 * on every machine; what only the fake can do (inject failures, count
 * what it holds) runs on the fake only. no_driver points
 * TIO_CUDA_LIBRARY at a library that does not exist.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tensorio/gpu.h>
#include <tensorio/tensor.h>

#include "kselftest_harness.h"
#include "gpu_test.h"

/* Runs in every environment: a missing driver fails every call cleanly. */
TEST(no_driver)
{
	tio_gpu_stream_t *cs = NULL;
	tio_object_t *t = NULL;
	int64_t shape = 16;
	tio_buffer_t *b;
	int n = -1, fd = -1;

	setenv("TIO_CUDA_LIBRARY", "libcuda-tensorio-test-absent.so.1", 1);
	ASSERT_EQ(-1, tio_gpu_init(kDLCUDA));
	ASSERT_DEV_MSG(ENODEV, "no CUDA driver");
	ASSERT_EQ(-1, tio_gpu_device_count(kDLCUDA, &n));
	ASSERT_DEV_ERR(ENODEV, "OSError");
	EXPECT_EQ(-1, n);
	ASSERT_EQ(-1, tio_gpu_tensor_empty(CUDA_DEV(0), 1, &shape, u8, &t));
	ASSERT_DEV_MSG(ENODEV, "no CUDA driver");
	EXPECT_EQ(NULL, t);
	ASSERT_EQ(-1, tio_gpu_stream_create(CUDA_DEV(0), &cs));
	ASSERT_DEV_MSG(ENODEV, "no CUDA driver");
	EXPECT_EQ(NULL, cs);
	ASSERT_EQ(-1, tio_gpu_export_dmabuf(CUDA_DEV(0), 4096, 4096, &fd));
	ASSERT_DEV_MSG(ENODEV, "no CUDA driver");
	EXPECT_EQ(-1, fd);
	ASSERT_OK(tio_buffer_alloc(4096, NULL, &b));
	ASSERT_EQ(-1, tio_gpu_buffer_register(kDLCUDA, b));
	ASSERT_DEV_MSG(ENODEV, "no CUDA driver");
	ASSERT_EQ(-1, tio_gpu_buffer_unregister(kDLCUDA, b));
	ASSERT_DEV_MSG(ENODEV, "no CUDA driver");
	tio_buffer_decref(b);
	tio_gpu_stream_destroy(NULL);
	EXPECT_EQ(0, tio_gpu_debug_live(kDLCUDA));
	/* A device type that is no GPU's. */
	ASSERT_EQ(-1, tio_gpu_init(kDLCPU));
	ASSERT_DEV_MSG(EINVAL, "not a GPU");
	ASSERT_EQ(-1, tio_gpu_stream_create((DLDevice){ kDLCPU, 0 }, &cs));
	ASSERT_DEV_MSG(EINVAL, "not a GPU");
	ASSERT_EQ(-1, tio_gpu_debug_live((DLDeviceType)1000));
	ASSERT_DEV_MSG(EINVAL, "not a GPU");
	EXPECT_EQ(0, tio_debug_live_handles());
}

TEST_F(cuda, device_info)
{
	char name[128] = "";
	int n = 0, v = 0, cap;

	NEED_CUDA();
	ASSERT_OK(tio_gpu_device_count(kDLCUDA, &n));
	EXPECT_GE(n, 1);
	ASSERT_OK(tio_gpu_driver_version(kDLCUDA, &v));
	EXPECT_GE(v, 1000);
	ASSERT_OK(tio_gpu_device_name(CUDA_DEV(0), name, sizeof(name)));
	EXPECT_NE(0, name[0]);
	TH_LOG("device 0: %s, driver %d.%d, %d device(s)", name, v / 1000,
	       v % 1000 / 10, n);
	for (cap = TIO_GPU_CAP_WAIT_VALUE64; cap <= TIO_GPU_CAP_DMABUF; cap++) {
		int r = tio_gpu_device_supports(CUDA_DEV(0), cap);

		EXPECT_TRUE(r == 0 || r == 1);
		TH_LOG("capability %d: %d", cap, r);
	}
	EXPECT_EQ(-1, tio_gpu_device_supports(CUDA_DEV(0), 99));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	EXPECT_EQ(-1, tio_gpu_device_name(CUDA_DEV(n), name, sizeof(name)));
	ASSERT_DEV_MSG(EINVAL, "CUDA device");
	EXPECT_EQ(-1, tio_gpu_device_name(CUDA_DEV(-1), name, sizeof(name)));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	EXPECT_EQ(-1, tio_gpu_device_name(CUDA_DEV(0), name, 0));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
}

TEST_F(cuda, tensor_empty)
{
	int64_t shape[2] = { 3, 1000 }, bad[2] = { 3, -1 };
	DLManagedTensorVersioned *mt;
	tio_object_t *t = NULL;
	DLTensor *dl;

	NEED_CUDA();
	ASSERT_OK(tio_gpu_tensor_empty(CUDA_DEV(0), 2, shape, f32, &t));
	dl = tio_tensor_dl(t);
	EXPECT_EQ(kDLCUDA, dl->device.device_type);
	EXPECT_EQ(0, dl->device.device_id);
	EXPECT_EQ(2, dl->ndim);
	EXPECT_EQ(3, dl->shape[0]);
	EXPECT_EQ(1000, dl->shape[1]);
	EXPECT_EQ(12000, tio_tensor_nbytes(dl));
	EXPECT_NE(NULL, dl->data);
	EXPECT_EQ(0, (uintptr_t)dl->data & 4095);
	EXPECT_EQ(1, tio_gpu_debug_live(kDLCUDA));
	/* A DLPack export keeps the memory after the Tensor goes. */
	ASSERT_OK(tio_tensor_to_dlpack_versioned(t, &mt));
	tio_object_decref(t);
	EXPECT_EQ(1, tio_gpu_debug_live(kDLCUDA));
	EXPECT_EQ(kDLCUDA, mt->dl_tensor.device.device_type);
	mt->deleter(mt);
	EXPECT_EQ(0, tio_gpu_debug_live(kDLCUDA));

	/* A scalar and an empty tensor get memory too. */
	ASSERT_OK(tio_gpu_tensor_empty(CUDA_DEV(0), 0, NULL, f32, &t));
	EXPECT_NE(NULL, tio_tensor_dl(t)->data);
	tio_object_decref(t);
	shape[0] = 0;
	ASSERT_OK(tio_gpu_tensor_empty(CUDA_DEV(0), 2, shape, f32, &t));
	tio_object_decref(t);

	t = NULL;
	EXPECT_EQ(-1, tio_gpu_tensor_empty(CUDA_DEV(0), 2, bad, f32, &t));
	ASSERT_DEV_MSG(EINVAL, "negative");
	EXPECT_EQ(-1, tio_gpu_tensor_empty(CUDA_DEV(0), 65, shape, f32, &t));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	EXPECT_EQ(-1, tio_gpu_tensor_empty(CUDA_DEV(0), -1, shape, f32, &t));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	EXPECT_EQ(-1, tio_gpu_tensor_empty(CUDA_DEV(0), 1, NULL, f32, &t));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	EXPECT_EQ(-1, tio_gpu_tensor_empty(CUDA_DEV(0), 1, shape, (DLDataType){ kDLFloat, 0, 1 }, &t));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	EXPECT_EQ(-1, tio_gpu_tensor_empty(CUDA_DEV(1000), 1, shape, f32, &t));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	bad[0] = bad[1] = INT64_C(1) << 40;
	EXPECT_EQ(-1, tio_gpu_tensor_empty(CUDA_DEV(0), 2, bad, f32, &t));
	ASSERT_DEV_ERR(EOVERFLOW, "ValueError");
	/* More than the GPU has: CUDA's own error, named. */
	bad[0] = INT64_C(1) << 50;
	EXPECT_EQ(-1, tio_gpu_tensor_empty(CUDA_DEV(0), 1, bad, u8, &t));
	ASSERT_DEV_MSG(ENOMEM, "CUDA_ERROR_OUT_OF_MEMORY");
	EXPECT_EQ(NULL, t);
}

TEST_F(cuda, stream_basics)
{
	tio_gpu_stream_t *cs;

	NEED_CUDA();
	ASSERT_OK(tio_gpu_stream_create(CUDA_DEV(0), &cs));
	EXPECT_NE(NULL, tio_gpu_stream_handle(cs));
	EXPECT_EQ(kDLCUDA, tio_gpu_stream_device(cs).device_type);
	EXPECT_EQ(0, tio_gpu_stream_device(cs).device_id);
	EXPECT_EQ(1, tio_gpu_stream_query(cs));
	ASSERT_OK(tio_gpu_stream_sync(cs));
	EXPECT_EQ(1, tio_gpu_debug_live(kDLCUDA));
	tio_gpu_stream_destroy(cs);
	EXPECT_EQ(-1, tio_gpu_stream_create(CUDA_DEV(-1), &cs));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
}

/* Pageable memory: copy there and back. */
TEST_F(cuda, copy_pageable)
{
	size_t n = (1 << 20) + 12345, i;
	unsigned char *a, *b;
	tio_gpu_stream_t *cs;
	int64_t shape = (int64_t)n;
	tio_object_t *t;

	NEED_CUDA();
	a = malloc(n);
	b = calloc(1, n);
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	for (i = 0; i < n; i++)
		a[i] = (unsigned char)(i * 7 + 3);
	ASSERT_OK(tio_gpu_stream_create(CUDA_DEV(0), &cs));
	ASSERT_OK(tio_gpu_tensor_empty(CUDA_DEV(0), 1, &shape, u8, &t));
	ASSERT_OK(tio_gpu_copy_htod(cs, dptr_of(t), a, n));
	ASSERT_OK(tio_gpu_copy_dtoh(cs, b, dptr_of(t), n));
	ASSERT_OK(tio_gpu_stream_sync(cs));
	EXPECT_EQ(0, memcmp(a, b, n));
	/* An offset inside the allocation. */
	memset(b, 0, n);
	ASSERT_OK(tio_gpu_copy_dtoh(cs, b, dptr_of(t) + 100, 1000));
	ASSERT_OK(tio_gpu_stream_sync(cs));
	EXPECT_EQ(0, memcmp(a + 100, b, 1000));

	EXPECT_EQ(-1, tio_gpu_copy_htod(cs, 0, a, n));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	EXPECT_EQ(-1, tio_gpu_copy_htod(cs, dptr_of(t), NULL, n));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	EXPECT_EQ(-1, tio_gpu_copy_dtoh(cs, NULL, dptr_of(t), n));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	tio_object_decref(t);
	tio_gpu_stream_destroy(cs);
	free(a);
	free(b);
}

/* Registered tensorio buffers, tensor copies both ways. */
TEST_F(cuda, copy_registered)
{
	size_t n = 256 << 10, i;
	tio_object_t *dev, *host_in, *host_out;
	struct tio_desc desc;
	tio_buffer_t *bin, *bout;
	tio_gpu_stream_t *cs;
	int64_t shape = (int64_t)n / 4;
	uint64_t dp = 0;
	float *in, *out;

	NEED_CUDA();
	memset(&desc, 0, sizeof(desc));
	desc.ndim = 1;
	desc.code = kDLFloat;
	desc.bits = 32;
	desc.lanes = 1;
	desc.shape[0] = shape;
	ASSERT_OK(tio_buffer_alloc(n, &desc, &bin));
	ASSERT_OK(tio_buffer_alloc(n, &desc, &bout));
	EXPECT_EQ(-1, tio_gpu_buffer_device_ptr(bin, CUDA_DEV(0), &dp));
	ASSERT_DEV_ERR(ENOENT, "KeyError");
	EXPECT_EQ(-1, tio_gpu_buffer_unregister(kDLCUDA, bin));
	ASSERT_DEV_MSG(ENOENT, "not registered");
	ASSERT_OK(tio_gpu_buffer_register(kDLCUDA, bin));
	ASSERT_OK(tio_gpu_buffer_register(kDLCUDA, bout));
	EXPECT_EQ(2, tio_gpu_debug_live(kDLCUDA));
	EXPECT_EQ(-1, tio_gpu_buffer_register(kDLCUDA, bin));
	ASSERT_DEV_MSG(EEXIST, "already registered");
	ASSERT_OK(tio_gpu_buffer_device_ptr(bin, CUDA_DEV(0), &dp));
	EXPECT_NE(0, dp);
	EXPECT_EQ(-1, tio_gpu_buffer_device_ptr(bin, CUDA_DEV(1000), &dp));
	ASSERT_DEV_ERR(EINVAL, "ValueError");

	in = tio_buffer_data(bin);
	out = tio_buffer_data(bout);
	for (i = 0; i < n / 4; i++)
		in[i] = (float)i * 0.5f;
	ASSERT_OK(tio_buffer_tensor(bin, NULL, &host_in));
	ASSERT_OK(tio_buffer_tensor(bout, NULL, &host_out));
	ASSERT_OK(tio_gpu_stream_create(CUDA_DEV(0), &cs));
	ASSERT_OK(tio_gpu_tensor_empty(CUDA_DEV(0), 1, &shape, f32, &dev));
	ASSERT_OK(tio_gpu_tensor_copy(cs, dev, host_in));
	ASSERT_OK(tio_gpu_tensor_copy(cs, host_out, dev));
	ASSERT_OK(tio_gpu_stream_sync(cs));
	EXPECT_EQ(0, memcmp(in, out, n));

	/* Mismatches. */
	EXPECT_EQ(-1, tio_gpu_tensor_copy(cs, host_out, host_in));
	ASSERT_DEV_MSG(EINVAL, "one CPU tensor and one CUDA tensor");
	EXPECT_EQ(-1, tio_gpu_tensor_copy(cs, dev, dev));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	EXPECT_EQ(-1, tio_gpu_tensor_copy(cs, dev, NULL));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	{
		tio_object_t *small;
		int64_t half = shape / 2;

		ASSERT_OK(tio_gpu_tensor_empty(CUDA_DEV(0), 1, &half, f32, &small));
		EXPECT_EQ(-1, tio_gpu_tensor_copy(cs, small, host_in));
		ASSERT_DEV_MSG(EINVAL, "bytes into");
		tio_object_decref(small);
		ASSERT_OK(tio_gpu_tensor_empty(CUDA_DEV(0), 1, &shape, u8, &small));
		EXPECT_EQ(-1, tio_gpu_tensor_copy(cs, small, host_in));
		ASSERT_DEV_MSG(EINVAL, "dtypes differ");
		tio_object_decref(small);
	}

	ASSERT_OK(tio_gpu_buffer_unregister(kDLCUDA, bin));
	EXPECT_EQ(-1, tio_gpu_buffer_unregister(kDLCUDA, bin));
	ASSERT_DEV_ERR(ENOENT, "KeyError");
	/* Registering again works once unregistered. */
	ASSERT_OK(tio_gpu_buffer_register(kDLCUDA, bin));
	tio_object_decref(host_in);
	tio_object_decref(host_out);
	tio_object_decref(dev);
	tio_gpu_stream_destroy(cs);
	EXPECT_EQ(2, tio_gpu_debug_live(kDLCUDA));
	/* Freeing a registered buffer ends its registration. */
	tio_buffer_decref(bin);
	tio_buffer_decref(bout);
	EXPECT_EQ(0, tio_gpu_debug_live(kDLCUDA));
}

/* The same memory can be registered again after its buffer went. */
TEST_F(cuda, register_pinned_user_memory)
{
	size_t n = 64 << 10;
	tio_buffer_t *b;
	void *mem;
	int round;

	NEED_CUDA();
	mem = aligned_alloc(4096, n);
	ASSERT_NE(NULL, mem);
	memset(mem, 1, n);
	for (round = 0; round < 2; round++) {
		ASSERT_OK(tio_buffer_pin(mem, n, 0, &b));
		ASSERT_OK(tio_gpu_buffer_register(kDLCUDA, b));
		tio_buffer_decref(b);
	}
	EXPECT_EQ(0, tio_gpu_debug_live(kDLCUDA));
	free(mem);
}

TEST_F(cuda, stream_to_fence)
{
	tio_gpu_stream_t *cs;
	uint64_t a, b, c;
	tio_stream_t *s;
	int status = 1;

	NEED_CUDA();
	ASSERT_OK(tio_stream_create(&s));
	ASSERT_OK(tio_gpu_stream_create(CUDA_DEV(0), &cs));
	ASSERT_OK(tio_fence_emit(s, &a));
	ASSERT_OK(tio_gpu_stream_signal_fence(cs, s, a));
	ASSERT_OK(tio_gpu_stream_record_fence(cs, s, &b));
	EXPECT_EQ(a + 1, b);
	ASSERT_OK(tio_fence_wait(s, b, 5000000000LL, &status));
	EXPECT_EQ(0, status);
	EXPECT_GE(tio_stream_signalled(s), b);
	ASSERT_OK(tio_gpu_stream_sync(cs));

	/* A point never emitted is refused at once. */
	EXPECT_EQ(-1, tio_gpu_stream_signal_fence(cs, s, b + 10));
	ASSERT_DEV_ERR(EINVAL, "ValueError");

	/* The point is signalled even when its stream was released. */
	ASSERT_OK(tio_fence_emit(s, &c));
	ASSERT_OK(tio_gpu_stream_signal_fence(cs, s, c));
	tio_stream_decref(s);
	ASSERT_OK(tio_gpu_stream_sync(cs));
	EXPECT_EQ(0, tio_debug_live_handles());
	tio_gpu_stream_destroy(cs);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

TEST_F(cuda, fence_to_stream)
{
	tio_stream_t *in, *out;
	tio_gpu_stream_t *cs;
	uint64_t a, b, dp;
	tio_buffer_t *buf;
	tio_object_t *t;
	int64_t shape = 4096, t0;
	unsigned char *p, back[16];

	NEED_CUDA();
	ASSERT_OK(tio_stream_create(&in));
	ASSERT_OK(tio_stream_create(&out));
	ASSERT_OK(tio_gpu_stream_create(CUDA_DEV(0), &cs));
	ASSERT_OK(tio_fence_emit(in, &a));
	if (tio_gpu_stream_wait_fence(cs, in, a)) {
		ASSERT_DEV_MSG(EOPNOTSUPP, "fence -> stream");
		tio_gpu_stream_destroy(cs);
		tio_stream_decref(in);
		tio_stream_decref(out);
		SKIP(return, "the device cannot wait on the seqno word");
	}
	/*
	 * The copy after the wait must see what the CPU wrote after enqueueing
	 * it, before signalling: proof that the GPU waited.
	 */
	ASSERT_OK(tio_buffer_alloc(4096, NULL, &buf));
	ASSERT_OK(tio_gpu_buffer_register(kDLCUDA, buf));
	p = tio_buffer_data(buf);
	memset(p, 0x11, 4096);
	ASSERT_OK(tio_gpu_tensor_empty(CUDA_DEV(0), 1, &shape, u8, &t));
	ASSERT_OK(tio_gpu_copy_htod(cs, dptr_of(t), p, 4096));
	ASSERT_OK(tio_gpu_stream_record_fence(cs, out, &b));
	t0 = now_ns();
	while (now_ns() - t0 < 20000000)
		;	/* 20 ms: the GPU would be done by now if it had not waited */
	EXPECT_EQ(0, tio_gpu_stream_query(cs));
	EXPECT_EQ(-1, tio_fence_wait(out, b, 0, NULL));
	ASSERT_DEV_ERR(ETIME, "TimeoutError");
	memset(p, 0x22, 4096);
	ASSERT_OK(tio_fence_signal(in, a, 0));
	ASSERT_OK(tio_fence_wait(out, b, 5000000000LL, NULL));
	ASSERT_OK(tio_gpu_stream_sync(cs));
	dp = dptr_of(t);
	ASSERT_OK(tio_gpu_copy_dtoh(cs, back, dp, sizeof(back)));
	ASSERT_OK(tio_gpu_stream_sync(cs));
	EXPECT_EQ(0x22, back[0]);
	EXPECT_EQ(0x22, back[15]);

	/* An already signalled point does not stall; a future one is refused. */
	ASSERT_OK(tio_gpu_stream_wait_fence(cs, in, a));
	EXPECT_EQ(-1, tio_gpu_stream_wait_fence(cs, in, a + 5));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_OK(tio_gpu_stream_sync(cs));
	EXPECT_EQ(1, tio_gpu_stream_query(cs));

	tio_object_decref(t);
	tio_buffer_decref(buf);
	tio_gpu_stream_destroy(cs);
	/* Releasing the stream ends its seqno page registration. */
	tio_stream_decref(in);
	tio_stream_decref(out);
}

TEST_F(cuda, dmabuf)
{
	int64_t shape = 2 << 20;
	tio_buffer_t *b = NULL;
	char path[64], line[256];
	int fd = -1, found = 0;
	tio_object_t *t;
	struct stat st;
	FILE *f;

	NEED_CUDA();
	ASSERT_OK(tio_gpu_tensor_empty(CUDA_DEV(0), 1, &shape, u8, &t));
	EXPECT_EQ(-1, tio_gpu_export_dmabuf(CUDA_DEV(0), dptr_of(t) + 1, 4096, &fd));
	if (tio_gpu_device_supports(CUDA_DEV(0), TIO_GPU_CAP_DMABUF) != 1) {
		ASSERT_DEV_MSG(EOPNOTSUPP, "dma-buf");
		tio_object_decref(t);
		SKIP(return, "CUDA device 0 cannot export dma-bufs");
	}
	ASSERT_DEV_MSG(EINVAL, "page aligned");
	EXPECT_EQ(-1, tio_gpu_export_dmabuf(CUDA_DEV(0), dptr_of(t), 100, &fd));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_OK(tio_gpu_export_dmabuf(CUDA_DEV(0), dptr_of(t), (size_t)shape, &fd));
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_NE(0, fcntl(fd, F_GETFD) & FD_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "exp_name:", 9))
			found = 1;
	fclose(f);
	EXPECT_TRUE(found) TH_LOG("%s has no exp_name: not a dma-buf", path);
	close(fd);

	if (dev_is_kernel()) {
		ASSERT_OK(tio_gpu_buffer_import(CUDA_DEV(0), dptr_of(t), (size_t)shape, &b));
		EXPECT_EQ((size_t)shape, tio_buffer_size(b));
		tio_buffer_decref(b);
	} else {
		EXPECT_EQ(-1, tio_gpu_buffer_import(CUDA_DEV(0), dptr_of(t), (size_t)shape, &b));
		ASSERT_DEV_MSG(EOPNOTSUPP, "kernel backend");
		EXPECT_EQ(NULL, b);
	}
	tio_object_decref(t);
}

TEST_HARNESS_MAIN
