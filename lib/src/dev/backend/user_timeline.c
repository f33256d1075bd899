// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The user backend's streams: timelines whose last signalled seqno lives
 * in a shared memfd page next to a futex word. Signal stores the seqno
 * (release), bumps the futex word and wakes every waiter; waiters sleep
 * on the futex without ub->lock, holding a reference on the timeline.
 *
 * A doorbell stream (TIO_STREAM_F_DOORBELL) has a second page whose first
 * word userspace or a GPU (a stream memory write) sets to the last point
 * that completed. Nothing wakes a waiter when it is written, so waiters
 * of a doorbell stream look at it: they spin for UB_BELL_SPIN_NS, then
 * sleep between looks, a little longer each time; the futex still wakes
 * them at once for a signal. The points it covers signal (cleanly, never
 * past the last emitted, never backwards) when a waiter or a wait sees it
 * (tio_ub_tl_ring()).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
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
	if (tl->bell)
		munmap(tl->bell, sizeof(*tl->bell));
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

/* Signal the points up to the doorbell's value; under ub->lock. */
void tio_ub_tl_ring(struct ub_tl *tl)
{
	uint64_t v;

	if (!tl->bell)
		return;
	v = __atomic_load_n(tl->bell, __ATOMIC_ACQUIRE);
	if (v > tl->emitted)
		v = tl->emitted;
	if (v > tl->signalled)
		tio_ub_tl_signal(tl, v, 0);	/* cannot fail without an error */
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

/* Whether point @seqno has signalled, or its doorbell rang. */
static bool ub_tl_done(const struct ub_tl *tl, uint64_t seqno)
{
	return __atomic_load_n(&tl->page->signalled, __ATOMIC_SEQ_CST) >= seqno ||
	       (tl->bell && __atomic_load_n(tl->bell, __ATOMIC_ACQUIRE) >= seqno);
}

static int64_t ub_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static void ub_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Look at a doorbell for UB_BELL_SPIN_NS, or up to @until (NULL: none). */
static void ub_tl_spin(const struct ub_tl *tl, uint64_t seqno,
		       const struct timespec *until)
{
	struct timespec now;
	int64_t end;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &now);
	end = ub_ns(&now) + UB_BELL_SPIN_NS;
	if (until && ub_ns(until) < end)
		end = ub_ns(until);
	do {
		for (i = 0; i < 64; i++) {
			if (ub_tl_done(tl, seqno))
				return;
			ub_relax();
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (ub_ns(&now) < end);
}

/*
 * The end of a nap of *@nap_ns (which then doubles, up to the most), or
 * @until when that comes first: then returns true.
 */
static bool ub_nap(struct timespec *nap, int64_t *nap_ns, const struct timespec *until)
{
	int64_t end;

	clock_gettime(CLOCK_MONOTONIC, nap);
	end = ub_ns(nap) + *nap_ns;
	if (*nap_ns < UB_BELL_NAP_MAX_NS)
		*nap_ns *= 2;
	if (until && ub_ns(until) <= end) {
		*nap = *until;
		return true;
	}
	nap->tv_sec = end / 1000000000;
	nap->tv_nsec = end % 1000000000;
	return false;
}

/*
 * Wait for @seqno of @tl (the caller holds a reference, not the lock).
 * Return: 0 with *status set, -ETIME, or -EINTR.
 */
int tio_ub_tl_wait(struct ub_state *ub, struct ub_tl *tl, uint64_t seqno,
		   unsigned int flags, int64_t timeout_ns, int *status)
{
	struct timespec ts, nap;
	int forever = timeout_ns < 0 && !(flags & TIO_WAIT_F_ABSOLUTE);
	int64_t nap_ns = UB_BELL_NAP_NS;

	if (!forever)
		ub_deadline(timeout_ns, flags, &ts);
	if (!ub_tl_done(tl, seqno) && !forever && !timeout_ns &&
	    !(flags & TIO_WAIT_F_ABSOLUTE))
		return -ETIME;
	if (tl->bell)
		ub_tl_spin(tl, seqno, forever ? NULL : &ts);
	for (;;) {
		const struct timespec *until = forever ? NULL : &ts;
		bool last = !forever;
		uint32_t f;
		long r;
		int err;

		/* Counted before the last look: see ub_tl_publish(). */
		__atomic_fetch_add(&tl->page->waiters, 1, __ATOMIC_SEQ_CST);
		f = __atomic_load_n(&tl->page->futex, __ATOMIC_SEQ_CST);
		if (ub_tl_done(tl, seqno)) {
			__atomic_fetch_sub(&tl->page->waiters, 1, __ATOMIC_RELAXED);
			break;
		}
		/* Nothing wakes a waiter for the doorbell: a nap, then a look. */
		if (tl->bell) {
			last = ub_nap(&nap, &nap_ns, until);
			until = &nap;
		}
		r = ub_futex(&tl->page->futex, FUTEX_WAIT_BITSET, f, until);
		err = errno;
		__atomic_fetch_sub(&tl->page->waiters, 1, __ATOMIC_RELAXED);
		if (r < 0 && err == ETIMEDOUT && last) {
			if (ub_tl_done(tl, seqno))
				break;
			return -ETIME;
		}
	}
	pthread_mutex_lock(&ub->lock);
	tio_ub_tl_ring(tl);
	*status = tio_ub_tl_status(tl, seqno);
	pthread_mutex_unlock(&ub->lock);
	return 0;
}

/* A doorbell: the memfd's second page, mapped read-write. */
static int ub_tl_bell(struct tio_ctx *ctx, struct ub_tl *tl)
{
	void *p;

	p = mmap(NULL, ctx->page_size, PROT_READ | PROT_WRITE, MAP_SHARED, tl->memfd,
		 (off_t)ctx->page_size);
	if (p == MAP_FAILED)
		return -errno;
	tl->bell = p;
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
	if ((a->flags & ~TIO_STREAM_F_DOORBELL) || a->pad ||
	    a->fence_timeout_ms > UB_FENCE_TIMEOUT_MS)
		return -EINVAL;
	tl = calloc(1, sizeof(*tl));
	o = calloc(1, sizeof(*o));
	if (!tl || !o) {
		ret = -ENOMEM;
		goto err_free;
	}
	ret = tio_ub_memfd("tensorio-seqno", ctx->page_size *
			   (a->flags & TIO_STREAM_F_DOORBELL ? 2 : 1), &tl->memfd);
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
	if (a->flags & TIO_STREAM_F_DOORBELL) {
		ret = ub_tl_bell(ctx, tl);
		if (ret)
			goto err_put;
	}
	o->type = UB_STREAM;
	o->fd = -1;
	o->dmabuf = -1;
	o->tl = tl;
	pthread_mutex_lock(&ub->lock);
	tl->context = ub->next_context++;
	ret = tio_ub_insert(ub, o);
	pthread_mutex_unlock(&ub->lock);
	if (ret)
		goto err_put;
	a->handle = o->handle;
	a->seqno_offset = (uint64_t)o->handle << UB_HANDLE_SHIFT;
	a->context = tl->context;
	a->fence_timeout_ms = a->fence_timeout_ms ?: UB_FENCE_TIMEOUT_MS;
	a->doorbell_offset = tl->bell ? a->seqno_offset + ctx->page_size : 0;
	return 0;

err_put:
	tio_ub_tl_put(tl);	/* its only reference */
	free(o);
	return ret;
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
	tio_ub_tl_ring(tl);
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

