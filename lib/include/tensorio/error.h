/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Errors: Error objects (kind, message, backtrace, cause) and the
 * thread-local "raised" error through which every API function and every
 * FFI call reports failure: it returns -1 and leaves the error raised in
 * the calling thread; the caller takes it with tio_error_move_from_raised()
 * or passes -1 on up (the error crosses call boundaries as it is).
 *
 * Layer: ffi (lib/src/ffi/, the FFI core)
 */
#ifndef TENSORIO_ERROR_H
#define TENSORIO_ERROR_H

#include <stdint.h>

#include <tensorio/any.h>
#include <tensorio/object.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Backtrace update modes (the cell's update_backtrace). */
#define TIO_BACKTRACE_REPLACE 0
#define TIO_BACKTRACE_APPEND 1

/**
 * struct tio_error_cell - what follows the header of an Error (TVM FFI ABI)
 * @kind: "ValueError", "TypeError", ... (NUL-terminated)
 * @message: the message (NUL-terminated)
 * @backtrace: the backtrace, most recent call first, one frame a line;
 *	empty until first read with tio_error_backtrace() (symbolised lazily)
 * @update_backtrace: replaces or appends to @backtrace
 * @cause_chain: the error that caused this one, or NULL (owned)
 * @extra_context: any object recording more about the error, or NULL (owned)
 */
typedef struct tio_error_cell {
	tio_byte_array_t kind;
	tio_byte_array_t message;
	tio_byte_array_t backtrace;
	void (*update_backtrace)(void *self, const tio_byte_array_t *backtrace,
				 int32_t mode);
	tio_object_t *cause_chain;
	tio_object_t *extra_context;
} tio_error_cell_t;

/**
 * struct tio_error_obj - an Error object (96 bytes, then its text)
 * @header: the object header (type TIO_TYPE_ERROR)
 * @cell: the TVM FFI error cell
 */
typedef struct tio_error_obj {
	tio_object_t header;
	tio_error_cell_t cell;
} tio_error_obj_t;

TIO_STATIC_ASSERT(sizeof(tio_error_obj_t) == 96, "Error object is 96 bytes");

/**
 * tio_error_new() - create an Error
 * @kind: its kind, e.g. "ValueError"
 * @message: its message
 * @backtrace: its backtrace, or NULL to capture the caller's stack now
 * @cause: the error that caused it, or NULL; a new reference is taken
 * @out: the new Error (owned by the caller)
 *
 * Return: 0, or -1 (out of memory; nothing is raised then).
 */
TIO_API int tio_error_new(const char *kind, const char *message,
			  const char *backtrace, tio_object_t *cause,
			  tio_object_t **out);

/**
 * tio_error_create() - create an Error from counted strings
 * @kind: its kind
 * @message: its message
 * @backtrace: its backtrace, or NULL for none (not captured here)
 * @cause: the error that caused it, or NULL; a new reference is taken
 * @extra_context: an object recording more about it, or NULL; a new
 *	reference is taken
 * @out: the new Error (owned by the caller)
 *
 * What the TVM FFI error entry points are built on; the strings need no NUL.
 *
 * Return: 0, or -1 (bad arguments or out of memory; nothing is raised then,
 * as an error path must not fail by raising).
 */
TIO_API int tio_error_create(const tio_byte_array_t *kind, const tio_byte_array_t *message,
			     const tio_byte_array_t *backtrace, tio_object_t *cause,
			     tio_object_t *extra_context, tio_object_t **out);

/**
 * tio_error_raise() - raise a new error in the calling thread
 * @kind: its kind
 * @fmt: printf format of its message
 *
 * Replaces (and drops) any error already raised. The backtrace is that
 * of the caller.
 *
 * Return: -1, so that a failing function can "return tio_error_raise(...)".
 */
TIO_API int tio_error_raise(const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * tio_error_raise_chained() - raise a new error whose cause is the error
 * currently raised (if any)
 * @kind: its kind
 * @fmt: printf format of its message
 *
 * Return: -1.
 */
TIO_API int tio_error_raise_chained(const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * tio_error_set_raised() - raise an existing Error
 * @err: the Error; a new reference is taken (the caller keeps its own)
 */
TIO_API void tio_error_set_raised(tio_object_t *err);

/**
 * tio_error_move_from_raised() - take the raised error, clearing it
 *
 * Return: the Error (owned by the caller), or NULL when none is raised.
 */
TIO_API tio_object_t *tio_error_move_from_raised(void);

/**
 * tio_error_peek_raised() - the raised error, left raised
 *
 * Return: the Error, borrowed (valid until the next raise or move in this
 * thread), or NULL.
 */
TIO_API tio_object_t *tio_error_peek_raised(void);

/**
 * tio_error_clear() - drop the raised error, if any
 */
TIO_API void tio_error_clear(void);

/**
 * tio_backtrace() - the calling thread's stack as text
 * @skip: innermost frames to leave out (the caller's own is frame 0)
 * @out: a new NUL-terminated string, to free() (NULL when none could be
 *	produced)
 *
 * Unwinds with libunwind (unw_backtrace(), DWARF CFI) and symbolises
 * with elfutils' libdwfl:
 * "#N 0xADDR function+off at file:line" where debug information exists,
 * "#N 0xADDR function+off (object)" otherwise. Most recent call first.
 * Setting TIO_BACKTRACE=0 in the environment disables capture (errors then
 * carry an empty backtrace).
 *
 * Return: 0, or -1 (out of memory, nothing raised).
 */
TIO_API int tio_backtrace(int skip, char **out);

/**
 * tio_error_kind() - the kind of an Error
 * @err: the Error
 *
 * Return: the kind ("ValueError", "OSError", ...), valid while @err lives.
 */
TIO_INLINE const char *tio_error_kind(const tio_object_t *err)
{
	return ((const tio_error_obj_t *)err)->cell.kind.data;
}

/**
 * tio_error_message() - the message of an Error
 * @err: the Error
 *
 * Return: the message, valid while @err lives.
 */
TIO_INLINE const char *tio_error_message(const tio_object_t *err)
{
	return ((const tio_error_obj_t *)err)->cell.message.data;
}

/**
 * tio_error_backtrace() - the backtrace of an Error ("" when none)
 * @err: the Error
 *
 * Raising an error records only the raw return addresses (well under a
 * microsecond); the first read symbolises them (libdwfl: hundreds of
 * microseconds) and stores the text in the cell, where later reads and
 * the TVM FFI cell's readers find it. Safe to call from several threads.
 *
 * Return: the text, valid as long as @err, most recent call first.
 */
TIO_API const char *tio_error_backtrace(const tio_object_t *err);

/**
 * tio_error_cause() - the cause of an Error (borrowed), or NULL
 * @err: the Error
 *
 * Return: the cause (no reference taken), or NULL.
 */
TIO_INLINE tio_object_t *tio_error_cause(const tio_object_t *err)
{
	return ((const tio_error_obj_t *)err)->cell.cause_chain;
}

/**
 * tio_error_extra_context() - the extra context of an Error (borrowed), or NULL
 * @err: the Error
 *
 * Return: the extra context (no reference taken), or NULL.
 */
TIO_INLINE tio_object_t *tio_error_extra_context(const tio_object_t *err)
{
	return ((const tio_error_obj_t *)err)->cell.extra_context;
}

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_ERROR_H */
