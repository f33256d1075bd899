// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Errors that carry an errno: the device layer's way of raising an FFI
 * error whose kind follows the errno and whose message names the cause.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <tensorio/error.h>

#include "dev/dev_internal.h"

/* The errno of the calling thread's last device call (tio_errno()). */
TIO_TLS int tio__errno;

int tio_errno(void)
{
	return tio__errno;
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

static int vraise_errno(const char *kind, int err, const char *fmt, va_list ap)
{
	char what[400], text[96];

	if (err < 0)
		err = -err;
	vsnprintf(what, sizeof(what), fmt, ap);
	tio_errno_text(err, text, sizeof(text));
	tio_error_raise(kind ? kind : tio_errno_kind(err), "%s: %s", what, text);
	tio__errno = err;
	return -1;
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
