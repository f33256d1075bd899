// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * CUDA through the driver API, loaded with dlopen() (tensorio/gpu.h): the
 * entry points and the operations the core drives (gpu_internal.h).
 *
 * Built against the CUDA headers when the Makefile finds them
 * (TIO_HAVE_CUDA); without them the load fails and every entry point
 * reports ENODEV. libcuda is never linked: the entry points are resolved
 * with dlsym() under the names the header maps them to (cuMemAlloc ->
 * cuMemAlloc_v2, ...), so the calls below use exactly the ABI the header
 * describes.
 *
 * Every call that uses a device runs with that device's primary context
 * pushed (enter) and popped (leave), so the caller's own current context is
 * left as it was. The primary contexts are retained for the life of the
 * process. What tio_cu holds is written once by tio_cu_load() (under the
 * core's once) and read-only after.
 */
#include <stdint.h>

#include "gpu/gpu_internal.h"

#ifdef TIO_HAVE_CUDA

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include <cuda.h>

/* Entry points every use needs. */
#define TIO_CU_REQUIRED(X)						\
	X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName)		\
	X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet)		\
	X(cuDeviceGetAttribute) X(cuDeviceGetName)			\
	X(cuDevicePrimaryCtxRetain) X(cuCtxPushCurrent)		\
	X(cuCtxPopCurrent) X(cuMemAlloc) X(cuMemFree)			\
	X(cuMemHostRegister) X(cuMemHostUnregister)			\
	X(cuMemHostGetDevicePointer) X(cuMemcpyHtoDAsync)		\
	X(cuMemcpyDtoHAsync) X(cuStreamCreate) X(cuStreamDestroy)	\
	X(cuStreamQuery) X(cuStreamSynchronize) X(cuLaunchHostFunc)
/*
 * Entry points of newer drivers (11.7): their features report EOPNOTSUPP
 * (fence -> stream, dma-buf) or fall back (stream -> fence: a host
 * function instead of a doorbell write).
 */
#define TIO_CU_OPTIONAL(X)						\
	X(cuStreamWaitValue64) X(cuStreamWriteValue64)			\
	X(cuMemGetHandleForAddressRange)

/*
 * The member for entry point f is named as the header's macro expands f
 * (cuMemAlloc_v2), and so is every use of it: tio_cu.cuMemAlloc(...).
 */
#define TIO_CU_MEMBER(f) __typeof__(f) *f;

static struct {
	void *dl;
	TIO_CU_REQUIRED(TIO_CU_MEMBER)
	TIO_CU_OPTIONAL(TIO_CU_MEMBER)
} tio_cu;

static void tio_cu_load(void)
{
	static const char *const names[] = { "libcuda.so.1", NULL };
	const char *missing = NULL;
	int n = 0, version = 0;
	CUresult r;

	tio_cu.dl = tio_gpu_dlopen(&tio_gpu_cuda, "TIO_CUDA_LIBRARY", names);
	if (!tio_cu.dl)
		return;
#define TIO_CU_SYM(f, req)						\
	tio_cu.f = (__typeof__(f) *)tio_gpu_dlsym(tio_cu.dl, TIO_GPU_STR(f), \
						  req, &missing);
#define TIO_CU_REQ(f) TIO_CU_SYM(f, 1)
#define TIO_CU_OPT(f) TIO_CU_SYM(f, 0)
	TIO_CU_REQUIRED(TIO_CU_REQ)
	TIO_CU_OPTIONAL(TIO_CU_OPT)
	r = CUDA_ERROR_NOT_INITIALIZED;
	if (!missing) {
		r = tio_cu.cuInit(0);
		if (r == CUDA_SUCCESS)
			r = tio_cu.cuDeviceGetCount(&n);
		if (r == CUDA_SUCCESS &&
		    tio_cu.cuDriverGetVersion(&version) != CUDA_SUCCESS)
			version = 0;
	}
	if (!tio_gpu_load_devices(&tio_gpu_cuda, missing, r, "cuInit", n, version))
		return;
	/* Nothing of the library may be called from now on. */
	dlclose(tio_cu.dl);
	memset(&tio_cu, 0, sizeof(tio_cu));
}

static int tio_cu_errno(int r)
{
	switch ((CUresult)r) {
	case CUDA_ERROR_OUT_OF_MEMORY:
		return ENOMEM;
	case CUDA_ERROR_INVALID_VALUE:
	case CUDA_ERROR_INVALID_DEVICE:
	case CUDA_ERROR_INVALID_HANDLE:
		return EINVAL;
	case CUDA_ERROR_NOT_SUPPORTED:
		return EOPNOTSUPP;
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_NOT_INITIALIZED:
		return ENODEV;
	case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
		return EEXIST;
	case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
		return ENOENT;
	default:
		return EIO;
	}
}

static void tio_cu_err_text(int r, const char **name, const char **text)
{
	if (tio_cu.cuGetErrorName)
		tio_cu.cuGetErrorName((CUresult)r, name);
	if (tio_cu.cuGetErrorString)
		tio_cu.cuGetErrorString((CUresult)r, text);
}

static int tio_cu_attr(CUdevice dev, CUdevice_attribute a)
{
	int v = 0;

	if (tio_cu.cuDeviceGetAttribute(&v, a, dev) != CUDA_SUCCESS)
		return 0;
	return v;
}

static int tio_cu_open(struct tio_gpu_dev *d, int ordinal)
{
	CUcontext ctx;
	CUdevice dev;
	CUresult r;

	r = tio_cu.cuDeviceGet(&dev, ordinal);
	if (r == CUDA_SUCCESS)
		r = tio_cu.cuDevicePrimaryCtxRetain(&ctx, dev);
	if (r != CUDA_SUCCESS)
		return r;
	d->dev = dev;
	d->ctx = ctx;
	d->wait64 = tio_cu.cuStreamWaitValue64 &&
		    tio_cu_attr(dev, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS);
	d->write64 = tio_cu.cuStreamWriteValue64 &&
		     tio_cu_attr(dev, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS);
	d->ro_register = tio_cu_attr(dev,
				     CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED);
	d->dmabuf = tio_cu.cuMemGetHandleForAddressRange &&
		    tio_cu_attr(dev, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED);
	return CUDA_SUCCESS;
}

static int tio_cu_enter(const struct tio_gpu_dev *d, uintptr_t *saved)
{
	*saved = 0;
	return tio_cu.cuCtxPushCurrent(d->ctx);
}

static void tio_cu_leave(uintptr_t saved)
{
	CUcontext c;

	(void)saved;
	tio_cu.cuCtxPopCurrent(&c);
}

static int tio_cu_name(const struct tio_gpu_dev *d, char *name, int len)
{
	return tio_cu.cuDeviceGetName(name, len, d->dev);
}

static int tio_cu_alloc(uint64_t *ptr, size_t size)
{
	CUdeviceptr p = 0;
	CUresult r = tio_cu.cuMemAlloc(&p, size);

	*ptr = p;
	return r;
}

static int tio_cu_free(uint64_t ptr)
{
	return tio_cu.cuMemFree((CUdeviceptr)ptr);
}

static int tio_cu_host_register(void *p, size_t size, int readonly)
{
	return tio_cu.cuMemHostRegister(p, size, CU_MEMHOSTREGISTER_PORTABLE |
					CU_MEMHOSTREGISTER_DEVICEMAP |
					(readonly ? CU_MEMHOSTREGISTER_READ_ONLY : 0));
}

static int tio_cu_host_unregister(void *p)
{
	return tio_cu.cuMemHostUnregister(p);
}

static int tio_cu_host_dptr(uint64_t *dptr, void *p)
{
	CUdeviceptr d = 0;
	CUresult r = tio_cu.cuMemHostGetDevicePointer(&d, p, 0);

	*dptr = d;
	return r;
}

static int tio_cu_stream_create(void **st)
{
	CUstream s = NULL;
	CUresult r = tio_cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);

	*st = s;
	return r;
}

static int tio_cu_stream_destroy(void *st)
{
	return tio_cu.cuStreamDestroy(st);
}

static int tio_cu_stream_query(void *st)
{
	return tio_cu.cuStreamQuery(st);
}

static int tio_cu_stream_sync(void *st)
{
	return tio_cu.cuStreamSynchronize(st);
}

static int tio_cu_htod(void *st, uint64_t dst, const void *src, size_t size)
{
	return tio_cu.cuMemcpyHtoDAsync((CUdeviceptr)dst, src, size, st);
}

static int tio_cu_dtoh(void *st, void *dst, uint64_t src, size_t size)
{
	return tio_cu.cuMemcpyDtoHAsync(dst, (CUdeviceptr)src, size, st);
}

static void CUDA_CB tio_cu_signal_fn(void *sig)
{
	tio_gpu_signal_run(sig, 0);
}

static int tio_cu_host_func(void *st, void *sig)
{
	return tio_cu.cuLaunchHostFunc(st, tio_cu_signal_fn, sig);
}

static int tio_cu_wait64(void *st, uint64_t dptr, uint64_t value)
{
	return tio_cu.cuStreamWaitValue64(st, (CUdeviceptr)dptr, value,
					  CU_STREAM_WAIT_VALUE_GEQ);
}

/* The default flags: the work before it is done and visible first. */
static int tio_cu_write64(void *st, uint64_t dptr, uint64_t value)
{
	return tio_cu.cuStreamWriteValue64(st, (CUdeviceptr)dptr, value,
					   CU_STREAM_WRITE_VALUE_DEFAULT);
}

static int tio_cu_export_dmabuf(int *fd, uint64_t dptr, size_t size)
{
	return tio_cu.cuMemGetHandleForAddressRange(fd, (CUdeviceptr)dptr, size,
						    CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
}

static const struct tio_gpu_ops tio_cu_ops = {
	.open = tio_cu_open,
	.enter = tio_cu_enter,
	.leave = tio_cu_leave,
	.name = tio_cu_name,
	.alloc = tio_cu_alloc,
	.free = tio_cu_free,
	.host_register = tio_cu_host_register,
	.host_unregister = tio_cu_host_unregister,
	.host_dptr = tio_cu_host_dptr,
	.stream_create = tio_cu_stream_create,
	.stream_destroy = tio_cu_stream_destroy,
	.stream_query = tio_cu_stream_query,
	.stream_sync = tio_cu_stream_sync,
	.htod = tio_cu_htod,
	.dtoh = tio_cu_dtoh,
	.host_func = tio_cu_host_func,
	.wait64 = tio_cu_wait64,
	.write64 = tio_cu_write64,
	.export_dmabuf = tio_cu_export_dmabuf,
	.to_errno = tio_cu_errno,
	.err_text = tio_cu_err_text,
};

#define TIO_CU_OPS (&tio_cu_ops)
#define TIO_CU_NOT_READY CUDA_ERROR_NOT_READY

#else /* !TIO_HAVE_CUDA */

#define TIO_CU_OPS NULL
#define TIO_CU_NOT_READY (-1)

static void tio_cu_load(void)
{
	tio_gpu_load_fail(&tio_gpu_cuda,
			  "no CUDA driver: libtensorio was built without the CUDA headers");
}

#endif /* TIO_HAVE_CUDA */

struct tio_gpu tio_gpu_cuda = {
	.name = "CUDA",
	.nolib = "no CUDA driver",
	.nodev = "no CUDA device",
	.no_dmabuf = "driver or kernel module without DMA_BUF support",
	.dl_type = kDLCUDA,
	.not_ready = TIO_CU_NOT_READY,
	.calls = {
		[TIO_GPU_OPEN] = "retaining the primary context",
		[TIO_GPU_ENTER] = "making the CUDA context current",
		[TIO_GPU_NAME] = "cuDeviceGetName",
		[TIO_GPU_ALLOC] = "cuMemAlloc",
		[TIO_GPU_HOST_REGISTER] = "cuMemHostRegister",
		[TIO_GPU_HOST_DPTR] = "cuMemHostGetDevicePointer",
		[TIO_GPU_STREAM_CREATE] = "cuStreamCreate",
		[TIO_GPU_STREAM_QUERY] = "cuStreamQuery",
		[TIO_GPU_STREAM_SYNC] = "cuStreamSynchronize",
		[TIO_GPU_HTOD] = "cuMemcpyHtoDAsync",
		[TIO_GPU_DTOH] = "cuMemcpyDtoHAsync",
		[TIO_GPU_HOST_FUNC] = "cuLaunchHostFunc",
		[TIO_GPU_WAIT64] = "cuStreamWaitValue64",
		[TIO_GPU_WRITE64] = "cuStreamWriteValue64",
		[TIO_GPU_DMABUF] = "cuMemGetHandleForAddressRange",
	},
	.ops = TIO_CU_OPS,
	.load = tio_cu_load,
	TIO_GPU_INIT,
};
