// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The user backend: the driver's commands emulated in this process, with
 * the driver's semantics and errors (docs/uapi.md), so that everything
 * above the backend runs unchanged without /dev/tensorio.
 *
 * - Buffers are memfds, mapped and mlock()ed (charged to RLIMIT_MEMLOCK);
 *   export goes through /dev/udmabuf when it exists; import takes any
 *   dma-buf fd and maps it.
 * - Streams are timelines whose last signalled seqno lives in a shared
 *   memfd page next to a futex word: signal stores the seqno (release),
 *   bumps the futex word and wakes every waiter.
 * - sync_file export/import need the kernel: -EOPNOTSUPP.
 *
 * Locking: ub->lock (a mutex) guards the handle table, every object and
 * every timeline's bookkeeping. Waiters sleep on the futex without it,
 * holding a reference on the timeline.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <linux/futex.h>
#include <linux/udmabuf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dev/dev_internal.h"

#define UB_HANDLE_SHIFT 40
#define UB_MAX_BUF_SIZE (UINT64_C(1) << 40)
#define UB_MAX_SUBMIT 1024
/* The driver's default fence_timeout_ms, reported by STREAM_CREATE. */
#define UB_FENCE_TIMEOUT_MS 10000u

enum { UB_BUF = 1, UB_STREAM = 2 };

/* The shared page of a timeline. */
struct ub_page {
	uint64_t signalled;	/* last signalled seqno (the seqno word) */
	uint32_t futex;		/* bumped on every signal */
	uint32_t waiters;	/* threads about to sleep or asleep on @futex */
};

struct ub_err {
	uint64_t first, last;
	int error;
};

struct ub_tl {
	int refs;
	int memfd;
	struct ub_page *page;
	uint64_t context;
	uint64_t emitted;
	uint64_t signalled;
	struct ub_err *errs;
	size_t nerrs;
};

struct ub_attach {
	struct ub_tl *tl;
	uint64_t seqno;
	int write;
};

struct ub_obj {
	int type;
	uint32_t handle;
	/* buffers */
	uint32_t bkind;
	int fd;			/* memfd or imported dma-buf dup, else -1 */
	void *addr;		/* the locked mapping or the user's memory */
	uint64_t size;
	int has_desc;
	struct tio_tensor_desc desc;
	int dmabuf;		/* our udmabuf, else -1 */
	struct ub_attach *att;
	size_t natt;
	/* streams */
	struct ub_tl *tl;
};

struct ub_state {
	pthread_mutex_t lock;
	struct ub_obj **objs;	/* objs[handle - 1] */
	size_t cap;
	size_t hint;		/* no free slot below it */
	uint64_t next_context;
	uint64_t locked;	/* bytes mlock()ed for buffers (atomic) */
};

static long ub_futex(uint32_t *uaddr, int op, uint32_t val,
		     const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

/*
 * The largest buffer: the driver has a module parameter for it, this
 * backend TIO_MAX_BUF_SIZE (bytes); by default the machine's memory, as a
 * locked buffer can never be larger.
 */
static uint64_t ub_max_buf_size(void)
{
	const char *e = getenv("TIO_MAX_BUF_SIZE");
	unsigned long long v;
	char *end;
	uint64_t total = tio_mem_total();

	if (e && *e) {
		errno = 0;
		v = strtoull(e, &end, 0);
		if (!errno && !*end && v)
			return v < UB_MAX_BUF_SIZE ? v : UB_MAX_BUF_SIZE;
	}
	return total < UB_MAX_BUF_SIZE ? total : UB_MAX_BUF_SIZE;
}

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

static const char *ub_missing_handler(void);

int tio_backend_user_open(struct tio_ctx *ctx, char *why, size_t len)
{
	const char *missing = ub_missing_handler();
	struct ub_state *ub;

	if (missing) {
		snprintf(why, len, "the user backend has no handler for %s", missing);
		return -ENOSYS;
	}
	ub = calloc(1, sizeof(*ub));
	if (!ub) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&ub->lock, NULL);
	ub->next_context = 1;
	ctx->priv = ub;
	memset(&ctx->info, 0, sizeof(ctx->info));
	ctx->info.version = TIO_UAPI_VERSION;
	ctx->info.features = TIO_FEAT_BUFFERS | TIO_FEAT_PIN_USER |
			     TIO_FEAT_STREAMS | TIO_FEAT_DMA_RESV |
			     TIO_FEAT_SUBMIT;
	if (!access("/dev/udmabuf", R_OK | W_OK))
		ctx->info.features |= TIO_FEAT_DMABUF;
	ctx->info.max_buf_size = ub_max_buf_size();
	ctx->info.max_pinned = ctx->info.max_buf_size;
	ctx->info.max_submit = UB_MAX_SUBMIT;
	return 0;
}

/* Table, under ub->lock. */
static int ub_insert(struct ub_state *ub, struct ub_obj *o)
{
	size_t i;

	for (i = ub->hint; i < ub->cap; i++)
		if (!ub->objs[i])
			goto found;
	if (ub->cap >= UINT32_MAX / 2)
		return -ENOSPC;
	{
		size_t ncap = ub->cap ? ub->cap * 2 : 64;
		struct ub_obj **n = realloc(ub->objs, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		memset(n + ub->cap, 0, (ncap - ub->cap) * sizeof(*n));
		ub->objs = n;
		i = ub->cap;
		ub->cap = ncap;
	}
found:
	ub->objs[i] = o;
	ub->hint = i + 1;
	o->handle = (uint32_t)i + 1;
	return 0;
}

static struct ub_obj *ub_lookup(struct ub_state *ub, uint32_t handle, int type)
{
	struct ub_obj *o;

	if (!handle || handle > ub->cap)
		return NULL;
	o = ub->objs[handle - 1];
	return o && o->type == type ? o : NULL;
}

/* A handler's common opening: no flags, and @handle names a live @type. */
static int ub_get(struct ub_state *ub, uint32_t flags, uint32_t handle, int type,
		  struct ub_obj **out)
{
	if (flags)
		return -EINVAL;
	*out = ub_lookup(ub, handle, type);
	return *out ? 0 : -ENOENT;
}

static void ub_remove(struct ub_state *ub, struct ub_obj *o)
{
	ub->objs[o->handle - 1] = NULL;
	if (o->handle - 1 < ub->hint)
		ub->hint = o->handle - 1;
}

/* Timelines, under ub->lock. */
static void ub_tl_put(struct ub_tl *tl)
{
	if (--tl->refs)
		return;
	munmap(tl->page, sizeof(*tl->page));
	close(tl->memfd);
	free(tl->errs);
	free(tl);
}

/*
 * Publish the seqno and wake sleepers. The futex syscall is skipped when
 * nobody sleeps (pollers of the seqno word, or no waiter at all): it runs
 * under ub->lock, and a poller that answers at once would otherwise find
 * the lock held through the syscall. Sequentially consistent accesses here
 * and in ub_tl_wait() make sure a waiter either sees the new seqno or is
 * counted before the count is read.
 */
static void ub_tl_publish(struct ub_tl *tl)
{
	__atomic_store_n(&tl->page->signalled, tl->signalled, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&tl->page->futex, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&tl->page->waiters, __ATOMIC_SEQ_CST))
		ub_futex(&tl->page->futex, FUTEX_WAKE, INT_MAX, NULL);
}

static int ub_tl_signal(struct ub_tl *tl, uint64_t seqno, int error)
{
	if (seqno > tl->emitted)
		return -EINVAL;
	if (seqno <= tl->signalled)
		return 0;
	if (error) {
		struct ub_err *n = realloc(tl->errs, (tl->nerrs + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		tl->errs = n;
		n[tl->nerrs].first = tl->signalled + 1;
		n[tl->nerrs].last = seqno;
		n[tl->nerrs].error = error;
		tl->nerrs++;
	}
	tl->signalled = seqno;
	ub_tl_publish(tl);
	return 0;
}

static int ub_tl_status(const struct ub_tl *tl, uint64_t seqno)
{
	size_t i;

	for (i = tl->nerrs; i-- > 0;)
		if (seqno >= tl->errs[i].first && seqno <= tl->errs[i].last)
			return tl->errs[i].error;
	return 0;
}

static void ub_deadline(int64_t timeout_ns, unsigned int flags, struct timespec *ts)
{
	if (flags & TIO_WAIT_F_ABSOLUTE) {
		ts->tv_sec = timeout_ns / 1000000000;
		ts->tv_nsec = timeout_ns % 1000000000;
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += timeout_ns / 1000000000;
	ts->tv_nsec += timeout_ns % 1000000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/*
 * Wait for @seqno of @tl (the caller holds a reference, not the lock).
 * Return: 0 with *status set, -ETIME, or -EINTR.
 */
static int ub_tl_wait(struct ub_state *ub, struct ub_tl *tl, uint64_t seqno,
		      unsigned int flags, int64_t timeout_ns, int *status)
{
	struct timespec ts;
	int forever = timeout_ns < 0 && !(flags & TIO_WAIT_F_ABSOLUTE);

	if (!forever)
		ub_deadline(timeout_ns, flags, &ts);
	if (__atomic_load_n(&tl->page->signalled, __ATOMIC_ACQUIRE) < seqno &&
	    !forever && !timeout_ns && !(flags & TIO_WAIT_F_ABSOLUTE))
		return -ETIME;
	for (;;) {
		uint32_t f;
		long r;
		int err;

		/* Counted before the last look: see ub_tl_publish(). */
		__atomic_fetch_add(&tl->page->waiters, 1, __ATOMIC_SEQ_CST);
		f = __atomic_load_n(&tl->page->futex, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&tl->page->signalled, __ATOMIC_SEQ_CST) >= seqno) {
			__atomic_fetch_sub(&tl->page->waiters, 1, __ATOMIC_RELAXED);
			break;
		}
		r = ub_futex(&tl->page->futex, FUTEX_WAIT_BITSET, f,
			     forever ? NULL : &ts);
		err = errno;
		__atomic_fetch_sub(&tl->page->waiters, 1, __ATOMIC_RELAXED);
		if (r < 0 && err == ETIMEDOUT) {
			if (__atomic_load_n(&tl->page->signalled, __ATOMIC_ACQUIRE) >= seqno)
				break;
			return -ETIME;
		}
	}
	pthread_mutex_lock(&ub->lock);
	*status = ub_tl_status(tl, seqno);
	pthread_mutex_unlock(&ub->lock);
	return 0;
}

static int ub_memfd(const char *name, uint64_t size, int *fd)
{
	*fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (*fd < 0)
		return -errno;
	if (ftruncate(*fd, (off_t)size) < 0 ||
	    fcntl(*fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0) {
		int err = errno;

		close(*fd);
		return -err;
	}
	return 0;
}

static void ub_buf_free(struct ub_state *ub, struct ub_obj *o)
{
	size_t i;

	for (i = 0; i < o->natt; i++)
		ub_tl_put(o->att[i].tl);
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

static int ub_publish(struct ub_state *ub, struct ub_obj *o, __u32 *handle,
		      __u64 *off)
{
	int ret;

	pthread_mutex_lock(&ub->lock);
	ret = ub_insert(ub, o);
	pthread_mutex_unlock(&ub->lock);
	if (ret)
		return ret;
	*handle = o->handle;
	if (off)
		*off = (uint64_t)o->handle << UB_HANDLE_SHIFT;
	return 0;
}

static int ub_buf_alloc(struct tio_ctx *ctx, struct ub_state *ub, void *p)
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
	ret = ub_memfd("tensorio-buffer", o->size, &o->fd);
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
	ret = ub_publish(ub, o, &a->handle, &a->mmap_offset);
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

static int ub_buf_pin(struct tio_ctx *ctx, struct ub_state *ub, void *p)
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
	ret = ub_publish(ub, o, &a->handle, &a->mmap_offset);
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

static int ub_buf_import(struct tio_ctx *ctx, struct ub_state *ub, void *p)
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
	ret = ub_publish(ub, o, &a->handle, &a->mmap_offset);
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

static int ub_stream_create(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_stream_create *a = p;
	struct ub_tl *tl;
	struct ub_obj *o;
	int ret;

	/*
	 * The bound is checked and reported as the driver's default would
	 * be; nothing here reaches another driver, so nothing expires.
	 */
	if (a->flags || a->pad || a->fence_timeout_ms > UB_FENCE_TIMEOUT_MS)
		return -EINVAL;
	tl = calloc(1, sizeof(*tl));
	o = calloc(1, sizeof(*o));
	if (!tl || !o) {
		ret = -ENOMEM;
		goto err_free;
	}
	ret = ub_memfd("tensorio-seqno", ctx->page_size, &tl->memfd);
	if (ret)
		goto err_free;
	tl->page = mmap(NULL, ctx->page_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			tl->memfd, 0);
	if (tl->page == MAP_FAILED) {
		ret = -errno;
		close(tl->memfd);
		goto err_free;
	}
	tl->refs = 1;
	o->type = UB_STREAM;
	o->fd = -1;
	o->dmabuf = -1;
	o->tl = tl;
	pthread_mutex_lock(&ub->lock);
	tl->context = ub->next_context++;
	ret = ub_insert(ub, o);
	pthread_mutex_unlock(&ub->lock);
	if (ret) {
		munmap(tl->page, ctx->page_size);
		close(tl->memfd);
		goto err_free;
	}
	a->handle = o->handle;
	a->seqno_offset = (uint64_t)o->handle << UB_HANDLE_SHIFT;
	a->context = tl->context;
	a->fence_timeout_ms = a->fence_timeout_ms ?: UB_FENCE_TIMEOUT_MS;
	return 0;

err_free:
	free(tl);
	free(o);
	return ret;
}

static int ub_fence_wait(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_fence_wait *a = p;
	struct ub_tl *tl;
	struct ub_obj *o;
	int ret, status = 0;

	(void)ctx;
	if ((a->flags & ~TIO_WAIT_F_ABSOLUTE) || a->pad)
		return -EINVAL;
	pthread_mutex_lock(&ub->lock);
	o = ub_lookup(ub, a->stream, UB_STREAM);
	if (!o) {
		pthread_mutex_unlock(&ub->lock);
		return -ENOENT;
	}
	tl = o->tl;
	if (!a->seqno || a->seqno > tl->emitted) {
		pthread_mutex_unlock(&ub->lock);
		return -EINVAL;
	}
	tl->refs++;
	pthread_mutex_unlock(&ub->lock);
	ret = ub_tl_wait(ub, tl, a->seqno, a->flags, a->timeout_ns, &status);
	if (!ret)
		a->status = status;
	pthread_mutex_lock(&ub->lock);
	ub_tl_put(tl);
	pthread_mutex_unlock(&ub->lock);
	return ret;
}

static int ub_buf_wait(struct tio_ctx *ctx, struct ub_state *ub, void *p)
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
		ret = ub_tl_wait(ub, list[i].tl, list[i].seqno, a->flags,
				 a->timeout_ns, &st);
		if (!ret && st && !status)
			status = st;
	}
	pthread_mutex_lock(&ub->lock);
	for (i = 0; i < n; i++)
		ub_tl_put(list[i].tl);
	pthread_mutex_unlock(&ub->lock);
	free(list);
	if (!ret)
		a->status = status;
	return ret;
}

/* The handlers that run under ub->lock (struct ub_cmd's @locked). */
static int ub_buf_free_cmd(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_handle_op *a = p;
	struct ub_obj *o;
	int ret;

	(void)ctx;
	ret = ub_get(ub, a->flags, a->handle, UB_BUF, &o);
	if (ret)
		return ret;
	ub_remove(ub, o);
	ub_buf_free(ub, o);
	return 0;
}

static int ub_buf_info(struct tio_ctx *ctx, struct ub_state *ub, void *p)
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

static int ub_buf_set_desc(struct tio_ctx *ctx, struct ub_state *ub, void *p)
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

static int ub_buf_export(struct tio_ctx *ctx, struct ub_state *ub, void *p)
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

static int ub_buf_attach_fence(struct tio_ctx *ctx, struct ub_state *ub, void *p)
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

		if (x->seqno <= x->tl->signalled && !ub_tl_status(x->tl, x->seqno))
			ub_tl_put(x->tl);
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

static int ub_stream_destroy(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_handle_op *a = p;
	struct ub_tl *tl;
	struct ub_obj *s;
	int ret;

	(void)ctx;
	ret = ub_get(ub, a->flags, a->handle, UB_STREAM, &s);
	if (ret)
		return ret;
	ub_remove(ub, s);
	tl = s->tl;
	free(s);
	/* Cancel the points not signalled yet. */
	if (tl->emitted > tl->signalled)
		ub_tl_signal(tl, tl->emitted, -ECANCELED);
	ub_tl_put(tl);
	return 0;
}

static int ub_fence_emit(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_fence_emit *a = p;
	struct ub_obj *s;
	int ret;

	(void)ctx;
	ret = ub_get(ub, a->flags, a->stream, UB_STREAM, &s);
	if (ret)
		return ret;
	if (s->tl->emitted == UINT64_MAX)
		return -EOVERFLOW;
	a->seqno = ++s->tl->emitted;
	return 0;
}

static int ub_fence_signal(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_fence_signal *a = p;
	struct ub_obj *s;

	(void)ctx;
	if (a->flags || a->pad || a->error > 0 || a->error < -4095)
		return -EINVAL;
	s = ub_lookup(ub, a->stream, UB_STREAM);
	if (!s)
		return -ENOENT;
	return ub_tl_signal(s->tl, a->seqno, a->error);
}

/* The handlers that take ub->lock themselves, or need no lock. */
static int ub_info(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_info *a = p;

	if (a->flags)
		return -EINVAL;
	*a = ctx->info;
	a->pinned = __atomic_load_n(&ub->locked, __ATOMIC_RELAXED);
	return 0;
}

/* sync_file export/import and the command ring need the kernel. */
static int ub_needs_kernel(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	(void)ctx; (void)ub; (void)p;
	return -EOPNOTSUPP;
}

/* TIO_IOC_SUBMIT's semantics: in order, stop at a failure unless told. */
static int ub_submit_vec(struct tio_ctx *ctx, struct tio_cmd *cmds, uint32_t n,
			 unsigned int flags, uint32_t *done)
{
	uint32_t i, failed = 0;
	int ret;

	if ((flags & ~TIO_SUBMIT_F_CONTINUE) || !n || n > ctx->info.max_submit)
		return -EINVAL;
	*done = 0;
	for (i = 0; i < n; i++) {
		struct tio_cmd *c = &cmds[i];
		const struct tio_cmd_desc *cmd = tio_cmd_of(c->op);

		/* The driver's order of checks (tio_record_check()). */
		if (c->flags || c->pad)
			ret = -EINVAL;
		else if (!cmd)
			ret = -ENOTTY;
		else if (cmd->flags & TIO_CMD_F_NESTS)
			ret = -EINVAL;
		else
			ret = ctx->ops->exec(ctx, c->op, c->payload.bytes);
		c->result = ret;
		*done = i + 1;
		if (ret) {
			failed++;
			if (!(flags & TIO_SUBMIT_F_CONTINUE))
				break;
		}
	}
	return (int)failed;
}

static int ub_submit(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_submit *a = p;

	(void)ub;
	if (a->pad)
		return -EINVAL;
	return ub_submit_vec(ctx, (struct tio_cmd *)(uintptr_t)a->cmds_ptr, a->count,
			     a->flags, &a->done);
}

/* The backend's vectored submit: up to max_submit of @n records. */
static int ub_submit_some(struct tio_ctx *ctx, struct tio_cmd *cmds, uint32_t n,
			  unsigned int flags, uint32_t *done)
{
	return ub_submit_vec(ctx, cmds, n < ctx->info.max_submit ? n : ctx->info.max_submit,
			     flags, done);
}

/*
 * How this backend runs each row of the command table: a row without a
 * handler would be -ENOTTY here, so the backend refuses to open while
 * one lacks it (every user backend test fails, naming the command).
 */
static const struct ub_cmd {
	int (*run)(struct tio_ctx *ctx, struct ub_state *ub, void *payload);
	bool locked;	/* run under ub->lock */
} ub_cmds[TIO_CMD_COUNT] = {
	[TIO_CMD_INFO] = { ub_info, false },
	[TIO_CMD_BUF_ALLOC] = { ub_buf_alloc, false },
	[TIO_CMD_BUF_PIN_USER] = { ub_buf_pin, false },
	[TIO_CMD_BUF_FREE] = { ub_buf_free_cmd, true },
	[TIO_CMD_BUF_INFO] = { ub_buf_info, true },
	[TIO_CMD_BUF_SET_DESC] = { ub_buf_set_desc, true },
	[TIO_CMD_BUF_EXPORT] = { ub_buf_export, true },
	[TIO_CMD_BUF_IMPORT] = { ub_buf_import, false },
	[TIO_CMD_BUF_ATTACH_FENCE] = { ub_buf_attach_fence, true },
	[TIO_CMD_BUF_WAIT] = { ub_buf_wait, false },
	[TIO_CMD_STREAM_CREATE] = { ub_stream_create, false },
	[TIO_CMD_STREAM_DESTROY] = { ub_stream_destroy, true },
	[TIO_CMD_FENCE_EMIT] = { ub_fence_emit, true },
	[TIO_CMD_FENCE_SIGNAL] = { ub_fence_signal, true },
	[TIO_CMD_FENCE_WAIT] = { ub_fence_wait, false },
	[TIO_CMD_FENCE_EXPORT] = { ub_needs_kernel, false },
	[TIO_CMD_FENCE_IMPORT] = { ub_needs_kernel, false },
	[TIO_CMD_SUBMIT] = { ub_submit, false },
	[TIO_CMD_RING_SETUP] = { ub_needs_kernel, false },
	[TIO_CMD_RING_ENTER] = { ub_needs_kernel, false },
};

/* The first command table row without a handler, or NULL. */
static const char *ub_missing_handler(void)
{
	size_t i;

	for (i = 0; i < TIO_CMD_COUNT; i++)
		if (!ub_cmds[i].run)
			return tio_cmds[i].name;
	return NULL;
}

static int ub_exec(struct tio_ctx *ctx, unsigned int op, void *p)
{
	const struct tio_cmd_desc *cmd = tio_cmd_of(op);
	struct ub_state *ub = ctx->priv;
	const struct ub_cmd *h;
	int ret;

	if (!cmd || !(h = &ub_cmds[cmd - tio_cmds])->run)
		return -ENOTTY;
	if (!h->locked)
		return h->run(ctx, ub, p);
	pthread_mutex_lock(&ub->lock);
	ret = h->run(ctx, ub, p);
	pthread_mutex_unlock(&ub->lock);
	return ret;
}

static int ub_map(struct tio_ctx *ctx, uint64_t offset, size_t len, int prot,
		  void **addr)
{
	struct ub_state *ub = ctx->priv;
	uint64_t handle = offset >> UB_HANDLE_SHIFT;
	uint64_t off = offset & ((UINT64_C(1) << UB_HANDLE_SHIFT) - 1);
	struct ub_obj *o;
	void *p;
	int fd;

	pthread_mutex_lock(&ub->lock);
	if (handle > UINT32_MAX || !handle || handle > ub->cap || !ub->objs[handle - 1]) {
		pthread_mutex_unlock(&ub->lock);
		return -EINVAL;
	}
	o = ub->objs[handle - 1];
	if (o->type == UB_STREAM) {
		if (off || len != ctx->page_size) {
			pthread_mutex_unlock(&ub->lock);
			return -EINVAL;
		}
		if (prot & PROT_WRITE) {
			pthread_mutex_unlock(&ub->lock);
			return -EPERM;
		}
		fd = o->tl->memfd;
	} else {
		if (o->bkind == TIO_BUF_KIND_USER || off >= o->size ||
		    len > o->size - off) {
			pthread_mutex_unlock(&ub->lock);
			return -EINVAL;
		}
		/* The whole buffer: the mapping we hold already, not a second one. */
		if (o->addr && !off && len == o->size) {
			*addr = o->addr;
			pthread_mutex_unlock(&ub->lock);
			return 1;
		}
		fd = o->fd;
	}
	p = mmap(NULL, len, prot, MAP_SHARED, fd, (off_t)off);
	pthread_mutex_unlock(&ub->lock);
	if (p == MAP_FAILED)
		return -errno;
	*addr = p;
	return 0;
}

static void ub_unmap(struct tio_ctx *ctx, void *addr, size_t len)
{
	(void)ctx;
	munmap(addr, len);
}

static void ub_destroy(struct tio_ctx *ctx)
{
	struct ub_state *ub = ctx->priv;
	size_t i;

	/* tio_shutdown() only gets here with no object alive. */
	for (i = 0; i < ub->cap; i++) {
		struct ub_obj *o = ub->objs[i];

		if (!o)
			continue;
		if (o->type == UB_BUF) {
			ub_buf_free(ub, o);
		} else {
			ub_tl_put(o->tl);
			free(o);
		}
	}
	free(ub->objs);
	pthread_mutex_destroy(&ub->lock);
	free(ub);
	ctx->priv = NULL;
}

const struct tio_backend_ops tio_backend_user_ops = {
	.name = "user",
	.exec = ub_exec,
	.submit = ub_submit_some,
	.map = ub_map,
	.unmap = ub_unmap,
	.destroy = ub_destroy,
};
