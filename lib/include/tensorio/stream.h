/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Streams: fence timelines. Points are emitted with increasing seqnos and
 * signalled in order, optionally with an error every signalled point
 * carries. The last signalled seqno is a 64-bit word in a read-only page
 * that CPU (and GPU) waiters poll without a system call. A stream may
 * also have a doorbell, a word the caller or a device writes to complete
 * points without a system call (tio_stream_create_flags()).
 *
 * A tio_stream_t is an FFI object (type "tio.Stream"), reference counted
 * like a buffer; the last reference destroys the timeline, cancelling the
 * points not yet signalled (-ECANCELED).
 *
 * Layer: dev (lib/src/dev/)
 */
#ifndef TENSORIO_STREAM_H
#define TENSORIO_STREAM_H

#include <stdint.h>

#include <tensorio/buffer.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * tio_stream_create() - a new timeline
 * @out: the stream (one reference, the caller's)
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_stream_create(tio_stream_t **out);

/* tio_stream_create_flags(): the stream has a doorbell (tio_stream_doorbell()). */
#define TIO_STREAM_DOORBELL	0x1u

/**
 * tio_stream_create_flags() - a new timeline, with options
 * @flags: 0, or TIO_STREAM_DOORBELL: the stream gets a doorbell, a 64-bit
 *	   word that the caller or a device (a GPU's stream memory write:
 *	   tio_gpu_stream_signal_fence() uses it) sets to the last point that
 *	   completed; the points up to it then signal, cleanly, without a
 *	   system call from whoever completed them. Waiters of such a stream
 *	   look at the doorbell themselves (the user backend: a short spin,
 *	   then naps growing to 1 ms; the kernel backend: the driver reads it
 *	   while a point has a waiter)
 * @out: the stream (one reference, the caller's)
 *
 * Return: 0, or -1 with an error raised (EINVAL for an unknown flag,
 * EOPNOTSUPP for a doorbell from a driver older than uapi 1.4).
 */
TIO_API int tio_stream_create_flags(uint32_t flags, tio_stream_t **out);

/**
 * tio_stream_doorbell() - the doorbell word of a stream that has one
 * @s: a stream created with TIO_STREAM_DOORBELL
 *
 * The word is read-write, mapped on first use for the life of @s. Store
 * the last completed point into it (a release store, in increasing
 * order; a device writes it the same way once its work before the point
 * is done); it never signals a point not emitted yet, and a value lower
 * than one already there changes nothing.
 *
 * Return: its address (valid while @s lives), or NULL with an error
 * raised (EINVAL when @s has no doorbell).
 */
TIO_API volatile uint64_t *tio_stream_doorbell(tio_stream_t *s);

/**
 * tio_stream_decref() - drop a reference (NULL is ignored)
 * @s: the stream
 */
TIO_API void tio_stream_decref(tio_stream_t *s);

/**
 * tio_stream_handle() - the backend's handle of the stream
 * @s: the stream
 *
 * Return: the handle (the driver's, or the user backend's own).
 */
TIO_API uint32_t tio_stream_handle(const tio_stream_t *s);

/**
 * tio_fence_emit() - add the next point
 * @s: the stream
 * @seqno: the new point's seqno
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_fence_emit(tio_stream_t *s, uint64_t *seqno);

/**
 * tio_fence_signal() - signal every point up to @seqno
 * @s: the stream
 * @seqno: an emitted seqno
 * @error: 0 or a negative errno the newly signalled points carry
 *
 * Return: 0, or -1 with an error raised (EINVAL for a seqno never emitted
 * or a positive @error).
 */
TIO_API int tio_fence_signal(tio_stream_t *s, uint64_t seqno, int error);

/**
 * tio_fence_wait() - wait for a point
 * @s: the stream
 * @seqno: an emitted seqno
 * @timeout_ns: relative nanoseconds; 0 polls; negative waits forever
 * @status: the point's error (0 when it signalled cleanly), or NULL
 *
 * Return: 0 once signalled, or -1 with an error raised (ETIME when the
 * timeout passed, EINVAL for a seqno never emitted).
 */
TIO_API int tio_fence_wait(tio_stream_t *s, uint64_t seqno, int64_t timeout_ns,
			    int *status);

/**
 * tio_stream_seqno_word() - the read-only word holding the last signalled
 * seqno, mapped on first use
 * @s: the stream
 *
 * Return: its address (valid while @s lives), or NULL with an error raised.
 */
TIO_API const volatile uint64_t *tio_stream_seqno_word(tio_stream_t *s);

/**
 * tio_stream_signalled() - the last signalled seqno, read from the word
 * @s: the stream
 *
 * On a stream whose doorbell is mapped, the doorbell's value when it is
 * ahead of the word: the points it covers have completed, and signal at
 * the next wait or look of the backend.
 *
 * Return: the seqno (0 when the word cannot be mapped; an error is raised then).
 */
TIO_API uint64_t tio_stream_signalled(tio_stream_t *s);

/**
 * tio_fence_export() - a sync_file fd for a point
 * @s: the stream
 * @seqno: an emitted point
 * @flags: TIO_EXPORT_F_CLOEXEC or 0
 * @fd: the new fd
 *
 * Return: 0, or -1 with an error raised (EOPNOTSUPP on the user backend).
 */
TIO_API int tio_fence_export(tio_stream_t *s, uint64_t seqno,
					unsigned int flags, int *fd);

/**
 * tio_fence_import() - add a point that waits for a sync_file
 * @s: the stream
 * @fd: the sync_file (not consumed)
 * @seqno: the new point
 *
 * Return: 0, or -1 with an error raised (EOPNOTSUPP on the user backend).
 */
TIO_API int tio_fence_import(tio_stream_t *s, int fd, uint64_t *seqno);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_STREAM_H */
