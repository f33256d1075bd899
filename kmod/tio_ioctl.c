// SPDX-License-Identifier: GPL-2.0
/*
 * Command dispatch: one table, generated from the rows of tio_cmds.h,
 * serves ioctl(), io_uring commands and the records of TIO_IOC_SUBMIT, so
 * every path runs the same handlers through tio_dispatch(), which also
 * keeps the per-command statistics and fires the command tracepoints; the
 * hot commands take the direct dispatch of tio_dispatch.h, with the same
 * statistics and tracepoints.
 */
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/nospec.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>

#include "tio_dispatch.h"
#include "tio_priv.h"
#include "tio_trace.h"

/**
 * struct tio_op - one command
 * @cmd: its ioctl number; _IOC_NR(@cmd) indexes the table
 * @fn: the handler, on a kernel copy of the payload, for a call
 * @name: for debugfs
 * @nb: enum tio_nb
 * @kind: enum tio_kind
 */
struct tio_op {
	unsigned int cmd;
	int (*fn)(struct tio_file *tf, void *data, struct tio_call *call);
	const char *name;
	u8 nb;
	u8 kind;
};

/* Commands a record (SUBMIT's or the ring's) may not carry. */
static bool tio_op_nested(const struct tio_op *op)
{
	return op->kind == TIO_KIND_BATCH;
}

/*
 * Zero, or a build error where a row of tio_cmds.h disagrees with the
 * uapi (its payload struct is not the number's size, or does not fit a
 * record) or with its kind (a directly dispatched command that may sleep).
 */
#define TIO_CMD_CHECK(_name, type, _nb, _kind)				\
	BUILD_BUG_ON_ZERO(sizeof(struct type) != _IOC_SIZE(TIO_IOC_##_name) || \
			  sizeof(struct type) > TIO_CMD_PAYLOAD ||	\
			  (TIO_KIND_##_kind != TIO_KIND_TABLE &&	\
			   TIO_NB_##_nb != TIO_NB_INLINE))

static const struct tio_op tio_ops[] = {
#define TIO_CMD(_name, _fn, _type, _nb, _kind)				\
	[_IOC_NR(TIO_IOC_##_name)] = {					\
		.cmd = TIO_IOC_##_name +				\
		       TIO_CMD_CHECK(_name, _type, _nb, _kind),		\
		.fn = tio_cmd_##_fn,					\
		.name = #_name,						\
		.nb = TIO_NB_##_nb,					\
		.kind = TIO_KIND_##_kind,				\
	},
#include "tio_cmds.h"
};

/* TIO_NR_OPS is the largest number of the rows plus one. */
static_assert(ARRAY_SIZE(tio_ops) == TIO_NR_OPS);

static_assert(sizeof(struct tio_cmd) == 64);
static_assert(sizeof(struct tio_uring_inline) == 64);	/* in 80 bytes */

DEFINE_PER_CPU(struct tio_cmd_stats, tio_stats);

/*
 * Handler timing costs two clock reads per command (about a quarter of a
 * SUBMIT record's cost): off unless debugfs tensorio/timing turns it on.
 */
DEFINE_STATIC_KEY_FALSE(tio_stats_timing);

static inline void tio_stat_update(unsigned int nr, int ret, u64 t0)
{
	u64 ns;

	this_cpu_inc(tio_stats.op[nr].calls);
	if (unlikely(ret < 0))
		this_cpu_inc(tio_stats.op[nr].errors);
	if (!t0)
		return;
	ns = ktime_get_ns() - t0;
	this_cpu_add(tio_stats.op[nr].ns, ns);
	if (ns > this_cpu_read(tio_stats.op[nr].max_ns))
		this_cpu_write(tio_stats.op[nr].max_ns, ns);
}

/*
 * The command a number names: type and number decide, the size and the
 * direction bits are the caller's (checked by tio_payload_in/out()), so
 * that a structure can grow at the end without breaking older callers.
 */
static const struct tio_op *tio_op_lookup(unsigned int cmd)
{
	unsigned int nr = _IOC_NR(cmd);

	if (_IOC_TYPE(cmd) != TIO_IOC_MAGIC || nr >= TIO_NR_OPS)
		return NULL;
	nr = array_index_nospec(nr, TIO_NR_OPS);
	if (!tio_ops[nr].fn)
		return NULL;
	return &tio_ops[nr];
}

/*
 * The directions both the caller's number and the kernel's encode, as
 * drm_ioctl() decides: a payload is read only when both say _IOC_WRITE
 * and written back only when both say _IOC_READ.
 */
static inline unsigned int tio_op_dir(const struct tio_op *op, unsigned int cmd)
{
	return _IOC_DIR(cmd) & _IOC_DIR(op->cmd);
}

/*
 * tio_dispatch() - run one command's handler on a kernel copy of its
 * payload. Every submission form ends here.
 */
static __always_inline int tio_dispatch(struct tio_file *tf,
					const struct tio_op *op, void *data,
					struct tio_call *call)
{
	unsigned int nr = _IOC_NR(op->cmd);
	u64 t0 = 0;
	int ret;

	trace_tio_cmd_enter(tf, nr);
	if (static_branch_unlikely(&tio_stats_timing))
		t0 = ktime_get_ns();
	if (unlikely(op->nb == TIO_NB_WAIT)) {
		atomic_inc(&tf->nr_waits);
		ret = op->fn(tf, data, call);
		atomic_dec(&tf->nr_waits);
	} else {
		ret = op->fn(tf, data, call);
	}
	tio_stat_update(nr, ret, t0);
	trace_tio_cmd_exit(tf, nr, ret);
	return ret;
}

static_assert(sizeof(struct tio_payload) == TIO_CMD_PAYLOAD);

/*
 * Check a record's payload against its command's size: @usize bytes are
 * the caller's structure, the rest of the record must be zero; of a
 * structure longer than the kernel's only zero bytes may follow the
 * kernel's part. Return: 0, -EINVAL or -E2BIG.
 */
static int tio_record_size(const struct tio_cmd *rec, unsigned int usize,
			   unsigned int ksize)
{
	const u8 *bytes = rec->payload.bytes;

	if (unlikely(usize > TIO_CMD_PAYLOAD))
		return -EINVAL;
	/* Every payload is whole words: the tail checked a word at a time. */
	if (likely(!(usize % sizeof(u64)))) {
		const u64 *w = (const u64 *)rec->payload.bytes;
		unsigned int i;
		u64 any = 0;

		for (i = usize / sizeof(u64); i < TIO_CMD_PAYLOAD / sizeof(u64); i++)
			any |= w[i];
		if (unlikely(any))
			return -EINVAL;
	} else if (unlikely(memchr_inv(bytes + usize, 0, TIO_CMD_PAYLOAD - usize))) {
		return -EINVAL;
	}
	if (unlikely(usize > ksize && memchr_inv(bytes + ksize, 0, usize - ksize)))
		return -E2BIG;
	return 0;
}

/**
 * tio_record_may_block() - would a record sleep for long (enum tio_nb)?
 * @rec: a kernel copy of the record
 *
 * Records that will fail their checks do not count; a wait's timeout is
 * read where the kernel's structure has it (zero past a shorter caller's,
 * by the record rules).
 *
 * Return: true when a non-blocking issue must leave it to io-wq.
 */
bool tio_record_may_block(const struct tio_cmd *rec)
{
	const struct tio_op *op = tio_op_lookup(rec->op);
	const void *p = rec->payload.bytes;

	if (!op || op->nb == TIO_NB_INLINE)
		return false;
	if (op->nb == TIO_NB_PUNT)
		return true;
	if (op->cmd == TIO_IOC_FENCE_WAIT)
		return ((const struct tio_fence_wait *)p)->timeout_ns != 0;
	return ((const struct tio_buf_wait *)p)->timeout_ns != 0;
}

/* A record's envelope and size checks: its command, or ERR_PTR(). */
static const struct tio_op *tio_record_check(const struct tio_cmd *rec)
{
	const struct tio_op *op;
	int ret;

	if (unlikely(rec->flags || rec->pad))
		return ERR_PTR(-EINVAL);
	op = tio_op_lookup(rec->op);
	if (unlikely(!op))
		return ERR_PTR(-ENOTTY);
	if (unlikely(tio_op_nested(op)))
		return ERR_PTR(-EINVAL);
	ret = tio_record_size(rec, _IOC_SIZE(rec->op), _IOC_SIZE(op->cmd));
	return unlikely(ret) ? ERR_PTR(ret) : op;
}

/**
 * tio_record_run() - run one record of a SUBMIT vector
 * @tf: the file
 * @rec: a kernel copy of the record; its payload is updated in place
 * @buf: scratch for the payload
 * @call: the call; new fds join its queue
 *
 * Return: the handler's result, or -EINVAL, -ENOTTY, -E2BIG when the
 * record is refused.
 */
int tio_record_run(struct tio_file *tf, struct tio_cmd *rec,
		   struct tio_payload *buf, struct tio_call *call)
{
	struct tio_payload *payload = (struct tio_payload *)rec->payload.bytes;
	const struct tio_op *op = tio_record_check(rec);
	unsigned int usize, ksize, dir, n;
	int ret;

	if (IS_ERR(op))
		return PTR_ERR(op);
	usize = _IOC_SIZE(rec->op);
	ksize = _IOC_SIZE(op->cmd);
	dir = tio_op_dir(op, rec->op);
	/*
	 * The handler works on a copy, as with ioctl(): a failed or
	 * write-only command leaves the record's payload as it was. The
	 * bytes past a shorter structure are zero: that is the zero
	 * extension.
	 */
	if (likely(dir & _IOC_WRITE))
		*buf = *payload;
	else
		memset(buf, 0, sizeof(*buf));
	n = call->n;
	ret = tio_dispatch(tf, op, buf, call);
	ret = tio_call_fds_returned(call, n, dir, usize, ksize, ret);
	if (ret < 0 || !(dir & _IOC_READ))
		return ret;
	if (likely(usize >= ksize))
		*payload = *buf;
	else
		memcpy(payload, buf, usize);	/* truncated out */
	return ret;
}

/**
 * tio_record_run_copy() - run a record that is already a private copy
 * @tf: the file
 * @rec: the kernel's own copy (the ring's stack copy); the handler works
 *	 on its payload directly
 * @call: the call; new fds join its queue
 * @out: set to the bytes of @rec's payload to write back (0: none)
 *
 * As tio_record_run() without the scratch copy: nothing but the caller
 * sees @rec, so the caller writes back only what the command returns.
 *
 * Return: as tio_record_run().
 */
int tio_record_run_copy(struct tio_file *tf, struct tio_cmd *rec,
			struct tio_call *call, unsigned int *out)
{
	const struct tio_op *op = tio_record_check(rec);
	unsigned int dir, n;
	int ret;

	*out = 0;
	if (IS_ERR(op))
		return PTR_ERR(op);
	dir = tio_op_dir(op, rec->op);
	if (unlikely(!(dir & _IOC_WRITE)))
		memset(rec->payload.bytes, 0, TIO_CMD_PAYLOAD);
	n = call->n;
	ret = tio_dispatch(tf, op, rec->payload.bytes, call);
	ret = tio_call_fds_returned(call, n, dir, _IOC_SIZE(rec->op),
				    _IOC_SIZE(op->cmd), ret);
	if (ret >= 0 && (dir & _IOC_READ))
		*out = min(_IOC_SIZE(rec->op), _IOC_SIZE(op->cmd));
	return ret;
}

/**
 * tio_cmd_submit() - TIO_IOC_SUBMIT: run a vector of command records
 * @tf: the calling file
 * @data: kernel copy of the struct tio_submit payload
 * @call: the call; the records' new fds join its queue
 *
 * One copy of the whole vector in, the records run in order, one copy of
 * the processed records out. Nothing is allocated per record.
 *
 * Return: the number of records that failed (0: all processed records
 * succeeded), or a negative errno when the vector itself was refused
 * (nothing ran; -EAGAIN for a non-blocking issue of a vector with a record
 * that may sleep for long) or could not be written back (records ran; the
 * fds they exported are given back, see tio_fd.c).
 */
int tio_cmd_submit(struct tio_file *tf, void *data, struct tio_call *call)
{
	struct tio_submit *s = data;
	struct tio_cmd __user *ucmds = u64_to_user_ptr(s->cmds_ptr);
	struct tio_payload buf;
	bool cont = s->flags & TIO_SUBMIT_F_CONTINUE;
	unsigned int i, failed = 0;
	struct tio_cmd *cmds;
	size_t bytes;
	int ret;

	if (!s->count || s->count > TIO_MAX_SUBMIT ||
	    (s->flags & ~TIO_SUBMIT_F_CONTINUE) || s->pad)
		return -EINVAL;
	bytes = (size_t)s->count * sizeof(*cmds);
	cmds = kvmalloc(bytes, GFP_KERNEL);
	if (!cmds)
		return -ENOMEM;
	if (copy_from_user(cmds, ucmds, bytes)) {
		ret = -EFAULT;
		goto out;
	}
	/* Nothing ran yet: io-wq can take the whole vector. */
	if (call->nonblock) {
		for (i = 0; i < s->count; i++) {
			if (tio_record_may_block(&cmds[i])) {
				ret = -EAGAIN;
				goto out;
			}
		}
	}
	for (i = 0; i < s->count;) {
		struct tio_cmd *rec = &cmds[i++];

		rec->result = tio_user_errno(tio_record_run(tf, rec, &buf, call));
		if (unlikely(rec->result < 0)) {
			failed++;
			if (!cont)
				break;
		}
	}
	s->done = i;
	ret = failed;
	if (copy_to_user(ucmds, cmds, (size_t)i * sizeof(*cmds)))
		ret = -EFAULT;
out:
	kvfree(cmds);
	return ret;
}

/*
 * Copy a payload in: a shorter structure is zero-extended, a longer one
 * accepted when its bytes past the kernel's are zero (-E2BIG otherwise),
 * as copy_struct_from_user() does.
 */
static int tio_payload_in(const struct tio_op *op, unsigned int cmd,
			  void *kbuf, const void __user *uptr)
{
	size_t ksize = _IOC_SIZE(op->cmd);

	if (!(tio_op_dir(op, cmd) & _IOC_WRITE)) {
		memset(kbuf, 0, ksize);
		return 0;
	}
	return copy_struct_from_user(kbuf, ksize, uptr, _IOC_SIZE(cmd));
}

/* Write a payload back: truncated to a shorter structure, a longer one's
 * tail cleared.
 */
static int tio_payload_out(const struct tio_op *op, unsigned int cmd,
			   void __user *uptr, const void *kbuf)
{
	size_t ksize = _IOC_SIZE(op->cmd), usize = _IOC_SIZE(cmd);

	if (!(tio_op_dir(op, cmd) & _IOC_READ))
		return 0;
	if (copy_to_user(uptr, kbuf, min(ksize, usize)))
		return -EFAULT;
	if (unlikely(usize > ksize) && clear_user(uptr + ksize, usize - ksize))
		return -EFAULT;
	return 0;
}

/*
 * tio_cmd_user_table() - run one command whose payload is in user memory,
 * through the table: every command, of every size
 * @tf: the file
 * @cmd: a TIO_IOC_* number, of any size the structure ever had
 * @uptr: the payload
 * @nonblock: io_uring's IO_URING_F_NONBLOCK issue: a command that may
 *	      sleep for long is not run (enum tio_nb)
 *
 * The ioctl() form, also used by io_uring commands that complete inline.
 * The payload is written back when the command succeeded and both the
 * caller's and the kernel's number have the _IOC_READ direction; fds the
 * command created are installed only after that write succeeded.
 *
 * Return: the handler's result; -ENOTTY for an unknown command, -EFAULT
 * when the payload cannot be copied, -E2BIG for a longer structure with
 * non-zero bytes past the kernel's, -EAGAIN for a command @nonblock
 * leaves to io-wq.
 */
static long tio_cmd_user_table(struct tio_file *tf, unsigned int cmd,
			       void __user *uptr, bool nonblock)
{
	struct tio_payload buf;
	const struct tio_op *op;
	struct tio_call call;
	int ret;

	op = tio_op_lookup(cmd);
	if (!op)
		return -ENOTTY;
	if (nonblock && op->nb != TIO_NB_INLINE)
		return -EAGAIN;
	ret = tio_payload_in(op, cmd, &buf, uptr);
	if (ret)
		return ret;
	tio_call_init(&call, nonblock);
	ret = tio_dispatch(tf, op, &buf, &call);
	ret = tio_call_fds_returned(&call, 0, tio_op_dir(op, cmd), _IOC_SIZE(cmd),
				    _IOC_SIZE(op->cmd), ret);
	if (ret >= 0 && tio_payload_out(op, cmd, uptr, &buf))
		ret = -EFAULT;
	if (ret >= 0)
		tio_call_install_fds(&call);
	else
		tio_call_abort_fds(&call);
	return ret;
}

/*
 * One hot command by ioctl() or a uring command's user pointer, @cmd a
 * constant equal to the caller's number: the caller's structure is the
 * kernel's (no zero extension, no tail to check), so the payload moves
 * as words (tio_words_in()). The rest is tio_cmd_user()'s: the payload is
 * written back only when the command succeeded, fds installed only after
 * that. Its handlers are TIO_NB_INLINE (SUBMIT and RING_ENTER decide
 * about @nonblock themselves): no -EAGAIN here.
 * Handler timing (debugfs tensorio/timing) is the table path's.
 */
static __always_inline long
tio_user_hot(struct tio_file *tf, void __user *uptr, bool nonblock,
	     const unsigned int cmd,
	     int (*fn)(struct tio_file *, void *, struct tio_call *))
{
	const unsigned int nr = _IOC_NR(cmd), size = _IOC_SIZE(cmd);
	struct tio_payload buf;
	struct tio_call call;
	int ret;

	BUILD_BUG_ON(size % sizeof(u64) || size > TIO_CMD_PAYLOAD);
	if (static_branch_unlikely(&tio_stats_timing))
		return tio_cmd_user_table(tf, cmd, uptr, nonblock);
	if (_IOC_DIR(cmd) & _IOC_WRITE) {
		if (unlikely(!tio_words_in(buf.w, uptr, size)))
			return -EFAULT;
	} else {
		memset(&buf, 0, sizeof(buf));
	}
	tio_call_init(&call, nonblock);
	trace_tio_cmd_enter(tf, nr);
	ret = fn(tf, &buf, &call);
	this_cpu_inc(tio_stats.op[nr].calls);
	if (unlikely(ret < 0))
		this_cpu_inc(tio_stats.op[nr].errors);
	trace_tio_cmd_exit(tf, nr, ret);
	if (ret >= 0 && (_IOC_DIR(cmd) & _IOC_READ) &&
	    unlikely(!tio_words_out(uptr, buf.w, size)))
		ret = -EFAULT;
	if (likely(ret >= 0))
		tio_call_install_fds(&call);
	else
		tio_call_abort_fds(&call);
	return ret;
}

/*
 * One function per directly dispatched command, out of line:
 * tio_cmd_user() stays a few compares and a tail call, for them and for
 * every other command.
 */
#define TIO_USER_HOT(_name, _fn)					\
static noinline long tio_user_##_fn(struct tio_file *tf, void __user *uptr, \
				    bool nonblock)			\
{									\
	return tio_user_hot(tf, uptr, nonblock, TIO_IOC_##_name,	\
			    tio_cmd_##_fn);				\
}

#define TIO_CMD(_name, _fn, _type, _nb, _kind)				\
	TIO_DIRECT(TIO_USER_HOT, USER, _name, _fn, _kind)
#include "tio_cmds.h"

/**
 * tio_cmd_user() - run one command whose payload is in user memory
 * @tf: the file
 * @cmd: a TIO_IOC_* number, of any size the structure ever had
 * @uptr: the payload
 * @nonblock: io_uring's IO_URING_F_NONBLOCK issue: a command that may
 *	      sleep for long is not run (enum tio_nb)
 *
 * The ioctl() form, also used by io_uring commands that complete inline:
 * the hot and batch commands at their kernel's number directly
 * (TIO_HOT_USER, tio_user_hot()), everything else through the table
 * (tio_cmd_user_table()).
 *
 * Return: the handler's result; -ENOTTY for an unknown command, -EFAULT
 * when the payload cannot be copied, -E2BIG for a longer structure with
 * non-zero bytes past the kernel's, -EAGAIN for a command @nonblock
 * leaves to io-wq.
 */
long tio_cmd_user(struct tio_file *tf, unsigned int cmd, void __user *uptr,
		  bool nonblock)
{
#define TIO_HOT_RUN(cmd, fn) tio_user_##fn(tf, uptr, nonblock)
	switch (cmd) {
#define TIO_CMD TIO_HOT_USER
#include "tio_cmds.h"
	default:
		break;
	}
#undef TIO_HOT_RUN
	return tio_cmd_user_table(tf, cmd, uptr, nonblock);
}

/**
 * tio_cmd_kernel() - the kernel's number for a caller's command number
 * @cmd: a TIO_IOC_* number, of any size
 *
 * Return: the number the kernel's structure has, or 0 when unknown.
 */
unsigned int tio_cmd_kernel(unsigned int cmd)
{
	const struct tio_op *op = tio_op_lookup(cmd);

	return op ? op->cmd : 0;
}

/**
 * tio_cmd_copy_in() - read a payload as tio_cmd_user() does
 * @cmd: the caller's number (a known command)
 * @kbuf: the kernel's structure
 * @uptr: the caller's
 *
 * Return: 0, -EFAULT or -E2BIG.
 */
int tio_cmd_copy_in(unsigned int cmd, void *kbuf, const void __user *uptr)
{
	return tio_payload_in(tio_op_lookup(cmd), cmd, kbuf, uptr);
}

/**
 * tio_cmd_copy_out() - write a payload back as tio_cmd_user() does
 * @cmd: the caller's number (a known command)
 * @uptr: the caller's structure
 * @kbuf: the kernel's
 *
 * Return: 0 or -EFAULT.
 */
int tio_cmd_copy_out(unsigned int cmd, void __user *uptr, const void *kbuf)
{
	return tio_payload_out(tio_op_lookup(cmd), cmd, uptr, kbuf);
}

/**
 * tio_cmd_poll() - run a wait command's handler without counting it
 * @tf: the file
 * @cmd: TIO_IOC_FENCE_WAIT or TIO_IOC_BUF_WAIT
 * @data: kernel copy of the payload, its timeout set to 0 (poll)
 *
 * The first half of an io_uring wait, which tio_cmd_account() counts once
 * it completes, inline or parked.
 *
 * Return: the handler's result, -ENOTTY for an unknown command.
 */
int tio_cmd_poll(struct tio_file *tf, unsigned int cmd, void *data)
{
	const struct tio_op *op = tio_op_lookup(cmd);
	int ret;

	if (!op)
		return -ENOTTY;
	trace_tio_cmd_enter(tf, _IOC_NR(cmd));
	ret = op->fn(tf, data, NULL);
	trace_tio_cmd_exit(tf, _IOC_NR(cmd), ret);
	return ret;
}

/**
 * tio_ioctl() - the unlocked_ioctl of /dev/tensorio
 * @file: the open file
 * @cmd: a TIO_IOC_* number
 * @arg: user pointer to the command's payload
 *
 * Return: as tio_cmd_user().
 */
long tio_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	return tio_cmd_user(file->private_data, cmd, (void __user *)arg, false);
}

/**
 * tio_cmd_account() - count a command that completed outside tio_dispatch()
 * @cmd: its TIO_IOC_* number
 * @ret: its result
 * @ns: time spent in the kernel for it, 0 when not measured
 *
 * Used for io_uring waits that parked and completed later.
 */
void tio_cmd_account(unsigned int cmd, int ret, u64 ns)
{
	const struct tio_op *op = tio_op_lookup(cmd);
	unsigned int nr;

	if (!op)
		return;
	nr = _IOC_NR(op->cmd);
	this_cpu_inc(tio_stats.op[nr].calls);
	if (ret < 0)
		this_cpu_inc(tio_stats.op[nr].errors);
	if (ns)
		this_cpu_add(tio_stats.op[nr].ns, ns);
}

/**
 * tio_cmd_stats_show() - print the per-command counters, summed over CPUs
 * @m: the seq_file of debugfs tensorio/commands
 * @unused: seq_file private data
 *
 * Return: 0.
 */
int tio_cmd_stats_show(struct seq_file *m, void *unused)
{
	unsigned int nr;
	int cpu;

	seq_printf(m, "%-18s %12s %10s %16s %12s\n",
		   "command", "calls", "errors", "total_ns", "max_ns");
	for (nr = 0; nr < TIO_NR_OPS; nr++) {
		struct tio_cmd_stat sum = { 0 };

		if (!tio_ops[nr].fn)
			continue;
		for_each_possible_cpu(cpu) {
			const struct tio_cmd_stat *st =
				&per_cpu_ptr(&tio_stats, cpu)->op[nr];

			sum.calls += READ_ONCE(st->calls);
			sum.errors += READ_ONCE(st->errors);
			sum.ns += READ_ONCE(st->ns);
			sum.max_ns = max(sum.max_ns, READ_ONCE(st->max_ns));
		}
		seq_printf(m, "%-18s %12llu %10llu %16llu %12llu\n",
			   tio_ops[nr].name, sum.calls, sum.errors, sum.ns,
			   sum.max_ns);
	}
	return 0;
}

/**
 * tio_cmd_stats_reset() - zero the per-command counters
 *
 * Racy against commands running now, which may keep a stale value.
 */
void tio_cmd_stats_reset(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(&tio_stats, cpu), 0, sizeof(struct tio_cmd_stats));
}
