// SPDX-License-Identifier: GPL-2.0
/*
 * Streams: the handle-table object of a timeline (tio_timeline.c), its
 * seqno page mapping, and the STREAM_ and FENCE_ commands: create,
 * destroy, emit, signal, wait, sync_file export and import.
 * Locking: see tio_timeline.h; a stream adds none of its own.
 */
#include <linux/dma-fence.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sync_file.h>

#include "tio_compat.h"
#include "tio_priv.h"
#include "tio_timeline.h"

/**
 * struct tio_stream - a stream handle
 * @obj: the table object
 * @tl: the timeline, one reference
 */
struct tio_stream {
	struct tio_obj obj;
	struct tio_timeline *tl;
};

static struct tio_stream *tio_stream_get(struct tio_file *tf, u32 handle)
{
	struct tio_obj *obj = tio_obj_get(tf, handle, TIO_OBJ_STREAM);

	if (IS_ERR(obj))
		return ERR_CAST(obj);
	return container_of(obj, struct tio_stream, obj);
}

static void tio_stream_put(struct tio_stream *s)
{
	tio_obj_put(&s->obj);
}

static void tio_stream_release(struct tio_obj *obj)
{
	struct tio_stream *s = container_of(obj, struct tio_stream, obj);

	tio_timeline_cancel(s->tl);
	tio_timeline_put(s->tl);
	kfree_rcu(s, obj.rcu);
}

/*
 * Two pages, mapped one at a time. Offset 0, the seqno page: read-only
 * for good (VM_MAYWRITE cleared, so mprotect() cannot make it writable
 * either). Page 1, the doorbell of a stream that has one: read-write and
 * shared only, so that every write reaches the page the driver reads (a
 * private mapping would copy it on write).
 */
static int tio_stream_mmap(struct tio_obj *obj, struct vm_area_struct *vma)
{
	struct tio_stream *s = container_of(obj, struct tio_stream, obj);
	struct page *page = s->tl->page;

	if (vma->vm_pgoff > 1 || vma->vm_end - vma->vm_start != PAGE_SIZE)
		return -EINVAL;
	if (vma->vm_pgoff) {
		page = s->tl->bell_page;
		if (!page || !(vma->vm_flags & VM_SHARED))
			return -EINVAL;
	} else {
		if (vma->vm_flags & VM_WRITE)
			return -EPERM;
		tio_vm_flags_clear(vma, VM_MAYWRITE);
	}
	tio_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	return vm_insert_page(vma, vma->vm_start, page);
}

/* debugfs files/PID.N/objects: the timeline's fence state. */
static void tio_stream_show(struct tio_obj *obj, struct seq_file *m)
{
	struct tio_stream *s = container_of(obj, struct tio_stream, obj);

	tio_timeline_show(s->tl, m);
}

static const struct tio_obj_ops tio_stream_ops = {
	.release = tio_stream_release,
	.mmap = tio_stream_mmap,
	.show = tio_stream_show,
};

/**
 * tio_cmd_stream_create() - TIO_IOC_STREAM_CREATE: a new stream and its timeline
 * @tf: the calling file
 * @data: kernel copy of the struct tio_stream_create payload
 * @call: the call
 *
 * With TIO_STREAM_F_DOORBELL the stream gets a doorbell page
 * (tio_doorbell.c), mapped at @doorbell_offset: the seqno page's offset
 * plus one page.
 *
 * Return: 0, -EINVAL (flags, pad, a bound above the module's), -ENOMEM or -EBUSY.
 */
int tio_cmd_stream_create(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_stream_create *args = data;
	u32 bound = READ_ONCE(tio_fence_timeout_ms);
	bool doorbell = args->flags & TIO_STREAM_F_DOORBELL;
	struct tio_stream *s;
	int ret;

	if ((args->flags & ~TIO_STREAM_F_DOORBELL) || args->pad ||
	    args->fence_timeout_ms > bound)
		return -EINVAL;
	s = kzalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	if (!s)
		return -ENOMEM;
	s->tl = tio_timeline_create(args->fence_timeout_ms ?: bound, doorbell);
	if (!s->tl) {
		ret = -ENOMEM;
		goto err_free;
	}
	tio_obj_init(&s->obj, TIO_OBJ_STREAM, &tio_stream_ops);
	args->context = s->tl->context;
	ret = tio_obj_insert(tf, &s->obj);
	if (ret)
		goto err_tl;
	args->handle = s->obj.handle;
	args->seqno_offset = tio_obj_mmap_offset(&s->obj);
	args->fence_timeout_ms = s->tl->timeout_ms;
	args->doorbell_offset = doorbell ? args->seqno_offset + PAGE_SIZE : 0;
	return 0;

err_tl:
	tio_timeline_put(s->tl);
err_free:
	kfree(s);
	return ret;
}

/**
 * tio_cmd_stream_destroy() - TIO_IOC_STREAM_DESTROY: drop a stream's handle
 * (its points are cancelled once in-flight commands are done)
 * @tf: the calling file
 * @data: kernel copy of the struct tio_handle_op payload
 * @call: the call
 *
 * Return: 0, -EINVAL or -ENOENT.
 */
int tio_cmd_stream_destroy(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_handle_op *args = data;
	struct tio_obj *obj;

	if (args->flags)
		return -EINVAL;
	obj = tio_obj_remove(tf, args->handle, TIO_OBJ_STREAM);
	if (IS_ERR(obj))
		return PTR_ERR(obj);
	/* Cancels the points once in-flight commands drop their references. */
	tio_obj_put(obj);
	return 0;
}

/**
 * tio_cmd_fence_emit() - TIO_IOC_FENCE_EMIT: add the next point to a stream
 * @tf: the calling file
 * @data: kernel copy of the struct tio_fence_emit payload
 * @call: the call
 *
 * Return: 0, -EINVAL, -ENOENT, -ENOMEM or -EOVERFLOW.
 */
int tio_cmd_fence_emit(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_fence_emit *args = data;
	struct tio_stream *s;
	int ret;

	if (args->flags)
		return -EINVAL;
	s = tio_stream_get(tf, args->stream);
	if (IS_ERR(s))
		return PTR_ERR(s);
	ret = tio_timeline_emit(s->tl, &args->seqno);
	tio_stream_put(s);
	return ret;
}

/**
 * tio_cmd_fence_signal() - TIO_IOC_FENCE_SIGNAL: complete the points up to a seqno
 * @tf: the calling file
 * @data: kernel copy of the struct tio_fence_signal payload
 * @call: the call
 *
 * Return: 0, -EINVAL, -ENOENT, or -ETIMEDOUT up to an expired point.
 */
int tio_cmd_fence_signal(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_fence_signal *args = data;
	struct tio_stream *s;
	int ret;

	if (args->flags || args->pad)
		return -EINVAL;
	if (args->error > 0 || args->error < -MAX_ERRNO)
		return -EINVAL;
	s = tio_stream_get(tf, args->stream);
	if (IS_ERR(s))
		return PTR_ERR(s);
	ret = tio_timeline_signal(s->tl, args->seqno, args->error);
	tio_stream_put(s);
	return ret;
}

/**
 * tio_cmd_fence_wait() - TIO_IOC_FENCE_WAIT: wait for a point, blocking
 * @tf: the calling file
 * @data: kernel copy of the struct tio_fence_wait payload
 * @call: the call
 *
 * Return: 0 with the point's error in status, -ETIME, -ERESTARTSYS, -EINVAL, -ENOENT or -ENOMEM.
 */
int tio_cmd_fence_wait(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_fence_wait *args = data;
	struct dma_fence *fence;
	int ret;

	if ((args->flags & ~TIO_WAIT_F_ABSOLUTE) || args->pad)
		return -EINVAL;
	fence = tio_stream_fence(tf, args->stream, args->seqno);
	if (IS_ERR(fence))
		return PTR_ERR(fence);
	/* Holds the fence only: destroying the stream wakes us. */
	ret = tio_fence_wait(fence, args->flags, args->timeout_ns);
	if (!ret)
		args->status = fence->error;
	dma_fence_put(fence);
	return ret;
}

/**
 * tio_cmd_fence_export() - TIO_IOC_FENCE_EXPORT: a sync_file fd for a point,
 * which is bounded from now on
 * @tf: the calling file
 * @data: kernel copy of the struct tio_fence_export payload
 * @call: the call
 *
 * Return: 0, -EINVAL, -ENOENT, -ENOMEM or -EMFILE.
 */
int tio_cmd_fence_export(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_fence_export *args = data;
	struct dma_fence *fence;
	struct sync_file *sf;
	int fd;

	if ((args->flags & ~TIO_EXPORT_F_CLOEXEC) || args->pad)
		return -EINVAL;
	fence = tio_stream_fence_expose(tf, args->stream, args->seqno);
	if (IS_ERR(fence))
		return PTR_ERR(fence);
	sf = sync_file_create(fence);	/* takes its own reference */
	dma_fence_put(fence);
	if (!sf)
		return -ENOMEM;
	fd = tio_fd_reserve(call, sf->file, args->flags & TIO_EXPORT_F_CLOEXEC);
	if (fd < 0) {
		fput(sf->file);
		return fd;
	}
	args->fd = fd;
	return 0;
}

/**
 * tio_cmd_fence_import() - TIO_IOC_FENCE_IMPORT: a new point that waits for a sync_file
 * @tf: the calling file
 * @data: kernel copy of the struct tio_fence_import payload
 * @call: the call
 *
 * Return: 0, -EINVAL (not a sync_file), -EBADF, -ENOENT, -ENOMEM or -EOVERFLOW.
 */
int tio_cmd_fence_import(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_fence_import *args = data;
	struct tio_stream *s;
	struct dma_fence *dep;
	struct file *file;
	int ret;

	if (args->flags || args->pad)
		return -EINVAL;
	if (args->fd < 0)
		return -EBADF;
	dep = sync_file_get_fence(args->fd);
	if (!dep) {
		/* Tell a closed fd from one that is not a sync_file. */
		file = fget(args->fd);
		if (!file)
			return -EBADF;
		fput(file);
		return -EINVAL;
	}
	s = tio_stream_get(tf, args->stream);
	if (IS_ERR(s)) {
		dma_fence_put(dep);
		return PTR_ERR(s);
	}
	ret = tio_timeline_import(s->tl, dep, &args->seqno);
	tio_stream_put(s);
	return ret;
}

/**
 * tio_stream_fence() - the fence of an emitted point
 * @tf: the file
 * @stream: a stream handle of @tf
 * @seqno: an emitted seqno of that stream
 *
 * The fence outlives the stream and the file. A point that signalled long
 * ago may be represented by a new, already signalled fence of the same
 * context, seqno and error. May sleep.
 *
 * Return: a referenced fence, ERR_PTR(-ENOENT) for an unknown handle,
 * ERR_PTR(-EINVAL) for a seqno never emitted, or ERR_PTR(-ENOMEM).
 */
struct dma_fence *tio_stream_fence(struct tio_file *tf, u32 stream, u64 seqno)
{
	struct tio_stream *s = tio_stream_get(tf, stream);
	struct dma_fence *fence;

	if (IS_ERR(s))
		return ERR_CAST(s);
	fence = tio_timeline_fence(s->tl, seqno, false);
	tio_stream_put(s);
	return fence;
}

/**
 * tio_stream_fence_expose() - the fence of a point other drivers will see
 * @tf: the file
 * @stream: a stream handle of @tf
 * @seqno: an emitted seqno of that stream
 *
 * As tio_stream_fence(), for FENCE_EXPORT and BUF_ATTACH_FENCE: a pending
 * point gets its deadline (the stream's fence_timeout_ms from now, unless
 * it had one), after which it and every earlier point signal with
 * -ETIMEDOUT. No indefinite fence leaves the file
 * (Documentation/driver-api/dma-buf.rst, "Indefinite DMA Fences").
 *
 * Return: as tio_stream_fence().
 */
struct dma_fence *tio_stream_fence_expose(struct tio_file *tf, u32 stream,
					  u64 seqno)
{
	struct tio_stream *s = tio_stream_get(tf, stream);
	struct dma_fence *fence;

	if (IS_ERR(s))
		return ERR_CAST(s);
	fence = tio_timeline_fence(s->tl, seqno, true);
	tio_stream_put(s);
	return fence;
}
