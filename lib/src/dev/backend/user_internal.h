/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The user backend's state (backend_user.c), shared by its files:
 * user_table.c (handles), user_timeline.c (streams), user_buffer.c
 * (buffers) and user_submit.c (TIO_IOC_SUBMIT).
 *
 * Locking: ub->lock (a mutex) guards the handle table, every object and
 * every timeline's bookkeeping. Waiters sleep on the futex without it,
 * holding a reference on the timeline. Each handler says whether it runs
 * under ub->lock (backend_user.c's table) or takes it itself.
 */
#ifndef TIO_DEV_USER_INTERNAL_H
#define TIO_DEV_USER_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "dev/dev_internal.h"

#define UB_HANDLE_SHIFT 40
#define UB_MAX_BUF_SIZE (UINT64_C(1) << 40)
#define UB_MAX_SUBMIT 1024
/* The driver's default fence_timeout_ms, reported by STREAM_CREATE. */
#define UB_FENCE_TIMEOUT_MS 10000u
/*
 * A waiter on a doorbell stream (nothing wakes it when the doorbell is
 * written) spins on it for UB_BELL_SPIN_NS, then sleeps between looks,
 * UB_BELL_NAP_NS at first, doubling up to UB_BELL_NAP_MAX_NS.
 */
#define UB_BELL_SPIN_NS 50000
#define UB_BELL_NAP_NS 50000
#define UB_BELL_NAP_MAX_NS 1000000

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
	uint64_t *bell;		/* the doorbell word (page 1 of @memfd), or NULL */
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

static inline struct ub_obj *ub_lookup(struct ub_state *ub, uint32_t handle, int type)
{
	struct ub_obj *o;

	if (!handle || handle > ub->cap)
		return NULL;
	o = ub->objs[handle - 1];
	return o && o->type == type ? o : NULL;
}

/* A handler's common opening: no flags, and @handle names a live @type. */
static inline int ub_get(struct ub_state *ub, uint32_t flags, uint32_t handle,
			 int type, struct ub_obj **out)
{
	if (flags)
		return -EINVAL;
	*out = ub_lookup(ub, handle, type);
	return *out ? 0 : -ENOENT;
}

/* user_table.c: the handle table and memfds. */
int tio_ub_insert(struct ub_state *ub, struct ub_obj *o);
void tio_ub_remove(struct ub_state *ub, struct ub_obj *o);
int tio_ub_publish(struct ub_state *ub, struct ub_obj *o, __u32 *handle, __u64 *off);
int tio_ub_memfd(const char *name, uint64_t size, int *fd);

/* user_timeline.c: timelines (under ub->lock but for tio_ub_tl_wait()). */
void tio_ub_tl_put(struct ub_tl *tl);
int tio_ub_tl_signal(struct ub_tl *tl, uint64_t seqno, int error);
void tio_ub_tl_ring(struct ub_tl *tl);
int tio_ub_tl_status(const struct ub_tl *tl, uint64_t seqno);
int tio_ub_tl_wait(struct ub_state *ub, struct ub_tl *tl, uint64_t seqno,
		   unsigned int flags, int64_t timeout_ns, int *status);

/* user_buffer.c: a buffer's end (under ub->lock, or with no other user). */
void tio_ub_buf_free(struct ub_state *ub, struct ub_obj *o);

/*
 * The command handlers, one per row of the command table: 0 or a
 * negative errno, outputs written into the payload @p as the driver does.
 */
int tio_ub_buf_alloc(struct tio_ctx *ctx, struct ub_state *ub, void *p);
int tio_ub_buf_pin(struct tio_ctx *ctx, struct ub_state *ub, void *p);
int tio_ub_buf_import(struct tio_ctx *ctx, struct ub_state *ub, void *p);
int tio_ub_buf_wait(struct tio_ctx *ctx, struct ub_state *ub, void *p);
int tio_ub_stream_create(struct tio_ctx *ctx, struct ub_state *ub, void *p);
int tio_ub_fence_wait(struct tio_ctx *ctx, struct ub_state *ub, void *p);
int tio_ub_submit(struct tio_ctx *ctx, struct ub_state *ub, void *p);
/* These run under ub->lock. */
int tio_ub_buf_free_cmd(struct tio_ctx *ctx, struct ub_state *ub, void *p);
int tio_ub_buf_info(struct tio_ctx *ctx, struct ub_state *ub, void *p);
int tio_ub_buf_set_desc(struct tio_ctx *ctx, struct ub_state *ub, void *p);
int tio_ub_buf_export(struct tio_ctx *ctx, struct ub_state *ub, void *p);
int tio_ub_buf_attach_fence(struct tio_ctx *ctx, struct ub_state *ub, void *p);
int tio_ub_stream_destroy(struct tio_ctx *ctx, struct ub_state *ub, void *p);
int tio_ub_fence_emit(struct tio_ctx *ctx, struct ub_state *ub, void *p);
int tio_ub_fence_signal(struct tio_ctx *ctx, struct ub_state *ub, void *p);

/* user_submit.c: the backend's vectored submit (struct tio_backend_ops). */
int tio_ub_submit_some(struct tio_ctx *ctx, struct tio_cmd *cmds, uint32_t n,
		       unsigned int flags, uint32_t *done);

#endif /* TIO_DEV_USER_INTERNAL_H */
