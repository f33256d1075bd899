// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * CUDA through the driver API, loaded with dlopen() (tensorio/gpu.h).
 *
 * Built against the CUDA headers when the Makefile finds them
 * (TIO_HAVE_CUDA); without them every entry point fails with ENODEV.
 * libcuda is never linked: the entry points are resolved with dlsym() under
 * the names the header maps them to (cuMemAlloc -> cuMemAlloc_v2, ...), so
 * the calls below use exactly the ABI the header describes.
 *
 * Locking:
 * - tio_cu_once loads the driver once; what it fills (the table, the error
 *   of a failed load) is read-only afterwards.
 * - tio_cu_lock guards retaining a device's primary context; the context
 *   and capabilities are published with a release store of dev->ready and
 *   read after an acquire load.
 * - tio_cu_done_lock guards the list of signals whose host function ran
 *   (their tensorio streams are released outside the host function, which
 *   must not call CUDA: the last release of a stream unregisters its seqno
 *   page).
 * - A buffer's or stream's registration is guarded by its own lock.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tensorio/error.h>
#include <tensorio/gpu.h>
#include <tensorio/tensor.h>

#include "dev_internal.h"

#ifdef TIO_HAVE_CUDA

#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include <cuda.h>

#define TIO_CU_MAX_DEV 64
#define TIO_CU_MAX_NDIM 64

#define TIO_CU_STR_(x) #x
#define TIO_CU_STR(x) TIO_CU_STR_(x)

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
/* Entry points of newer drivers (11.7): their features report EOPNOTSUPP. */
#define TIO_CU_OPTIONAL(X)						\
	X(cuStreamWaitValue64) X(cuMemGetHandleForAddressRange)

/*
 * The member for entry point f is named as the header's macro expands f
 * (cuMemAlloc_v2), and so is every use of it: tio_cu.cuMemAlloc(...).
 */
#define TIO_CU_MEMBER(f) __typeof__(f) *f;

struct tio_cu_dev {
	int ready;		/* release-stored once the rest is set */
	CUdevice dev;
	CUcontext ctx;
	int wait64;		/* CAN_USE_64_BIT_STREAM_MEM_OPS */
	int ro_register;	/* READ_ONLY_HOST_REGISTER_SUPPORTED */
	int dmabuf;		/* DMA_BUF_SUPPORTED */
};

struct tio_cu {
	void *dl;
	int err;		/* errno of a failed load, else 0 */
	char why[256];		/* its message */
	int ndev;
	int version;
	struct tio_cu_dev devs[TIO_CU_MAX_DEV];
	TIO_CU_REQUIRED(TIO_CU_MEMBER)
	TIO_CU_OPTIONAL(TIO_CU_MEMBER)
};

static struct tio_cu tio_cu;
static pthread_once_t tio_cu_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t tio_cu_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t tio_cu_done_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tio_cu_signal *tio_cu_done;	/* under tio_cu_done_lock */
static int64_t tio_cu_live;			/* atomic */

struct tio_cuda_stream {
	int device;
	CUcontext ctx;
	CUstream st;
};

/* A device tensor's allocation, the manager of its DLPack tensor. */
struct tio_cu_mem {
	DLManagedTensorVersioned mt;
	int device;
	CUdeviceptr ptr;
	int64_t shape[];
};

/* A registered buffer. */
struct tio_cu_hostreg {
	void *addr;
	size_t size;
};

/* A registered seqno page. */
struct tio_cu_wordreg {
	void *page;
	size_t off;				/* the word's offset in it */
	CUdeviceptr dptr[TIO_CU_MAX_DEV];	/* per device, 0 until asked */
};

/* A point a host function signals. */
struct tio_cu_signal {
	tio_stream_t *s;
	uint64_t seqno;
	struct tio_cu_signal *next;
};

static void tio_cu_live_add(int64_t n)
{
	__atomic_fetch_add(&tio_cu_live, n, __ATOMIC_RELAXED);
}

static int tio_cu_errno(CUresult r)
{
	switch (r) {
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

/* "<what>: CUDA_ERROR_X (<text>)" into @buf. */
static void tio_cu_text(CUresult r, char *buf, size_t len, const char *what)
{
	const char *name = NULL, *str = NULL;

	if (tio_cu.cuGetErrorName)
		tio_cu.cuGetErrorName(r, &name);
	if (tio_cu.cuGetErrorString)
		tio_cu.cuGetErrorString(r, &str);
	if (name)
		snprintf(buf, len, "%s: %s (%s)", what, name, str ? str : "?");
	else
		snprintf(buf, len, "%s: CUDA error %d", what, (int)r);
}

__attribute__((format(printf, 2, 3)))
static int tio_cu_raise(CUresult r, const char *fmt, ...)
{
	char what[192], text[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	tio_cu_text(r, text, sizeof(text), what);
	return tio_raise_errno(tio_cu_errno(r), "%s", text);
}

static void tio_cu_load(void)
{
	const char *lib = getenv("TIO_CUDA_LIBRARY");
	const char *missing = NULL;
	CUresult r;
	int n;

	if (!lib || !*lib)
		lib = "libcuda.so.1";
	tio_cu.dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!tio_cu.dl) {
		tio_cu.err = ENODEV;
		snprintf(tio_cu.why, sizeof(tio_cu.why),
			 "no CUDA driver: cannot load %s: %s", lib, dlerror());
		return;
	}
#define TIO_CU_SYM(f)							\
	tio_cu.f = (__typeof__(f) *)dlsym(tio_cu.dl, TIO_CU_STR(f));	\
	if (!tio_cu.f && !missing)					\
		missing = TIO_CU_STR(f);
	TIO_CU_REQUIRED(TIO_CU_SYM)
#undef TIO_CU_SYM
	if (missing) {
		tio_cu.err = ENODEV;
		snprintf(tio_cu.why, sizeof(tio_cu.why),
			 "no CUDA driver: %s lacks %s (driver too old?)", lib, missing);
		goto err_close;
	}
#define TIO_CU_SYM(f)							\
	tio_cu.f = (__typeof__(f) *)dlsym(tio_cu.dl, TIO_CU_STR(f));
	TIO_CU_OPTIONAL(TIO_CU_SYM)
#undef TIO_CU_SYM
	r = tio_cu.cuInit(0);
	if (r == CUDA_SUCCESS)
		r = tio_cu.cuDeviceGetCount(&n);
	if (r != CUDA_SUCCESS) {
		tio_cu.err = ENODEV;
		tio_cu_text(r, tio_cu.why, sizeof(tio_cu.why), "no CUDA device: cuInit");
		goto err_close;
	}
	if (n <= 0) {
		tio_cu.err = ENODEV;
		snprintf(tio_cu.why, sizeof(tio_cu.why),
			 "no CUDA device: the driver reports none");
		goto err_close;
	}
	tio_cu.ndev = n < TIO_CU_MAX_DEV ? n : TIO_CU_MAX_DEV;
	if (tio_cu.cuDriverGetVersion(&tio_cu.version) != CUDA_SUCCESS)
		tio_cu.version = 0;
	return;

err_close:
	/* Nothing of the library may be called from now on. */
	memset(&tio_cu.cuInit, 0, sizeof(tio_cu) - offsetof(struct tio_cu, cuInit));
	dlclose(tio_cu.dl);
	tio_cu.dl = NULL;
}

static int tio_cu_ready(void)
{
	pthread_once(&tio_cu_once, tio_cu_load);
	if (tio_cu.err)
		return tio_raise_errno(tio_cu.err, "%s", tio_cu.why);
	return 0;
}

static int tio_cu_attr(CUdevice dev, CUdevice_attribute a)
{
	int v = 0;

	if (tio_cu.cuDeviceGetAttribute(&v, a, dev) != CUDA_SUCCESS)
		return 0;
	return v;
}

/* The device, its primary context retained; NULL with an error raised. */
static struct tio_cu_dev *tio_cu_device(int device)
{
	struct tio_cu_dev *d;
	CUresult r;

	if (tio_cu_ready())
		return NULL;
	if (device < 0 || device >= tio_cu.ndev) {
		tio_raise_errno(EINVAL, "CUDA device %d: there are %d", device,
				tio_cu.ndev);
		return NULL;
	}
	d = &tio_cu.devs[device];
	if (__atomic_load_n(&d->ready, __ATOMIC_ACQUIRE))
		return d;
	pthread_mutex_lock(&tio_cu_lock);
	if (d->ready)
		goto out;
	r = tio_cu.cuDeviceGet(&d->dev, device);
	if (r == CUDA_SUCCESS)
		r = tio_cu.cuDevicePrimaryCtxRetain(&d->ctx, d->dev);
	if (r != CUDA_SUCCESS) {
		pthread_mutex_unlock(&tio_cu_lock);
		tio_cu_raise(r, "retaining the primary context of CUDA device %d", device);
		return NULL;
	}
	d->wait64 = tio_cu.cuStreamWaitValue64 &&
		    tio_cu_attr(d->dev, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS);
	d->ro_register = tio_cu_attr(d->dev,
				     CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED);
	d->dmabuf = tio_cu.cuMemGetHandleForAddressRange &&
		    tio_cu_attr(d->dev, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED);
	__atomic_store_n(&d->ready, 1, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&tio_cu_lock);
	return d;
}

/* Make @ctx current for a call; 0, or -1 with an error raised. */
static int tio_cu_push(CUcontext ctx)
{
	CUresult r = tio_cu.cuCtxPushCurrent(ctx);

	if (r != CUDA_SUCCESS)
		return tio_cu_raise(r, "making the CUDA context current");
	return 0;
}

static void tio_cu_pop(void)
{
	CUcontext c;

	tio_cu.cuCtxPopCurrent(&c);
}

/* Release the tensorio streams of signals whose host function ran. */
static void tio_cu_drain(void)
{
	struct tio_cu_signal *sig, *next;

	if (!__atomic_load_n(&tio_cu_done, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&tio_cu_done_lock);
	sig = tio_cu_done;
	tio_cu_done = NULL;
	pthread_mutex_unlock(&tio_cu_done_lock);
	for (; sig; sig = next) {
		next = sig->next;
		tio_stream_release(sig->s);
		free(sig);
		tio_cu_live_add(-1);
	}
}

int tio_cuda_init(void)
{
	return tio_cu_ready();
}

int tio_cuda_device_count(int *count)
{
	if (tio_cu_ready())
		return -1;
	*count = tio_cu.ndev;
	return 0;
}

int tio_cuda_driver_version(int *version)
{
	if (tio_cu_ready())
		return -1;
	*version = tio_cu.version;
	return 0;
}

int tio_cuda_device_name(int device, char *name, size_t len)
{
	struct tio_cu_dev *d = tio_cu_device(device);
	CUresult r;

	if (!d)
		return -1;
	if (!name || !len || len > INT32_MAX)
		return tio_raise_errno(EINVAL, "tio_cuda_device_name: no room for the name");
	r = tio_cu.cuDeviceGetName(name, (int)len, d->dev);
	if (r != CUDA_SUCCESS)
		return tio_cu_raise(r, "cuDeviceGetName(%d)", device);
	return 0;
}

int tio_cuda_device_supports(int device, int cap)
{
	struct tio_cu_dev *d = tio_cu_device(device);

	if (!d)
		return -1;
	switch (cap) {
	case TIO_CUDA_CAP_WAIT_VALUE64:
		return d->wait64;
	case TIO_CUDA_CAP_READONLY_REGISTER:
		return d->ro_register;
	case TIO_CUDA_CAP_DMABUF:
		return d->dmabuf;
	default:
		return tio_raise_errno(EINVAL, "unknown CUDA capability %d", cap);
	}
}

/* Device tensors. */

static void tio_cu_mem_delete(DLManagedTensorVersioned *mt)
{
	struct tio_cu_mem *m = mt->manager_ctx;
	struct tio_cu_dev *d = &tio_cu.devs[m->device];

	/* A deleter has no one to report to: free in the device's context. */
	if (tio_cu.cuCtxPushCurrent(d->ctx) == CUDA_SUCCESS) {
		tio_cu.cuMemFree(m->ptr);
		tio_cu_pop();
	}
	free(m);
	tio_cu_live_add(-1);
}

int tio_cuda_tensor_empty(int device, int32_t ndim, const int64_t *shape,
			  DLDataType dtype, tio_object_t **out)
{
	struct tio_cu_dev *d = tio_cu_device(device);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t bytes, esize;
	struct tio_cu_mem *m;
	CUresult r;
	int32_t i;

	if (!d)
		return -1;
	if (ndim < 0 || ndim > TIO_CU_MAX_NDIM || (ndim && !shape))
		return tio_raise_errno(EINVAL, "device tensor: ndim %d", (int)ndim);
	esize = ((size_t)dtype.bits * dtype.lanes + 7) / 8;
	if (!esize)
		return tio_raise_errno(EINVAL, "device tensor: element of 0 bits");
	bytes = esize;
	for (i = 0; i < ndim; i++) {
		if (shape[i] < 0)
			return tio_raise_errno(EINVAL, "device tensor: dimension %d is negative",
					       (int)i);
		if (shape[i] && bytes > (SIZE_MAX - page) / (size_t)shape[i])
			return tio_raise_errno(EOVERFLOW, "device tensor: too large");
		bytes *= (size_t)shape[i];
	}
	bytes = bytes ? (bytes + page - 1) & ~(page - 1) : page;
	m = calloc(1, sizeof(*m) + sizeof(int64_t) * (size_t)ndim);
	if (!m)
		return tio_raise_errno(ENOMEM, "device tensor");
	if (tio_cu_push(d->ctx))
		goto err_free;
	r = tio_cu.cuMemAlloc(&m->ptr, bytes);
	tio_cu_pop();
	if (r != CUDA_SUCCESS) {
		tio_cu_raise(r, "cuMemAlloc(%zu bytes) on CUDA device %d", bytes, device);
		goto err_free;
	}
	tio_cu_live_add(1);
	m->device = device;
	if (ndim)
		memcpy(m->shape, shape, sizeof(int64_t) * (size_t)ndim);
	m->mt.version.major = TIO_DLPACK_MAJOR;
	m->mt.version.minor = TIO_DLPACK_MINOR;
	m->mt.manager_ctx = m;
	m->mt.deleter = tio_cu_mem_delete;
	m->mt.dl_tensor.data = (void *)(uintptr_t)m->ptr;
	m->mt.dl_tensor.device.device_type = kDLCUDA;
	m->mt.dl_tensor.device.device_id = device;
	m->mt.dl_tensor.ndim = ndim;
	m->mt.dl_tensor.dtype = dtype;
	m->mt.dl_tensor.shape = m->shape;
	if (tio_tensor_from_dlpack_versioned(&m->mt, 0, 0, out)) {
		tio_cu_mem_delete(&m->mt);
		return -1;
	}
	return 0;

err_free:
	free(m);
	return -1;
}

/* Streams. */

int tio_cuda_stream_create(int device, tio_cuda_stream_t **out)
{
	struct tio_cu_dev *d = tio_cu_device(device);
	struct tio_cuda_stream *cs;
	CUresult r;

	if (!d)
		return -1;
	cs = calloc(1, sizeof(*cs));
	if (!cs)
		return tio_raise_errno(ENOMEM, "CUDA stream");
	cs->device = device;
	cs->ctx = d->ctx;
	if (tio_cu_push(d->ctx))
		goto err_free;
	r = tio_cu.cuStreamCreate(&cs->st, CU_STREAM_NON_BLOCKING);
	tio_cu_pop();
	if (r != CUDA_SUCCESS) {
		tio_cu_raise(r, "cuStreamCreate on CUDA device %d", device);
		goto err_free;
	}
	tio_cu_live_add(1);
	*out = cs;
	return 0;

err_free:
	free(cs);
	return -1;
}

void tio_cuda_stream_destroy(tio_cuda_stream_t *cs)
{
	if (!cs)
		return;
	if (tio_cu.cuCtxPushCurrent(cs->ctx) == CUDA_SUCCESS) {
		/* Pending host functions run before the stream goes. */
		tio_cu.cuStreamSynchronize(cs->st);
		tio_cu.cuStreamDestroy(cs->st);
		tio_cu_pop();
	}
	free(cs);
	tio_cu_live_add(-1);
	tio_cu_drain();
}

void *tio_cuda_stream_handle(const tio_cuda_stream_t *cs)
{
	return cs->st;
}

int tio_cuda_stream_device(const tio_cuda_stream_t *cs)
{
	return cs->device;
}

int tio_cuda_stream_query(tio_cuda_stream_t *cs)
{
	CUresult r;

	if (tio_cu_push(cs->ctx))
		return -1;
	r = tio_cu.cuStreamQuery(cs->st);
	tio_cu_pop();
	if (r == CUDA_ERROR_NOT_READY)
		return 0;
	if (r != CUDA_SUCCESS)
		return tio_cu_raise(r, "cuStreamQuery");
	tio_cu_drain();
	return 1;
}

int tio_cuda_stream_sync(tio_cuda_stream_t *cs)
{
	CUresult r;

	if (tio_cu_push(cs->ctx))
		return -1;
	r = tio_cu.cuStreamSynchronize(cs->st);
	tio_cu_pop();
	tio_cu_drain();
	if (r != CUDA_SUCCESS)
		return tio_cu_raise(r, "cuStreamSynchronize");
	return 0;
}

/* Copies. */

int tio_cuda_copy_htod(tio_cuda_stream_t *cs, uint64_t dst, const void *src,
		       size_t size)
{
	CUresult r;

	if (!dst || !src)
		return tio_raise_errno(EINVAL, "host-to-device copy: NULL address");
	if (tio_cu_push(cs->ctx))
		return -1;
	r = tio_cu.cuMemcpyHtoDAsync((CUdeviceptr)dst, src, size, cs->st);
	tio_cu_pop();
	if (r != CUDA_SUCCESS)
		return tio_cu_raise(r, "cuMemcpyHtoDAsync(%zu bytes)", size);
	return 0;
}

int tio_cuda_copy_dtoh(tio_cuda_stream_t *cs, void *dst, uint64_t src, size_t size)
{
	CUresult r;

	if (!dst || !src)
		return tio_raise_errno(EINVAL, "device-to-host copy: NULL address");
	if (tio_cu_push(cs->ctx))
		return -1;
	r = tio_cu.cuMemcpyDtoHAsync(dst, (CUdeviceptr)src, size, cs->st);
	tio_cu_pop();
	if (r != CUDA_SUCCESS)
		return tio_cu_raise(r, "cuMemcpyDtoHAsync(%zu bytes)", size);
	return 0;
}

int tio_cuda_tensor_copy(tio_cuda_stream_t *cs, tio_object_t *dst, tio_object_t *src)
{
	DLTensor *d, *s;
	size_t n;

	if (!dst || !src)
		return tio_raise_errno(EINVAL, "tensor copy: NULL tensor");
	d = tio_tensor_dl(dst);
	s = tio_tensor_dl(src);
	if (!tio_tensor_is_contiguous(d) || !tio_tensor_is_contiguous(s))
		return tio_raise_errno(EINVAL, "tensor copy: both tensors must be compact row-major");
	if (d->dtype.code != s->dtype.code || d->dtype.bits != s->dtype.bits ||
	    d->dtype.lanes != s->dtype.lanes)
		return tio_raise_errno(EINVAL, "tensor copy: dtypes differ");
	n = tio_tensor_nbytes(s);
	if (n != tio_tensor_nbytes(d))
		return tio_raise_errno(EINVAL, "tensor copy: %zu bytes into %zu", n,
				       tio_tensor_nbytes(d));
	if (s->device.device_type == kDLCPU && d->device.device_type == kDLCUDA &&
	    d->device.device_id == cs->device)
		return n ? tio_cuda_copy_htod(cs, (uintptr_t)d->data + d->byte_offset,
					      (char *)s->data + s->byte_offset, n) : 0;
	if (s->device.device_type == kDLCUDA && d->device.device_type == kDLCPU &&
	    s->device.device_id == cs->device)
		return n ? tio_cuda_copy_dtoh(cs, (char *)d->data + d->byte_offset,
					      (uintptr_t)s->data + s->byte_offset, n) : 0;
	return tio_raise_errno(EINVAL,
		"tensor copy: needs one CPU tensor and one CUDA tensor on the stream's device %d (got %d:%d -> %d:%d)",
		cs->device, s->device.device_type, s->device.device_id,
		d->device.device_type, d->device.device_id);
}

/* Registered buffers. */

static void tio_cu_hostreg_release(void *obj)
{
	struct tio_buffer *buf = obj;
	struct tio_cu_hostreg *reg = buf->gpu;

	if (tio_cu.cuCtxPushCurrent(tio_cu.devs[0].ctx) == CUDA_SUCCESS) {
		tio_cu.cuMemHostUnregister(reg->addr);
		tio_cu_pop();
	}
	free(reg);
	buf->gpu = NULL;
	buf->gpu_release = NULL;
	tio_cu_live_add(-1);
}

int tio_cuda_buffer_register(tio_buffer_t *buf)
{
	struct tio_cu_dev *d = tio_cu_device(0);
	struct tio_cu_hostreg *reg;
	CUresult r;
	void *p;

	if (!d)
		return -1;
	p = tio_buffer_data(buf);
	if (!p)
		return -1;
	reg = calloc(1, sizeof(*reg));
	if (!reg)
		return tio_raise_errno(ENOMEM, "buffer registration");
	reg->addr = p;
	reg->size = (size_t)buf->size;
	pthread_mutex_lock(&buf->lock);
	if (buf->gpu) {
		pthread_mutex_unlock(&buf->lock);
		free(reg);
		return tio_raise_errno(EEXIST, "buffer %lld is already registered with CUDA",
				       (long long)buf->handle);
	}
	if (tio_cu_push(d->ctx))
		goto err_unlock;
	r = tio_cu.cuMemHostRegister(p, reg->size, CU_MEMHOSTREGISTER_PORTABLE |
				     CU_MEMHOSTREGISTER_DEVICEMAP);
	tio_cu_pop();
	if (r != CUDA_SUCCESS) {
		tio_cu_raise(r, "cuMemHostRegister of buffer %lld (%zu bytes)",
			     (long long)buf->handle, reg->size);
		goto err_unlock;
	}
	buf->gpu = reg;
	buf->gpu_release = tio_cu_hostreg_release;
	pthread_mutex_unlock(&buf->lock);
	tio_cu_live_add(1);
	return 0;

err_unlock:
	pthread_mutex_unlock(&buf->lock);
	free(reg);
	return -1;
}

int tio_cuda_buffer_unregister(tio_buffer_t *buf)
{
	if (tio_cu_ready())
		return -1;
	pthread_mutex_lock(&buf->lock);
	if (!buf->gpu) {
		pthread_mutex_unlock(&buf->lock);
		return tio_raise_errno(ENOENT, "buffer %lld is not registered with CUDA",
				       (long long)buf->handle);
	}
	tio_cu_hostreg_release(buf);
	pthread_mutex_unlock(&buf->lock);
	return 0;
}

int tio_cuda_buffer_device_ptr(tio_buffer_t *buf, int device, uint64_t *dptr)
{
	struct tio_cu_dev *d = tio_cu_device(device);
	struct tio_cu_hostreg *reg;
	CUdeviceptr p = 0;
	CUresult r;

	if (!d)
		return -1;
	pthread_mutex_lock(&buf->lock);
	reg = buf->gpu;
	if (!reg) {
		pthread_mutex_unlock(&buf->lock);
		return tio_raise_errno(ENOENT, "buffer %lld is not registered with CUDA",
				       (long long)buf->handle);
	}
	if (tio_cu_push(d->ctx)) {
		pthread_mutex_unlock(&buf->lock);
		return -1;
	}
	r = tio_cu.cuMemHostGetDevicePointer(&p, reg->addr, 0);
	tio_cu_pop();
	pthread_mutex_unlock(&buf->lock);
	if (r != CUDA_SUCCESS)
		return tio_cu_raise(r, "cuMemHostGetDevicePointer of buffer %lld",
				    (long long)buf->handle);
	*dptr = p;
	return 0;
}

/* Fences. */

/*
 * Whether @seqno was emitted on @s: 0, or -1 with an error raised. A
 * pending point is fine; the backend is asked directly (a poll), so that
 * the usual pending case raises nothing (an error captures a backtrace).
 */
static int tio_cu_check_point(tio_stream_t *s, uint64_t seqno)
{
	const volatile uint64_t *w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
	struct tio_fence_wait a;
	int ret;

	if (seqno && w && __atomic_load_n(w, __ATOMIC_ACQUIRE) >= seqno)
		return 0;
	memset(&a, 0, sizeof(a));
	a.stream = (uint32_t)s->handle;
	a.seqno = seqno;
	ret = s->ctx->ops->exec(s->ctx, TIO_IOC_FENCE_WAIT, &a);
	if (ret && ret != -ETIME)
		return tio_raise_errno(ret, "point %llu of stream %lld",
				       (unsigned long long)seqno, (long long)s->handle);
	return 0;
}

static void CUDA_CB tio_cu_signal_fn(void *data)
{
	struct tio_cu_signal *sig = data;

	/* No CUDA call here: the backend signals (an ioctl or a futex). */
	if (tio_stream_signal(sig->s, sig->seqno, 0))
		tio_error_clear();
	pthread_mutex_lock(&tio_cu_done_lock);
	sig->next = tio_cu_done;
	tio_cu_done = sig;
	pthread_mutex_unlock(&tio_cu_done_lock);
}

int tio_cuda_stream_signal_fence(tio_cuda_stream_t *cs, tio_stream_t *s, uint64_t seqno)
{
	struct tio_cu_signal *sig;
	CUresult r;

	if (tio_cu_ready())
		return -1;
	tio_cu_drain();
	/* A point never emitted is refused now, not in the host function. */
	if (tio_cu_check_point(s, seqno))
		return -1;
	sig = calloc(1, sizeof(*sig));
	if (!sig)
		return tio_raise_errno(ENOMEM, "fence signal");
	sig->s = s;
	sig->seqno = seqno;
	tio_object_incref(&s->header);
	if (tio_cu_push(cs->ctx))
		goto err_free;
	r = tio_cu.cuLaunchHostFunc(cs->st, tio_cu_signal_fn, sig);
	tio_cu_pop();
	if (r != CUDA_SUCCESS) {
		tio_cu_raise(r, "cuLaunchHostFunc (signal of point %llu)",
			     (unsigned long long)seqno);
		goto err_free;
	}
	tio_cu_live_add(1);
	return 0;

err_free:
	tio_stream_release(s);
	free(sig);
	return -1;
}

int tio_cuda_stream_record_fence(tio_cuda_stream_t *cs, tio_stream_t *s, uint64_t *seqno)
{
	uint64_t n;

	if (tio_cu_ready())
		return -1;
	if (tio_stream_emit(s, &n))
		return -1;
	if (tio_cuda_stream_signal_fence(cs, s, n)) {
		/* The point must not stay pending forever: signal it failed. */
		tio_object_t *e = tio_error_move_from_raised();
		int err = tio_errno();

		tio_stream_signal(s, n, -ECANCELED);
		tio_error_set_raised(e);
		tio_set_errno(err);
		return -1;
	}
	*seqno = n;
	return 0;
}

static void tio_cu_wordreg_release(void *obj)
{
	struct tio_stream *s = obj;
	struct tio_cu_wordreg *reg = s->gpu;

	if (tio_cu.cuCtxPushCurrent(tio_cu.devs[0].ctx) == CUDA_SUCCESS) {
		tio_cu.cuMemHostUnregister(reg->page);
		tio_cu_pop();
	}
	free(reg);
	s->gpu = NULL;
	s->gpu_release = NULL;
	tio_cu_live_add(-1);
}

/* The device address of @s's seqno word on @cs's device; 0 or -1 raised. */
static int tio_cu_word_dptr(tio_cuda_stream_t *cs, tio_stream_t *s, CUdeviceptr *out)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	const volatile uint64_t *w;
	struct tio_cu_wordreg *reg;
	CUresult r;

	w = tio_stream_seqno_word(s);
	if (!w)
		return -1;
	pthread_mutex_lock(&s->lock);
	reg = s->gpu;
	if (reg && reg->dptr[cs->device]) {
		*out = reg->dptr[cs->device] + reg->off;
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	if (!reg) {
		reg = calloc(1, sizeof(*reg));
		if (!reg) {
			pthread_mutex_unlock(&s->lock);
			return tio_raise_errno(ENOMEM, "seqno word registration");
		}
		reg->page = (void *)((uintptr_t)w & ~(uintptr_t)(page - 1));
		reg->off = (uintptr_t)w - (uintptr_t)reg->page;
		if (tio_cu_push(tio_cu.devs[0].ctx))
			goto err_free;
		/* The page is mapped read-only: the GPU only reads it. */
		r = tio_cu.cuMemHostRegister(reg->page, page,
					     CU_MEMHOSTREGISTER_PORTABLE |
					     CU_MEMHOSTREGISTER_DEVICEMAP |
					     CU_MEMHOSTREGISTER_READ_ONLY);
		tio_cu_pop();
		if (r != CUDA_SUCCESS) {
			tio_cu_raise(r, "cuMemHostRegister(READ_ONLY) of the seqno word of stream %lld",
				     (long long)s->handle);
			goto err_free;
		}
		s->gpu = reg;
		s->gpu_release = tio_cu_wordreg_release;
		tio_cu_live_add(1);
	}
	if (tio_cu_push(cs->ctx))
		goto err_unlock;
	r = tio_cu.cuMemHostGetDevicePointer(&reg->dptr[cs->device], reg->page, 0);
	tio_cu_pop();
	if (r != CUDA_SUCCESS) {
		reg->dptr[cs->device] = 0;
		tio_cu_raise(r, "cuMemHostGetDevicePointer of a seqno word");
		goto err_unlock;
	}
	*out = reg->dptr[cs->device] + reg->off;
	pthread_mutex_unlock(&s->lock);
	return 0;

err_free:
	free(reg);
err_unlock:
	pthread_mutex_unlock(&s->lock);
	return -1;
}

int tio_cuda_stream_wait_fence(tio_cuda_stream_t *cs, tio_stream_t *s, uint64_t seqno)
{
	struct tio_cu_dev *d;
	CUdeviceptr w = 0;
	CUresult r;

	/* The seqno page is registered in device 0's context. */
	if (!tio_cu_device(0))
		return -1;
	d = &tio_cu.devs[cs->device];
	if (!d->wait64)
		return tio_raise_errno(EOPNOTSUPP,
			"fence -> stream: CUDA device %d lacks 64-bit stream memory operations (cuStreamWaitValue64)",
			cs->device);
	if (!tio_cu.devs[0].ro_register || !d->ro_register)
		return tio_raise_errno(EOPNOTSUPP,
			"fence -> stream: CUDA device %d cannot register read-only host memory (the seqno word)",
			cs->device);
	/* A point never emitted would stall the GPU for ever: refuse it. */
	if (tio_cu_check_point(s, seqno))
		return -1;
	if (tio_cu_word_dptr(cs, s, &w))
		return -1;
	if (tio_cu_push(cs->ctx))
		return -1;
	r = tio_cu.cuStreamWaitValue64(cs->st, w, seqno, CU_STREAM_WAIT_VALUE_GEQ);
	tio_cu_pop();
	if (r != CUDA_SUCCESS)
		return tio_cu_raise(r, "cuStreamWaitValue64 (point %llu)",
				    (unsigned long long)seqno);
	return 0;
}

/* dma-buf. */

int tio_cuda_export_dmabuf(int device, uint64_t dptr, size_t size, int *fd)
{
	struct tio_cu_dev *d = tio_cu_device(device);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	CUresult r;
	int f = -1;

	if (!d)
		return -1;
	if (!d->dmabuf)
		return tio_raise_errno(EOPNOTSUPP,
			"CUDA device %d cannot export dma-bufs (driver or kernel module without DMA_BUF support)",
			device);
	if (!dptr || !size || (dptr | size) & (page - 1))
		return tio_raise_errno(EINVAL,
			"dma-buf export: range 0x%llx+%zu is not page aligned",
			(unsigned long long)dptr, size);
	if (tio_cu_push(d->ctx))
		return -1;
	r = tio_cu.cuMemGetHandleForAddressRange(&f, (CUdeviceptr)dptr, size,
						 CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	tio_cu_pop();
	if (r != CUDA_SUCCESS)
		return tio_cu_raise(r, "cuMemGetHandleForAddressRange(DMA_BUF_FD, %zu bytes)",
				    size);
	fcntl(f, F_SETFD, FD_CLOEXEC);
	*fd = f;
	return 0;
}

int tio_cuda_buffer_import(int device, uint64_t dptr, size_t size, tio_buffer_t **out)
{
	int fd, ret, backend;

	if (tio_cu_ready())
		return -1;
	backend = tio_backend();
	if (backend < 0)
		return -1;
	if (backend != TIO_BACKEND_KERNEL)
		return tio_raise_errno(EOPNOTSUPP,
			"importing GPU memory needs the kernel backend (the %s backend maps what it imports)",
			tio_backend_name());
	if (tio_cuda_export_dmabuf(device, dptr, size, &fd))
		return -1;
	ret = tio_buffer_import(fd, out);
	close(fd);
	return ret;
}

int64_t tio_cuda_debug_live(void)
{
	return __atomic_load_n(&tio_cu_live, __ATOMIC_RELAXED);
}

#else /* !TIO_HAVE_CUDA */

#define TIO_NO_CUDA() \
	tio_raise_errno(ENODEV, "no CUDA driver: libtensorio was built without the CUDA headers")

int tio_cuda_init(void)
{
	return TIO_NO_CUDA();
}

int tio_cuda_device_count(int *count)
{
	(void)count;
	return TIO_NO_CUDA();
}

int tio_cuda_driver_version(int *version)
{
	(void)version;
	return TIO_NO_CUDA();
}

int tio_cuda_device_name(int device, char *name, size_t len)
{
	(void)device; (void)name; (void)len;
	return TIO_NO_CUDA();
}

int tio_cuda_device_supports(int device, int cap)
{
	(void)device; (void)cap;
	return TIO_NO_CUDA();
}

int tio_cuda_tensor_empty(int device, int32_t ndim, const int64_t *shape,
			  DLDataType dtype, tio_object_t **out)
{
	(void)device; (void)ndim; (void)shape; (void)dtype; (void)out;
	return TIO_NO_CUDA();
}

int tio_cuda_stream_create(int device, tio_cuda_stream_t **out)
{
	(void)device; (void)out;
	return TIO_NO_CUDA();
}

void tio_cuda_stream_destroy(tio_cuda_stream_t *cs)
{
	(void)cs;
}

void *tio_cuda_stream_handle(const tio_cuda_stream_t *cs)
{
	(void)cs;
	return NULL;
}

int tio_cuda_stream_device(const tio_cuda_stream_t *cs)
{
	(void)cs;
	return -1;
}

int tio_cuda_stream_query(tio_cuda_stream_t *cs)
{
	(void)cs;
	return TIO_NO_CUDA();
}

int tio_cuda_stream_sync(tio_cuda_stream_t *cs)
{
	(void)cs;
	return TIO_NO_CUDA();
}

int tio_cuda_copy_htod(tio_cuda_stream_t *cs, uint64_t dst, const void *src, size_t size)
{
	(void)cs; (void)dst; (void)src; (void)size;
	return TIO_NO_CUDA();
}

int tio_cuda_copy_dtoh(tio_cuda_stream_t *cs, void *dst, uint64_t src, size_t size)
{
	(void)cs; (void)dst; (void)src; (void)size;
	return TIO_NO_CUDA();
}

int tio_cuda_tensor_copy(tio_cuda_stream_t *cs, tio_object_t *dst, tio_object_t *src)
{
	(void)cs; (void)dst; (void)src;
	return TIO_NO_CUDA();
}

int tio_cuda_buffer_register(tio_buffer_t *buf)
{
	(void)buf;
	return TIO_NO_CUDA();
}

int tio_cuda_buffer_unregister(tio_buffer_t *buf)
{
	(void)buf;
	return TIO_NO_CUDA();
}

int tio_cuda_buffer_device_ptr(tio_buffer_t *buf, int device, uint64_t *dptr)
{
	(void)buf; (void)device; (void)dptr;
	return TIO_NO_CUDA();
}

int tio_cuda_stream_signal_fence(tio_cuda_stream_t *cs, tio_stream_t *s, uint64_t seqno)
{
	(void)cs; (void)s; (void)seqno;
	return TIO_NO_CUDA();
}

int tio_cuda_stream_record_fence(tio_cuda_stream_t *cs, tio_stream_t *s, uint64_t *seqno)
{
	(void)cs; (void)s; (void)seqno;
	return TIO_NO_CUDA();
}

int tio_cuda_stream_wait_fence(tio_cuda_stream_t *cs, tio_stream_t *s, uint64_t seqno)
{
	(void)cs; (void)s; (void)seqno;
	return TIO_NO_CUDA();
}

int tio_cuda_export_dmabuf(int device, uint64_t dptr, size_t size, int *fd)
{
	(void)device; (void)dptr; (void)size; (void)fd;
	return TIO_NO_CUDA();
}

int tio_cuda_buffer_import(int device, uint64_t dptr, size_t size, tio_buffer_t **out)
{
	(void)device; (void)dptr; (void)size; (void)out;
	return TIO_NO_CUDA();
}

int64_t tio_cuda_debug_live(void)
{
	return 0;
}

#endif /* TIO_HAVE_CUDA */
