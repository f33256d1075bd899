/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * safetensors files: load one (or the shards a model.safetensors.index.json
 * names) into pinned buffers through the loader engine (tensorio/io.h) and
 * view each entry as a zero-copy tio.Tensor; write tensors to a file,
 * atomically. The JSON header is parsed with json-c and checked (size
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
 * tio_safetensors_save() - write tensors to a safetensors file
 * @path: the file (replaced atomically: a temporary file in the same
 *	directory, fsync, rename; a failed save leaves the old file as it was
 *	and no temporary behind)
 * @names: their names: distinct, none "__metadata__"
 * @tensors: compact row-major CPU tensors
 * @n: how many
 *
 * Return: 0, or -1 with an error raised (EINVAL for a dtype safetensors has
 * no name for, a strided tensor, a name given twice or "__metadata__";
 * EFBIG over the file size limit, ENOSPC, or another I/O error).
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

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_SAFETENSORS_H */
