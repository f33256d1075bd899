/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * tensorio: pinned and dma-buf backed tensor buffers and fence timelines.
 *
 * Every operation is one command with a fixed-size payload of at most
 * TIO_CMD_PAYLOAD bytes. The same payload is accepted three ways:
 *
 *  1. ioctl(fd, TIO_IOC_<OP>, &payload);
 *  2. an IORING_OP_URING_CMD SQE with cmd_op = TIO_IOC_<OP> and the first
 *     eight bytes of sqe->cmd holding the payload's address (__u64); or,
 *     on an IORING_SETUP_SQE128 ring (uapi 1.2), the payload itself in
 *     the SQE (struct tio_uring_inline);
 *  3. TIO_IOC_SUBMIT, which carries an array of struct tio_cmd records;
 *  4. the file's command ring (uapi 1.2): struct tio_cmd records in pages
 *     the driver allocates and userspace maps, run in place by
 *     TIO_IOC_RING_ENTER (itself an ioctl or a uring_cmd).
 *
 * Rules (Documentation/process/botching-up-ioctls.rst): all structures are
 * naturally aligned and only grow at the end (the driver accepts every
 * size a structure ever had: a shorter one is zero-extended, a longer one
 * must be zero past the driver's), pointers travel as __u64,
 * padding and reserved fields must be zero and unknown flags are rejected
 * with -EINVAL. See docs/uapi.md for every command's semantics.
 */
#ifndef _UAPI_LINUX_TENSORIO_H
#define _UAPI_LINUX_TENSORIO_H

#include <linux/ioctl.h>
#include <linux/types.h>

#if defined(__cplusplus)
extern "C" {
#endif

#define TIO_UAPI_VERSION_MAJOR	1
#define TIO_UAPI_VERSION_MINOR	4
#define TIO_UAPI_VERSION	((TIO_UAPI_VERSION_MAJOR << 16) | TIO_UAPI_VERSION_MINOR)

/* Feature bits reported by TIO_IOC_INFO. */
#define TIO_FEAT_BUFFERS	0x1ULL	/* BUF_ALLOC/FREE/INFO/SET_DESC */
#define TIO_FEAT_PIN_USER	0x2ULL	/* BUF_PIN_USER */
#define TIO_FEAT_DMABUF		0x4ULL	/* BUF_EXPORT/BUF_IMPORT */
#define TIO_FEAT_STREAMS	0x8ULL	/* STREAM_* and FENCE_* */
#define TIO_FEAT_SYNC_FILE	0x10ULL	/* FENCE_EXPORT/FENCE_IMPORT */
#define TIO_FEAT_DMA_RESV	0x20ULL	/* BUF_ATTACH_FENCE/BUF_WAIT */
#define TIO_FEAT_URING_CMD	0x40ULL	/* IORING_OP_URING_CMD */
#define TIO_FEAT_SUBMIT		0x80ULL	/* TIO_IOC_SUBMIT */
#define TIO_FEAT_ASYNC_WAIT	0x100ULL	/* parked uring waits */
#define TIO_FEAT_RING		0x200ULL	/* RING_SETUP/RING_ENTER (uapi 1.2) */
#define TIO_FEAT_DOORBELL	0x400ULL	/* TIO_STREAM_F_DOORBELL (uapi 1.4) */

/* Bytes of payload in one command record. */
#define TIO_CMD_PAYLOAD		48
/* Most dimensions a tensor descriptor can describe. */
#define TIO_MAX_NDIM		8

/**
 * struct tio_info - TIO_IOC_INFO: driver version, features and limits
 * @version: out, TIO_UAPI_VERSION of the running driver
 * @flags: in, must be zero
 * @features: out, TIO_FEAT_* bits
 * @max_buf_size: out, the largest buffer BUF_ALLOC accepts, in bytes
 * @max_pinned: out, module-wide cap on pinned bytes
 * @pinned: out, bytes pinned now, module-wide
 * @max_submit: out, most records TIO_IOC_SUBMIT accepts
 * @pad: must be zero
 */
struct tio_info {
	__u32 version;
	__u32 flags;
	__u64 features;
	__u64 max_buf_size;
	__u64 max_pinned;
	__u64 pinned;
	__u32 max_submit;
	__u32 pad;
};

/* DLPack DLDataTypeCode values, for tio_tensor_desc.code. */
#define TIO_DTYPE_INT		0
#define TIO_DTYPE_UINT		1
#define TIO_DTYPE_FLOAT		2
#define TIO_DTYPE_OPAQUE	3
#define TIO_DTYPE_BFLOAT	4
#define TIO_DTYPE_COMPLEX	5
#define TIO_DTYPE_BOOL		6

/* tio_tensor_desc.flags */
#define TIO_DESC_F_STRIDED	0x1U	/* @strides are valid */

/**
 * struct tio_tensor_desc - a DLPack-style tensor laid over a buffer
 * @code: DLPack type code (TIO_DTYPE_*)
 * @bits: bits per lane (8, 16, 32, 64, ... or 1..7 for sub-byte types)
 * @lanes: lanes per element, at least 1
 * @ndim: number of dimensions, 0..TIO_MAX_NDIM
 * @flags: TIO_DESC_F_*
 * @byte_offset: where element 0 starts in the buffer
 * @shape: extents; entries past @ndim must be zero
 * @strides: in elements, as in DLPack; only with TIO_DESC_F_STRIDED,
 *	     otherwise zero (compact row-major); entries past @ndim zero
 *
 * The kernel checks that every addressed element lies inside the buffer.
 */
struct tio_tensor_desc {
	__u8 code;
	__u8 bits;
	__u16 lanes;
	__u16 ndim;
	__u16 flags;
	__u64 byte_offset;
	__s64 shape[TIO_MAX_NDIM];
	__s64 strides[TIO_MAX_NDIM];
};

/* Buffer kinds reported by BUF_INFO. */
#define TIO_BUF_KIND_ALLOC	1	/* kernel pages, zeroed */
#define TIO_BUF_KIND_USER	2	/* pinned user memory */
#define TIO_BUF_KIND_IMPORT	3	/* an imported dma-buf */

/**
 * struct tio_buf_alloc - TIO_IOC_BUF_ALLOC: allocate zeroed pinned pages
 * @size: in, bytes (rounded up to pages), 1..max_buf_size
 * @flags: in, must be zero
 * @handle: out, the buffer's handle in this file
 * @mmap_offset: out, offset to mmap the buffer through the device fd
 * @desc_ptr: in, optional struct tio_tensor_desc * (0: none)
 */
struct tio_buf_alloc {
	__u64 size;
	__u32 flags;
	__u32 handle;
	__u64 mmap_offset;
	__u64 desc_ptr;
};

/* tio_buf_pin.flags */
#define TIO_PIN_F_READONLY	0x1U	/* device only reads the pages */

/**
 * struct tio_buf_pin - TIO_IOC_BUF_PIN_USER: pin an existing user range
 * @addr: in, start of the range, page aligned
 * @size: in, length in bytes, a non-zero multiple of the page size
 * @flags: in, TIO_PIN_F_*
 * @handle: out
 * @mmap_offset: out
 * @desc_ptr: in, optional struct tio_tensor_desc * (0: none)
 */
struct tio_buf_pin {
	__u64 addr;
	__u64 size;
	__u32 flags;
	__u32 handle;
	__u64 mmap_offset;
	__u64 desc_ptr;
};

/* tio_buf_export.flags */
#define TIO_EXPORT_F_CLOEXEC	0x1U
#define TIO_EXPORT_F_RDWR	0x2U

/**
 * struct tio_buf_export - TIO_IOC_BUF_EXPORT: a dma-buf fd for a buffer
 * @handle: in
 * @flags: in, TIO_EXPORT_F_*
 * @fd: out, a new fd for the buffer's one dma-buf
 * @pad: must be zero
 */
struct tio_buf_export {
	__u32 handle;
	__u32 flags;
	__s32 fd;
	__u32 pad;
};

/**
 * struct tio_buf_import - TIO_IOC_BUF_IMPORT: take a dma-buf from anyone
 * @fd: in, a dma-buf fd
 * @flags: in, must be zero
 * @handle: out
 * @pad: must be zero
 * @size: out, the dma-buf's size
 * @mmap_offset: out, offset to mmap it through the device fd
 */
struct tio_buf_import {
	__s32 fd;
	__u32 flags;
	__u32 handle;
	__u32 pad;
	__u64 size;
	__u64 mmap_offset;
};

/* tio_buf_info.state */
#define TIO_BUF_S_DESC		0x1U	/* carries a tensor descriptor */
#define TIO_BUF_S_EXPORTED	0x2U	/* has a dma-buf */

/**
 * struct tio_buf_info - TIO_IOC_BUF_INFO: describe a buffer
 * @handle: in
 * @flags: in, must be zero
 * @size: out
 * @mmap_offset: out
 * @kind: out, TIO_BUF_KIND_*
 * @state: out, TIO_BUF_S_*
 * @desc_ptr: in, optional: where to copy the tensor descriptor (0: none)
 */
struct tio_buf_info {
	__u32 handle;
	__u32 flags;
	__u64 size;
	__u64 mmap_offset;
	__u32 kind;
	__u32 state;
	__u64 desc_ptr;
};

/* tio_buf_desc.flags */
#define TIO_DESC_CLEAR		0x1U	/* drop the descriptor */

/**
 * struct tio_buf_desc - TIO_IOC_BUF_SET_DESC: set or clear a descriptor
 * @handle: in
 * @flags: in, TIO_DESC_CLEAR or zero
 * @desc_ptr: in, struct tio_tensor_desc * (0 with TIO_DESC_CLEAR)
 */
struct tio_buf_desc {
	__u32 handle;
	__u32 flags;
	__u64 desc_ptr;
};

/**
 * struct tio_handle_op - TIO_IOC_BUF_FREE, TIO_IOC_STREAM_DESTROY
 * @handle: in
 * @flags: in, must be zero
 */
struct tio_handle_op {
	__u32 handle;
	__u32 flags;
};

/* The largest fence_timeout_ms module parameter, in milliseconds. */
#define TIO_FENCE_TIMEOUT_MAX_MS	60000

/* tio_stream_create.flags */
#define TIO_STREAM_F_DOORBELL	0x1U	/* the stream has a doorbell page (uapi 1.4) */

/**
 * struct tio_stream_create - TIO_IOC_STREAM_CREATE: a new fence timeline
 * @flags: in, TIO_STREAM_F_DOORBELL or zero
 * @handle: out
 * @seqno_offset: out, mmap offset (read-only, one page) of the __u64 word
 *		  holding the last signalled seqno
 * @context: out, the timeline's dma_fence context
 * @fence_timeout_ms: in/out (since uapi 1.1): the bound within which a
 *		      point seen outside the file must signal, else it
 *		      expires with -ETIMEDOUT; in: 0 for the fence_timeout_ms
 *		      module parameter, else 1..that parameter; out: the
 *		      bound in force
 * @pad: must be zero
 * @doorbell_offset: out (since uapi 1.4): with TIO_STREAM_F_DOORBELL, the
 *		     mmap offset (one page, MAP_SHARED, read-write) of the
 *		     stream's doorbell, a __u64 at the start of the page that
 *		     userspace or a device (a GPU's stream memory write) sets
 *		     to the last point that completed; the driver signals
 *		     every point up to it, cleanly (see docs/uapi.md); else 0
 */
struct tio_stream_create {
	__u32 flags;
	__u32 handle;
	__u64 seqno_offset;
	__u64 context;
	__u32 fence_timeout_ms;
	__u32 pad;
	__u64 doorbell_offset;
};

/* The sizes of struct tio_stream_create in uapi 1.0 and 1.1, still accepted. */
#define TIO_STREAM_CREATE_SIZE_VER0	24
#define TIO_STREAM_CREATE_SIZE_VER1	32

/**
 * struct tio_fence_emit - TIO_IOC_FENCE_EMIT: add the next point
 * @stream: in
 * @flags: in, must be zero
 * @seqno: out, the new point's seqno
 */
struct tio_fence_emit {
	__u32 stream;
	__u32 flags;
	__u64 seqno;
};

/**
 * struct tio_fence_signal - TIO_IOC_FENCE_SIGNAL: signal up to a seqno
 * @stream: in
 * @flags: in, must be zero
 * @seqno: in, every emitted point up to and including it is signalled
 * @error: in, 0 or a negative errno every signalled point carries
 * @pad: must be zero
 */
struct tio_fence_signal {
	__u32 stream;
	__u32 flags;
	__u64 seqno;
	__s32 error;
	__u32 pad;
};

/* tio_fence_wait.flags, tio_buf_wait.flags */
#define TIO_WAIT_F_ABSOLUTE	0x1U	/* timeout is CLOCK_MONOTONIC */

/**
 * struct tio_fence_wait - TIO_IOC_FENCE_WAIT: wait for a point
 * @stream: in
 * @flags: in, TIO_WAIT_F_*
 * @seqno: in, an emitted point
 * @timeout_ns: in, relative nanoseconds (absolute with TIO_WAIT_F_ABSOLUTE);
 *		0 polls, negative waits forever
 * @status: out, the fence's error (0 when it signalled cleanly)
 * @pad: must be zero
 */
struct tio_fence_wait {
	__u32 stream;
	__u32 flags;
	__u64 seqno;
	__s64 timeout_ns;
	__s32 status;
	__u32 pad;
};

/**
 * struct tio_fence_export - TIO_IOC_FENCE_EXPORT: a sync_file for a point
 * @stream: in
 * @flags: in, TIO_EXPORT_F_CLOEXEC or zero
 * @seqno: in, an emitted point
 * @fd: out, the sync_file fd
 * @pad: must be zero
 */
struct tio_fence_export {
	__u32 stream;
	__u32 flags;
	__u64 seqno;
	__s32 fd;
	__u32 pad;
};

/**
 * struct tio_fence_import - TIO_IOC_FENCE_IMPORT: wait on a sync_file
 * @stream: in
 * @flags: in, must be zero
 * @fd: in, a sync_file fd
 * @pad: must be zero
 * @seqno: out, a new point of @stream that signals once the sync_file's
 *	   fence and every earlier point of @stream have signalled
 */
struct tio_fence_import {
	__u32 stream;
	__u32 flags;
	__s32 fd;
	__u32 pad;
	__u64 seqno;
};

/* tio_buf_attach.flags, tio_buf_wait.flags */
#define TIO_RESV_F_WRITE	0x2U	/* write usage (else read) */

/**
 * struct tio_buf_attach - TIO_IOC_BUF_ATTACH_FENCE: add a point to a
 * buffer's dma_resv, so that other drivers synchronise with it
 * @handle: in, a buffer
 * @flags: in, TIO_RESV_F_WRITE or zero (read)
 * @stream: in
 * @pad: must be zero
 * @seqno: in, an emitted point of @stream
 */
struct tio_buf_attach {
	__u32 handle;
	__u32 flags;
	__u32 stream;
	__u32 pad;
	__u64 seqno;
};

/**
 * struct tio_buf_wait - TIO_IOC_BUF_WAIT: wait for a buffer's fences
 * @handle: in
 * @flags: in, TIO_RESV_F_WRITE (wait for writers only) | TIO_WAIT_F_*
 * @timeout_ns: in, as in struct tio_fence_wait
 * @status: out, the first error among the waited fences
 * @pad: must be zero
 */
struct tio_buf_wait {
	__u32 handle;
	__u32 flags;
	__s64 timeout_ns;
	__s32 status;
	__u32 pad;
};

/* tio_submit.flags */
#define TIO_SUBMIT_F_CONTINUE	0x1U	/* go on after a failed record */

/**
 * struct tio_submit - TIO_IOC_SUBMIT: run a vector of command records
 * @cmds_ptr: in, struct tio_cmd[@count]
 * @count: in, 1..max_submit
 * @flags: in, TIO_SUBMIT_F_*
 * @done: out, records processed (each has its result written back)
 * @pad: must be zero
 */
struct tio_submit {
	__u64 cmds_ptr;
	__u32 count;
	__u32 flags;
	__u32 done;
	__u32 pad;
};

/**
 * struct tio_cmd - one command record, for TIO_IOC_SUBMIT
 * @op: TIO_IOC_<OP> of the command (TIO_IOC_SUBMIT itself is refused)
 * @flags: must be zero
 * @result: out, 0 or a negative errno
 * @pad: must be zero
 * @payload: the command's payload struct, zero-filled past its size
 */
struct tio_cmd {
	__u32 op;
	__u32 flags;
	__s32 result;
	__u32 pad;
	union {
		__u8 bytes[TIO_CMD_PAYLOAD];
		__u64 align;
	} payload;
};

/* The most records a command ring holds (a power of two). */
#define TIO_RING_MAX_ENTRIES	4096
/* The ring's mmap offset in the device file. */
#define TIO_RING_MMAP_OFFSET	0ULL

/**
 * struct tio_ring_hdr - the start of a command ring's mapping
 * @head: written by the kernel only: records consumed so far (free
 *	  running, modulo 2^32); record i lives at slot i & @mask
 * @pad0: keeps @tail off @head's cache line
 * @tail: written by userspace only: records published so far; store it
 *	  with release ordering after writing the records
 * @entries: the ring's size in records (read-only)
 * @mask: @entries - 1 (read-only)
 * @pad1: zero
 *
 * The records, struct tio_cmd[@entries], follow at TIO_RING_CMDS_OFFSET.
 * Read @head with acquire ordering: results of the records before it are
 * then visible in place.
 */
struct tio_ring_hdr {
	__u32 head;
	__u32 pad0[15];
	__u32 tail;
	__u32 entries;
	__u32 mask;
	__u32 pad1[13];
};

#define TIO_RING_CMDS_OFFSET	128

/**
 * struct tio_ring_setup - TIO_IOC_RING_SETUP: give this file a command ring
 * @entries: in, records, a power of two, 1..TIO_RING_MAX_ENTRIES
 * @flags: in, must be zero
 * @size: out, bytes to mmap (MAP_SHARED, read-write) at @mmap_offset
 * @mmap_offset: out, TIO_RING_MMAP_OFFSET
 *
 * One ring per file (-EBUSY for a second); it lives until the file is
 * released. Its pages count as pinned memory (RLIMIT_MEMLOCK, max_pinned).
 */
struct tio_ring_setup {
	__u32 entries;
	__u32 flags;
	__u64 size;
	__u64 mmap_offset;
};

/**
 * struct tio_ring_enter - TIO_IOC_RING_ENTER: run the ring's new records
 * @flags: in, TIO_SUBMIT_F_CONTINUE or zero
 * @done: out, records this call consumed (head moved by this much)
 *
 * Runs the records from head to the tail it reads, in order, each read
 * once; writes each one's result (and payload, as SUBMIT does) in place,
 * then publishes head. Return as TIO_IOC_SUBMIT: the number of failed
 * records.
 */
struct tio_ring_enter {
	__u32 flags;
	__u32 done;
};

/* tio_uring_inline.flags: the payload travels in the SQE */
#define TIO_URING_F_INLINE	0x1ULL

/**
 * struct tio_uring_inline - sqe->cmd of a uring_cmd with its payload inline
 * @result_ptr: 0, or where the command's returned payload is written (as
 *		the pointer form writes it back); needed by commands that
 *		return an fd
 * @flags: TIO_URING_F_INLINE
 * @payload: the command's payload, zero past its size (as a record's)
 *
 * Only on IORING_SETUP_SQE128 rings (80 bytes of sqe->cmd; -EINVAL on
 * others). Nothing is copied from user memory. CQE res is the result; on
 * an IORING_SETUP_CQE32 ring big_cqe[0] holds bytes 8..15 of the returned
 * payload (FENCE_EMIT's seqno, BUF_ALLOC's flags and handle, INFO's
 * features). Waits run in io-wq instead of parking.
 */
struct tio_uring_inline {
	__u64 result_ptr;
	__u64 flags;
	__u8 payload[TIO_CMD_PAYLOAD];
};

#define TIO_IOC_MAGIC	0xD4

#define TIO_IOC_INFO		_IOWR(TIO_IOC_MAGIC, 0x00, struct tio_info)
#define TIO_IOC_BUF_ALLOC	_IOWR(TIO_IOC_MAGIC, 0x01, struct tio_buf_alloc)
#define TIO_IOC_BUF_PIN_USER	_IOWR(TIO_IOC_MAGIC, 0x02, struct tio_buf_pin)
#define TIO_IOC_BUF_FREE	_IOW(TIO_IOC_MAGIC, 0x03, struct tio_handle_op)
#define TIO_IOC_BUF_INFO	_IOWR(TIO_IOC_MAGIC, 0x04, struct tio_buf_info)
#define TIO_IOC_BUF_SET_DESC	_IOW(TIO_IOC_MAGIC, 0x05, struct tio_buf_desc)
#define TIO_IOC_BUF_EXPORT	_IOWR(TIO_IOC_MAGIC, 0x06, struct tio_buf_export)
#define TIO_IOC_BUF_IMPORT	_IOWR(TIO_IOC_MAGIC, 0x07, struct tio_buf_import)
#define TIO_IOC_BUF_ATTACH_FENCE _IOW(TIO_IOC_MAGIC, 0x08, struct tio_buf_attach)
#define TIO_IOC_BUF_WAIT	_IOWR(TIO_IOC_MAGIC, 0x09, struct tio_buf_wait)
#define TIO_IOC_STREAM_CREATE	_IOWR(TIO_IOC_MAGIC, 0x10, struct tio_stream_create)
#define TIO_IOC_STREAM_DESTROY	_IOW(TIO_IOC_MAGIC, 0x11, struct tio_handle_op)
#define TIO_IOC_FENCE_EMIT	_IOWR(TIO_IOC_MAGIC, 0x12, struct tio_fence_emit)
#define TIO_IOC_FENCE_SIGNAL	_IOW(TIO_IOC_MAGIC, 0x13, struct tio_fence_signal)
#define TIO_IOC_FENCE_WAIT	_IOWR(TIO_IOC_MAGIC, 0x14, struct tio_fence_wait)
#define TIO_IOC_FENCE_EXPORT	_IOWR(TIO_IOC_MAGIC, 0x15, struct tio_fence_export)
#define TIO_IOC_FENCE_IMPORT	_IOWR(TIO_IOC_MAGIC, 0x16, struct tio_fence_import)
#define TIO_IOC_SUBMIT		_IOWR(TIO_IOC_MAGIC, 0x20, struct tio_submit)
#define TIO_IOC_RING_SETUP	_IOWR(TIO_IOC_MAGIC, 0x21, struct tio_ring_setup)
#define TIO_IOC_RING_ENTER	_IOWR(TIO_IOC_MAGIC, 0x22, struct tio_ring_enter)

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_LINUX_TENSORIO_H */
