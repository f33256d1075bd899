// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The save engine: the files of a job written into their temporaries at
 * the disk's limit, the mirror of the loader.
 *
 * - A writer has an io_uring and a ring of slots. In ring mode a slot is
 *   a chunk of aligned staging memory (pinned, from the pinned cache),
 *   filled with the file's next chunk (a memcpy of host tensors, device-
 *   to-host copies on the slot's GPU stream for device tensors) while the
 *   writes of the other slots run. A file captured by an asynchronous save
 *   is in memory already (or is being captured: its @staged watermark, or
 *   the GPU points of sv_job.marks, say how far), and its chunks are
 *   written from there.
 * - Writes go O_DIRECT where the file system takes it; the last is rounded
 *   up to the alignment and the file is cut to its size afterwards, so no
 *   byte goes through the page cache. Short writes are resubmitted.
 * - Sizing as the loader's: chunks of twice the device's largest request
 *   (1-16 MiB, a quarter of the save at most), enough of them in flight
 *   to fill its queue (up to 128 MiB).
 * - Large saves are split into parts taken by several writers, a thread
 *   and a ring each (one per 64 MiB up to one per CPU, 4 at most), sharing
 *   the queue depth: filling staging is CPU work, and the writers share it.
 *   The writer that ends a file's last part makes the file durable. Shards
 *   are written in parallel that way. Progress runs in the calling thread;
 *   with one writer, that is the writer.
 */
#include <errno.h>
#include <liburing.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <tensorio/error.h>
#include <tensorio/pinned.h>

#include "file/save_internal.h"

#define SV_MAXQD 64u
#define SV_MAXWRITERS 4

enum { SV_FREE, SV_COPYING, SV_WRITING };

struct sv_slot {
	char *mem;		/* ring mode: its staging memory */
	const char *src;	/* what is written */
	uint64_t off, len;	/* file range */
	uint64_t wlen, done;	/* bytes asked (tail rounded up), written */
	int state;
	tio_gpu_stream_t *gs;	/* ring mode with GPU tensors */
};

struct sv_writer {
	struct sv_job *j;
	struct io_uring ring;
	int ring_ok;
	struct sv_slot slot[SV_MAXQD];
	unsigned int nslot;
	uint64_t chunk;
	tio_buffer_t *buf;	/* pinned staging */
	char *plain;		/* staging when pinning failed */
	size_t plain_size;
	int fixed;		/* staging registered with the ring */
	pthread_t thread;
	struct sv_file *f;	/* the part of a file being written */
	uint64_t fill, end;
	unsigned int inflight, copying;
};

void sv_job_init(struct sv_job *j)
{
	memset(j, 0, sizeof(*j));
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
}

int sv_stopped(struct sv_job *j)
{
	return __atomic_load_n(&j->stop, __ATOMIC_ACQUIRE);
}

static void sv_stop(struct sv_job *j)
{
	__atomic_store_n(&j->stop, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&j->lock);
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

void sv_cancel(struct sv_job *j)
{
	pthread_mutex_lock(&j->lock);
	j->cancelled = !j->err;
	pthread_mutex_unlock(&j->lock);
	sv_stop(j);
}

/* Keep the error raised in this thread as the job's first, and stop. */
void sv_fail(struct sv_job *j)
{
	tio_object_t *e = tio_error_move_from_raised();
	int err = tio_errno();

	pthread_mutex_lock(&j->lock);
	if (!j->err && !j->cancelled) {
		j->err = e;
		j->err_errno = err;
		e = NULL;
	}
	pthread_mutex_unlock(&j->lock);
	if (e)
		tio_object_decref(e);
	sv_stop(j);
}

void sv_set_staged(struct sv_job *j, struct sv_file *f, uint64_t upto)
{
	pthread_mutex_lock(&j->lock);
	__atomic_store_n(&f->staged, upto, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

/* The first segment of @f ending after @off. */
static int64_t sv_first(const struct sv_file *f, uint64_t off)
{
	int64_t lo = 0, hi = f->nseg;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (f->seg[mid].off + f->seg[mid].len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int sv_gather(struct sv_job *j, struct sv_file *f, uint64_t off, uint64_t len, char *dst,
	      tio_gpu_stream_t *gs, int *gpu)
{
	int64_t i;

	(void)j;
	for (i = sv_first(f, off); i < f->nseg && f->seg[i].off < off + len; i++) {
		const struct sv_seg *s = &f->seg[i];
		uint64_t a = s->off > off ? s->off : off;
		uint64_t b = s->off + s->len < off + len ? s->off + s->len : off + len;

		if (s->mem) {
			memcpy(dst + (a - off), s->mem + (a - s->off), b - a);
			continue;
		}
		if (tio_gpu_copy_dtoh(gs, dst + (a - off), s->dptr + (a - s->off), b - a))
			return -1;
		*gpu = 1;
	}
	return 0;
}

/* Wait (when @block) until @f's bytes below @need are captured: 1, 0, -1. */
static int sv_ready(struct sv_job *j, struct sv_file *f, uint64_t need, int block)
{
	int i, status = 0;

	if (__atomic_load_n(&f->staged, __ATOMIC_ACQUIRE) >= need)
		return 1;
	if (!block)
		return 0;
	for (i = 0; i < j->nmarks; i++) {
		struct sv_mark *m = &j->marks[i];

		if (&j->f[m->file] != f || m->upto < need)
			continue;
		if (tio_fence_wait(j->cap, m->seqno, -1, &status))
			return -1;
		if (status)
			return tio_raise_errno(EIO, "saving %s: copying the tensors from the "
					       "GPU failed (%d)", f->path, status);
		sv_set_staged(j, f, m->upto);
		return 1;
	}
	pthread_mutex_lock(&j->lock);
	while (__atomic_load_n(&f->staged, __ATOMIC_ACQUIRE) < need && !sv_stopped(j))
		pthread_cond_wait(&j->cond, &j->lock);
	pthread_mutex_unlock(&j->lock);
	return __atomic_load_n(&f->staged, __ATOMIC_ACQUIRE) >= need;
}

static void sv_submit(struct sv_writer *w, struct sv_slot *s)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
	const char *p = s->src + s->done;
	unsigned int n = (unsigned int)(s->wlen - s->done);
	uint64_t fo = s->off + s->done;
	int fd = w->f->tmp.fd;

	if (w->fixed && s->mem)
		io_uring_prep_write_fixed(sqe, fd, p, n, fo, 0);
	else
		io_uring_prep_write(sqe, fd, p, n, fo);
	io_uring_sqe_set_data64(sqe, (uint64_t)(s - w->slot));
	s->state = SV_WRITING;
	w->inflight++;
	/* At once: the next slot's copy must not hold this write back. */
	io_uring_submit(&w->ring);
}

/* Stage the file's next chunk into free slot @s: 1, 0 (not captured yet), -1. */
static int sv_stage(struct sv_writer *w, struct sv_slot *s)
{
	struct sv_file *f = w->f;
	uint64_t len = w->end - w->fill < w->chunk ? w->end - w->fill : w->chunk;
	uint32_t a = f->tmp.direct ? f->tmp.align : 1;
	int r, gpu = 0;

	if (f->image) {
		r = sv_ready(w->j, f, w->fill + len, !w->inflight && !w->copying);
		if (r <= 0)
			return r;
		s->src = f->image + w->fill;
	} else {
		if (sv_gather(w->j, f, w->fill, len, s->mem, s->gs, &gpu))
			return -1;
		s->src = s->mem;
	}
	s->off = w->fill;
	s->len = len;
	s->wlen = (len + a - 1) / a * a;
	s->done = 0;
	if (s->mem && s->wlen > len)
		memset(s->mem + len, 0, s->wlen - len);
	w->fill += len;
	if (gpu) {
		s->state = SV_COPYING;
		w->copying++;
	} else {
		sv_submit(w, s);
	}
	return 1;
}

/* Slots whose GPU copies are done go to the disk; wait for one when idle. */
static int sv_copied(struct sv_writer *w)
{
	struct sv_slot *first = NULL;
	unsigned int i;
	int r;

	for (i = 0; i < w->nslot; i++) {
		struct sv_slot *s = &w->slot[i];

		if (s->state != SV_COPYING)
			continue;
		r = tio_gpu_stream_query(s->gs);
		if (r < 0)
			return -1;
		if (r) {
			w->copying--;
			sv_submit(w, s);
		} else if (!first || s->off < first->off) {
			first = s;
		}
	}
	if (first && !w->inflight) {
		if (tio_gpu_stream_sync(first->gs))
			return -1;
		w->copying--;
		sv_submit(w, first);
	}
	return 0;
}

static int sv_fill(struct sv_writer *w)
{
	unsigned int i;
	int r;

	for (i = 0; i < w->nslot && w->fill < w->end && !sv_stopped(w->j); i++) {
		if (w->slot[i].state != SV_FREE)
			continue;
		r = sv_stage(w, &w->slot[i]);
		if (r <= 0)
			return r;
	}
	return w->copying ? sv_copied(w) : 0;
}

static void sv_progress(struct sv_job *j, uint64_t n)
{
	uint64_t done = __atomic_add_fetch(&j->done, n, __ATOMIC_RELAXED);

	if (!j->progress)
		return;
	if (j->inline_progress) {
		if (!sv_stopped(j) && j->progress(j->progress_arg, done, j->total))
			sv_cancel(j);
		return;
	}
	pthread_mutex_lock(&j->lock);
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

/* A failed write's error: EINVAL from a direct write past RLIMIT_FSIZE is EFBIG. */
static int sv_write_error(struct sv_writer *w, struct sv_slot *s, int err)
{
	struct rlimit rl;

	if (err == EINVAL && w->f->tmp.direct && !getrlimit(RLIMIT_FSIZE, &rl) &&
	    rl.rlim_cur != RLIM_INFINITY && s->off + s->wlen > rl.rlim_cur)
		err = EFBIG;
	return tio_raise_file_errno(err, "writing %s%s", w->f->path,
				    err == EFBIG ? " (the file size limit, ulimit -f)" : "");
}

static int sv_complete(struct sv_writer *w, struct sv_slot *s, int res)
{
	w->inflight--;
	s->state = SV_FREE;
	if (res == -EAGAIN || res == -EINTR) {
		if (sv_stopped(w->j))
			return 0;
		sv_submit(w, s);
		return 0;
	}
	if (res <= 0)
		return sv_write_error(w, s, res ? -res : EIO);
	__atomic_store_n(&w->j->used_direct, w->f->tmp.direct, __ATOMIC_RELAXED);
	s->done += (uint64_t)res;
	if (s->done < s->wlen) {
		if (!sv_stopped(w->j))
			sv_submit(w, s);
		return 0;
	}
	sv_progress(w->j, s->len);
	return 0;
}

/* Wait for the writes in flight; -1 with an error raised for a failed one. */
static int sv_reap(struct sv_writer *w)
{
	struct io_uring_cqe *cqe;
	int ret, err = 0;

	ret = io_uring_submit_and_wait(&w->ring, 1);
	if (ret < 0 && ret != -EINTR)
		return tio_raise_errno(-ret, "writing %s: io_uring", w->f->path);
	while (!io_uring_peek_cqe(&w->ring, &cqe)) {
		struct sv_slot *s = &w->slot[io_uring_cqe_get_data64(cqe)];
		int res = cqe->res;

		io_uring_cqe_seen(&w->ring, cqe);
		if (sv_complete(w, s, res) && !err)
			err = -1;
	}
	return err;
}

/* Let copies still landing in the staging memory finish. */
static void sv_drain_copies(struct sv_writer *w)
{
	unsigned int i;

	for (i = 0; i < w->nslot; i++) {
		if (w->slot[i].state != SV_COPYING)
			continue;
		tio_gpu_stream_sync(w->slot[i].gs);
		w->slot[i].state = SV_FREE;
	}
	w->copying = 0;
}

/* Write @f's bytes [@start, @end): 0, or -1 with the job failed or stopped. */
static int sv_part_write(struct sv_writer *w, struct sv_file *f, uint64_t start, uint64_t end)
{
	int err = 0;

	w->f = f;
	w->fill = start;
	w->end = end;
	for (;;) {
		if (!err && !sv_stopped(w->j) && sv_fill(w)) {
			err = -1;
			sv_fail(w->j);	/* the others stop too */
		}
		if (!w->inflight) {
			if (err || sv_stopped(w->j) || (w->fill == end && !w->copying))
				break;
			continue;
		}
		if (sv_reap(w) && !err) {
			err = -1;
			sv_fail(w->j);
		}
	}
	sv_drain_copies(w);
	return err || sv_stopped(w->j) ? -1 : 0;
}

/* Staging for ring mode: pinned, else plain memory (O_DIRECT needs no pin). */
static int sv_staging(struct sv_writer *w, size_t size)
{
	struct iovec iov;
	char *mem;
	unsigned int i;

	if (!tio_pinned_alloc(size, &w->buf)) {
		DLDeviceType gpu = w->j->gpu.device_type;

		mem = tio_buffer_data(w->buf);
		if (gpu && tio_gpu_buffer_register(gpu, w->buf) && tio_errno() != EEXIST)
			return -1;
	} else if (tio_errno() == ENOMEM) {
		w->plain = mmap(NULL, size, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (w->plain == MAP_FAILED) {
			w->plain = NULL;
			return tio_raise_errno(ENOMEM, "saving: %zu bytes of staging memory", size);
		}
		w->plain_size = size;
		mem = w->plain;
	} else {
		return -1;
	}
	tio_error_clear();
	iov.iov_base = mem;
	iov.iov_len = size;
	w->fixed = !io_uring_register_buffers(&w->ring, &iov, 1);
	for (i = 0; i < w->nslot; i++) {
		w->slot[i].mem = mem + (size_t)i * w->chunk;
		if (w->j->gpu.device_type && tio_gpu_stream_create(w->j->gpu, &w->slot[i].gs))
			return -1;
	}
	return 0;
}

static void sv_writer_fini(struct sv_writer *w)
{
	unsigned int i;

	for (i = 0; i < w->nslot; i++)
		tio_gpu_stream_destroy(w->slot[i].gs);
	if (w->ring_ok)
		io_uring_queue_exit(&w->ring);
	tio_buffer_decref(w->buf);
	if (w->plain)
		munmap(w->plain, w->plain_size);
}

static int sv_writer_init(struct sv_writer *w, struct sv_job *j, uint64_t chunk, unsigned int qd)
{
	int i, ring = 0, ret;

	memset(w, 0, sizeof(*w));
	w->j = j;
	w->chunk = chunk;
	w->nslot = qd;
	ret = io_uring_queue_init(2 * qd, &w->ring, 0);
	if (ret)
		return tio_raise_errno(-ret, "saving: setting up io_uring");
	w->ring_ok = 1;
	for (i = 0; i < j->nf; i++)
		ring |= !j->f[i].image;
	return ring ? sv_staging(w, (size_t)chunk * qd) : 0;
}

static uint64_t sv_clamp(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Chunk and depth from the device and the save, as the loader sizes reads. */
static void sv_size(struct sv_job *j, int writers, uint64_t *chunk, unsigned int *qd)
{
	uint64_t max_req, nr_req, inflight, a = j->f[0].tmp.direct ? j->f[0].tmp.align : 4096;

	tio_io_device_limits(j->f[0].tmp.fd, &max_req, &nr_req);
	*chunk = sv_clamp(max_req ? 2 * max_req : 4ULL << 20, 1ULL << 20, 16ULL << 20);
	inflight = sv_clamp(nr_req && max_req ? nr_req * max_req / 8 : 64ULL << 20,
			    32ULL << 20, 128ULL << 20);
	*chunk = sv_clamp(*chunk, 64ULL << 10, sv_clamp(j->total / 4, 64ULL << 10, *chunk));
	if (j->chunk)
		*chunk = sv_clamp(j->chunk, a, 1ULL << 30);
	*chunk = (*chunk + a - 1) / a * a;
	*qd = (unsigned int)sv_clamp(inflight / *chunk / (uint64_t)writers, 4, 32);
	if (j->qd)
		*qd = j->qd;
}

/* The next part of a file to write: its index, or -1 when none is left. */
static int sv_take(struct sv_job *j, uint64_t *start, uint64_t *end)
{
	int i = -1;

	pthread_mutex_lock(&j->lock);
	while (!sv_stopped(j) && j->next < j->nf) {
		struct sv_file *f = &j->f[j->next];

		if (j->pos >= f->size) {
			j->next++;
			j->pos = 0;
			continue;
		}
		i = j->next;
		*start = j->pos;
		*end = f->size - j->pos > j->part ? j->pos + j->part : f->size;
		j->pos = *end;
		f->parts++;
		break;
	}
	pthread_mutex_unlock(&j->lock);
	return i;
}

/* A part is written: the last of its file makes the file durable. */
static int sv_part_done(struct sv_job *j, struct sv_file *f)
{
	int last;

	pthread_mutex_lock(&j->lock);
	last = ++f->done_parts == f->parts && (j->next > f - j->f ||
						 (j->next == f - j->f && j->pos >= f->size));
	pthread_mutex_unlock(&j->lock);
	if (!last || !sv_tmp_sync(&f->tmp, f->size))
		return 0;
	sv_fail(j);
	return -1;
}

static void *sv_writer_main(void *arg)
{
	struct sv_writer *w = arg;
	struct sv_job *j = w->j;
	uint64_t start, end;
	int i;

	while ((i = sv_take(j, &start, &end)) >= 0)
		if (sv_part_write(w, &j->f[i], start, end) || sv_part_done(j, &j->f[i]))
			break;
	pthread_mutex_lock(&j->lock);
	j->running--;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

/* In the calling thread: report progress until the writers are done. */
static void sv_watch(struct sv_job *j)
{
	uint64_t seen = 0, done;
	struct timespec ts;

	pthread_mutex_lock(&j->lock);
	while (j->running) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&j->cond, &j->lock, &ts);
		done = __atomic_load_n(&j->done, __ATOMIC_RELAXED);
		if (!j->progress || done == seen || sv_stopped(j))
			continue;
		seen = done;
		pthread_mutex_unlock(&j->lock);
		if (j->progress(j->progress_arg, done, j->total))
			sv_cancel(j);
		pthread_mutex_lock(&j->lock);
	}
	pthread_mutex_unlock(&j->lock);
}

/* Start the writers (signals blocked in them: SIGXFSZ must not kill). */
static int sv_start(struct sv_job *j, struct sv_writer *w, int n)
{
	sigset_t all, old;
	int i;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (i = 0; i < n; i++)
		if (pthread_create(&w[i].thread, NULL, sv_writer_main, &w[i]))
			break;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_mutex_lock(&j->lock);
	j->running = i;
	pthread_mutex_unlock(&j->lock);
	return i;
}

int sv_producer_mark(struct sv_job *j)
{
	int i, ring = 0;

	for (i = 0; i < j->nf; i++)
		ring |= !j->f[i].image;
	if (!j->user_gs || !j->gpu.device_type || !ring)
		return 0;
	if (!j->cap && tio_stream_create(&j->cap))
		return -1;
	return tio_gpu_stream_record_fence(j->user_gs, j->cap, &j->producer);
}

/* The GPU tensors' producer's work, waited for before the first copy. */
static int sv_wait_producer(struct sv_job *j)
{
	int status = 0;

	if (!j->producer)
		return 0;
	if (tio_fence_wait(j->cap, j->producer, -1, &status))
		return -1;
	return status ? tio_raise_errno(EIO, "saving: the GPU stream failed (%d)", status) : 0;
}

int sv_result(struct sv_job *j)
{
	unsigned long long done = __atomic_load_n(&j->done, __ATOMIC_RELAXED);

	if (j->cancelled)
		return tio_raise_errno(ECANCELED, "saving %s: cancelled after %llu of %llu bytes",
				       j->index ? j->index : j->f[0].path, done,
				       (unsigned long long)j->total);
	if (j->err) {
		tio_error_set_raised(j->err);
		tio_set_errno(j->err_errno);
		return -1;
	}
	return 0;
}

int sv_run(struct sv_job *j)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	/* A writer per 64 MiB up to one per CPU: copying into staging is CPU work. */
	int n = (int)sv_clamp(j->total / (64ULL << 20), 1,
			      sv_clamp(ncpu > 0 ? (uint64_t)ncpu : 1, 1, SV_MAXWRITERS));
	struct sv_writer *w;
	unsigned int qd;
	uint64_t chunk;
	int i, ready = 0, started;

	if (sv_wait_producer(j))
		return -1;
	sv_size(j, n, &chunk, &qd);
	/* Two parts per writer at least, so that they end together. */
	j->part = sv_clamp(j->total / (2 * (uint64_t)n), 16ULL << 20, 256ULL << 20);
	j->part = (j->part + chunk - 1) / chunk * chunk;
	if (qd > SV_MAXQD)
		return tio_raise_errno(EINVAL, "saving: queue depth %u above %u", qd, SV_MAXQD);
	w = calloc((size_t)n, sizeof(*w));
	if (!w)
		return tio_raise_errno(ENOMEM, "saving: %d writers", n);
	for (; ready < n; ready++)
		if (sv_writer_init(&w[ready], j, chunk, qd)) {
			sv_writer_fini(&w[ready]);
			break;
		}
	if (!ready) {
		sv_fail(j);
	} else if (ready == 1) {
		tio_error_clear();
		j->inline_progress = 1;
		j->running = 1;
		sv_writer_main(&w[0]);
	} else {
		tio_error_clear();
		started = sv_start(j, w, ready);
		if (started)
			sv_watch(j);
		else
			sv_writer_main(&w[0]);
		for (i = 0; i < started; i++)
			pthread_join(w[i].thread, NULL);
	}
	for (i = 0; i < ready; i++)
		sv_writer_fini(&w[i]);
	free(w);
	if (!sv_stopped(j) && j->progress && !j->inline_progress &&
	    j->progress(j->progress_arg, j->done, j->total))
		sv_cancel(j);
	return sv_result(j);
}

int sv_publish(struct sv_job *j)
{
	int i;

	for (i = 0; i < j->nf; i++)
		if (sv_tmp_link(&j->f[i].tmp))
			return -1;
	if (j->nf && sv_tmp_sync_dir(&j->f[0].tmp))
		return -1;
	return j->index ? sv_write_text(j->index, j->index_text, strlen(j->index_text)) : 0;
}

/* Captured files' memory back to the pinned cache (pinned now, if fresh). */
void sv_images_back(struct sv_job *j)
{
	int i;

	if (j->nmarks)	/* no copy may still land in an image */
		tio_fence_wait(j->cap, j->marks[j->nmarks - 1].seqno, -1, NULL);
	j->nmarks = 0;
	for (i = 0; j->f && i < j->nf; i++) {
		struct sv_file *f = &j->f[i];

		if (f->img_plain)
			munmap(f->image, f->img_plain);
		else if (f->img.lazy && tio_pinned_finish(&f->img))
			tio_error_clear();	/* not cached, then: unmapped */
		tio_pinned_abort(&f->img);
		f->img_plain = 0;
		f->image = NULL;
	}
}

void sv_let_go(struct sv_job *j)
{
	int i;

	for (i = 0; j->f && i < j->nf; i++)
		sv_tmp_let_go(&j->f[i].tmp);
}

void sv_job_fini(struct sv_job *j)
{
	tio_object_t *raised = tio_error_move_from_raised();
	int i, err = tio_errno();

	sv_images_back(j);
	for (i = 0; j->f && i < j->nf; i++) {
		struct sv_file *f = &j->f[i];

		sv_tmp_close(&f->tmp);
		free(f->seg);
		free(f->hdr);
		free(f->path);
	}
	free(j->f);
	free(j->marks);
	free(j->index);
	free(j->index_text);
	tio_stream_decref(j->cap);
	if (j->err)
		tio_object_decref(j->err);
	pthread_cond_destroy(&j->cond);
	pthread_mutex_destroy(&j->lock);
	tio_error_clear();
	if (raised) {	/* the save's error stays the caller's */
		tio_error_set_raised(raised);
		tio_object_decref(raised);
	}
	tio_set_errno(err);
}
