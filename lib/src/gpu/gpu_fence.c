// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fences between GPU streams and tensorio streams (tensorio/gpu.h): a
 * stream point signalled by a host function once the GPU work before it
 * is done, and a GPU stream that waits on a point by reading the
 * stream's seqno word, registered read-only with the vendor.
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

/* A registered seqno page. */
struct tio_gpu_wordreg {
	struct tio_gpu_reg reg;			/* first: s->gpu lists these */
	size_t off;				/* the word's offset in it */
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
	g->done = sig;
	pthread_mutex_unlock(&g->done_lock);
}

int tio_gpu_stream_signal_fence(struct tio_gpu_stream *cs, tio_stream_t *s,
				uint64_t seqno)
{
	struct tio_gpu *g = cs->g;
	struct tio_gpu_signal *sig;
	uintptr_t saved;
	int r;

	if (tio_gpu_ready(g))
		return -1;
	tio_gpu_drain(g);
	/* A point never emitted is refused now, not in the host function. */
	if (tio_gpu_check_point(s, seqno))
		return -1;
	sig = calloc(1, sizeof(*sig));
	if (!sig)
		return tio_raise_errno(ENOMEM, "fence signal");
	sig->g = g;
	sig->s = s;
	sig->seqno = seqno;
	tio_object_incref(&s->header);
	if (tio_gpu_enter(g, &g->devs[cs->device], &saved))
		goto err_free;
	r = g->ops->host_func(cs->st, sig);
	g->ops->leave(saved);
	if (r) {
		tio_gpu_raise(g, r, "%s (signal of point %llu)", g->calls[TIO_GPU_HOST_FUNC],
			      (unsigned long long)seqno);
		goto err_free;
	}
	tio_gpu_live_add(g, 1);
	return 0;

err_free:
	tio_stream_decref(s);
	free(sig);
	return -1;
}

int tio_gpu_stream_record_fence(struct tio_gpu_stream *cs, tio_stream_t *s,
				uint64_t *seqno)
{
	uint64_t n;

	if (tio_gpu_ready(cs->g))
		return -1;
	if (tio_fence_emit(s, &n))
		return -1;
	if (tio_gpu_stream_signal_fence(cs, s, n)) {
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

/* @g's registration of @s's seqno page, made on first use; under s->lock. */
static struct tio_gpu_wordreg *tio_gpu_wordreg(struct tio_gpu *g, tio_stream_t *s,
					       const volatile uint64_t *w)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct tio_gpu_reg *found, *prev;
	struct tio_gpu_wordreg *reg;
	uintptr_t saved;
	int r;

	found = tio_gpu_reg_find(s->gpu, g, &prev);
	if (found)
		return (struct tio_gpu_wordreg *)found;
	reg = calloc(1, sizeof(*reg));
	if (!reg) {
		tio_raise_errno(ENOMEM, "seqno word registration");
		return NULL;
	}
	reg->reg.g = g;
	reg->reg.addr = (void *)((uintptr_t)w & ~(uintptr_t)(page - 1));
	reg->off = (uintptr_t)w - (uintptr_t)reg->reg.addr;
	if (tio_gpu_enter(g, &g->devs[0], &saved))
		goto err_free;
	/* The page is mapped read-only: the GPU only reads it. */
	r = g->ops->host_register(reg->reg.addr, page, 1);
	g->ops->leave(saved);
	if (r) {
		tio_gpu_raise(g, r, "%s(READ_ONLY) of the seqno word of stream %lld",
			      g->calls[TIO_GPU_HOST_REGISTER], (long long)s->handle);
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

/* The device address of @s's seqno word on @cs's device; 0 or -1 raised. */
static int tio_gpu_word_dptr(struct tio_gpu_stream *cs, tio_stream_t *s, uint64_t *out)
{
	struct tio_gpu *g = cs->g;
	const volatile uint64_t *w;
	struct tio_gpu_wordreg *reg;
	uintptr_t saved;
	int r;

	w = tio_stream_seqno_word(s);
	if (!w)
		return -1;
	pthread_mutex_lock(&s->lock);
	reg = tio_gpu_wordreg(g, s, w);
	if (!reg)
		goto err_unlock;
	if (reg->dptr[cs->device])
		goto out;
	if (tio_gpu_enter(g, &g->devs[cs->device], &saved))
		goto err_unlock;
	r = g->ops->host_dptr(&reg->dptr[cs->device], reg->reg.addr);
	g->ops->leave(saved);
	if (r) {
		reg->dptr[cs->device] = 0;
		tio_gpu_raise(g, r, "%s of a seqno word", g->calls[TIO_GPU_HOST_DPTR]);
		goto err_unlock;
	}
out:
	*out = reg->dptr[cs->device] + reg->off;
	pthread_mutex_unlock(&s->lock);
	return 0;

err_unlock:
	pthread_mutex_unlock(&s->lock);
	return -1;
}

int tio_gpu_stream_wait_fence(struct tio_gpu_stream *cs, tio_stream_t *s,
			      uint64_t seqno)
{
	struct tio_gpu *g = cs->g;
	struct tio_gpu_dev *d;
	uintptr_t saved;
	uint64_t w = 0;
	int r;

	/* The seqno page is registered in device 0's context. */
	if (!tio_gpu_device(g, 0))
		return -1;
	d = &g->devs[cs->device];
	if (!d->wait64)
		return tio_raise_errno(EOPNOTSUPP,
			"fence -> stream: %s device %d lacks 64-bit stream memory operations (%s)",
			g->name, cs->device, g->calls[TIO_GPU_WAIT64]);
	if (!g->devs[0].ro_register || !d->ro_register)
		return tio_raise_errno(EOPNOTSUPP,
			"fence -> stream: %s device %d cannot register read-only host memory (the seqno word)",
			g->name, cs->device);
	/* A point never emitted would stall the GPU for ever: refuse it. */
	if (tio_gpu_check_point(s, seqno))
		return -1;
	if (tio_gpu_word_dptr(cs, s, &w))
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
