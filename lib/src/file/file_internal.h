/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal interface of the loader (loader.c): the read engine that file
 * reads and safetensors loads share.
 */
#ifndef TIO_FILE_INTERNAL_H
#define TIO_FILE_INTERNAL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <tensorio/io.h>

#include "dev/pin_internal.h"

/**
 * struct tio_load_item - one file range into memory
 * @path: the file, for messages
 * @fd: the file opened buffered
 * @dfd: the file opened O_DIRECT, or -1
 * @file_off: where the range starts in the file
 * @len: its bytes
 * @mem: where they go
 * @slack: bytes writable after @mem + @len (an O_DIRECT read may round the
 *	tail up to a whole block and come back short at the end of the file)
 * @lazy: @mem is not populated yet
 */
struct tio_load_item {
	const char *path;
	int fd, dfd;
	uint64_t file_off, len;
	char *mem;
	uint64_t slack;
	int lazy;
};

/*
 * Open @path for loading (@it->fd, and @it->dfd unless @flags has
 * TIO_IO_NO_DIRECT, the file system refuses O_DIRECT, or the range is
 * mostly in the page cache already, where copying beats the disk).
 */
int tio_load_open(const char *path, uint64_t off, uint64_t len, unsigned int flags,
		  struct tio_load_item *it);
void tio_load_close(struct tio_load_item *it);

/*
 * Read @n items with the engine: io_uring, chunks and queue depth sized
 * from the size and the device (or @o's), registered windows, population
 * of lazy memory overlapped with the reads, several readers for large
 * loads. Progress and cancellation through @o.
 */
int tio_load_run(struct tio_load_item *items, int n, struct tio_io_opts *o);

/* The largest request and the queue length of @fd's device (0: unknown). */
void tio_io_device_limits(int fd, uint64_t *max_req, uint64_t *nr_req);

/*
 * ftruncate() through interruptions: io_uring's task work makes
 * signal_pending() true without a signal, and some file systems give up
 * on it with EINTR.
 */
static inline int tio_file_ftruncate(int fd, off_t len)
{
	int r;

	do
		r = ftruncate(fd, len);
	while (r && errno == EINTR);
	return r;
}

#endif /* TIO_FILE_INTERNAL_H */
