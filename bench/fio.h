/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fio, the peer of the io suite's rows (suite_io.c reads, suite_save.c
 * writes): one configuration run, its own bandwidth as clock units for
 * the bytes; the best of a search over engines, blocks, depths and jobs.
 */
#ifndef TIO_BENCH_FIO_H
#define TIO_BENCH_FIO_H

#include <stddef.h>

#include "bench.h"

/*
 * One fio configuration: engine, block size, depth, O_DIRECT, registered
 * buffers (io_uring's --fixedbufs), jobs (each on its share of the file).
 */
struct fio_cfg {
	const char *engine;
	const char *bs;
	int depth;
	int direct;
	int fixed;
	int jobs;
};

/*
 * Run @c over @bytes of @path: a read of the file, or (@write) a write of
 * a new file (the old one removed first, so that fio allocates it as a
 * save does) with end_fsync=1, whose time fio's figure includes. *@ns:
 * the time at fio's reported bandwidth. 0, or an error set in @run.
 */
int bench_fio(struct bench_run *run, const char *path, size_t bytes,
	      const struct fio_cfg *c, int write, double *ns);

/*
 * fio's best O_DIRECT configuration for @path: one sample each over
 * io_uring (plain, --fixedbufs), libaio (and psync for reads), blocks of
 * 1-16 MiB, depths 1-32, 1 or 2 jobs; the three fastest run twice more
 * and the best mean wins, in *@best; a note saying which in @note.
 * 0, or BENCH_SKIP when fio is missing or every configuration failed.
 */
int bench_fio_best(struct bench_run *run, const char *path, size_t bytes, int write,
		   struct fio_cfg *best, char *note, size_t len);

#endif /* TIO_BENCH_FIO_H */
