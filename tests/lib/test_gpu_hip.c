// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * HIP (kDLROCM devices of tensorio/gpu.h). With the installed runtime and
 * no AMD GPU (this machine: libamdhip64.so.5, no device) the load fails
 * at device discovery: no_device checks that every call then fails
 * cleanly with ENODEV and that nothing is left behind (objects, fds).
 * no_runtime points TIO_HIP_LIBRARY at a library that does not exist. The
 * device tests run on an AMD GPU, else on the tests' fake runtime
 * (dev_pick_hip()): tensors, copies, registration, stream -> fence (a
 * host function, or a write into a doorbell), and the EOPNOTSUPP of fence
 * -> stream and dma-buf export (HIP 5.2).
 */
#include <stdio.h>
#include <stdlib.h>

#include <tensorio/gpu.h>
#include <tensorio/tensor.h>

#include "kselftest_harness.h"
#include "dev_test.h"

static const DLDataType u8 = { kDLUInt, 8, 1 };
static const DLDataType f32 = { kDLFloat, 32, 1 };

/*
 * Every call that needs no stream, on a HIP that cannot be used: each
 * fails with ENODEV and a message starting @why, touching nothing.
 */
static void no_hip_calls(struct __test_metadata *_metadata, const char *why)
{
	tio_gpu_stream_t *hs = NULL;
	tio_buffer_t *b, *imp = NULL;
	tio_object_t *t = NULL;
	int64_t shape = 16;
	uint64_t dp = 0;
	int n = -1, fd = -1;
	char name[64] = "x";

	ASSERT_EQ(-1, tio_gpu_init(kDLROCM));
	ASSERT_DEV_MSG(ENODEV, why);
	/* The failed load is remembered: the same answer again. */
	ASSERT_EQ(-1, tio_gpu_init(kDLROCM));
	ASSERT_DEV_MSG(ENODEV, why);
	ASSERT_EQ(-1, tio_gpu_device_count(kDLROCM, &n));
	ASSERT_DEV_ERR(ENODEV, "OSError");
	EXPECT_EQ(-1, n);
	ASSERT_EQ(-1, tio_gpu_driver_version(kDLROCM, &n));
	ASSERT_DEV_MSG(ENODEV, why);
	EXPECT_EQ(-1, n);
	ASSERT_EQ(-1, tio_gpu_device_name(HIP_DEV(0), name, sizeof(name)));
	ASSERT_DEV_MSG(ENODEV, why);
	EXPECT_STREQ("x", name);
	ASSERT_EQ(-1, tio_gpu_device_supports(HIP_DEV(0), TIO_GPU_CAP_WAIT_VALUE64));
	ASSERT_DEV_MSG(ENODEV, why);
	ASSERT_EQ(-1, tio_gpu_tensor_empty(HIP_DEV(0), 1, &shape, u8, &t));
	ASSERT_DEV_MSG(ENODEV, why);
	EXPECT_EQ(NULL, t);
	ASSERT_EQ(-1, tio_gpu_stream_create(HIP_DEV(0), &hs));
	ASSERT_DEV_MSG(ENODEV, why);
	EXPECT_EQ(NULL, hs);
	ASSERT_EQ(-1, tio_gpu_export_dmabuf(HIP_DEV(0), 4096, 4096, &fd));
	ASSERT_DEV_MSG(ENODEV, why);
	EXPECT_EQ(-1, fd);
	ASSERT_EQ(-1, tio_gpu_buffer_import(HIP_DEV(0), 4096, 4096, &imp));
	ASSERT_DEV_MSG(ENODEV, why);
	EXPECT_EQ(NULL, imp);

	ASSERT_OK(tio_buffer_alloc(4096, NULL, &b));
	ASSERT_EQ(-1, tio_gpu_buffer_register(kDLROCM, b));
	ASSERT_DEV_MSG(ENODEV, why);
	ASSERT_EQ(-1, tio_gpu_buffer_unregister(kDLROCM, b));
	ASSERT_DEV_MSG(ENODEV, why);
	ASSERT_EQ(-1, tio_gpu_buffer_device_ptr(b, HIP_DEV(0), &dp));
	ASSERT_DEV_MSG(ENODEV, why);
	EXPECT_EQ(0, dp);
	tio_buffer_decref(b);
	tio_gpu_stream_destroy(NULL);
	EXPECT_EQ(0, tio_gpu_debug_live(kDLROCM));
	EXPECT_EQ(0, tio_debug_live_handles());
}

/* Runs in every environment: a missing runtime fails every call cleanly. */
TEST(no_runtime)
{
	int fds;

	setenv("TIO_HIP_LIBRARY", "libamdhip64-tensorio-test-absent.so.5", 1);
	ASSERT_OK(tio_init());
	dev_warm_up();
	fds = dev_count_fds();
	no_hip_calls(_metadata, "no HIP runtime");
	/* The message names the library it could not load. */
	ASSERT_EQ(-1, tio_gpu_init(kDLROCM));
	ASSERT_DEV_MSG(ENODEV, "libamdhip64-tensorio-test-absent.so.5");
	EXPECT_EQ(fds, dev_count_fds());
}

/* The installed runtime, no device: the load fails at device discovery. */
TEST(no_device)
{
	tio_object_t *e;
	int fds, n = 0;

	ASSERT_OK(tio_init());
	dev_warm_up();
	fds = dev_count_fds();
	if (!tio_gpu_device_count(kDLROCM, &n))
		SKIP(return, "%d HIP device(s) here", n);
	e = tio_error_move_from_raised();
	ASSERT_NE(NULL, e);
	EXPECT_EQ(ENODEV, tio_errno());
	/* Built without the headers, or without the library: "no HIP runtime". */
	if (strncmp(tio_error_message(e), "no HIP device: hipGetDeviceCount: hip", 37)) {
		TH_LOG("%s", tio_error_message(e));
		tio_object_decref(e);
		SKIP(return, "no HIP runtime to find devices with");
	}
	TH_LOG("%s", tio_error_message(e));
	tio_object_decref(e);
	no_hip_calls(_metadata, "no HIP device: hipGetDeviceCount");
	/* The runtime was unloaded: none of its fds stay open. */
	EXPECT_EQ(fds, dev_count_fds());
}

FIXTURE(hip) {
	int fds;
	int64_t objs;
	int nohip;
	char why[320];
};

/* Use HIP once so that the runtime's fds and threads exist before counting. */
FIXTURE_SETUP(hip)
{
	tio_gpu_stream_t *hs;
	tio_object_t *e;

	dev_pick_hip();
	ASSERT_OK(tio_init());
	dev_warm_up();
	if (tio_gpu_init(kDLROCM) || tio_gpu_stream_create(HIP_DEV(0), &hs)) {
		e = tio_error_move_from_raised();
		snprintf(self->why, sizeof(self->why), "%s",
			 e ? tio_error_message(e) : "?");
		if (e)
			tio_object_decref(e);
		self->nohip = 1;
		SKIP(return, "%s", self->why);
	}
	tio_gpu_stream_sync(hs);
	tio_gpu_stream_destroy(hs);
	tio_error_clear();
	self->fds = dev_count_fds();
	self->objs = tio_debug_live_objects();
}

FIXTURE_TEARDOWN(hip)
{
	tio_error_clear();
	if (self->nohip)
		return;
	EXPECT_EQ(0, tio_gpu_debug_live(kDLROCM));
	EXPECT_EQ(0, tio_debug_live_handles());
	EXPECT_EQ(self->objs, tio_debug_live_objects());
	EXPECT_EQ(self->fds, dev_count_fds());
}

#define NEED_HIP() do {							\
	if (self->nohip)						\
		SKIP(return, "%s", self->why);				\
} while (0)

static uint64_t dptr_of(tio_object_t *t)
{
	return (uintptr_t)tio_tensor_dl(t)->data;
}

/* Queries, capabilities (HIP 5.2: no read-only registration, no dma-buf). */
TEST_F(hip, device)
{
	char name[128] = "";
	int n = 0, v = 0;

	NEED_HIP();
	ASSERT_OK(tio_gpu_device_count(kDLROCM, &n));
	EXPECT_GE(n, 1);
	ASSERT_OK(tio_gpu_driver_version(kDLROCM, &v));
	ASSERT_OK(tio_gpu_device_name(HIP_DEV(0), name, sizeof(name)));
	EXPECT_NE(0, name[0]);
	TH_LOG("device 0: %s, runtime %d, %d device(s), wait-value %d", name, v, n,
	       tio_gpu_device_supports(HIP_DEV(0), TIO_GPU_CAP_WAIT_VALUE64));
	EXPECT_EQ(0, tio_gpu_device_supports(HIP_DEV(0), TIO_GPU_CAP_READONLY_REGISTER));
	EXPECT_EQ(0, tio_gpu_device_supports(HIP_DEV(0), TIO_GPU_CAP_DMABUF));
	EXPECT_EQ(-1, tio_gpu_device_supports(HIP_DEV(0), 0));
	ASSERT_DEV_MSG(EINVAL, "unknown HIP capability");
	EXPECT_EQ(-1, tio_gpu_device_name(HIP_DEV(n), name, sizeof(name)));
	ASSERT_DEV_MSG(EINVAL, "HIP device");
	EXPECT_EQ(-1, tio_gpu_device_name(HIP_DEV(0), NULL, 10));
	ASSERT_DEV_MSG(EINVAL, "tio_gpu_device_name");
}

/* kDLROCM tensors, a round trip through registered and pageable memory. */
TEST_F(hip, tensors_and_copies)
{
	int64_t shape = 1 << 16, bad = -1, huge = INT64_C(1) << 50;
	tio_object_t *dev, *host, *t = NULL;
	DLManagedTensorVersioned *mt;
	tio_gpu_stream_t *hs;
	struct tio_desc desc;
	tio_buffer_t *buf;
	unsigned char back[64];
	uint64_t dp = 0;
	float *p;
	int i;

	NEED_HIP();
	ASSERT_OK(tio_gpu_tensor_empty(HIP_DEV(0), 1, &shape, f32, &dev));
	EXPECT_EQ(kDLROCM, tio_tensor_dl(dev)->device.device_type);
	EXPECT_EQ(0, dptr_of(dev) & 4095);
	EXPECT_EQ(1, tio_gpu_debug_live(kDLROCM));
	EXPECT_EQ(-1, tio_gpu_tensor_empty(HIP_DEV(0), 1, &bad, f32, &t));
	ASSERT_DEV_MSG(EINVAL, "negative");
	EXPECT_EQ(-1, tio_gpu_tensor_empty(HIP_DEV(0), 1, &huge, u8, &t));
	ASSERT_DEV_MSG(ENOMEM, "hipMalloc");
	EXPECT_EQ(NULL, t);

	ASSERT_OK(tio_buffer_alloc((size_t)shape * 4, NULL, &buf));
	ASSERT_OK(tio_gpu_buffer_register(kDLROCM, buf));
	EXPECT_EQ(-1, tio_gpu_buffer_register(kDLROCM, buf));
	ASSERT_DEV_MSG(EEXIST, "already registered with HIP");
	ASSERT_OK(tio_gpu_buffer_device_ptr(buf, HIP_DEV(0), &dp));
	EXPECT_NE(0, dp);
	p = tio_buffer_data(buf);
	for (i = 0; i < shape; i++)
		p[i] = (float)i;
	memset(&desc, 0, sizeof(desc));
	desc.code = kDLUInt;
	desc.bits = 8;
	desc.lanes = 1;
	desc.ndim = 1;
	desc.shape[0] = shape * 4;
	ASSERT_OK(tio_buffer_tensor(buf, &desc, &host));
	ASSERT_OK(tio_gpu_stream_create(HIP_DEV(0), &hs));
	EXPECT_NE(NULL, tio_gpu_stream_handle(hs));
	EXPECT_EQ(kDLROCM, tio_gpu_stream_device(hs).device_type);
	EXPECT_EQ(0, tio_gpu_stream_device(hs).device_id);
	EXPECT_EQ(-1, tio_gpu_tensor_copy(hs, dev, host));
	ASSERT_DEV_MSG(EINVAL, "dtypes differ");	/* the buffer's tensor is u8 */
	ASSERT_OK(tio_gpu_copy_htod(hs, dptr_of(dev), p, (size_t)shape * 4));
	ASSERT_OK(tio_gpu_copy_dtoh(hs, back, dptr_of(dev) + 4 * 10, sizeof(back)));
	ASSERT_OK(tio_gpu_stream_sync(hs));
	EXPECT_EQ(1, tio_gpu_stream_query(hs));
	EXPECT_EQ(0, memcmp(back, p + 10, sizeof(back)));
	EXPECT_EQ(-1, tio_gpu_copy_htod(hs, 0, p, 4));
	ASSERT_DEV_MSG(EINVAL, "NULL address");
	EXPECT_EQ(-1, tio_gpu_tensor_copy(hs, host, host));
	ASSERT_DEV_MSG(EINVAL, "one CPU tensor and one HIP tensor");

	/* DLPack keeps the memory past the Tensor. */
	ASSERT_OK(tio_tensor_to_dlpack_versioned(dev, &mt));
	tio_object_decref(dev);
	EXPECT_EQ(kDLROCM, mt->dl_tensor.device.device_type);
	mt->deleter(mt);
	tio_object_decref(host);
	tio_gpu_stream_destroy(hs);
	ASSERT_OK(tio_gpu_buffer_unregister(kDLROCM, buf));
	EXPECT_EQ(-1, tio_gpu_buffer_unregister(kDLROCM, buf));
	ASSERT_DEV_MSG(ENOENT, "not registered with HIP");
	/* Freeing a registered buffer ends its registration. */
	ASSERT_OK(tio_gpu_buffer_register(kDLROCM, buf));
	tio_buffer_decref(buf);
}

TEST_F(hip, fences)
{
	tio_gpu_stream_t *hs;
	uint64_t a, b;
	tio_stream_t *s;
	int status = 1;

	NEED_HIP();
	ASSERT_OK(tio_stream_create(&s));
	ASSERT_OK(tio_gpu_stream_create(HIP_DEV(0), &hs));
	ASSERT_OK(tio_fence_emit(s, &a));
	ASSERT_OK(tio_gpu_stream_signal_fence(hs, s, a));
	ASSERT_OK(tio_gpu_stream_record_fence(hs, s, &b));
	ASSERT_OK(tio_fence_wait(s, b, 5000000000LL, &status));
	EXPECT_EQ(0, status);
	EXPECT_EQ(-1, tio_gpu_stream_signal_fence(hs, s, b + 10));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	/* Fence -> stream needs a read-only registration HIP 5.2 lacks. */
	EXPECT_EQ(-1, tio_gpu_stream_wait_fence(hs, s, a));
	ASSERT_DEV_MSG(EOPNOTSUPP, "fence -> stream");
	ASSERT_OK(tio_gpu_stream_sync(hs));
	tio_gpu_stream_destroy(hs);
	tio_stream_decref(s);
}

/* A doorbell stream: the HIP stream writes the point (hipStreamWriteValue64). */
TEST_F(hip, fences_doorbell)
{
	tio_gpu_stream_t *hs;
	tio_stream_t *s;
	int status = 1;
	uint64_t p;

	NEED_HIP();
	if (tio_gpu_device_supports(HIP_DEV(0), TIO_GPU_CAP_WRITE_VALUE64) != 1)
		SKIP(return, "no hipStreamWriteValue64");
	ASSERT_OK(tio_stream_create_flags(TIO_STREAM_DOORBELL, &s));
	ASSERT_OK(tio_gpu_stream_create(HIP_DEV(0), &hs));
	ASSERT_OK(tio_gpu_stream_record_fence(hs, s, &p));
	ASSERT_OK(tio_fence_wait(s, p, 5000000000LL, &status));
	EXPECT_EQ(0, status);
	EXPECT_EQ(p, *tio_stream_doorbell(s));
	ASSERT_OK(tio_gpu_stream_sync(hs));
	tio_gpu_stream_destroy(hs);
	tio_stream_decref(s);
}

TEST_F(hip, no_dmabuf)
{
	int64_t shape = 1 << 20;
	tio_buffer_t *b = NULL;
	tio_object_t *t;
	int fd = -1;

	NEED_HIP();
	ASSERT_OK(tio_gpu_tensor_empty(HIP_DEV(0), 1, &shape, u8, &t));
	EXPECT_EQ(-1, tio_gpu_export_dmabuf(HIP_DEV(0), dptr_of(t), (size_t)shape, &fd));
	ASSERT_DEV_MSG(EOPNOTSUPP, "cannot export dma-bufs");
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(-1, tio_gpu_buffer_import(HIP_DEV(0), dptr_of(t), (size_t)shape, &b));
	ASSERT_DEV_MSG(EOPNOTSUPP, dev_is_kernel() ? "cannot export" : "kernel backend");
	EXPECT_EQ(NULL, b);
	tio_object_decref(t);
}

TEST_HARNESS_MAIN
