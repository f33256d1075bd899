/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Streams: fence timelines. Points are emitted with increasing seqnos and
 * signalled in order, optionally with an error every signalled point
 * carries. The last signalled seqno is a 64-bit word in a read-only page
 * that CPU (and GPU) waiters poll without a system call.
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
