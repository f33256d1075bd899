// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The user backend's streams: timelines whose last signalled seqno lives
 * in a shared memfd page next to a futex word. Signal stores the seqno
 * (release), bumps the futex word and wakes every waiter; waiters sleep
 * on the futex without ub->lock, holding a reference on the timeline.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dev/backend/user_internal.h"

static long ub_futex(uint32_t *uaddr, int op, uint32_t val,
		     const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

/* Drop a reference to @tl; under ub->lock. */
void tio_ub_tl_put(struct ub_tl *tl)
{
	if (--tl->refs)
		return;
	munmap(tl->page, sizeof(*tl->page));
	close(tl->memfd);
	free(tl->errs);
	free(tl);
}

/*
 * Publish the seqno and wake sleepers. The futex syscall is skipped when
 * nobody sleeps (pollers of the seqno word, or no waiter at all): it runs
 * under ub->lock, and a poller that answers at once would otherwise find
 * the lock held through the syscall. Sequentially consistent accesses here
 * and in tio_ub_tl_wait() make sure a waiter either sees the new seqno or is
 * counted before the count is read.
 */
static void ub_tl_publish(struct ub_tl *tl)
{
	__atomic_store_n(&tl->page->signalled, tl->signalled, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&tl->page->futex, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&tl->page->waiters, __ATOMIC_SEQ_CST))
		ub_futex(&tl->page->futex, FUTEX_WAKE, INT_MAX, NULL);
}

int tio_ub_tl_signal(struct ub_tl *tl, uint64_t seqno, int error)
{
	if (seqno > tl->emitted)
		return -EINVAL;
	if (seqno <= tl->signalled)
		return 0;
	if (error) {
		struct ub_err *n = realloc(tl->errs, (tl->nerrs + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		tl->errs = n;
		n[tl->nerrs].first = tl->signalled + 1;
		n[tl->nerrs].last = seqno;
		n[tl->nerrs].error = error;
		tl->nerrs++;
	}
	tl->signalled = seqno;
	ub_tl_publish(tl);
	return 0;
}

int tio_ub_tl_status(const struct ub_tl *tl, uint64_t seqno)
{
	size_t i;

	for (i = tl->nerrs; i-- > 0;)
		if (seqno >= tl->errs[i].first && seqno <= tl->errs[i].last)
			return tl->errs[i].error;
	return 0;
}

static void ub_deadline(int64_t timeout_ns, unsigned int flags, struct timespec *ts)
{
	if (flags & TIO_WAIT_F_ABSOLUTE) {
		ts->tv_sec = timeout_ns / 1000000000;
		ts->tv_nsec = timeout_ns % 1000000000;
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += timeout_ns / 1000000000;
	ts->tv_nsec += timeout_ns % 1000000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/*
 * Wait for @seqno of @tl (the caller holds a reference, not the lock).
 * Return: 0 with *status set, -ETIME, or -EINTR.
 */
int tio_ub_tl_wait(struct ub_state *ub, struct ub_tl *tl, uint64_t seqno,
		   unsigned int flags, int64_t timeout_ns, int *status)
{
	struct timespec ts;
	int forever = timeout_ns < 0 && !(flags & TIO_WAIT_F_ABSOLUTE);

	if (!forever)
		ub_deadline(timeout_ns, flags, &ts);
	if (__atomic_load_n(&tl->page->signalled, __ATOMIC_ACQUIRE) < seqno &&
	    !forever && !timeout_ns && !(flags & TIO_WAIT_F_ABSOLUTE))
		return -ETIME;
	for (;;) {
		uint32_t f;
		long r;
		int err;

		/* Counted before the last look: see ub_tl_publish(). */
		__atomic_fetch_add(&tl->page->waiters, 1, __ATOMIC_SEQ_CST);
		f = __atomic_load_n(&tl->page->futex, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&tl->page->signalled, __ATOMIC_SEQ_CST) >= seqno) {
			__atomic_fetch_sub(&tl->page->waiters, 1, __ATOMIC_RELAXED);
			break;
		}
		r = ub_futex(&tl->page->futex, FUTEX_WAIT_BITSET, f,
			     forever ? NULL : &ts);
		err = errno;
		__atomic_fetch_sub(&tl->page->waiters, 1, __ATOMIC_RELAXED);
		if (r < 0 && err == ETIMEDOUT) {
			if (__atomic_load_n(&tl->page->signalled, __ATOMIC_ACQUIRE) >= seqno)
				break;
			return -ETIME;
		}
	}
	pthread_mutex_lock(&ub->lock);
	*status = tio_ub_tl_status(tl, seqno);
	pthread_mutex_unlock(&ub->lock);
	return 0;
}

int tio_ub_stream_create(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_stream_create *a = p;
	struct ub_tl *tl;
	struct ub_obj *o;
	int ret;

	/*
	 * The bound is checked and reported as the driver's default would
	 * be; nothing here reaches another driver, so nothing expires.
	 */
	if (a->flags || a->pad || a->fence_timeout_ms > UB_FENCE_TIMEOUT_MS)
		return -EINVAL;
	tl = calloc(1, sizeof(*tl));
	o = calloc(1, sizeof(*o));
	if (!tl || !o) {
		ret = -ENOMEM;
		goto err_free;
	}
	ret = tio_ub_memfd("tensorio-seqno", ctx->page_size, &tl->memfd);
	if (ret)
		goto err_free;
	tl->page = mmap(NULL, ctx->page_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			tl->memfd, 0);
	if (tl->page == MAP_FAILED) {
		ret = -errno;
		close(tl->memfd);
		goto err_free;
	}
	tl->refs = 1;
	o->type = UB_STREAM;
	o->fd = -1;
	o->dmabuf = -1;
	o->tl = tl;
	pthread_mutex_lock(&ub->lock);
	tl->context = ub->next_context++;
	ret = tio_ub_insert(ub, o);
	pthread_mutex_unlock(&ub->lock);
	if (ret) {
		munmap(tl->page, ctx->page_size);
		close(tl->memfd);
		goto err_free;
	}
	a->handle = o->handle;
	a->seqno_offset = (uint64_t)o->handle << UB_HANDLE_SHIFT;
	a->context = tl->context;
	a->fence_timeout_ms = a->fence_timeout_ms ?: UB_FENCE_TIMEOUT_MS;
	return 0;

err_free:
	free(tl);
	free(o);
	return ret;
}

int tio_ub_fence_wait(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_fence_wait *a = p;
	struct ub_tl *tl;
	struct ub_obj *o;
	int ret, status = 0;

	(void)ctx;
	if ((a->flags & ~TIO_WAIT_F_ABSOLUTE) || a->pad)
		return -EINVAL;
	pthread_mutex_lock(&ub->lock);
	o = ub_lookup(ub, a->stream, UB_STREAM);
	if (!o) {
		pthread_mutex_unlock(&ub->lock);
		return -ENOENT;
	}
	tl = o->tl;
	if (!a->seqno || a->seqno > tl->emitted) {
		pthread_mutex_unlock(&ub->lock);
		return -EINVAL;
	}
	tl->refs++;
	pthread_mutex_unlock(&ub->lock);
	ret = tio_ub_tl_wait(ub, tl, a->seqno, a->flags, a->timeout_ns, &status);
	if (!ret)
		a->status = status;
	pthread_mutex_lock(&ub->lock);
	tio_ub_tl_put(tl);
	pthread_mutex_unlock(&ub->lock);
	return ret;
}

/* The handlers below run under ub->lock. */
int tio_ub_stream_destroy(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_handle_op *a = p;
	struct ub_tl *tl;
	struct ub_obj *s;
	int ret;

	(void)ctx;
	ret = ub_get(ub, a->flags, a->handle, UB_STREAM, &s);
	if (ret)
		return ret;
	tio_ub_remove(ub, s);
	tl = s->tl;
	free(s);
	/* Cancel the points not signalled yet. */
	if (tl->emitted > tl->signalled)
		tio_ub_tl_signal(tl, tl->emitted, -ECANCELED);
	tio_ub_tl_put(tl);
	return 0;
}

int tio_ub_fence_emit(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_fence_emit *a = p;
	struct ub_obj *s;
	int ret;

	(void)ctx;
	ret = ub_get(ub, a->flags, a->stream, UB_STREAM, &s);
	if (ret)
		return ret;
	if (s->tl->emitted == UINT64_MAX)
		return -EOVERFLOW;
	a->seqno = ++s->tl->emitted;
	return 0;
}

int tio_ub_fence_signal(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_fence_signal *a = p;
	struct ub_obj *s;

	(void)ctx;
	if (a->flags || a->pad || a->error > 0 || a->error < -4095)
		return -EINVAL;
	s = ub_lookup(ub, a->stream, UB_STREAM);
	if (!s)
		return -ENOENT;
	return tio_ub_tl_signal(s->tl, a->seqno, a->error);
}

