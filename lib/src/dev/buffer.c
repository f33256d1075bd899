// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tio.Buffer: an FFI object owning one backend buffer handle.
 *
 * Locking: buf->lock guards the lazily created mapping; everything else is
 * set once before the object is published.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <tensorio/error.h>
#include <tensorio/tensor.h>

#include "dev/dev_internal.h"

static void tio_buffer_finalize(void *self)
{
	struct tio_buffer *buf = self;
	struct tio_handle_op op = { .handle = (uint32_t)buf->handle };

	if (buf->gpu_unregister)
		buf->gpu_unregister(buf);
	if (buf->recycle) {
		buf->recycle(buf);
	} else {
		if (buf->mapped)
			buf->ctx->ops->unmap(buf->ctx, buf->data, (size_t)buf->size);
		/* Cannot fail for a handle we own; nothing to report to anyway. */
		buf->ctx->ops->exec(buf->ctx, tio_cmds[TIO_CMD_BUF_FREE].op, &op);
	}
	pthread_mutex_destroy(&buf->lock);
	tio_ctx_put(buf->ctx, 1);
	/* Last: the owner may free the memory only once it is unpinned. */
	if (buf->release)
		buf->release(buf->release_arg);
}

/**
 * tio_buffer_wrap() - make the object for a buffer handle just created
 * @ctx: the context
 * @handle: the handle (freed here on failure)
 * @kind: TIO_BUF_KIND_*
 * @size: its size
 * @mmap_offset: its mmap offset
 * @user_addr: for pinned user memory, the memory; else NULL
 * @out: the object
 *
 * Return: 0, or -1 with an error raised.
 */
int tio_buffer_wrap(struct tio_ctx *ctx, uint32_t handle, uint32_t kind,
		    uint64_t size, uint64_t mmap_offset, void *user_addr,
		    tio_buffer_t **out)
{
	struct tio_handle_op op = { .handle = handle };
	int32_t type = tio_buffer_type_index();
	struct tio_buffer *buf = NULL;

	if (type >= 0)
		buf = tio_object_alloc(sizeof(*buf), type, tio_buffer_finalize);
	if (!buf) {
		ctx->ops->exec(ctx, tio_cmds[TIO_CMD_BUF_FREE].op, &op);
		return -1;
	}
	buf->handle = handle;
	buf->kind = kind;
	buf->size = (int64_t)size;
	buf->mmap_offset = mmap_offset;
	buf->data = user_addr;
	buf->ctx = ctx;
	pthread_mutex_init(&buf->lock, NULL);
	tio_ctx_hold(ctx, 1);
	*out = buf;
	return 0;
}

/**
 * tio_buffer_from_payload() - the object for a buffer a command just made
 * @ctx: the context
 * @cmd: the command (BUF_ALLOC, BUF_PIN_USER, BUF_IMPORT): its row says
 *	where the handle, size, mmap offset and user address are
 * @p: its completed payload
 * @out: the object, owning the handle
 *
 * Return: 0, or -1 with an error raised (the handle is freed then).
 */
int tio_buffer_from_payload(struct tio_ctx *ctx, const struct tio_cmd_desc *cmd,
			    const void *p, tio_buffer_t **out)
{
	const struct tio_cmd_buf_ret *r = &cmd->buf;
	uint64_t size, mmap_offset, pg = ctx->page_size, a = 0;
	uint32_t handle;

	memcpy(&handle, (const char *)p + cmd->ret_offset, sizeof(handle));
	memcpy(&size, (const char *)p + r->size, sizeof(size));
	memcpy(&mmap_offset, (const char *)p + r->mmap_offset, sizeof(mmap_offset));
	/* An allocation is whole pages; the driver reports the size asked. */
	if (r->kind == TIO_BUF_KIND_ALLOC)
		size = (size + pg - 1) & ~(pg - 1);
	if (r->kind == TIO_BUF_KIND_USER)
		memcpy(&a, (const char *)p + r->addr, sizeof(a));
	return tio_buffer_wrap(ctx, handle, r->kind, size, mmap_offset,
			       (void *)(uintptr_t)a, out);
}

/* Run a command whose result is a new buffer, from its @n arguments @v. */
static inline __attribute__((always_inline)) int
tio_buffer_new(enum tio_cmd_id id, const int64_t *v, int32_t n,
	       tio_buffer_t **out)
{
	const struct tio_cmd_desc *cmd = &tio_cmds[id];
	struct tio_ctx *ctx = tio_ctx_get();
	struct tio_cmd c;

	if (TIO_UNLIKELY(!ctx) || tio_cmd_fill(cmd, c.payload.bytes, v, n) ||
	    tio_exec(ctx, cmd, c.payload.bytes))
		return -1;
	return tio_buffer_from_payload(ctx, cmd, c.payload.bytes, out);
}

int tio_buffer_alloc(size_t size, const struct tio_desc *desc,
		     tio_buffer_t **out)
{
	int64_t v[2] = { (int64_t)size, (int64_t)(uintptr_t)tio_desc_uapi(desc) };
	uint64_t bytes;

	/* No size: the descriptor's. */
	if (!size && desc) {
		if (tio_desc_nbytes(desc, &bytes))
			return -1;
		v[0] = bytes ? (int64_t)bytes : 1;
	}
	return tio_buffer_new(TIO_CMD_BUF_ALLOC, v, 2, out);
}

int tio_buffer_pin(void *addr, size_t size, unsigned int flags, tio_buffer_t **out)
{
	int64_t v[3] = { (int64_t)(uintptr_t)addr, (int64_t)size, flags };

	return tio_buffer_new(TIO_CMD_BUF_PIN_USER, v, 3, out);
}

int tio_buffer_pin_owned(void *addr, size_t size, unsigned int flags,
			 void (*release)(void *arg), void *arg, tio_buffer_t **out)
{
	if (!release)
		return tio_raise_errno(EINVAL, "tio_buffer_pin_owned: no release function");
	if (tio_buffer_pin(addr, size, flags, out))
		return -1;
	(*out)->release = release;
	(*out)->release_arg = arg;
	return 0;
}

int tio_buffer_import(int fd, tio_buffer_t **out)
{
	int64_t v = fd;

	return tio_buffer_new(TIO_CMD_BUF_IMPORT, &v, 1, out);
}

/*
 * Run a command on @buf (v[0]) and its other arguments v[1..n-1], with the
 * context @buf holds; the payload stays in @c.
 */
static inline __attribute__((always_inline)) int
tio_buffer_cmd(enum tio_cmd_id id, tio_buffer_t *buf, int64_t *v,
	       int32_t n, struct tio_cmd *c)
{
	const struct tio_cmd_desc *cmd = &tio_cmds[id];

	if (TIO_UNLIKELY(!buf))
		return tio_cmd_arg_error(cmd, 0, "a tio.Buffer");
	return tio_cmd_on(cmd, buf->ctx, buf->handle, v, n, c->payload.bytes);
}

int tio_buffer_export(tio_buffer_t *buf, unsigned int flags, int *fd)
{
	int64_t v[2] = { 0, flags };
	struct tio_cmd c;

	if (tio_buffer_cmd(TIO_CMD_BUF_EXPORT, buf, v, 2, &c))
		return -1;
	*fd = ((struct tio_buf_export *)c.payload.bytes)->fd;
	return 0;
}

void *tio_buffer_data(tio_buffer_t *buf)
{
	void *p;
	int ret;

	pthread_mutex_lock(&buf->lock);
	p = buf->data;
	if (!p) {
		ret = buf->ctx->ops->map(buf->ctx, buf->mmap_offset, (size_t)buf->size,
					 PROT_READ | PROT_WRITE, &p);
		if (ret < 0) {
			pthread_mutex_unlock(&buf->lock);
			tio_raise_errno(ret, "mapping buffer %lld (%lld bytes)",
					(long long)buf->handle, (long long)buf->size);
			return NULL;
		}
		buf->data = p;
		buf->mapped = !ret;	/* 1: the backend's own mapping */
	}
	pthread_mutex_unlock(&buf->lock);
	return p;
}

size_t tio_buffer_size(const tio_buffer_t *buf)
{
	return (size_t)buf->size;
}

uint32_t tio_buffer_handle(const tio_buffer_t *buf)
{
	return (uint32_t)buf->handle;
}

int tio_buffer_info(tio_buffer_t *buf, struct tio_buffer_info *info,
		    struct tio_desc *desc)
{
	int64_t v[2] = { 0, (int64_t)(uintptr_t)tio_desc_uapi(desc) };
	struct tio_buf_info bi;
	struct tio_cmd c;

	if (tio_buffer_cmd(TIO_CMD_BUF_INFO, buf, v, 2, &c))
		return -1;
	memcpy(&bi, c.payload.bytes, sizeof(bi));
	memset(info, 0, sizeof(*info));
	info->handle = bi.handle;
	info->kind = bi.kind;
	info->state = bi.state;
	info->size = bi.size;
	info->mmap_offset = bi.mmap_offset;
	return 0;
}

int tio_buffer_set_desc(tio_buffer_t *buf, const struct tio_desc *desc)
{
	int64_t v[3] = { 0, (int64_t)(uintptr_t)tio_desc_uapi(desc),
			  desc ? 0 : TIO_DESC_CLEAR };
	struct tio_cmd c;

	return tio_buffer_cmd(TIO_CMD_BUF_SET_DESC, buf, v, 3, &c);
}

int tio_buffer_attach_fence(tio_buffer_t *buf, tio_stream_t *stream,
			    uint64_t seqno, unsigned int flags)
{
	int64_t v[4] = { 0, 0, (int64_t)seqno, flags };
	struct tio_cmd c;

	/* The arguments' order of checks: the buffer's first. */
	if (buf && !stream)
		return tio_cmd_arg_error(&tio_cmds[TIO_CMD_BUF_ATTACH_FENCE], 1,
					 "a tio.Stream");
	v[1] = stream ? stream->handle : 0;
	return tio_buffer_cmd(TIO_CMD_BUF_ATTACH_FENCE, buf, v, 4, &c);
}

int tio_buffer_wait(tio_buffer_t *buf, unsigned int flags, int64_t timeout_ns,
		    int *status)
{
	int64_t v[3] = { 0, timeout_ns, flags };
	struct tio_cmd c;

	if (tio_buffer_cmd(TIO_CMD_BUF_WAIT, buf, v, 3, &c))
		return -1;
	if (status)
		*status = ((struct tio_buf_wait *)c.payload.bytes)->status;
	return 0;
}

void tio_buffer_decref(tio_buffer_t *buf)
{
	if (buf)
		tio_object_decref(&buf->header);
}

/* What a DLPack export of a buffer holds. */
struct tio_buf_dlpack {
	DLManagedTensorVersioned mt;
	tio_buffer_t *buf;
	int64_t shape[TIO_MAX_NDIM];
	int64_t strides[TIO_MAX_NDIM];
};

static void tio_buf_dlpack_delete(DLManagedTensorVersioned *mt)
{
	struct tio_buf_dlpack *d = mt->manager_ctx;

	tio_buffer_decref(d->buf);
	free(d);
}

int tio_buffer_to_dlpack(tio_buffer_t *buf, const struct tio_desc *desc,
			 DLManagedTensorVersioned **out)
{
	struct tio_desc own;
	struct tio_buf_dlpack *d;
	struct tio_buffer_info info;
	unsigned int i;
	void *data;
	int ret;

	if (!desc) {
		if (tio_buffer_info(buf, &info, &own))
			return -1;
		if (!(info.state & TIO_BUF_S_DESC))
			return tio_raise_errno(EINVAL,
				"buffer %lld has no tensor descriptor", (long long)buf->handle);
		desc = &own;
	}
	ret = tio_desc_validate(tio_desc_uapi(desc), (uint64_t)buf->size);
	if (ret)
		return tio_raise_errno(ret, "tensor descriptor over buffer %lld",
				       (long long)buf->handle);
	data = tio_buffer_data(buf);
	if (!data)
		return -1;
	d = calloc(1, sizeof(*d));
	if (!d)
		return tio_raise_errno(ENOMEM, "DLPack export of buffer %lld",
				       (long long)buf->handle);
	for (i = 0; i < desc->ndim; i++) {
		d->shape[i] = desc->shape[i];
		d->strides[i] = desc->strides[i];
	}
	d->buf = buf;
	tio_object_incref(&buf->header);
	d->mt.version.major = TIO_DLPACK_MAJOR;
	d->mt.version.minor = TIO_DLPACK_MINOR;
	d->mt.manager_ctx = d;
	d->mt.deleter = tio_buf_dlpack_delete;
	d->mt.dl_tensor.data = data;
	d->mt.dl_tensor.device.device_type = kDLCPU;
	d->mt.dl_tensor.device.device_id = 0;
	d->mt.dl_tensor.ndim = desc->ndim;
	d->mt.dl_tensor.dtype.code = desc->code;
	d->mt.dl_tensor.dtype.bits = desc->bits;
	d->mt.dl_tensor.dtype.lanes = desc->lanes;
	d->mt.dl_tensor.shape = d->shape;
	d->mt.dl_tensor.strides = (desc->flags & TIO_DESC_F_STRIDED) ? d->strides : NULL;
	d->mt.dl_tensor.byte_offset = desc->byte_offset;
	*out = &d->mt;
	return 0;
}

int tio_buffer_tensor(tio_buffer_t *buf, const struct tio_desc *desc,
		      tio_object_t **out)
{
	DLManagedTensorVersioned *mt;

	if (tio_buffer_to_dlpack(buf, desc, &mt))
		return -1;
	if (tio_tensor_from_dlpack_versioned(mt, 0, 0, out)) {
		mt->deleter(mt);
		return -1;
	}
	return 0;
}
