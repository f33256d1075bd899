// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fences between GPU streams and tensorio streams (tensorio/gpu.h).
 *
 * stream -> fence: on a stream with a doorbell, when the device has 64-bit
 * stream write operations, the GPU stream writes the point into the
 * doorbell (registered read-write) once the work before it is done: no
 * host callback, no system call; waiters see the doorbell (the backend's
 * business). Otherwise a host function signals the point through the
 * backend. Doorbell writes of one stream only grow: a write is enqueued
 * for a point beyond every earlier write, and from another GPU stream
 * only once the earlier writes landed (else the host function signals
 * it), so that no later write lands below an earlier one.
 *
 * fence -> stream: the GPU stream waits (GEQ) on the seqno word,
 * registered read-only; on a point a GPU stream is to write into the
 * doorbell, on the doorbell, where it shows first.
 *
 * A signal holds its tensorio stream (and so the registration of the page
 * written) until its host function ran or its write landed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tensorio/error.h>
#include <tensorio/gpu.h>

#include "dev/dev_internal.h"
#include "gpu/gpu_internal.h"

/* A registered page of a stream: its seqno page or its doorbell's. */
struct tio_gpu_pagereg {
	struct tio_gpu_reg reg;			/* first: s->gpu lists these */
	uint64_t dptr[TIO_GPU_MAX_DEV];		/* per device, 0 until asked */
};

/* Fences. */

/*
 * Whether @seqno was emitted on @s: 0, or -1 with an error raised. A
 * pending point is fine; the backend is asked directly (a poll), so that
 * the usual pending case raises nothing (an error captures a backtrace).
 */
static int tio_gpu_check_point(tio_stream_t *s, uint64_t seqno)
{
	const volatile uint64_t *w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
	struct tio_fence_wait a;
	int ret;

	if (seqno && w && __atomic_load_n(w, __ATOMIC_ACQUIRE) >= seqno)
		return 0;
	memset(&a, 0, sizeof(a));
	a.stream = (uint32_t)s->handle;
	a.seqno = seqno;
	ret = s->ctx->ops->exec(s->ctx, TIO_IOC_FENCE_WAIT, &a);
	if (ret && ret != -ETIME)
		return tio_raise_errno(ret, "point %llu of stream %lld",
				       (unsigned long long)seqno, (long long)s->handle);
	return 0;
}

void tio_gpu_signal_run(void *data, int error)
{
	struct tio_gpu_signal *sig = data;
	struct tio_gpu *g = sig->g;

	/* No vendor call here: the backend signals (an ioctl or a futex). */
	if (tio_fence_signal(sig->s, sig->seqno, error))
		tio_error_clear();
	pthread_mutex_lock(&g->done_lock);
	sig->next = g->done;
	__atomic_store_n(&g->done, sig, __ATOMIC_RELAXED);	/* tio_gpu_drain() */
	pthread_mutex_unlock(&g->done_lock);
}

/* Enqueue the host function that signals @sig; 0 or -1 raised. */
static int tio_gpu_signal_by_func(struct tio_gpu_stream *cs, struct tio_gpu_signal *sig)
{
	struct tio_gpu *g = cs->g;
	uintptr_t saved;
	int r;

	if (tio_gpu_enter(g, &g->devs[cs->device], &saved))
		return -1;
	r = g->ops->host_func(cs->st, sig);
	g->ops->leave(saved);
	if (r)
		return tio_gpu_raise(g, r, "%s (signal of point %llu)",
				     g->calls[TIO_GPU_HOST_FUNC],
				     (unsigned long long)sig->seqno);
	return 0;
}

static int tio_gpu_word_dptr_locked(struct tio_gpu_stream *cs, tio_stream_t *s,
				    const volatile uint64_t *w, int readonly,
				    uint64_t *out);

/*
 * Whether @sig can go by a doorbell write (see the top of the file); under
 * s->lock.
 */
static int tio_gpu_by_write(struct tio_gpu_stream *cs, tio_stream_t *s, uint64_t seqno)
{
	if (seqno <= s->gpu_upto)
		return 0;
	return !s->gpu_writer || s->gpu_writer == cs->st ||
	       __atomic_load_n(s->bell, __ATOMIC_ACQUIRE) >= s->gpu_upto;
}

/*
 * Enqueue the doorbell write of @sig when it can go that way: 1 when it
 * went, 0 when it takes a host function instead, -1 with an error raised.
 */
static int tio_gpu_signal_by_write(struct tio_gpu_stream *cs, struct tio_gpu_signal *sig)
{
	struct tio_gpu *g = cs->g;
	tio_stream_t *s = sig->s;
	uintptr_t saved;
	uint64_t dptr;
	int r, ret = 0;

	if (!g->devs[cs->device].write64 || !s->doorbell_offset)
		return 0;
	if (!tio_stream_doorbell(s))
		return -1;
	pthread_mutex_lock(&s->lock);
	if (!tio_gpu_by_write(cs, s, sig->seqno))
		goto out;
	ret = -1;
	if (tio_gpu_word_dptr_locked(cs, s, s->bell, 0, &dptr) ||
	    tio_gpu_enter(g, &g->devs[cs->device], &saved))
		goto out;
	r = g->ops->write64(cs->st, dptr, sig->seqno);
	g->ops->leave(saved);
	if (r) {
		tio_gpu_raise(g, r, "%s (point %llu into the doorbell of stream %lld)",
			      g->calls[TIO_GPU_WRITE64], (unsigned long long)sig->seqno,
			      (long long)s->handle);
		goto out;
	}
	s->gpu_upto = sig->seqno;
	s->gpu_writer = cs->st;
	ret = 1;
out:
	pthread_mutex_unlock(&s->lock);
	if (ret == 1) {
		pthread_mutex_lock(&g->done_lock);
		sig->next = g->writes;
		__atomic_store_n(&g->writes, sig, __ATOMIC_RELAXED);	/* tio_gpu_drain() */
		pthread_mutex_unlock(&g->done_lock);
	}
	return ret;
}

/* Signal emitted point @seqno of @s from @cs, one way or the other. */
static int tio_gpu_signal(struct tio_gpu_stream *cs, tio_stream_t *s, uint64_t seqno)
{
	struct tio_gpu *g = cs->g;
	struct tio_gpu_signal *sig;
	int r;

	sig = calloc(1, sizeof(*sig));
	if (!sig)
		return tio_raise_errno(ENOMEM, "fence signal");
	sig->g = g;
	sig->s = s;
	sig->seqno = seqno;
	tio_object_incref(&s->header);
	r = tio_gpu_signal_by_write(cs, sig);
	if (!r)
		r = tio_gpu_signal_by_func(cs, sig);
	if (r < 0) {
		tio_stream_decref(s);
		free(sig);
		return -1;
	}
	tio_gpu_live_add(g, 1);
	return 0;
}

int tio_gpu_stream_signal_fence(struct tio_gpu_stream *cs, tio_stream_t *s,
				uint64_t seqno)
{
	if (tio_gpu_ready(cs->g))
		return -1;
	tio_gpu_drain(cs->g);
	/* A point never emitted is refused now, not when the GPU gets there. */
	if (tio_gpu_check_point(s, seqno))
		return -1;
	return tio_gpu_signal(cs, s, seqno);
}

int tio_gpu_stream_record_fence(struct tio_gpu_stream *cs, tio_stream_t *s,
				uint64_t *seqno)
{
	uint64_t n;

	if (tio_gpu_ready(cs->g))
		return -1;
	tio_gpu_drain(cs->g);
	if (tio_fence_emit(s, &n))
		return -1;
	if (tio_gpu_signal(cs, s, n)) {
		/* The point must not stay pending forever: signal it failed. */
		tio_object_t *e = tio_error_move_from_raised();
		int err = tio_errno();

		tio_fence_signal(s, n, -ECANCELED);
		tio_error_set_raised(e);
		tio_set_errno(err);
		return -1;
	}
	*seqno = n;
	return 0;
}

/* The stream's finalizer: end every vendor's seqno page registration. */
static void tio_gpu_stream_release(void *obj)
{
	struct tio_stream *s = obj;

	tio_gpu_regs_free(s->gpu);
	s->gpu = NULL;
	s->gpu_unregister = NULL;
}

/*
 * @g's registration of the page of @w (@s's seqno page, read-only, or its
 * doorbell's), made on first use; under s->lock.
 */
static struct tio_gpu_pagereg *tio_gpu_pagereg(struct tio_gpu *g, tio_stream_t *s,
					       const volatile uint64_t *w, int readonly)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *addr = (void *)((uintptr_t)w & ~(uintptr_t)(page - 1));
	struct tio_gpu_pagereg *reg;
	struct tio_gpu_reg *r;
	uintptr_t saved;
	int ret;

	for (r = s->gpu; r; r = r->next)
		if (r->g == g && r->addr == addr)
			return (struct tio_gpu_pagereg *)r;
	reg = calloc(1, sizeof(*reg));
	if (!reg) {
		tio_raise_errno(ENOMEM, "seqno word registration");
		return NULL;
	}
	reg->reg.g = g;
	reg->reg.addr = addr;
	if (tio_gpu_enter(g, &g->devs[0], &saved))
		goto err_free;
	/* The seqno page is mapped read-only: the GPU only reads it. */
	ret = g->ops->host_register(addr, page, readonly);
	g->ops->leave(saved);
	if (ret) {
		tio_gpu_raise(g, ret, "%s%s of the %s of stream %lld",
			      g->calls[TIO_GPU_HOST_REGISTER], readonly ? "(READ_ONLY)" : "",
			      readonly ? "seqno word" : "doorbell", (long long)s->handle);
		goto err_free;
	}
	reg->reg.next = s->gpu;
	s->gpu = &reg->reg;
	s->gpu_unregister = tio_gpu_stream_release;
	tio_gpu_live_add(g, 1);
	return reg;

err_free:
	free(reg);
	return NULL;
}

/*
 * The device address of @w, in @s's seqno page or doorbell page, on @cs's
 * device; 0, or -1 with an error raised. Under s->lock.
 */
static int tio_gpu_word_dptr_locked(struct tio_gpu_stream *cs, tio_stream_t *s,
				    const volatile uint64_t *w, int readonly,
				    uint64_t *out)
{
	struct tio_gpu *g = cs->g;
	struct tio_gpu_pagereg *reg;
	uintptr_t saved;
	int r;

	reg = tio_gpu_pagereg(g, s, w, readonly);
	if (!reg)
		return -1;
	if (!reg->dptr[cs->device]) {
		if (tio_gpu_enter(g, &g->devs[cs->device], &saved))
			return -1;
		r = g->ops->host_dptr(&reg->dptr[cs->device], reg->reg.addr);
		g->ops->leave(saved);
		if (r) {
			reg->dptr[cs->device] = 0;
			return tio_gpu_raise(g, r, "%s of a %s", g->calls[TIO_GPU_HOST_DPTR],
					     readonly ? "seqno word" : "doorbell");
		}
	}
	*out = reg->dptr[cs->device] + ((uintptr_t)w - (uintptr_t)reg->reg.addr);
	return 0;
}

/*
 * The word a GPU stream waits on for point @seqno, and the device address
 * of it: the doorbell for a point a GPU stream is to write there and that
 * has not signalled, else the seqno word. 0, or -1 with an error raised.
 */
static int tio_gpu_wait_word(struct tio_gpu_stream *cs, tio_stream_t *s, uint64_t seqno,
			     uint64_t *out)
{
	struct tio_gpu *g = cs->g;
	struct tio_gpu_dev *d = &g->devs[cs->device];
	const volatile uint64_t *w;
	int ret, bell;

	w = tio_stream_seqno_word(s);
	if (!w)
		return -1;
	pthread_mutex_lock(&s->lock);
	bell = s->bell && seqno <= s->gpu_upto &&
	       __atomic_load_n(w, __ATOMIC_ACQUIRE) < seqno;
	if (!bell && (!g->devs[0].ro_register || !d->ro_register)) {
		pthread_mutex_unlock(&s->lock);
		return tio_raise_errno(EOPNOTSUPP,
			"fence -> stream: %s device %d cannot register read-only host memory (the seqno word)",
			g->name, cs->device);
	}
	ret = tio_gpu_word_dptr_locked(cs, s, bell ? s->bell : w, !bell, out);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int tio_gpu_stream_wait_fence(struct tio_gpu_stream *cs, tio_stream_t *s,
			      uint64_t seqno)
{
	struct tio_gpu *g = cs->g;
	struct tio_gpu_dev *d;
	uintptr_t saved;
	uint64_t w = 0;
	int r;

	/* The pages are registered in device 0's context. */
	if (!tio_gpu_device(g, 0))
		return -1;
	d = &g->devs[cs->device];
	if (!d->wait64)
		return tio_raise_errno(EOPNOTSUPP,
			"fence -> stream: %s device %d lacks 64-bit stream memory operations (%s)",
			g->name, cs->device, g->calls[TIO_GPU_WAIT64]);
	/* A point never emitted would stall the GPU for ever: refuse it. */
	if (tio_gpu_check_point(s, seqno))
		return -1;
	if (tio_gpu_wait_word(cs, s, seqno, &w))
		return -1;
	if (tio_gpu_enter(g, d, &saved))
		return -1;
	r = g->ops->wait64(cs->st, w, seqno);
	g->ops->leave(saved);
	if (r)
		return tio_gpu_raise(g, r, "%s (point %llu)", g->calls[TIO_GPU_WAIT64],
				     (unsigned long long)seqno);
	return 0;
}
