// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * GPUs, backend-neutral (tensorio/gpu.h): what CUDA and HIP share, driven
 * by a vendor's struct tio_gpu (gpu_internal.h: the operations table and
 * the locking rules). This file loads a vendor, opens its devices, names
 * its errors and picks the vendor of a DLDevice; device memory
 * (gpu_mem.c), streams and copies (gpu_stream.c) and fences (gpu_fence.c)
 * build on it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <tensorio/error.h>
#include <tensorio/gpu.h>

#include "dev/dev_internal.h"
#include "gpu/gpu_internal.h"

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

int tio_gpu_raise(struct tio_gpu *g, int r, const char *fmt, ...)
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

int tio_gpu_ready(struct tio_gpu *g)
{
	pthread_once(&g->once, g->load);
	if (g->err)
		return tio_raise_errno(g->err, "%s", g->why);
	return 0;
}

/* The device, opened; NULL with an error raised. */
struct tio_gpu_dev *tio_gpu_device(struct tio_gpu *g, int device)
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
int tio_gpu_enter(struct tio_gpu *g, const struct tio_gpu_dev *d, uintptr_t *saved)
{
	int r = g->ops->enter(d, saved);

	if (r)
		return tio_gpu_raise(g, r, "%s", g->calls[TIO_GPU_ENTER]);
	return 0;
}

/* Whether the doorbell write of @sig landed. */
static int tio_gpu_landed(const struct tio_gpu_signal *sig)
{
	return __atomic_load_n(sig->s->bell, __ATOMIC_ACQUIRE) >= sig->seqno;
}

/*
 * Release the tensorio streams of signals whose host function ran, and of
 * doorbell writes that landed.
 */
void tio_gpu_drain(struct tio_gpu *g)
{
	struct tio_gpu_signal *sig, *next, **pp;

	/* A look without the lock: the lists' heads are stored atomically. */
	if (!__atomic_load_n(&g->done, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&g->writes, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&g->done_lock);
	sig = g->done;
	__atomic_store_n(&g->done, NULL, __ATOMIC_RELAXED);
	/* Landed writes join them: their stream may go now. */
	for (pp = &g->writes; *pp;) {
		next = *pp;
		if (tio_gpu_landed(next)) {
			/* The list's head is also read without the lock. */
			__atomic_store_n(pp, next->next, __ATOMIC_RELAXED);
			next->next = sig;
			sig = next;
		} else {
			pp = &next->next;
		}
	}
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
	case TIO_GPU_CAP_WRITE_VALUE64:
		return d->write64;
	case TIO_GPU_CAP_READONLY_REGISTER:
		return d->ro_register;
	case TIO_GPU_CAP_DMABUF:
		return d->dmabuf;
	default:
		return tio_raise_errno(EINVAL, "unknown %s capability %d", g->name, cap);
	}
}

/*
 * The public API (tensorio/gpu.h): the vendor is the one of the DLPack
 * device type; everything else is the core's.
 */
static struct tio_gpu *const tio_gpu_vendors[] = {
	[kDLCUDA] = &tio_gpu_cuda,
	[kDLROCM] = &tio_gpu_hip,
};

struct tio_gpu *tio_gpu_vendor(DLDeviceType type)
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

int64_t tio_gpu_debug_live(DLDeviceType type)
{
	struct tio_gpu *g = tio_gpu_vendor(type);

	return g ? __atomic_load_n(&g->live, __ATOMIC_RELAXED) : -1;
}
