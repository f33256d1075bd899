// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * GPUs, backend-neutral (tensorio/gpu.h): what CUDA and HIP share, driven
 * by a vendor's struct tio_gpu (gpu_internal.h: the operations table and
 * the locking rules). The public tio_gpu_* entry points at the end of this
 * file pick the vendor from the DLDevice's type.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tensorio/error.h>
#include <tensorio/gpu.h>
#include <tensorio/tensor.h>

#include "dev/dev_internal.h"
#include "gpu/gpu_internal.h"

#define TIO_GPU_MAX_NDIM 64

/* A stream of a vendor's (tio_gpu_stream_t). */
struct tio_gpu_stream {
	struct tio_gpu *g;
	int device;
	void *st;
	int borrowed;		/* tio_gpu_stream_wrap(): the caller's */
};

/* A device tensor's allocation, the manager of its DLPack tensor. */
struct tio_gpu_mem {
	DLManagedTensorVersioned mt;
	struct tio_gpu *g;
	int device;
	uint64_t ptr;
	int64_t shape[];
};

/*
 * Host memory registered with a vendor: a buffer's memory, or a stream's
 * seqno page. buf->gpu and s->gpu list one per vendor, under their lock.
 */
struct tio_gpu_reg {
	struct tio_gpu *g;
	void *addr;
	struct tio_gpu_reg *next;
};

/* A registered seqno page. */
struct tio_gpu_wordreg {
	struct tio_gpu_reg reg;			/* first: s->gpu lists these */
	size_t off;				/* the word's offset in it */
	uint64_t dptr[TIO_GPU_MAX_DEV];		/* per device, 0 until asked */
};

/* A point a host function signals. */
struct tio_gpu_signal {
	struct tio_gpu *g;
	tio_stream_t *s;
	uint64_t seqno;
	struct tio_gpu_signal *next;
};

static void tio_gpu_live_add(struct tio_gpu *g, int64_t n)
{
	__atomic_fetch_add(&g->live, n, __ATOMIC_RELAXED);
}

/* "<what>: <ERROR_NAME> (<text>)" into @buf. */
static void tio_gpu_text(struct tio_gpu *g, int r, char *buf, size_t len,
			 const char *what)
{
	const char *name = NULL, *str = NULL;

	g->ops->err_text(r, &name, &str);
	if (name)
		snprintf(buf, len, "%s: %s (%s)", what, name, str ? str : "?");
	else
		snprintf(buf, len, "%s: %s error %d", what, g->name, r);
}

__attribute__((format(printf, 3, 4)))
static int tio_gpu_raise(struct tio_gpu *g, int r, const char *fmt, ...)
{
	char what[192], text[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	tio_gpu_text(g, r, text, sizeof(text), what);
	return tio_raise_errno(g->ops->to_errno(r), "%s", text);
}

/* Loading. */

void tio_gpu_load_fail(struct tio_gpu *g, const char *fmt, ...)
{
	va_list ap;

	g->err = ENODEV;
	va_start(ap, fmt);
	vsnprintf(g->why, sizeof(g->why), fmt, ap);
	va_end(ap);
}

void *tio_gpu_dlopen(struct tio_gpu *g, const char *env, const char *const *names)
{
	const char *lib = getenv(env), *e;
	const char *chosen[] = { lib, NULL };
	char why[192] = "";
	void *dl = NULL;

	if (lib && *lib)
		names = chosen;
	/* The first name is preferred: its failure is the one reported. */
	g->lib = *names;
	for (; !dl && *names; names++) {
		dl = dlopen(*names, RTLD_NOW | RTLD_LOCAL);
		if (dl) {
			g->lib = *names;
		} else if (!why[0]) {
			e = dlerror();
			snprintf(why, sizeof(why), "%s", e ? e : "?");
		}
	}
	if (!dl)
		tio_gpu_load_fail(g, "%s: cannot load %s: %s", g->nolib, g->lib, why);
	return dl;
}

void *tio_gpu_dlsym(void *dl, const char *sym, int required, const char **missing)
{
	void *p = dlsym(dl, sym);

	if (!p && required && !*missing)
		*missing = sym;
	return p;
}

int tio_gpu_load_devices(struct tio_gpu *g, const char *missing, int r,
			 const char *what, int n, int version)
{
	char head[64];

	if (missing) {
		tio_gpu_load_fail(g, "%s: %s lacks %s (driver too old?)", g->nolib,
				  g->lib, missing);
		return -1;
	}
	if (r) {
		snprintf(head, sizeof(head), "%s: %s", g->nodev, what);
		g->err = ENODEV;
		tio_gpu_text(g, r, g->why, sizeof(g->why), head);
		return -1;
	}
	if (n <= 0) {
		tio_gpu_load_fail(g, "%s: the driver reports none", g->nodev);
		return -1;
	}
	g->ndev = n < TIO_GPU_MAX_DEV ? n : TIO_GPU_MAX_DEV;
	g->version = version;
	return 0;
}

static int tio_gpu_ready(struct tio_gpu *g)
{
	pthread_once(&g->once, g->load);
	if (g->err)
		return tio_raise_errno(g->err, "%s", g->why);
	return 0;
}

/* The device, opened; NULL with an error raised. */
static struct tio_gpu_dev *tio_gpu_device(struct tio_gpu *g, int device)
{
	struct tio_gpu_dev *d;
	int r;

	if (tio_gpu_ready(g))
		return NULL;
	if (device < 0 || device >= g->ndev) {
		tio_raise_errno(EINVAL, "%s device %d: there are %d", g->name, device,
				g->ndev);
		return NULL;
	}
	d = &g->devs[device];
	if (__atomic_load_n(&d->ready, __ATOMIC_ACQUIRE))
		return d;
	pthread_mutex_lock(&g->lock);
	if (d->ready)
		goto out;
	r = g->ops->open(d, device);
	if (r) {
		pthread_mutex_unlock(&g->lock);
		tio_gpu_raise(g, r, "%s of %s device %d", g->calls[TIO_GPU_OPEN],
			      g->name, device);
		return NULL;
	}
	d->ordinal = device;
	__atomic_store_n(&d->ready, 1, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&g->lock);
	return d;
}

/* Make @d current for a call; 0, or -1 with an error raised. */
static int tio_gpu_enter(struct tio_gpu *g, const struct tio_gpu_dev *d,
			 uintptr_t *saved)
{
	int r = g->ops->enter(d, saved);

	if (r)
		return tio_gpu_raise(g, r, "%s", g->calls[TIO_GPU_ENTER]);
	return 0;
}

/* Release the tensorio streams of signals whose host function ran. */
static void tio_gpu_drain(struct tio_gpu *g)
{
	struct tio_gpu_signal *sig, *next;

	if (!__atomic_load_n(&g->done, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&g->done_lock);
	sig = g->done;
	g->done = NULL;
	pthread_mutex_unlock(&g->done_lock);
	for (; sig; sig = next) {
		next = sig->next;
		tio_stream_decref(sig->s);
		free(sig);
		tio_gpu_live_add(g, -1);
	}
}

static int core_device_count(struct tio_gpu *g, int *count)
{
	if (tio_gpu_ready(g))
		return -1;
	*count = g->ndev;
	return 0;
}

static int core_driver_version(struct tio_gpu *g, int *version)
{
	if (tio_gpu_ready(g))
		return -1;
	*version = g->version;
	return 0;
}

static int core_device_name(struct tio_gpu *g, int device, char *name, size_t len)
{
	struct tio_gpu_dev *d = tio_gpu_device(g, device);
	int r;

	if (!d)
		return -1;
	if (!name || !len || len > INT32_MAX)
		return tio_raise_errno(EINVAL, "tio_gpu_device_name (%s): no room for the name",
				       g->name);
	r = g->ops->name(d, name, (int)len);
	if (r)
		return tio_gpu_raise(g, r, "%s(%d)", g->calls[TIO_GPU_NAME], device);
	return 0;
}

static int core_device_supports(struct tio_gpu *g, int device, int cap)
{
	struct tio_gpu_dev *d = tio_gpu_device(g, device);

	if (!d)
		return -1;
	switch (cap) {
	case TIO_GPU_CAP_WAIT_VALUE64:
		return d->wait64;
	case TIO_GPU_CAP_READONLY_REGISTER:
		return d->ro_register;
	case TIO_GPU_CAP_DMABUF:
		return d->dmabuf;
	default:
		return tio_raise_errno(EINVAL, "unknown %s capability %d", g->name, cap);
	}
}

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

/* Streams. */

static int core_stream_create(struct tio_gpu *g, int device,
			      struct tio_gpu_stream **out)
{
	struct tio_gpu_dev *d = tio_gpu_device(g, device);
	struct tio_gpu_stream *cs;
	uintptr_t saved;
	int r;

	if (!d)
		return -1;
	cs = calloc(1, sizeof(*cs));
	if (!cs)
		return tio_raise_errno(ENOMEM, "%s stream", g->name);
	cs->g = g;
	cs->device = device;
	if (tio_gpu_enter(g, d, &saved))
		goto err_free;
	r = g->ops->stream_create(&cs->st);
	g->ops->leave(saved);
	if (r) {
		tio_gpu_raise(g, r, "%s on %s device %d", g->calls[TIO_GPU_STREAM_CREATE],
			      g->name, device);
		goto err_free;
	}
	tio_gpu_live_add(g, 1);
	*out = cs;
	return 0;

err_free:
	free(cs);
	return -1;
}

void tio_gpu_stream_destroy(struct tio_gpu_stream *cs)
{
	struct tio_gpu *g;
	uintptr_t saved;

	if (!cs)
		return;
	g = cs->g;
	if (cs->borrowed) {
		free(cs);
		return;
	}
	if (!g->ops->enter(&g->devs[cs->device], &saved)) {
		/* Pending host functions run before the stream goes. */
		g->ops->stream_sync(cs->st);
		g->ops->stream_destroy(cs->st);
		g->ops->leave(saved);
	}
	free(cs);
	tio_gpu_live_add(g, -1);
	tio_gpu_drain(g);
}

int tio_gpu_stream_query(struct tio_gpu_stream *cs)
{
	struct tio_gpu *g = cs->g;
	uintptr_t saved;
	int r;

	if (tio_gpu_enter(g, &g->devs[cs->device], &saved))
		return -1;
	r = g->ops->stream_query(cs->st);
	g->ops->leave(saved);
	if (r == g->not_ready)
		return 0;
	if (r)
		return tio_gpu_raise(g, r, "%s", g->calls[TIO_GPU_STREAM_QUERY]);
	tio_gpu_drain(g);
	return 1;
}

int tio_gpu_stream_sync(struct tio_gpu_stream *cs)
{
	struct tio_gpu *g = cs->g;
	uintptr_t saved;
	int r;

	if (tio_gpu_enter(g, &g->devs[cs->device], &saved))
		return -1;
	r = g->ops->stream_sync(cs->st);
	g->ops->leave(saved);
	tio_gpu_drain(g);
	if (r)
		return tio_gpu_raise(g, r, "%s", g->calls[TIO_GPU_STREAM_SYNC]);
	return 0;
}

/* Copies. */

/* Enqueue a copy to device memory (@to_device) or from it. */
static int tio_gpu_copy(struct tio_gpu_stream *cs, int to_device, uint64_t dptr,
			void *host, size_t size)
{
	struct tio_gpu *g = cs->g;
	uintptr_t saved;
	int r;

	if (!dptr || !host)
		return tio_raise_errno(EINVAL, "%s copy: NULL address",
				       to_device ? "host-to-device" : "device-to-host");
	if (tio_gpu_enter(g, &g->devs[cs->device], &saved))
		return -1;
	if (to_device)
		r = g->ops->htod(cs->st, dptr, host, size);
	else
		r = g->ops->dtoh(cs->st, host, dptr, size);
	g->ops->leave(saved);
	if (r)
		return tio_gpu_raise(g, r, "%s(%zu bytes)",
				     g->calls[to_device ? TIO_GPU_HTOD : TIO_GPU_DTOH], size);
	return 0;
}

int tio_gpu_tensor_copy(struct tio_gpu_stream *cs, tio_object_t *dst,
			tio_object_t *src)
{
	int type = cs->g->dl_type;
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
	if (s->device.device_type == kDLCPU && (int)d->device.device_type == type &&
	    d->device.device_id == cs->device)
		return n ? tio_gpu_copy(cs, 1, (uintptr_t)d->data + d->byte_offset,
					(char *)s->data + s->byte_offset, n) : 0;
	if ((int)s->device.device_type == type && d->device.device_type == kDLCPU &&
	    s->device.device_id == cs->device)
		return n ? tio_gpu_copy(cs, 0, (uintptr_t)s->data + s->byte_offset,
					(char *)d->data + d->byte_offset, n) : 0;
	return tio_raise_errno(EINVAL,
		"tensor copy: needs one CPU tensor and one %s tensor on the stream's device %d (got %d:%d -> %d:%d)",
		cs->g->name, cs->device, s->device.device_type, s->device.device_id,
		d->device.device_type, d->device.device_id);
}

/* Registered host memory: buffers and seqno pages. */

/* End the registrations of list @reg; they were made in device 0's context. */
static void tio_gpu_regs_free(struct tio_gpu_reg *reg)
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
static struct tio_gpu_reg *tio_gpu_reg_find(struct tio_gpu_reg *head,
					    struct tio_gpu *g,
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

/* Fences. */

/*
 * Whether @seqno was emitted on @s: 0, or -1 with an error raised. A
 * pending point is fine; the backend is asked directly (a poll), so that
 * the usual pending case raises nothing (an error captures a backtrace).
 */
static int tio_gpu_check_point(tio_stream_t *s, uint64_t seqno)
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

void tio_gpu_signal_run(void *data, int error)
{
	struct tio_gpu_signal *sig = data;
	struct tio_gpu *g = sig->g;

	/* No vendor call here: the backend signals (an ioctl or a futex). */
	if (tio_fence_signal(sig->s, sig->seqno, error))
		tio_error_clear();
	pthread_mutex_lock(&g->done_lock);
	sig->next = g->done;
	g->done = sig;
	pthread_mutex_unlock(&g->done_lock);
}

int tio_gpu_stream_signal_fence(struct tio_gpu_stream *cs, tio_stream_t *s,
				uint64_t seqno)
{
	struct tio_gpu *g = cs->g;
	struct tio_gpu_signal *sig;
	uintptr_t saved;
	int r;

	if (tio_gpu_ready(g))
		return -1;
	tio_gpu_drain(g);
	/* A point never emitted is refused now, not in the host function. */
	if (tio_gpu_check_point(s, seqno))
		return -1;
	sig = calloc(1, sizeof(*sig));
	if (!sig)
		return tio_raise_errno(ENOMEM, "fence signal");
	sig->g = g;
	sig->s = s;
	sig->seqno = seqno;
	tio_object_incref(&s->header);
	if (tio_gpu_enter(g, &g->devs[cs->device], &saved))
		goto err_free;
	r = g->ops->host_func(cs->st, sig);
	g->ops->leave(saved);
	if (r) {
		tio_gpu_raise(g, r, "%s (signal of point %llu)", g->calls[TIO_GPU_HOST_FUNC],
			      (unsigned long long)seqno);
		goto err_free;
	}
	tio_gpu_live_add(g, 1);
	return 0;

err_free:
	tio_stream_decref(s);
	free(sig);
	return -1;
}

int tio_gpu_stream_record_fence(struct tio_gpu_stream *cs, tio_stream_t *s,
				uint64_t *seqno)
{
	uint64_t n;

	if (tio_gpu_ready(cs->g))
		return -1;
	if (tio_fence_emit(s, &n))
		return -1;
	if (tio_gpu_stream_signal_fence(cs, s, n)) {
		/* The point must not stay pending forever: signal it failed. */
		tio_object_t *e = tio_error_move_from_raised();
		int err = tio_errno();

		tio_fence_signal(s, n, -ECANCELED);
		tio_error_set_raised(e);
		tio_set_errno(err);
		return -1;
	}
	*seqno = n;
	return 0;
}

/* The stream's finalizer: end every vendor's seqno page registration. */
static void tio_gpu_stream_release(void *obj)
{
	struct tio_stream *s = obj;

	tio_gpu_regs_free(s->gpu);
	s->gpu = NULL;
	s->gpu_unregister = NULL;
}

/* @g's registration of @s's seqno page, made on first use; under s->lock. */
static struct tio_gpu_wordreg *tio_gpu_wordreg(struct tio_gpu *g, tio_stream_t *s,
					       const volatile uint64_t *w)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct tio_gpu_reg *found, *prev;
	struct tio_gpu_wordreg *reg;
	uintptr_t saved;
	int r;

	found = tio_gpu_reg_find(s->gpu, g, &prev);
	if (found)
		return (struct tio_gpu_wordreg *)found;
	reg = calloc(1, sizeof(*reg));
	if (!reg) {
		tio_raise_errno(ENOMEM, "seqno word registration");
		return NULL;
	}
	reg->reg.g = g;
	reg->reg.addr = (void *)((uintptr_t)w & ~(uintptr_t)(page - 1));
	reg->off = (uintptr_t)w - (uintptr_t)reg->reg.addr;
	if (tio_gpu_enter(g, &g->devs[0], &saved))
		goto err_free;
	/* The page is mapped read-only: the GPU only reads it. */
	r = g->ops->host_register(reg->reg.addr, page, 1);
	g->ops->leave(saved);
	if (r) {
		tio_gpu_raise(g, r, "%s(READ_ONLY) of the seqno word of stream %lld",
			      g->calls[TIO_GPU_HOST_REGISTER], (long long)s->handle);
		goto err_free;
	}
	reg->reg.next = s->gpu;
	s->gpu = &reg->reg;
	s->gpu_unregister = tio_gpu_stream_release;
	tio_gpu_live_add(g, 1);
	return reg;

err_free:
	free(reg);
	return NULL;
}

/* The device address of @s's seqno word on @cs's device; 0 or -1 raised. */
static int tio_gpu_word_dptr(struct tio_gpu_stream *cs, tio_stream_t *s, uint64_t *out)
{
	struct tio_gpu *g = cs->g;
	const volatile uint64_t *w;
	struct tio_gpu_wordreg *reg;
	uintptr_t saved;
	int r;

	w = tio_stream_seqno_word(s);
	if (!w)
		return -1;
	pthread_mutex_lock(&s->lock);
	reg = tio_gpu_wordreg(g, s, w);
	if (!reg)
		goto err_unlock;
	if (reg->dptr[cs->device])
		goto out;
	if (tio_gpu_enter(g, &g->devs[cs->device], &saved))
		goto err_unlock;
	r = g->ops->host_dptr(&reg->dptr[cs->device], reg->reg.addr);
	g->ops->leave(saved);
	if (r) {
		reg->dptr[cs->device] = 0;
		tio_gpu_raise(g, r, "%s of a seqno word", g->calls[TIO_GPU_HOST_DPTR]);
		goto err_unlock;
	}
out:
	*out = reg->dptr[cs->device] + reg->off;
	pthread_mutex_unlock(&s->lock);
	return 0;

err_unlock:
	pthread_mutex_unlock(&s->lock);
	return -1;
}

int tio_gpu_stream_wait_fence(struct tio_gpu_stream *cs, tio_stream_t *s,
			      uint64_t seqno)
{
	struct tio_gpu *g = cs->g;
	struct tio_gpu_dev *d;
	uintptr_t saved;
	uint64_t w = 0;
	int r;

	/* The seqno page is registered in device 0's context. */
	if (!tio_gpu_device(g, 0))
		return -1;
	d = &g->devs[cs->device];
	if (!d->wait64)
		return tio_raise_errno(EOPNOTSUPP,
			"fence -> stream: %s device %d lacks 64-bit stream memory operations (%s)",
			g->name, cs->device, g->calls[TIO_GPU_WAIT64]);
	if (!g->devs[0].ro_register || !d->ro_register)
		return tio_raise_errno(EOPNOTSUPP,
			"fence -> stream: %s device %d cannot register read-only host memory (the seqno word)",
			g->name, cs->device);
	/* A point never emitted would stall the GPU for ever: refuse it. */
	if (tio_gpu_check_point(s, seqno))
		return -1;
	if (tio_gpu_word_dptr(cs, s, &w))
		return -1;
	if (tio_gpu_enter(g, d, &saved))
		return -1;
	r = g->ops->wait64(cs->st, w, seqno);
	g->ops->leave(saved);
	if (r)
		return tio_gpu_raise(g, r, "%s (point %llu)", g->calls[TIO_GPU_WAIT64],
				     (unsigned long long)seqno);
	return 0;
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


/*
 * The public API (tensorio/gpu.h): the vendor is the one of the DLPack
 * device type; everything else is the core's.
 */
static struct tio_gpu *const tio_gpu_vendors[] = {
	[kDLCUDA] = &tio_gpu_cuda,
	[kDLROCM] = &tio_gpu_hip,
};

static struct tio_gpu *tio_gpu_vendor(DLDeviceType type)
{
	if ((unsigned int)type < sizeof(tio_gpu_vendors) / sizeof(tio_gpu_vendors[0]) &&
	    tio_gpu_vendors[type])
		return tio_gpu_vendors[type];
	tio_raise_errno(EINVAL, "device type %d is not a GPU (kDLCUDA %d or kDLROCM %d)",
			(int)type, (int)kDLCUDA, (int)kDLROCM);
	return NULL;
}

int tio_gpu_init(DLDeviceType type)
{
	struct tio_gpu *g = tio_gpu_vendor(type);

	return g ? tio_gpu_ready(g) : -1;
}

int tio_gpu_device_count(DLDeviceType type, int *count)
{
	struct tio_gpu *g = tio_gpu_vendor(type);

	return g ? core_device_count(g, count) : -1;
}

int tio_gpu_driver_version(DLDeviceType type, int *version)
{
	struct tio_gpu *g = tio_gpu_vendor(type);

	return g ? core_driver_version(g, version) : -1;
}

int tio_gpu_device_name(DLDevice dev, char *name, size_t len)
{
	struct tio_gpu *g = tio_gpu_vendor(dev.device_type);

	return g ? core_device_name(g, dev.device_id, name, len) : -1;
}

int tio_gpu_device_supports(DLDevice dev, int cap)
{
	struct tio_gpu *g = tio_gpu_vendor(dev.device_type);

	return g ? core_device_supports(g, dev.device_id, cap) : -1;
}

int tio_gpu_tensor_empty(DLDevice dev, int32_t ndim, const int64_t *shape,
			 DLDataType dtype, tio_object_t **out)
{
	struct tio_gpu *g = tio_gpu_vendor(dev.device_type);

	return g ? core_tensor_empty(g, dev.device_id, ndim, shape, dtype, out) : -1;
}

int tio_gpu_stream_create(DLDevice dev, tio_gpu_stream_t **out)
{
	struct tio_gpu *g = tio_gpu_vendor(dev.device_type);

	return g ? core_stream_create(g, dev.device_id, out) : -1;
}


int tio_gpu_stream_wrap(DLDevice dev, void *handle, tio_gpu_stream_t **out)
{
	struct tio_gpu *g = tio_gpu_vendor(dev.device_type);
	struct tio_gpu_stream *cs;

	if (!g || !tio_gpu_device(g, dev.device_id))
		return -1;
	cs = calloc(1, sizeof(*cs));
	if (!cs)
		return tio_raise_errno(ENOMEM, "%s stream", g->name);
	cs->g = g;
	cs->device = dev.device_id;
	cs->st = handle;
	cs->borrowed = 1;
	*out = cs;
	return 0;
}

void *tio_gpu_stream_handle(const tio_gpu_stream_t *gs)
{
	return gs->st;
}

DLDevice tio_gpu_stream_device(const tio_gpu_stream_t *gs)
{
	return (DLDevice){ gs->g->dl_type, gs->device };
}



int tio_gpu_copy_htod(tio_gpu_stream_t *gs, uint64_t dst, const void *src, size_t size)
{
	return tio_gpu_copy(gs, 1, dst, (void *)(uintptr_t)src, size);
}

int tio_gpu_copy_dtoh(tio_gpu_stream_t *gs, void *dst, uint64_t src, size_t size)
{
	return tio_gpu_copy(gs, 0, src, dst, size);
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

int64_t tio_gpu_debug_live(DLDeviceType type)
{
	struct tio_gpu *g = tio_gpu_vendor(type);

	return g ? __atomic_load_n(&g->live, __ATOMIC_RELAXED) : -1;
}
