// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The user backend's buffers: memfds, mapped and mlock()ed (charged to
 * RLIMIT_MEMLOCK); export goes through /dev/udmabuf when it exists;
 * import takes any dma-buf fd and maps it. A buffer's fences are the
 * timeline points attached to it (user_timeline.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/udmabuf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dev/backend/user_internal.h"

/* Lock @size bytes of the user's at @addr, if the limits allow it (memlimit.c). */
static int ub_lock(struct ub_state *ub, void *addr, uint64_t size)
{
	char why[8];

	if (tio_mem_check(size, __atomic_load_n(&ub->locked, __ATOMIC_RELAXED), why,
			  sizeof(why)) || mlock(addr, size) < 0)
		return -ENOMEM;
	__atomic_add_fetch(&ub->locked, size, __ATOMIC_RELAXED);
	return 0;
}

static void ub_unlock(struct ub_state *ub, void *addr, uint64_t size)
{
	munlock(addr, size);
	__atomic_sub_fetch(&ub->locked, size, __ATOMIC_RELAXED);
}

void tio_ub_buf_free(struct ub_state *ub, struct ub_obj *o)
{
	size_t i;

	for (i = 0; i < o->natt; i++)
		tio_ub_tl_put(o->att[i].tl);
	free(o->att);
	if (o->bkind == TIO_BUF_KIND_ALLOC) {
		munmap(o->addr, o->size);
		__atomic_sub_fetch(&ub->locked, o->size, __ATOMIC_RELAXED);
	} else if (o->bkind == TIO_BUF_KIND_USER) {
		ub_unlock(ub, o->addr, o->size);
	}
	if (o->fd >= 0)
		close(o->fd);
	if (o->dmabuf >= 0)
		close(o->dmabuf);
	free(o);
}

static struct ub_obj *ub_buf_new(uint32_t kind)
{
	struct ub_obj *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->type = UB_BUF;
	o->bkind = kind;
	o->fd = -1;
	o->dmabuf = -1;
	return o;
}

static int ub_desc_in(struct ub_obj *o, uint64_t desc_ptr)
{
	const struct tio_tensor_desc *d = (const void *)(uintptr_t)desc_ptr;
	int ret;

	if (!desc_ptr)
		return 0;
	ret = tio_desc_validate(d, o->size);
	if (ret)
		return ret;
	o->desc = *d;
	o->has_desc = 1;
	return 0;
}

static int ub_size_check(struct tio_ctx *ctx, uint64_t size, uint64_t *rounded)
{
	if (!size)
		return -EINVAL;
	if (size > ctx->info.max_buf_size)
		return -E2BIG;
	*rounded = (size + ctx->page_size - 1) & ~((uint64_t)ctx->page_size - 1);
	return 0;
}

int tio_ub_buf_alloc(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_buf_alloc *a = p;
	struct ub_obj *o;
	char why[8];
	int ret;

	if (a->flags)
		return -EINVAL;
	o = ub_buf_new(TIO_BUF_KIND_ALLOC);
	if (!o)
		return -ENOMEM;
	ret = ub_size_check(ctx, a->size, &o->size);
	if (ret)
		goto err_free;
	ret = ub_desc_in(o, a->desc_ptr);
	if (ret)
		goto err_free;
	/* Before the memfd grows: locking too much is an OOM kill, not an error. */
	ret = tio_mem_check(o->size, __atomic_load_n(&ub->locked, __ATOMIC_RELAXED),
			    why, sizeof(why)) ? -ENOMEM : 0;
	if (ret)
		goto err_free;
	ret = tio_ub_memfd("tensorio-buffer", o->size, &o->fd);
	if (ret)
		goto err_free;
	o->addr = mmap(NULL, o->size, PROT_READ | PROT_WRITE, MAP_SHARED, o->fd, 0);
	if (o->addr == MAP_FAILED) {
		ret = -errno;
		goto err_close;
	}
	/* Charged to RLIMIT_MEMLOCK, like the driver's account_locked_vm(). */
	if (mlock(o->addr, o->size) < 0) {
		ret = -ENOMEM;
		goto err_unmap;
	}
	__atomic_add_fetch(&ub->locked, o->size, __ATOMIC_RELAXED);
	ret = tio_ub_publish(ub, o, &a->handle, &a->mmap_offset);
	if (ret)
		goto err_unlock;
	return 0;

err_unlock:
	__atomic_sub_fetch(&ub->locked, o->size, __ATOMIC_RELAXED);
err_unmap:
	munmap(o->addr, o->size);
err_close:
	close(o->fd);
err_free:
	free(o);
	return ret;
}

int tio_ub_buf_pin(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_buf_pin *a = p;
	size_t pg = ctx->page_size;
	unsigned char *vec;
	struct ub_obj *o;
	int ret;

	if (a->flags & ~TIO_PIN_F_READONLY)
		return -EINVAL;
	if (!a->size || a->addr % pg || a->size % pg || a->addr + a->size < a->addr)
		return -EINVAL;
	if (a->size > ctx->info.max_buf_size)
		return -E2BIG;
	/* Unmapped memory: -EFAULT, as pin_user_pages() reports. */
	vec = malloc(a->size / pg);
	if (!vec)
		return -ENOMEM;
	ret = mincore((void *)(uintptr_t)a->addr, a->size, vec);
	free(vec);
	if (ret < 0)
		return errno == ENOMEM ? -EFAULT : -errno;
	o = ub_buf_new(TIO_BUF_KIND_USER);
	if (!o)
		return -ENOMEM;
	o->addr = (void *)(uintptr_t)a->addr;
	o->size = a->size;
	ret = ub_desc_in(o, a->desc_ptr);
	if (ret)
		goto err_free;
	ret = ub_lock(ub, o->addr, o->size);
	if (ret)
		goto err_free;
	ret = tio_ub_publish(ub, o, &a->handle, &a->mmap_offset);
	if (ret)
		goto err_unlock;
	return 0;

err_unlock:
	ub_unlock(ub, o->addr, o->size);
err_free:
	free(o);
	return ret;
}

static int ub_is_dmabuf(int fd)
{
	char path[64], link[256];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return 0;
	link[n] = 0;
	return !strncmp(link, "/dmabuf:", 8) || !strcmp(link, "anon_inode:dmabuf");
}

int tio_ub_buf_import(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_buf_import *a = p;
	struct ub_obj *o;
	off_t size;
	int ret;

	(void)ctx;
	if (a->flags || a->pad)
		return -EINVAL;
	if (a->fd < 0 || fcntl(a->fd, F_GETFD) < 0)
		return -EBADF;
	if (!ub_is_dmabuf(a->fd))
		return -EINVAL;
	size = lseek(a->fd, 0, SEEK_END);
	if (size <= 0)
		return -EINVAL;
	o = ub_buf_new(TIO_BUF_KIND_IMPORT);
	if (!o)
		return -ENOMEM;
	o->size = (uint64_t)size;
	o->fd = fcntl(a->fd, F_DUPFD_CLOEXEC, 0);
	if (o->fd < 0) {
		ret = -errno;
		goto err_free;
	}
	ret = tio_ub_publish(ub, o, &a->handle, &a->mmap_offset);
	if (ret)
		goto err_close;
	a->size = o->size;
	return 0;

err_close:
	close(o->fd);
err_free:
	free(o);
	return ret;
}

/* Under ub->lock. */
static int ub_buf_export_locked(struct ub_obj *o, struct tio_buf_export *a)
{
	struct udmabuf_create c;
	int fd, dev;

	if (o->bkind == TIO_BUF_KIND_IMPORT) {
		fd = o->fd;
	} else {
		if (o->bkind == TIO_BUF_KIND_USER)
			return -EOPNOTSUPP;	/* udmabuf needs a memfd */
		if (o->dmabuf < 0) {
			dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
			if (dev < 0)
				return -EOPNOTSUPP;
			memset(&c, 0, sizeof(c));
			c.memfd = (uint32_t)o->fd;
			c.flags = UDMABUF_FLAGS_CLOEXEC;
			c.size = o->size;
			o->dmabuf = ioctl(dev, UDMABUF_CREATE, &c);
			close(dev);
			if (o->dmabuf < 0) {
				o->dmabuf = -1;
				return -errno;
			}
		}
		fd = o->dmabuf;
	}
	a->fd = fcntl(fd, (a->flags & TIO_EXPORT_F_CLOEXEC) ?
		      F_DUPFD_CLOEXEC : F_DUPFD, 0);
	return a->fd < 0 ? -errno : 0;
}

static int ub_tensor_desc_out(struct ub_obj *o, uint64_t ptr)
{
	if (ptr && o->has_desc)
		memcpy((void *)(uintptr_t)ptr, &o->desc, sizeof(o->desc));
	return 0;
}

int tio_ub_buf_wait(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_buf_wait *a = p;
	struct ub_attach *list = NULL;
	size_t n = 0, i;
	struct ub_obj *o;
	int ret = 0, st, status = 0;

	(void)ctx;
	if ((a->flags & ~(TIO_RESV_F_WRITE | TIO_WAIT_F_ABSOLUTE)) || a->pad)
		return -EINVAL;
	pthread_mutex_lock(&ub->lock);
	o = ub_lookup(ub, a->handle, UB_BUF);
	if (!o) {
		pthread_mutex_unlock(&ub->lock);
		return -ENOENT;
	}
	if (o->natt) {
		list = malloc(o->natt * sizeof(*list));
		if (!list) {
			pthread_mutex_unlock(&ub->lock);
			return -ENOMEM;
		}
	}
	for (i = 0; i < o->natt; i++) {
		if ((a->flags & TIO_RESV_F_WRITE) && !o->att[i].write)
			continue;
		list[n] = o->att[i];
		list[n++].tl->refs++;
	}
	pthread_mutex_unlock(&ub->lock);
	for (i = 0; i < n && !ret; i++) {
		st = 0;
		/* A relative timeout is spent from the first wait on. */
		ret = tio_ub_tl_wait(ub, list[i].tl, list[i].seqno, a->flags,
				     a->timeout_ns, &st);
		if (!ret && st && !status)
			status = st;
	}
	pthread_mutex_lock(&ub->lock);
	for (i = 0; i < n; i++)
		tio_ub_tl_put(list[i].tl);
	pthread_mutex_unlock(&ub->lock);
	free(list);
	if (!ret)
		a->status = status;
	return ret;
}

/* The handlers below run under ub->lock. */
int tio_ub_buf_free_cmd(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_handle_op *a = p;
	struct ub_obj *o;
	int ret;

	(void)ctx;
	ret = ub_get(ub, a->flags, a->handle, UB_BUF, &o);
	if (ret)
		return ret;
	tio_ub_remove(ub, o);
	tio_ub_buf_free(ub, o);
	return 0;
}

int tio_ub_buf_info(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_buf_info *a = p;
	struct ub_obj *o;
	int ret;

	(void)ctx;
	ret = ub_get(ub, a->flags, a->handle, UB_BUF, &o);
	if (ret)
		return ret;
	a->size = o->size;
	a->mmap_offset = (uint64_t)o->handle << UB_HANDLE_SHIFT;
	a->kind = o->bkind;
	a->state = (o->has_desc ? TIO_BUF_S_DESC : 0) |
		   (o->dmabuf >= 0 ? TIO_BUF_S_EXPORTED : 0);
	return ub_tensor_desc_out(o, a->desc_ptr);
}

int tio_ub_buf_set_desc(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_buf_desc *a = p;
	struct ub_obj *o;
	int ret;

	(void)ctx;
	if (a->flags & ~TIO_DESC_CLEAR)
		return -EINVAL;
	o = ub_lookup(ub, a->handle, UB_BUF);
	if (!o)
		return -ENOENT;
	if (a->flags & TIO_DESC_CLEAR) {
		if (a->desc_ptr)
			return -EINVAL;
		o->has_desc = 0;
		return 0;
	}
	if (!a->desc_ptr)
		return -EINVAL;
	ret = tio_desc_validate((const void *)(uintptr_t)a->desc_ptr, o->size);
	if (ret)
		return ret;
	memcpy(&o->desc, (const void *)(uintptr_t)a->desc_ptr, sizeof(o->desc));
	o->has_desc = 1;
	return 0;
}

int tio_ub_buf_export(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_buf_export *a = p;
	struct ub_obj *o;

	(void)ctx;
	if ((a->flags & ~(TIO_EXPORT_F_CLOEXEC | TIO_EXPORT_F_RDWR)) || a->pad)
		return -EINVAL;
	o = ub_lookup(ub, a->handle, UB_BUF);
	if (!o)
		return -ENOENT;
	return ub_buf_export_locked(o, a);
}

int tio_ub_buf_attach_fence(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_buf_attach *a = p;
	struct ub_attach *n;
	struct ub_obj *o, *s;
	size_t i, j;

	(void)ctx;
	if ((a->flags & ~TIO_RESV_F_WRITE) || a->pad)
		return -EINVAL;
	o = ub_lookup(ub, a->handle, UB_BUF);
	s = ub_lookup(ub, a->stream, UB_STREAM);
	if (!o || !s)
		return -ENOENT;
	if (!a->seqno || a->seqno > s->tl->emitted)
		return -EINVAL;
	/* Drop cleanly signalled points first, as dma_resv prunes. */
	for (i = j = 0; i < o->natt; i++) {
		struct ub_attach *x = &o->att[i];

		if (x->seqno <= x->tl->signalled && !tio_ub_tl_status(x->tl, x->seqno))
			tio_ub_tl_put(x->tl);
		else
			o->att[j++] = *x;
	}
	o->natt = j;
	n = realloc(o->att, (o->natt + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	o->att = n;
	n[o->natt].tl = s->tl;
	n[o->natt].seqno = a->seqno;
	n[o->natt].write = !!(a->flags & TIO_RESV_F_WRITE);
	o->natt++;
	s->tl->refs++;
	return 0;
}
