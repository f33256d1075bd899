/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers for the device tests (buffers, streams, batches, file I/O):
 * they run on whichever backend the context picks (TIO_BACKEND forces
 * one), and every test ends with no fd, buffer, stream or FFI object
 * leaked and no error left raised.
 */
#ifndef TIO_DEV_TEST_H
#define TIO_DEV_TEST_H

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tensorio/batch.h>
#include <tensorio/buffer.h>
#include <tensorio/context.h>
#include <tensorio/dlpack.h>
#include <tensorio/error.h>
#include <tensorio/ffi.h>
#include <tensorio/stream.h>

/* GPU devices for tensorio/gpu.h. */
#define CUDA_DEV(n) ((DLDevice){ kDLCUDA, (n) })
#define HIP_DEV(n) ((DLDevice){ kDLROCM, (n) })

static inline int dev_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;	/* the DIR's own fd */
}

/* The raised error's errno and kind; the error is then cleared. */
#define ASSERT_DEV_ERR(err, kind) do {					\
	tio_object_t *e_ = tio_error_move_from_raised();		\
	ASSERT_NE(NULL, e_);						\
	EXPECT_EQ(err, tio_errno()) TH_LOG("%s: %s", tio_error_kind(e_), \
					   tio_error_message(e_));	\
	EXPECT_STREQ(kind, tio_error_kind(e_));				\
	tio_object_decref(e_);						\
} while (0)

/* Errors whose text must say something. */
#define ASSERT_DEV_MSG(err, part) do {					\
	tio_object_t *e_ = tio_error_move_from_raised();		\
	ASSERT_NE(NULL, e_);						\
	EXPECT_EQ(err, tio_errno());					\
	EXPECT_NE(NULL, strstr(tio_error_message(e_), part))		\
		TH_LOG("message: %s", tio_error_message(e_));		\
	tio_object_decref(e_);						\
} while (0)

#define ASSERT_OK(x) ASSERT_EQ(0, (x)) TH_LOG("%s", tio_error_peek_raised() ? \
		tio_error_message(tio_error_peek_raised()) : "?")

/*
 * Raising an error the first time opens the symboliser's files (kept for
 * the process): do it before counting fds.
 */
static inline void dev_warm_up(void)
{
	tio_buffer_t *b;

	tio_error_raise("ValueError", "warm up");
	tio_error_clear();
	if (tio_buffer_alloc(0, NULL, &b) == 0)
		tio_buffer_decref(b);
	tio_error_clear();
}

/*
 * A fixture that counts fds and live objects after the context exists and
 * checks them at the end. The context (its fd, its registered globals) is
 * created first so that it is not counted as a leak.
 */
#define DEV_FIXTURE(name)						\
	FIXTURE(name) { int fds; int64_t objs; };			\
	FIXTURE_SETUP(name)						\
	{								\
		ASSERT_OK(tio_init());					\
		dev_warm_up();						\
		self->fds = dev_count_fds();				\
		self->objs = tio_debug_live_objects();			\
	}								\
	FIXTURE_TEARDOWN(name)						\
	{								\
		tio_error_clear();					\
		EXPECT_EQ(0, tio_debug_live_handles());			\
		EXPECT_EQ(self->objs, tio_debug_live_objects());	\
		EXPECT_EQ(self->fds, dev_count_fds());			\
	}

/*
 * A test fixture library: FIXTURE_DIR's, else the one beside the program
 * (the VM's /tio/bin holds the programs and the fixtures they need).
 */
static inline void dev_fixture_path(const char *name, char *buf, size_t len)
{
	char exe[256];
	ssize_t n;

	snprintf(buf, len, "%s/%s", FIXTURE_DIR, name);
	if (!access(buf, R_OK))
		return;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	if (strrchr(exe, '/'))
		*strrchr(exe, '/') = 0;
	snprintf(buf, len, "%.255s/%.64s", exe, name);
}

/*
 * The CUDA driver the GPU tests run on: TIO_CUDA_LIBRARY when set, else
 * libcuda.so.1 when it loads (a GPU machine), else the tests' fake driver
 * (fixture_fake_cuda.c), so that the CUDA paths run everywhere. Call
 * before the process's first CUDA call (the driver is loaded once).
 */
static inline void dev_pick_cuda(void)
{
	char path[PATH_MAX];
	void *dl;

	if (getenv("TIO_CUDA_LIBRARY"))
		return;
	dl = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (dl) {
		dlclose(dl);
		return;
	}
	dev_fixture_path("fake_cuda.so", path, sizeof(path));
	setenv("TIO_CUDA_LIBRARY", path, 1);
}

/*
 * The HIP runtime the HIP device tests run on: TIO_HIP_LIBRARY when set,
 * else the installed one when it finds a device (an AMD machine), else
 * the tests' fake runtime (fixture_fake_hip.c). The installed runtime is
 * probed never to be unloaded (RTLD_NODELETE): the library loads it
 * again.
 */
static inline void dev_pick_hip(void)
{
	static const char *const names[] = { "libamdhip64.so.5", "libamdhip64.so" };
	char path[PATH_MAX];
	int (*count)(int *);
	void *dl = NULL;
	size_t i;
	int n = 0;

	if (getenv("TIO_HIP_LIBRARY"))
		return;
	for (i = 0; !dl && i < sizeof(names) / sizeof(names[0]); i++)
		dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (dl) {
		count = (int (*)(int *))dlsym(dl, "hipGetDeviceCount");
		if (!count || count(&n))
			n = 0;
		dlclose(dl);
	}
	if (n > 0)
		return;
	dev_fixture_path("fake_hip.so", path, sizeof(path));
	setenv("TIO_HIP_LIBRARY", path, 1);
}

static inline int dev_is_kernel(void)
{
	return tio_backend() == TIO_BACKEND_KERNEL;
}

#endif /* TIO_DEV_TEST_H */
