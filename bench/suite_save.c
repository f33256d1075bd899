// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Suite "io", the save rows: checkpoint saves against fio's best write, GB/s.
 * The tensors (16 MiB float32 each, distinct memory) go to a new file in
 * $TIO_BENCH_DIR (default /var/tmp) each operation, the old one removed
 * first and untimed, as fio's file is (freeing a 2 GiB file took 0.3 s
 * here; a save over an existing file frees it after the new one is
 * durable):
 *   save/SIZE            tio_safetensors_save_opts, durable (fdatasync,
 *                        link in place, directory fsync) from pageable
 *                        (malloc'd, populated) memory: 64 MiB small, 512 MiB
 *                        medium, 2 GiB large (reduced to half the free space
 *                        and half the available memory; skipped under 1 GiB)
 *   save-pinned/medium   the same from a pinned buffer's memory
 *   save-async/medium    tio_safetensors_save_async until it returns (the
 *                        tensors captured); the wait for durability is not
 *                        timed
 *   memcpy/medium        one memcpy of the tensor bytes into populated
 *                        memory: what the asynchronous save's return is
 *                        held to
 *   fio-write-best/SIZE  fio's best O_DIRECT write with end_fsync=1 of a new
 *                        file at the same path and size, searched in setup
 *                        (bench/fio.c); its own bandwidth, which includes the
 *                        fsync
 * --fast: 16 MiB for every row.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/pinned.h>
#include <tensorio/safetensors.h>

#include "bench.h"
#include "fio.h"

#define SV_TENSOR (16UL << 20)

enum sv_row { SV_SMALL, SV_MEDIUM, SV_LARGE, SV_PINNED, SV_ASYNC, SV_MEMCPY, SV_FIO_MEDIUM,
	      SV_FIO_LARGE, SV_NROWS };

struct sstate {
	char path[512];
	uint64_t size;
	char *mem, *dst;
	tio_buffer_t *pbuf;
	int64_t n, shape;
	DLTensor *t;
	const DLTensor **tv;
	char **names;
	struct fio_cfg best;
};

static char sv_notes[SV_NROWS][240];

static void sv_teardown(struct bench_run *run)
{
	struct sstate *s = run->state;
	int64_t i;

	if (!s)
		return;
	for (i = 0; s->names && i < s->n; i++)
		free(s->names[i]);
	free(s->names);
	free(s->tv);
	free(s->t);
	if (s->pbuf)
		tio_buffer_decref(s->pbuf);
	else
		free(s->mem);
	free(s->dst);
	if (s->path[0])
		unlink(s->path);
	free(s);
	run->state = NULL;
}

static uint64_t sv_half_mem(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	unsigned long long kb = 0;
	char line[128];

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024 / 2;
}

/* The row's bytes: fitted to the disk and memory for the large rows. */
static int sv_size(struct bench_run *run, const char *dir, uint64_t *size)
{
	int row = (int)run->c->arg;
	int large = row == SV_LARGE || row == SV_FIO_LARGE;
	struct statvfs sv;
	uint64_t cap;

	*size = run->fast ? SV_TENSOR : row == SV_SMALL ? 64ULL << 20 :
		large ? 2ULL << 30 : 512ULL << 20;
	if (statvfs(dir, &sv))
		return bench_skip(run, "statvfs %s: %s", dir, strerror(errno));
	cap = (uint64_t)sv.f_bavail * sv.f_frsize / 2;
	if (sv_half_mem() && sv_half_mem() < cap)
		cap = sv_half_mem();
	if (cap < *size)
		*size = cap / SV_TENSOR * SV_TENSOR;
	if (*size < (large && !run->fast ? 1ULL << 30 : SV_TENSOR))
		return bench_skip(run, "too little room in %s (2x free) and memory", dir);
	return 0;
}

static int sv_tensors(struct bench_run *run, struct sstate *s)
{
	int64_t i;

	s->n = (int64_t)(s->size / SV_TENSOR);
	s->shape = SV_TENSOR / 4;
	s->t = calloc((size_t)s->n, sizeof(*s->t));
	s->tv = calloc((size_t)s->n, sizeof(*s->tv));
	s->names = calloc((size_t)s->n, sizeof(*s->names));
	if (!s->t || !s->tv || !s->names)
		return bench_fail(run, ENOMEM, "tensors");
	if (run->c->arg == SV_PINNED) {
		if (tio_pinned_alloc(s->size, &s->pbuf)) {
			tio_error_clear();
			return bench_skip(run, "cannot pin %llu MiB",
					  (unsigned long long)(s->size >> 20));
		}
		s->mem = tio_buffer_data(s->pbuf);
	} else {
		s->mem = malloc(s->size);
	}
	if (!s->mem)
		return bench_fail(run, ENOMEM, "%llu MiB", (unsigned long long)(s->size >> 20));
	for (i = 0; i < (int64_t)s->size; i += 4096)	/* populated, varied */
		memset(s->mem + i, (int)(i >> 12) & 0xff, 4096);
	for (i = 0; i < s->n; i++) {
		s->t[i] = (DLTensor){ .data = s->mem + i * (int64_t)SV_TENSOR,
				      .device = { kDLCPU, 0 }, .ndim = 1,
				      .dtype = { kDLFloat, 32, 1 }, .shape = &s->shape };
		s->tv[i] = &s->t[i];
		if (asprintf(&s->names[i], "layers.%lld.weight", (long long)i) < 0) {
			s->names[i] = NULL;
			return bench_fail(run, ENOMEM, "names");
		}
	}
	return 0;
}

static int sv_setup(struct bench_run *run)
{
	const char *dir = getenv("TIO_BENCH_DIR");
	int row = (int)run->c->arg, fd, err;
	struct sstate *s;

	dir = dir && *dir ? dir : "/var/tmp";
	s = calloc(1, sizeof(*s));
	if (!s)
		return bench_fail(run, ENOMEM, "state");
	run->state = s;
	err = sv_size(run, dir, &s->size);
	if (err)
		goto out;
	run->bytes = s->size;
	snprintf(s->path, sizeof(s->path), "%s/tio-bench-save.XXXXXX", dir);
	fd = mkstemp(s->path);
	if (fd < 0) {
		s->path[0] = 0;
		err = bench_skip(run, "cannot create a file in %s: %s", dir, strerror(errno));
		goto out;
	}
	close(fd);
	if (row == SV_FIO_MEDIUM || row == SV_FIO_LARGE) {
		err = bench_fio_best(run, s->path, s->size, 1, &s->best, sv_notes[row],
				     sizeof(sv_notes[row]));
		goto out;
	}
	err = sv_tensors(run, s);
	if (!err && row == SV_MEMCPY) {
		s->dst = malloc(s->size);
		if (!s->dst)
			err = bench_fail(run, ENOMEM, "memcpy destination");
		else
			memset(s->dst, 1, s->size);
	}
	snprintf(sv_notes[row], sizeof(sv_notes[row]), "%s, %llu MiB, %lld tensors "
		 "(ms = ns/op / 1e6)", row == SV_MEMCPY ? "memcpy into populated memory" :
		 row == SV_ASYNC ? "tio_safetensors_save_async until it returns (captured)" :
		 row == SV_PINNED ? "tio_safetensors_save_opts from pinned memory, durable" :
		 "tio_safetensors_save_opts from malloc'd memory, durable",
		 (unsigned long long)(s->size >> 20), (long long)s->n);
out:
	if (err)
		sv_teardown(run);
	return err;
}

static double sv_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int sv_lib_fail(struct bench_run *run, const char *what)
{
	int e = tio_errno();

	if (tio_error_peek_raised())
		fprintf(stderr, "# %s: %s\n", what, tio_error_message(tio_error_peek_raised()));
	tio_error_clear();
	return bench_fail(run, e ? e : EIO, "%s", what);
}

static int sv_run(struct bench_run *run, uint64_t n)
{
	struct sstate *s = run->state;
	int row = (int)run->c->arg;
	double total = 0, t0, t;
	tio_save_t *h;
	uint64_t i;

	for (i = 0; i < n; i++) {
		switch (row) {
		case SV_MEMCPY:
			memcpy(s->dst, s->mem, s->size);
			bench_clobber();
			break;
		case SV_FIO_MEDIUM:
		case SV_FIO_LARGE:
			if (bench_fio(run, s->path, s->size, &s->best, 1, &t))
				return -EIO;
			total += t;
			break;
		case SV_ASYNC:
			unlink(s->path);
			t0 = sv_now();
			if (tio_safetensors_save_async(s->path, (const char *const *)s->names,
						       s->tv, s->n, NULL, &h))
				return sv_lib_fail(run, "tio_safetensors_save_async");
			total += sv_now() - t0;
			if (tio_save_wait(h, -1)) {
				tio_save_free(h);
				return sv_lib_fail(run, "tio_save_wait");
			}
			tio_save_free(h);
			break;
		default:
			unlink(s->path);	/* a new file, as fio's */
			t0 = sv_now();
			if (tio_safetensors_save_opts(s->path, (const char *const *)s->names,
						      s->tv, s->n, NULL))
				return sv_lib_fail(run, "tio_safetensors_save_opts");
			total += sv_now() - t0;
		}
	}
	if (row != SV_MEMCPY)
		run->manual_ns = total;
	return 0;
}

#define SV(n, sz, r, row) {						\
	.suite = "io", .name = n, .size = sz, .ref = r,			\
	.note = sv_notes[row], .setup = sv_setup, .run = sv_run,		\
	.teardown = sv_teardown, .arg = row }

static struct bench_case cases[] = {
	SV("fio-write-best/medium", "medium", "fio-write-best/medium", SV_FIO_MEDIUM),
	SV("save/small", "small", "fio-write-best/medium", SV_SMALL),
	SV("save/medium", "medium", "fio-write-best/medium", SV_MEDIUM),
	SV("save-pinned/medium", "medium", "fio-write-best/medium", SV_PINNED),
	SV("memcpy/medium", "medium", "memcpy/medium", SV_MEMCPY),
	SV("save-async/medium", "medium", "memcpy/medium", SV_ASYNC),
	SV("fio-write-best/large", "large", "fio-write-best/large", SV_FIO_LARGE),
	SV("save/large", "large", "fio-write-best/large", SV_LARGE),
};

static void __attribute__((constructor)) sv_register(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bench_register(&cases[i]);
}
