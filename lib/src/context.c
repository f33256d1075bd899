// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The per-process device context: backend selection, errno-carrying
 * errors, and the command names used in messages.
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

#include "dev_internal.h"

static pthread_mutex_t tio_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tio_ctx *tio_ctx_cur;	/* under tio_ctx_lock; read with acquire */
static __thread int tio_last_errno;

void tio_set_errno(int err)
{
	tio_last_errno = err;
}

int tio_errno(void)
{
	return tio_last_errno;
}

const char *tio_errno_kind(int err)
{
	switch (err) {
	case EINVAL: case E2BIG: case EOVERFLOW: case ERANGE:
		return "ValueError";
	case ENOMEM:
		return "MemoryError";
	case ETIME: case ETIMEDOUT:
		return "TimeoutError";
	case EOPNOTSUPP: case ENOTTY: case ENOSYS:
		return "NotImplementedError";
	case EPERM: case EACCES:
		return "PermissionError";
	case ENOENT:
		return "KeyError";
	case ECANCELED:
		return "CancelledError";
	default:
		return "OSError";
	}
}

static void tio_errno_text(int err, char *buf, size_t len)
{
	const char *name = strerrorname_np(err);

	/* E2BIG's strerror speaks of exec()'s argument list. */
	snprintf(buf, len, "%s (%s)", err == E2BIG ? "too large" : strerror(err),
		 name ? name : "?");
}

/**
 * tio_raise_errno() - raise an error for errno @err
 * @err: a positive or negative errno
 * @fmt: what failed
 *
 * The message is "<what>: <strerror> (<ENAME>)"; tio_errno() reports @err.
 *
 * Return: -1.
 */
static int vraise_errno(const char *kind, int err, const char *fmt, va_list ap)
{
	char what[400], text[96];

	if (err < 0)
		err = -err;
	vsnprintf(what, sizeof(what), fmt, ap);
	tio_errno_text(err, text, sizeof(text));
	tio_error_raise(kind ? kind : tio_errno_kind(err), "%s: %s", what, text);
	tio_last_errno = err;
	return -1;
}

int tio_raise_errno(int err, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vraise_errno(NULL, err, fmt, ap);
	va_end(ap);
	return r;
}

/**
 * tio_raise_file_errno() - raise an error for errno @err on a file path
 * @err: a positive or negative errno
 * @fmt: what failed, naming the path
 *
 * As tio_raise_errno(), but the kind is that of a failed system call on a
 * file, OSError (PermissionError for EACCES and EPERM), whatever the
 * errno: a missing file is OSError with ENOENT, as Python's
 * FileNotFoundError, not the KeyError of a missing handle.
 *
 * Return: -1.
 */
int tio_raise_file_errno(int err, const char *fmt, ...)
{
	int e = err < 0 ? -err : err;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vraise_errno(e == EACCES || e == EPERM ? "PermissionError" : "OSError",
			 err, fmt, ap);
	va_end(ap);
	return r;
}

/**
 * tio_error_from_errno() - an Error object for errno @err, without a backtrace
 * @err: a positive or negative errno
 * @what: what failed
 * @out: the Error (owned)
 *
 * Return: 0, or -1 (out of memory; nothing raised).
 */
int tio_error_from_errno(int err, const char *what, tio_object_t **out)
{
	char msg[320], text[96];

	if (err < 0)
		err = -err;
	tio_errno_text(err, text, sizeof(text));
	snprintf(msg, sizeof(msg), "%s: %s", what, text);
	return tio_error_new(tio_errno_kind(err), msg, "", NULL, out);
}

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
			return tio_raise_errno(ret,
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
 * tio_ctx_get() - the process' context, created on first use
 *
 * Return: the context, or NULL with an error raised.
 */
struct tio_ctx *tio_ctx_get(void)
{
	struct tio_ctx *ctx = __atomic_load_n(&tio_ctx_cur, __ATOMIC_ACQUIRE);

	if (ctx)
		return ctx;
	pthread_mutex_lock(&tio_ctx_lock);
	ctx = tio_ctx_cur;
	if (!ctx && !tio_ctx_create(&ctx))
		__atomic_store_n(&tio_ctx_cur, ctx, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&tio_ctx_lock);
	if (ctx)
		tio_device_register_globals();
	return ctx;
}

int tio_exec(struct tio_ctx *ctx, unsigned int op, void *payload)
{
	int ret = ctx->ops->exec(ctx, op, payload);
	char why[200];

	if (ret) {
		tio_cmd_explain(ctx, op, payload, ret, why, sizeof(why));
		return tio_raise_errno(ret, "%s (%s backend)%s%s", tio_op_name(op),
				       ctx->ops->name, *why ? ": " : "", why);
	}
	tio_last_errno = 0;
	return 0;
}

int tio_init(void)
{
	return tio_ctx_get() ? 0 : -1;
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

int tio_driver_info(struct tio_info *out)
{
	struct tio_ctx *ctx = tio_ctx_get();

	if (!ctx)
		return -1;
	memset(out, 0, sizeof(*out));
	return tio_exec(ctx, TIO_IOC_INFO, out);
}

int tio_shutdown(void)
{
	struct tio_ctx *ctx;
	int64_t live;

	pthread_mutex_lock(&tio_ctx_lock);
	ctx = tio_ctx_cur;
	if (!ctx)
		goto out;
	live = __atomic_load_n(&ctx->live, __ATOMIC_ACQUIRE);
	if (live) {
		pthread_mutex_unlock(&tio_ctx_lock);
		return tio_raise_errno(EBUSY, "tio_shutdown: %lld buffers or streams alive",
				       (long long)live);
	}
	__atomic_store_n(&tio_ctx_cur, NULL, __ATOMIC_RELEASE);
	ctx->ops->destroy(ctx);
	free(ctx);
out:
	pthread_mutex_unlock(&tio_ctx_lock);
	return 0;
}

int64_t tio_debug_live_handles(void)
{
	struct tio_ctx *ctx = __atomic_load_n(&tio_ctx_cur, __ATOMIC_ACQUIRE);

	return ctx ? __atomic_load_n(&ctx->live, __ATOMIC_RELAXED) : 0;
}

static const struct {
	unsigned int op;
	const char *name;
} tio_op_names[] = {
	{ TIO_IOC_INFO, "INFO" },
	{ TIO_IOC_BUF_ALLOC, "BUF_ALLOC" },
	{ TIO_IOC_BUF_PIN_USER, "BUF_PIN_USER" },
	{ TIO_IOC_BUF_FREE, "BUF_FREE" },
	{ TIO_IOC_BUF_INFO, "BUF_INFO" },
	{ TIO_IOC_BUF_SET_DESC, "BUF_SET_DESC" },
	{ TIO_IOC_BUF_EXPORT, "BUF_EXPORT" },
	{ TIO_IOC_BUF_IMPORT, "BUF_IMPORT" },
	{ TIO_IOC_BUF_ATTACH_FENCE, "BUF_ATTACH_FENCE" },
	{ TIO_IOC_BUF_WAIT, "BUF_WAIT" },
	{ TIO_IOC_STREAM_CREATE, "STREAM_CREATE" },
	{ TIO_IOC_STREAM_DESTROY, "STREAM_DESTROY" },
	{ TIO_IOC_FENCE_EMIT, "FENCE_EMIT" },
	{ TIO_IOC_FENCE_SIGNAL, "FENCE_SIGNAL" },
	{ TIO_IOC_FENCE_WAIT, "FENCE_WAIT" },
	{ TIO_IOC_FENCE_EXPORT, "FENCE_EXPORT" },
	{ TIO_IOC_FENCE_IMPORT, "FENCE_IMPORT" },
	{ TIO_IOC_SUBMIT, "SUBMIT" },
};

const char *tio_op_name(unsigned int op)
{
	size_t i;

	for (i = 0; i < sizeof(tio_op_names) / sizeof(tio_op_names[0]); i++)
		if (tio_op_names[i].op == op)
			return tio_op_names[i].name;
	return "unknown command";
}

size_t tio_op_size(unsigned int op)
{
	size_t i;

	for (i = 0; i < sizeof(tio_op_names) / sizeof(tio_op_names[0]); i++)
		if (tio_op_names[i].op == op)
			return _IOC_SIZE(op);
	return 0;
}
