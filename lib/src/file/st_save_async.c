// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Asynchronous saves (tio_safetensors_save_async()): the save planned and
 * checked in the caller's thread, the files' bytes captured, then written
 * by a thread of the save's own, which signals a stream point when every
 * file is durable and in place.
 *
 * The capture: each file's bytes go into one aligned image from the
 * pinned cache. Host tensors are copied by the caller's thread while the
 * save's thread already writes what is copied (the image's watermark);
 * device tensors by device-to-host copies enqueued on the caller's GPU
 * stream (or a stream of the save's, waited for before returning), a
 * point recorded after each piece so that the writes follow the copies.
 * Fresh image memory is populated by the copy itself and pinned when the
 * save is done, before it goes back to the cache; an image that a GPU
 * copies into is pinned and registered first.
 *
 * Locking: tio_save.lock guards @capturing and @finished; the save's
 * thread sets @err before @finished and it is read after; it gives the
 * images back only once @capturing is 0. The job's own locking is
 * save_internal.h's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <tensorio/error.h>
#include <tensorio/pinned.h>

#include "file/save_internal.h"

#define SA_PIECE (4ULL << 20)		/* host bytes copied between watermarks */
#define SA_GPU_PIECE (64ULL << 20)	/* device bytes copied between points */

struct tio_save {
	struct sv_job j;
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int capturing;		/* the caller still copies into the images */
	int finished;
	tio_object_t *err;
	int err_errno;
	tio_stream_t *stream;
	uint64_t seqno;
	tio_gpu_stream_t *own_gs;	/* the capture's stream when none was given */
};

/* Memory for @f's image: pinned (now, for a GPU to copy into), else plain. */
static int sa_image(struct sv_job *j, struct sv_file *f, int gpu)
{
	size_t a = f->tmp.direct ? f->tmp.align : 4096;
	size_t size = f->size ? (f->size + a - 1) / a * a : a;

	if (!tio_pinned_get(size, &f->img) && (!gpu || !tio_pinned_finish(&f->img))) {
		f->image = f->img.addr;
		if (gpu && tio_gpu_buffer_register(j->gpu.device_type, f->img.buf) &&
		    tio_errno() != EEXIST)
			return -1;
	} else {
		if (tio_errno() != ENOMEM && tio_errno() != E2BIG)
			return -1;
		f->image = mmap(NULL, size, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (f->image == MAP_FAILED) {
			f->image = NULL;
			return tio_raise_errno(ENOMEM, "saving %s: capturing %zu bytes",
					       f->path, size);
		}
		f->img_plain = size;
	}
	tio_error_clear();
	/* What the last write rounds up to, cut off after: no stale bytes. */
	memset(f->image + f->size, 0, size - f->size);
	return 0;
}

/* GPU tensors: every piece's copies enqueued, then a point (before the writer starts). */
static int sa_capture_gpu(struct tio_save *h, tio_gpu_stream_t *gs)
{
	struct sv_job *j = &h->j;
	uint64_t off, len;
	int i, n = 0, gpu;

	for (i = 0; i < j->nf; i++)
		n += (int)((j->f[i].size + SA_GPU_PIECE - 1) / SA_GPU_PIECE);
	j->marks = calloc((size_t)n + 1, sizeof(*j->marks));
	if (!j->marks || (!j->cap && tio_stream_create(&j->cap)))
		return j->marks ? -1 : tio_raise_errno(ENOMEM, "saving: capture points");
	for (i = 0; i < j->nf; i++) {
		struct sv_file *f = &j->f[i];

		for (off = 0; off < f->size; off += len) {
			struct sv_mark *m = &j->marks[j->nmarks];

			len = f->size - off < SA_GPU_PIECE ? f->size - off : SA_GPU_PIECE;
			gpu = 0;
			if (sv_gather(j, f, off, len, f->image + off, gs, &gpu) ||
			    tio_gpu_stream_record_fence(gs, j->cap, &m->seqno))
				return -1;
			m->file = i;
			m->upto = off + len;
			j->nmarks++;
		}
	}
	return 0;
}

/* Host tensors: copied in pieces, each handed to the writer at once. */
static int sa_capture_host(struct tio_save *h)
{
	struct sv_job *j = &h->j;
	uint64_t off, len;
	int i, gpu = 0;

	for (i = 0; i < j->nf && !sv_stopped(j); i++) {
		struct sv_file *f = &j->f[i];

		for (off = 0; off < f->size && !sv_stopped(j); off += len) {
			len = f->size - off < SA_PIECE ? f->size - off : SA_PIECE;
			if (sv_gather(j, f, off, len, f->image + off, NULL, &gpu))
				return -1;
			sv_set_staged(j, f, off + len);
		}
	}
	return 0;
}

static void *sa_main(void *arg)
{
	struct tio_save *h = arg;
	int ret = sv_run(&h->j);

	if (!ret)
		ret = sv_publish(&h->j);
	if (ret) {
		h->err = tio_error_move_from_raised();
		h->err_errno = tio_errno() ? tio_errno() : EIO;
	}
	pthread_mutex_lock(&h->lock);
	while (h->capturing)	/* a failed write stops the copies: wait for them */
		pthread_cond_wait(&h->cond, &h->lock);
	pthread_mutex_unlock(&h->lock);
	sv_images_back(&h->j);
	/* The point is for other waiters; the result is @err. */
	if (tio_fence_signal(h->stream, h->seqno, ret ? -h->err_errno : 0))
		tio_error_clear();
	pthread_mutex_lock(&h->lock);
	h->finished = 1;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	sv_let_go(&h->j);	/* freeing the replaced files: after it is done */
	return NULL;
}

static int sa_start(struct tio_save *h)
{
	sigset_t all, old;
	int r;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&h->thread, NULL, sa_main, h);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r)
		return tio_raise_errno(r, "saving: starting its thread");
	h->started = 1;
	return 0;
}

/* Capture (unless TIO_SAVE_NO_COPY) and start the writing thread. */
static int sa_begin(struct tio_save *h, const struct tio_save_opts *o)
{
	struct sv_job *j = &h->j;
	tio_gpu_stream_t *gs = o->gpu_stream;
	int i, ret, gpu = j->gpu.device_type != 0;

	if (tio_stream_create(&h->stream) || tio_fence_emit(h->stream, &h->seqno))
		return -1;
	if (o->flags & TIO_SAVE_NO_COPY)
		return sv_producer_mark(j) ? -1 : sa_start(h);
	for (i = 0; i < j->nf; i++)
		if (sa_image(j, &j->f[i], gpu))
			return -1;
	if (gpu) {
		if (!gs && tio_gpu_stream_create(j->gpu, &h->own_gs))
			return -1;
		if (sa_capture_gpu(h, gs ? gs : h->own_gs))
			return -1;
	}
	h->capturing = 1;
	if (sa_start(h))
		return -1;
	/* Without the caller's stream, nothing orders its later work after the copies. */
	ret = (!gpu && sa_capture_host(h)) || (h->own_gs && tio_gpu_stream_sync(h->own_gs));
	if (ret)
		sv_fail(j);
	pthread_mutex_lock(&h->lock);
	h->capturing = 0;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	return ret ? -1 : 0;
}

int tio_safetensors_save_async(const char *path, const char *const *names,
			       const DLTensor *const *tensors, int64_t n,
			       struct tio_save_opts *opts, tio_save_t **out)
{
	struct tio_save_opts o;
	struct tio_save *h;
	pthread_condattr_t ca;
	struct sv_xfsz x;
	int ret;

	if (!out)
		return tio_raise_errno(EINVAL, "tio_safetensors_save_async: NULL out");
	if (sv_opts(opts, &o))
		return -1;
	h = calloc(1, sizeof(*h));
	if (!h)
		return tio_raise_errno(ENOMEM, "saving %s", path ? path : "(NULL)");
	sv_job_init(&h->j);
	pthread_mutex_init(&h->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->cond, &ca);
	pthread_condattr_destroy(&ca);
	sv_xfsz_hold(&x);
	ret = sv_plan(&h->j, path, names, tensors, n, &o);
	if (!ret)
		ret = sa_begin(h, &o);
	sv_xfsz_restore(&x);
	if (opts)
		opts->shards = h->j.nf;
	if (ret && h->started) {
		/* Stop the writer; the first error (ours, or its) is the call's. */
		sv_fail(&h->j);
		pthread_join(h->thread, NULL);
		h->started = 0;
		sv_result(&h->j);
	}
	if (ret) {
		tio_save_free(h);	/* the error stays raised */
		return -1;
	}
	*out = h;
	tio_set_errno(0);
	return 0;
}

int tio_save_point(tio_save_t *save, tio_stream_t **stream, uint64_t *seqno)
{
	if (!save || !stream || !seqno)
		return tio_raise_errno(EINVAL, "tio_save_point: NULL argument");
	*stream = save->stream;
	*seqno = save->seqno;
	return 0;
}

int tio_save_wait(tio_save_t *save, int64_t timeout_ns)
{
	struct timespec ts;
	int done;

	if (!save)
		return tio_raise_errno(EINVAL, "tio_save_wait: NULL save");
	/* Its point signalled: the save's thread is about to say it is done. */
	if (!timeout_ns && !tio_fence_wait(save->stream, save->seqno, 0, NULL))
		timeout_ns = -1;
	tio_error_clear();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (timeout_ns > 0) {
		ts.tv_sec += timeout_ns / 1000000000;
		ts.tv_nsec += timeout_ns % 1000000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
	}
	pthread_mutex_lock(&save->lock);
	while (!save->finished && timeout_ns) {
		if (timeout_ns < 0)
			pthread_cond_wait(&save->cond, &save->lock);
		else if (pthread_cond_timedwait(&save->cond, &save->lock, &ts) == ETIMEDOUT)
			break;
	}
	done = save->finished;
	pthread_mutex_unlock(&save->lock);
	if (!done)
		return tio_raise_errno(ETIME, "saving %s: not done yet",
				       save->j.index ? save->j.index : save->j.f[0].path);
	if (save->err) {
		tio_error_set_raised(save->err);
		tio_set_errno(save->err_errno);
		return -1;
	}
	tio_set_errno(0);
	return 0;
}

void tio_save_cancel(tio_save_t *save)
{
	if (save)
		sv_cancel(&save->j);
}

void tio_save_free(tio_save_t *save)
{
	if (!save)
		return;
	if (save->started)
		pthread_join(save->thread, NULL);
	sv_job_fini(&save->j);
	tio_gpu_stream_destroy(save->own_gs);
	tio_stream_decref(save->stream);
	if (save->err)
		tio_object_decref(save->err);
	pthread_cond_destroy(&save->cond);
	pthread_mutex_destroy(&save->lock);
	free(save);
}
