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

struct tio_ctx;

/**
 * struct tio_backend_ops - what a backend provides
 * @name: "kernel" or "user"
 * @exec: run one command (TIO_IOC_* number @op) on its payload in place;
 *	0 or a negative errno, outputs written back as the driver does
 * @map: map @len bytes at the mmap offset @offset (a buffer window or a
 *	stream's seqno page); 0 or a negative errno
 * @unmap: undo @map
 * @destroy: free the backend's state (no object is left)
 */
struct tio_backend_ops {
	const char *name;
	int (*exec)(struct tio_ctx *ctx, unsigned int op, void *payload);
	int (*map)(struct tio_ctx *ctx, uint64_t offset, size_t len, int prot,
		   void **addr);
	void (*unmap)(struct tio_ctx *ctx, void *addr, size_t len);
	void (*destroy)(struct tio_ctx *ctx);
};

/**
 * struct tio_ctx - the per-process context
 * @kind: TIO_BACKEND_KERNEL or TIO_BACKEND_USER
 * @ops: the backend
 * @fd: the /dev/tensorio fd (kernel backend), else -1
 * @info: the driver's INFO (emulated on the user backend)
 * @page_size: the system page size
 * @priv: the backend's state
 * @live: buffers and streams alive (atomic)
 */
struct tio_ctx {
	int kind;
	const struct tio_backend_ops *ops;
	int fd;
	struct tio_info info;
	size_t page_size;
	void *priv;
	int64_t live;
};

/* context.c */
struct tio_ctx *tio_ctx_get(void);
int tio_raise_errno(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int tio_raise_file_errno(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void tio_set_errno(int err);
const char *tio_errno_kind(int err);
int tio_error_from_errno(int err, const char *what, tio_object_t **out);

/* backend_kernel.c, backend_user.c */
int tio_backend_kernel_open(struct tio_ctx *ctx, char *why, size_t len);
int tio_backend_user_open(struct tio_ctx *ctx, char *why, size_t len);
extern const struct tio_backend_ops tio_backend_kernel_ops;
extern const struct tio_backend_ops tio_backend_user_ops;

/* explain.c: the cause of a failed command, for its error message. */
void tio_cmd_explain(struct tio_ctx *ctx, unsigned int op, const void *payload,
		     int err, char *why, size_t len);

/* The name of a command ("BUF_ALLOC"), for messages. */
const char *tio_op_name(unsigned int op);
/* The payload size of a command, 0 for an unknown one. */
size_t tio_op_size(unsigned int op);

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
 * @lock: protects @data, @gpu and @gpu_release
 * @ctx: the context
 * @gpu: GPU registrations of @data (gpu_core.c, one per vendor), or NULL
 * @gpu_release: undoes @gpu; the finalizer calls it first
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
	void (*gpu_release)(void *obj);
};

/**
 * struct tio_stream - a stream object (FFI type tio.Stream)
 * @header: the object header
 * @handle: the backend handle
 * @context: the timeline's fence context
 * @seqno_offset: mmap offset of the seqno page
 * @word: the mapped seqno word, or NULL until mapped
 * @lock: protects @word, @gpu and @gpu_release
 * @ctx: the context
 * @gpu: GPU registrations of the seqno page (gpu_core.c), or NULL
 * @gpu_release: undoes @gpu; the finalizer calls it first
 */
struct tio_stream {
	tio_object_t header;
	int64_t handle;
	int64_t context;
	uint64_t seqno_offset;
	const volatile uint64_t *word;
	pthread_mutex_t lock;
	struct tio_ctx *ctx;
	void *gpu;
	void (*gpu_release)(void *obj);
};

/* buffer.c, stream.c: wrap a handle the backend just created. */
int tio_buffer_wrap(struct tio_ctx *ctx, uint32_t handle, uint32_t kind,
		    uint64_t size, uint64_t mmap_offset, void *user_addr,
		    tio_buffer_t **out);
int tio_stream_wrap(struct tio_ctx *ctx, const struct tio_stream_create *sc,
		    tio_stream_t **out);
/* Run one command with the context's backend, raising on failure. */
int tio_exec(struct tio_ctx *ctx, unsigned int op, void *payload);

/* uapi_ffi.c: type indices of tio.Buffer and tio.Stream. */
int32_t tio_buffer_type_index(void);
int32_t tio_stream_type_index(void);

/**
 * struct tio_drv_fn - an FFI function that is one driver command
 * @name: its global name ("tio.stream.signal")
 * @op: the command (TIO_IOC_*)
 * @encode: check @args and fill the zeroed @payload; store in @keep (two
 *	slots, borrowed references) the objects whose handles it used; 0, or
 *	-1 with an error raised
 */
struct tio_drv_fn {
	const char *name;
	unsigned int op;
	int (*encode)(const tio_any_t *args, int32_t nargs, void *payload,
		      tio_object_t **keep);
};

/* uapi_ffi.c */
const struct tio_drv_fn *tio_drv_fn_of(tio_object_t *func);
int tio_cmd_decode(struct tio_ctx *ctx, const struct tio_cmd *c, tio_any_t *ret);

#endif /* TIO_DEV_INTERNAL_H */
