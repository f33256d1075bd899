/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The extension's view of libtensorio's device half (dev.c). Each returns
 * 0 (or a documented value) or -1 with an error raised in libtensorio;
 * none touches Python, so callers may drop the GIL around them.
 */
#ifndef TENSORIO_PY_DEV_H
#define TENSORIO_PY_DEV_H

#include <stddef.h>
#include <stdint.h>

#include <tensorio/batch.h>
#include <tensorio/buffer.h>
#include <tensorio/stream.h>
#include <tensorio/safetensors.h>

/* What tensorio.info() reports. */
struct pt_info {
	const char *backend;
	uint32_t version;
	uint64_t features;
	uint64_t max_buf_size;
	uint64_t max_pinned;
	uint64_t pinned;
	uint32_t max_submit;
};

int pt_dev_init(void);
void pt_dev_register_globals(void);
int pt_dev_errno(void);
const char *pt_dev_backend(void);
int pt_dev_info(struct pt_info *out);
int64_t pt_dev_live_handles(void);
const char *pt_dev_feature_name(int bit);

int pt_buffer_alloc(size_t size, tio_buffer_t **out);
int pt_buffer_view(tio_buffer_t *buf, int ndim, const int64_t *shape,
		   const int64_t *strides, DLDataType dt, uint64_t offset,
		   tio_object_t **out);
int pt_empty(int ndim, const int64_t *shape, DLDataType dt, tio_object_t **out);
int pt_buffer_export(tio_buffer_t *buf, int *fd);
int pt_buffer_import(int fd, tio_buffer_t **out);
void *pt_buffer_data(tio_buffer_t *buf);
size_t pt_buffer_size(const tio_buffer_t *buf);
uint32_t pt_buffer_handle(const tio_buffer_t *buf);
void pt_buffer_release(tio_buffer_t *buf);

int pt_stream_create(tio_stream_t **out);
void pt_stream_release(tio_stream_t *s);
uint32_t pt_stream_handle(const tio_stream_t *s);
int pt_stream_emit(tio_stream_t *s, uint64_t *seqno);
int pt_stream_signal(tio_stream_t *s, uint64_t seqno, int error);
int pt_stream_wait(tio_stream_t *s, uint64_t seqno, int64_t timeout_ns, int *status);
int pt_stream_signalled(tio_stream_t *s, uint64_t *seqno);
int pt_stream_export_sync_file(tio_stream_t *s, uint64_t seqno, int *fd);
int pt_stream_import_sync_file(tio_stream_t *s, int fd, uint64_t *seqno);

int pt_batch_new(tio_batch_t **out);
void pt_batch_free(tio_batch_t *b);
int64_t pt_batch_add(tio_batch_t *b, tio_object_t *func, const tio_any_t *args,
		     int32_t nargs);
int pt_batch_submit(tio_batch_t *b);
int pt_batch_wait_all(tio_batch_t *b, int64_t timeout_ns);
int64_t pt_batch_count(const tio_batch_t *b);
int pt_batch_status(const tio_batch_t *b, int64_t i);
int pt_batch_result(tio_batch_t *b, int64_t i, tio_any_t *out);
int64_t pt_batch_enters(const tio_batch_t *b);

int pt_st_load(const char *path, tio_safetensors_t **out);
void pt_st_free(tio_safetensors_t *st);
int64_t pt_st_count(const tio_safetensors_t *st);
const char *pt_st_name(const tio_safetensors_t *st, int64_t i);
int pt_st_tensor(const tio_safetensors_t *st, const char *name, tio_object_t **out);
int pt_tensors_to_cuda(int device, tio_object_t *const *src, tio_object_t **dst,
		       int64_t n);
int pt_st_save(const char *path, const char *const *names,
	       const DLTensor *const *tensors, int64_t n);

#endif /* TENSORIO_PY_DEV_H */
