// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tio.Stream: an FFI object owning one backend timeline handle.
 *
 * Locking: s->lock guards the lazily mapped seqno and doorbell words.
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

	if (s->gpu_unregister)
		s->gpu_unregister(s);
	if (s->word && !(s->borrowed & 1))
		s->ctx->ops->unmap(s->ctx, (void *)s->word, s->ctx->page_size);
	if (s->bell && !(s->borrowed & 2))
		s->ctx->ops->unmap(s->ctx, (void *)s->bell, s->ctx->page_size);
	s->ctx->ops->exec(s->ctx, TIO_IOC_STREAM_DESTROY, &op);
	pthread_mutex_destroy(&s->lock);
	tio_ctx_put(s->ctx, 1);
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
	s->doorbell_offset = sc->doorbell_offset;
	s->ctx = ctx;
	pthread_mutex_init(&s->lock, NULL);
	tio_ctx_hold(ctx, 1);
	*out = s;
	return 0;
}

_Static_assert(TIO_STREAM_DOORBELL == TIO_STREAM_F_DOORBELL,
	       "tensorio/stream.h and the uapi name the same flag");

int tio_stream_create_flags(uint32_t flags, tio_stream_t **out)
{
	const struct tio_cmd_desc *cmd = &tio_cmds[TIO_CMD_STREAM_CREATE];
	struct tio_ctx *ctx = tio_ctx_get();
	int64_t v[1] = { flags };
	struct tio_cmd c;

	if (TIO_UNLIKELY(!ctx))
		return -1;
	if (flags & ~TIO_STREAM_DOORBELL)
		return tio_raise_errno(EINVAL, "tio_stream_create_flags: unknown flags %#x",
				       flags & ~TIO_STREAM_DOORBELL);
	if ((flags & TIO_STREAM_DOORBELL) && !(ctx->info.features & TIO_FEAT_DOORBELL))
		return tio_raise_errno(EOPNOTSUPP,
				       "stream doorbells: the driver has none (uapi %u.%u; 1.4 has them)",
				       ctx->info.version >> 16, ctx->info.version & 0xffff);
	if (tio_cmd_fill(cmd, c.payload.bytes, v, 1) || tio_exec(ctx, cmd, c.payload.bytes))
		return -1;
	return tio_stream_wrap(ctx, (struct tio_stream_create *)c.payload.bytes, out);
}

int tio_stream_create(tio_stream_t **out)
{
	return tio_stream_create_flags(0, out);
}

/*
 * Run a command on @s (v[0]) and its other arguments v[1..n-1], with the
 * context @s holds; the payload stays in @c.
 */
static inline __attribute__((always_inline)) int
tio_stream_cmd(enum tio_cmd_id id, tio_stream_t *s, int64_t *v,
	       int32_t n, struct tio_cmd *c)
{
	const struct tio_cmd_desc *cmd = &tio_cmds[id];

	if (TIO_UNLIKELY(!s))
		return tio_cmd_arg_error(cmd, 0, "a tio.Stream");
	return tio_cmd_on(cmd, s->ctx, s->handle, v, n, c->payload.bytes);
}

void tio_stream_decref(tio_stream_t *s)
{
	if (s)
		tio_object_decref(&s->header);
}

uint32_t tio_stream_handle(const tio_stream_t *s)
{
	return (uint32_t)s->handle;
}

int tio_fence_emit(tio_stream_t *s, uint64_t *seqno)
{
	int64_t v[1];
	struct tio_cmd c;

	if (tio_stream_cmd(TIO_CMD_FENCE_EMIT, s, v, 1, &c))
		return -1;
	*seqno = ((struct tio_fence_emit *)c.payload.bytes)->seqno;
	return 0;
}

int tio_fence_signal(tio_stream_t *s, uint64_t seqno, int error)
{
	int64_t v[3] = { 0, (int64_t)seqno, error };
	struct tio_cmd c;

	return tio_stream_cmd(TIO_CMD_FENCE_SIGNAL, s, v, 3, &c);
}

int tio_fence_wait(tio_stream_t *s, uint64_t seqno, int64_t timeout_ns, int *status)
{
	int64_t v[3] = { 0, (int64_t)seqno, timeout_ns };
	struct tio_cmd c;

	if (tio_stream_cmd(TIO_CMD_FENCE_WAIT, s, v, 3, &c))
		return -1;
	if (status)
		*status = ((struct tio_fence_wait *)c.payload.bytes)->status;
	return 0;
}

/*
 * The page at @offset of @s mapped into *@slot on first use (the word at
 * its start; @bit in @borrowed when it is the backend's own mapping);
 * NULL with an error raised that names @what.
 */
static void *tio_stream_map(tio_stream_t *s, void **slot, unsigned int bit,
			    uint64_t offset, int prot, const char *what)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	int ret;

	if (p)
		return p;
	pthread_mutex_lock(&s->lock);
	if (!*slot) {
		ret = s->ctx->ops->map(s->ctx, offset, s->ctx->page_size, prot, &p);
		if (ret < 0) {
			pthread_mutex_unlock(&s->lock);
			tio_raise_errno(-ret, "mapping the %s of stream %lld", what,
					(long long)s->handle);
			return NULL;
		}
		if (ret)
			s->borrowed |= bit;
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	}
	p = *slot;
	pthread_mutex_unlock(&s->lock);
	return p;
}

const volatile uint64_t *tio_stream_seqno_word(tio_stream_t *s)
{
	return tio_stream_map(s, (void **)&s->word, 1, s->seqno_offset, PROT_READ,
			      "seqno word");
}

volatile uint64_t *tio_stream_doorbell(tio_stream_t *s)
{
	if (!s->doorbell_offset) {
		tio_raise_errno(EINVAL, "stream %lld has no doorbell (create it with TIO_STREAM_DOORBELL)",
				(long long)s->handle);
		return NULL;
	}
	return tio_stream_map(s, (void **)&s->bell, 2, s->doorbell_offset,
			      PROT_READ | PROT_WRITE, "doorbell");
}

uint64_t tio_stream_signalled(tio_stream_t *s)
{
	const volatile uint64_t *w = tio_stream_seqno_word(s);
	const volatile uint64_t *b = __atomic_load_n(&s->bell, __ATOMIC_ACQUIRE);
	uint64_t v, rung;

	if (!w)
		return 0;
	v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
	/* Points the doorbell covers completed: they signal at the next look. */
	if (b) {
		rung = __atomic_load_n(b, __ATOMIC_ACQUIRE);
		if (rung > v)
			v = rung;
	}
	return v;
}

int tio_fence_export(tio_stream_t *s, uint64_t seqno,
				unsigned int flags, int *fd)
{
	int64_t v[3] = { 0, (int64_t)seqno, flags };
	struct tio_cmd c;

	if (tio_stream_cmd(TIO_CMD_FENCE_EXPORT, s, v, 3, &c))
		return -1;
	*fd = ((struct tio_fence_export *)c.payload.bytes)->fd;
	return 0;
}

int tio_fence_import(tio_stream_t *s, int fd, uint64_t *seqno)
{
	int64_t v[2] = { 0, fd };
	struct tio_cmd c;

	if (tio_stream_cmd(TIO_CMD_FENCE_IMPORT, s, v, 2, &c))
		return -1;
	*seqno = ((struct tio_fence_import *)c.payload.bytes)->seqno;
	return 0;
}
