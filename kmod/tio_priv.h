/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tensorio internals shared between the driver's files.
 *
 * Locking:
 *  - tio_file.objs is an xarray; its internal spinlock serialises handle
 *    allocation and removal. Lookups run under RCU and take a reference
 *    with kref_get_unless_zero(), so no handler sleeps under a spinlock.
 *  - tio_file.hot[] caches the last object looked up of each type. It is
 *    written only under the xarray's spinlock and only with an object
 *    that is in the table then; removal clears it under the same lock
 *    before the table's reference goes, so it never points to a freed
 *    object; readers use it under RCU like the table (tio_object.c).
 *  - Each object carries its own lock for its state (see the object's
 *    file); objects never take another object's lock while holding theirs.
 */
#ifndef _TIO_PRIV_H
#define _TIO_PRIV_H

#include <linux/atomic.h>
#include <linux/errno.h>
#include <linux/fs.h>
#include <linux/jump_label.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm_types.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include <linux/tensorio.h>

#define TIO_DRV_NAME		"tensorio"
/* Handles are 1..TIO_HANDLE_MAX; each owns a 2^TIO_MMAP_SHIFT mmap window. */
#define TIO_HANDLE_MAX		((1U << 24) - 1)
#define TIO_MMAP_SHIFT		40
#define TIO_MAX_SUBMIT		1024

enum tio_obj_type {
	TIO_OBJ_BUFFER = 1,
	TIO_OBJ_STREAM,
	TIO_OBJ_NR
};

struct seq_file;
struct tio_obj;

/**
 * struct tio_obj_ops - what an object type does
 * @release: free the object, its structure with kfree_rcu(ptr, obj.rcu);
 *	     called once the last reference is gone
 * @mmap: map the object into @vma; vma->vm_pgoff is relative to the object
 * @show: describe the object in one debugfs line, without the handle
 */
struct tio_obj_ops {
	void (*release)(struct tio_obj *obj);
	int (*mmap)(struct tio_obj *obj, struct vm_area_struct *vma);
	void (*show)(struct tio_obj *obj, struct seq_file *m);
};

/**
 * struct tio_obj - header of every object in a file's table
 * @ref: references: the table holds one, every lookup takes one
 * @type: enum tio_obj_type
 * @handle: the handle in the owning file's table (0 until inserted;
 *	  kept after removal, when only the table says it is gone)
 * @ops: type operations
 * @rcu: lookups run under RCU, so the structure is freed after a grace
 *	 period: ops->release frees it with kfree_rcu(ptr, obj.rcu)
 */
struct tio_obj {
	struct kref ref;
	u32 type;
	u32 handle;
	const struct tio_obj_ops *ops;
	struct rcu_head rcu;
};

/* Spare pages a file keeps at most: one 64-record batch of 4 KiB buffers. */
#define TIO_SPARE_PAGES 64

/**
 * struct tio_spare - zeroed pages of buffers freed unseen
 * @lock: protects @nr and @pages
 * @nr: pages held
 * @pages: the pages, each zeroed when allocated and neither mapped,
 *	   exported nor written since (tio_spare.c); charged to the memcg
 *	   of their first allocation, not to memlock (no buffer holds them)
 */
struct tio_spare {
	spinlock_t lock;	/* see above */
	unsigned int nr;
	struct page *pages[TIO_SPARE_PAGES];
};

/**
 * struct tio_file - one open file of /dev/tensorio
 * @objs: handle -> struct tio_obj *, allocating from 1
 * @hot: per type, the object the last lookup found in @objs, or NULL
 * @mm: the opener's mm, for memlock accounting (reference via mmgrab)
 * @uring_lock: protects @parked (tio_uring.c); taken in process context
 *		only (issue, task work, ->flush), never from a fence callback
 * @parked: asynchronous waits parked by io_uring commands
 * @nr_parked: entries on @parked
 * @uring_monitor: looks for exited issuers of parked waits, on kernels
 *		   where io_uring cannot cancel them (tio_uring.c)
 * @nr_waits: blocking waits running in a handler now
 * @spare: pages of buffers freed unseen, for the next BUF_ALLOC (tio_spare.c)
 * @dbg_node: on the debugfs list of files (tio_debugfs.c)
 * @dbg: this file's debugfs directory, or NULL
 * @id: number of this open, for the debugfs directory name
 * @pid: tgid of the opener
 */
struct tio_file {
	struct xarray objs;
	struct tio_obj __rcu *hot[TIO_OBJ_NR];
	struct mm_struct *mm;
	spinlock_t uring_lock;	/* protects @parked */
	struct list_head parked;
	atomic_t nr_parked;
	struct delayed_work uring_monitor;
	atomic_t nr_waits;
	struct tio_ring *ring;
	struct tio_spare spare;
	struct list_head dbg_node;
	struct dentry *dbg;
	u32 id;
	pid_t pid;
};

/* Module-wide limits and counters (tio_main.c). */
extern unsigned long tio_max_buf_size;
extern unsigned long tio_max_pinned;
extern atomic64_t tio_pinned_total;
extern unsigned int tio_fence_timeout_ms;
/* The misc device, for dma-buf attachments (tio_main.c). */
extern struct device *tio_device;

/* tio_object.c */
void tio_obj_init(struct tio_obj *obj, u32 type, const struct tio_obj_ops *ops);
int tio_obj_insert(struct tio_file *tf, struct tio_obj *obj);
struct tio_obj *tio_obj_get(struct tio_file *tf, u32 handle, u32 type);
struct tio_obj *tio_obj_remove(struct tio_file *tf, u32 handle, u32 type);
void tio_obj_put(struct tio_obj *obj);
void tio_obj_release_all(struct tio_file *tf);

static inline u64 tio_obj_mmap_offset(const struct tio_obj *obj)
{
	return (u64)obj->handle << TIO_MMAP_SHIFT;
}

/*
 * Interfaces between the parts of the driver. Each part's file owns its
 * structures; others use only these.
 */
struct dma_fence;
struct dma_resv;
struct seq_file;
struct tio_buffer;

/*
 * The dma_resv usage TIO_RESV_F_WRITE selects: writers only, else readers
 * and writers (DMA_RESV_USAGE_READ covers both).
 */
#define tio_resv_usage(flags) \
	((flags) & TIO_RESV_F_WRITE ? DMA_RESV_USAGE_WRITE : DMA_RESV_USAGE_READ)

/* tio_buffer.c */
struct tio_buffer *tio_buffer_get(struct tio_file *tf, u32 handle);
void tio_buffer_put(struct tio_buffer *buf);
/* The buffer's reservation object: its dma-buf's, exported or imported. */
struct dma_resv *tio_buffer_resv(struct tio_buffer *buf);

/* tio_spare.c */
void tio_spare_init(struct tio_file *tf);
unsigned long tio_spare_take(struct tio_file *tf, struct page **pages,
			     unsigned long n);
void tio_spare_give(struct tio_file *tf, struct tio_buffer *buf);
void tio_spare_release(struct tio_file *tf);

/* tio_stream.c */
/* A referenced fence for an emitted point of a stream, or ERR_PTR(). */
struct dma_fence *tio_stream_fence(struct tio_file *tf, u32 stream, u64 seqno);
/* The same, for a point about to be seen outside the file: bounded. */
struct dma_fence *tio_stream_fence_expose(struct tio_file *tf, u32 stream,
					  u64 seqno);
/* Points that expired, module-wide (debugfs). */
extern atomic64_t tio_fences_expired;

/*
 * A payload as one fixed-size object: copying it is six register moves,
 * where a memcpy() of a variable size is a call and a string instruction.
 */
struct tio_payload {
	u64 w[TIO_CMD_PAYLOAD / sizeof(u64)];
};

struct tio_call;

/* tio_ioctl.c */
int tio_cmd_submit(struct tio_file *tf, void *data, struct tio_call *call);
int tio_record_run(struct tio_file *tf, struct tio_cmd *rec,
		   struct tio_payload *buf, struct tio_call *call);
int tio_record_run_copy(struct tio_file *tf, struct tio_cmd *rec,
			struct tio_call *call, unsigned int *out);
bool tio_record_may_block(const struct tio_cmd *rec);
long tio_ioctl(struct file *file, unsigned int cmd, unsigned long arg);
long tio_cmd_user(struct tio_file *tf, unsigned int cmd, void __user *uptr,
		  bool nonblock);
int tio_cmd_poll(struct tio_file *tf, unsigned int cmd, void *data);
unsigned int tio_cmd_kernel(unsigned int cmd);
int tio_cmd_copy_in(unsigned int cmd, void *kbuf, const void __user *uptr);
int tio_cmd_copy_out(unsigned int cmd, void __user *uptr, const void *kbuf);
void tio_cmd_account(unsigned int cmd, int ret, u64 ns);
int tio_cmd_stats_show(struct seq_file *m, void *unused);
void tio_cmd_stats_reset(void);
extern struct static_key_false tio_stats_timing;

/*
 * A result that reaches userspace other than as a syscall's return (a
 * SUBMIT record, a CQE) cannot be restarted: the kernel-internal restart
 * errnos become -EINTR there.
 */
static inline int tio_user_errno(int ret)
{
	switch (ret) {
	case -ERESTARTSYS:
	case -ERESTARTNOINTR:
	case -ERESTARTNOHAND:
	case -ERESTART_RESTARTBLOCK:
		return -EINTR;
	}
	return ret;
}

/* tio_uring.c */
struct io_uring_cmd;
int tio_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags);
int tio_uring_flush(struct file *file, fl_owner_t id);
void tio_uring_file_init(struct tio_file *tf);
void tio_uring_file_release(struct tio_file *tf);
extern atomic_t tio_parked_total;

/* tio_ring.c */
struct tio_ring;
struct vm_area_struct;
int tio_cmd_ring_setup(struct tio_file *tf, void *data, struct tio_call *call);
int tio_cmd_ring_enter(struct tio_file *tf, void *data, struct tio_call *call);
int tio_ring_mmap(struct tio_file *tf, struct vm_area_struct *vma);
void tio_ring_release(struct tio_file *tf);

/* tio_debugfs.c */
void tio_debugfs_init(void);
void tio_debugfs_exit(void);
void tio_debugfs_file_add(struct tio_file *tf);
void tio_debugfs_file_del(struct tio_file *tf);

/**
 * struct tio_call - the state of one call (one ioctl or uring command,
 * with every record of a SUBMIT), on the caller's stack
 * @nonblock: issued by io_uring with IO_URING_F_NONBLOCK: nothing may
 *	      sleep for long; SUBMIT answers -EAGAIN (tio_ioctl.c)
 * @n: fds reserved, installed once the result reached userspace (tio_fd.c)
 * @cap: entries allocated
 * @ent: the entries, @one or an array
 * @one: the first entry, inline
 */
struct tio_call {
	bool nonblock;
	unsigned int n;
	unsigned int cap;
	struct tio_call_fd {
		int fd;
		struct file *file;
	} *ent, one;
};

/* tio_fd.c */
int tio_fd_reserve(struct tio_call *q, struct file *file, bool cloexec);
void __tio_call_install_fds(struct tio_call *q);
void __tio_call_abort_fds(struct tio_call *q);
void tio_call_abort_from(struct tio_call *q, unsigned int n);
int tio_call_fds_returned(struct tio_call *q, unsigned int n, unsigned int dir,
			  unsigned int usize, unsigned int ksize, int ret);

/**
 * tio_call_init() - a new call, with an empty fd queue
 * @q: the call, on the caller's stack
 * @nonblock: see struct tio_call
 *
 * Inline, as are the two below: most calls reserve no fd, and every
 * command pays for them.
 */
static inline void tio_call_init(struct tio_call *q, bool nonblock)
{
	q->nonblock = nonblock;
	q->n = 0;
	q->cap = 1;
	q->ent = &q->one;
}

/**
 * tio_call_install_fds() - install every reserved fd: their numbers
 * reached userspace
 * @q: the queue, empty on return
 */
static inline void tio_call_install_fds(struct tio_call *q)
{
	if (unlikely(q->n || q->ent != &q->one))
		__tio_call_install_fds(q);
}

/**
 * tio_call_abort_fds() - give back every reserved fd and drop its file:
 * the result could not be written back
 * @q: the queue, empty on return
 */
static inline void tio_call_abort_fds(struct tio_call *q)
{
	if (unlikely(q->n || q->ent != &q->one))
		__tio_call_abort_fds(q);
}

/*
 * Command handlers: @data is the kernel copy of the payload, @call the
 * call (new fds go through tio_fd_reserve()).
 */
int tio_cmd_buf_alloc(struct tio_file *tf, void *data, struct tio_call *call);
int tio_cmd_buf_pin_user(struct tio_file *tf, void *data, struct tio_call *call);
int tio_cmd_buf_free(struct tio_file *tf, void *data, struct tio_call *call);
int tio_cmd_buf_info(struct tio_file *tf, void *data, struct tio_call *call);
int tio_cmd_buf_set_desc(struct tio_file *tf, void *data, struct tio_call *call);
int tio_cmd_buf_export(struct tio_file *tf, void *data, struct tio_call *call);
int tio_cmd_buf_import(struct tio_file *tf, void *data, struct tio_call *call);
int tio_cmd_buf_attach_fence(struct tio_file *tf, void *data, struct tio_call *call);
int tio_cmd_buf_wait(struct tio_file *tf, void *data, struct tio_call *call);
int tio_cmd_stream_create(struct tio_file *tf, void *data, struct tio_call *call);
int tio_cmd_stream_destroy(struct tio_file *tf, void *data, struct tio_call *call);
int tio_cmd_fence_emit(struct tio_file *tf, void *data, struct tio_call *call);
int tio_cmd_fence_signal(struct tio_file *tf, void *data, struct tio_call *call);
int tio_cmd_fence_wait(struct tio_file *tf, void *data, struct tio_call *call);
int tio_cmd_fence_export(struct tio_file *tf, void *data, struct tio_call *call);
int tio_cmd_fence_import(struct tio_file *tf, void *data, struct tio_call *call);

#endif /* _TIO_PRIV_H */
