/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * safetensors files: load one (or the shards a model.safetensors.index.json
 * names) into pinned buffers through the loader engine (tensorio/io.h) and
 * view each entry as a zero-copy tio.Tensor; write tensors to a file (or
 * to shards and their index) durably and atomically, from host or GPU
 * memory, in the caller's thread or in the background. The JSON header is parsed with json-c and checked (size
 * limit, dtypes, shapes, offsets in range, sizes that match the shapes,
 * tensors that tile the data exactly: no overlap, no gap, no trailing
 * bytes) before anything is trusted.
 *
 * Every dtype of the format but the packed sub-byte F4/F6 kinds: F64 ...
 * BOOL, C64, and F8_E4M3 / F8_E5M2 / F8_E8M0 as the DLPack codes
 * TIO_DL_FLOAT8_E4M3FN / _E5M2 / _E8M0FNU.
 *
 * Layer: file (lib/src/file/)
 */
#ifndef TENSORIO_SAFETENSORS_H
#define TENSORIO_SAFETENSORS_H

#include <stdint.h>

#include <tensorio/buffer.h>
#include <tensorio/dlpack.h>
#include <tensorio/gpu.h>
#include <tensorio/io.h>
#include <tensorio/object.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest JSON header accepted, in bytes. */
#define TIO_SAFETENSORS_MAX_HEADER (100u << 20)

typedef struct tio_safetensors tio_safetensors_t;

/**
 * tio_safetensors_load() - load and check a safetensors file
 * @path: the file
 * @out: the loaded file, freed with tio_safetensors_free()
 *
 * Return: 0, or -1 with an error raised (EINVAL with the reason for a
 * malformed file, E2BIG for a header above TIO_SAFETENSORS_MAX_HEADER).
 */
TIO_API int tio_safetensors_load(const char *path, tio_safetensors_t **out);

/**
 * tio_safetensors_load_ex() - load a file, or a sharded checkpoint
 * @path: a safetensors file, or an index (a name ending in ".json", as
 *	model.safetensors.index.json) whose "weight_map" names each tensor's
 *	shard, a file next to it
 * @opts: as tio_file_read()'s (progress and cancellation over all the
 *	bytes read, chunk size, queue depth, TIO_IO_NO_DIRECT ...), or NULL
 * @out: the loaded checkpoint, freed with tio_safetensors_free()
 *
 * Each file goes into its own pinned buffer from the pinned cache
 * (tensorio/pinned.h); a cancelled or failed load frees them all.
 *
 * Return: 0, or -1 with an error raised (as tio_safetensors_load(); for an
 * index also ENOENT naming a missing shard, EINVAL for a tensor in two
 * shards, in a shard the weight_map does not say, or named by the
 * weight_map and absent; ECANCELED by the progress callback).
 */
TIO_API int tio_safetensors_load_ex(const char *path, struct tio_io_opts *opts,
				    tio_safetensors_t **out);

/**
 * tio_safetensors_load_device() - load a checkpoint straight onto a GPU
 * @path: as tio_safetensors_load_ex()
 * @device: {kDLCUDA or kDLROCM, ordinal}
 * @opts: as tio_safetensors_load_ex()
 * @out: the loaded checkpoint: tio_safetensors_tensor() gives device
 *	tensors (one allocation each); tio_safetensors_buffer() is NULL
 *
 * The files go through a ring of pinned bounce buffers from the pinned
 * cache, each filled by its own thread: the reads into some overlap the
 * asynchronous host-to-device copies out of the others, so no more than
 * the ring is staged in host memory. @opts' progress callback runs in the
 * calling thread, once per piece of the ring.
 *
 * Return: 0, or -1 with an error raised (as tio_safetensors_load_ex();
 * ENODEV without the GPU library or device, EINVAL for another device type).
 */
TIO_API int tio_safetensors_load_device(const char *path, DLDevice device,
					struct tio_io_opts *opts, tio_safetensors_t **out);

/**
 * tio_safetensors_free() - drop a loaded file (views stay valid)
 * @st: the loaded file, or NULL
 */
TIO_API void tio_safetensors_free(tio_safetensors_t *st);

/**
 * tio_safetensors_count() - its number of tensors
 * @st: the loaded file
 *
 * Return: the number of tensors (of every shard).
 */
TIO_API int64_t tio_safetensors_count(const tio_safetensors_t *st);

/**
 * tio_safetensors_name() - the name of tensor @i (sorted by offset), or NULL
 * @st: the loaded file
 * @i: the index, 0 <= @i < count
 *
 * Return: the name, valid while @st lives, or NULL for @i out of range.
 */
TIO_API const char *tio_safetensors_name(const tio_safetensors_t *st, int64_t i);

/**
 * tio_safetensors_buffer() - the buffer holding the whole file (borrowed)
 * @st: the loaded file
 *
 * For a sharded checkpoint, the first shard's.
 *
 * Return: the buffer (no reference taken).
 */
TIO_API tio_buffer_t *tio_safetensors_buffer(const tio_safetensors_t *st);

/**
 * tio_safetensors_shards() - the number of files loaded (1 unless sharded)
 * @st: the loaded checkpoint
 *
 * Return: the number of files loaded.
 */
TIO_API int tio_safetensors_shards(const tio_safetensors_t *st);

/**
 * tio_safetensors_metadata() - a value of the metadata map
 * @st: the loaded file ("__metadata__"; an index's "metadata", as text)
 * @key: the key
 *
 * Return: the value (borrowed), or NULL when there is none.
 */
TIO_API const char *tio_safetensors_metadata(const tio_safetensors_t *st,
					     const char *key);

/**
 * tio_safetensors_metadata_key() - a key of the metadata map, or NULL
 * @st: the loaded file
 * @i: the index, 0 <= @i < the number of keys
 *
 * Return: the key, valid while @st lives, or NULL for @i out of range.
 */
TIO_API const char *tio_safetensors_metadata_key(const tio_safetensors_t *st, int64_t i);

/**
 * tio_safetensors_tensor() - a zero-copy view of one tensor
 * @st: the loaded file
 * @name: the tensor's name
 * @out: a Tensor (owned) keeping the file's buffer alive
 *
 * Return: 0, or -1 with an error raised (KeyError for an unknown name).
 */
TIO_API int tio_safetensors_tensor(const tio_safetensors_t *st, const char *name,
				   tio_object_t **out);

/**
 * tio_safetensors_save() - write tensors to a safetensors file, durably
 * @path: the file (replaced atomically, see tio_safetensors_save_opts(); a
 *	failed save leaves the old file as it was and nothing behind)
 * @names: their names: distinct, none "__metadata__"
 * @tensors: compact row-major CPU tensors
 * @n: how many
 *
 * tio_safetensors_save_opts() without options.
 *
 * Return: 0, or -1 with an error raised (EINVAL for a dtype safetensors has
 * no name for, a tensor that is not contiguous, a name given twice or
 * "__metadata__"; EFBIG over the file size limit, ENOSPC, or another I/O
 * error).
 */
TIO_API int tio_safetensors_save(const char *path, const char *const *names,
				 const DLTensor *const *tensors, int64_t n);

/**
 * tio_safetensors_save_ex() - tio_safetensors_save() with a metadata map
 * @path: as tio_safetensors_save()
 * @names: as tio_safetensors_save()
 * @tensors: as tio_safetensors_save()
 * @n: as tio_safetensors_save()
 * @meta: @nmeta pairs of strings: key, value, key, value ...
 * @nmeta: how many pairs (0: no "__metadata__")
 *
 * Return: as tio_safetensors_save().
 */
TIO_API int tio_safetensors_save_ex(const char *path, const char *const *names,
				    const DLTensor *const *tensors, int64_t n,
				    const char *const *meta, int64_t nmeta);

/* tio_save_opts.flags */
#define TIO_SAVE_NO_COPY	0x1u	/* async: no capture, write from the tensors */
#define TIO_SAVE_NO_DIRECT	0x2u	/* buffered writes through the page cache */
#define TIO_SAVE_NO_PREALLOC	0x4u	/* do not reserve the file's blocks first */
#define TIO_SAVE_NAMED_TEMP	0x8u	/* a named temporary even with O_TMPFILE */

/**
 * struct tio_save_opts - how to save (zeroed fields: defaults)
 * @size: sizeof(struct tio_save_opts) as the caller was built with (0: this
 *	header's); the struct only ever grows at the end
 * @flags: TIO_SAVE_*
 * @queue_depth: writes in flight per writer, 1..64 (default: from the device)
 * @pad: zero
 * @chunk_size: bytes per write, rounded to the file system's direct I/O
 *	alignment (default: twice the device's largest request, 1-16 MiB)
 * @max_shard_size: above this many tensor bytes, write shards
 *	NAME-00001-of-0000N.safetensors and NAME.safetensors.index.json
 *	(NAME: @path without ".safetensors"), split as the safetensors/
 *	transformers convention splits them; 0: one file
 * @meta: @nmeta pairs of strings, key, value, ..., for "__metadata__"
 *	(and each shard's, and the index's "metadata")
 * @nmeta: how many pairs
 * @progress: called with the file bytes written so far and their total
 *	(all shards); a non-zero return cancels the save (ECANCELED), which
 *	leaves every old file as it was
 * @progress_arg: its argument
 * @gpu_stream: for GPU tensors, the caller's stream (tio_gpu_stream_wrap()
 *	takes a CUstream or hipStream_t) that produces them: the copies start
 *	after its work so far, and an asynchronous save enqueues them on it
 * @used_direct: out: whether the data went O_DIRECT (0 on tmpfs)
 * @shards: out: the files written (1 without sharding)
 */
struct tio_save_opts {
	uint32_t size;
	uint32_t flags;
	uint32_t queue_depth;
	uint32_t pad;
	uint64_t chunk_size;
	uint64_t max_shard_size;
	const char *const *meta;
	int64_t nmeta;
	tio_io_progress_t progress;
	void *progress_arg;
	tio_gpu_stream_t *gpu_stream;
	int32_t used_direct;
	int32_t shards;
};

/**
 * tio_safetensors_save_opts() - write tensors to a safetensors file, or to
 * shards and their index, durably and atomically
 * @path: the file (with @opts->max_shard_size, the name the shards and the
 *	index are named after)
 * @names: the tensors' names: distinct, valid UTF-8, none "__metadata__"
 * @tensors: compact row-major tensors in host memory (kDLCPU, or 0 as
 *	in a zeroed DLTensor, kDLCUDAHost, kDLCUDAManaged, kDLROCMHost) or on
 *	one GPU (kDLCUDA, kDLROCM)
 * @n: how many
 * @opts: options and results, or NULL
 *
 * The file is the one the safetensors library writes for the same
 * tensors: tensors ordered by dtype alignment (largest first), then by
 * name; the header compact JSON padded with spaces to a multiple of 8;
 * offsets contiguous. Its bytes go through a ring of aligned pinned
 * staging buffers from the pinned cache, each filled (a memcpy, or
 * device-to-host copies on a GPU stream per buffer) while the writes of
 * the others run: O_DIRECT writes through io_uring, several in flight,
 * the last one rounded up to the block and the file truncated to its
 * size. The file is an unnamed temporary (O_TMPFILE) in the destination's
 * directory, its blocks reserved first (fallocate: ENOSPC before any byte
 * is written), fdatasync'ed, then linked in place (linkat; over an
 * existing file, linked to a temporary name and renamed over it) and the
 * directory fsync'ed: a crash at any moment leaves the old file or the new
 * one. Where O_TMPFILE is missing, a named temporary locked with flock()
 * takes its place, and any save into the directory removes temporaries
 * whose lock is free (their writer died). Where O_DIRECT is refused
 * (tmpfs), buffered writes. Sharded: every shard is written and made
 * durable (in parallel) before the first is linked; the index goes last.
 * SIGXFSZ is held back in the calling thread, so that `ulimit -f` gives
 * EFBIG.
 *
 * Return: 0, or -1 with an error raised naming the file: EINVAL (a dtype
 * safetensors has no name for, a tensor that is not contiguous or on
 * another device, a name given twice, not UTF-8 or "__metadata__"),
 * E2BIG (a header above the format's 100,000,000 bytes), EACCES/EROFS
 * (before anything is staged), ENOSPC, EDQUOT, EFBIG, EIO, ECANCELED.
 */
TIO_API int tio_safetensors_save_opts(const char *path, const char *const *names,
				      const DLTensor *const *tensors, int64_t n,
				      struct tio_save_opts *opts);

/* An asynchronous save (tio_safetensors_save_async()). */
typedef struct tio_save tio_save_t;

/**
 * tio_safetensors_save_async() - tio_safetensors_save_opts() in the
 * background, returning once the tensors are captured
 * @path: as tio_safetensors_save_opts()
 * @names: as tio_safetensors_save_opts() (copied)
 * @tensors: as tio_safetensors_save_opts()
 * @n: how many
 * @opts: as tio_safetensors_save_opts(); @opts->progress is called from
 *	the save's threads
 * @out: the save, freed with tio_save_free()
 *
 * Everything that can be checked before writing is checked here (the
 * tensors, the names, the directory: EACCES or EROFS before anything is
 * staged), then the file's bytes are captured into pinned memory (host
 * tensors copied; GPU tensors by device-to-host copies enqueued on
 * @opts->gpu_stream, or on a stream of the save's own that is waited for
 * when none is given) while the save's threads already write the captured
 * part. The caller may change its tensors once this returns. With
 * TIO_SAVE_NO_COPY nothing is captured: the bytes go through the staging
 * ring as in a synchronous save, and the tensors must stay unchanged until
 * the save is done.
 *
 * Return: 0, or -1 with an error raised (as tio_safetensors_save_opts(),
 * for what fails before it returns; ENOMEM when the capture does not fit).
 */
TIO_API int tio_safetensors_save_async(const char *path, const char *const *names,
				       const DLTensor *const *tensors, int64_t n,
				       struct tio_save_opts *opts, tio_save_t **out);

/**
 * tio_save_point() - the stream point that signals when the save is durable
 * @save: the save
 * @stream: the stream (borrowed: valid until tio_save_free())
 * @seqno: the point
 *
 * The point signals once every file is durable and linked in place, or
 * with the save's error as a negative errno (-ENOSPC, -EIO, -EDQUOT,
 * -ECANCELED ...). Like any point it can be waited for (tio_fence_wait())
 * or exported as a sync_file (tio_fence_export(), kernel backend); an
 * exported point that the save does not signal within the driver's fence
 * bound expires with -ETIMEDOUT, as every exported point does.
 *
 * Return: 0, or -1 with EINVAL raised for NULL arguments.
 */
TIO_API int tio_save_point(tio_save_t *save, tio_stream_t **stream, uint64_t *seqno);

/**
 * tio_save_wait() - wait until the save is done
 * @save: the save
 * @timeout_ns: relative nanoseconds; 0 polls; negative waits forever
 *
 * Return: 0 when it is durable; -1 with the save's own error raised (the
 * message names the file) when it failed, or with ETIME when the timeout
 * passed first.
 */
TIO_API int tio_save_wait(tio_save_t *save, int64_t timeout_ns);

/**
 * tio_save_cancel() - ask a save to stop
 * @save: the save
 *
 * A save not yet linked in place stops at its next write and fails with
 * ECANCELED, leaving the old files; one that is linking finishes.
 */
TIO_API void tio_save_cancel(tio_save_t *save);

/**
 * tio_save_free() - wait for the save to end, then free it
 * @save: the save, or NULL
 */
TIO_API void tio_save_free(tio_save_t *save);

/**
 * tio_safetensors_write_index() - write the index of a sharded checkpoint
 * @path: the index (NAME.safetensors.index.json), replaced atomically
 * @shards: the shard files, written already (by any process), all in the
 *	index's directory
 * @n: how many
 * @meta: @nmeta pairs of strings added to the index's "metadata", or NULL
 * @nmeta: how many
 *
 * Reads each shard's header and writes {"metadata": {"total_size": the
 * tensors' bytes, ...}, "weight_map": {tensor: shard file name}}, as the
 * transformers convention has it, so that several processes can save one
 * model: each its own shards, then one the index.
 *
 * Return: 0, or -1 with an error raised (EINVAL for a shard outside the
 * directory or a tensor in two shards; a shard's load error).
 */
TIO_API int tio_safetensors_write_index(const char *path, const char *const *shards,
					int64_t n, const char *const *meta, int64_t nmeta);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_SAFETENSORS_H */
