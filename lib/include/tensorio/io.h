/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Tensor file I/O through io_uring: a file range into a buffer, a buffer
 * range into a file. The buffer is registered with the ring (READ_FIXED /
 * WRITE_FIXED; plain READ/WRITE when registration fails), the file is
 * opened O_DIRECT when offsets, length and memory are block aligned and the
 * file system accepts it, the range goes in chunks with a bounded number
 * in flight, and short transfers are resubmitted for the rest.
 *
 * Layer: file (lib/src/file/)
 */
#ifndef TENSORIO_IO_H
#define TENSORIO_IO_H

#include <stdint.h>

#include <tensorio/buffer.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

/* tio_io_opts.flags */
#define TIO_IO_NO_DIRECT 0x1u	/* never O_DIRECT */
#define TIO_IO_NO_FIXED 0x2u	/* do not register the buffer */
#define TIO_IO_TRUNCATE 0x4u	/* writes: truncate the file to the end written */

/*
 * Progress: called after every completed chunk with the bytes done so
 * far; a non-zero return cancels the transfer (-ECANCELED).
 */
typedef int (*tio_io_progress_t)(void *arg, uint64_t done, uint64_t total);

/**
 * struct tio_io_opts - file I/O options (NULL or zeroed fields: defaults)
 * @flags: TIO_IO_*
 * @queue_depth: chunks in flight, 1..256 (default 8)
 * @chunk_size: bytes per request (default 1 MiB; rounded to 4 KiB)
 * @progress: called after each chunk, or NULL
 * @progress_arg: its argument
 * @used_direct: out: whether O_DIRECT was used
 * @used_fixed: out: whether the buffer was registered
 */
struct tio_io_opts {
	uint32_t flags;
	uint32_t queue_depth;
	uint64_t chunk_size;
	tio_io_progress_t progress;
	void *progress_arg;
	int used_direct;
	int used_fixed;
};

/**
 * tio_file_read() - read a file range into a buffer
 * @path: the file
 * @file_off: where to start in the file
 * @len: bytes to read
 * @buf: the buffer
 * @buf_off: where they go in @buf
 * @opts: options, or NULL
 *
 * Return: 0, or -1 with an error raised (ENODATA when the file ends before
 * @len bytes, ERANGE when the range exceeds the buffer, ECANCELED by the
 * progress callback, or the I/O error).
 */
TIO_API int tio_file_read(const char *path, uint64_t file_off, uint64_t len,
			  tio_buffer_t *buf, uint64_t buf_off, struct tio_io_opts *opts);

/**
 * tio_file_write() - write a buffer range to a file (created if missing)
 * @path: the file
 * @file_off: where to start in the file
 * @len: bytes to write
 * @buf: the buffer
 * @buf_off: where they start in @buf
 * @opts: options, or NULL
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_file_write(const char *path, uint64_t file_off, uint64_t len,
			   tio_buffer_t *buf, uint64_t buf_off, struct tio_io_opts *opts);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_IO_H */
