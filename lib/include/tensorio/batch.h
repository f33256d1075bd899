/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Batches: queue FFI calls, run them with as few kernel entries as
 * possible, and read each call's result from its slot.
 *
 * - A call of a function with a driver encoding (the tio.buffer.* and
 *   tio.stream.* globals, or tio_batch_add_record()) becomes a command record;
 *   any other function runs in userspace at its position, after every
 *   earlier entry has run (asynchronous waits excepted).
 * - On the kernel backend, tio_batch_submit() sends adjacent records
 *   through the driver's command ring, one RING_ENTER per run of up to
 *   the ring's size (TIO_BATCH_CMD_RING, where the driver offers it), or
 *   through io_uring: in one vectored TIO_IOC_SUBMIT uring_cmd
 *   (TIO_BATCH_VECTORED), one uring_cmd each (TIO_BATCH_URING), or one
 *   ioctl each (TIO_BATCH_IOCTL); a batch with no userspace call in the
 *   middle costs one kernel entry (up to 256 records in the ring).
 * - A fence wait (tio.fence.wait, tio_batch_fence_wait()) is asynchronous:
 *   it parks in the kernel and its slot completes when the fence signals;
 *   entries after it do not wait for it. tio_batch_wait() collects them.
 * - Errors stay in their slot and never affect other entries, unless the
 *   batch was made with TIO_BATCH_STOP_ON_ERROR: then the first failure
 *   cancels every later entry (-ECANCELED).
 * - On the user backend the same entries run in userspace with the same
 *   results.
 *
 * A batch belongs to one thread at a time (its ring is single-issuer).
 * After tio_batch_reset() it can be refilled and submitted again.
 *
 * Layer: dev (lib/src/dev/)
 */
#ifndef TENSORIO_BATCH_H
#define TENSORIO_BATCH_H

#include <stdint.h>

#include <tensorio/any.h>
#include <tensorio/buffer.h>
#include <tensorio/object.h>
#include <tensorio/stream.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tio_batch tio_batch_t;

/* Flags of tio_batch_new(). */
#define TIO_BATCH_STOP_ON_ERROR 0x1u

/*
 * Submission modes (tio_batch_set_mode(); the default comes from the
 * environment variable TIO_BATCH_MODE: auto, ring, vectored, uring or
 * ioctl, else auto).
 */
#define TIO_BATCH_AUTO (-1)	/* the command ring where the driver has it, else vectored */
#define TIO_BATCH_VECTORED 0	/* adjacent records in one SUBMIT uring_cmd */
#define TIO_BATCH_URING 1	/* one uring_cmd per record */
#define TIO_BATCH_IOCTL 2	/* one ioctl per record */
#define TIO_BATCH_CMD_RING 3	/* adjacent records through the driver's command ring */

/* tio_batch_status() of an entry that has not completed. */
#define TIO_BATCH_PENDING 1

/* tio_batch_ring_flags(): what the ring got. */
#define TIO_BATCH_RING_SINGLE_ISSUER 0x1u
#define TIO_BATCH_RING_DEFER_TASKRUN 0x2u
#define TIO_BATCH_RING_FIXED_FILE 0x4u
#define TIO_BATCH_RING_REGISTERED_RING 0x8u

/**
 * tio_batch_new() - an empty batch
 * @flags: TIO_BATCH_STOP_ON_ERROR or 0
 * @out: the batch, freed with tio_batch_free()
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_batch_new(unsigned int flags, tio_batch_t **out);

/**
 * tio_batch_free() - free a batch and every result it holds
 * @b: the batch, or NULL
 *
 * Waits for asynchronous waits still parked (they end at their timeout).
 */
TIO_API void tio_batch_free(tio_batch_t *b);

/**
 * tio_batch_set_mode() - choose how records reach the driver
 * @b: the batch
 * @mode: TIO_BATCH_AUTO, TIO_BATCH_CMD_RING, TIO_BATCH_VECTORED,
 *	  TIO_BATCH_URING or TIO_BATCH_IOCTL
 *
 * Modes apply on the kernel backend with io_uring commands; elsewhere
 * records go to the backend's vectored submit whatever the mode. A
 * submission in TIO_BATCH_CMD_RING mode fails when the driver has no
 * command ring (TIO_BATCH_AUTO then uses TIO_BATCH_VECTORED).
 *
 * Return: 0, or -1 with a ValueError raised.
 */
TIO_API int tio_batch_set_mode(tio_batch_t *b, int mode);

/**
 * tio_batch_add() - queue a call of an FFI function
 * @b: the batch
 * @func: the Function (the batch takes a reference)
 * @args: its arguments (views; the batch keeps copies)
 * @nargs: their number
 *
 * A driver function's arguments are checked and encoded now.
 *
 * Return: the entry's index, or -1 with an error raised (bad arguments,
 * a batch already submitted and not reset).
 */
TIO_API int64_t tio_batch_add(tio_batch_t *b, tio_object_t *func,
			      const tio_any_t *args, int32_t nargs);

/**
 * tio_batch_add_record() - queue one raw command record
 * @b: the batch
 * @op: TIO_IOC_<OP> (not SUBMIT)
 * @payload: its payload (copied)
 * @size: the payload's size, at most TIO_CMD_PAYLOAD
 *
 * The slot's value is what the generic decoding gives (a Buffer for
 * BUF_ALLOC/PIN_USER/IMPORT, a Stream for STREAM_CREATE, the seqno, fd or
 * status for EMIT/IMPORT, EXPORT, WAIT; None otherwise); the record itself
 * is readable with tio_batch_record().
 *
 * Return: the entry's index, or -1 with an error raised.
 */
TIO_API int64_t tio_batch_add_record(tio_batch_t *b, unsigned int op,
				  const void *payload, size_t size);

/**
 * tio_batch_fence_emit() - queue FENCE_EMIT; the slot gets the seqno
 * @b: the batch
 * @s: the stream
 *
 * Return: the entry's index, or -1 with an error raised.
 */
TIO_API int64_t tio_batch_fence_emit(tio_batch_t *b, tio_stream_t *s);

/**
 * tio_batch_fence_signal() - queue FENCE_SIGNAL; the slot gets None
 * @b: the batch
 * @s: the stream
 * @seqno: signal every point up to this one
 * @error: 0, or a negative errno the points complete with
 *
 * Return: the entry's index, or -1 with an error raised.
 */
TIO_API int64_t tio_batch_fence_signal(tio_batch_t *b, tio_stream_t *s,
				       uint64_t seqno, int error);

/**
 * tio_batch_fence_wait() - queue an asynchronous wait for a point
 * @b: the batch
 * @s: the stream
 * @seqno: the point (it may be emitted by an earlier entry of the batch)
 * @timeout_ns: relative to tio_batch_submit(); negative: forever
 *
 * The slot gets the fence's status (0 or its error) once it signals.
 *
 * Return: the entry's index, or -1 with an error raised.
 */
TIO_API int64_t tio_batch_fence_wait(tio_batch_t *b, tio_stream_t *s,
				     uint64_t seqno, int64_t timeout_ns);

/**
 * tio_batch_submit() - run every queued entry
 * @b: the batch
 *
 * Returns once every entry but the asynchronous waits has completed.
 *
 * Return: 0 (the entries' own errors are in their slots), or -1 with an
 * error raised when the batch could not run at all.
 */
TIO_API int tio_batch_submit(tio_batch_t *b);

/**
 * tio_batch_wait() - wait for asynchronous waits to complete
 * @b: the batch
 * @min_done: return once this many entries in all have completed (a
 *	number above the entry count means all of them)
 * @timeout_ns: relative; negative waits without limit
 *
 * Return: the number of completed entries, or -1 with an error raised
 * (ETIME when the timeout passed first).
 */
TIO_API int64_t tio_batch_wait(tio_batch_t *b, int64_t min_done, int64_t timeout_ns);

/**
 * tio_batch_count() - entries queued
 * @b: the batch
 *
 * Return: the number of entries queued since the last reset.
 */
TIO_API int64_t tio_batch_count(const tio_batch_t *b);

/**
 * tio_batch_failed() - completed entries that failed
 * @b: the batch
 *
 * Return: the number of completed entries whose result is an error.
 */
TIO_API int64_t tio_batch_failed(const tio_batch_t *b);

/**
 * tio_batch_status() - the state of an entry
 * @b: the batch
 * @i: the entry
 *
 * Return: 0 done, TIO_BATCH_PENDING not yet, or a negative errno (driver
 * commands give theirs; a failed userspace function gives -EIO unless it
 * failed in a device call, whose errno it gives; skipped entries
 * -ECANCELED; an index out of range -ERANGE).
 */
TIO_API int tio_batch_status(const tio_batch_t *b, int64_t i);

/**
 * tio_batch_result() - an entry's value
 * @b: the batch
 * @i: the entry
 * @out: an owned copy of the value
 *
 * Return: 0, or -1 with the entry's error raised (or an error saying it is
 * pending or out of range).
 */
TIO_API int tio_batch_result(tio_batch_t *b, int64_t i, tio_any_t *out);

/**
 * tio_batch_error() - an entry's Error object
 * @b: the batch
 * @i: the entry
 *
 * Return: the Error (borrowed, valid until reset or free), or NULL.
 */
TIO_API tio_object_t *tio_batch_error(const tio_batch_t *b, int64_t i);

/**
 * tio_batch_record() - an entry's uapi command record, results written back
 * @b: the batch
 * @i: the entry
 *
 * Kept for programs built against TENSORIO_0; use tio_batch_record_get().
 *
 * Return: the record (valid until reset or free), or NULL for a userspace call.
 */
TIO_API const struct tio_cmd *tio_batch_record(const tio_batch_t *b, int64_t i);

/**
 * struct tio_record - a batch entry's command record, as the library shows it
 * @op: the command's TIO_IOC_* number
 * @result: 0, the command's negative errno, or TIO_BATCH_PENDING while it
 *	has not completed
 * @payload: the payload, the driver's outputs written back (valid until
 *	tio_batch_reset() or tio_batch_free())
 * @size: the payload's size in bytes (the command's, tio_command_info())
 *
 * The library's own type, not the uapi's struct tio_cmd (whose envelope
 * may grow with the driver): tio_batch_record() returns that envelope and
 * is kept for programs built against TENSORIO_0; new code uses
 * tio_batch_record_get().
 */
struct tio_record {
	unsigned int op;
	int32_t result;
	const void *payload;
	size_t size;
};

/**
 * tio_batch_record_get() - an entry's command record, results written back
 * @b: the batch
 * @i: the entry
 * @out: filled in
 *
 * Return: 0, or -1 with an error raised (ERANGE: an index out of range,
 * or an entry that is a userspace call and has no record).
 */
TIO_API int tio_batch_record_get(const tio_batch_t *b, int64_t i, struct tio_record *out);

/* tio_command_info() flags. */
#define TIO_COMMAND_WAITS 0x1u		/* may sleep: a batch parks it */
#define TIO_COMMAND_WRITES_BACK 0x2u	/* the driver writes outputs into the payload */
#define TIO_COMMAND_RUNS_RECORDS 0x4u	/* runs records itself (SUBMIT): never a record */

/**
 * struct tio_command_info - one driver command of the library's command table
 * @name: its uapi name without TIO_IOC_ ("BUF_ALLOC")
 * @global: the FFI global running it ("tio.buffer.alloc"), or NULL for
 *	the commands the library runs only itself (BUF_FREE and
 *	STREAM_DESTROY, by dropping the last reference; SUBMIT and the
 *	command ring's RING_SETUP and RING_ENTER)
 * @op: its TIO_IOC_* number, a record's op
 * @payload_size: the payload's size in bytes
 * @flags: TIO_COMMAND_*
 * @nargs: arguments @global requires
 * @nargs_max: arguments it takes at most
 */
struct tio_command_info {
	const char *name;
	const char *global;
	unsigned int op;
	uint32_t payload_size;
	uint32_t flags;
	int32_t nargs;
	int32_t nargs_max;
};

/**
 * tio_command_count() - how many commands the library knows
 *
 * Return: the number of rows of its command table; tio_command_info()
 * takes the indices below it.
 */
TIO_API int32_t tio_command_count(void);

/**
 * tio_command_info() - describe one command of the library's command table
 * @index: 0 to tio_command_count() - 1, in uapi order
 * @out: filled in (its strings are static)
 *
 * Tools list the commands from here (tioctl commands), so that a command
 * added to the library appears in them without another list.
 *
 * Return: 0, or -1 with an error raised (ERANGE) past the last command.
 */
TIO_API int tio_command_info(int32_t index, struct tio_command_info *out);

/**
 * tio_batch_reset() - drop every entry and result, keep the ring
 * @b: the batch
 *
 * Waits for asynchronous waits still parked, as tio_batch_free().
 */
TIO_API void tio_batch_reset(tio_batch_t *b);

/**
 * tio_batch_mode() - how the batch's records reached the driver
 * @b: the batch
 *
 * Return: the TIO_BATCH_* mode the last tio_batch_submit() used (never
 * TIO_BATCH_AUTO once submitted: TIO_BATCH_VECTORED on the user backend),
 * or the mode set, before the first.
 */
TIO_API int tio_batch_mode(const tio_batch_t *b);

/**
 * tio_batch_ring_flags() - what the io_uring ring was set up with
 * @b: the batch
 *
 * Return: TIO_BATCH_RING_* bits (0 before the first kernel submission or
 * on the user backend).
 */
TIO_API unsigned int tio_batch_ring_flags(const tio_batch_t *b);

/**
 * tio_batch_enters() - io_uring_enter() calls and ioctls the batch made
 * @b: the batch
 *
 * Counts the kernel entries of every submission since the batch was made
 * (for measurements and tests of the "one io_uring_enter" property); 0
 * where the backend has no asynchronous queue (the user backend).
 *
 * Return: the number of kernel entries, 0 on the user backend.
 */
TIO_API int64_t tio_batch_enters(const tio_batch_t *b);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_BATCH_H */
