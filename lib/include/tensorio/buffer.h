/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Buffers: pinned memory owned by the backend (kernel pages or a locked
 * memfd), pinned user memory, or an imported dma-buf; each can carry a
 * tensor descriptor and be shared as a dma-buf fd.
 *
 * A tio_buffer_t is an FFI object (type "tio.Buffer"): it starts with a
 * tio_object_t header, is reference counted with tio_object_incref() /
 * tio_object_decref() (or tio_buffer_decref()), and the last reference
 * frees the backend's buffer. Errors: -1 with an error raised, see
 * tensorio/context.h.
 *
 * Layer: dev (lib/src/dev/)
 */
#ifndef TENSORIO_BUFFER_H
#define TENSORIO_BUFFER_H

#include <stddef.h>
#include <stdint.h>

#include <linux/tensorio.h>

#include <tensorio/dlpack.h>
#include <tensorio/object.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tio_buffer tio_buffer_t;
typedef struct tio_stream tio_stream_t;

/**
 * struct tio_desc - a tensor descriptor
 * @code: DLPack type code (TIO_DTYPE_*)
 * @bits: bits per lane
 * @lanes: lanes per element
 * @ndim: dimensions, 0 ... TIO_MAX_NDIM
 * @flags: TIO_DESC_F_*
 * @byte_offset: where the tensor starts in the buffer
 * @shape: the first @ndim sizes
 * @strides: the first @ndim strides in elements (with TIO_DESC_F_STRIDED)
 *
 * The library's own type: the library hands the driver its uapi
 * struct tio_desc, converting where the two differ, so the
 * library's ABI does not move when the uapi grows.
 */
struct tio_desc {
	uint8_t code;
	uint8_t bits;
	uint16_t lanes;
	uint16_t ndim;
	uint16_t flags;
	uint64_t byte_offset;
	int64_t shape[TIO_MAX_NDIM];
	int64_t strides[TIO_MAX_NDIM];
};

/**
 * struct tio_buffer_info - what the backend knows of a buffer
 * @handle: the backend's handle
 * @kind: TIO_BUF_KIND_*
 * @state: TIO_BUF_S_* (the driver's; the user backend's emulation)
 * @reserved: zero; room to grow without moving @size
 * @size: bytes
 * @mmap_offset: where the buffer maps through the device
 *
 * The library's own type (see struct tio_desc), not the uapi's
 * struct tio_buf_info.
 */
struct tio_buffer_info {
	uint32_t handle;
	uint32_t kind;
	uint32_t state;
	uint32_t reserved;
	uint64_t size;
	uint64_t mmap_offset;
};

/**
 * tio_buffer_alloc() - allocate zeroed pinned memory
 * @size: bytes, rounded up to whole pages; 0 with @desc: the bytes @desc
 *	reaches (tio_desc_nbytes())
 * @desc: a tensor descriptor to attach, or NULL
 * @out: the buffer (one reference, the caller's)
 *
 * Return: 0, or -1 with an error raised (EINVAL for size 0 or a bad
 * descriptor, E2BIG above the limit, ENOMEM when RLIMIT_MEMLOCK is spent).
 */
TIO_API int tio_buffer_alloc(size_t size, const struct tio_desc *desc,
			     tio_buffer_t **out);

/**
 * tio_buffer_pin() - pin existing user memory as a buffer
 * @addr: start, page aligned
 * @size: bytes, a non-zero multiple of the page size
 * @flags: TIO_PIN_F_READONLY or 0
 * @out: the buffer; its data is @addr, which must outlive it
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_buffer_pin(void *addr, size_t size, unsigned int flags,
			   tio_buffer_t **out);

/**
 * tio_buffer_pin_owned() - pin memory that the buffer gives back when freed
 * @addr: start, page aligned
 * @size: bytes, a non-zero multiple of the page size
 * @flags: TIO_PIN_F_READONLY or 0
 * @release: called once with @arg when the last reference to the buffer
 *	(and so to every Tensor and DLPack export of it) is gone and the
 *	memory is unpinned, in the thread that dropped it: from then on the
 *	owner may free @addr. Not called when this fails.
 * @arg: passed to @release
 * @out: the buffer
 *
 * For memory another library allocated (e.g. libtensorio-net's
 * tio_net_mem_alloc()), so that a buffer of it can be handed out freely.
 *
 * Return: 0, or -1 with an error raised (EINVAL when @release is NULL, else
 * as tio_buffer_pin()).
 */
TIO_API int tio_buffer_pin_owned(void *addr, size_t size, unsigned int flags,
				 void (*release)(void *arg), void *arg,
				 tio_buffer_t **out);

/**
 * tio_buffer_import() - take a dma-buf fd as a buffer
 * @fd: the dma-buf (not consumed: the caller still closes it)
 * @out: the buffer
 *
 * Return: 0, or -1 with an error raised (EBADF, EINVAL for a file that is
 * not a dma-buf).
 */
TIO_API int tio_buffer_import(int fd, tio_buffer_t **out);

/**
 * tio_buffer_export() - a dma-buf fd for the buffer
 * @buf: the buffer
 * @flags: TIO_EXPORT_F_CLOEXEC | TIO_EXPORT_F_RDWR
 * @fd: the new fd, the caller's to close
 *
 * Return: 0, or -1 with an error raised (EOPNOTSUPP on the user backend
 * without /dev/udmabuf).
 */
TIO_API int tio_buffer_export(tio_buffer_t *buf, unsigned int flags, int *fd);

/**
 * tio_buffer_data() - the buffer's memory, mapped on first use
 * @buf: the buffer
 *
 * Return: the address, or NULL with an error raised.
 */
TIO_API void *tio_buffer_data(tio_buffer_t *buf);

/**
 * tio_buffer_size() - the buffer's size in bytes (whole pages)
 * @buf: the buffer
 *
 * Return: the size in bytes, a multiple of the page size.
 */
TIO_API size_t tio_buffer_size(const tio_buffer_t *buf);

/**
 * tio_buffer_handle() - the backend's handle of the buffer
 * @buf: the buffer
 *
 * Return: the handle (the driver's, or the user backend's own).
 */
TIO_API uint32_t tio_buffer_handle(const tio_buffer_t *buf);

/**
 * tio_buffer_info() - what the backend knows of the buffer
 * @buf: the buffer
 * @info: filled in (kind, state, size, mmap offset)
 * @desc: receives the descriptor when the buffer has one, or NULL
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_buffer_info(tio_buffer_t *buf, struct tio_buffer_info *info,
			    struct tio_desc *desc);

/**
 * tio_buffer_set_desc() - attach or (with NULL) drop a tensor descriptor
 * @buf: the buffer
 * @desc: the descriptor, checked to fit the buffer; NULL clears
 *
 * Return: 0, or -1 with an error raised (EINVAL, ERANGE, EOVERFLOW).
 */
TIO_API int tio_buffer_set_desc(tio_buffer_t *buf, const struct tio_desc *desc);

/**
 * tio_buffer_attach_fence() - add a stream point to the buffer's
 * reservation (implicit sync with other drivers)
 * @buf: the buffer
 * @stream: the stream
 * @seqno: an emitted point
 * @flags: TIO_RESV_F_WRITE or 0 (read)
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_buffer_attach_fence(tio_buffer_t *buf, tio_stream_t *stream,
				    uint64_t seqno, unsigned int flags);

/**
 * tio_buffer_wait() - wait for the buffer's attached fences
 * @buf: the buffer
 * @flags: TIO_RESV_F_WRITE (writers only) | TIO_WAIT_F_ABSOLUTE
 * @timeout_ns: as tio_fence_wait()
 * @status: the first error among them (0 when clean), or NULL
 *
 * Return: 0, or -1 with an error raised (ETIME on timeout).
 */
TIO_API int tio_buffer_wait(tio_buffer_t *buf, unsigned int flags,
			    int64_t timeout_ns, int *status);

/**
 * tio_buffer_decref() - drop a reference (NULL is ignored)
 * @buf: the buffer
 */
TIO_API void tio_buffer_decref(tio_buffer_t *buf);

/**
 * tio_buffer_to_dlpack() - a DLPack tensor over the buffer's memory
 * @buf: the buffer
 * @desc: the layout, or NULL for the buffer's own descriptor
 * @out: the managed tensor; it holds a reference to @buf until its deleter
 *	is called
 *
 * Return: 0, or -1 with an error raised (EINVAL when no descriptor).
 */
TIO_API int tio_buffer_to_dlpack(tio_buffer_t *buf, const struct tio_desc *desc,
				 DLManagedTensorVersioned **out);

/**
 * tio_buffer_tensor() - a tio.Tensor (FFI Tensor object) viewing the buffer
 * @buf: the buffer
 * @desc: the layout, or NULL for the buffer's own descriptor
 * @out: the Tensor (owned); it keeps @buf alive, and so does every DLPack
 *	export of it
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_buffer_tensor(tio_buffer_t *buf, const struct tio_desc *desc,
			      tio_object_t **out);

/**
 * tio_desc_check() - check a descriptor as the driver does
 * @desc: the descriptor
 * @size: the size of the buffer it lies over
 *
 * Return: 0, or -1 with an error raised (EINVAL, EOVERFLOW, ERANGE).
 */
TIO_API int tio_desc_check(const struct tio_desc *desc, uint64_t size);

/**
 * tio_desc_init() - a dense descriptor of a dtype and a shape
 * @desc: the descriptor (overwritten)
 * @dtype: the element type
 * @ndim: dimensions, 0 to TIO_MAX_NDIM
 * @shape: @ndim sizes, none negative
 *
 * Return: 0, or -1 with an error raised (a bad dtype or shape).
 */
TIO_API int tio_desc_init(struct tio_desc *desc, DLDataType dtype, int ndim,
			  const int64_t *shape);

/**
 * tio_desc_nbytes() - the bytes a descriptor reaches (byte_offset included)
 * @desc: the descriptor
 * @bytes: the size a buffer needs to hold it
 *
 * tio_buffer_alloc(0, desc, ...) allocates this much.
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_desc_nbytes(const struct tio_desc *desc, uint64_t *bytes);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_BUFFER_H */
