// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The extension's only calls into libtensorio's device half: context,
 * buffers, streams, batches and safetensors. Small on purpose, so that a
 * renamed library API is an edit here and nowhere else.
 */
#include <errno.h>
#include <string.h>

#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/gpu.h>
#include <tensorio/tensor.h>

#include "dev.h"

int pt_dev_init(void)
{
	return tio_init();
}

void pt_dev_register_globals(void)
{
	tio_device_register_globals();
}

int pt_dev_errno(void)
{
	return tio_errno();
}

const char *pt_dev_backend(void)
{
	return tio_backend_name();
}

int pt_dev_info(struct pt_info *out)
{
	struct tio_info i;

	memset(out, 0, sizeof(*out));
	out->backend = tio_backend_name();
	if (!out->backend || tio_driver_info(&i))
		return -1;
	out->version = i.version;
	out->features = i.features;
	out->max_buf_size = i.max_buf_size;
	out->max_pinned = i.max_pinned;
	out->pinned = i.pinned;
	out->max_submit = i.max_submit;
	return 0;
}

int64_t pt_dev_live_handles(void)
{
	return tio_debug_live_handles();
}

/* TIO_FEAT_* bit @bit by name, or NULL. */
const char *pt_dev_feature_name(int bit)
{
	static const char *const names[] = {
		"buffers", "pin_user", "dmabuf", "streams", "sync_file",
		"dma_resv", "uring_cmd", "submit", "async_wait",
	};

	return bit >= 0 && bit < (int)(sizeof(names) / sizeof(names[0])) ? names[bit] : NULL;
}

int pt_buffer_alloc(size_t size, tio_buffer_t **out)
{
	return tio_buffer_alloc(size, NULL, out);
}

/* A descriptor for a compact (or @strides) tensor of @dt at @offset. */
static int pt_desc_fill(struct tio_tensor_desc *d, int ndim, const int64_t *shape,
			const int64_t *strides, DLDataType dt, uint64_t offset)
{
	int i;

	memset(d, 0, sizeof(*d));
	if (ndim < 0 || ndim > TIO_MAX_NDIM)
		return tio_error_raise("ValueError",
				       "%d dimensions: a tensorio buffer holds at most %d",
				       ndim, TIO_MAX_NDIM);
	d->code = dt.code;
	d->bits = dt.bits;
	d->lanes = dt.lanes;
	d->ndim = (uint16_t)ndim;
	d->byte_offset = offset;
	for (i = 0; i < ndim; i++) {
		d->shape[i] = shape[i];
		if (strides)
			d->strides[i] = strides[i];
	}
	if (strides)
		d->flags |= TIO_DESC_F_STRIDED;
	return 0;
}

int pt_buffer_view(tio_buffer_t *buf, int ndim, const int64_t *shape,
		   const int64_t *strides, DLDataType dt, uint64_t offset,
		   tio_object_t **out)
{
	struct tio_tensor_desc d;

	if (pt_desc_fill(&d, ndim, shape, strides, dt, offset) ||
	    tio_desc_check(&d, tio_buffer_size(buf)))
		return -1;
	return tio_buffer_tensor(buf, &d, out);
}

int pt_empty(int ndim, const int64_t *shape, DLDataType dt, tio_object_t **out)
{
	struct tio_tensor_desc d;
	uint64_t bytes = (dt.bits * (uint64_t)dt.lanes + 7) / 8;
	tio_buffer_t *buf;
	int i, ret;

	if (pt_desc_fill(&d, ndim, shape, NULL, dt, 0))
		return -1;
	for (i = 0; i < ndim; i++) {
		if (shape[i] < 0)
			return tio_error_raise("ValueError", "negative dimension %lld",
					       (long long)shape[i]);
		if (shape[i] && bytes > UINT64_MAX / (uint64_t)shape[i])
			return tio_error_raise("ValueError", "shape too large");
		bytes *= (uint64_t)shape[i];
	}
	/* An empty tensor still gets a page: buffers are never zero-sized. */
	if (tio_buffer_alloc(bytes ? bytes : 1, &d, &buf))
		return -1;
	ret = tio_buffer_tensor(buf, NULL, out);
	tio_buffer_decref(buf);
	return ret;
}

int pt_buffer_export(tio_buffer_t *buf, int *fd)
{
	return tio_buffer_export(buf, TIO_EXPORT_F_CLOEXEC | TIO_EXPORT_F_RDWR, fd);
}

int pt_buffer_import(int fd, tio_buffer_t **out)
{
	return tio_buffer_import(fd, out);
}

void *pt_buffer_data(tio_buffer_t *buf)
{
	return tio_buffer_data(buf);
}

size_t pt_buffer_size(const tio_buffer_t *buf)
{
	return tio_buffer_size(buf);
}

uint32_t pt_buffer_handle(const tio_buffer_t *buf)
{
	return tio_buffer_handle(buf);
}

void pt_buffer_release(tio_buffer_t *buf)
{
	tio_buffer_decref(buf);
}

int pt_stream_create(tio_stream_t **out)
{
	return tio_stream_create(out);
}

void pt_stream_release(tio_stream_t *s)
{
	tio_stream_decref(s);
}

uint32_t pt_stream_handle(const tio_stream_t *s)
{
	return tio_stream_handle(s);
}

int pt_stream_emit(tio_stream_t *s, uint64_t *seqno)
{
	return tio_fence_emit(s, seqno);
}

int pt_stream_signal(tio_stream_t *s, uint64_t seqno, int error)
{
	return tio_fence_signal(s, seqno, error);
}

int pt_stream_wait(tio_stream_t *s, uint64_t seqno, int64_t timeout_ns, int *status)
{
	return tio_fence_wait(s, seqno, timeout_ns, status);
}

int pt_stream_signalled(tio_stream_t *s, uint64_t *seqno)
{
	if (!tio_stream_seqno_word(s))
		return -1;
	*seqno = tio_stream_signalled(s);
	return 0;
}

int pt_stream_export_sync_file(tio_stream_t *s, uint64_t seqno, int *fd)
{
	return tio_fence_export(s, seqno, TIO_EXPORT_F_CLOEXEC, fd);
}

int pt_stream_import_sync_file(tio_stream_t *s, int fd, uint64_t *seqno)
{
	return tio_fence_import(s, fd, seqno);
}

int pt_batch_new(tio_batch_t **out)
{
	return tio_batch_new(0, out);
}

void pt_batch_free(tio_batch_t *b)
{
	tio_batch_free(b);
}

int64_t pt_batch_add(tio_batch_t *b, tio_object_t *func, const tio_any_t *args,
		     int32_t nargs)
{
	return tio_batch_add(b, func, args, nargs);
}

int pt_batch_submit(tio_batch_t *b)
{
	return tio_batch_submit(b);
}

/* Wait for every entry (asynchronous waits included). */
int pt_batch_wait_all(tio_batch_t *b, int64_t timeout_ns)
{
	int64_t n = tio_batch_count(b);

	return n && tio_batch_wait(b, n, timeout_ns) < 0 ? -1 : 0;
}

int64_t pt_batch_count(const tio_batch_t *b)
{
	return tio_batch_count(b);
}

int pt_batch_status(const tio_batch_t *b, int64_t i)
{
	return tio_batch_status(b, i);
}

int pt_batch_result(tio_batch_t *b, int64_t i, tio_any_t *out)
{
	return tio_batch_result(b, i, out);
}

int64_t pt_batch_enters(const tio_batch_t *b)
{
	return tio_batch_enters(b);
}

int pt_st_load(const char *path, tio_safetensors_t **out)
{
	return tio_safetensors_load(path, out);
}

void pt_st_free(tio_safetensors_t *st)
{
	tio_safetensors_free(st);
}

int64_t pt_st_count(const tio_safetensors_t *st)
{
	return tio_safetensors_count(st);
}

const char *pt_st_name(const tio_safetensors_t *st, int64_t i)
{
	return tio_safetensors_name(st, i);
}

int pt_st_tensor(const tio_safetensors_t *st, const char *name, tio_object_t **out)
{
	return tio_safetensors_tensor(st, name, out);
}

int pt_st_save(const char *path, const char *const *names,
	       const DLTensor *const *tensors, int64_t n)
{
	return tio_safetensors_save(path, names, tensors, n);
}

/*
 * Copy @n CPU tensors to new tensors on CUDA device @device (@dst, owned;
 * all or none). The sources stay alive until the copies are done.
 */
int pt_tensors_to_cuda(int device, tio_object_t *const *src, tio_object_t **dst,
		       int64_t n)
{
	DLDevice dev = { kDLCUDA, device };
	tio_gpu_stream_t *cs;
	int64_t i, made = 0;
	DLTensor *dl;
	int rc = -1;

	if (tio_gpu_init(kDLCUDA) || tio_gpu_stream_create(dev, &cs))
		return -1;
	for (; made < n; made++) {
		dl = tio_tensor_dl(src[made]);
		if (tio_gpu_tensor_empty(dev, dl->ndim, dl->shape, dl->dtype, &dst[made]))
			goto out;
		if (tio_gpu_tensor_copy(cs, dst[made], src[made])) {
			tio_object_decref(dst[made]);
			goto out;
		}
	}
	rc = tio_gpu_stream_sync(cs);
out:
	tio_gpu_stream_destroy(cs);
	if (rc)
		for (i = 0; i < made; i++)
			tio_object_decref(dst[i]);
	return rc;
}
