/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Dispatch: what the driver knows of each command (the rows of
 * tio_cmds.h) and the direct dispatch of the hot ones. A caller's number
 * that is exactly the kernel's for a HOT command (or, from user memory, a
 * BATCH one) is checked with constants and its handler called directly,
 * not through the table's function pointer (an indirect call is a
 * retpoline thunk on mitigated machines). TIO_HOT_USER and TIO_HOT_RECORD
 * are that one dispatch, generated from the rows, for its two users:
 * tio_cmd_user() (ioctl() and uring pointer commands: the payload moved as
 * words from user memory, tio_ioctl.c) and tio_record_run_fast() (the
 * command ring and inline SQEs: records in the kernel's own copy). Every
 * other command, and every hot record that fails a check, takes the table
 * path, which gives the same results: the direct path only skips work
 * whose outcome the exact number already decides.
 */
#ifndef _TIO_DISPATCH_H
#define _TIO_DISPATCH_H

#include <linux/percpu.h>
#include <linux/uaccess.h>

#include "tio_priv.h"
#include "tio_trace.h"

/*
 * What a handler may do to the thread that issues it, for io_uring's
 * IO_URING_F_NONBLOCK issue, where nothing may sleep for long:
 * @TIO_NB_INLINE: GFP_KERNEL allocations and short locks (a buffer's
 *	mutex, a dma_resv lock, the file table), as io_uring's own issue
 *	paths allow: no waiting for I/O or for other parties; runs inline.
 *	BUF_ALLOC is CPU work (allocate and zero, bounded by max_buf_size,
 *	fatal signals checked).
 * @TIO_NB_PUNT: may wait for I/O or another driver (faulting user pages
 *	in, an exporter's attach and map): -EAGAIN, so that io_uring retries
 *	it from io-wq.
 * @TIO_NB_WAIT: waits for fences for up to its timeout (counted in
 *	nr_waits): a uring command parks (tio_uring.c), a record with a
 *	non-zero timeout makes its SUBMIT or ring enter punt.
 */
enum tio_nb {
	TIO_NB_INLINE,
	TIO_NB_PUNT,
	TIO_NB_WAIT,
};

/*
 * How a command is dispatched:
 * @TIO_KIND_TABLE: through the table (tio_ops[]), its handler called by
 *	pointer.
 * @TIO_KIND_HOT: a frequent command, dispatched directly (TIO_HOT_USER,
 *	TIO_HOT_RECORD); TIO_NB_INLINE, its structure whole words.
 * @TIO_KIND_BATCH: carries records (SUBMIT, RING_ENTER): dispatched
 *	directly from user memory as a hot command is, its fixed cost being
 *	spread over its records, and never itself a record; TIO_NB_INLINE (it
 *	decides about a non-blocking issue itself).
 */
enum tio_kind {
	TIO_KIND_TABLE,
	TIO_KIND_HOT,
	TIO_KIND_BATCH,
};

/*
 * The table's size: the largest command number plus one (a literal: the
 * _IOWR() numbers are not constant expressions in the kernel; tio_ioctl.c
 * checks it against the rows).
 */
#define TIO_NR_OPS	0x23

/*
 * TIO_DIRECT(X, path, NAME, fn, kind) - X(NAME, fn) for a row of
 * tio_cmds.h whose command is dispatched directly on @path, nothing for
 * any other: on USER (a payload in user memory) the HOT and BATCH
 * commands, on RECORD (a record in a kernel copy) the HOT ones.
 */
#define TIO_DIRECT(X, path, _name, _fn, _kind)				\
	TIO_DIRECT_##path##_##_kind(X, _name, _fn)
#define TIO_DIRECT_USER_TABLE(X, _name, _fn)
#define TIO_DIRECT_USER_HOT(X, _name, _fn)	X(_name, _fn)
#define TIO_DIRECT_USER_BATCH(X, _name, _fn)	X(_name, _fn)
#define TIO_DIRECT_RECORD_TABLE(X, _name, _fn)
#define TIO_DIRECT_RECORD_HOT(X, _name, _fn)	X(_name, _fn)
#define TIO_DIRECT_RECORD_BATCH(X, _name, _fn)

/*
 * The one dispatch of the hot commands: as TIO_CMD, TIO_HOT_USER or
 * TIO_HOT_RECORD makes tio_cmds.h the cases of a switch on a caller's
 * number, one for each command dispatched directly on that path. A case
 * returns TIO_HOT_RUN(number, fn): the includer's macro, given the
 * command's number and its handler's name without the tio_cmd_ prefix,
 * both constants. Every other number leaves the switch.
 */
#define TIO_HOT_USER(_name, _fn, _type, _nb, _kind)			\
	TIO_DIRECT(TIO_HOT_CASE, USER, _name, _fn, _kind)
#define TIO_HOT_RECORD(_name, _fn, _type, _nb, _kind)			\
	TIO_DIRECT(TIO_HOT_CASE, RECORD, _name, _fn, _kind)
/* A block of its own: one statement, whatever the includer does next. */
#define TIO_HOT_CASE(_name, _fn)					\
	{								\
	case TIO_IOC_##_name:						\
		return TIO_HOT_RUN(TIO_IOC_##_name, _fn);		\
	}

/*
 * Per-command statistics, per CPU so that the hot path only touches
 * CPU-local cache lines; readers sum them (tio_cmd_stats_show()). The
 * updates are not atomic against preemption: a rare lost update is
 * acceptable for statistics, a shared atomic in the dispatch path is not.
 */
struct tio_cmd_stat {
	u64 calls;
	u64 errors;
	u64 ns;
	u64 max_ns;
};

struct tio_cmd_stats {
	struct tio_cmd_stat op[TIO_NR_OPS];
};

DECLARE_PER_CPU(struct tio_cmd_stats, tio_stats);

/*
 * INFO is here, inline: the ring runs it in its loop (in the slot:
 * tio_ring_info()). The TIO_FEAT_* bits it reports, a constant:
 */
static __always_inline u64 tio_info_features(void)
{
	u64 features = TIO_FEAT_BUFFERS | TIO_FEAT_PIN_USER | TIO_FEAT_DMABUF |
		       TIO_FEAT_SUBMIT | TIO_FEAT_STREAMS | TIO_FEAT_SYNC_FILE |
		       TIO_FEAT_DMA_RESV | TIO_FEAT_RING | TIO_FEAT_DOORBELL;

	if (IS_ENABLED(CONFIG_IO_URING))
		features |= TIO_FEAT_URING_CMD | TIO_FEAT_ASYNC_WAIT;
	return features;
}

/*
 * INFO's outputs, field by field: its inputs (flags and pad) are left
 * alone, and a compound literal would clear the whole structure first.
 */
static __always_inline void tio_info_set(struct tio_info *info)
{
	info->version = TIO_UAPI_VERSION;
	info->features = tio_info_features();
	info->max_buf_size = READ_ONCE(tio_max_buf_size);
	info->max_pinned = READ_ONCE(tio_max_pinned);
	info->pinned = atomic64_read(&tio_pinned_total);
	info->max_submit = TIO_MAX_SUBMIT;
}

/*
 * INFO run outside the table (a ring slot, an inline SQE): its two inputs
 * read once each, and the statistics and entry tracepoint the table path
 * keeps. Return: 0, or -EINVAL for non-zero flags or pad.
 */
static __always_inline int tio_info_enter(struct tio_file *tf,
					  const struct tio_info *in)
{
	const unsigned int nr = _IOC_NR(TIO_IOC_INFO);

	trace_tio_cmd_enter(tf, nr);
	this_cpu_inc(tio_stats.op[nr].calls);
	if (likely(!(READ_ONCE(in->flags) | READ_ONCE(in->pad))))
		return 0;
	this_cpu_inc(tio_stats.op[nr].errors);
	return -EINVAL;
}

/**
 * tio_cmd_info() - TIO_IOC_INFO: driver version, features and limits
 * @tf: the calling file
 * @data: kernel copy of the struct tio_info payload
 * @call: the call
 *
 * Return: 0, or -EINVAL for non-zero flags or pad.
 */
static inline int tio_cmd_info(struct tio_file *tf, void *data,
			       struct tio_call *call)
{
	struct tio_info *info = data;

	if (info->flags || info->pad)
		return -EINVAL;
	tio_info_set(info);
	return 0;
}

/*
 * The table path for a record the hot path does not take. Its own local
 * for @out, so that the caller's stays in a register on the hot path
 * (its address is never taken there).
 */
static __always_inline int tio_record_run_slow(struct tio_file *tf,
					       struct tio_cmd *rec,
					       struct tio_call *call,
					       unsigned int *out)
{
	unsigned int o;
	int ret = tio_record_run_copy(tf, rec, call, &o);

	*out = o;
	return ret;
}

/* Bytes past @size in a record's payload are all zero. */
static __always_inline bool tio_tail_zero(const struct tio_cmd *rec,
					  unsigned int size)
{
	const u64 *w = (const u64 *)rec->payload.bytes;
	unsigned int i;
	u64 any = 0;

	for (i = size / sizeof(u64); i < TIO_CMD_PAYLOAD / sizeof(u64); i++)
		any |= w[i];
	return !any;
}

/*
 * One hot record, @cmd a constant: its handler @fn is TIO_NB_INLINE (no
 * wait accounting) and its structure whole words. Handler timing (debugfs
 * tensorio/timing) is the table path's.
 */
static __always_inline int
tio_record_hot(struct tio_file *tf, struct tio_cmd *rec, struct tio_call *call,
	       unsigned int *out, const unsigned int cmd,
	       int (*fn)(struct tio_file *, void *, struct tio_call *))
{
	const unsigned int nr = _IOC_NR(cmd);
	int ret;

	BUILD_BUG_ON(_IOC_SIZE(cmd) % sizeof(u64) ||
		     _IOC_SIZE(cmd) > TIO_CMD_PAYLOAD);
	if (unlikely(rec->flags | rec->pad) ||
	    unlikely(!tio_tail_zero(rec, _IOC_SIZE(cmd))) ||
	    static_branch_unlikely(&tio_stats_timing))
		return tio_record_run_slow(tf, rec, call, out);
	if (!(_IOC_DIR(cmd) & _IOC_WRITE))
		memset(rec->payload.bytes, 0, TIO_CMD_PAYLOAD);
	trace_tio_cmd_enter(tf, nr);
	ret = fn(tf, rec->payload.bytes, call);
	this_cpu_inc(tio_stats.op[nr].calls);
	if (likely(ret >= 0)) {
		*out = _IOC_DIR(cmd) & _IOC_READ ? _IOC_SIZE(cmd) : 0;
	} else {
		this_cpu_inc(tio_stats.op[nr].errors);
		*out = 0;
	}
	trace_tio_cmd_exit(tf, nr, ret);
	return ret;
}

/* A record the direct dispatch runs: never one that may block. */
static __always_inline bool tio_record_direct(unsigned int cmd)
{
#define TIO_HOT_RUN(cmd, fn) true
	switch (cmd) {
#define TIO_CMD TIO_HOT_RECORD
#include "tio_cmds.h"
	default:
		break;
	}
#undef TIO_HOT_RUN
	return false;
}

/**
 * tio_record_run_fast() - run a record that is already a private copy
 * @tf: the file
 * @rec: the kernel's own copy; the handler works on its payload
 * @call: the call; new fds join its queue
 * @out: set to the bytes of @rec's payload to write back (0: none)
 *
 * tio_record_run_copy() with the hot commands dispatched directly.
 *
 * Return: as tio_record_run_copy().
 */
static __always_inline int tio_record_run_fast(struct tio_file *tf,
					       struct tio_cmd *rec,
					       struct tio_call *call,
					       unsigned int *out)
{
#define TIO_HOT_RUN(cmd, fn)						\
	tio_record_hot(tf, rec, call, out, cmd, tio_cmd_##fn)
	switch (rec->op) {
#define TIO_CMD TIO_HOT_RECORD
#include "tio_cmds.h"
	default:
		break;
	}
#undef TIO_HOT_RUN
	return tio_record_run_slow(tf, rec, call, out);
}

/*
 * A hot command's payload to and from user memory, @size a constant
 * multiple of eight: one user_access_begin() and a load or store per
 * word. copy_from_user() would add a call, a hardened-usercopy check of
 * the stack object (its size is not a constant there) and a string copy:
 * together more than the handler of a fence command. Each word is read
 * once.
 */

/* Six words: tio_words_in/out() and tio_uring_inline() are unrolled. */
static_assert(TIO_CMD_PAYLOAD == 6 * sizeof(u64));

/* Word @i of a payload of @size bytes, when there is one (unrolled). */
#define tio_word_get(dst, src, size, i, label)				\
	do {								\
		const unsigned int _w = (i);				\
									\
		if (_w < (size) / sizeof(u64))				\
			unsafe_get_user((dst)[_w], &(src)[_w], label);	\
	} while (0)
#define tio_word_put(dst, src, size, i, label)				\
	do {								\
		const unsigned int _w = (i);				\
									\
		if (_w < (size) / sizeof(u64))				\
			unsafe_put_user((src)[_w], &(dst)[_w], label);	\
	} while (0)

static __always_inline bool tio_words_in(u64 *dst, const void __user *src,
					 const unsigned int size)
{
	const u64 __user *s = src;

	if (!user_access_begin(src, size))
		return false;
	tio_word_get(dst, s, size, 0, fault);
	tio_word_get(dst, s, size, 1, fault);
	tio_word_get(dst, s, size, 2, fault);
	tio_word_get(dst, s, size, 3, fault);
	tio_word_get(dst, s, size, 4, fault);
	tio_word_get(dst, s, size, 5, fault);
	user_access_end();
	return true;
fault:
	user_access_end();
	return false;
}

static __always_inline bool tio_words_out(void __user *dst, const u64 *src,
					  const unsigned int size)
{
	u64 __user *d = dst;

	if (!user_access_begin(dst, size))
		return false;
	tio_word_put(d, src, size, 0, fault);
	tio_word_put(d, src, size, 1, fault);
	tio_word_put(d, src, size, 2, fault);
	tio_word_put(d, src, size, 3, fault);
	tio_word_put(d, src, size, 4, fault);
	tio_word_put(d, src, size, 5, fault);
	user_access_end();
	return true;
fault:
	user_access_end();
	return false;
}

#endif /* _TIO_DISPATCH_H */
