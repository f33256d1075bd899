/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtensorio's device half as the extension uses it: its headers, and the
 * few compound helpers of dev.c. Each helper returns 0 or -1 with an error
 * raised in libtensorio; none touches Python, so callers may drop the GIL
 * around them.
 */
#ifndef TENSORIO_PY_DEV_H
#define TENSORIO_PY_DEV_H

#include <stddef.h>
#include <stdint.h>

#include <tensorio/batch.h>
#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/buffer.h>
#include <tensorio/stream.h>
#include <tensorio/safetensors.h>
#include <tensorio/tensor.h>

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

int pt_dev_info(struct pt_info *out);
const char *pt_dev_feature_name(int bit);
int pt_buffer_view(tio_buffer_t *buf, int ndim, const int64_t *shape,
		   const int64_t *strides, DLDataType dt, uint64_t offset,
		   tio_object_t **out);
int pt_empty(int ndim, const int64_t *shape, DLDataType dt, tio_object_t **out);
int pt_stream_signalled(tio_stream_t *s, uint64_t *seqno);
int pt_batch_wait_all(tio_batch_t *b, int64_t timeout_ns);

#endif /* TENSORIO_PY_DEV_H */
