// SPDX-License-Identifier: GPL-2.0
/*
 * dma-buf interop: the exporter of ALLOC and USER buffers, and the
 * importer of anyone's dma-bufs (attached and mapped for the tensorio
 * device, kept mapped until the buffer is released).
 *
 * A buffer has at most one dma-buf: exporting again hands out another fd
 * of the same one. The dma-buf holds a buffer reference, so the backing
 * outlives the handle and the file; the buffer does not reference the
 * dma-buf (buf->dmabuf is cleared by the dma-buf's release). The dma-buf
 * uses the buffer's embedded dma_resv, so fences attached to the buffer
 * before or after the export are seen by every importer.
 */
#include <linux/dma-mapping.h>
#include <linux/err.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "tio_buffer.h"
#include "tio_compat.h"

/**
 * struct tio_attach - one importer of an exported buffer
 * @node: in tio_buffer.attachments
 * @dev: the importer's device
 * @sgt: its mapping, while @mapped
 * @dir: the direction it was mapped for
 * @mapped: @sgt is DMA-mapped
 */
struct tio_attach {
	struct list_head node;
	struct device *dev;
	struct sg_table sgt;
	enum dma_data_direction dir;
	bool mapped;
};

static int tio_dmabuf_attach(struct dma_buf *dmabuf,
			     struct dma_buf_attachment *attach)
{
	struct tio_buffer *buf = dmabuf->priv;
	struct tio_attach *a;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	a->dev = attach->dev;
	attach->priv = a;
	mutex_lock(&buf->lock);
	list_add_tail(&a->node, &buf->attachments);
	mutex_unlock(&buf->lock);
	return 0;
}

static void tio_dmabuf_detach(struct dma_buf *dmabuf,
			      struct dma_buf_attachment *attach)
{
	struct tio_buffer *buf = dmabuf->priv;
	struct tio_attach *a = attach->priv;

	mutex_lock(&buf->lock);
	list_del(&a->node);
	mutex_unlock(&buf->lock);
	kfree(a);
}

/* Context: the dma_resv lock may be held (kernels after 6.1). */
static struct sg_table *tio_dmabuf_map(struct dma_buf_attachment *attach,
				       enum dma_data_direction dir)
{
	struct tio_buffer *buf = attach->dmabuf->priv;
	struct tio_attach *a = attach->priv;
	int ret;

	if (buf->readonly && dir != DMA_TO_DEVICE)
		return ERR_PTR(-EACCES);
	mutex_lock(&buf->lock);
	if (a->mapped) {
		ret = -EBUSY;
		goto err_unlock;
	}
	ret = sg_alloc_table_from_pages(&a->sgt, buf->pages, buf->npages, 0,
					buf->size, GFP_KERNEL);
	if (ret)
		goto err_unlock;
	ret = dma_map_sgtable(a->dev, &a->sgt, dir, 0);
	if (ret)
		goto err_free;
	a->dir = dir;
	a->mapped = true;
	mutex_unlock(&buf->lock);
	return &a->sgt;

err_free:
	sg_free_table(&a->sgt);
err_unlock:
	mutex_unlock(&buf->lock);
	return ERR_PTR(ret);
}

static void tio_dmabuf_unmap(struct dma_buf_attachment *attach,
			     struct sg_table *sgt, enum dma_data_direction dir)
{
	struct tio_buffer *buf = attach->dmabuf->priv;
	struct tio_attach *a = attach->priv;

	mutex_lock(&buf->lock);
	dma_unmap_sgtable(a->dev, sgt, dir, 0);
	sg_free_table(sgt);
	a->mapped = false;
	mutex_unlock(&buf->lock);
}

static void tio_dmabuf_release(struct dma_buf *dmabuf)
{
	struct tio_buffer *buf = dmabuf->priv;

	mutex_lock(&buf->lock);
	if (buf->dmabuf == dmabuf)
		buf->dmabuf = NULL;
	mutex_unlock(&buf->lock);
	tio_obj_put(&buf->obj);
}

/* Make the CPU see what devices wrote, or devices what the CPU wrote. */
static void tio_dmabuf_sync(struct tio_buffer *buf, bool for_cpu)
{
	struct tio_attach *a;

	mutex_lock(&buf->lock);
	list_for_each_entry(a, &buf->attachments, node) {
		if (!a->mapped)
			continue;
		if (for_cpu)
			dma_sync_sgtable_for_cpu(a->dev, &a->sgt, a->dir);
		else
			dma_sync_sgtable_for_device(a->dev, &a->sgt, a->dir);
	}
	mutex_unlock(&buf->lock);
}

static int tio_dmabuf_begin_cpu_access(struct dma_buf *dmabuf,
				       enum dma_data_direction dir)
{
	tio_dmabuf_sync(dmabuf->priv, true);
	return 0;
}

static int tio_dmabuf_end_cpu_access(struct dma_buf *dmabuf,
				     enum dma_data_direction dir)
{
	tio_dmabuf_sync(dmabuf->priv, false);
	return 0;
}

/**
 * tio_dmabuf_lockdep_prime() - teach lockdep the map callback's lock order
 *
 * An RDMA importer (ibv_reg_dmabuf_mr(): a dynamic attachment of this
 * static exporter) has map_dma_buf called with the dma_resv lock held, as
 * every importer has on kernels after 6.1; the callback then takes
 * buf->lock. Taking the pair once at load makes lockdep check that order
 * against every later use, on every kernel, without such an importer
 * (dma_resv_lockdep() primes mmap_lock before dma_resv the same way).
 */
void tio_dmabuf_lockdep_prime(void)
{
	struct tio_buffer *buf;

	if (!IS_ENABLED(CONFIG_LOCKDEP))
		return;
	buf = tio_buffer_alloc_struct(TIO_BUF_KIND_ALLOC);
	if (!buf)
		return;
	dma_resv_lock(&buf->resv, NULL);
	mutex_lock(&buf->lock);
	mutex_unlock(&buf->lock);
	dma_resv_unlock(&buf->resv);
	tio_obj_put(&buf->obj);
}

static int tio_dmabuf_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	return tio_buffer_vma_setup(dmabuf->priv, vma);
}

static int tio_dmabuf_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct tio_buffer *buf = dmabuf->priv;
	void *vaddr;

	vaddr = vmap(buf->pages, buf->npages, VM_MAP,
		     buf->readonly ? PAGE_KERNEL_RO : PAGE_KERNEL);
	if (!vaddr)
		return -ENOMEM;
	iosys_map_set_vaddr(map, vaddr);
	return 0;
}

static void tio_dmabuf_vunmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	vunmap(map->vaddr);
}

static const struct dma_buf_ops tio_dmabuf_ops = {
	.attach = tio_dmabuf_attach,
	.detach = tio_dmabuf_detach,
	.map_dma_buf = tio_dmabuf_map,
	.unmap_dma_buf = tio_dmabuf_unmap,
	.release = tio_dmabuf_release,
	.begin_cpu_access = tio_dmabuf_begin_cpu_access,
	.end_cpu_access = tio_dmabuf_end_cpu_access,
	.mmap = tio_dmabuf_mmap,
	.vmap = tio_dmabuf_vmap,
	.vunmap = tio_dmabuf_vunmap,
};

/*
 * The buffer's live dma-buf with a file reference, or a new one.
 * Context: takes buf->lock.
 */
static struct dma_buf *tio_dmabuf_get_or_export(struct tio_buffer *buf)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp_info);
	struct dma_buf *dmabuf;

	mutex_lock(&buf->lock);
	dmabuf = buf->dmabuf;
	/*
	 * A dma-buf whose last fd is being closed has a zero file count but
	 * has not reached its release yet (which waits for buf->lock, so the
	 * file is still there): export a new one then.
	 */
	if (dmabuf && tio_file_get_live(dmabuf->file))
		goto out;
	/* Before anyone can attach, map or vmap it (tio_spare.c). */
	WRITE_ONCE(buf->exposed, true);
	exp_info.ops = &tio_dmabuf_ops;
	exp_info.size = buf->size;
	exp_info.flags = buf->readonly ? O_RDONLY : O_RDWR;
	exp_info.priv = buf;
	exp_info.resv = &buf->resv;
	kref_get(&buf->obj.ref);
	dmabuf = dma_buf_export(&exp_info);
	if (IS_ERR(dmabuf)) {
		/* The caller's reference keeps this from being the last. */
		tio_obj_put(&buf->obj);
		goto out;
	}
	buf->dmabuf = dmabuf;
out:
	mutex_unlock(&buf->lock);
	return dmabuf;
}

/**
 * tio_dmabuf_export() - a new fd for the buffer's dma-buf
 * @buf: a referenced buffer
 * @flags: TIO_EXPORT_F_*
 * @call: the call: the fd is installed once it reached userspace
 *
 * Return: the reserved fd; -EACCES when TIO_EXPORT_F_RDWR asks for a read-only
 * buffer; -ENOMEM, -EMFILE or a dma_buf_export() error.
 */
int tio_dmabuf_export(struct tio_buffer *buf, u32 flags, struct tio_call *call)
{
	struct dma_buf *dmabuf;
	int fd;

	if ((flags & TIO_EXPORT_F_RDWR) && buf->readonly)
		return -EACCES;
	if (buf->kind == TIO_BUF_KIND_IMPORT) {
		/* Re-export: the original dma-buf, as DRM PRIME does. */
		dmabuf = buf->dmabuf;
		get_dma_buf(dmabuf);
	} else {
		dmabuf = tio_dmabuf_get_or_export(buf);
		if (IS_ERR(dmabuf))
			return PTR_ERR(dmabuf);
	}
	/* The dma-buf's reference is its file's: the queue takes it. */
	fd = tio_fd_reserve(call, dmabuf->file, flags & TIO_EXPORT_F_CLOEXEC);
	if (fd < 0)
		dma_buf_put(dmabuf);
	return fd;
}

static enum dma_data_direction tio_import_dir(struct tio_buffer *buf)
{
	return buf->readonly ? DMA_TO_DEVICE : DMA_BIDIRECTIONAL;
}

/**
 * tio_dmabuf_import() - attach and map a dma-buf for an IMPORT buffer
 * @buf: a new buffer of kind TIO_BUF_KIND_IMPORT
 * @tf: the importing file
 * @fd: the dma-buf fd
 *
 * A dma-buf opened read-only is mapped DMA_TO_DEVICE and only mapped
 * read-only; a tensorio dma-buf brings its tensor descriptor along.
 *
 * The mapping keeps the exporter's pages pinned for as long as the buffer
 * lives (a static attachment), so the importer pays for them like for
 * BUF_ALLOC, before they are mapped: its memlock and max_pinned are
 * charged with the dma-buf's size. A tensorio dma-buf is not charged
 * again: its exporter already pays for those very pages.
 *
 * Return: 0; -EBADF for a bad fd; -EINVAL for an fd that is not a
 * dma-buf; -ENOMEM or -EPERM over the memlock limits; an attach or map
 * error of the exporter. On error @buf holds at most the charge, which
 * its release returns.
 */
int tio_dmabuf_import(struct tio_buffer *buf, struct tio_file *tf, int fd)
{
	struct dma_buf_attachment *attach;
	struct dma_buf *dmabuf;
	struct sg_table *sgt;
	int ret;

	dmabuf = dma_buf_get(fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	if (dmabuf->ops != &tio_dmabuf_ops) {
		ret = tio_buffer_charge(buf, tf, PAGE_ALIGN(dmabuf->size) >> PAGE_SHIFT);
		if (ret)
			goto err_put;
	}
	buf->readonly = !(dmabuf->file->f_mode & FMODE_WRITE);
	attach = dma_buf_attach(dmabuf, tio_device);
	if (IS_ERR(attach)) {
		ret = PTR_ERR(attach);
		goto err_put;
	}
	sgt = dma_buf_map_attachment_unlocked(attach, tio_import_dir(buf));
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
		goto err_detach;
	}
	/*
	 * No kernel mapping is taken here: nothing uses one, and a failing
	 * exporter vmap (any allocation failure) is a WARN in dma_buf_vmap().
	 */
	if (dmabuf->ops == &tio_dmabuf_ops) {
		struct tio_buffer *src = dmabuf->priv;

		mutex_lock(&src->lock);
		buf->desc = src->desc;
		buf->has_desc = src->has_desc;
		mutex_unlock(&src->lock);
	}
	buf->dmabuf = dmabuf;
	buf->attach = attach;
	buf->sgt = sgt;
	buf->size = dmabuf->size;
	return 0;

err_detach:
	dma_buf_detach(dmabuf, attach);
err_put:
	dma_buf_put(dmabuf);
	buf->readonly = false;
	return ret;
}

/**
 * tio_dmabuf_import_release() - undo tio_dmabuf_import()
 * @buf: an IMPORT buffer being released (possibly never imported)
 */
void tio_dmabuf_import_release(struct tio_buffer *buf)
{
	if (!buf->dmabuf)
		return;
	dma_buf_unmap_attachment_unlocked(buf->attach, buf->sgt,
					  tio_import_dir(buf));
	dma_buf_detach(buf->dmabuf, buf->attach);
	dma_buf_put(buf->dmabuf);
}
