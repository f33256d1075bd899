// SPDX-License-Identifier: GPL-2.0
/*
 * What a program created, learnt from the payloads the driver wrote back:
 * handles (so that later instructions mostly name live objects), seqnos,
 * fence bounds, and every fd, so that the fd oracle knows which ones the
 * program was told about.
 */
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "kfuzz.h"

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The fd of file @fi, or -1 when the program closed it. */
int file_fd(struct worker *k, int fi)
{
	return k->w->f[fi % MAXF].fd;
}

void track_fd(struct world *w, int fd, int kind, uint64_t deadline)
{
	int victim = -1;

	pthread_mutex_lock(&w->lock);
	if (fd > w->fd_high)
		w->fd_high = fd;
	if (w->nfds < NFDS) {
		w->fds[w->nfds++] = (struct tfd){ fd, kind, deadline };
	} else {
		victim = w->fds[0].fd;
		w->fds[0] = (struct tfd){ fd, kind, deadline };
	}
	pthread_mutex_unlock(&w->lock);
	if (victim >= 0)
		close(victim);
}

/* Close a tracked fd: forgotten first, so its number is never closed twice. */
void close_tracked(struct world *w, int fd)
{
	int i, found = 0;

	pthread_mutex_lock(&w->lock);
	for (i = 0; i < w->nfds; i++) {
		if (w->fds[i].fd != fd)
			continue;
		w->fds[i] = w->fds[--w->nfds];
		found = 1;
		break;
	}
	pthread_mutex_unlock(&w->lock);
	if (found)
		close(fd);
}

static void pool_add(struct pool *p, int stream, uint32_t h, uint32_t bound)
{
	if (stream) {
		if (p->nstreams < NSTREAMS) {
			p->seq[p->nstreams] = 0;
			p->bound_ms[p->nstreams] = bound;
			p->streams[p->nstreams++] = h;
		}
	} else if (p->nbufs < NBUFS) {
		p->bufs[p->nbufs++] = h;
	}
}

static void pool_del(struct pool *p, int stream, uint32_t h)
{
	uint32_t *a = stream ? p->streams : p->bufs;
	int *n = stream ? &p->nstreams : &p->nbufs;
	int i;

	for (i = 0; i < *n; i++) {
		if (a[i] != h)
			continue;
		a[i] = a[--*n];
		if (stream) {
			p->seq[i] = p->seq[*n];
			p->bound_ms[i] = p->bound_ms[*n];
		}
		p->stale[p->nstale++ % NSTALE] = h;
		break;
	}
}

static int stream_slot(struct pool *p, uint32_t h)
{
	int i;

	for (i = 0; i < p->nstreams; i++)
		if (p->streams[i] == h)
			return i;
	return -1;
}

/* When a point of @stream made visible now must have signalled. */
static uint64_t deadline_of(struct world *w, struct pool *p, uint32_t stream)
{
	int i = stream_slot(p, stream);
	uint32_t ms = i >= 0 && p->bound_ms[i] ? p->bound_ms[i] : w->module_bound_ms;

	return now_ns() + ms * 1000000ULL;
}

/* Does a payload of @len bytes hold the field that ends at @end? */
#define HAS(len, type, field) \
	((len) >= offsetof(type, field) + sizeof(((type *)0)->field))

/*
 * A command succeeded and the driver wrote @len bytes of its payload back
 * at @p: remember what it created or destroyed. A created fd is tracked
 * only when its number is within those bytes (else userspace was never
 * told it, and the fd oracle reports it if it exists).
 */
void harvest(struct worker *k, int fi, unsigned int cmd, const void *p,
	     unsigned int len)
{
	struct world *w = k->w;
	struct pool *pl = &w->f[fi].pool;
	uint32_t h = *(const uint32_t *)p;	/* the input handle or stream */
	int i;

	pthread_mutex_lock(&w->lock);
	switch (canon_cmd(cmd)) {
	case TIO_IOC_BUF_ALLOC:
		if (HAS(len, struct tio_buf_alloc, handle))
			pool_add(pl, 0, ((const struct tio_buf_alloc *)p)->handle, 0);
		break;
	case TIO_IOC_BUF_PIN_USER:
		if (HAS(len, struct tio_buf_pin, handle))
			pool_add(pl, 0, ((const struct tio_buf_pin *)p)->handle, 0);
		break;
	case TIO_IOC_BUF_IMPORT:
		if (HAS(len, struct tio_buf_import, handle))
			pool_add(pl, 0, ((const struct tio_buf_import *)p)->handle, 0);
		break;
	case TIO_IOC_STREAM_CREATE: {
		const struct tio_stream_create *c = p;

		if (HAS(len, struct tio_stream_create, handle))
			pool_add(pl, 1, c->handle,
				 HAS(len, struct tio_stream_create, fence_timeout_ms) ?
				 c->fence_timeout_ms : 0);
		break;
	}
	case TIO_IOC_BUF_FREE:
		pool_del(pl, 0, h);
		break;
	case TIO_IOC_STREAM_DESTROY:
		pool_del(pl, 1, h);
		break;
	case TIO_IOC_FENCE_EMIT:
		i = stream_slot(pl, h);
		if (i >= 0 && HAS(len, struct tio_fence_emit, seqno))
			pl->seq[i] = ((const struct tio_fence_emit *)p)->seqno;
		break;
	case TIO_IOC_FENCE_IMPORT:
		i = stream_slot(pl, h);
		if (i >= 0 && HAS(len, struct tio_fence_import, seqno))
			pl->seq[i] = ((const struct tio_fence_import *)p)->seqno;
		break;
	case TIO_IOC_BUF_ATTACH_FENCE: {
		uint64_t d;

		/*
		 * Nothing is written back and only 4 bytes of @p are known to
		 * be ours (an inline payload's result_ptr may run into the
		 * guard page): the stream, if it can be read, else the
		 * latest deadline any of the file's streams gives.
		 */
		if (scratch_ptr(k, (uintptr_t)p, sizeof(struct tio_buf_attach))) {
			d = deadline_of(w, pl, ((const struct tio_buf_attach *)p)->stream);
		} else {
			d = deadline_of(w, pl, 0);
			for (i = 0; i < pl->nstreams; i++) {
				uint64_t e = deadline_of(w, pl, pl->streams[i]);

				d = e > d ? e : d;
			}
		}
		if (d > w->resv_deadline)
			w->resv_deadline = d;
		break;
	}
	}
	pthread_mutex_unlock(&w->lock);
	/* fds: tracked outside the lock (track_fd() takes it). */
	switch (canon_cmd(cmd)) {
	case TIO_IOC_BUF_EXPORT:
		if (HAS(len, struct tio_buf_export, fd))
			track_fd(w, ((const struct tio_buf_export *)p)->fd, TFD_DMABUF, 0);
		break;
	case TIO_IOC_FENCE_EXPORT:
		if (HAS(len, struct tio_fence_export, fd)) {
			uint64_t d;

			pthread_mutex_lock(&w->lock);
			d = deadline_of(w, pl, h);
			pthread_mutex_unlock(&w->lock);
			track_fd(w, ((const struct tio_fence_export *)p)->fd, TFD_SYNC_FILE, d);
		}
		break;
	}
}
