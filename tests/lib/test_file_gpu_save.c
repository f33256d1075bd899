// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Saving GPU tensors, on the fake HIP runtime and the fake CUDA driver
 * (fixture_fake_hip.c, fixture_fake_cuda.c: device memory is host memory,
 * and a copy runs only when its stream needs it done, so a staging slot
 * written to disk before its copies are done shows as wrong bytes).
 * Through the ring of bounce buffers (wrapping many times, host and device
 * tensors in one file); asynchronously, captured on the caller's stream
 * before the call returns; without a copy; a failing device-to-host copy
 * fails the save and leaves the old file; every GPU object freed.
 */
#include <unistd.h>

#include <tensorio/gpu.h>

#include "kselftest_harness.h"
#include "save_test.h"

#define NT 5

FIXTURE(gs)
{
	int fds;
	int64_t objs;
	char dir[64], path[128];
	tio_object_t *dev[NT];
	DLTensor host[NT];
	int64_t len[NT];
};

FIXTURE_VARIANT(gs) {
	DLDeviceType type;
	const char *var, *lib;	/* the runtime: the fake one */
	const char *fail;	/* its variable that fails the Nth device-to-host copy */
	const char *err;	/* the name of that error */
};

FIXTURE_VARIANT_ADD(gs, rocm) {
	kDLROCM, "TIO_HIP_LIBRARY", "fake_hip.so", "FAKE_HIP_FAIL_DTOH", "hipErrorFake"
};

FIXTURE_VARIANT_ADD(gs, cuda) {
	kDLCUDA, "TIO_CUDA_LIBRARY", "fake_cuda.so", "FAKE_CUDA_FAIL_DTOH",
	"CUDA_ERROR_INVALID_VALUE"
};

FIXTURE_SETUP(gs)
{
	char lib[PATH_MAX];
	int i;

	dev_fixture_path(variant->lib, lib, sizeof(lib));
	setenv(variant->var, lib, 1);
	ASSERT_OK(tio_init());
	dev_warm_up();
	self->fds = dev_count_fds();
	self->objs = tio_debug_live_objects();
	strcpy(self->dir, "/var/tmp/tio-gs-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->path, sizeof(self->path), "%s/model.safetensors", self->dir);
	if (tio_gpu_init(variant->type))
		SKIP(return, "fake runtime not loaded: %s",
		     tio_error_message(tio_error_peek_raised()));
	for (i = 0; i < NT; i++) {
		DLDataType u8 = { kDLUInt, 8, 1 };

		sv_u8(&self->host[i], &self->len[i], (1 << 20) + 4097 * (i + 1), i);
		ASSERT_OK(tio_gpu_tensor_empty((DLDevice){ variant->type, 0 }, 1,
						&self->len[i], u8, &self->dev[i]));
		memcpy(tio_tensor_dl(self->dev[i])->data, self->host[i].data,
		       (size_t)self->len[i]);
	}
}

FIXTURE_TEARDOWN(gs)
{
	char cmd[128];
	int i;

	for (i = 0; i < NT; i++) {
		if (self->dev[i])
			tio_object_decref(self->dev[i]);
		free(self->host[i].data);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", self->dir);
	EXPECT_EQ(0, system(cmd));
	tio_pinned_trim();
	tio_error_clear();
	EXPECT_EQ(0, tio_gpu_debug_live(variant->type));
	EXPECT_EQ(0, tio_debug_live_handles());
	EXPECT_EQ(self->objs, tio_debug_live_objects());
}

static const char *const names[NT] = { "g0", "g1", "h2", "g3", "g4" };

/* Device tensors but h2, which stays in host memory. */
static void tensors(FIXTURE_DATA(gs) *self, const DLTensor **tv)
{
	int i;

	for (i = 0; i < NT; i++)
		tv[i] = i == 2 ? &self->host[i] : tio_tensor_dl(self->dev[i]);
}

static int all_there(FIXTURE_DATA(gs) *self)
{
	tio_safetensors_t *st;
	int i, ok = 1;

	if (tio_safetensors_load(self->path, &st))
		return 0;
	for (i = 0; i < NT; i++)
		ok &= sv_same(st, names[i], self->host[i].data, (size_t)self->len[i]);
	tio_safetensors_free(st);
	return ok;
}

TEST_F(gs, through_the_bounce_ring)
{
	const DLTensor *tv[NT];
	struct tio_save_opts o;

	tensors(self, tv);
	memset(&o, 0, sizeof(o));
	o.chunk_size = 64 << 10;	/* many slots, reused many times */
	o.queue_depth = 4;
	ASSERT_OK(tio_safetensors_save_opts(self->path, names, tv, NT, &o));
	EXPECT_TRUE(all_there(self));
	o.max_shard_size = 2 << 20;	/* shards, written in parallel */
	ASSERT_OK(tio_safetensors_save_opts(self->path, names, tv, NT, &o));
	EXPECT_LT(1, o.shards);
}

/*
 * Captured once it returns: on the caller's stream, its later work (here a
 * copy over every device tensor, in stream order) does not reach the
 * file; on the save's own stream, waited for, nor does the CPU's.
 */
TEST_F(gs, async_capture_on_the_caller_s_stream)
{
	DLDevice dev = { variant->type, 0 };
	const DLTensor *tv[NT];
	tio_gpu_stream_t *mine, *wrapped;
	struct tio_save_opts o;
	unsigned char *junk;
	tio_save_t *h;
	int i, pass;

	tensors(self, tv);
	junk = malloc((size_t)self->len[NT - 1]);
	ASSERT_NE(NULL, junk);
	memset(junk, 0xee, (size_t)self->len[NT - 1]);
	ASSERT_OK(tio_gpu_stream_create(dev, &mine));
	ASSERT_OK(tio_gpu_stream_wrap(dev, tio_gpu_stream_handle(mine), &wrapped));
	for (pass = 0; pass < 3; pass++) {
		memset(&o, 0, sizeof(o));
		o.gpu_stream = pass == 1 ? NULL : wrapped;
		o.flags = pass == 2 ? TIO_SAVE_NO_COPY : 0;
		ASSERT_OK(tio_safetensors_save_async(self->path, names, tv, NT, &o, &h));
		for (i = 0; pass < 2 && i < NT; i++) {
			void *d = tio_tensor_dl(self->dev[i])->data;

			if (i == 2)
				continue;
			if (pass == 1) {
				memset(d, 0xee, (size_t)self->len[i]);
				continue;
			}
			ASSERT_OK(tio_gpu_copy_htod(mine, (uintptr_t)d, junk,
						    (size_t)self->len[i]));
		}
		ASSERT_OK(tio_save_wait(h, -1));
		tio_save_free(h);
		ASSERT_OK(tio_gpu_stream_sync(mine));
		EXPECT_TRUE(all_there(self)) TH_LOG("pass %d", pass);
		for (i = 0; i < NT; i++)
			memcpy(tio_tensor_dl(self->dev[i])->data, self->host[i].data,
			       (size_t)self->len[i]);
	}
	tio_gpu_stream_destroy(wrapped);	/* leaves the stream alone */
	ASSERT_OK(tio_gpu_stream_sync(mine));
	tio_gpu_stream_destroy(mine);
	free(junk);
}

TEST_F(gs, failing_copy_keeps_the_old_file)
{
	const DLTensor *tv[NT];
	struct tio_save_opts o;
	struct stat a, b;
	tio_save_t *h;
	int strays;

	tensors(self, tv);
	ASSERT_OK(tio_safetensors_save(self->path, names, tv, 1));
	ASSERT_EQ(0, stat(self->path, &a));
	memset(&o, 0, sizeof(o));
	o.chunk_size = 64 << 10;
	setenv(variant->fail, "7", 1);
	ASSERT_EQ(-1, tio_safetensors_save_opts(self->path, names, tv, NT, &o));
	ASSERT_DEV_MSG(EINVAL, variant->err);
	unsetenv(variant->fail);
	ASSERT_OK(tio_safetensors_save(self->path, names, tv, 1));	/* resets the count */
	ASSERT_EQ(0, stat(self->path, &a));
	setenv(variant->fail, "3", 1);
	ASSERT_EQ(-1, tio_safetensors_save_async(self->path, names, tv, NT, &o, &h));
	ASSERT_DEV_MSG(EINVAL, variant->err);
	unsetenv(variant->fail);
	ASSERT_EQ(0, stat(self->path, &b));
	EXPECT_EQ(a.st_ino, b.st_ino);
	EXPECT_EQ(1, sv_count(self->dir, &strays));
}

TEST_HARNESS_MAIN
