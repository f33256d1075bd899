/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * GPUs: one API for CUDA and HIP, the vendor named by the DLPack device.
 *
 * Every call takes the device as a DLDevice ({kDLCUDA, ordinal} or
 * {kDLROCM, ordinal}), or just its type where no ordinal matters; any
 * other device type fails with EINVAL. Streams remember their device.
 *
 * libtensorio links neither vendor's library: the first call for a vendor
 * dlopen()s it and resolves the entry points it uses with dlsym():
 * - CUDA: the driver API, "libcuda.so.1" (cuMemAlloc_v2 and the other
 *   versioned names). Without it every call fails with ENODEV and a
 *   message that starts "no CUDA driver"; without a GPU, "no CUDA device".
 *   Each call makes the device's primary context current for its duration
 *   (push, then pop), so the caller's own current context is left as it
 *   was; the primary contexts are retained for the life of the process.
 * - HIP (AMD ROCm): the HIP runtime, "libamdhip64.so.5", else
 *   "libamdhip64.so" (TIO_HIP_LIBRARY names another file); "no HIP
 *   runtime" / "no HIP device". A device is made current with
 *   hipSetDevice() for each call and the caller's restored after it.
 *   HIP (5.2) has neither a read-only host registration (so no fence ->
 *   stream: TIO_GPU_CAP_READONLY_REGISTER is 0 and
 *   tio_gpu_stream_wait_fence() reports EOPNOTSUPP) nor dma-buf export
 *   (TIO_GPU_CAP_DMABUF is 0; tio_gpu_export_dmabuf() and
 *   tio_gpu_buffer_import() report EOPNOTSUPP).
 * A libtensorio built without a vendor's headers reports ENODEV for it.
 *
 * What is offered:
 * - device tensors: tio.Tensor objects on the device;
 * - tensorio buffers registered as pinned host memory with a vendor,
 *   unregistered explicitly or when the buffer is freed (a buffer may be
 *   registered with CUDA and HIP at once; each registration ends on its
 *   own);
 * - asynchronous host<->device copies on a GPU stream;
 * - stream -> fence: once the work before it is done, the GPU stream
 *   writes a tensorio stream point into the stream's doorbell (a 64-bit
 *   write-value operation; streams made with TIO_STREAM_DOORBELL, devices
 *   with TIO_GPU_CAP_WRITE_VALUE64), else a host function signals it;
 * - fence -> stream: the GPU stream waits (a 64-bit wait-value operation,
 *   GEQ) on the tensorio stream's seqno word, registered read-only and
 *   device-mapped (or on its doorbell, for a point a GPU stream writes);
 * - dma-buf export of GPU memory, and its import as a tensorio buffer on the
 *   kernel backend.
 *
 * Errors follow the device API (tensorio/context.h): -1 with an error
 * raised; its message names the vendor's error (cuGetErrorName and
 * cuGetErrorString, hipGetErrorName and hipGetErrorString) and
 * tio_errno() maps it: ENODEV (no driver or device), ENOMEM (out of
 * memory), EINVAL (invalid value), EOPNOTSUPP (not supported by this
 * device or backend), EIO (any other error).
 *
 * Layer: gpu (lib/src/gpu/)
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

/* A GPU stream (a CUstream of a device's primary context, a hipStream_t). */
typedef struct tio_gpu_stream tio_gpu_stream_t;

/**
 * tio_gpu_init() - load a vendor's library and initialise it
 * @type: kDLCUDA or kDLROCM
 *
 * Done by every other call on first use; calling it first is how a program
 * (or a test) asks whether the vendor is usable here.
 *
 * Return: 0, or -1 with an error raised (ENODEV: "no CUDA driver: ..." when
 * the library cannot be loaded or lacks an entry point, "no CUDA device:
 * ..." when it finds no GPU; HIP's say "no HIP runtime", "no HIP device";
 * EINVAL for another device type).
 */
TIO_API int tio_gpu_init(DLDeviceType type);

/**
 * tio_gpu_device_count() - number of devices of a vendor
 * @type: kDLCUDA or kDLROCM
 * @count: receives it (at least 1 on success)
 *
 * Return: 0, or -1 with an error raised (ENODEV as tio_gpu_init()).
 */
TIO_API int tio_gpu_device_count(DLDeviceType type, int *count);

/**
 * tio_gpu_driver_version() - the vendor's driver or runtime version
 * @type: kDLCUDA or kDLROCM
 * @version: receives it (CUDA: 1000 * major + 10 * minor, 13000 for 13.0;
 *	HIP: hipRuntimeGetVersion's)
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_gpu_driver_version(DLDeviceType type, int *version);

/**
 * tio_gpu_device_name() - a device's name
 * @dev: the device
 * @name: receives it, NUL-terminated
 * @len: room in @name
 *
 * Return: 0, or -1 with an error raised (EINVAL for a bad ordinal).
 */
TIO_API int tio_gpu_device_name(DLDevice dev, char *name, size_t len);

/* What a device supports, for tio_gpu_device_supports(). */
#define TIO_GPU_CAP_WAIT_VALUE64	1	/* fence -> stream */
#define TIO_GPU_CAP_READONLY_REGISTER	2	/* read-only host registration */
#define TIO_GPU_CAP_DMABUF		3	/* dma-buf export of device memory */
#define TIO_GPU_CAP_WRITE_VALUE64	4	/* stream -> fence by a doorbell write */

/**
 * tio_gpu_device_supports() - whether a device has a capability
 * @dev: the device
 * @cap: TIO_GPU_CAP_*
 *
 * Return: 1 or 0, or -1 with an error raised (EINVAL for an unknown @cap).
 */
TIO_API int tio_gpu_device_supports(DLDevice dev, int cap);

/**
 * tio_gpu_tensor_empty() - allocate a compact row-major device tensor
 * @dev: the device
 * @ndim: number of dimensions (0 ... 64)
 * @shape: the dimensions (non-negative)
 * @dtype: the element type
 * @out: a tio.Tensor (owned) whose DLPack device is @dev and whose data is
 *	the device address; the memory (cuMemAlloc, hipMalloc; rounded up to
 *	whole host pages, not initialised) is freed when the Tensor and every
 *	DLPack export of it are gone
 *
 * Return: 0, or -1 with an error raised (EINVAL, ENOMEM, ENODEV).
 */
TIO_API int tio_gpu_tensor_empty(DLDevice dev, int32_t ndim, const int64_t *shape,
				 DLDataType dtype, tio_object_t **out);

/**
 * tio_gpu_stream_create() - a new non-blocking GPU stream
 * @dev: the device
 * @out: the stream (the caller's; tio_gpu_stream_destroy() frees it)
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_gpu_stream_create(DLDevice dev, tio_gpu_stream_t **out);

/**
 * tio_gpu_stream_destroy() - wait for the stream's work, then free it
 * @gs: the stream (NULL is ignored)
 *
 * Points enqueued with tio_gpu_stream_signal_fence() are signalled before
 * it returns.
 */
TIO_API void tio_gpu_stream_destroy(tio_gpu_stream_t *gs);

/**
 * tio_gpu_stream_wrap() - a stream the caller owns (a framework's), for
 * the calls that take a tio_gpu_stream_t
 * @dev: its device
 * @handle: the CUstream or hipStream_t; NULL is the device's default stream
 * @out: the wrapper; tio_gpu_stream_destroy() frees it and leaves the
 *	stream alone (neither waits for nor destroys it)
 *
 * Return: 0, or -1 with an error raised (ENODEV, EINVAL as
 * tio_gpu_stream_create()).
 */
TIO_API int tio_gpu_stream_wrap(DLDevice dev, void *handle, tio_gpu_stream_t **out);

/**
 * tio_gpu_stream_handle() - the vendor's stream, to enqueue the caller's
 * own work
 * @gs: the stream
 *
 * Return: the CUstream or hipStream_t (a pointer), valid until
 * tio_gpu_stream_destroy().
 */
TIO_API void *tio_gpu_stream_handle(const tio_gpu_stream_t *gs);

/**
 * tio_gpu_stream_device() - the device of a stream
 * @gs: the stream
 *
 * Return: the DLDevice it was created on.
 */
TIO_API DLDevice tio_gpu_stream_device(const tio_gpu_stream_t *gs);

/**
 * tio_gpu_stream_query() - whether all work on the stream is done
 * @gs: the stream
 *
 * Return: 1 when done, 0 while work is pending, -1 with an error raised
 * (an asynchronous error of earlier work).
 */
TIO_API int tio_gpu_stream_query(tio_gpu_stream_t *gs);

/**
 * tio_gpu_stream_sync() - wait for all work on the stream
 * @gs: the stream
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_gpu_stream_sync(tio_gpu_stream_t *gs);

/**
 * tio_gpu_copy_htod() - enqueue a host-to-device copy
 * @gs: the stream
 * @dst: device address (a device tensor's data, or inside it)
 * @src: host memory; it must stay valid until the copy is done. Registered
 *	(pinned) memory is copied asynchronously by DMA; pageable memory is
 *	staged by the driver, and the call may return only once @src is read
 * @size: bytes
 *
 * Return: 0, or -1 with an error raised (EINVAL for a NULL pointer).
 */
TIO_API int tio_gpu_copy_htod(tio_gpu_stream_t *gs, uint64_t dst, const void *src,
			      size_t size);

/**
 * tio_gpu_copy_dtoh() - enqueue a device-to-host copy
 * @gs: the stream
 * @dst: host memory, valid until the copy is done (see tio_gpu_copy_htod())
 * @src: device address
 * @size: bytes
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_gpu_copy_dtoh(tio_gpu_stream_t *gs, void *dst, uint64_t src,
			      size_t size);

/**
 * tio_gpu_tensor_copy() - enqueue a copy between a CPU and a device tensor
 * @gs: the stream (on the device tensor's device)
 * @dst: the destination Tensor
 * @src: the source Tensor
 *
 * One side must be kDLCPU and the other on @gs's device; both must be
 * compact row-major with the same dtype and number of bytes.
 *
 * Return: 0, or -1 with an error raised (EINVAL for any mismatch).
 */
TIO_API int tio_gpu_tensor_copy(tio_gpu_stream_t *gs, tio_object_t *dst,
				tio_object_t *src);

/**
 * tio_gpu_buffer_register() - register a buffer's memory as pinned host
 * memory for every device of a vendor (portable, device-mapped)
 * @type: kDLCUDA or kDLROCM
 * @buf: the buffer (its memory is mapped first if it is not yet)
 *
 * The registration ends with tio_gpu_buffer_unregister() or when the
 * buffer is freed.
 *
 * Return: 0, or -1 with an error raised (EEXIST when already registered).
 */
TIO_API int tio_gpu_buffer_register(DLDeviceType type, tio_buffer_t *buf);

/**
 * tio_gpu_buffer_unregister() - end a buffer's registration with a vendor
 * @type: kDLCUDA or kDLROCM
 * @buf: the buffer
 *
 * Return: 0, or -1 with an error raised (ENOENT when not registered).
 */
TIO_API int tio_gpu_buffer_unregister(DLDeviceType type, tio_buffer_t *buf);

/**
 * tio_gpu_buffer_device_ptr() - the device address of a registered buffer
 * @buf: the buffer
 * @dev: the device
 * @dptr: receives the address kernels on @dev use to reach the buffer
 *
 * Return: 0, or -1 with an error raised (ENOENT when not registered).
 */
TIO_API int tio_gpu_buffer_device_ptr(tio_buffer_t *buf, DLDevice dev, uint64_t *dptr);

/**
 * tio_gpu_stream_signal_fence() - signal a tensorio point from a GPU stream
 * @gs: the GPU stream
 * @s: the tensorio stream
 * @seqno: an emitted point of @s
 *
 * Signals @seqno once the work enqueued before it is done. On a stream
 * with a doorbell (tio_stream_create_flags(TIO_STREAM_DOORBELL)) and a
 * device with TIO_GPU_CAP_WRITE_VALUE64, the GPU stream writes @seqno into
 * the doorbell (cuStreamWriteValue64, hipStreamWriteValue64; the doorbell
 * page is registered read-write on first use): no host callback, no
 * system call. Doorbell writes of one stream only grow: a point at or
 * below one already written, or from another GPU stream while an earlier
 * write has not landed, goes the other way. Otherwise a host function
 * (cuLaunchHostFunc, hipStreamAddCallback) signals it; it makes no vendor
 * call and signals through the backend (an ioctl or a futex). @s is kept
 * alive until the function ran or the write landed, and released by the
 * next tio_gpu_stream_sync(), _query() that finds the stream done,
 * _destroy() of any stream of the vendor, or signal.
 *
 * Return: 0, or -1 with an error raised (EINVAL for a seqno never emitted).
 */
TIO_API int tio_gpu_stream_signal_fence(tio_gpu_stream_t *gs, tio_stream_t *s,
					uint64_t seqno);

/**
 * tio_gpu_stream_record_fence() - emit a point of @s and signal it from @gs
 * @gs: the GPU stream
 * @s: the tensorio stream
 * @seqno: receives the new point
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_gpu_stream_record_fence(tio_gpu_stream_t *gs, tio_stream_t *s,
					uint64_t *seqno);

/**
 * tio_gpu_stream_wait_fence() - make a GPU stream wait for a tensorio point
 * @gs: the GPU stream
 * @s: the tensorio stream
 * @seqno: an emitted point of @s
 *
 * Work enqueued on @gs afterwards starts once @s's seqno word reaches
 * @seqno (cuStreamWaitValue64 with CU_STREAM_WAIT_VALUE_GEQ on the word,
 * registered read-only and device-mapped on first use; the registration
 * ends when @s is freed). A point a GPU stream is to write into @s's
 * doorbell (tio_gpu_stream_signal_fence()) and that has not signalled is
 * waited for on the doorbell, where it shows first. The GPU sees only the
 * seqno, not a point's error.
 *
 * Return: 0, or -1 with an error raised (EOPNOTSUPP when the device lacks
 * 64-bit stream memory operations, or read-only host registration for a
 * wait on the seqno word).
 */
TIO_API int tio_gpu_stream_wait_fence(tio_gpu_stream_t *gs, tio_stream_t *s,
				      uint64_t seqno);

/**
 * tio_gpu_export_dmabuf() - a dma-buf fd for a range of device memory
 * @dev: the device owning the memory
 * @dptr: start, host-page aligned (a device tensor's data is)
 * @size: bytes, a multiple of the host page size
 * @fd: receives the fd (close-on-exec), the caller's to close
 *
 * Return: 0, or -1 with an error raised (EOPNOTSUPP when the device or its
 * kernel driver cannot export dma-bufs).
 */
TIO_API int tio_gpu_export_dmabuf(DLDevice dev, uint64_t dptr, size_t size, int *fd);

/**
 * tio_gpu_buffer_import() - device memory as a tensorio buffer
 * @dev: the device owning the memory
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
TIO_API int tio_gpu_buffer_import(DLDevice dev, uint64_t dptr, size_t size,
				  tio_buffer_t **out);

/**
 * tio_gpu_debug_live() - a vendor's objects of this library alive: streams,
 * device allocations, buffer and seqno-word registrations, and tensorio
 * streams held for pending signals
 * @type: kDLCUDA or kDLROCM
 *
 * Return: their number (0 before first use, -1 with EINVAL raised for
 * another device type).
 */
TIO_API int64_t tio_gpu_debug_live(DLDeviceType type);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_GPU_H */
