/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The per-process device context and its backend.
 *
 * The context is created on first use (thread-safe). Its backend is
 * "kernel" when /dev/tensorio opens and reports buffers and streams, else
 * "user", a userspace emulation with the same semantics (memfd + mlock
 * buffers, futex timelines). TIO_BACKEND=kernel|user in the environment
 * forces one; when the forced one cannot be used, every call fails with an
 * error that says why.
 *
 * Every function of the device API returns 0 (or a documented value) on
 * success and -1 with an error raised in the calling thread on failure
 * (tensorio/error.h); tio_errno() gives the errno behind that error.
 *
 * Layer: dev (lib/src/dev/)
 */
#ifndef TENSORIO_CONTEXT_H
#define TENSORIO_CONTEXT_H

#include <stdint.h>

#include <linux/tensorio.h>

#include <tensorio/dlpack.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A device is a DLPack DLDevice. */
typedef DLDevice tio_device_t;

/* Backends. */
#define TIO_BACKEND_KERNEL 1
#define TIO_BACKEND_USER 2

/**
 * tio_init() - create the process' context now (otherwise done on first use)
 *
 * Also registers the tio.* FFI globals (tio_device_register_globals()).
 *
 * Return: 0, or -1 with an error raised (e.g. a forced backend unusable).
 */
TIO_API int tio_init(void);

/**
 * tio_backend() - the context's backend
 *
 * Return: TIO_BACKEND_KERNEL or TIO_BACKEND_USER, or -1 with an error raised.
 */
TIO_API int tio_backend(void);

/**
 * tio_backend_name() - the context's backend as text
 *
 * Return: "kernel", "user", or NULL with an error raised.
 */
TIO_API const char *tio_backend_name(void);

/**
 * struct tio_driver_info - the driver's version, features and limits
 * @version: TIO_UAPI_VERSION of the driver (major << 16 | minor)
 * @features: TIO_FEAT_* (uapi/linux/tensorio.h)
 * @max_buf_size: largest buffer, bytes
 * @max_pinned: pinned bytes allowed to one file
 * @pinned: pinned bytes now
 * @max_submit: records in one SUBMIT
 *
 * The library's own type, not the uapi's struct tio_info: the library's
 * ABI moves only with its own symbol versions, never because the driver's
 * structure grows.
 */
struct tio_driver_info {
	uint32_t version;
	uint32_t max_submit;
	uint64_t features;
	uint64_t max_buf_size;
	uint64_t max_pinned;
	uint64_t pinned;
};

/**
 * tio_driver_info() - the driver's version, features and limits
 * @out: filled in (the user backend reports what it emulates)
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_driver_info(struct tio_driver_info *out);

/**
 * tio_shutdown() - close the context and its backend
 *
 * The next call of the API creates a new context (the environment is read
 * again). Fails while buffers or streams are alive.
 *
 * Return: 0, or -1 with an error raised (EBUSY).
 */
TIO_API int tio_shutdown(void);

/**
 * tio_errno() - the errno of the last device error raised in this thread
 *
 * Return: a positive errno (EINVAL, ENOENT, ...), or 0 when the last
 * device call in this thread succeeded.
 */
TIO_API int tio_errno(void);

/**
 * tio_raise_errno() - raise an error that carries an errno
 * @err: a positive or negative errno
 * @fmt: printf format of what failed, naming its cause
 *
 * The error's kind follows the errno (ValueError for EINVAL, MemoryError
 * for ENOMEM, TimeoutError for ETIMEDOUT, ... OSError otherwise); its
 * message is "<what>: <strerror> (<ENAME>)"; tio_errno() then reports
 * @err. For libraries built on libtensorio (libtensorio-net) that report
 * errors the way its own calls do.
 *
 * Return: -1, so that a failing function can "return tio_raise_errno(...)".
 */
TIO_API int tio_raise_errno(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * tio_debug_live_handles() - buffers and streams alive in the context
 *
 * Return: their number (0 when no context exists).
 */
TIO_API int64_t tio_debug_live_handles(void);

/**
 * tio_device_register_globals() - register the tio.* global functions
 * (tio.buffer.alloc, tio.fence.signal, ...) in the FFI registry
 *
 * Done by tio_init(); a program that looks the globals up calls this (or
 * tio_init()) once first. Not done when the library loads, nor by the
 * first buffer or stream, so that a program using only the FFI core or
 * only the C API sees no extra globals.
 *
 * Return: 0.
 */
TIO_API int tio_device_register_globals(void);

/** tio_device_cpu() - the CPU device, where tensorio buffers live */
static inline tio_device_t tio_device_cpu(void)
{
	tio_device_t d;

	d.device_type = kDLCPU;
	d.device_id = 0;
	return d;
}

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_CONTEXT_H */
