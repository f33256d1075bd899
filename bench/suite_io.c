// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Suite "io": a file into memory, GB/s. The same file (written once per
 * run, so it is in the page cache: these rows compare copy paths, not
 * disks) is read whole by
 *   read-malloc     read() into malloc'd memory,
 *   mmap-memcpy     mmap + memcpy,
 *   read-pinned     read() into a pinned buffer (memfd + mlock, the user
 *                   backend's buffer),
 *   fio-io_uring    Debian's fio --ioengine=io_uring (1 MiB blocks, depth
 *                   8), its own reported bandwidth.
 * The file lives in $TIO_BENCH_DIR (default /var/tmp): 256 MiB, 16 MiB
 * with --fast.
 *   safetensors/SIZE  tio_safetensors_load of a file written by
 *                   tio_safetensors_save (16 MiB float32 tensors, all
 *                   views of one block): 64 MiB small, 512 MiB medium,
 *                   4 GiB large, reduced to half the free space of the
 *                   directory and half the available memory (skipped when
 *                   that is under 1 GiB); --fast: 16 MiB, small only.
 *                   One op is load + free: pinned buffer allocation,
 *                   io_uring read (O_DIRECT where aligned, so unlike the
 *                   rows above it reads the disk, not the page cache),
 *                   header parse and checks.
 *   fio-best, safetensors-cold, safetensors-first (medium): fio's best
 *                   configuration against the loader on the same file,
 *                   dropped from the page cache before each load; "first"
 *                   also empties the pinned cache, so that each load
 *                   populates fresh memory as a new process does;
 *                   "sharded" loads the same tensors cold from 4 shard
 *                   files through a model.safetensors.index.json.
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

#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/pinned.h>
#include <tensorio/safetensors.h>

#include "bench.h"
#include "fio.h"

enum ikind { I_READ, I_MMAP, I_PINNED, I_FIO };
#define IO_MEDIUM 0x100	/* the file of safetensors/medium's size */

struct istate {
	char path[512];
	size_t size;
	void *buf;
	int pinned;
	struct fio_cfg *best;	/* fio-best: the configuration found */
	int shards;		/* safetensors-sharded: <path>.N and <path>.index.json */
};

#define ST_SHARDS 4

static void shard_path(const struct istate *s, int i, char *out, size_t len)
{
	if (i < 0)
		snprintf(out, len, "%s.index.json", s->path);
	else
		snprintf(out, len, "%s.%d", s->path, i);
}

static void io_teardown(struct bench_run *run)
{
	struct istate *s = run->state;

	if (!s)
		return;
	if (s->buf) {
		if (s->pinned)
			munmap(s->buf, s->size);
		else
			free(s->buf);
	}
	if (s->path[0])
		unlink(s->path);
	for (int i = -1; s->shards && i < s->shards; i++) {
		char p[600];

		shard_path(s, i, p, sizeof(p));
		unlink(p);
	}
	free(s);
	run->state = NULL;
}

static int make_file(struct bench_run *run, struct istate *s)
{
	const char *dir = getenv("TIO_BENCH_DIR");
	size_t off, chunk = 1 << 20;
	char *blk = malloc(chunk);
	int fd, err = 0;

	if (!blk)
		return bench_fail(run, ENOMEM, "block");
	memset(blk, 0x5a, chunk);
	snprintf(s->path, sizeof(s->path), "%s/tio-bench-io.XXXXXX",
		 dir && *dir ? dir : "/var/tmp");
	fd = mkstemp(s->path);
	if (fd < 0) {
		s->path[0] = 0;
		free(blk);
		return bench_skip(run, "cannot create a file: %s", strerror(errno));
	}
	for (off = 0; off < s->size && !err; off += chunk)
		if (write(fd, blk, chunk) != (ssize_t)chunk)
			err = bench_skip(run, "cannot write %zu MiB: %s",
					 s->size >> 20, strerror(errno));
	close(fd);
	free(blk);
	return err;
}

static int io_setup(struct bench_run *run)
{
	enum ikind k = (enum ikind)(run->c->arg & 0xff);
	struct istate *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return bench_fail(run, ENOMEM, "state");
	run->state = s;
	s->size = (run->fast ? 16UL : 256UL) << 20;
	if (run->c->arg & IO_MEDIUM)	/* the size of safetensors/medium */
		s->size = run->fast ? 16UL << 20 : 512UL << 20;
	run->bytes = s->size;
	err = make_file(run, s);
	if (err)
		goto out;
	if (k == I_PINNED) {
		int fd = memfd_create("tio-bench-io", MFD_CLOEXEC);

		if (fd < 0 || ftruncate(fd, (off_t)s->size)) {
			err = bench_fail(run, errno, "memfd");
			if (fd >= 0)
				close(fd);
			goto out;
		}
		s->buf = mmap(NULL, s->size, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_POPULATE, fd, 0);
		close(fd);
		if (s->buf == MAP_FAILED) {
			s->buf = NULL;
			err = bench_fail(run, errno, "mmap");
			goto out;
		}
		s->pinned = 1;
		if (mlock(s->buf, s->size)) {
			err = bench_skip(run, "mlock %zu MiB: %s", s->size >> 20,
					 strerror(errno));
			goto out;
		}
	} else if (k != I_FIO) {
		s->buf = malloc(s->size);
		if (!s->buf) {
			err = bench_fail(run, ENOMEM, "buffer");
			goto out;
		}
		memset(s->buf, 0, s->size);
	}
	if (k == I_FIO && access("/usr/bin/fio", X_OK)) {
		err = bench_skip(run, "fio is not installed");
		goto out;
	}
	return 0;
out:
	io_teardown(run);
	return err;
}

static int read_all(struct bench_run *run, struct istate *s)
{
	int fd = open(s->path, O_RDONLY | O_CLOEXEC);
	size_t off = 0;

	if (fd < 0)
		return bench_fail(run, errno, "open");
	while (off < s->size) {
		ssize_t r = read(fd, (char *)s->buf + off, s->size - off);

		if (r <= 0) {
			close(fd);
			return bench_fail(run, r ? errno : EIO, "read");
		}
		off += (size_t)r;
	}
	close(fd);
	return 0;
}

static int mmap_copy(struct bench_run *run, struct istate *s)
{
	int fd = open(s->path, O_RDONLY | O_CLOEXEC);
	void *p;

	if (fd < 0)
		return bench_fail(run, errno, "open");
	p = mmap(NULL, s->size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return bench_fail(run, errno, "mmap");
	memcpy(s->buf, p, s->size);
	munmap(p, s->size);
	return 0;
}

static int run_fio(struct bench_run *run, struct istate *s, double *ns)
{
	static const struct fio_cfg c = { "io_uring", "1M", 8, 0, 0, 1 };

	return bench_fio(run, s->path, s->size, &c, 0, ns);
}

static int io_run(struct bench_run *run, uint64_t n)
{
	struct istate *s = run->state;
	enum ikind k = (enum ikind)(run->c->arg & 0xff);
	double total = 0, t;
	uint64_t i;
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		switch (k) {
		case I_READ:
		case I_PINNED:
			err = read_all(run, s);
			break;
		case I_MMAP:
			err = mmap_copy(run, s);
			break;
		case I_FIO:
			err = run_fio(run, s, &t);
			total += t;
			break;
		}
	}
	if (k == I_FIO)
		run->manual_ns = total;
	return err;
}

/* safetensors load: the file is written in setup, deleted in teardown. */
#define ST_TENSOR	(16UL << 20)

static struct {
	const char *label;
	char note[200];
} st_rows[7] = { { "small" }, { "medium" }, { "large" }, { "medium" }, { "medium" },
		 { "medium" }, { "medium" } };

/* Rows 3 and 4: the medium file cold (dropped from the page cache before
 * each load) and warm (read into it in setup); row 5 cold into fresh
 * memory (the pinned cache emptied first), as a new process loads. */
#define ST_COLD 3
#define ST_WARM 4
#define ST_FIRST 5
#define ST_SHARDED 6	/* cold, the same tensors in ST_SHARDS files and an index */

/* The file's tensors again in ST_SHARDS files, and the index naming them. */
static int st_write_shards(struct istate *s, char **names, const DLTensor **tv, uint64_t n)
{
	uint64_t per = (n + ST_SHARDS - 1) / ST_SHARDS, i;
	char p[600];
	const char *base;
	FILE *f;
	int k;

	for (k = 0; k < ST_SHARDS && (uint64_t)k * per < n; k++) {
		uint64_t first = (uint64_t)k * per, cnt = n - first < per ? n - first : per;

		s->shards = k + 1;
		shard_path(s, k, p, sizeof(p));
		if (tio_safetensors_save(p, (const char *const *)names + first, tv + first,
					 (int64_t)cnt))
			return -1;
	}
	shard_path(s, -1, p, sizeof(p));
	f = fopen(p, "we");
	if (!f)
		return -1;
	base = strrchr(s->path, '/') ? strrchr(s->path, '/') + 1 : s->path;
	fprintf(f, "{\"metadata\": {}, \"weight_map\": {");
	for (i = 0; i < n; i++)
		fprintf(f, "%s\"%s\": \"%s.%llu\"", i ? ", " : "", names[i], base,
			(unsigned long long)(i / per));
	fprintf(f, "}}\n");
	return fclose(f) ? -1 : 0;
}

/* Drop @path from the page cache. */
static void st_drop(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		fdatasync(fd);
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
}

static const char *bench_dir(void)
{
	const char *dir = getenv("TIO_BENCH_DIR");

	return dir && *dir ? dir : "/var/tmp";
}

/* Half the available memory, from /proc/meminfo (0 when unknown). */
static uint64_t half_mem_available(void)
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

static int st_setup(struct bench_run *run)
{
	unsigned int row = (unsigned int)run->c->arg;
	uint64_t want = row == 0 ? 64ULL << 20 : row == 2 ? 4ULL << 30 : 512ULL << 20;
	uint64_t i, n, half_mem;
	const char *dir = bench_dir();
	struct istate *s;
	struct statvfs sv;
	struct stat sb;
	void *blk = NULL;
	int64_t shape = ST_TENSOR / 4;
	DLTensor t = { .device = { kDLCPU, 0 }, .ndim = 1,
		       .dtype = { kDLFloat, 32, 1 }, .shape = &shape };
	const DLTensor **tv = NULL;
	char **names = NULL;
	int err = 0, fd;

	if (run->fast && row)
		return bench_skip(run, "--fast runs the small file only");
	if (run->fast)
		want = ST_TENSOR;
	if (statvfs(dir, &sv))
		return bench_skip(run, "statvfs %s: %s", dir, strerror(errno));
	/* Twice the file free, so that the bench never fills the disk. */
	if (row == 2) {
		uint64_t cap = (uint64_t)sv.f_bavail * sv.f_frsize / 2;

		half_mem = half_mem_available();
		if (half_mem && half_mem < cap)
			cap = half_mem;
		if (cap < want)
			want = cap / ST_TENSOR * ST_TENSOR;
		if (want < (1ULL << 30))
			return bench_skip(run, "under 1 GiB fits in %s (2x free) "
					  "and memory", dir);
	} else if ((uint64_t)sv.f_bavail * sv.f_frsize < 2 * want) {
		return bench_skip(run, "%s has under 2x %llu MiB free", dir,
				  (unsigned long long)(want >> 20));
	}
	n = want / ST_TENSOR;
	s = calloc(1, sizeof(*s));
	if (!s)
		return bench_fail(run, ENOMEM, "state");
	run->state = s;
	s->size = want;
	snprintf(s->path, sizeof(s->path), "%s/tio-bench-st.XXXXXX", dir);
	fd = mkstemp(s->path);
	if (fd < 0) {
		s->path[0] = 0;
		err = bench_skip(run, "cannot create a file in %s: %s", dir,
				 strerror(errno));
		goto out;
	}
	close(fd);
	blk = malloc(ST_TENSOR);
	tv = calloc(n, sizeof(*tv));
	names = calloc(n, sizeof(*names));
	if (!blk || !tv || !names) {
		err = bench_fail(run, ENOMEM, "tensors");
		goto out;
	}
	memset(blk, 0x3c, ST_TENSOR);
	t.data = blk;
	for (i = 0; i < n; i++) {
		tv[i] = &t;
		if (asprintf(&names[i], "layers.%llu.weight",
			     (unsigned long long)i) < 0) {
			names[i] = NULL;
			err = bench_fail(run, ENOMEM, "names");
			goto out;
		}
	}
	if (tio_safetensors_save(s->path, (const char *const *)names, tv,
				 (int64_t)n)) {
		err = bench_skip(run, "tio_safetensors_save %llu MiB: %s",
				 (unsigned long long)(want >> 20),
				 tio_error_peek_raised() ?
				 tio_error_message(tio_error_peek_raised()) : "error");
		tio_error_clear();
		goto out;
	}
	if (!stat(s->path, &sb))
		run->bytes = (uint64_t)sb.st_size;
	if (row == ST_SHARDED && st_write_shards(s, names, tv, n)) {
		err = bench_skip(run, "writing %d shards: %s", ST_SHARDS,
				 tio_error_peek_raised() ?
				 tio_error_message(tio_error_peek_raised()) : strerror(errno));
		tio_error_clear();
		goto out;
	}
	snprintf(st_rows[row].note, sizeof(st_rows[row].note),
		 "tio_safetensors_load + free, %llu MiB file, %llu tensors, %s "
		 "(ms = ns/op / 1e6; the pinned cache serves repeats)",
		 (unsigned long long)(want >> 20), (unsigned long long)n,
		 row == ST_COLD ? "cold: dropped from the page cache before each load" :
		 row == ST_FIRST ? "first: cold, into fresh memory (pinned cache trimmed)" :
		 row == ST_SHARDED ? "sharded: cold, 4 shards through model.safetensors.index.json" :
		 row == ST_WARM ? "warm: in the page cache" :
		 "O_DIRECT unless cached: from disk");
	if (row == ST_WARM) {
		/* Read once, so that the page cache holds it. */
		char *tmp = malloc(1 << 20);
		int rfd = open(s->path, O_RDONLY | O_CLOEXEC);

		while (tmp && rfd >= 0 && read(rfd, tmp, 1 << 20) > 0)
			;
		if (rfd >= 0)
			close(rfd);
		free(tmp);
	}
out:
	if (names)
		for (i = 0; i < n; i++)
			free(names[i]);
	free(names);
	free(tv);
	free(blk);
	if (err)
		io_teardown(run);
	return err;
}

static int st_run(struct bench_run *run, uint64_t n)
{
	struct istate *s = run->state;
	tio_safetensors_t *st;
	uint64_t i;

	for (i = 0; i < n; i++) {
		char p[600];
		int k;

		if (run->c->arg == ST_FIRST)
			tio_pinned_trim();
		if (run->c->arg == ST_COLD || run->c->arg == ST_FIRST)
			st_drop(s->path);
		for (k = 0; k < s->shards; k++) {
			shard_path(s, k, p, sizeof(p));
			st_drop(p);
		}
		shard_path(s, -1, p, sizeof(p));
		if (tio_safetensors_load_ex(s->shards ? p : s->path, NULL, &st)) {
			int e = tio_errno();

			tio_error_clear();
			return bench_fail(run, e ? e : EIO, "tio_safetensors_load");
		}
		bench_keep(tio_safetensors_count(st));
		tio_safetensors_free(st);
	}
	return 0;
}

/*
 * fio-best: fio's best configuration on a cold file of safetensors/medium's
 * size, over engines (io_uring with and without registered buffers, libaio,
 * psync), depths 1-32, blocks of 1-16 MiB and 1 or 2 jobs, O_DIRECT (so the
 * page cache plays no part); found once in setup (the three fastest of one
 * sample each run twice more, the best mean wins), then repeated. Its own
 * reported bandwidth.
 */
static char fio_best_note[200];
static struct fio_cfg fio_best_cfg;

static int fio_best_setup(struct bench_run *run)
{
	struct istate *s;
	int err;

	if (access("/usr/bin/fio", X_OK))
		return bench_skip(run, "fio is not installed");
	err = io_setup(run);
	if (err)
		return err;
	s = run->state;
	err = bench_fio_best(run, s->path, s->size, 0, &fio_best_cfg, fio_best_note,
			     sizeof(fio_best_note));
	if (err)
		return err;
	s->best = &fio_best_cfg;
	return 0;
}

static int fio_best_run(struct bench_run *run, uint64_t n)
{
	struct istate *s = run->state;
	double total = 0, t;
	uint64_t i;
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		err = bench_fio(run, s->path, s->size, s->best, 0, &t);
		total += t;
	}
	run->manual_ns = total;
	return err;
}

#define ST(sz, row) {								.suite = "io", .name = "safetensors/" sz, .size = sz,			.note = st_rows[row].note, .setup = st_setup, .run = st_run,		.teardown = io_teardown, .arg = row }

#define IO(n, k, r, what) {						\
	.suite = "io", .name = n, .ref = r,				\
	.note = what, .setup = io_setup, .run = io_run,			\
	.teardown = io_teardown, .arg = k }

static struct bench_case cases[] = {
	IO("fio-io_uring", I_FIO, "fio-io_uring",
	   "fio --ioengine=io_uring, 1 MiB blocks, depth 8 (its own bandwidth)"),
	IO("read-malloc", I_READ, "fio-io_uring", "read() into malloc memory"),
	IO("mmap-memcpy", I_MMAP, "fio-io_uring", "mmap + memcpy"),
	IO("read-pinned", I_PINNED, "fio-io_uring",
	   "read() into a pinned buffer"),
	ST("small", 0),
	ST("medium", 1),
	ST("large", 2),
	{ .suite = "io", .name = "fio-best/medium", .size = "medium",
	  .ref = "fio-best/medium", .note = fio_best_note, .setup = fio_best_setup,
	  .run = fio_best_run, .teardown = io_teardown, .arg = I_FIO | IO_MEDIUM },
	{ .suite = "io", .name = "safetensors-cold/medium", .size = "medium",
	  .ref = "fio-best/medium",
	  .note = st_rows[ST_COLD].note, .setup = st_setup, .run = st_run,
	  .teardown = io_teardown, .arg = ST_COLD },
	{ .suite = "io", .name = "safetensors-first/medium", .size = "medium",
	  .ref = "fio-best/medium",
	  .note = st_rows[ST_FIRST].note, .setup = st_setup, .run = st_run,
	  .teardown = io_teardown, .arg = ST_FIRST },
	{ .suite = "io", .name = "safetensors-sharded/medium", .size = "medium",
	  .ref = "fio-best/medium",
	  .note = st_rows[ST_SHARDED].note, .setup = st_setup, .run = st_run,
	  .teardown = io_teardown, .arg = ST_SHARDED },
	IO("mmap-memcpy/medium", I_MMAP | IO_MEDIUM, "mmap-memcpy/medium",
	   "mmap + memcpy, page cache warm, safetensors/medium's size"),
	{ .suite = "io", .name = "safetensors-warm/medium", .size = "medium",
	  .ref = "mmap-memcpy/medium",
	  .note = st_rows[ST_WARM].note, .setup = st_setup, .run = st_run,
	  .teardown = io_teardown, .arg = ST_WARM },
};

static void __attribute__((constructor)) io_register(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bench_register(&cases[i]);
}
