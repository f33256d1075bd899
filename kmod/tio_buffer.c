// SPDX-License-Identifier: GPL-2.0
/*
 * Tensor buffers: BUF_ALLOC, BUF_PIN_USER, BUF_FREE, BUF_INFO, BUF_SET_DESC,
 * BUF_EXPORT and BUF_IMPORT, mmap through the device fd, and the interface
 * other parts of the driver use (tio_buffer_get/put/resv).
 *
 * See tio_buffer.h for the lifetime and locking rules.
 */
#include <linux/err.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/refcount.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "tio_buffer.h"
#include "tio_compat.h"

static void tio_buffer_release(struct tio_obj *obj)
{
	struct tio_buffer *buf = to_tio_buffer(obj);
	unsigned long i;

	switch (buf->kind) {
	case TIO_BUF_KIND_ALLOC:
		/* Mappings and pins of the pages hold references of their own. */
		for (i = 0; buf->pages && i < buf->npages; i++)
			if (buf->pages[i])
				put_page(buf->pages[i]);
		break;
	case TIO_BUF_KIND_USER:
		if (buf->pages)
			unpin_user_pages_dirty_lock(buf->pages, buf->npages,
						    !buf->readonly);
		break;
	case TIO_BUF_KIND_IMPORT:
		tio_dmabuf_import_release(buf);
		break;
	}
	if (buf->mm) {
		tio_memlock_uncharge(buf->mm, buf->npages);
		mmdrop(buf->mm);
	}
	tio_buffer_free_struct(buf);
}

static int tio_buffer_obj_mmap(struct tio_obj *obj, struct vm_area_struct *vma)
{
	struct tio_buffer *buf = to_tio_buffer(obj);

	if (buf->kind != TIO_BUF_KIND_IMPORT)
		return tio_buffer_vma_setup(buf, vma);
	/* The exporter maps its own memory; the vma then holds its file. */
	if (buf->readonly) {
		if (vma->vm_flags & VM_WRITE)
			return -EACCES;
		tio_vm_flags_clear(vma, VM_MAYWRITE);
	}
	return dma_buf_mmap(buf->dmabuf, vma, vma->vm_pgoff);
}

static const char *const tio_buffer_kinds[] = {
	[TIO_BUF_KIND_ALLOC] = "alloc",
	[TIO_BUF_KIND_USER] = "user",
	[TIO_BUF_KIND_IMPORT] = "import",
};

/* debugfs files/PID.N/objects: kind, size, state and the descriptor. */
static void tio_buffer_show(struct tio_obj *obj, struct seq_file *m)
{
	struct tio_buffer *buf = to_tio_buffer(obj);
	const struct tio_tensor_desc *d = &buf->desc;
	unsigned int i;

	mutex_lock(&buf->lock);
	seq_printf(m, "buffer %s size=%zu%s%s", tio_buffer_kinds[buf->kind],
		   buf->size, buf->readonly ? " readonly" : "",
		   buf->dmabuf ? " exported" : "");
	if (buf->has_desc) {
		seq_printf(m, " dtype=%u:%u:%u offset=%llu shape=", d->code,
			   d->bits, d->lanes, d->byte_offset);
		for (i = 0; i < d->ndim; i++)
			seq_printf(m, "%s%lld", i ? "x" : "", d->shape[i]);
		if (d->flags & TIO_DESC_F_STRIDED) {
			seq_puts(m, " strides=");
			for (i = 0; i < d->ndim; i++)
				seq_printf(m, "%s%lld", i ? "," : "", d->strides[i]);
		}
	}
	mutex_unlock(&buf->lock);
	seq_putc(m, '\n');
}

static const struct tio_obj_ops tio_buffer_ops = {
	.release = tio_buffer_release,
	.mmap = tio_buffer_obj_mmap,
	.show = tio_buffer_show,
};

/**
 * tio_buffer_alloc_struct() - a new, empty buffer with one reference
 * @kind: TIO_BUF_KIND_*
 *
 * Return: the buffer or NULL. Drop it with tio_obj_put(&buf->obj), which
 * releases whatever backing has been set up so far.
 */
struct tio_buffer *tio_buffer_alloc_struct(u32 kind)
{
	struct tio_buffer *buf;

	buf = kzalloc(sizeof(*buf), GFP_KERNEL_ACCOUNT);
	if (!buf)
		return NULL;
	tio_obj_init(&buf->obj, TIO_OBJ_BUFFER, &tio_buffer_ops);
	buf->kind = kind;
	mutex_init(&buf->lock);
	INIT_LIST_HEAD(&buf->attachments);
	dma_resv_init(&buf->resv);
	return buf;
}

/**
 * tio_buffer_free_struct() - free the structure of a released buffer (after
 * an RCU grace period: lookups may still be reading its header)
 * @buf: the buffer, its backing already released
 */
void tio_buffer_free_struct(struct tio_buffer *buf)
{
	dma_resv_fini(&buf->resv);
	mutex_destroy(&buf->lock);
	kvfree(buf->pages);
	kfree_rcu(buf, obj.rcu);
}

/*
 * Device-fd and dma-buf mappings of ALLOC and USER buffers, filled on
 * fault. Each vma holds a buffer reference.
 *
 * ALLOC pages are ours (never anonymous, never page cache), so the fault
 * hands out the page itself with a reference of its own: the mapping is an
 * ordinary page-backed one that get_user_pages() accepts (ibv_reg_mr(),
 * O_DIRECT, io_uring fixed buffers, BUF_PIN_USER). A page outlives the
 * buffer for as long as a mapping or a pin holds it; the last put frees it.
 *
 * USER pages belong to an anonymous or file mapping of their owner; their
 * rmap must not gain a second, shared-file identity, so they are mapped
 * VM_PFNMAP (raw page frames, invisible to get_user_pages()).
 */
static void tio_buffer_vm_open(struct vm_area_struct *vma)
{
	struct tio_buffer *buf = vma->vm_private_data;

	kref_get(&buf->obj.ref);
}

static void tio_buffer_vm_close(struct vm_area_struct *vma)
{
	struct tio_buffer *buf = vma->vm_private_data;

	/* The release only uses atomics and page locks: fine under mmap_lock. */
	tio_obj_put(&buf->obj);
}

static vm_fault_t tio_buffer_vm_fault(struct vm_fault *vmf)
{
	struct tio_buffer *buf = vmf->vma->vm_private_data;
	struct page *page;

	if (vmf->pgoff >= buf->npages)
		return VM_FAULT_SIGBUS;
	page = buf->pages[vmf->pgoff];
	if (buf->kind != TIO_BUF_KIND_ALLOC)
		return vmf_insert_pfn(vmf->vma, vmf->address,
				      page_to_pfn(page));
	/* The core maps it (unlocked: it locks it) and owns this reference. */
	get_page(page);
	vmf->page = page;
	return 0;
}

static const struct vm_operations_struct tio_buffer_vm_ops = {
	.open = tio_buffer_vm_open,
	.close = tio_buffer_vm_close,
	.fault = tio_buffer_vm_fault,
};

/**
 * tio_buffer_vma_setup() - map an ALLOC or USER buffer into a vma
 * @buf: the buffer
 * @vma: the vma; vm_pgoff is the page offset inside the buffer
 *
 * Context: mmap_lock held for writing.
 * Return: 0; -EINVAL when the range exceeds the buffer or the mapping is
 * private (a copy-on-write copy would not be the buffer, and for a
 * VM_PFNMAP mapping would hit a BUG_ON in vmf_insert_pfn() on its first
 * fault); -EACCES for a writable mapping of a read-only buffer.
 */
int tio_buffer_vma_setup(struct tio_buffer *buf, struct vm_area_struct *vma)
{
	unsigned long npages = vma_pages(vma);

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_pgoff >= buf->npages || npages > buf->npages - vma->vm_pgoff)
		return -EINVAL;
	if (buf->readonly) {
		if (vma->vm_flags & VM_WRITE)
			return -EACCES;
		tio_vm_flags_clear(vma, VM_MAYWRITE);
	}
	tio_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	if (buf->kind != TIO_BUF_KIND_ALLOC)
		tio_vm_flags_set(vma, VM_PFNMAP);
	/* Ordered before BUF_FREE by the reference the caller holds. */
	WRITE_ONCE(buf->exposed, true);
	vma->vm_ops = &tio_buffer_vm_ops;
	vma->vm_private_data = buf;
	kref_get(&buf->obj.ref);
	return 0;
}

/*
 * Bytes to whole pages, bounded by the max_buf_size module parameter and
 * by what one pin/sg-table call handles.
 */
static int tio_buffer_npages(u64 size, unsigned long *npages)
{
	u64 end;

	if (!size)
		return -EINVAL;
	if (size > READ_ONCE(tio_max_buf_size) ||
	    check_add_overflow(size, (u64)PAGE_SIZE - 1, &end) ||
	    (end >> PAGE_SHIFT) > INT_MAX)
		return -E2BIG;
	*npages = end >> PAGE_SHIFT;
	return 0;
}

/**
 * tio_buffer_charge() - charge pages a buffer keeps resident
 * @buf: the buffer, not yet charged
 * @tf: the file, whose opener's mm pays
 * @npages: pages
 *
 * The buffer keeps the mm referenced; its release returns the charge.
 *
 * Return: 0, -ENOMEM or -EPERM (tio_memlock_charge()).
 */
int tio_buffer_charge(struct tio_buffer *buf, struct tio_file *tf,
		      unsigned long npages)
{
	int ret;

	ret = tio_memlock_charge(tf->mm, npages);
	if (ret)
		return ret;
	buf->npages = npages;
	buf->mm = tf->mm;
	mmgrab(buf->mm);
	return 0;
}

/* Publish @buf (the table takes the caller's reference) and name it. */
static int tio_buffer_publish(struct tio_file *tf, struct tio_buffer *buf,
			      u32 *handle, u64 *mmap_offset)
{
	int ret;

	ret = tio_obj_insert(tf, &buf->obj);
	if (ret)
		return ret;
	*handle = buf->obj.handle;
	*mmap_offset = tio_obj_mmap_offset(&buf->obj);
	return 0;
}

static int tio_buffer_set_desc_from_user(struct tio_buffer *buf, u64 uptr)
{
	int ret;

	if (!uptr)
		return 0;
	ret = tio_desc_from_user(&buf->desc, uptr, buf->size);
	if (ret)
		return ret;
	buf->has_desc = true;
	return 0;
}

/**
 * tio_cmd_buf_alloc() - TIO_IOC_BUF_ALLOC: a buffer of zeroed kernel pages
 * @tf: the calling file
 * @data: kernel copy of the struct tio_buf_alloc payload
 * @call: the call
 *
 * Return: 0 or a negative errno (see docs/uapi.md).
 */
int tio_cmd_buf_alloc(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_buf_alloc *args = data;
	struct tio_buffer *buf;
	unsigned long npages, i;
	int ret;

	if (args->flags)
		return -EINVAL;
	ret = tio_buffer_npages(args->size, &npages);
	if (ret)
		return ret;
	buf = tio_buffer_alloc_struct(TIO_BUF_KIND_ALLOC);
	if (!buf)
		return -ENOMEM;
	buf->size = (size_t)npages << PAGE_SHIFT;
	ret = tio_buffer_set_desc_from_user(buf, args->desc_ptr);
	if (ret)
		goto err_put;
	ret = tio_buffer_charge(buf, tf, npages);
	if (ret)
		goto err_put;
	ret = -ENOMEM;
	buf->pages = kvcalloc(npages, sizeof(*buf->pages), GFP_KERNEL_ACCOUNT);
	if (!buf->pages)
		goto err_put;
	for (i = tio_spare_take(tf, buf->pages, npages); i < npages; i++) {
		buf->pages[i] = alloc_page(GFP_HIGHUSER | __GFP_ZERO |
					   __GFP_ACCOUNT | __GFP_NOWARN);
		if (!buf->pages[i])
			goto err_put;
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto err_put;
		}
		cond_resched();
	}
	ret = tio_buffer_publish(tf, buf, &args->handle, &args->mmap_offset);
	if (ret)
		goto err_put;
	return 0;

err_put:
	/* The release frees whatever was set up. */
	tio_obj_put(&buf->obj);
	return ret;
}

/**
 * tio_cmd_buf_pin_user() - TIO_IOC_BUF_PIN_USER: pin a page-aligned user range
 * @tf: the calling file
 * @data: kernel copy of the struct tio_buf_pin payload
 * @call: the call
 *
 * Return: 0 or a negative errno; on error nothing stays pinned or charged.
 */
int tio_cmd_buf_pin_user(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_buf_pin *args = data;
	unsigned int gup_flags = FOLL_LONGTERM;
	struct tio_buffer *buf;
	unsigned long npages;
	struct page **pages;
	u64 end;
	int ret, pinned;

	if (args->flags & ~TIO_PIN_F_READONLY)
		return -EINVAL;
	if (!args->size || !PAGE_ALIGNED(args->addr) ||
	    !PAGE_ALIGNED(args->size) ||
	    check_add_overflow(args->addr, args->size, &end))
		return -EINVAL;
	ret = tio_buffer_npages(args->size, &npages);
	if (ret)
		return ret;
	if (!access_ok(u64_to_user_ptr(args->addr), args->size))
		return -EFAULT;
	buf = tio_buffer_alloc_struct(TIO_BUF_KIND_USER);
	if (!buf)
		return -ENOMEM;
	buf->size = args->size;
	buf->readonly = args->flags & TIO_PIN_F_READONLY;
	if (!buf->readonly)
		gup_flags |= FOLL_WRITE;
	ret = tio_buffer_set_desc_from_user(buf, args->desc_ptr);
	if (ret)
		goto err_put;
	ret = tio_buffer_charge(buf, tf, npages);
	if (ret)
		goto err_put;
	pages = kvmalloc_array(npages, sizeof(*pages), GFP_KERNEL_ACCOUNT);
	if (!pages) {
		ret = -ENOMEM;
		goto err_put;
	}
	pinned = pin_user_pages_fast(args->addr, npages, gup_flags, pages);
	if (pinned != npages) {
		/* Unmapped, read-only or unpinnable memory: leave nothing pinned. */
		if (pinned > 0)
			unpin_user_pages(pages, pinned);
		ret = pinned < 0 ? pinned : -EFAULT;
		goto err_free_pages;
	}
	buf->pages = pages;
	ret = tio_buffer_publish(tf, buf, &args->handle, &args->mmap_offset);
	if (ret)
		goto err_put;
	return 0;

err_free_pages:
	kvfree(pages);
err_put:
	tio_obj_put(&buf->obj);
	return ret;
}

/**
 * tio_cmd_buf_free() - TIO_IOC_BUF_FREE: drop a buffer's handle
 * @tf: the calling file
 * @data: kernel copy of the struct tio_handle_op payload
 * @call: the call
 *
 * Return: 0, -EINVAL or -ENOENT.
 */
int tio_cmd_buf_free(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_handle_op *args = data;
	struct tio_buffer *buf;
	struct tio_obj *obj;

	if (args->flags)
		return -EINVAL;
	obj = tio_obj_remove(tf, args->handle, TIO_OBJ_BUFFER);
	if (IS_ERR(obj))
		return PTR_ERR(obj);
	buf = to_tio_buffer(obj);
	/*
	 * The last reference, taken from 1 to 0 here, where no lookup can
	 * find the buffer any more: nobody can map or export it from now on,
	 * and the acquire orders every earlier setter of @exposed (each held
	 * a reference) before the read.
	 */
	if (buf->kind == TIO_BUF_KIND_ALLOC &&
	    refcount_dec_if_one(&obj->ref.refcount)) {
		smp_acquire__after_ctrl_dep();
		if (!READ_ONCE(buf->exposed))
			tio_spare_give(tf, buf);
		tio_buffer_release(obj);
		return 0;
	}
	tio_obj_put(obj);
	return 0;
}

/**
 * tio_cmd_buf_info() - TIO_IOC_BUF_INFO: describe a buffer
 * @tf: the calling file
 * @data: kernel copy of the struct tio_buf_info payload
 * @call: the call
 *
 * Return: 0, -EINVAL, -ENOENT or -EFAULT.
 */
int tio_cmd_buf_info(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_buf_info *args = data;
	struct tio_tensor_desc desc;
	struct tio_buffer *buf;
	u32 state = 0;
	int ret = 0;

	if (args->flags)
		return -EINVAL;
	buf = tio_buffer_get(tf, args->handle);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	mutex_lock(&buf->lock);
	if (buf->has_desc) {
		desc = buf->desc;
		state |= TIO_BUF_S_DESC;
	} else {
		memset(&desc, 0, sizeof(desc));
	}
	if (buf->dmabuf)
		state |= TIO_BUF_S_EXPORTED;
	mutex_unlock(&buf->lock);
	args->size = buf->size;
	args->mmap_offset = tio_obj_mmap_offset(&buf->obj);
	args->kind = buf->kind;
	args->state = state;
	if (args->desc_ptr &&
	    copy_to_user(u64_to_user_ptr(args->desc_ptr), &desc, sizeof(desc)))
		ret = -EFAULT;
	tio_buffer_put(buf);
	return ret;
}

/**
 * tio_cmd_buf_set_desc() - TIO_IOC_BUF_SET_DESC: set or clear the tensor descriptor
 * @tf: the calling file
 * @data: kernel copy of the struct tio_buf_desc payload
 * @call: the call
 *
 * Return: 0 or a negative errno; on error the old descriptor stays.
 */
int tio_cmd_buf_set_desc(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_buf_desc *args = data;
	struct tio_tensor_desc desc;
	struct tio_buffer *buf;
	bool clear;
	int ret = 0;

	if (args->flags & ~TIO_DESC_CLEAR)
		return -EINVAL;
	clear = args->flags & TIO_DESC_CLEAR;
	if (clear == !!args->desc_ptr)
		return -EINVAL;
	buf = tio_buffer_get(tf, args->handle);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	if (!clear) {
		ret = tio_desc_from_user(&desc, args->desc_ptr, buf->size);
		if (ret)
			goto out;
	}
	mutex_lock(&buf->lock);
	if (!clear)
		buf->desc = desc;
	buf->has_desc = !clear;
	mutex_unlock(&buf->lock);
out:
	tio_buffer_put(buf);
	return ret;
}

/**
 * tio_cmd_buf_export() - TIO_IOC_BUF_EXPORT: a new fd of the buffer's dma-buf
 * @tf: the calling file
 * @data: kernel copy of the struct tio_buf_export payload
 * @call: the call
 *
 * Return: 0 or a negative errno.
 */
int tio_cmd_buf_export(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_buf_export *args = data;
	struct tio_buffer *buf;
	int ret;

	if (args->flags & ~(TIO_EXPORT_F_CLOEXEC | TIO_EXPORT_F_RDWR) ||
	    args->pad)
		return -EINVAL;
	buf = tio_buffer_get(tf, args->handle);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	ret = tio_dmabuf_export(buf, args->flags, call);
	tio_buffer_put(buf);
	if (ret < 0)
		return ret;
	args->fd = ret;
	return 0;
}

/**
 * tio_cmd_buf_import() - TIO_IOC_BUF_IMPORT: a buffer for anyone's dma-buf
 * @tf: the calling file
 * @data: kernel copy of the struct tio_buf_import payload
 * @call: the call
 *
 * Return: 0 or a negative errno.
 */
int tio_cmd_buf_import(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_buf_import *args = data;
	struct tio_buffer *buf;
	int ret;

	if (args->flags || args->pad)
		return -EINVAL;
	buf = tio_buffer_alloc_struct(TIO_BUF_KIND_IMPORT);
	if (!buf)
		return -ENOMEM;
	ret = tio_dmabuf_import(buf, tf, args->fd);
	if (ret)
		goto err_put;
	ret = tio_buffer_publish(tf, buf, &args->handle, &args->mmap_offset);
	if (ret)
		goto err_put;
	args->size = buf->size;
	return 0;

err_put:
	tio_obj_put(&buf->obj);
	return ret;
}

/**
 * tio_buffer_get() - look up a buffer of a file and take a reference
 * @tf: the file
 * @handle: the buffer's handle
 *
 * Return: the buffer, or ERR_PTR(-ENOENT) for a handle that is not a
 * buffer of @tf. Drop the reference with tio_buffer_put().
 */
struct tio_buffer *tio_buffer_get(struct tio_file *tf, u32 handle)
{
	struct tio_obj *obj = tio_obj_get(tf, handle, TIO_OBJ_BUFFER);

	if (IS_ERR(obj))
		return ERR_CAST(obj);
	return to_tio_buffer(obj);
}

/**
 * tio_buffer_put() - drop a reference taken by tio_buffer_get()
 * @buf: the buffer (NULL and error pointers are ignored)
 *
 * Context: may sleep (the last reference releases the backing).
 */
void tio_buffer_put(struct tio_buffer *buf)
{
	if (!IS_ERR_OR_NULL(buf))
		tio_obj_put(&buf->obj);
}

/**
 * tio_buffer_resv() - the buffer's reservation object
 * @buf: a referenced buffer
 *
 * ALLOC and USER buffers have their own, which their exported dma-buf
 * shares; an imported buffer uses its dma-buf's, the exporter's. Valid as
 * long as the caller holds its reference on @buf.
 *
 * Return: the dma_resv, never NULL.
 */
struct dma_resv *tio_buffer_resv(struct tio_buffer *buf)
{
	if (buf->kind == TIO_BUF_KIND_IMPORT)
		return buf->dmabuf->resv;
	return &buf->resv;
}
