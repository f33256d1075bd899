// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tio.Stream: an FFI object owning one backend timeline handle.
 *
 * Locking: s->lock guards the lazily mapped seqno word.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include <tensorio/error.h>

#include "dev/dev_internal.h"

static void tio_stream_finalize(void *self)
{
	struct tio_stream *s = self;
	struct tio_handle_op op = { .handle = (uint32_t)s->handle };

	if (s->gpu_release)
		s->gpu_release(s);
	if (s->word)
		s->ctx->ops->unmap(s->ctx, (void *)s->word, s->ctx->page_size);
	s->ctx->ops->exec(s->ctx, TIO_IOC_STREAM_DESTROY, &op);
	pthread_mutex_destroy(&s->lock);
	__atomic_fetch_sub(&s->ctx->live, 1, __ATOMIC_RELEASE);
}

/**
 * tio_stream_wrap() - make the object for a stream just created
 * @ctx: the context
 * @sc: the STREAM_CREATE payload (its handle is destroyed here on failure)
 * @out: the object
 *
 * Return: 0, or -1 with an error raised.
 */
int tio_stream_wrap(struct tio_ctx *ctx, const struct tio_stream_create *sc,
		    tio_stream_t **out)
{
	struct tio_handle_op op = { .handle = sc->handle };
	int32_t type = tio_stream_type_index();
	struct tio_stream *s = NULL;

	if (type >= 0)
		s = tio_object_alloc(sizeof(*s), type, tio_stream_finalize);
	if (!s) {
		ctx->ops->exec(ctx, TIO_IOC_STREAM_DESTROY, &op);
		return -1;
	}
	s->handle = sc->handle;
	s->context = (int64_t)sc->context;
	s->seqno_offset = sc->seqno_offset;
	s->ctx = ctx;
	pthread_mutex_init(&s->lock, NULL);
	__atomic_fetch_add(&ctx->live, 1, __ATOMIC_RELAXED);
	*out = s;
	return 0;
}

int tio_stream_create(tio_stream_t **out)
{
	struct tio_ctx *ctx = tio_ctx_get();
	struct tio_stream_create a;

	if (!ctx)
		return -1;
	memset(&a, 0, sizeof(a));
	if (tio_exec(ctx, TIO_IOC_STREAM_CREATE, &a))
		return -1;
	return tio_stream_wrap(ctx, &a, out);
}

void tio_stream_release(tio_stream_t *s)
{
	if (s)
		tio_object_decref(&s->header);
}

uint32_t tio_stream_handle(const tio_stream_t *s)
{
	return (uint32_t)s->handle;
}

int tio_stream_emit(tio_stream_t *s, uint64_t *seqno)
{
	struct tio_fence_emit a;

	memset(&a, 0, sizeof(a));
	a.stream = (uint32_t)s->handle;
	if (tio_exec(s->ctx, TIO_IOC_FENCE_EMIT, &a))
		return -1;
	*seqno = a.seqno;
	return 0;
}

int tio_stream_signal(tio_stream_t *s, uint64_t seqno, int error)
{
	struct tio_fence_signal a;

	memset(&a, 0, sizeof(a));
	a.stream = (uint32_t)s->handle;
	a.seqno = seqno;
	a.error = error;
	return tio_exec(s->ctx, TIO_IOC_FENCE_SIGNAL, &a);
}

int tio_stream_wait(tio_stream_t *s, uint64_t seqno, int64_t timeout_ns, int *status)
{
	struct tio_fence_wait a;

	memset(&a, 0, sizeof(a));
	a.stream = (uint32_t)s->handle;
	a.seqno = seqno;
	a.timeout_ns = timeout_ns;
	if (tio_exec(s->ctx, TIO_IOC_FENCE_WAIT, &a))
		return -1;
	if (status)
		*status = a.status;
	return 0;
}

const volatile uint64_t *tio_stream_seqno_word(tio_stream_t *s)
{
	const volatile uint64_t *w;
	void *p;
	int ret;

	w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
	if (w)
		return w;
	pthread_mutex_lock(&s->lock);
	if (!s->word) {
		ret = s->ctx->ops->map(s->ctx, s->seqno_offset, s->ctx->page_size,
				       PROT_READ, &p);
		if (ret) {
			pthread_mutex_unlock(&s->lock);
			tio_raise_errno(ret, "mapping the seqno word of stream %lld",
					(long long)s->handle);
			return NULL;
		}
		__atomic_store_n(&s->word, p, __ATOMIC_RELEASE);
	}
	w = s->word;
	pthread_mutex_unlock(&s->lock);
	return w;
}

uint64_t tio_stream_signalled(tio_stream_t *s)
{
	const volatile uint64_t *w = tio_stream_seqno_word(s);

	return w ? __atomic_load_n(w, __ATOMIC_ACQUIRE) : 0;
}

int tio_stream_export_sync_file(tio_stream_t *s, uint64_t seqno,
				unsigned int flags, int *fd)
{
	struct tio_fence_export a;

	memset(&a, 0, sizeof(a));
	a.stream = (uint32_t)s->handle;
	a.seqno = seqno;
	a.flags = flags;
	if (tio_exec(s->ctx, TIO_IOC_FENCE_EXPORT, &a))
		return -1;
	*fd = a.fd;
	return 0;
}

int tio_stream_import_sync_file(tio_stream_t *s, int fd, uint64_t *seqno)
{
	struct tio_fence_import a;

	memset(&a, 0, sizeof(a));
	a.stream = (uint32_t)s->handle;
	a.fd = fd;
	if (tio_exec(s->ctx, TIO_IOC_FENCE_IMPORT, &a))
		return -1;
	*seqno = a.seqno;
	return 0;
}
