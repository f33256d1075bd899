// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * safetensors straight onto a GPU (tio_safetensors_load_device()): the
 * file goes through a ring of k pinned bounce buffers; while the loader
 * engine reads piece j+1 into one, the GPU copies piece j out of another
 * (one GPU stream per buffer, so a buffer is reused once its own copies are
 * done). Nothing but the ring is staged in host memory.
 *
 * The GPU is reached through the public tio_gpu_* calls, so this file is
 * the same for every vendor and for any library behind them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tensorio/error.h>
#include <tensorio/gpu.h>
#include <tensorio/pinned.h>
#include <tensorio/tensor.h>

#include "io/st_internal.h"

#define SD_SLOTS 4

struct sd_slot {
	tio_buffer_t *buf;
	char *mem;
	tio_gpu_stream_t *stream;
	int busy;
};

/* Progress over all pieces, through the engine's per-piece progress. */
struct sd_progress {
	struct tio_io_opts *user;
	uint64_t base, total;
};

static int sd_on_progress(void *arg, uint64_t done, uint64_t total)
{
	struct sd_progress *p = arg;

	(void)total;
	return p->user->progress(p->user->progress_arg, p->base + done, p->total);
}

struct sd_load {
	DLDevice dev;
	struct tio_safetensors *st;
	struct sd_slot slot[SD_SLOTS];
	uint64_t piece;
	int64_t cursor;		/* first entry not yet copied in full */
};

/* Enqueue the copies of the tensor bytes in file range [off, off + len). */
static int sd_copy(struct sd_load *l, int shard, uint64_t off, uint64_t len,
		   struct sd_slot *s)
{
	struct tio_safetensors *st = l->st;
	uint64_t ds = st->sh[shard].data_start;

	for (; l->cursor < st->n && st->e[l->cursor].shard == shard; l->cursor++) {
		struct st_entry *e = &st->e[l->cursor];
		uint64_t a = ds + e->begin > off ? ds + e->begin : off;
		uint64_t b = ds + e->end < off + len ? ds + e->end : off + len;
		uint64_t dptr = (uintptr_t)tio_tensor_dl(st->dev[l->cursor])->data;

		if (a < b && tio_gpu_copy_htod(s->stream, dptr + (a - ds - e->begin),
				      s->mem + (a - off), b - a))
			return -1;
		if (ds + e->end > off + len)
			break;	/* continues in the next piece */
	}
	return 0;
}

static int sd_shard(struct sd_load *l, int shard, struct tio_io_opts *o,
		    struct sd_progress *pr, unsigned int *j)
{
	struct st_shard *sh = &l->st->sh[shard];
	struct tio_io_opts po;
	struct tio_load_item it;
	uint64_t off;
	int ret = 0;

	memset(&po, 0, sizeof(po));
	if (o) {
		po = *o;
		if (o->progress) {
			po.progress = sd_on_progress;
			po.progress_arg = pr;
		}
	}
	tio_load_close(&sh->it);
	if (tio_load_open(sh->path, 0, sh->size, o ? o->flags : 0, &it))
		return -1;
	for (off = 0; off < sh->size && !ret; off += l->piece, (*j)++) {
		struct sd_slot *s = &l->slot[*j % SD_SLOTS];

		if (s->busy && tio_gpu_stream_sync(s->stream)) {	/* its copies are done */
			ret = -1;
			break;
		}
		s->busy = 0;
		it.file_off = off;
		it.len = sh->size - off < l->piece ? sh->size - off : l->piece;
		it.mem = s->mem;
		it.slack = tio_buffer_size(s->buf) - it.len;
		it.lazy = 0;
		ret = tio_load_run(&it, 1, &po);
		if (!ret) {
			s->busy = 1;
			ret = sd_copy(l, shard, off, it.len, s);
		}
		pr->base += it.len;
	}
	tio_load_close(&it);
	return ret;
}

static int sd_tensors(struct sd_load *l)
{
	struct tio_safetensors *st = l->st;
	int64_t i, shape[TIO_MAX_NDIM];
	unsigned int d;

	st->dev = calloc((size_t)st->n + 1, sizeof(*st->dev));
	if (!st->dev)
		return tio_raise_errno(ENOMEM, "device tensors");
	for (i = 0; i < st->n; i++) {
		struct st_entry *e = &st->e[i];
		DLDataType dt = { e->code, e->desc.bits, 1 };

		for (d = 0; d < e->desc.ndim; d++)
			shape[d] = e->desc.shape[d];
		if (tio_gpu_tensor_empty(l->dev, e->desc.ndim, shape, dt, &st->dev[i]))
			return -1;
	}
	return 0;
}

static int sd_ring(struct sd_load *l, uint64_t total)
{
	int i;

	l->piece = total / (2 * SD_SLOTS);
	if (l->piece < (4u << 20))
		l->piece = 4u << 20;
	if (l->piece > (64u << 20))
		l->piece = 64u << 20;
	for (i = 0; i < SD_SLOTS; i++) {
		struct sd_slot *s = &l->slot[i];

		if (tio_pinned_alloc(l->piece + 4096, &s->buf) ||
		    !(s->mem = tio_buffer_data(s->buf)) ||
		    tio_gpu_stream_create(l->dev, &s->stream))
			return -1;
		/* A cached bounce buffer may still be registered. */
		if (tio_gpu_buffer_register(l->dev.device_type, s->buf) && tio_errno() != EEXIST)
			return -1;
		tio_error_clear();
	}
	return 0;
}

static void sd_ring_free(struct sd_load *l)
{
	int i;

	for (i = 0; i < SD_SLOTS; i++) {
		struct sd_slot *s = &l->slot[i];

		if (s->stream) {
			/* Copies still reading the buffer must end first. */
			tio_gpu_stream_sync(s->stream);
			tio_gpu_stream_destroy(s->stream);
		}
		tio_buffer_decref(s->buf);
	}
}

int tio_safetensors_load_device(const char *path, DLDevice device,
				struct tio_io_opts *opts, tio_safetensors_t **out)
{
	struct sd_progress pr = { opts, 0, 0 };
	struct sd_load l;
	json_object *map = NULL;
	unsigned int j = 0;
	int i, ret = -1;

	memset(&l, 0, sizeof(l));
	if (!path || !out)
		return tio_raise_errno(EINVAL, "tio_safetensors_load_device: NULL path or out");
	l.dev = device;
	if (device.device_type != kDLCUDA && device.device_type != kDLROCM)
		return tio_raise_errno(EINVAL, "tio_safetensors_load_device: device type %d is "
				       "neither CUDA (%d) nor ROCm (%d)", device.device_type,
				       kDLCUDA, kDLROCM);
	l.st = calloc(1, sizeof(*l.st));
	if (!l.st)
		return tio_raise_errno(ENOMEM, "%s", path);
	if (tio_st_shards(path, l.st, &map))
		goto out;
	for (i = 0; i < l.st->nsh; i++) {
		if (tio_st_header(l.st, i))
			goto out;
		pr.total += l.st->sh[i].size;
	}
	if ((map && tio_st_check_map(path, l.st, map)) ||
	    sd_tensors(&l) || sd_ring(&l, pr.total))
		goto out;
	for (i = 0; i < l.st->nsh; i++)
		if (sd_shard(&l, i, opts, &pr, &j))
			goto out;
	for (i = 0; i < SD_SLOTS; i++)
		if (l.slot[i].busy && tio_gpu_stream_sync(l.slot[i].stream))
			goto out;
	ret = 0;
out:
	sd_ring_free(&l);
	json_object_put(map);
	if (ret) {
		tio_safetensors_free(l.st);
		return -1;
	}
	*out = l.st;
	tio_set_errno(0);
	return 0;
}
