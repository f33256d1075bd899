// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * safetensors onto a GPU through the ring of bounce buffers, on a fake HIP
 * runtime (fixture_fake_hip.c: device memory is host memory, copies run
 * only when their stream is synchronised, so a bounce buffer reused too
 * early shows as wrong data). Tensors of odd sizes cross the ring's
 * pieces; the ring wraps several times; a cancelled load frees every
 * device tensor; without CUDA the CUDA path says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <tensorio/gpu.h>
#include <tensorio/pinned.h>
#include <tensorio/safetensors.h>
#include <tensorio/tensor.h>

#include "kselftest_harness.h"
#include "dev_test.h"

#define NT 6

FIXTURE(gl) { int fds; int64_t objs; char path[64]; int64_t len[NT]; };
FIXTURE_SETUP(gl)
{
	const DLTensor *tv[NT];
	const char *nv[NT];
	static char names[NT][16];
	DLTensor t[NT];
	int i, fd;

	ASSERT_OK(tio_init());
	dev_warm_up();
	self->fds = dev_count_fds();
	self->objs = tio_debug_live_objects();
	strcpy(self->path, "/tmp/tio-gl-XXXXXX");
	fd = mkstemp(self->path);
	ASSERT_LE(0, fd);
	close(fd);
	memset(t, 0, sizeof(t));
	for (i = 0; i < NT; i++) {
		int64_t k;

		self->len[i] = (3 << 20) + 12345 * (i + 1) + (i == 2 ? (9 << 20) : 0);
		t[i].data = malloc((size_t)self->len[i]);
		ASSERT_NE(NULL, t[i].data);
		for (k = 0; k < self->len[i]; k++)
			((unsigned char *)t[i].data)[k] = (unsigned char)(k * 7 + i);
		t[i].ndim = 1;
		t[i].shape = &self->len[i];
		t[i].dtype.code = kDLUInt;
		t[i].dtype.bits = 8;
		t[i].dtype.lanes = 1;
		tv[i] = &t[i];
		snprintf(names[i], sizeof(names[i]), "t%d", i);
		nv[i] = names[i];
	}
	ASSERT_OK(tio_safetensors_save(self->path, nv, tv, NT));
	for (i = 0; i < NT; i++)
		free(t[i].data);
	setenv("TIO_HIP_LIBRARY", FIXTURE_DIR "/fake_hip.so", 1);
	setenv("TIO_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
}
FIXTURE_TEARDOWN(gl)
{
	unlink(self->path);
	tio_pinned_trim();
	tio_error_clear();
	EXPECT_EQ(0, tio_gpu_debug_live(kDLROCM));
	EXPECT_EQ(0, tio_debug_live_handles());
	EXPECT_EQ(self->objs, tio_debug_live_objects());
}

struct prog { int calls, at, backwards; uint64_t last, total; };

/* Called in the caller's thread, once per piece: done only grows. */
static int on_progress(void *arg, uint64_t done, uint64_t total)
{
	struct prog *p = arg;

	p->backwards += done <= p->last;
	p->calls++;
	p->last = done;
	p->total = total;
	return p->at && p->calls >= p->at;
}

TEST_F(gl, through_the_bounce_ring)
{
	DLDevice dev = { kDLROCM, 0 };
	struct prog p = { 0, 0, 0, 0, 0 };
	struct tio_io_opts o;
	tio_safetensors_t *st;
	tio_object_t *t;
	int i, bad = 0;
	int64_t k;

	if (tio_gpu_init(kDLROCM))
		SKIP(return, "fake HIP runtime not loaded: %s",
		     tio_error_message(tio_error_peek_raised()));
	memset(&o, 0, sizeof(o));
	o.progress = on_progress;
	o.progress_arg = &p;
	ASSERT_OK(tio_safetensors_load_device(self->path, dev, &o, &st));
	EXPECT_EQ(NULL, tio_safetensors_buffer(st));
	EXPECT_EQ(p.total, p.last);
	EXPECT_LT(4, p.calls);
	EXPECT_EQ(0, p.backwards);
	for (i = 0; i < NT; i++) {
		char name[16];
		DLTensor *dl;

		snprintf(name, sizeof(name), "t%d", i);
		ASSERT_OK(tio_safetensors_tensor(st, name, &t));
		dl = tio_tensor_dl(t);
		EXPECT_EQ(kDLROCM, dl->device.device_type);
		EXPECT_EQ(self->len[i], dl->shape[0]);
		for (k = 0; k < self->len[i]; k++)
			bad += ((unsigned char *)dl->data)[k] != (unsigned char)(k * 7 + i);
		tio_object_decref(t);
	}
	EXPECT_EQ(0, bad);
	tio_safetensors_free(st);
}

TEST_F(gl, cancelled_half_way_frees_everything)
{
	DLDevice dev = { kDLROCM, 0 };
	struct prog p = { 0, 3, 0, 0, 0 };
	struct tio_io_opts o;
	tio_safetensors_t *st;

	if (tio_gpu_init(kDLROCM))
		SKIP(return, "fake HIP runtime not loaded");
	memset(&o, 0, sizeof(o));
	o.chunk_size = 1 << 20;
	o.progress = on_progress;
	o.progress_arg = &p;
	ASSERT_EQ(-1, tio_safetensors_load_device(self->path, dev, &o, &st));
	ASSERT_DEV_ERR(ECANCELED, "CancelledError");
	EXPECT_GT(p.total, p.last);
	EXPECT_EQ(3, p.calls);
	EXPECT_EQ(0, tio_gpu_debug_live(kDLROCM));
}

/* A copy failing in one slot's thread reaches the caller; the rest stop. */
TEST_F(gl, copy_failing_in_a_slot_thread)
{
	DLDevice dev = { kDLROCM, 0 };
	tio_safetensors_t *st;
	int n;

	if (tio_gpu_init(kDLROCM))
		SKIP(return, "fake HIP runtime not loaded");
	for (n = 1; n <= 9; n += 4) {
		char v[16];

		snprintf(v, sizeof(v), "%d", n);
		setenv("FAKE_HIP_FAIL_HTOD", v, 1);
		ASSERT_EQ(-1, tio_safetensors_load_device(self->path, dev, NULL, &st));
		unsetenv("FAKE_HIP_FAIL_HTOD");
		ASSERT_DEV_MSG(EINVAL, "hipErrorFake");
		EXPECT_EQ(0, tio_gpu_debug_live(kDLROCM));
		/* Unset, the copies reset the fake's count; the load is whole. */
		ASSERT_OK(tio_safetensors_load_device(self->path, dev, NULL, &st));
		tio_safetensors_free(st);
	}
}

TEST_F(gl, no_cuda_and_bad_devices)
{
	DLDevice cuda = { kDLCUDA, 0 }, cpu = { kDLCPU, 0 };
	tio_safetensors_t *st;

	ASSERT_EQ(-1, tio_safetensors_load_device(self->path, cuda, NULL, &st));
	ASSERT_DEV_MSG(ENODEV, "no CUDA driver");
	ASSERT_EQ(-1, tio_safetensors_load_device(self->path, cpu, NULL, &st));
	ASSERT_DEV_MSG(EINVAL, "neither CUDA");
}

TEST_HARNESS_MAIN
