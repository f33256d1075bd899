// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * GPU memory (tensorio/gpu.h): device tensors and their DLPack deleters,
 * tensorio buffers registered with a vendor (host memory the device
 * reads), and device memory exported as a dma-buf and imported as a
 * buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tensorio/error.h>
#include <tensorio/gpu.h>
#include <tensorio/tensor.h>

#include "dev/dev_internal.h"
#include "gpu/gpu_internal.h"

#define TIO_GPU_MAX_NDIM 64

/* A device tensor's allocation, the manager of its DLPack tensor. */
struct tio_gpu_mem {
	DLManagedTensorVersioned mt;
	struct tio_gpu *g;
	int device;
	uint64_t ptr;
	int64_t shape[];
};

/* Device tensors. */

static void tio_gpu_mem_delete(DLManagedTensorVersioned *mt)
{
	struct tio_gpu_mem *m = mt->manager_ctx;
	struct tio_gpu *g = m->g;
	uintptr_t saved;

	/* A deleter has no one to report to: free on the device. */
	if (!g->ops->enter(&g->devs[m->device], &saved)) {
		g->ops->free(m->ptr);
		g->ops->leave(saved);
	}
	free(m);
	tio_gpu_live_add(g, -1);
}

static int core_tensor_empty(struct tio_gpu *g, int device, int32_t ndim,
			     const int64_t *shape, DLDataType dtype,
			     tio_object_t **out)
{
	struct tio_gpu_dev *d = tio_gpu_device(g, device);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t bytes, esize;
	struct tio_gpu_mem *m;
	uintptr_t saved;
	int32_t i;
	int r;

	if (!d)
		return -1;
	if (ndim < 0 || ndim > TIO_GPU_MAX_NDIM || (ndim && !shape))
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
	if (tio_gpu_enter(g, d, &saved))
		goto err_free;
	r = g->ops->alloc(&m->ptr, bytes);
	g->ops->leave(saved);
	if (r) {
		tio_gpu_raise(g, r, "%s(%zu bytes) on %s device %d",
			      g->calls[TIO_GPU_ALLOC], bytes, g->name, device);
		goto err_free;
	}
	tio_gpu_live_add(g, 1);
	m->g = g;
	m->device = device;
	if (ndim)
		memcpy(m->shape, shape, sizeof(int64_t) * (size_t)ndim);
	m->mt.version.major = TIO_DLPACK_MAJOR;
	m->mt.version.minor = TIO_DLPACK_MINOR;
	m->mt.manager_ctx = m;
	m->mt.deleter = tio_gpu_mem_delete;
	m->mt.dl_tensor.data = (void *)(uintptr_t)m->ptr;
	m->mt.dl_tensor.device.device_type = g->dl_type;
	m->mt.dl_tensor.device.device_id = device;
	m->mt.dl_tensor.ndim = ndim;
	m->mt.dl_tensor.dtype = dtype;
	m->mt.dl_tensor.shape = m->shape;
	if (tio_tensor_from_dlpack_versioned(&m->mt, 0, 0, out)) {
		tio_gpu_mem_delete(&m->mt);
		return -1;
	}
	return 0;

err_free:
	free(m);
	return -1;
}

int tio_gpu_tensor_empty(DLDevice dev, int32_t ndim, const int64_t *shape,
			 DLDataType dtype, tio_object_t **out)
{
	struct tio_gpu *g = tio_gpu_vendor(dev.device_type);

	return g ? core_tensor_empty(g, dev.device_id, ndim, shape, dtype, out) : -1;
}

/* Registered host memory: buffers and seqno pages. */

/* End the registrations of list @reg; they were made in device 0's context. */
void tio_gpu_regs_free(struct tio_gpu_reg *reg)
{
	struct tio_gpu_reg *next;
	uintptr_t saved;

	for (; reg; reg = next) {
		next = reg->next;
		if (!reg->g->ops->enter(&reg->g->devs[0], &saved)) {
			reg->g->ops->host_unregister(reg->addr);
			reg->g->ops->leave(saved);
		}
		tio_gpu_live_add(reg->g, -1);
		free(reg);
	}
}

/* @g's registration in list @head, or NULL; *@prev its predecessor. */
struct tio_gpu_reg *tio_gpu_reg_find(struct tio_gpu_reg *head, struct tio_gpu *g,
				     struct tio_gpu_reg **prev)
{
	struct tio_gpu_reg *reg;

	*prev = NULL;
	for (reg = head; reg && reg->g != g; reg = reg->next)
		*prev = reg;
	return reg;
}

/* The buffer's finalizer: end every vendor's registration. */
static void tio_gpu_buffer_release(void *obj)
{
	struct tio_buffer *buf = obj;

	tio_gpu_regs_free(buf->gpu);
	buf->gpu = NULL;
	buf->gpu_unregister = NULL;
}

static int core_buffer_register(struct tio_gpu *g, tio_buffer_t *buf)
{
	struct tio_gpu_dev *d = tio_gpu_device(g, 0);
	struct tio_gpu_reg *reg, *prev;
	uintptr_t saved;
	void *p;
	int r;

	if (!d)
		return -1;
	p = tio_buffer_data(buf);
	if (!p)
		return -1;
	reg = calloc(1, sizeof(*reg));
	if (!reg)
		return tio_raise_errno(ENOMEM, "buffer registration");
	reg->g = g;
	reg->addr = p;
	pthread_mutex_lock(&buf->lock);
	if (tio_gpu_reg_find(buf->gpu, g, &prev)) {
		pthread_mutex_unlock(&buf->lock);
		free(reg);
		return tio_raise_errno(EEXIST, "buffer %lld is already registered with %s",
				       (long long)buf->handle, g->name);
	}
	if (tio_gpu_enter(g, d, &saved))
		goto err_unlock;
	r = g->ops->host_register(p, (size_t)buf->size, 0);
	g->ops->leave(saved);
	if (r) {
		tio_gpu_raise(g, r, "%s of buffer %lld (%zu bytes)",
			      g->calls[TIO_GPU_HOST_REGISTER], (long long)buf->handle,
			      (size_t)buf->size);
		goto err_unlock;
	}
	reg->next = buf->gpu;
	buf->gpu = reg;
	buf->gpu_unregister = tio_gpu_buffer_release;
	pthread_mutex_unlock(&buf->lock);
	tio_gpu_live_add(g, 1);
	return 0;

err_unlock:
	pthread_mutex_unlock(&buf->lock);
	free(reg);
	return -1;
}

static int core_buffer_unregister(struct tio_gpu *g, tio_buffer_t *buf)
{
	struct tio_gpu_reg *reg, *prev;

	if (tio_gpu_ready(g))
		return -1;
	pthread_mutex_lock(&buf->lock);
	reg = tio_gpu_reg_find(buf->gpu, g, &prev);
	if (!reg) {
		pthread_mutex_unlock(&buf->lock);
		return tio_raise_errno(ENOENT, "buffer %lld is not registered with %s",
				       (long long)buf->handle, g->name);
	}
	if (prev)
		prev->next = reg->next;
	else
		buf->gpu = reg->next;
	if (!buf->gpu)
		buf->gpu_unregister = NULL;
	reg->next = NULL;
	tio_gpu_regs_free(reg);
	pthread_mutex_unlock(&buf->lock);
	return 0;
}

static int core_buffer_device_ptr(struct tio_gpu *g, tio_buffer_t *buf,
				  int device, uint64_t *dptr)
{
	struct tio_gpu_dev *d = tio_gpu_device(g, device);
	struct tio_gpu_reg *reg, *prev;
	uintptr_t saved;
	uint64_t p = 0;
	int r;

	if (!d)
		return -1;
	pthread_mutex_lock(&buf->lock);
	reg = tio_gpu_reg_find(buf->gpu, g, &prev);
	if (!reg) {
		pthread_mutex_unlock(&buf->lock);
		return tio_raise_errno(ENOENT, "buffer %lld is not registered with %s",
				       (long long)buf->handle, g->name);
	}
	if (tio_gpu_enter(g, d, &saved)) {
		pthread_mutex_unlock(&buf->lock);
		return -1;
	}
	r = g->ops->host_dptr(&p, reg->addr);
	g->ops->leave(saved);
	pthread_mutex_unlock(&buf->lock);
	if (r)
		return tio_gpu_raise(g, r, "%s of buffer %lld", g->calls[TIO_GPU_HOST_DPTR],
				     (long long)buf->handle);
	*dptr = p;
	return 0;
}

int tio_gpu_buffer_register(DLDeviceType type, tio_buffer_t *buf)
{
	struct tio_gpu *g = tio_gpu_vendor(type);

	return g ? core_buffer_register(g, buf) : -1;
}

int tio_gpu_buffer_unregister(DLDeviceType type, tio_buffer_t *buf)
{
	struct tio_gpu *g = tio_gpu_vendor(type);

	return g ? core_buffer_unregister(g, buf) : -1;
}

int tio_gpu_buffer_device_ptr(tio_buffer_t *buf, DLDevice dev, uint64_t *dptr)
{
	struct tio_gpu *g = tio_gpu_vendor(dev.device_type);

	return g ? core_buffer_device_ptr(g, buf, dev.device_id, dptr) : -1;
}

/* dma-buf. */

static int core_export_dmabuf(struct tio_gpu *g, int device, uint64_t dptr,
			      size_t size, int *fd)
{
	struct tio_gpu_dev *d = tio_gpu_device(g, device);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t saved;
	int r, f = -1;

	if (!d)
		return -1;
	if (!d->dmabuf)
		return tio_raise_errno(EOPNOTSUPP, "%s device %d cannot export dma-bufs (%s)",
				       g->name, device, g->no_dmabuf);
	if (!dptr || !size || (dptr | size) & (page - 1))
		return tio_raise_errno(EINVAL,
			"dma-buf export: range 0x%llx+%zu is not page aligned",
			(unsigned long long)dptr, size);
	if (tio_gpu_enter(g, d, &saved))
		return -1;
	r = g->ops->export_dmabuf(&f, dptr, size);
	g->ops->leave(saved);
	if (r)
		return tio_gpu_raise(g, r, "%s(DMA_BUF_FD, %zu bytes)",
				     g->calls[TIO_GPU_DMABUF], size);
	fcntl(f, F_SETFD, FD_CLOEXEC);
	*fd = f;
	return 0;
}

static int core_buffer_import(struct tio_gpu *g, int device, uint64_t dptr,
			      size_t size, tio_buffer_t **out)
{
	int fd, ret, backend;

	if (tio_gpu_ready(g))
		return -1;
	backend = tio_backend();
	if (backend < 0)
		return -1;
	if (backend != TIO_BACKEND_KERNEL)
		return tio_raise_errno(EOPNOTSUPP,
			"importing GPU memory needs the kernel backend (the %s backend maps what it imports)",
			tio_backend_name());
	if (core_export_dmabuf(g, device, dptr, size, &fd))
		return -1;
	ret = tio_buffer_import(fd, out);
	close(fd);
	return ret;
}

int tio_gpu_export_dmabuf(DLDevice dev, uint64_t dptr, size_t size, int *fd)
{
	struct tio_gpu *g = tio_gpu_vendor(dev.device_type);

	return g ? core_export_dmabuf(g, dev.device_id, dptr, size, fd) : -1;
}

int tio_gpu_buffer_import(DLDevice dev, uint64_t dptr, size_t size, tio_buffer_t **out)
{
	struct tio_gpu *g = tio_gpu_vendor(dev.device_type);

	return g ? core_buffer_import(g, dev.device_id, dptr, size, out) : -1;
}
