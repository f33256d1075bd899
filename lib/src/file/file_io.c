// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tensor file I/O through io_uring (tensorio/io.h): writes here, one ring
 * per transfer; reads through the loader (loader.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tensorio/io.h>

#include "file/file_internal.h"

#define IO_ALIGN 4096u
#define IO_MAX_QD 256u

struct io_req {
	uint64_t off;		/* into the range */
	uint64_t len;		/* left to do */
	int direct;
};

struct io_xfer {
	struct io_uring ring;
	int write;
	int fd, dfd;		/* buffered and O_DIRECT fds (dfd may be -1) */
	int fixed;
	char *mem;		/* buffer memory at the range start */
	uint64_t file_off, len, done, next;
	uint64_t chunk;
	unsigned int inflight;
	struct io_req reqs[IO_MAX_QD];
	unsigned int free_idx[IO_MAX_QD], nfree;
};

static void io_prep(struct io_xfer *x, unsigned int r)
{
	struct io_req *q = &x->reqs[r];
	struct io_uring_sqe *sqe = io_uring_get_sqe(&x->ring);
	int fd = q->direct ? x->dfd : x->fd;
	char *p = x->mem + q->off;
	uint64_t fo = x->file_off + q->off;
	unsigned int n = (unsigned int)q->len;

	if (x->fixed) {
		if (x->write)
			io_uring_prep_write_fixed(sqe, fd, p, n, fo, 0);
		else
			io_uring_prep_read_fixed(sqe, fd, p, n, fo, 0);
	} else if (x->write) {
		io_uring_prep_write(sqe, fd, p, n, fo);
	} else {
		io_uring_prep_read(sqe, fd, p, n, fo);
	}
	io_uring_sqe_set_data64(sqe, r);
	x->inflight++;
}

/* Queue new chunks while there is room. */
static void io_fill(struct io_xfer *x)
{
	while (x->nfree && x->next < x->len) {
		unsigned int r = x->free_idx[--x->nfree];
		struct io_req *q = &x->reqs[r];

		q->off = x->next;
		q->len = x->len - x->next < x->chunk ? x->len - x->next : x->chunk;
		/* O_DIRECT needs whole blocks: the unaligned tail goes buffered. */
		q->direct = x->dfd >= 0 && !(q->len % IO_ALIGN);
		x->next += q->len;
		io_prep(x, r);
	}
}

static int io_run(struct io_xfer *x, struct tio_io_opts *o, const char *path)
{
	struct io_uring_cqe *cqe;
	int err = 0, ret;

	io_fill(x);
	while (x->inflight) {
		ret = io_uring_submit_and_wait(&x->ring, 1);
		if (ret < 0 && ret != -EINTR) {
			err = ret;
			break;
		}
		while (!io_uring_peek_cqe(&x->ring, &cqe)) {
			unsigned int r = (unsigned int)io_uring_cqe_get_data64(cqe);
			struct io_req *q = &x->reqs[r];
			int res = cqe->res;

			io_uring_cqe_seen(&x->ring, cqe);
			x->inflight--;
			if (res == -EAGAIN || res == -EINTR) {
				io_prep(x, r);
				continue;
			}
			if (res < 0 || (res == 0 && !err)) {
				if (!err)
					err = res < 0 ? res : (x->write ? -EIO : -ENODATA);
				x->free_idx[x->nfree++] = r;
				continue;
			}
			x->done += (uint64_t)res;
			if ((uint64_t)res < q->len) {
				/* Short transfer: the rest, buffered if unaligned now. */
				q->off += (uint64_t)res;
				q->len -= (uint64_t)res;
				if (q->direct && (q->off % IO_ALIGN || q->len % IO_ALIGN))
					q->direct = 0;
				if (!err)
					io_prep(x, r);
				else
					x->free_idx[x->nfree++] = r;
				continue;
			}
			x->free_idx[x->nfree++] = r;
			if (!err && o && o->progress &&
			    o->progress(o->progress_arg, x->done, x->len))
				err = -ECANCELED;
		}
		if (!err)
			io_fill(x);
	}
	if (!err)
		return 0;
	if (err == -ENODATA)
		return tio_raise_errno(ENODATA, "reading %s: the file ends before offset %llu",
				       path, (unsigned long long)(x->file_off + x->len));
	return tio_raise_errno(err, "%s %s", x->write ? "writing" : "reading", path);
}

static int io_xfer(int write, const char *path, uint64_t file_off, uint64_t len,
		   tio_buffer_t *buf, uint64_t buf_off, struct tio_io_opts *o)
{
	unsigned int qd = o && o->queue_depth ? o->queue_depth : 8;
	uint64_t chunk = o && o->chunk_size ? o->chunk_size : (1u << 20);
	unsigned int flags = o ? o->flags : 0;
	int oflags = write ? O_WRONLY | O_CREAT | O_CLOEXEC : O_RDONLY | O_CLOEXEC;
	struct io_xfer *x;
	struct iovec iov;
	unsigned int i;
	char *mem;
	int ret;

	if (!path || !buf)
		return tio_raise_errno(EINVAL, "file I/O: NULL path or buffer");
	if (qd > IO_MAX_QD)
		return tio_raise_errno(EINVAL, "file I/O: queue depth %u above %u", qd, IO_MAX_QD);
	if (buf_off > (uint64_t)buf->size || len > (uint64_t)buf->size - buf_off)
		return tio_raise_errno(ERANGE, "file I/O: %llu bytes at %llu exceed the buffer (%lld)",
				       (unsigned long long)len, (unsigned long long)buf_off,
				       (long long)buf->size);
	chunk = (chunk + IO_ALIGN - 1) & ~(uint64_t)(IO_ALIGN - 1);
	if (chunk > (1u << 30))
		chunk = 1u << 30;
	mem = tio_buffer_data(buf);
	if (!mem)
		return -1;
	x = calloc(1, sizeof(*x));
	if (!x)
		return tio_raise_errno(ENOMEM, "file I/O");
	x->write = write;
	x->dfd = -1;
	x->mem = mem + buf_off;
	x->file_off = file_off;
	x->len = len;
	x->chunk = chunk;
	for (i = 0; i < qd; i++)
		x->free_idx[x->nfree++] = i;
	x->fd = open(path, oflags, 0644);
	if (x->fd < 0) {
		ret = tio_raise_file_errno(errno, "opening %s", path);
		goto out_free;
	}
	if (!(flags & TIO_IO_NO_DIRECT) && !(file_off % IO_ALIGN) &&
	    !((uintptr_t)x->mem % IO_ALIGN) && len >= IO_ALIGN)
		x->dfd = open(path, (oflags & ~O_CREAT) | O_DIRECT);	/* tmpfs: EINVAL */
	ret = io_uring_queue_init(qd * 2, &x->ring, 0);
	if (ret) {
		ret = tio_raise_errno(ret, "file I/O: setting up io_uring");
		goto out_close;
	}
	if (!(flags & TIO_IO_NO_FIXED) && len) {
		iov.iov_base = x->mem;
		iov.iov_len = len;
		x->fixed = !io_uring_register_buffers(&x->ring, &iov, 1);
	}
	if (o) {
		o->used_direct = x->dfd >= 0;
		o->used_fixed = x->fixed;
	}
	ret = len ? io_run(x, o, path) : 0;
	if (!ret && write && (flags & TIO_IO_TRUNCATE) &&
	    tio_file_ftruncate(x->fd, (off_t)(file_off + len)) < 0)
		ret = tio_raise_file_errno(errno, "truncating %s", path);
	if (!ret)
		tio_set_errno(0);
	io_uring_queue_exit(&x->ring);
out_close:
	if (x->dfd >= 0)
		close(x->dfd);
	close(x->fd);
out_free:
	free(x);
	return ret;
}

/* Reads go through the loader (loader.c). */
int tio_file_read(const char *path, uint64_t file_off, uint64_t len,
		  tio_buffer_t *buf, uint64_t buf_off, struct tio_io_opts *opts)
{
	struct tio_load_item it;
	char *mem;
	int ret;

	if (!path || !buf)
		return tio_raise_errno(EINVAL, "file I/O: NULL path or buffer");
	if (buf_off > (uint64_t)buf->size || len > (uint64_t)buf->size - buf_off)
		return tio_raise_errno(ERANGE, "file I/O: %llu bytes at %llu exceed the buffer (%lld)",
				       (unsigned long long)len, (unsigned long long)buf_off,
				       (long long)buf->size);
	mem = tio_buffer_data(buf);
	if (!mem)
		return -1;
	if (tio_load_open(path, file_off, len, opts ? opts->flags : 0, &it))
		return -1;
	it.mem = mem + buf_off;
	it.slack = (uint64_t)buf->size - buf_off - len;
	ret = tio_load_run(&it, 1, opts);
	tio_load_close(&it);
	if (!ret)
		tio_set_errno(0);
	return ret;
}

int tio_file_write(const char *path, uint64_t file_off, uint64_t len,
		   tio_buffer_t *buf, uint64_t buf_off, struct tio_io_opts *opts)
{
	return io_xfer(1, path, file_off, len, buf, buf_off, opts);
}
