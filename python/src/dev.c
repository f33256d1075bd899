// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The extension's compound calls into libtensorio's device half (the rest
 * call the library directly): info, tensor views and empty tensors, and
 * the few steps that take more than one library call.
 */
#include <string.h>

#include "dev.h"

int pt_dev_info(struct pt_info *out)
{
	struct tio_driver_info i;

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

/* TIO_FEAT_* bit @bit by name, or NULL. */
const char *pt_dev_feature_name(int bit)
{
	static const char *const names[] = {
		"buffers", "pin_user", "dmabuf", "streams", "sync_file",
		"dma_resv", "uring_cmd", "submit", "async_wait", "ring",
	};

	return bit >= 0 && bit < (int)(sizeof(names) / sizeof(names[0])) ? names[bit] : NULL;
}

/* A view of @buf: dense, or with @strides, at @offset. */
int pt_buffer_view(tio_buffer_t *buf, int ndim, const int64_t *shape,
		   const int64_t *strides, DLDataType dt, uint64_t offset,
		   tio_object_t **out)
{
	struct tio_desc d;
	int i;

	if (tio_desc_init(&d, dt, ndim, shape))
		return -1;
	d.byte_offset = offset;
	if (strides) {
		for (i = 0; i < ndim; i++)
			d.strides[i] = strides[i];
		d.flags |= TIO_DESC_F_STRIDED;
	}
	if (tio_desc_check(&d, tio_buffer_size(buf)))
		return -1;
	return tio_buffer_tensor(buf, &d, out);
}

int pt_empty(int ndim, const int64_t *shape, DLDataType dt, tio_object_t **out)
{
	struct tio_desc d;
	tio_buffer_t *buf;
	int ret;

	/* Size 0: the descriptor's (an empty tensor still gets a page). */
	if (tio_desc_init(&d, dt, ndim, shape) || tio_buffer_alloc(0, &d, &buf))
		return -1;
	ret = tio_buffer_tensor(buf, NULL, out);
	tio_buffer_decref(buf);
	return ret;
}

int pt_stream_signalled(tio_stream_t *s, uint64_t *seqno)
{
	if (!tio_stream_seqno_word(s))
		return -1;
	*seqno = tio_stream_signalled(s);
	return 0;
}

/* Wait for every entry (asynchronous waits included). */
int pt_batch_wait_all(tio_batch_t *b, int64_t timeout_ns)
{
	int64_t n = tio_batch_count(b);

	return n && tio_batch_wait(b, n, timeout_ns) < 0 ? -1 : 0;
}
