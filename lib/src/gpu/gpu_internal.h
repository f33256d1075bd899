/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * GPUs: the backend-neutral core (gpu_core.c: loading, devices, errors;
 * gpu_mem.c, gpu_stream.c, gpu_fence.c) and what each vendor file
 * (cuda.c, hip.c) gives it.
 *
 * A vendor file loads its library with dlopen(), resolves its entry points
 * with dlsym() and fills a struct tio_gpu: names for messages and a table
 * of thin operations (struct tio_gpu_ops) over the vendor's calls. The core
 * does everything else, once for all vendors: device bookkeeping, device
 * tensors and their deleters, streams, copies, host registration of
 * tensorio buffers and seqno words, fence bridging, dma-buf import, error
 * messages and errno mapping, live counters. The public tio_gpu_*
 * functions pick a vendor's descriptor, tio_gpu_cuda or tio_gpu_hip, by
 * the DLDevice's type (tio_gpu_vendor()).
 *
 * Locking (per vendor, in struct tio_gpu):
 * - @once loads the library once; what @load fills (the vendor's table,
 *   @err and @why of a failed load, @ndev, @version) is read-only after.
 * - @lock guards opening a device; the device is published with a release
 *   store of its @ready and read after an acquire load.
 * - @done_lock guards @done, the signals whose host function ran (their
 *   tensorio streams are released outside the host function, which must
 *   not call the vendor's library: the last release of a stream
 *   unregisters its seqno page), and @writes, the doorbell writes not
 *   seen landed yet.
 * - A buffer's or stream's registrations are guarded by its own lock.
 */
#ifndef TIO_GPU_INTERNAL_H
#define TIO_GPU_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <tensorio/dlpack.h>

#define TIO_GPU_MAX_DEV 64

/**
 * struct tio_gpu_dev - one device, filled by &tio_gpu_ops.open
 * @ready: release-stored by the core once the rest is set
 * @ordinal: the device ordinal
 * @dev: the vendor's device handle (CUdevice, hipDevice_t)
 * @ctx: the vendor's context (CUDA: the retained primary context)
 * @wait64: 64-bit stream wait-value operations (fence -> stream)
 * @write64: 64-bit stream write-value operations (stream -> fence through
 *	     a doorbell)
 * @ro_register: read-only host registration (the seqno word)
 * @dmabuf: dma-buf export of device memory
 */
struct tio_gpu_dev {
	int ready;
	int ordinal;
	int dev;
	void *ctx;
	int wait64;
	int write64;
	int ro_register;
	int dmabuf;
};

/*
 * The vendor's operations. Each returns the vendor's status (0: success),
 * which the core maps with @to_errno and names with @err_text. Stream,
 * copy, registration and allocation operations run between @enter and
 * @leave; @open, @name and the error functions do not.
 */
struct tio_gpu_ops {
	/* Fill @d (all but @ready) for device @ordinal. */
	int (*open)(struct tio_gpu_dev *d, int ordinal);
	/* Make @d current for a call; @saved receives what @leave restores. */
	int (*enter)(const struct tio_gpu_dev *d, uintptr_t *saved);
	void (*leave)(uintptr_t saved);
	int (*name)(const struct tio_gpu_dev *d, char *name, int len);
	int (*alloc)(uint64_t *ptr, size_t size);
	int (*free)(uint64_t ptr);
	/* Portable, device-mapped; read-only when @readonly. */
	int (*host_register)(void *p, size_t size, int readonly);
	int (*host_unregister)(void *p);
	int (*host_dptr)(uint64_t *dptr, void *p);
	/* A non-blocking stream. */
	int (*stream_create)(void **st);
	int (*stream_destroy)(void *st);
	int (*stream_query)(void *st);
	int (*stream_sync)(void *st);
	int (*htod)(void *st, uint64_t dst, const void *src, size_t size);
	int (*dtoh)(void *st, void *dst, uint64_t src, size_t size);
	/*
	 * Call tio_gpu_signal_run(@sig, ...) on the host once the work
	 * before it is done.
	 */
	int (*host_func)(void *st, void *sig);
	/* Wait until the 64-bit word at @dptr is >= @value (needs @wait64). */
	int (*wait64)(void *st, uint64_t dptr, uint64_t value);
	/*
	 * Store @value into the 64-bit word at @dptr once the work before it
	 * is done, its writes visible first (needs @write64).
	 */
	int (*write64)(void *st, uint64_t dptr, uint64_t value);
	/* A dma-buf fd for a range (needs @dmabuf). */
	int (*export_dmabuf)(int *fd, uint64_t dptr, size_t size);
	int (*to_errno)(int r);
	/* The error's name and text, each NULL when unknown. */
	void (*err_text)(int r, const char **name, const char **text);
};

/* What messages name, per operation: the vendor's entry points. */
enum tio_gpu_call {
	TIO_GPU_OPEN,		/* "retaining the primary context" */
	TIO_GPU_ENTER,		/* "making the CUDA context current" */
	TIO_GPU_NAME,
	TIO_GPU_ALLOC,
	TIO_GPU_HOST_REGISTER,
	TIO_GPU_HOST_DPTR,
	TIO_GPU_STREAM_CREATE,
	TIO_GPU_STREAM_QUERY,
	TIO_GPU_STREAM_SYNC,
	TIO_GPU_HTOD,
	TIO_GPU_DTOH,
	TIO_GPU_HOST_FUNC,
	TIO_GPU_WAIT64,
	TIO_GPU_WRITE64,
	TIO_GPU_DMABUF,
	TIO_GPU_NCALLS
};

struct tio_gpu_signal;

/**
 * struct tio_gpu - one vendor
 * @name: "CUDA", "HIP": in messages
 * @nolib: the message prefix of a missing library ("no CUDA driver")
 * @nodev: the message prefix of a missing device ("no CUDA device")
 * @no_dmabuf: why a device cannot export dma-bufs
 * @dl_type: the DLPack device type of its tensors
 * @not_ready: the status of a stream with pending work
 * @calls: names of the vendor's calls, for messages (enum tio_gpu_call)
 * @ops: the operations
 * @load: loads the library (once); fills @ndev and @version, or calls
 *	tio_gpu_load_fail()
 * @once: runs @load
 * @lock: guards opening devices
 * @done_lock: guards @done and @writes
 * @done: signals whose host function ran
 * @writes: signals a GPU stream writes into a doorbell, until seen there
 * @live: objects alive (atomic)
 * @err: errno of a failed load, else 0
 * @why: its message
 * @lib: the library loaded (or tried)
 * @ndev: devices
 * @version: the driver's or runtime's version
 * @devs: the devices
 */
struct tio_gpu {
	const char *name;
	const char *nolib;
	const char *nodev;
	const char *no_dmabuf;
	DLDeviceType dl_type;
	int not_ready;
	const char *calls[TIO_GPU_NCALLS];
	const struct tio_gpu_ops *ops;
	void (*load)(void);
	pthread_once_t once;
	pthread_mutex_t lock;
	pthread_mutex_t done_lock;
	struct tio_gpu_signal *done;
	struct tio_gpu_signal *writes;
	int64_t live;
	int err;
	char why[256];
	const char *lib;
	int ndev;
	int version;
	struct tio_gpu_dev devs[TIO_GPU_MAX_DEV];
};

#define TIO_GPU_INIT							\
	.once = PTHREAD_ONCE_INIT,					\
	.lock = PTHREAD_MUTEX_INITIALIZER,				\
	.done_lock = PTHREAD_MUTEX_INITIALIZER

extern struct tio_gpu tio_gpu_cuda;
extern struct tio_gpu tio_gpu_hip;

#define TIO_GPU_STR_(x) #x
#define TIO_GPU_STR(x) TIO_GPU_STR_(x)

/* For @load. */

/*
 * dlopen() the library named by the environment variable @env, else the
 * first of @names (NULL-terminated) that loads; NULL with the load failed.
 */
void *tio_gpu_dlopen(struct tio_gpu *g, const char *env, const char *const *names);

/*
 * dlsym(); a missing @required entry point is noted in *@missing (the
 * first one) and fails the load in tio_gpu_load_devices().
 */
void *tio_gpu_dlsym(void *dl, const char *sym, int required, const char **missing);

/* Fail the load with a message ("<nolib or nodev>: ..."). */
__attribute__((format(printf, 2, 3)))
void tio_gpu_load_fail(struct tio_gpu *g, const char *fmt, ...);

/*
 * Finish a load: @missing from tio_gpu_dlsym(), then @r, the status of
 * @what (the call that counted the devices, @n of them). 0 when usable;
 * else -1 with the load failed, and the caller clears its table and
 * dlclose()s.
 */
int tio_gpu_load_devices(struct tio_gpu *g, const char *missing, int r,
			 const char *what, int n, int version);

/*
 * The host function of &tio_gpu_ops.host_func: signal the point @sig
 * stands for, with @error (0, or a negative errno when the vendor reports
 * that the stream failed). Makes no vendor call.
 */
void tio_gpu_signal_run(void *sig, int error);

/* The core's (gpu_core.c, gpu_mem.c, gpu_stream.c, gpu_fence.c). */

/* A stream of a vendor's (tio_gpu_stream_t). */
struct tio_gpu_stream {
	struct tio_gpu *g;
	int device;
	void *st;
	int borrowed;		/* tio_gpu_stream_wrap(): the caller's */
};

/*
 * Host memory registered with a vendor: a buffer's memory, or a stream's
 * seqno page. buf->gpu and s->gpu list one per vendor, under their lock.
 */
struct tio_gpu_reg {
	struct tio_gpu *g;
	void *addr;
	struct tio_gpu_reg *next;
};

/*
 * A point a host function signals, or a GPU stream writes into the
 * stream's doorbell; it holds the stream (and so the registration of the
 * page the GPU writes) until then.
 */
struct tio_gpu_signal {
	struct tio_gpu *g;
	struct tio_stream *s;
	uint64_t seqno;
	struct tio_gpu_signal *next;
};

static inline void tio_gpu_live_add(struct tio_gpu *g, int64_t n)
{
	__atomic_fetch_add(&g->live, n, __ATOMIC_RELAXED);
}

/* Raise "<what>: <ERROR_NAME> (<text>)" for status @r. Returns -1. */
__attribute__((format(printf, 3, 4)))
int tio_gpu_raise(struct tio_gpu *g, int r, const char *fmt, ...);

/* Load @g once; 0, or -1 with its load's error raised. */
int tio_gpu_ready(struct tio_gpu *g);

/* The device, opened; NULL with an error raised. */
struct tio_gpu_dev *tio_gpu_device(struct tio_gpu *g, int device);

/* Make @d current for a call; 0, or -1 with an error raised. */
int tio_gpu_enter(struct tio_gpu *g, const struct tio_gpu_dev *d, uintptr_t *saved);

/*
 * Release the tensorio streams of signals whose host function ran, and of
 * doorbell writes that landed.
 */
void tio_gpu_drain(struct tio_gpu *g);

/* The vendor of DLPack device type @type; NULL with an error raised. */
struct tio_gpu *tio_gpu_vendor(DLDeviceType type);

/* gpu_mem.c: end the registrations of list @reg (made in device 0's context). */
void tio_gpu_regs_free(struct tio_gpu_reg *reg);

/* gpu_mem.c: @g's registration in list @head, or NULL; *@prev its predecessor. */
struct tio_gpu_reg *tio_gpu_reg_find(struct tio_gpu_reg *head, struct tio_gpu *g,
				     struct tio_gpu_reg **prev);

#endif /* TIO_GPU_INTERNAL_H */
