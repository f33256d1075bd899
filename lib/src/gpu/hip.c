// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * HIP (AMD ROCm) through the HIP runtime, loaded with dlopen(), for the
 * kDLROCM devices of tensorio/gpu.h: the entry points and the operations
 * the core drives (gpu_internal.h).
 *
 * Built against the HIP headers when the Makefile finds them
 * (TIO_HAVE_HIP, with __HIP_PLATFORM_AMD__); without them the load fails
 * and every entry point reports ENODEV. libamdhip64 is never linked.
 *
 * HIP has no context stack: a call runs with its device made current with
 * hipSetDevice() (enter) and the caller's current device restored after
 * (leave). HIP 5.2 offers neither read-only host registration (the seqno
 * word for fence -> stream) nor dma-buf export: those capabilities are 0,
 * and the core reports EOPNOTSUPP for them. What tio_hp holds is written
 * once by tio_hp_load() (under the core's once) and read-only after.
 */
#include <stdint.h>

#include "gpu/gpu_internal.h"

#ifdef TIO_HAVE_HIP

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include <hip/hip_runtime_api.h>

/* Entry points every use needs. */
#define TIO_HIP_REQUIRED(X)						\
	X(hipGetErrorName) X(hipGetErrorString) X(hipDriverGetVersion)	\
	X(hipGetDeviceCount) X(hipDeviceGet) X(hipDeviceGetAttribute)	\
	X(hipDeviceGetName) X(hipGetDevice) X(hipSetDevice)		\
	X(hipMalloc) X(hipFree) X(hipHostRegister) X(hipHostUnregister)	\
	X(hipHostGetDevicePointer) X(hipMemcpyHtoDAsync)		\
	X(hipMemcpyDtoHAsync) X(hipStreamCreateWithFlags)		\
	X(hipStreamDestroy) X(hipStreamQuery) X(hipStreamSynchronize)	\
	X(hipStreamAddCallback)
/*
 * Beta entry points: without them fence -> stream reports EOPNOTSUPP and
 * stream -> fence falls back to a host function.
 */
#define TIO_HIP_OPTIONAL(X) X(hipStreamWaitValue64) X(hipStreamWriteValue64)

#define TIO_HIP_MEMBER(f) __typeof__(f) *f;

static struct {
	void *dl;
	TIO_HIP_REQUIRED(TIO_HIP_MEMBER)
	TIO_HIP_OPTIONAL(TIO_HIP_MEMBER)
} tio_hp;

static void tio_hp_load(void)
{
	static const char *const names[] = { "libamdhip64.so.5", "libamdhip64.so", NULL };
	const char *missing = NULL;
	int n = 0, version = 0;
	hipError_t r = hipErrorNotInitialized;

	tio_hp.dl = tio_gpu_dlopen(&tio_gpu_hip, "TIO_HIP_LIBRARY", names);
	if (!tio_hp.dl)
		return;
#define TIO_HIP_SYM(f, req)						\
	tio_hp.f = (__typeof__(f) *)tio_gpu_dlsym(tio_hp.dl, TIO_GPU_STR(f), \
						   req, &missing);
#define TIO_HIP_REQ(f) TIO_HIP_SYM(f, 1)
#define TIO_HIP_OPT(f) TIO_HIP_SYM(f, 0)
	TIO_HIP_REQUIRED(TIO_HIP_REQ)
	TIO_HIP_OPTIONAL(TIO_HIP_OPT)
	/* Counting the devices initialises the runtime (hipInit is implied). */
	if (!missing) {
		r = tio_hp.hipGetDeviceCount(&n);
		if (r == hipSuccess && tio_hp.hipDriverGetVersion(&version) != hipSuccess)
			version = 0;
	}
	if (!tio_gpu_load_devices(&tio_gpu_hip, missing, r, "hipGetDeviceCount", n,
				  version))
		return;
	/* Nothing of the library may be called from now on. */
	dlclose(tio_hp.dl);
	memset(&tio_hp, 0, sizeof(tio_hp));
}

static int tio_hp_errno(int r)
{
	switch ((hipError_t)r) {
	case hipErrorOutOfMemory:
		return ENOMEM;
	case hipErrorInvalidValue:
	case hipErrorInvalidDevice:
	case hipErrorInvalidHandle:
	case hipErrorInvalidDevicePointer:
		return EINVAL;
	case hipErrorNotSupported:
		return EOPNOTSUPP;
	case hipErrorNoDevice:
	case hipErrorNotInitialized:
	case hipErrorInsufficientDriver:
		return ENODEV;
	case hipErrorHostMemoryAlreadyRegistered:
		return EEXIST;
	case hipErrorHostMemoryNotRegistered:
		return ENOENT;
	default:
		return EIO;
	}
}

static void tio_hp_err_text(int r, const char **name, const char **text)
{
	if (tio_hp.hipGetErrorName)
		*name = tio_hp.hipGetErrorName((hipError_t)r);
	if (tio_hp.hipGetErrorString)
		*text = tio_hp.hipGetErrorString((hipError_t)r);
}

static int tio_hp_open(struct tio_gpu_dev *d, int ordinal)
{
	hipDevice_t dev;
	hipError_t r;
	int v = 0;

	r = tio_hp.hipDeviceGet(&dev, ordinal);
	if (r != hipSuccess)
		return r;
	d->dev = dev;
	d->wait64 = tio_hp.hipStreamWaitValue64 &&
		    tio_hp.hipDeviceGetAttribute(&v, hipDeviceAttributeCanUseStreamWaitValue,
						  ordinal) == hipSuccess && v;
	/* Every HIP device takes stream writes; there is no attribute for them. */
	d->write64 = tio_hp.hipStreamWriteValue64 != NULL;
	d->ro_register = 0;
	d->dmabuf = 0;
	return hipSuccess;
}

static int tio_hp_enter(const struct tio_gpu_dev *d, uintptr_t *saved)
{
	hipError_t r;
	int cur = 0;

	r = tio_hp.hipGetDevice(&cur);
	if (r == hipSuccess && cur != d->ordinal)
		r = tio_hp.hipSetDevice(d->ordinal);
	*saved = (uintptr_t)cur;
	return r;
}

static void tio_hp_leave(uintptr_t saved)
{
	tio_hp.hipSetDevice((int)saved);
}

static int tio_hp_name(const struct tio_gpu_dev *d, char *name, int len)
{
	return tio_hp.hipDeviceGetName(name, len, d->dev);
}

static int tio_hp_alloc(uint64_t *ptr, size_t size)
{
	void *p = NULL;
	hipError_t r = tio_hp.hipMalloc(&p, size);

	*ptr = (uintptr_t)p;
	return r;
}

static int tio_hp_free(uint64_t ptr)
{
	return tio_hp.hipFree((void *)(uintptr_t)ptr);
}

static int tio_hp_host_register(void *p, size_t size, int readonly)
{
	/* HIP has no read-only registration; the core does not ask for one. */
	if (readonly)
		return hipErrorNotSupported;
	return tio_hp.hipHostRegister(p, size, hipHostRegisterPortable |
				       hipHostRegisterMapped);
}

static int tio_hp_host_unregister(void *p)
{
	return tio_hp.hipHostUnregister(p);
}

static int tio_hp_host_dptr(uint64_t *dptr, void *p)
{
	void *d = NULL;
	hipError_t r = tio_hp.hipHostGetDevicePointer(&d, p, 0);

	*dptr = (uintptr_t)d;
	return r;
}

static int tio_hp_stream_create(void **st)
{
	hipStream_t s = NULL;
	hipError_t r = tio_hp.hipStreamCreateWithFlags(&s, hipStreamNonBlocking);

	*st = s;
	return r;
}

static int tio_hp_stream_destroy(void *st)
{
	return tio_hp.hipStreamDestroy(st);
}

static int tio_hp_stream_query(void *st)
{
	return tio_hp.hipStreamQuery(st);
}

static int tio_hp_stream_sync(void *st)
{
	return tio_hp.hipStreamSynchronize(st);
}

static int tio_hp_htod(void *st, uint64_t dst, const void *src, size_t size)
{
	/* hipMemcpyHtoDAsync only reads @src, though its prototype says void *. */
	return tio_hp.hipMemcpyHtoDAsync((hipDeviceptr_t)(uintptr_t)dst,
					  (void *)(uintptr_t)src, size, st);
}

static int tio_hp_dtoh(void *st, void *dst, uint64_t src, size_t size)
{
	return tio_hp.hipMemcpyDtoHAsync(dst, (hipDeviceptr_t)(uintptr_t)src, size, st);
}

/* The stream's status is passed on: the point is signalled failed. */
static void tio_hp_signal_fn(hipStream_t st, hipError_t status, void *sig)
{
	(void)st;
	tio_gpu_signal_run(sig, status == hipSuccess ? 0 : -EIO);
}

/* HIP 5.2 declares hipLaunchHostFunc but does not export it. */
static int tio_hp_host_func(void *st, void *sig)
{
	return tio_hp.hipStreamAddCallback(st, tio_hp_signal_fn, sig, 0);
}

static int tio_hp_wait64(void *st, uint64_t dptr, uint64_t value)
{
	return tio_hp.hipStreamWaitValue64(st, (void *)(uintptr_t)dptr, value,
					    hipStreamWaitValueGte, UINT64_MAX);
}

static int tio_hp_write64(void *st, uint64_t dptr, uint64_t value)
{
	return tio_hp.hipStreamWriteValue64(st, (void *)(uintptr_t)dptr, value, 0);
}

static const struct tio_gpu_ops tio_hp_ops = {
	.open = tio_hp_open,
	.enter = tio_hp_enter,
	.leave = tio_hp_leave,
	.name = tio_hp_name,
	.alloc = tio_hp_alloc,
	.free = tio_hp_free,
	.host_register = tio_hp_host_register,
	.host_unregister = tio_hp_host_unregister,
	.host_dptr = tio_hp_host_dptr,
	.stream_create = tio_hp_stream_create,
	.stream_destroy = tio_hp_stream_destroy,
	.stream_query = tio_hp_stream_query,
	.stream_sync = tio_hp_stream_sync,
	.htod = tio_hp_htod,
	.dtoh = tio_hp_dtoh,
	.host_func = tio_hp_host_func,
	.wait64 = tio_hp_wait64,
	.write64 = tio_hp_write64,
	.export_dmabuf = NULL,		/* no dmabuf capability */
	.to_errno = tio_hp_errno,
	.err_text = tio_hp_err_text,
};

#define TIO_HIP_OPS (&tio_hp_ops)
#define TIO_HIP_NOT_READY hipErrorNotReady

#else /* !TIO_HAVE_HIP */

#define TIO_HIP_OPS NULL
#define TIO_HIP_NOT_READY (-1)

static void tio_hp_load(void)
{
	tio_gpu_load_fail(&tio_gpu_hip,
			  "no HIP runtime: libtensorio was built without the HIP headers");
}

#endif /* TIO_HAVE_HIP */

struct tio_gpu tio_gpu_hip = {
	.name = "HIP",
	.nolib = "no HIP runtime",
	.nodev = "no HIP device",
	.no_dmabuf = "HIP 5.2 has no dma-buf export",
	.dl_type = kDLROCM,
	.not_ready = TIO_HIP_NOT_READY,
	.calls = {
		[TIO_GPU_OPEN] = "hipDeviceGet",
		[TIO_GPU_ENTER] = "making the HIP device current (hipSetDevice)",
		[TIO_GPU_NAME] = "hipDeviceGetName",
		[TIO_GPU_ALLOC] = "hipMalloc",
		[TIO_GPU_HOST_REGISTER] = "hipHostRegister",
		[TIO_GPU_HOST_DPTR] = "hipHostGetDevicePointer",
		[TIO_GPU_STREAM_CREATE] = "hipStreamCreateWithFlags",
		[TIO_GPU_STREAM_QUERY] = "hipStreamQuery",
		[TIO_GPU_STREAM_SYNC] = "hipStreamSynchronize",
		[TIO_GPU_HTOD] = "hipMemcpyHtoDAsync",
		[TIO_GPU_DTOH] = "hipMemcpyDtoHAsync",
		[TIO_GPU_HOST_FUNC] = "hipStreamAddCallback",
		[TIO_GPU_WAIT64] = "hipStreamWaitValue64",
		[TIO_GPU_WRITE64] = "hipStreamWriteValue64",
		[TIO_GPU_DMABUF] = "(no dma-buf export)",
	},
	.ops = TIO_HIP_OPS,
	.load = tio_hp_load,
	TIO_GPU_INIT,
};
