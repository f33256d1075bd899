// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The per-process device context: backend selection, the driver's INFO
 * and shutdown.
 *
 * Locking: tio_ctx_lock guards creation and destruction of the one
 * context; readers take the published pointer with an acquire load, so the
 * fast path takes no lock. tio_shutdown() refuses while objects live, so no
 * reader can hold a context that goes away.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tensorio/error.h>

#include "dev/dev_internal.h"

static pthread_mutex_t tio_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
/* Written under tio_ctx_lock, read with acquire (tio_ctx_get()). */
struct tio_ctx *tio__ctx_cur;
static int tio_ctx_create(struct tio_ctx **out)
{
	const char *want = getenv("TIO_BACKEND");
	char why[256] = "";
	struct tio_ctx *ctx;
	int ret;

	if (want && *want && strcmp(want, "kernel") && strcmp(want, "user"))
		return tio_raise_errno(EINVAL,
			"TIO_BACKEND=%s: unknown backend (use \"kernel\" or \"user\")",
			want);
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return tio_raise_errno(ENOMEM, "allocating the context");
	ctx->fd = -1;
	ctx->refs = TIO_CTX_HOLDER;	/* the published pointer's */
	ctx->page_size = (size_t)sysconf(_SC_PAGESIZE);
	if (!want || !*want || !strcmp(want, "kernel")) {
		ret = tio_backend_kernel_open(ctx, why, sizeof(why));
		if (!ret) {
			ctx->kind = TIO_BACKEND_KERNEL;
			ctx->ops = &tio_backend_kernel_ops;
			goto done;
		}
		if (want && *want) {
			free(ctx);
			/* The device file: OSError (ENOENT when it is missing). */
			return tio_raise_file_errno(ret,
				"TIO_BACKEND=kernel forced, but the kernel backend is unusable: %s",
				why);
		}
	}
	ret = tio_backend_user_open(ctx, why, sizeof(why));
	if (ret) {
		free(ctx);
		return tio_raise_errno(ret, "the user backend is unusable: %s", why);
	}
	ctx->kind = TIO_BACKEND_USER;
	ctx->ops = &tio_backend_user_ops;
done:
	*out = ctx;
	return 0;
}

/**
 * tio_ctx_get_slow() - the process' context, created on first use
 *
 * tio_ctx_get() (dev_internal.h) is the inline fast path.
 *
 * Return: the context, or NULL with an error raised.
 */
struct tio_ctx *tio_ctx_get_slow(void)
{
	struct tio_ctx *ctx;

	pthread_mutex_lock(&tio_ctx_lock);
	ctx = tio__ctx_cur;
	if (!ctx && !tio_ctx_create(&ctx))
		__atomic_store_n(&tio__ctx_cur, ctx, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&tio_ctx_lock);
	return ctx;
}

/**
 * tio_ctx_hold_current() - a reference on the process' context
 *
 * For objects that may outlive tio_shutdown() (batches): taken under the
 * lock, so that a concurrent tio_shutdown() cannot free the context first.
 *
 * Return: the context, or NULL with an error raised.
 */
struct tio_ctx *tio_ctx_hold_current(void)
{
	struct tio_ctx *ctx = tio_ctx_get();

	if (!ctx)
		return NULL;
	pthread_mutex_lock(&tio_ctx_lock);
	ctx = tio__ctx_cur;
	if (ctx)
		tio_ctx_hold(ctx, TIO_CTX_HOLDER);
	pthread_mutex_unlock(&tio_ctx_lock);
	if (!ctx)
		tio_raise_errno(ESHUTDOWN, "the context was shut down meanwhile");
	return ctx;
}

/** tio_ctx_put() - drop a reference (@share as taken); the last one closes the backend */
void tio_ctx_put(struct tio_ctx *ctx, int64_t share)
{
	if (__atomic_sub_fetch(&ctx->refs, share, __ATOMIC_ACQ_REL))
		return;
	ctx->ops->destroy(ctx);
	free(ctx);
}

/*
 * tio_exec()'s error path: the message names the command, the backend and,
 * where it can be told, the cause (explain.c).
 */
int tio_exec_failed(struct tio_ctx *ctx, const struct tio_cmd_desc *cmd,
		    const void *payload, int err)
{
	char why[200];

	tio_cmd_explain(ctx, cmd->op, payload, err, why, sizeof(why));
	return tio_raise_errno(err, "%s (%s backend)%s%s", cmd->name,
			       ctx->ops->name, *why ? ": " : "", why);
}

int tio_backend(void)
{
	struct tio_ctx *ctx = tio_ctx_get();

	return ctx ? ctx->kind : -1;
}

const char *tio_backend_name(void)
{
	struct tio_ctx *ctx = tio_ctx_get();

	return ctx ? ctx->ops->name : NULL;
}

int tio_driver_info(struct tio_driver_info *out)
{
	struct tio_ctx *ctx = tio_ctx_get();
	struct tio_info i;

	if (!ctx)
		return -1;
	memset(&i, 0, sizeof(i));
	if (tio_exec(ctx, &tio_cmds[TIO_CMD_INFO], &i))
		return -1;
	/* Field by field: the library's type, not the uapi's. */
	out->version = i.version;
	out->max_submit = i.max_submit;
	out->features = i.features;
	out->max_buf_size = i.max_buf_size;
	out->max_pinned = i.max_pinned;
	out->pinned = i.pinned;
	return 0;
}

int tio_shutdown(void)
{
	void (*on_shutdown)(struct tio_ctx *ctx);
	struct tio_ctx *ctx;
	int64_t live;

	pthread_mutex_lock(&tio_ctx_lock);
	ctx = tio__ctx_cur;
	if (!ctx)
		goto out;
	live = TIO_CTX_OBJECTS(__atomic_load_n(&ctx->refs, __ATOMIC_ACQUIRE));
	if (live) {
		pthread_mutex_unlock(&tio_ctx_lock);
		return tio_raise_errno(EBUSY, "tio_shutdown: %lld buffers or streams alive",
				       (long long)live);
	}
	__atomic_store_n(&tio__ctx_cur, NULL, __ATOMIC_RELEASE);
	on_shutdown = __atomic_load_n(&ctx->on_shutdown, __ATOMIC_ACQUIRE);
	if (on_shutdown)
		on_shutdown(ctx);
	tio_ctx_put(ctx, TIO_CTX_HOLDER);	/* batches still holding it keep it */
out:
	pthread_mutex_unlock(&tio_ctx_lock);
	return 0;
}

int64_t tio_debug_live_handles(void)
{
	struct tio_ctx *ctx = __atomic_load_n(&tio__ctx_cur, __ATOMIC_ACQUIRE);

	return ctx ? TIO_CTX_OBJECTS(__atomic_load_n(&ctx->refs, __ATOMIC_RELAXED)) : 0;
}
