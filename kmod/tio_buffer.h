/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tensor buffers: the structure shared by tio_buffer.c (commands, mmap),
 * tio_dmabuf.c (exporter and importer), tio_desc.c (tensor descriptors)
 * and tio_memlock.c (pinned-memory accounting).
 *
 * Lifetime: a buffer is a struct tio_obj. References are held by the
 * file's table (until BUF_FREE or close), by every lookup, by every
 * device-fd mapping (vm_ops open/close) and by its exported dma-buf
 * (dropped in the dma-buf's release). The last reference frees the
 * backing and returns the memlock charge, whenever that happens.
 *
 * Locking: @lock (a mutex) protects @dmabuf, @desc, @has_desc and
 * @attachments. It nests inside the dma-buf's dma_resv lock (the dma-buf
 * core calls map/unmap with it held on newer kernels, and for a dynamic
 * importer such as an RDMA dmabuf MR on every kernel) and is never held
 * while taking a dma_resv lock or mmap_lock: mmap_lock, then dma_resv,
 * then @lock. tio_dmabuf_lockdep_prime() records that order at load.
 */
#ifndef _TIO_BUFFER_H
#define _TIO_BUFFER_H

#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/list.h>
#include <linux/mutex.h>

#include "tio_priv.h"

/**
 * struct tio_buffer - a tensor buffer
 * @obj: object header (handle, refcount)
 * @kind: TIO_BUF_KIND_*
 * @readonly: pinned with TIO_PIN_F_READONLY: no writable mappings
 * @size: bytes, a multiple of PAGE_SIZE for ALLOC and USER
 * @npages: pages in @pages; IMPORT: pages charged for the mapped dma-buf
 * @pages: the backing pages (ALLOC: allocated, USER: pinned)
 * @exposed: ALLOC: @pages were mapped or exported (set before they are),
 *	     so they are no longer known to be zero (tio_spare.c)
 * @mm: the mm charged for @npages (mmgrab reference), or NULL
 * @resv: reservation object of ALLOC and USER buffers, given to the
 *	  exported dma-buf so that every buffer has one from the start
 * @lock: see the file comment
 * @dmabuf: ALLOC and USER: the exported dma-buf, no reference (cleared
 *	    by its release); IMPORT: the imported dma-buf, referenced
 * @attachments: struct tio_attach of the exported dma-buf's importers
 * @has_desc: @desc is valid
 * @desc: the tensor descriptor
 * @attach: IMPORT: our attachment to @dmabuf
 * @sgt: IMPORT: the mapped attachment
 */
struct tio_buffer {
	struct tio_obj obj;
	u32 kind;
	bool readonly;
	size_t size;
	unsigned long npages;
	struct page **pages;
	bool exposed;
	struct mm_struct *mm;
	struct dma_resv resv;
	struct mutex lock;		/* see the file comment */
	struct dma_buf *dmabuf;
	struct list_head attachments;
	bool has_desc;
	struct tio_tensor_desc desc;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
};

static inline struct tio_buffer *to_tio_buffer(struct tio_obj *obj)
{
	return container_of(obj, struct tio_buffer, obj);
}

/* tio_buffer.c */
struct tio_buffer *tio_buffer_alloc_struct(u32 kind);
void tio_buffer_free_struct(struct tio_buffer *buf);
int tio_buffer_vma_setup(struct tio_buffer *buf, struct vm_area_struct *vma);
int tio_buffer_charge(struct tio_buffer *buf, struct tio_file *tf,
		      unsigned long npages);

/* tio_dmabuf.c */
int tio_dmabuf_export(struct tio_buffer *buf, u32 flags, struct tio_call *call);
int tio_dmabuf_import(struct tio_buffer *buf, struct tio_file *tf, int fd);
void tio_dmabuf_import_release(struct tio_buffer *buf);
void tio_dmabuf_lockdep_prime(void);

/* tio_desc.c */
int tio_desc_check(const struct tio_tensor_desc *desc, u64 size);
int tio_desc_from_user(struct tio_tensor_desc *desc, u64 uptr, u64 size);

/* tio_memlock.c */
int tio_memlock_charge(struct mm_struct *mm, unsigned long npages);
void tio_memlock_uncharge(struct mm_struct *mm, unsigned long npages);

#endif /* _TIO_BUFFER_H */
