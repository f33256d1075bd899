/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * GPUs: CUDA through the driver API, loaded at run time.
 *
 * libtensorio never links libcuda: the first tio_cuda_* call dlopen()s
 * "libcuda.so.1" and resolves the cu* entry points it uses with dlsym()
 * (their versioned names, cuMemAlloc_v2 and so on). Without the library,
 * without a GPU, or in a libtensorio built without CUDA headers, every call
 * fails with ENODEV and a message that starts "no CUDA driver" (or "no CUDA
 * device"), so callers and tests can skip cleanly.
 *
 * What is offered:
 * - device tensors: tio.Tensor objects whose DLPack device is kDLCUDA;
 * - tensorio buffers registered as pinned host memory (cuMemHostRegister),
 *   unregistered explicitly or when the buffer is freed;
 * - asynchronous host<->device copies on a CUDA stream;
 * - stream -> fence: a host function on the CUDA stream signals a tensorio
 *   stream point once the work before it is done;
 * - fence -> stream: the CUDA stream waits (cuStreamWaitValue64, GEQ) on the
 *   tensorio stream's seqno word, registered read-only and device-mapped;
 * - dma-buf export of GPU memory, and its import as a tensorio buffer on the
 *   kernel backend.
 *
 * Errors follow the device API (tensorio/context.h): -1 with an error
 * raised; its message names the CUDA error (cuGetErrorName and
 * cuGetErrorString) and tio_errno() maps it: ENODEV (no driver or device),
 * ENOMEM (out of memory), EINVAL (invalid value), EOPNOTSUPP (not supported
 * by this device or backend), EIO (any other CUDA error).
 *
 * Every call that uses a device makes that device's primary context
 * current for its duration (push, then pop), so the caller's own current
 * context is left as it was. The primary contexts are retained for the
 * life of the process.
 *
 * HIP (AMD) offers the same calls as tio_hip_* in tensorio/gpu_hip.h.
 */
#ifndef TENSORIO_GPU_H
#define TENSORIO_GPU_H

#include <stddef.h>
#include <stdint.h>

#include <tensorio/buffer.h>
#include <tensorio/dlpack.h>
#include <tensorio/object.h>
#include <tensorio/stream.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A CUDA stream (a CUstream of one device's primary context). */
typedef struct tio_cuda_stream tio_cuda_stream_t;

/**
 * tio_cuda_init() - load the CUDA driver and initialise it
 *
 * Done by every other call on first use; calling it first is how a program
 * (or a test) asks whether CUDA is usable here.
 *
 * Return: 0, or -1 with an error raised (ENODEV: "no CUDA driver: ..." when
 * libcuda.so.1 cannot be loaded or lacks an entry point, "no CUDA device:
 * ..." when cuInit or the device count finds no GPU).
 */
TIO_API int tio_cuda_init(void);

/**
 * tio_cuda_device_count() - number of CUDA devices
 * @count: receives it (at least 1 on success)
 *
 * Return: 0, or -1 with an error raised (ENODEV as tio_cuda_init()).
 */
TIO_API int tio_cuda_device_count(int *count);

/**
 * tio_cuda_driver_version() - the CUDA driver's version (1000 * major +
 * 10 * minor, 13000 for 13.0)
 * @version: receives it
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_cuda_driver_version(int *version);

/**
 * tio_cuda_device_name() - a device's name
 * @device: device ordinal
 * @name: receives it, NUL-terminated
 * @len: room in @name
 *
 * Return: 0, or -1 with an error raised (EINVAL for a bad ordinal).
 */
TIO_API int tio_cuda_device_name(int device, char *name, size_t len);

/* What a device supports, for tio_cuda_device_supports(). */
#define TIO_CUDA_CAP_WAIT_VALUE64	1	/* fence -> stream */
#define TIO_CUDA_CAP_READONLY_REGISTER	2	/* read-only host registration */
#define TIO_CUDA_CAP_DMABUF		3	/* dma-buf export of device memory */

/**
 * tio_cuda_device_supports() - whether a device has a capability
 * @device: device ordinal
 * @cap: TIO_CUDA_CAP_*
 *
 * Return: 1 or 0, or -1 with an error raised (EINVAL for an unknown @cap).
 */
TIO_API int tio_cuda_device_supports(int device, int cap);

/**
 * tio_cuda_tensor_empty() - allocate a compact row-major device tensor
 * @device: device ordinal
 * @ndim: number of dimensions (0 ... 64)
 * @shape: the dimensions (non-negative)
 * @dtype: the element type
 * @out: a tio.Tensor (owned) whose DLPack device is {kDLCUDA, @device} and
 *	whose data is the CUdeviceptr; the memory (cuMemAlloc, rounded up to
 *	whole host pages, not initialised) is freed when the Tensor and every
 *	DLPack export of it are gone
 *
 * Return: 0, or -1 with an error raised (EINVAL, ENOMEM, ENODEV).
 */
TIO_API int tio_cuda_tensor_empty(int device, int32_t ndim, const int64_t *shape,
				  DLDataType dtype, tio_object_t **out);

/**
 * tio_cuda_stream_create() - a new non-blocking CUDA stream
 * @device: device ordinal
 * @out: the stream (the caller's; tio_cuda_stream_destroy() frees it)
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_cuda_stream_create(int device, tio_cuda_stream_t **out);

/**
 * tio_cuda_stream_destroy() - wait for the stream's work, then free it
 * @cs: the stream (NULL is ignored)
 *
 * Points enqueued with tio_cuda_stream_signal_fence() are signalled before
 * it returns.
 */
TIO_API void tio_cuda_stream_destroy(tio_cuda_stream_t *cs);

/**
 * tio_cuda_stream_handle() - the CUstream, to enqueue the caller's own work
 * @cs: the stream
 *
 * Return: the CUstream (a pointer), valid until tio_cuda_stream_destroy().
 */
TIO_API void *tio_cuda_stream_handle(const tio_cuda_stream_t *cs);

/**
 * tio_cuda_stream_device() - the device ordinal of a stream
 * @cs: the stream
 */
TIO_API int tio_cuda_stream_device(const tio_cuda_stream_t *cs);

/**
 * tio_cuda_stream_query() - whether all work on the stream is done
 * @cs: the stream
 *
 * Return: 1 when done, 0 while work is pending, -1 with an error raised
 * (an asynchronous error of earlier work).
 */
TIO_API int tio_cuda_stream_query(tio_cuda_stream_t *cs);

/**
 * tio_cuda_stream_sync() - wait for all work on the stream
 * @cs: the stream
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_cuda_stream_sync(tio_cuda_stream_t *cs);

/**
 * tio_cuda_copy_htod() - enqueue a host-to-device copy
 * @cs: the stream
 * @dst: device address (a device tensor's data, or inside it)
 * @src: host memory; it must stay valid until the copy is done. Registered
 *	(pinned) memory is copied asynchronously by DMA; pageable memory is
 *	staged by the driver, and the call may return only once @src is read
 * @size: bytes
 *
 * Return: 0, or -1 with an error raised (EINVAL for a NULL pointer).
 */
TIO_API int tio_cuda_copy_htod(tio_cuda_stream_t *cs, uint64_t dst, const void *src,
			       size_t size);

/**
 * tio_cuda_copy_dtoh() - enqueue a device-to-host copy
 * @cs: the stream
 * @dst: host memory, valid until the copy is done (see tio_cuda_copy_htod())
 * @src: device address
 * @size: bytes
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_cuda_copy_dtoh(tio_cuda_stream_t *cs, void *dst, uint64_t src,
			       size_t size);

/**
 * tio_cuda_tensor_copy() - enqueue a copy between a CPU and a CUDA tensor
 * @cs: the stream (on the CUDA tensor's device)
 * @dst: the destination Tensor
 * @src: the source Tensor
 *
 * One side must be kDLCPU and the other kDLCUDA on @cs's device; both must
 * be compact row-major with the same dtype and number of bytes.
 *
 * Return: 0, or -1 with an error raised (EINVAL for any mismatch).
 */
TIO_API int tio_cuda_tensor_copy(tio_cuda_stream_t *cs, tio_object_t *dst,
				 tio_object_t *src);

/**
 * tio_cuda_buffer_register() - register a buffer's memory as pinned host
 * memory for every CUDA device (portable, device-mapped)
 * @buf: the buffer (its memory is mapped first if it is not yet)
 *
 * The registration ends with tio_cuda_buffer_unregister() or when the
 * buffer is freed.
 *
 * Return: 0, or -1 with an error raised (EEXIST when already registered).
 */
TIO_API int tio_cuda_buffer_register(tio_buffer_t *buf);

/**
 * tio_cuda_buffer_unregister() - end a buffer's registration
 * @buf: the buffer
 *
 * Return: 0, or -1 with an error raised (ENOENT when not registered).
 */
TIO_API int tio_cuda_buffer_unregister(tio_buffer_t *buf);

/**
 * tio_cuda_buffer_device_ptr() - the device address of a registered buffer
 * @buf: the buffer
 * @device: device ordinal
 * @dptr: receives the address kernels on @device use to reach the buffer
 *
 * Return: 0, or -1 with an error raised (ENOENT when not registered).
 */
TIO_API int tio_cuda_buffer_device_ptr(tio_buffer_t *buf, int device, uint64_t *dptr);

/**
 * tio_cuda_stream_signal_fence() - signal a tensorio point from a CUDA stream
 * @cs: the CUDA stream
 * @s: the tensorio stream
 * @seqno: an emitted point of @s
 *
 * Enqueues a host function (cuLaunchHostFunc) that signals @seqno once the
 * work enqueued before it is done. The function makes no CUDA call; it
 * signals through the backend (an ioctl or a futex). @s is kept alive until
 * then, and released by the next tio_cuda_stream_sync(), _query() that
 * finds the stream done, or _destroy() of any stream.
 *
 * Return: 0, or -1 with an error raised (EINVAL for a seqno never emitted).
 */
TIO_API int tio_cuda_stream_signal_fence(tio_cuda_stream_t *cs, tio_stream_t *s,
					 uint64_t seqno);

/**
 * tio_cuda_stream_record_fence() - emit a point of @s and signal it from @cs
 * @cs: the CUDA stream
 * @s: the tensorio stream
 * @seqno: receives the new point
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_cuda_stream_record_fence(tio_cuda_stream_t *cs, tio_stream_t *s,
					 uint64_t *seqno);

/**
 * tio_cuda_stream_wait_fence() - make a CUDA stream wait for a tensorio point
 * @cs: the CUDA stream
 * @s: the tensorio stream
 * @seqno: an emitted point of @s
 *
 * Work enqueued on @cs afterwards starts once @s's seqno word reaches
 * @seqno (cuStreamWaitValue64 with CU_STREAM_WAIT_VALUE_GEQ on the word,
 * registered read-only and device-mapped on first use; the registration
 * ends when @s is freed). The GPU sees only the seqno, not a point's error.
 *
 * Return: 0, or -1 with an error raised (EOPNOTSUPP when the device lacks
 * 64-bit stream memory operations or read-only host registration).
 */
TIO_API int tio_cuda_stream_wait_fence(tio_cuda_stream_t *cs, tio_stream_t *s,
				       uint64_t seqno);

/**
 * tio_cuda_export_dmabuf() - a dma-buf fd for a range of device memory
 * @device: the device owning the memory
 * @dptr: start, host-page aligned (a device tensor's data is)
 * @size: bytes, a multiple of the host page size
 * @fd: receives the fd (close-on-exec), the caller's to close
 *
 * Return: 0, or -1 with an error raised (EOPNOTSUPP when the device or its
 * kernel driver cannot export dma-bufs).
 */
TIO_API int tio_cuda_export_dmabuf(int device, uint64_t dptr, size_t size, int *fd);

/**
 * tio_cuda_buffer_import() - device memory as a tensorio buffer
 * @device: the device owning the memory
 * @dptr: start, host-page aligned
 * @size: bytes, a multiple of the host page size
 * @out: the buffer (the memory must outlive it)
 *
 * Exports the range as a dma-buf and imports it with tio_buffer_import().
 * Needs the kernel backend: the user backend maps what it imports, which
 * GPU memory does not allow.
 *
 * Return: 0, or -1 with an error raised (EOPNOTSUPP on the user backend or
 * without dma-buf support).
 */
TIO_API int tio_cuda_buffer_import(int device, uint64_t dptr, size_t size,
				   tio_buffer_t **out);

/**
 * tio_cuda_debug_live() - CUDA objects of this library alive: streams,
 * device allocations, buffer and seqno-word registrations, and tensorio
 * streams held for pending signals
 *
 * Return: their number (0 before first use).
 */
TIO_API int64_t tio_cuda_debug_live(void);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_GPU_H */
