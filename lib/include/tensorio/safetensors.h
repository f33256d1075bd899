/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * safetensors files: load one into a single pinned buffer (read through
 * io_uring) and view each entry as a zero-copy tio.Tensor; write tensors
 * to a new file. The JSON header is parsed with json-c and checked
 * (size limit, dtypes, shapes, offsets in range, no overlap, sizes that
 * match the shapes) before anything is trusted.
 */
#ifndef TENSORIO_SAFETENSORS_H
#define TENSORIO_SAFETENSORS_H

#include <stdint.h>

#include <tensorio/buffer.h>
#include <tensorio/dlpack.h>
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
 * tio_safetensors_free() - drop a loaded file (views stay valid)
 * @st: the loaded file, or NULL
 */
TIO_API void tio_safetensors_free(tio_safetensors_t *st);

/**
 * tio_safetensors_count() - its number of tensors
 * @st: the loaded file
 */
TIO_API int64_t tio_safetensors_count(const tio_safetensors_t *st);

/**
 * tio_safetensors_name() - the name of tensor @i (sorted by offset), or NULL
 * @st: the loaded file
 * @i: the index, 0 <= @i < count
 */
TIO_API const char *tio_safetensors_name(const tio_safetensors_t *st, int64_t i);

/**
 * tio_safetensors_buffer() - the buffer holding the whole file (borrowed)
 * @st: the loaded file
 */
TIO_API tio_buffer_t *tio_safetensors_buffer(const tio_safetensors_t *st);

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
 * @path: the file (replaced)
 * @names: their names
 * @tensors: compact row-major CPU tensors
 * @n: how many
 *
 * Return: 0, or -1 with an error raised (a dtype safetensors has no name
 * for, a strided tensor, an I/O error).
 */
TIO_API int tio_safetensors_save(const char *path, const char *const *names,
				 const DLTensor *const *tensors, int64_t n);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_SAFETENSORS_H */
