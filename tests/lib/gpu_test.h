/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CUDA tests' fixture (test_gpu_*.c): the driver dev_pick_cuda()
 * picks, used once before counting fds and objects, and at the end
 * nothing left: no GPU object, handle, FFI object or fd, and on the fake
 * driver (fixture_fake_cuda.c) no allocation, registration or stream of
 * its own either. A machine where CUDA cannot be used skips with the
 * reason.
 */
#ifndef TIO_GPU_TEST_H
#define TIO_GPU_TEST_H

#include <stdint.h>

#include <tensorio/gpu.h>
#include <tensorio/tensor.h>

#include "dev_test.h"

static const DLDataType u8 = { kDLUInt, 8, 1 };
static const DLDataType f32 = { kDLFloat, 32, 1 };

/* Use CUDA once so that the driver's fds and threads exist before counting. */
static int cuda_warm_up(char *why, size_t len)
{
	tio_gpu_stream_t *cs;
	tio_object_t *t, *e;
	int64_t shape = 4096;
	tio_buffer_t *b;

	if (tio_gpu_init(kDLCUDA) || tio_gpu_stream_create(CUDA_DEV(0), &cs)) {
		e = tio_error_move_from_raised();
		snprintf(why, len, "%s", e ? tio_error_message(e) : "?");
		if (e)
			tio_object_decref(e);
		return -1;
	}
	if (!tio_gpu_tensor_empty(CUDA_DEV(0), 1, &shape, u8, &t)) {
		if (!tio_buffer_alloc(4096, NULL, &b)) {
			if (!tio_gpu_buffer_register(kDLCUDA, b))
				tio_gpu_copy_htod(cs, (uintptr_t)tio_tensor_dl(t)->data,
						   tio_buffer_data(b), 4096);
			tio_gpu_stream_sync(cs);
			tio_buffer_decref(b);
		}
		tio_object_decref(t);
	}
	tio_gpu_stream_destroy(cs);
	tio_error_clear();
	return 0;
}

/*
 * The fake driver's count of what it holds, when the driver is the fake
 * (fixture_fake_cuda.c's fakeCudaLive()); 0 on a real driver.
 */
static inline int cuda_fake_live(long *allocs, long *regs, long *streams)
{
	const char *lib = getenv("TIO_CUDA_LIBRARY");
	void (*live)(long *, long *, long *);
	void *dl;

	if (!lib || !strstr(lib, "fake_cuda"))
		return 0;
	dl = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
	live = dl ? (void (*)(long *, long *, long *))dlsym(dl, "fakeCudaLive") : NULL;
	if (live)
		live(allocs, regs, streams);
	if (dl)
		dlclose(dl);
	return live != NULL;
}

/* Whether the tests run on the fake driver: its failure injection works. */
static inline int cuda_is_fake(void)
{
	long a, r, s;

	return cuda_fake_live(&a, &r, &s);
}

FIXTURE(cuda) {
	int fds;
	int64_t objs;
	int nocuda;
	char why[320];
};

FIXTURE_SETUP(cuda)
{
	dev_pick_cuda();
	ASSERT_OK(tio_init());
	dev_warm_up();
	if (cuda_warm_up(self->why, sizeof(self->why))) {
		self->nocuda = 1;
		SKIP(return, "%s", self->why);
	}
	self->fds = dev_count_fds();
	self->objs = tio_debug_live_objects();
}

FIXTURE_TEARDOWN(cuda)
{
	long allocs = 0, regs = 0, streams = 0;

	tio_error_clear();
	if (self->nocuda)
		return;
	EXPECT_EQ(0, tio_gpu_debug_live(kDLCUDA));
	EXPECT_EQ(0, tio_debug_live_handles());
	EXPECT_EQ(self->objs, tio_debug_live_objects());
	EXPECT_EQ(self->fds, dev_count_fds());
	if (cuda_fake_live(&allocs, &regs, &streams)) {
		EXPECT_EQ(0, allocs);
		EXPECT_EQ(0, regs);
		EXPECT_EQ(0, streams);
	}
}

#define NEED_CUDA() do {						\
	if (self->nocuda)						\
		SKIP(return, "%s", self->why);				\
} while (0)

static inline uint64_t dptr_of(tio_object_t *t)
{
	return (uintptr_t)tio_tensor_dl(t)->data;
}

#endif /* TIO_GPU_TEST_H */
