/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * GPUs: HIP (AMD ROCm) through the HIP runtime, loaded at run time.
 *
 * The same surface as CUDA's (tensorio/gpu.h), call for call: read the
 * tio_cuda_* documentation there for what each one does. What differs:
 *
 * - libtensorio never links libamdhip64: the first tio_hip_* call
 *   dlopen()s "libamdhip64.so.5", else "libamdhip64.so" (TIO_HIP_LIBRARY
 *   names another file), and resolves the hip* entry points with dlsym().
 *   Without the library every call fails with ENODEV and a message that
 *   starts "no HIP runtime"; without a device, "no HIP device".
 * - Device tensors' DLPack device is kDLROCM; their memory is hipMalloc's.
 * - A device is made current with hipSetDevice() for each call, and the
 *   caller's current device is restored after it.
 * - Errors name the HIP error (hipGetErrorName, hipGetErrorString); the
 *   errno mapping is CUDA's (ENODEV, ENOMEM, EINVAL, EOPNOTSUPP, EEXIST,
 *   ENOENT, else EIO).
 * - Fence -> stream needs hipStreamWaitValue64 and a read-only host
 *   registration of the seqno word, which HIP (5.2) does not offer:
 *   TIO_HIP_CAP_READONLY_REGISTER is 0 and tio_hip_stream_wait_fence()
 *   reports EOPNOTSUPP.
 * - HIP (5.2) has no dma-buf export: TIO_HIP_CAP_DMABUF is 0, and
 *   tio_hip_export_dmabuf() and tio_hip_buffer_import() report EOPNOTSUPP.
 *
 * A buffer may be registered with CUDA and HIP at once; each registration
 * ends on its own.
 */
#ifndef TENSORIO_GPU_HIP_H
#define TENSORIO_GPU_HIP_H

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

/* A HIP stream (a hipStream_t of one device). */
typedef struct tio_hip_stream tio_hip_stream_t;

/**
 * tio_hip_init() - load the HIP runtime and count its devices
 *
 * Return: 0, or -1 with an error raised (ENODEV: "no HIP runtime: ..."
 * when the library cannot be loaded or lacks an entry point, "no HIP
 * device: hipGetDeviceCount: ..." when there is no GPU).
 */
TIO_API int tio_hip_init(void);

/**
 * tio_hip_device_count() - number of HIP devices
 * @count: receives it (at least 1 on success)
 *
 * Return: 0, or -1 with an error raised (ENODEV as tio_hip_init()).
 */
TIO_API int tio_hip_device_count(int *count);

/**
 * tio_hip_driver_version() - the HIP runtime's version, as
 * hipDriverGetVersion() gives it
 * @version: receives it
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_hip_driver_version(int *version);

/**
 * tio_hip_device_name() - a device's name
 * @device: device ordinal
 * @name: receives it, NUL-terminated
 * @len: room in @name
 *
 * Return: 0, or -1 with an error raised (EINVAL for a bad ordinal).
 */
TIO_API int tio_hip_device_name(int device, char *name, size_t len);

/* What a device supports, for tio_hip_device_supports(). */
#define TIO_HIP_CAP_WAIT_VALUE64	1	/* hipStreamWaitValue64 */
#define TIO_HIP_CAP_READONLY_REGISTER	2	/* always 0 (HIP 5.2) */
#define TIO_HIP_CAP_DMABUF		3	/* always 0 (HIP 5.2) */

/**
 * tio_hip_device_supports() - whether a device has a capability
 * @device: device ordinal
 * @cap: TIO_HIP_CAP_*
 *
 * Return: 1 or 0, or -1 with an error raised (EINVAL for an unknown @cap).
 */
TIO_API int tio_hip_device_supports(int device, int cap);

/**
 * tio_hip_tensor_empty() - allocate a compact row-major device tensor
 * @device: device ordinal
 * @ndim: number of dimensions (0 ... 64)
 * @shape: the dimensions (non-negative)
 * @dtype: the element type
 * @out: a tio.Tensor (owned) whose DLPack device is {kDLROCM, @device}; the
 *	memory (hipMalloc, whole host pages, not initialised) is freed when
 *	the Tensor and every DLPack export of it are gone
 *
 * Return: 0, or -1 with an error raised (EINVAL, EOVERFLOW, ENOMEM, ENODEV).
 */
TIO_API int tio_hip_tensor_empty(int device, int32_t ndim, const int64_t *shape,
				 DLDataType dtype, tio_object_t **out);

/**
 * tio_hip_stream_create() - a new non-blocking HIP stream
 * @device: device ordinal
 * @out: the stream (the caller's; tio_hip_stream_destroy() frees it)
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_hip_stream_create(int device, tio_hip_stream_t **out);

/**
 * tio_hip_stream_destroy() - wait for the stream's work, then free it
 * @hs: the stream (NULL is ignored)
 */
TIO_API void tio_hip_stream_destroy(tio_hip_stream_t *hs);

/**
 * tio_hip_stream_handle() - the hipStream_t, to enqueue the caller's work
 * @hs: the stream
 *
 * Return: the hipStream_t, valid until tio_hip_stream_destroy().
 */
TIO_API void *tio_hip_stream_handle(const tio_hip_stream_t *hs);

/**
 * tio_hip_stream_device() - the device ordinal of a stream
 * @hs: the stream
 */
TIO_API int tio_hip_stream_device(const tio_hip_stream_t *hs);

/**
 * tio_hip_stream_query() - whether all work on the stream is done
 * @hs: the stream
 *
 * Return: 1 when done, 0 while work is pending, -1 with an error raised.
 */
TIO_API int tio_hip_stream_query(tio_hip_stream_t *hs);

/**
 * tio_hip_stream_sync() - wait for all work on the stream
 * @hs: the stream
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_hip_stream_sync(tio_hip_stream_t *hs);

/**
 * tio_hip_copy_htod() - enqueue a host-to-device copy (hipMemcpyHtoDAsync)
 * @hs: the stream
 * @dst: device address
 * @src: host memory, valid until the copy is done
 * @size: bytes
 *
 * Return: 0, or -1 with an error raised (EINVAL for a NULL pointer).
 */
TIO_API int tio_hip_copy_htod(tio_hip_stream_t *hs, uint64_t dst, const void *src,
			      size_t size);

/**
 * tio_hip_copy_dtoh() - enqueue a device-to-host copy (hipMemcpyDtoHAsync)
 * @hs: the stream
 * @dst: host memory, valid until the copy is done
 * @src: device address
 * @size: bytes
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_hip_copy_dtoh(tio_hip_stream_t *hs, void *dst, uint64_t src,
			      size_t size);

/**
 * tio_hip_tensor_copy() - enqueue a copy between a CPU and a HIP tensor
 * @hs: the stream (on the HIP tensor's device)
 * @dst: the destination Tensor
 * @src: the source Tensor
 *
 * One side kDLCPU, the other kDLROCM on @hs's device; both compact
 * row-major, same dtype and bytes.
 *
 * Return: 0, or -1 with an error raised (EINVAL for any mismatch).
 */
TIO_API int tio_hip_tensor_copy(tio_hip_stream_t *hs, tio_object_t *dst,
				tio_object_t *src);

/**
 * tio_hip_buffer_register() - register a buffer's memory with HIP
 * (hipHostRegister, portable and mapped)
 * @buf: the buffer (mapped first if it is not yet)
 *
 * Ends with tio_hip_buffer_unregister() or when the buffer is freed.
 *
 * Return: 0, or -1 with an error raised (EEXIST when already registered).
 */
TIO_API int tio_hip_buffer_register(tio_buffer_t *buf);

/**
 * tio_hip_buffer_unregister() - end a buffer's HIP registration
 * @buf: the buffer
 *
 * Return: 0, or -1 with an error raised (ENOENT when not registered).
 */
TIO_API int tio_hip_buffer_unregister(tio_buffer_t *buf);

/**
 * tio_hip_buffer_device_ptr() - the device address of a registered buffer
 * @buf: the buffer
 * @device: device ordinal
 * @dptr: receives it (hipHostGetDevicePointer)
 *
 * Return: 0, or -1 with an error raised (ENOENT when not registered).
 */
TIO_API int tio_hip_buffer_device_ptr(tio_buffer_t *buf, int device, uint64_t *dptr);

/**
 * tio_hip_stream_signal_fence() - signal a tensorio point from a HIP stream
 * @hs: the HIP stream
 * @s: the tensorio stream
 * @seqno: an emitted point of @s
 *
 * Enqueues a stream callback (hipStreamAddCallback) that signals @seqno
 * once the work before it is done, or signals it failed (-EIO) when the
 * stream reports an error; @s is held until then (see
 * tio_cuda_stream_signal_fence()).
 *
 * Return: 0, or -1 with an error raised (EINVAL for a seqno never emitted).
 */
TIO_API int tio_hip_stream_signal_fence(tio_hip_stream_t *hs, tio_stream_t *s,
					uint64_t seqno);

/**
 * tio_hip_stream_record_fence() - emit a point of @s and signal it from @hs
 * @hs: the HIP stream
 * @s: the tensorio stream
 * @seqno: receives the new point
 *
 * Return: 0, or -1 with an error raised (the point is then signalled
 * with -ECANCELED).
 */
TIO_API int tio_hip_stream_record_fence(tio_hip_stream_t *hs, tio_stream_t *s,
					uint64_t *seqno);

/**
 * tio_hip_stream_wait_fence() - make a HIP stream wait for a tensorio point
 * @hs: the HIP stream
 * @s: the tensorio stream
 * @seqno: an emitted point of @s
 *
 * Return: 0, or -1 with an error raised: EOPNOTSUPP while HIP cannot
 * register the read-only seqno word (HIP 5.2), see the file comment.
 */
TIO_API int tio_hip_stream_wait_fence(tio_hip_stream_t *hs, tio_stream_t *s,
				      uint64_t seqno);

/**
 * tio_hip_export_dmabuf() - a dma-buf fd for a range of device memory
 * @device: the device owning the memory
 * @dptr: start, host-page aligned
 * @size: bytes, a multiple of the host page size
 * @fd: receives the fd
 *
 * Return: -1 with an error raised: EOPNOTSUPP (HIP 5.2 cannot export
 * dma-bufs), or ENODEV / EINVAL for the device.
 */
TIO_API int tio_hip_export_dmabuf(int device, uint64_t dptr, size_t size, int *fd);

/**
 * tio_hip_buffer_import() - device memory as a tensorio buffer
 * @device: the device owning the memory
 * @dptr: start, host-page aligned
 * @size: bytes, a multiple of the host page size
 * @out: the buffer
 *
 * Return: -1 with an error raised: EOPNOTSUPP (the user backend, or no
 * dma-buf export), or ENODEV / EINVAL for the device.
 */
TIO_API int tio_hip_buffer_import(int device, uint64_t dptr, size_t size,
				  tio_buffer_t **out);

/**
 * tio_hip_debug_live() - HIP objects of this library alive: streams,
 * device allocations, registrations and pending signals
 *
 * Return: their number (0 before first use).
 */
TIO_API int64_t tio_hip_debug_live(void);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_GPU_HIP_H */
