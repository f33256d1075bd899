/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal interfaces of the device half of libtensorio: the per-process
 * context, the backends that execute command records, and the buffer and
 * stream objects built on them.
 *
 * A backend executes the driver's command records (struct tio_cmd payloads,
 * uapi/linux/tensorio.h) with the driver's semantics: the kernel backend
 * hands them to /dev/tensorio, the user backend emulates them in this
 * process. Everything above the backends (buffers, streams, batches, FFI
 * functions) speaks only command records, so both backends share it.
 */
#ifndef TIO_DEV_INTERNAL_H
#define TIO_DEV_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

#include <linux/tensorio.h>

#include <tensorio/any.h>
#include <tensorio/context.h>
#include <tensorio/buffer.h>
#include <tensorio/stream.h>

#include "ffi/ffi_internal.h"
#include "dev/cmd_table.h"

struct tio_ctx;
struct tio_queue;

/**
 * struct tio_queue_ops - a backend's asynchronous submission queue
 *
 * Batches (batch.c) send their records through a queue when the backend
 * has one (the kernel backend: an io_uring), else through @submit of
 * struct tio_backend_ops. Records run in the order they are pushed; each
 * record's outcome comes back through the queue's @complete callback,
 * called from @push, @flush and @wait, with the tag given at @push (plus
 * k for the k-th record of a push) and 0 or a negative errno, the
 * outputs written into the record's payload.
 *
 * @open: make a queue on @ctx; -EOPNOTSUPP when the driver cannot
 *	take asynchronous commands (then the caller uses @submit), another
 *	negative errno with an error raised
 * @push: queue up to @n of the records @cmds (TIO_BATCH_* @mode: how they
 *	reach the driver; @flags as for SUBMIT); returns how many it took
 *	(at least one), or -1 with an error raised
 * @park: queue a wait (FENCE_WAIT, BUF_WAIT) that the driver parks: it
 *	completes when its fence does, and @flush does not wait for it
 * @flush: send what is queued; with @wait_sync, return only when every
 *	record pushed so far (not the parked waits) has completed
 * @wait: wait until something completes or @deadline (absolute
 *	CLOCK_MONOTONIC ns, -1 none) passes: 0, -ETIME, or -1 with an error
 *	raised
 * @mode: the TIO_BATCH_* mode @push will use for a batch's @mode:
 *	TIO_BATCH_AUTO becomes the best the queue has, a mode it cannot
 *	serve is -1 with an error raised
 * @close: free the queue; nothing may be in flight
 */
struct tio_queue_ops {
	int (*open)(struct tio_ctx *ctx, struct tio_queue **out);
	int (*push)(struct tio_queue *q, int mode, struct tio_cmd *cmds, uint32_t n,
		    unsigned int flags, uint64_t tag);
	int (*park)(struct tio_queue *q, struct tio_cmd *cmd, uint64_t tag);
	int (*flush)(struct tio_queue *q, int wait_sync);
	int (*wait)(struct tio_queue *q, int64_t deadline);
	int (*mode)(struct tio_queue *q, int mode);
	void (*close)(struct tio_queue *q);
};

/**
 * struct tio_queue - the part of a queue its user sees
 * @ops: the backend's queue operations
 * @complete: called for each completed record with its tag and outcome
 * @arg: @complete's first argument
 * @flags: TIO_BATCH_RING_* (what the queue got from the kernel)
 * @enters: kernel entries made so far
 * @in_flight: records and waits pushed that have not completed
 */
struct tio_queue {
	const struct tio_queue_ops *ops;
	void (*complete)(void *arg, uint64_t tag, int res);
	void *arg;
	unsigned int flags;
	int64_t enters;
	int64_t in_flight;
};

/**
 * struct tio_backend_ops - what a backend provides
 * @name: "kernel" or "user"
 * @exec: run one command (TIO_IOC_* number @op) on its payload in place;
 *	0 or a negative errno, outputs written back as the driver does
 *	(TIO_IOC_SUBMIT: its failed count, as the ioctl returns it)
 * @submit: run @n records in order as TIO_IOC_SUBMIT does: each gets its
 *	result, the first failure stops the rest unless @flags has
 *	TIO_SUBMIT_F_CONTINUE; *@done is the number processed. Returns the
 *	number of processed records that failed, or a negative errno. It
 *	may process fewer than @n (its limit, max_submit): *@done says
 * @map: map @len bytes at the mmap offset @offset (a buffer window, a
 *	stream's seqno or doorbell page); 0 (a new mapping, @unmap it), 1 (the backend's
 *	own mapping, valid until the handle is freed: never unmapped by the
 *	caller) or a negative errno
 * @unmap: undo @map
 * @destroy: free the backend's state (no object is left)
 * @queue: the backend's asynchronous queue, or NULL (struct tio_queue_ops)
 */
struct tio_backend_ops {
	const char *name;
	int (*exec)(struct tio_ctx *ctx, unsigned int op, void *payload);
	int (*submit)(struct tio_ctx *ctx, struct tio_cmd *cmds, uint32_t n,
		      unsigned int flags, uint32_t *done);
	int (*map)(struct tio_ctx *ctx, uint64_t offset, size_t len, int prot,
		   void **addr);
	void (*unmap)(struct tio_ctx *ctx, void *addr, size_t len);
	void (*destroy)(struct tio_ctx *ctx);
	const struct tio_queue_ops *queue;
};

/**
 * struct tio_ctx - the per-process context
 * @kind: TIO_BACKEND_KERNEL or TIO_BACKEND_USER
 * @ops: the backend
 * @fd: the /dev/tensorio fd (kernel backend), else -1
 * @info: the driver's INFO (emulated on the user backend)
 * @page_size: the system page size
 * @priv: the backend's state
 * @refs: references (atomic): TIO_CTX_HOLDER for the published pointer
 *	and each batch, 1 for each buffer and stream (so the low half counts
 *	the objects alive, and an object pays one atomic at each end); the
 *	last tio_ctx_put() closes the backend
 * @on_shutdown: (atomic) what tio_shutdown() runs before it lets go of the
 *	context, set by what keeps handles of it beyond their objects (the
 *	pinned cache), so that the context calls nothing above it
 */
struct tio_ctx {
	int kind;
	const struct tio_backend_ops *ops;
	int fd;
	struct tio_info info;
	size_t page_size;
	void *priv;
	int64_t refs;
	void (*on_shutdown)(struct tio_ctx *ctx);
};

/* errno.c: errors that carry an errno (tio_errno()). */
extern TIO_TLS int tio__errno;
int tio_raise_file_errno(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline void tio_set_errno(int err)
{
	tio__errno = err;
}
const char *tio_errno_kind(int err);
int tio_error_from_errno(int err, const char *what, tio_object_t **out);

/*
 * memlimit.c: whether @size more bytes of locked memory (@locked already)
 * can be had: 0, or ENOMEM with the limit it would hit named at @why.
 */
int tio_mem_check(uint64_t size, uint64_t locked, char *why, size_t len);
uint64_t tio_mem_locked(void);	/* this process' VmLck, bytes */
uint64_t tio_mem_total(void);	/* physical memory, bytes */

/* context.c: the context, created on first use (the fast path inline). */
extern struct tio_ctx *tio__ctx_cur;
struct tio_ctx *tio_ctx_get_slow(void);
struct tio_ctx *tio_ctx_hold_current(void);
/* A holder's share of @refs (the published pointer, a batch); an object's is 1. */
#define TIO_CTX_HOLDER		(INT64_C(1) << 32)
#define TIO_CTX_OBJECTS(refs)	((refs) & (TIO_CTX_HOLDER - 1))
void tio_ctx_put(struct tio_ctx *ctx, int64_t share);
static inline void tio_ctx_hold(struct tio_ctx *ctx, int64_t share)
{
	__atomic_fetch_add(&ctx->refs, share, __ATOMIC_RELAXED);
}
static inline struct tio_ctx *tio_ctx_get(void)
{
	struct tio_ctx *ctx = __atomic_load_n(&tio__ctx_cur, __ATOMIC_ACQUIRE);

	return TIO_LIKELY(ctx) ? ctx : tio_ctx_get_slow();
}

/* backend_kernel.c, backend_user.c */
int tio_backend_kernel_open(struct tio_ctx *ctx, char *why, size_t len);
int tio_backend_user_open(struct tio_ctx *ctx, char *why, size_t len);
extern const struct tio_backend_ops tio_backend_kernel_ops;
extern const struct tio_backend_ops tio_backend_user_ops;
/* backend/kernel_uring.c: the kernel backend's queue. */
extern const struct tio_queue_ops tio_kernel_uring_ops;
/* backend/kernel_ring.c: the driver's command ring, one per context. */
struct tio_kring;
struct tio_kring *tio_kring_new(void);
void tio_kring_free(struct tio_kring *r);
int tio_kring_ready(struct tio_ctx *ctx);
int tio_kring_run(struct tio_ctx *ctx, struct tio_cmd *cmds, uint32_t n,
		  unsigned int flags, uint32_t *taken, uint32_t *done);

/* explain.c: the cause of a failed command, for its error message. */
void tio_cmd_explain(struct tio_ctx *ctx, unsigned int op, const void *payload,
		     int err, char *why, size_t len);

/* cmd_table.c: the name of a command ("BUF_ALLOC"), for messages. */
const char *tio_op_name(unsigned int op);
/* The payload size of a command, 0 for an unknown one. */
size_t tio_op_size(unsigned int op);

/*
 * desc.c: the library's descriptor (struct tio_desc) as the driver's
 * (struct tio_tensor_desc). Today the two have one layout (desc.c checks
 * it field by field), so this is a cast; when the uapi's grows, the
 * conversion goes here.
 */
static inline const struct tio_tensor_desc *tio_desc_uapi(const struct tio_desc *d)
{
	return (const struct tio_tensor_desc *)(const void *)d;
}

/* desc.c: the driver's descriptor check, in userspace. */
int tio_desc_validate(const struct tio_tensor_desc *d, uint64_t size);
int tio_desc_explain(const struct tio_tensor_desc *d, uint64_t size, char *why, size_t len);

/**
 * struct tio_buffer - a buffer object (FFI type tio.Buffer)
 * @header: the object header
 * @handle: the backend handle
 * @kind: TIO_BUF_KIND_*
 * @size: bytes
 * @mmap_offset: the backend's mmap offset
 * @data: the mapping, or NULL until mapped
 * @mapped: whether @data is ours to unmap
 * @lock: protects @data, @gpu and @gpu_unregister
 * @ctx: the context
 * @gpu: GPU registrations of @data (gpu_mem.c, one per vendor), or NULL
 * @gpu_unregister: undoes @gpu; the finalizer calls it first
 * @recycle: for a pinned-cache buffer (pin_cache.c), takes over the handle
 *	and the memory in place of the finalizer's free, or NULL
 * @release: for tio_buffer_pin_owned(), gives the memory back to its owner
 *	once the handle is freed (the pages unpinned), or NULL
 * @release_arg: its argument
 */
struct tio_buffer {
	tio_object_t header;
	int64_t handle;
	int64_t kind;
	int64_t size;
	uint64_t mmap_offset;
	void *data;
	int mapped;
	pthread_mutex_t lock;
	struct tio_ctx *ctx;
	void *gpu;
	void (*gpu_unregister)(void *obj);
	void (*recycle)(void *obj);
	void (*release)(void *arg);
	void *release_arg;
};

/**
 * struct tio_stream - a stream object (FFI type tio.Stream)
 * @header: the object header
 * @handle: the backend handle
 * @context: the timeline's fence context
 * @seqno_offset: mmap offset of the seqno page
 * @doorbell_offset: mmap offset of the doorbell page, 0 without one
 * @word: the mapped seqno word, or NULL until mapped
 * @bell: the mapped doorbell word, or NULL until mapped
 * @borrowed: which of @word (1) and @bell (2) are the backend's own
 *	      mappings, never unmapped here
 * @lock: protects @word, @bell, @borrowed, @gpu, @gpu_unregister,
 *	  @gpu_upto and @gpu_writer
 * @ctx: the context
 * @gpu: GPU registrations of the seqno and doorbell pages (gpu_fence.c),
 *	 or NULL
 * @gpu_unregister: undoes @gpu; the finalizer calls it first
 * @gpu_upto: the last point a GPU stream was asked to write into the
 *	      doorbell (gpu_fence.c), 0 if none
 * @gpu_writer: the vendor stream that was asked
 */
struct tio_stream {
	tio_object_t header;
	int64_t handle;
	int64_t context;
	uint64_t seqno_offset;
	uint64_t doorbell_offset;
	const volatile uint64_t *word;
	volatile uint64_t *bell;
	unsigned int borrowed;
	pthread_mutex_t lock;
	struct tio_ctx *ctx;
	void *gpu;
	void (*gpu_unregister)(void *obj);
	uint64_t gpu_upto;
	const void *gpu_writer;
};

/* buffer.c, stream.c: wrap a handle the backend just created. */
int tio_buffer_wrap(struct tio_ctx *ctx, uint32_t handle, uint32_t kind,
		    uint64_t size, uint64_t mmap_offset, void *user_addr,
		    tio_buffer_t **out);
int tio_buffer_from_payload(struct tio_ctx *ctx, const struct tio_cmd_desc *cmd,
			    const void *payload, tio_buffer_t **out);
int tio_stream_wrap(struct tio_ctx *ctx, const struct tio_stream_create *sc,
		    tio_stream_t **out);
/*
 * Run one command with the context's backend; on failure raise an error
 * that names the command and the backend (context.c).
 */
int tio_exec_failed(struct tio_ctx *ctx, const struct tio_cmd_desc *cmd,
		    const void *payload, int err);
static inline int tio_exec(struct tio_ctx *ctx, const struct tio_cmd_desc *cmd,
			   void *payload)
{
	int ret = ctx->ops->exec(ctx, cmd->op, payload);

	if (TIO_UNLIKELY(ret))
		return tio_exec_failed(ctx, cmd, payload, ret);
	tio__errno = 0;
	return 0;
}

/*
 * The C API's command on an object: the object's @handle is v[0], its
 * other arguments v[1..@n-1]; it runs with the context the object holds.
 */
static inline int tio_cmd_on(const struct tio_cmd_desc *cmd, struct tio_ctx *ctx,
			     int64_t handle, int64_t *v, int32_t n, void *payload)
{
	v[0] = handle;
	if (tio_cmd_fill(cmd, payload, v, n))
		return -1;
	return tio_exec(ctx, cmd, payload);
}

/* cmd_table.c: type indices of tio.Buffer and tio.Stream (-1: none yet). */
struct tio_dev_types {
	int32_t buffer;
	int32_t stream;
};
extern struct tio_dev_types tio_dev_types;
int32_t tio_buffer_type_index(void);
int32_t tio_stream_type_index(void);

#endif /* TIO_DEV_INTERNAL_H */
