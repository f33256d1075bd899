// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * GPU streams (tensorio/gpu.h): a vendor's non-blocking stream on one
 * device, and the copies enqueued on it between host and device memory.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <tensorio/error.h>
#include <tensorio/gpu.h>
#include <tensorio/tensor.h>

#include "dev/dev_internal.h"
#include "gpu/gpu_internal.h"

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

int tio_gpu_copy_htod(tio_gpu_stream_t *gs, uint64_t dst, const void *src, size_t size)
{
	return tio_gpu_copy(gs, 1, dst, (void *)(uintptr_t)src, size);
}

int tio_gpu_copy_dtoh(tio_gpu_stream_t *gs, void *dst, uint64_t src, size_t size)
{
	return tio_gpu_copy(gs, 0, src, dst, size);
}
