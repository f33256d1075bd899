// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The loader engine: file ranges into memory at the disk's limit.
 *
 * - O_DIRECT where the file system takes it and the range is not already in
 *   the page cache (a cached range is copied, which beats the disk);
 *   requests are cut at block boundaries of the file, so only an unaligned
 *   head and tail go buffered, in the same queue (no second pass). A tail
 *   whose destination has room is read as a whole block instead: O_DIRECT
 *   reads come back short at the end of the file.
 * - Chunk size and queue depth come from the device (max_sectors_kb,
 *   nr_requests) and the size of the load, not from constants.
 * - Destinations that are not populated yet (fresh pinned-cache memory) are
 *   populated a window at a time ahead of the reads into them, while the
 *   reads already queued run: fresh memory costs about as much to fault in
 *   here as the disk takes to fill it, so doing it first would double the
 *   time. (The pinned cache maps fresh memory of 2 MiB and more as huge
 *   pages, which made a first 512 MiB load about 4x faster here.) For page-cache copies each window is registered with the ring
 *   (READ_FIXED) once populated (2 GiB warm: 1.9-2.0 GB/s against 1.4-1.5
 *   unregistered); O_DIRECT reads go unregistered, which measured faster
 *   (2.0-3.2 GB/s against 1.5-2.1: the per-window registration stalls the
 *   queue). Registering the whole destination first would fault it all in
 *   before the first read.
 * - Large loads are split into parts taken by several readers (threads,
 *   one ring each, up to one per CPU): population and page-cache copies
 *   are CPU work, and the readers share it.
 * - Progress and cancellation: @progress runs on the caller's thread.
 *
 * Locking: ld_shared.lock guards the part cursor, the first error and the
 * number of running readers; @done and @stop are atomics. Each reader's
 * ring and requests are its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "file/file_internal.h"

#define LD_ALIGN 4096u
#define LD_MAXQD 256u
#define LD_MAXREADERS 4
#define LD_PART_MAX (256ULL << 20)	/* what a reader takes at a time, at most */
#define LD_WIN (16ULL << 20)		/* populated and registered at a time */
#define LD_NSLOT 16u			/* registered windows per ring */

struct ld_shared {
	struct tio_load_item *items;
	int n;
	uint64_t chunk;
	unsigned int qd;
	uint64_t part;
	uint64_t total;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int item;			/* part cursor */
	uint64_t pos;
	int running;
	int err;			/* first error, negative */
	const struct tio_load_item *err_it;
	uint64_t done;			/* atomic */
	int stop;			/* atomic: error or cancel */
	int used_direct, used_fixed;	/* atomic */
	struct tio_io_opts *o;
	int inline_progress;
};

struct ld_req {
	struct tio_load_item *it;
	uint64_t pos, len, rlen;	/* rlen: what is asked (tail rounded up) */
	int direct;
	int slot;			/* registered window, or -1 */
};

struct ld_reader {
	struct ld_shared *sh;
	struct io_uring ring;
	int fixed;
	struct ld_req req[LD_MAXQD];
	unsigned int free_idx[LD_MAXQD], nfree, inflight;
	unsigned int slot_busy[LD_NSLOT];
	int slot_ok[LD_NSLOT];
	/* the part being read */
	struct tio_load_item *it;
	uint64_t pstart, next, end, ready;
	unsigned int wbase;		/* window counter at the part's start */
	unsigned int nwin;
	pthread_t thread;
};

static void ld_fail(struct ld_shared *sh, int err, const struct tio_load_item *it)
{
	pthread_mutex_lock(&sh->lock);
	if (!sh->err) {
		sh->err = err;
		sh->err_it = it;
	}
	pthread_mutex_unlock(&sh->lock);
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
}

static int ld_stopped(struct ld_shared *sh)
{
	return __atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE);
}

/* Take the next part; 0 when none is left. */
static int ld_take(struct ld_reader *r)
{
	struct ld_shared *sh = r->sh;
	int got = 0;

	pthread_mutex_lock(&sh->lock);
	while (sh->item < sh->n && !got) {
		struct tio_load_item *it = &sh->items[sh->item];

		if (sh->pos >= it->len) {
			sh->item++;
			sh->pos = 0;
			continue;
		}
		r->it = it;
		r->pstart = r->next = r->ready = sh->pos;
		r->end = it->len - sh->pos > sh->part ? sh->pos + sh->part : it->len;
		sh->pos = r->end;
		got = 1;
	}
	pthread_mutex_unlock(&sh->lock);
	r->wbase += r->nwin;
	r->nwin = 0;
	return got;
}

static unsigned int ld_slot(struct ld_reader *r, uint64_t pos)
{
	return (r->wbase + (unsigned int)((pos - r->pstart) / LD_WIN)) % LD_NSLOT;
}

/*
 * Make the next window of the part readable: populate it if the memory is
 * fresh, register it. 0 when done, 1 when its slot is still in use.
 */
static int ld_window(struct ld_reader *r)
{
	struct tio_load_item *it = r->it;
	uint64_t wend = r->ready + LD_WIN < r->end ? r->ready + LD_WIN : r->end;
	unsigned int slot = ld_slot(r, r->ready);
	struct iovec iov;

	if (r->slot_busy[slot])
		return 1;
	if (it->lazy) {
		uintptr_t a = (uintptr_t)(it->mem + r->ready) & ~(uintptr_t)(LD_ALIGN - 1);
		uintptr_t b = ((uintptr_t)(it->mem + wend) + LD_ALIGN - 1) &
			      ~(uintptr_t)(LD_ALIGN - 1);

		/* Best effort: a read into an unpopulated page faults it in. */
		if (madvise((void *)a, b - a, MADV_POPULATE_WRITE) && errno == EINVAL) {
			volatile char *p;

			for (p = (volatile char *)a; (uintptr_t)p < b; p += LD_ALIGN)
				*p = 0;
		}
	}
	r->slot_ok[slot] = 0;
	if (r->fixed && it->dfd < 0) {
		iov.iov_base = it->mem + r->ready;
		iov.iov_len = wend - r->ready;
		r->slot_ok[slot] = io_uring_register_buffers_update_tag(&r->ring, slot, &iov,
									NULL, 1) == 1;
		if (!r->slot_ok[slot])
			r->fixed = 0;	/* e.g. memory the kernel cannot pin */
	}
	r->ready = wend;
	r->nwin++;
	return 0;
}

static void ld_prep(struct ld_reader *r, unsigned int i)
{
	struct ld_req *q = &r->req[i];
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
	int fd = q->direct ? q->it->dfd : q->it->fd;
	char *p = q->it->mem + q->pos;
	uint64_t fo = q->it->file_off + q->pos;
	unsigned int n = (unsigned int)q->rlen;

	if (q->slot >= 0) {
		io_uring_prep_read_fixed(sqe, fd, p, n, fo, q->slot);
		r->slot_busy[q->slot]++;
	} else {
		io_uring_prep_read(sqe, fd, p, n, fo);
	}
	io_uring_sqe_set_data64(sqe, i);
	r->inflight++;
}

static int ld_aligned(const struct tio_load_item *it, uint64_t pos, uint64_t len)
{
	return !((it->file_off + pos) % LD_ALIGN) && !((uintptr_t)(it->mem + pos) % LD_ALIGN) &&
	       !(len % LD_ALIGN);
}

/* Queue reads for what is ready while there is room. */
static void ld_fill(struct ld_reader *r)
{
	struct ld_shared *sh = r->sh;

	while (r->nfree && r->next < r->ready && !ld_stopped(sh)) {
		struct tio_load_item *it = r->it;
		unsigned int i = r->free_idx[--r->nfree];
		struct ld_req *q = &r->req[i];
		uint64_t fo = it->file_off + r->next, wend, len;

		wend = r->pstart + ((r->next - r->pstart) / LD_WIN + 1) * LD_WIN;
		len = sh->chunk;
		if (fo % LD_ALIGN)	/* the head: up to the next block */
			len = LD_ALIGN - fo % LD_ALIGN;
		if (len > r->ready - r->next)
			len = r->ready - r->next;
		if (len > wend - r->next)
			len = wend - r->next;
		q->it = it;
		q->pos = r->next;
		q->len = q->rlen = len;
		q->slot = r->slot_ok[ld_slot(r, r->next)] ? (int)ld_slot(r, r->next) : -1;
		if (len % LD_ALIGN && r->next + len == it->len &&
		    it->slack >= LD_ALIGN - len % LD_ALIGN) {
			q->rlen = (len + LD_ALIGN - 1) & ~(uint64_t)(LD_ALIGN - 1);
			q->slot = -1;	/* past the registered window */
		}
		q->direct = it->dfd >= 0 && ld_aligned(it, q->pos, q->rlen);
		r->next += len;
		ld_prep(r, i);
	}
}

static void ld_progress(struct ld_shared *sh, uint64_t n)
{
	uint64_t done = __atomic_add_fetch(&sh->done, n, __ATOMIC_RELAXED);

	if (sh->inline_progress) {
		/* Nothing more to report once cancelled or failed. */
		if (!ld_stopped(sh) && sh->o->progress(sh->o->progress_arg, done, sh->total))
			ld_fail(sh, -ECANCELED, NULL);
		return;
	}
	pthread_mutex_lock(&sh->lock);
	pthread_cond_signal(&sh->cond);
	pthread_mutex_unlock(&sh->lock);
}

static void ld_complete(struct ld_reader *r, unsigned int i, int res)
{
	struct ld_shared *sh = r->sh;
	struct ld_req *q = &r->req[i];
	uint64_t got;

	r->inflight--;
	if (q->slot >= 0)
		r->slot_busy[q->slot]--;
	if (res == -EAGAIN || res == -EINTR)
		goto again;
	if ((res == -EINVAL || res == -EFAULT || res == -EOPNOTSUPP) && q->direct) {
		q->direct = 0;	/* the file system or the memory refuses O_DIRECT */
		goto again;
	}
	if (res < 0 || !res) {
		ld_fail(sh, res ? res : -ENODATA, q->it);
		goto out;
	}
	got = (uint64_t)res < q->len ? (uint64_t)res : q->len;
	if (q->direct)
		__atomic_store_n(&sh->used_direct, 1, __ATOMIC_RELAXED);
	if (q->slot >= 0)
		__atomic_store_n(&sh->used_fixed, 1, __ATOMIC_RELAXED);
	if (sh->o && sh->o->progress)
		ld_progress(sh, got);
	else
		__atomic_add_fetch(&sh->done, got, __ATOMIC_RELAXED);
	if (got == q->len)
		goto out;
	/* Short: the rest, buffered if it is not aligned any more. */
	q->pos += got;
	q->len -= got;
	q->rlen = q->len;
	q->slot = -1;
	q->direct = q->direct && ld_aligned(q->it, q->pos, q->len);
again:
	if (!ld_stopped(sh)) {
		q->slot = q->slot >= 0 && r->slot_ok[q->slot] ? q->slot : -1;
		ld_prep(r, i);
		return;
	}
out:
	r->free_idx[r->nfree++] = i;
}

static void *ld_read(void *arg)
{
	struct ld_reader *r = arg;
	struct ld_shared *sh = r->sh;
	uint64_t ahead = (uint64_t)sh->qd * sh->chunk + LD_WIN;
	struct io_uring_cqe *cqe;
	int ret, more = 1;

	for (;;) {
		if (r->next == r->end && more && !ld_stopped(sh))
			more = ld_take(r);
		ld_fill(r);
		if (r->inflight)
			io_uring_submit(&r->ring);
		/* Populate and register ahead while the queued reads run. */
		if (more && r->next < r->end && r->ready < r->end && !ld_stopped(sh) &&
		    r->ready - r->next < ahead && !ld_window(r))
			continue;
		if (!r->inflight) {
			if (!more || ld_stopped(sh))
				break;
			continue;
		}
		ret = io_uring_wait_cqe(&r->ring, &cqe);
		if (ret == -EINTR)
			continue;
		if (ret < 0) {
			/* Cannot happen with requests in flight; give up on them. */
			ld_fail(sh, ret, r->it);
			break;
		}
		do {
			unsigned int i = (unsigned int)io_uring_cqe_get_data64(cqe);
			int res = cqe->res;

			io_uring_cqe_seen(&r->ring, cqe);
			ld_complete(r, i, res);
		} while (!io_uring_peek_cqe(&r->ring, &cqe));
	}
	pthread_mutex_lock(&sh->lock);
	sh->running--;
	pthread_cond_signal(&sh->cond);
	pthread_mutex_unlock(&sh->lock);
	return NULL;
}

static int ld_reader_init(struct ld_reader *r, struct ld_shared *sh, int fixed)
{
	unsigned int i;
	int ret;

	memset(r, 0, sizeof(*r));
	r->sh = sh;
	for (i = 0; i < sh->qd; i++)
		r->free_idx[r->nfree++] = i;
	ret = io_uring_queue_init(sh->qd * 2, &r->ring, 0);
	if (ret)
		return ret;
	r->fixed = fixed && !io_uring_register_buffers_sparse(&r->ring, LD_NSLOT);
	return 0;
}

/* The device's request size and queue length, from sysfs (0 when unknown). */
void tio_io_device_limits(int fd, uint64_t *max_req, uint64_t *nr_req)
{
	static const char *const up[] = { "queue", "../queue" };
	unsigned long long v;
	char path[96];
	struct stat sb;
	unsigned int i;
	FILE *f;

	*max_req = *nr_req = 0;
	if (fstat(fd, &sb))
		return;
	for (i = 0; i < 2 && !*max_req; i++) {
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%s/max_sectors_kb",
			 major(sb.st_dev), minor(sb.st_dev), up[i]);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fscanf(f, "%llu", &v) == 1)
			*max_req = v << 10;
		fclose(f);
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%s/nr_requests",
			 major(sb.st_dev), minor(sb.st_dev), up[i]);
		f = fopen(path, "re");
		if (f) {
			if (fscanf(f, "%llu", &v) == 1)
				*nr_req = v;
			fclose(f);
		}
	}
}

static uint64_t ld_clamp(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * Sizing: requests of twice the device's largest (8 MiB here), 1-16 MiB;
 * enough of them in flight to fill its queue, up to 128 MiB; no more than
 * a quarter of the load per request, so that small loads still overlap.
 * A reader per 64 MiB up to one per CPU (4 at most), sharing the queue.
 */
static void ld_size(struct ld_shared *sh, const struct tio_io_opts *o, int *readers)
{
	uint64_t max_req, nr_req, inflight;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	tio_io_device_limits(sh->items[0].fd, &max_req, &nr_req);
	sh->chunk = ld_clamp(max_req ? 2 * max_req : 4ULL << 20, 1ULL << 20, 16ULL << 20);
	inflight = ld_clamp(nr_req && max_req ? nr_req * max_req / 8 : 64ULL << 20,
			    32ULL << 20, 128ULL << 20);
	sh->chunk = ld_clamp(sh->chunk, 64ULL << 10,
			     ld_clamp((sh->total / 4 + LD_ALIGN - 1) & ~(uint64_t)(LD_ALIGN - 1),
				      64ULL << 10, sh->chunk));
	sh->qd = (unsigned int)ld_clamp(inflight / sh->chunk, 4, 32);
	*readers = (int)ld_clamp(sh->total / (64ULL << 20), 1,
				 (uint64_t)ld_clamp(ncpu > 0 ? (uint64_t)ncpu : 1, 1,
						    LD_MAXREADERS));
	/* Two parts per reader at least, so that they finish together. */
	sh->part = ld_clamp((sh->total / (2 * (uint64_t)*readers) + LD_WIN - 1) & ~(LD_WIN - 1),
			    LD_WIN, LD_PART_MAX);
	if (o && o->chunk_size)
		sh->chunk = ld_clamp((o->chunk_size + LD_ALIGN - 1) & ~(uint64_t)(LD_ALIGN - 1),
				     LD_ALIGN, 1ULL << 30);
	if (o && o->queue_depth)
		sh->qd = o->queue_depth;
	else if (*readers > 1)
		sh->qd = (unsigned int)ld_clamp(sh->qd / (unsigned int)*readers, 4, 32);
}

/* Call the progress callback until the readers are done. */
static void ld_watch(struct ld_shared *sh)
{
	uint64_t seen = 0, done;
	struct timespec ts;

	pthread_mutex_lock(&sh->lock);
	while (sh->running) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&sh->cond, &sh->lock, &ts);
		done = __atomic_load_n(&sh->done, __ATOMIC_RELAXED);
		if (done == seen || !sh->o || !sh->o->progress || ld_stopped(sh))
			continue;
		seen = done;
		pthread_mutex_unlock(&sh->lock);
		if (sh->o->progress(sh->o->progress_arg, done, sh->total))
			ld_fail(sh, -ECANCELED, NULL);
		pthread_mutex_lock(&sh->lock);
	}
	pthread_mutex_unlock(&sh->lock);
}

static int ld_error(struct ld_shared *sh)
{
	const struct tio_load_item *it = sh->err_it;

	if (sh->err == -ECANCELED)
		return tio_raise_errno(ECANCELED, "loading: cancelled by the progress "
				       "callback after %llu of %llu bytes",
				       (unsigned long long)sh->done,
				       (unsigned long long)sh->total);
	if (sh->err == -ENODATA)
		return tio_raise_errno(ENODATA, "reading %s: the file ends before offset %llu",
				       it->path, (unsigned long long)(it->file_off + it->len));
	return tio_raise_errno(-sh->err, "reading %s", it ? it->path : "a file");
}

int tio_load_run(struct tio_load_item *items, int n, struct tio_io_opts *o)
{
	struct ld_reader *r;
	struct ld_shared sh;
	int readers, i, started = 0, ret;

	memset(&sh, 0, sizeof(sh));
	sh.items = items;
	sh.n = n;
	sh.o = o;
	for (i = 0; i < n; i++)
		sh.total += items[i].len;
	if (!sh.total)
		return 0;
	ld_size(&sh, o, &readers);
	if (sh.qd > LD_MAXQD)
		return tio_raise_errno(EINVAL, "loading: queue depth %u above %u", sh.qd, LD_MAXQD);
	r = calloc((size_t)readers, sizeof(*r));
	if (!r)
		return tio_raise_errno(ENOMEM, "loading: %d readers", readers);
	pthread_mutex_init(&sh.lock, NULL);
	pthread_cond_init(&sh.cond, NULL);
	for (i = 0; i < readers; i++) {
		ret = ld_reader_init(&r[i], &sh, !(o && (o->flags & TIO_IO_NO_FIXED)));
		if (ret) {
			readers = i;
			break;
		}
	}
	if (!readers) {
		ret = tio_raise_errno(-ret, "loading: setting up io_uring");
		goto out;
	}
	sh.running = readers;
	if (readers == 1) {
		sh.inline_progress = 1;
		ld_read(&r[0]);
	} else {
		for (i = 0; i < readers; i++)
			if (pthread_create(&r[i].thread, NULL, ld_read, &r[i]))
				break;
		started = i;
		pthread_mutex_lock(&sh.lock);
		sh.running = started;
		pthread_mutex_unlock(&sh.lock);
		if (!started) {
			sh.inline_progress = 1;
			sh.running = 1;
			ld_read(&r[0]);
		} else {
			ld_watch(&sh);
		}
		for (i = 0; i < started; i++)
			pthread_join(r[i].thread, NULL);
	}
	if (o) {
		o->used_direct = sh.used_direct;
		o->used_fixed = sh.used_fixed;
	}
	if (!sh.err && o && o->progress && !sh.inline_progress &&
	    o->progress(o->progress_arg, sh.done, sh.total))
		sh.err = -ECANCELED;
	ret = sh.err ? ld_error(&sh) : 0;
out:
	for (i = 0; i < readers; i++)
		io_uring_queue_exit(&r[i].ring);
	free(r);
	pthread_cond_destroy(&sh.cond);
	pthread_mutex_destroy(&sh.lock);
	return ret;
}

/* Pages of the range in the page cache, by cachestat() (6.5) or mincore(). */
static int ld_cached_mostly(int fd, uint64_t off, uint64_t len)
{
	struct { uint64_t off, len; } range = { off, len };
	struct { uint64_t cache, dirty, writeback, evicted, recently_evicted; } cs;
	uint64_t pages = (len + LD_ALIGN - 1) / LD_ALIGN, in = 0, i;
	unsigned char *vec;
	uint64_t moff = off & ~(uint64_t)(LD_ALIGN - 1);
	size_t mlen = (size_t)(len + (off - moff));
	void *p;

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif
	if (!syscall(__NR_cachestat, fd, &range, &cs, 0))
		return cs.cache * 2 >= pages;
	p = mmap(NULL, mlen, PROT_READ, MAP_SHARED, fd, (off_t)moff);
	if (p == MAP_FAILED)
		return 0;
	vec = malloc(mlen / LD_ALIGN + 1);
	if (vec && !mincore(p, mlen, vec))
		for (i = 0; i < (mlen + LD_ALIGN - 1) / LD_ALIGN; i++)
			in += vec[i] & 1;
	free(vec);
	munmap(p, mlen);
	return in * 2 >= pages;
}

int tio_load_open(const char *path, uint64_t off, uint64_t len, unsigned int flags,
		  struct tio_load_item *it)
{
	memset(it, 0, sizeof(*it));
	it->path = path;
	it->dfd = -1;
	it->file_off = off;
	it->len = len;
	it->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (it->fd < 0)
		return tio_raise_file_errno(errno, "opening %s", path);
	if (!(flags & TIO_IO_NO_DIRECT) && len >= LD_ALIGN &&
	    !ld_cached_mostly(it->fd, off, len))
		it->dfd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);	/* tmpfs: EINVAL */
	return 0;
}

void tio_load_close(struct tio_load_item *it)
{
	if (it->dfd >= 0)
		close(it->dfd);
	if (it->fd >= 0)
		close(it->fd);
	it->fd = it->dfd = -1;
}
