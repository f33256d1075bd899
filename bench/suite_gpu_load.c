// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Suite "gpu", load rows: a safetensors checkpoint from disk onto a CUDA
 * device, GB/s of file bytes. One op loads every tensor and frees it.
 *   load/host-cold       tio_safetensors_load_ex into pinned host memory,
 *                        the file dropped from the page cache first: what
 *                        the disk gives through the loader (no GPU)
 *   load/device-cold     tio_safetensors_load_device, cold: the ring of
 *                        pinned bounce buffers, reads overlapping copies
 *   load/mmap-htod-cold  the safetensors library's way (its torch loader
 *                        with device="cuda"): mmap the file, then per
 *                        tensor a device allocation and a copy from the
 *                        pageable mapping; the reference of device-cold
 *   load/device-warm, load/mmap-htod-warm
 *                        the same with the file in the page cache
 * The file is $TIO_BENCH_ST_FILE when set (any safetensors file, e.g. a
 * real checkpoint; never deleted), else one written in $TIO_BENCH_DIR
 * (default /var/tmp) of 16 MiB float32 tensors: 2 GiB, less where the
 * disk has under twice that free (--fast: 9 tensors of 1 MiB). Before timing, the device
 * load is checked byte for byte against the file. Every row skips without
 * CUDA (host-cold is the io suite's safetensors-cold, here as the disk's
 * figure beside the GPU rows); TIO_BENCH_GPU=rocm runs them on ROCm device 0 (and,
 * with TIO_HIP_LIBRARY naming the tests' fake HIP runtime, without a GPU).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <json-c/json.h>
#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/ffi.h>
#include <tensorio/gpu.h>
#include <tensorio/safetensors.h>
#include <tensorio/tensor.h>

#include "bench.h"

#define LD_TENSOR	(16ULL << 20)
#define LD_FILE		(2ULL << 30)

enum lkind { L_HOST_COLD, L_DEV_COLD, L_MMAP_COLD, L_DEV_WARM, L_MMAP_WARM };

/* One tensor of the file, for the mmap rows: its bytes and shape. */
struct ld_tensor {
	char *name;
	uint64_t begin, end;
	DLDataType dt;
	int32_t ndim;
	int64_t shape[8];
};

struct lstate {
	char path[512];
	int owned;		/* written here: unlink in teardown */
	uint64_t size;
	struct ld_tensor *t;
	int64_t n;
	uint64_t data_start;
	tio_object_t **dev;	/* mmap rows: this op's device tensors */
	tio_gpu_stream_t *cs;
	DLDevice gpu;		/* CUDA 0, or ROCm 0 with TIO_BENCH_GPU=rocm */
};

static void ld_drop(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		fdatasync(fd);
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
}

static void ld_warm(const char *path)
{
	char *tmp = malloc(1 << 20);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	while (tmp && fd >= 0 && read(fd, tmp, 1 << 20) > 0)
		;
	if (fd >= 0)
		close(fd);
	free(tmp);
}

static const struct { const char *name; DLDataType dt; } ld_dtypes[] = {
	{ "F32", { kDLFloat, 32, 1 } }, { "F16", { kDLFloat, 16, 1 } },
	{ "BF16", { kDLBfloat, 16, 1 } }, { "F64", { kDLFloat, 64, 1 } },
	{ "I64", { kDLInt, 64, 1 } }, { "I32", { kDLInt, 32, 1 } },
	{ "I16", { kDLInt, 16, 1 } }, { "I8", { kDLInt, 8, 1 } },
	{ "U8", { kDLUInt, 8, 1 } },
};

/* One header entry into @t; 1 for __metadata__, -1 for what we do not read. */
static int ld_entry(const char *key, json_object *v, struct ld_tensor *t)
{
	json_object *dt, *sh, *off;
	const char *dts;
	size_t i;

	if (!strcmp(key, "__metadata__"))
		return 1;
	if (!json_object_object_get_ex(v, "dtype", &dt) ||
	    !json_object_object_get_ex(v, "shape", &sh) ||
	    !json_object_object_get_ex(v, "data_offsets", &off) ||
	    json_object_array_length(off) != 2 || json_object_array_length(sh) > 8)
		return -1;
	dts = json_object_get_string(dt);
	for (i = 0; i < sizeof(ld_dtypes) / sizeof(ld_dtypes[0]); i++)
		if (!strcmp(dts, ld_dtypes[i].name))
			break;
	if (i == sizeof(ld_dtypes) / sizeof(ld_dtypes[0]))
		return -1;
	t->name = strdup(key);
	if (!t->name)
		return -1;
	t->dt = ld_dtypes[i].dt;
	t->ndim = (int32_t)json_object_array_length(sh);
	for (i = 0; i < (size_t)t->ndim; i++)
		t->shape[i] = json_object_get_int64(json_object_array_get_idx(sh, i));
	t->begin = (uint64_t)json_object_get_int64(json_object_array_get_idx(off, 0));
	t->end = (uint64_t)json_object_get_int64(json_object_array_get_idx(off, 1));
	return 0;
}

/* The header, as the safetensors library reads it, for the mmap rows. */
static int ld_header(struct bench_run *run, struct lstate *s)
{
	uint64_t hlen;
	json_object *h;
	char *txt;
	int fd, err = 0;

	fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return bench_fail(run, errno, "%s: %s", s->path, strerror(errno));
	if (pread(fd, &hlen, 8, 0) != 8 || hlen > (100 << 20) || !(txt = calloc(1, hlen + 1))) {
		close(fd);
		return bench_fail(run, EINVAL, "%s: no safetensors header", s->path);
	}
	if (pread(fd, txt, hlen, 8) != (ssize_t)hlen)
		err = EIO;
	close(fd);
	h = err ? NULL : json_tokener_parse(txt);
	free(txt);
	if (!h)
		return bench_fail(run, EINVAL, "%s: header is not JSON", s->path);
	s->data_start = 8 + hlen;
	s->t = calloc((size_t)json_object_object_length(h) + 1, sizeof(*s->t));
	s->dev = calloc((size_t)json_object_object_length(h) + 1, sizeof(*s->dev));
	if (!s->t || !s->dev) {
		json_object_put(h);
		return bench_fail(run, ENOMEM, "tensors");
	}
	json_object_object_foreach(h, key, v) {
		int r = ld_entry(key, v, &s->t[s->n]);

		if (r < 0) {
			json_object_put(h);
			return bench_skip(run, "%s: tensor %s has a dtype or shape this "
					  "row does not read", s->path, key);
		}
		s->n += !r;
	}
	json_object_put(h);
	return 0;
}

/* The 16 MiB-tensor file, sized to what the disk and memory allow. */
static int ld_write(struct bench_run *run, struct lstate *s)
{
	const char *dir = getenv("TIO_BENCH_DIR");
	uint64_t tsize = run->fast ? (1ULL << 20) : LD_TENSOR;
	int64_t shape = (int64_t)tsize / 4, i, n;
	DLTensor t = { .device = { kDLCPU, 0 }, .ndim = 1,
		       .dtype = { kDLFloat, 32, 1 }, .shape = &shape };
	const DLTensor **tv;
	char **names;
	uint64_t want = LD_FILE;
	struct statvfs sv;
	int fd, err = 0;

	if (!dir || !*dir)
		dir = "/var/tmp";
	if (run->fast)
		want = 9 * tsize;	/* 3 pieces of the ring */
	if (statvfs(dir, &sv))
		return bench_skip(run, "statvfs %s: %s", dir, strerror(errno));
	while (want > 4 * LD_TENSOR && (uint64_t)sv.f_bavail * sv.f_frsize < 2 * want)
		want /= 2;
	n = (int64_t)(want / tsize);
	snprintf(s->path, sizeof(s->path), "%s/tio-bench-gpu-load.XXXXXX", dir);
	fd = mkstemp(s->path);
	if (fd < 0) {
		s->path[0] = 0;
		return bench_skip(run, "cannot create a file in %s: %s", dir, strerror(errno));
	}
	close(fd);
	s->owned = 1;
	t.data = malloc(tsize);
	tv = calloc((size_t)n, sizeof(*tv));
	names = calloc((size_t)n, sizeof(*names));
	if (!t.data || !tv || !names) {
		err = bench_fail(run, ENOMEM, "tensors");
		goto out;
	}
	/* Each tensor its own bytes, so that a misplaced copy shows. */
	for (i = 0; i < n && !err; i++) {
		tv[i] = &t;
		if (asprintf(&names[i], "layers.%lld.weight", (long long)i) < 0) {
			names[i] = NULL;
			err = bench_fail(run, ENOMEM, "names");
		}
	}
	memset(t.data, 0x5a, tsize);
	if (!err && tio_safetensors_save(s->path, (const char *const *)names, tv, n))
		err = gpu_error(run, "tio_safetensors_save");
out:
	for (i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	free(tv);
	free(t.data);
	return err;
}

/* The whole file, mapped read-only (the safetensors library's view). */
static int ld_map(struct bench_run *run, struct lstate *s, char **out)
{
	int fd = open(s->path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return bench_fail(run, errno, "%s", s->path);
	*out = mmap(NULL, s->size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (*out == MAP_FAILED)
		return bench_fail(run, errno, "mmap %s", s->path);
	return 0;
}

/* The device load against the file's bytes, tensor by tensor. */
static int ld_verify(struct bench_run *run, struct lstate *s)
{
	tio_safetensors_t *st;
	char *file, *host = NULL;
	uint64_t max = 0;
	int64_t i;
	int err = ld_map(run, s, &file);

	if (err)
		return err;
	for (i = 0; i < s->n; i++)
		if (s->t[i].end - s->t[i].begin > max)
			max = s->t[i].end - s->t[i].begin;
	if (tio_safetensors_load_device(s->path, s->gpu, NULL, &st)) {
		munmap(file, s->size);
		return gpu_error(run, "tio_safetensors_load_device");
	}
	host = malloc(max ? max : 1);
	if (!host)
		err = bench_fail(run, ENOMEM, "verify buffer");
	for (i = 0; i < tio_safetensors_count(st) && !err; i++) {
		const char *name = tio_safetensors_name(st, i);
		tio_object_t *t = NULL;
		const DLTensor *dl;
		uint64_t len;
		int64_t k;

		if (tio_safetensors_tensor(st, name, &t)) {
			err = gpu_error(run, name);
			break;
		}
		dl = tio_tensor_dl(t);
		len = tio_tensor_nbytes(dl);
		for (k = 0; k < s->n; k++)
			if (!strcmp(s->t[k].name, name))
				break;
		if (k == s->n || s->t[k].end - s->t[k].begin != len)
			err = bench_fail(run, EIO, "tensor %s: not in the header, or "
					 "another size", name);
		else if (dl->device.device_type != s->gpu.device_type ||
			 tio_gpu_copy_dtoh(s->cs, host, (uintptr_t)dl->data + dl->byte_offset,
					   len) ||
			 tio_gpu_stream_sync(s->cs))
			err = gpu_error(run, "device tensor read back");
		else if (memcmp(host, file + s->data_start + s->t[k].begin, len))
			err = bench_fail(run, EIO, "tensor %s differs from the file", name);
		tio_object_decref(t);
	}
	free(host);
	tio_safetensors_free(st);
	munmap(file, s->size);
	return err;
}

static void ld_teardown(struct bench_run *run)
{
	struct lstate *s = run->state;
	int64_t i;

	if (!s)
		return;
	if (s->owned && s->path[0])
		unlink(s->path);
	tio_gpu_stream_destroy(s->cs);
	for (i = 0; s->t && i < s->n; i++)
		free(s->t[i].name);
	free(s->t);
	free(s->dev);
	free(s);
	run->state = NULL;
}

static int ld_setup(struct bench_run *run)
{
	enum lkind k = (enum lkind)run->c->arg;
	const char *file = getenv("TIO_BENCH_ST_FILE");
	struct lstate *s;
	struct stat sb;
	int err;

	DLDevice gpu = bench_gpu();

	if (tio_gpu_init(gpu.device_type)) {
		tio_object_t *e = tio_error_move_from_raised();

		bench_skip(run, "%s", e ? tio_error_message(e) : "no GPU");
		if (e)
			tio_object_decref(e);
		return BENCH_SKIP;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return bench_fail(run, ENOMEM, "state");
	run->state = s;
	s->gpu = gpu;
	if (file && *file)
		snprintf(s->path, sizeof(s->path), "%s", file);
	else if ((err = ld_write(run, s)))
		goto fail;
	if (stat(s->path, &sb)) {
		err = bench_fail(run, errno, "%s: %s", s->path, strerror(errno));
		goto fail;
	}
	s->size = (uint64_t)sb.st_size;
	run->bytes = s->size;
	if ((err = ld_header(run, s)))
		goto fail;
	if (k != L_HOST_COLD && tio_gpu_stream_create(s->gpu, &s->cs)) {
		err = gpu_error(run, "CUDA stream");
		goto fail;
	}
	if (k == L_DEV_COLD && (err = ld_verify(run, s)))
		goto fail;
	if (k == L_DEV_WARM || k == L_MMAP_WARM)
		ld_warm(s->path);
	return 0;
fail:
	ld_teardown(run);
	return err;
}

/* One load the safetensors library's way: mmap, allocate, copy pageable. */
static int ld_mmap_htod(struct bench_run *run, struct lstate *s)
{
	char *file;
	int64_t i;
	int err = ld_map(run, s, &file);

	if (err)
		return err;
	for (i = 0; i < s->n && !err; i++) {
		struct ld_tensor *t = &s->t[i];

		if (tio_gpu_tensor_empty(s->gpu, t->ndim, t->shape, t->dt, &s->dev[i]) ||
		    tio_gpu_copy_htod(s->cs, (uintptr_t)tio_tensor_dl(s->dev[i])->data,
				      file + s->data_start + t->begin, t->end - t->begin))
			err = gpu_error(run, "mmap + copy");
	}
	if (!err && tio_gpu_stream_sync(s->cs))
		err = gpu_error(run, "stream sync");
	for (i = 0; i < s->n; i++) {
		if (s->dev[i])
			tio_object_decref(s->dev[i]);
		s->dev[i] = NULL;
	}
	munmap(file, s->size);
	return err;
}

static int ld_run(struct bench_run *run, uint64_t n)
{
	enum lkind k = (enum lkind)run->c->arg;
	struct lstate *s = run->state;
	tio_safetensors_t *st;
	uint64_t i;
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		if (k == L_HOST_COLD || k == L_DEV_COLD || k == L_MMAP_COLD)
			ld_drop(s->path);
		if (k == L_MMAP_COLD || k == L_MMAP_WARM) {
			err = ld_mmap_htod(run, s);
			continue;
		}
		if (k == L_HOST_COLD ? tio_safetensors_load_ex(s->path, NULL, &st) :
		    tio_safetensors_load_device(s->path, s->gpu, NULL, &st))
			return gpu_error(run, run->c->name);
		bench_keep(tio_safetensors_count(st));
		tio_safetensors_free(st);
	}
	return err;
}

#define LOAD(n, k, r, what) {						\
	.suite = "gpu", .name = n, .size = "large", .ref = r, .note = what, \
	.setup = ld_setup, .run = ld_run, .teardown = ld_teardown, .arg = k }

static struct bench_case cases[] = {
	LOAD("load/host-cold", L_HOST_COLD, NULL,
	     "loader into pinned host memory, cold: what the disk gives the loader"),
	LOAD("load/mmap-htod-cold", L_MMAP_COLD, NULL,
	     "mmap + per-tensor alloc + pageable copy, cold (safetensors' way)"),
	LOAD("load/device-cold", L_DEV_COLD, "load/mmap-htod-cold",
	     "tio_safetensors_load_device, cold: bounce ring, reads overlap copies"),
	LOAD("load/mmap-htod-warm", L_MMAP_WARM, NULL,
	     "mmap + per-tensor alloc + pageable copy, page cache warm"),
	LOAD("load/device-warm", L_DEV_WARM, "load/mmap-htod-warm",
	     "tio_safetensors_load_device, page cache warm"),
};

static void __attribute__((constructor)) ld_register(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bench_register(&cases[i]);
}
