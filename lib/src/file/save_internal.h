/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal interface of the save engine: a job of files, each the bytes
 * of a header and of tensors in host or device memory, written durably
 * (save_engine.c) into temporaries that are then linked in place
 * (save_file.c); the safetensors layout and the API are st_save.c and
 * st_save_async.c.
 *
 * Locking: sv_job.lock guards the part cursor, each file's part counts,
 * the first error, @running and each file's @staged watermark updates
 * (read with acquire loads); @done and @stop are atomics.
 */
#ifndef TIO_SAVE_INTERNAL_H
#define TIO_SAVE_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include <tensorio/gpu.h>
#include <tensorio/safetensors.h>

#include "file/file_internal.h"

/* One run of a file's bytes: its header, or a tensor's data. */
struct sv_seg {
	uint64_t off, len;	/* in the file */
	const char *mem;	/* host memory, or NULL: @dptr on the job's GPU */
	uint64_t dptr;
};

/*
 * A temporary file in the destination's directory (save_file.c): unnamed
 * (O_TMPFILE) or, where the file system lacks it, named and flock()ed.
 */
struct sv_tmp {
	int fd;			/* the file, O_DIRECT when @direct */
	int dirfd;
	const char *dest;	/* the destination, for messages */
	const char *base;	/* its name in the directory (in @dest) */
	char *named;		/* the named temporary, or NULL (O_TMPFILE) */
	int old;		/* the file it replaced, held (O_PATH), or -1 */
	int direct;
	uint32_t align;		/* direct I/O offset and length alignment */
};

/* One file of a job. */
struct sv_file {
	char *path;
	char *hdr;		/* u64 length, JSON, spaces */
	uint64_t hdr_len;
	struct sv_seg *seg;	/* the header, then the tensors by offset */
	int64_t nseg;
	uint64_t size;
	uint64_t tensor_bytes;
	int parts, done_parts;	/* parts taken by writers, and written */
	struct sv_tmp tmp;
	/* A capture: the whole file in memory, @staged bytes of it ready. */
	char *image;
	uint64_t staged;	/* atomic */
	struct tio_pinned_mem img;	/* its memory when pinned */
	size_t img_plain;	/* else: its plain mapping's size */
};

/* A GPU capture's point: @file's bytes below @upto are in its image. */
struct sv_mark {
	int file;
	uint64_t upto;
	uint64_t seqno;
};

struct sv_job {
	struct sv_file *f;
	int nf;
	char *index;		/* the index path of a sharded save, or NULL */
	char *index_text;
	unsigned int flags;	/* TIO_SAVE_* */
	uint32_t qd;		/* 0: from the device */
	uint64_t chunk;		/* 0: from the device */
	DLDevice gpu;		/* the GPU tensors' device (type 0: none) */
	tio_gpu_stream_t *user_gs;	/* the caller's stream, or NULL */
	tio_stream_t *cap;	/* GPU capture points, the producer's point */
	uint64_t producer;	/* the producer's point, waited for first, or 0 */
	struct sv_mark *marks;
	int nmarks;
	tio_io_progress_t progress;
	void *progress_arg;
	int inline_progress;	/* called by the one writer, in its thread */
	uint64_t total;
	uint64_t done;		/* atomic */
	int stop;		/* atomic: failed or cancelled */
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* staged, progress, a writer ended */
	int next;		/* part cursor: file, position */
	uint64_t pos;
	uint64_t part;		/* bytes a writer takes at a time */
	int running;
	tio_object_t *err;	/* the first error */
	int err_errno;
	int cancelled;
	int used_direct;
};

/* save_file.c */
int sv_tmp_open(struct sv_tmp *t, const char *dest, unsigned int flags);
int sv_tmp_reserve(struct sv_tmp *t, uint64_t size, unsigned int flags);
int sv_tmp_sync(struct sv_tmp *t, uint64_t size);
int sv_tmp_link(struct sv_tmp *t);
int sv_tmp_sync_dir(struct sv_tmp *t);
void sv_tmp_let_go(struct sv_tmp *t);
void sv_tmp_close(struct sv_tmp *t);
int sv_write_text(const char *path, const char *text, uint64_t len);

/* save_engine.c */
void sv_job_init(struct sv_job *j);
void sv_job_fini(struct sv_job *j);
int sv_stopped(struct sv_job *j);
void sv_fail(struct sv_job *j);
void sv_cancel(struct sv_job *j);
void sv_set_staged(struct sv_job *j, struct sv_file *f, uint64_t upto);
/* A point on @j->user_gs after its work so far (GPU tensors copied by the ring). */
int sv_producer_mark(struct sv_job *j);
/* Write every file into its temporary, durable; 0 or -1 with the job's error raised. */
int sv_run(struct sv_job *j);
/* Raise the job's error (or its cancellation): -1, or 0 when it has none. */
int sv_result(struct sv_job *j);
/* Give capture images back to the pinned cache. */
void sv_images_back(struct sv_job *j);
/* Link every file in place, then the index; 0 or -1 raised. */
int sv_publish(struct sv_job *j);
/* Let the files replaced go (their blocks are freed then). */
void sv_let_go(struct sv_job *j);
/* Copy @f's bytes [@off, @off + @len) to @dst (device bytes on @gs). */
int sv_gather(struct sv_job *j, struct sv_file *f, uint64_t off, uint64_t len, char *dst,
	      tio_gpu_stream_t *gs, int *gpu);

/* st_index.c: an index's text, from its tensors' names, shards, bytes. */
struct sv_ix {
	const char *name;
	const char *file;
	uint64_t bytes;
};
char *sv_index_text(const char *path, struct sv_ix *ix, int64_t n, const char *const *meta,
		    int64_t nmeta);
struct json_object *sv_meta_json(const char *path, const char *const *meta, int64_t nmeta);

/* st_save.c: the files of a save, checked and laid out. */
int sv_plan(struct sv_job *j, const char *path, const char *const *names,
	    const DLTensor *const *tensors, int64_t n, const struct tio_save_opts *o);
int sv_opts(const struct tio_save_opts *in, struct tio_save_opts *o);
struct sv_xfsz {
	sigset_t set, old;
	int had;
};
void sv_xfsz_hold(struct sv_xfsz *x);
void sv_xfsz_restore(struct sv_xfsz *x);

#endif /* TIO_SAVE_INTERNAL_H */
