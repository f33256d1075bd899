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
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "bench.h"

enum ikind { I_READ, I_MMAP, I_PINNED, I_FIO };

struct istate {
	char path[512];
	size_t size;
	void *buf;
	int pinned;
};

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
	enum ikind k = (enum ikind)run->c->arg;
	struct istate *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return bench_fail(run, ENOMEM, "state");
	run->state = s;
	s->size = (run->fast ? 16UL : 256UL) << 20;
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

/* fio's own figure: its read bandwidth, as clock units for the file. */
static int run_fio(struct bench_run *run, struct istate *s, double *ns)
{
	char fname[600], size[32], out[] = "/tmp/tio-bench-fio.XXXXXX";
	struct json_object *root, *jobs, *rd, *bw;
	int fd = mkstemp(out), st, err = 0;
	pid_t pid;

	if (fd < 0)
		return bench_fail(run, errno, "mkstemp");
	snprintf(fname, sizeof(fname), "--filename=%s", s->path);
	snprintf(size, sizeof(size), "--size=%zu", s->size);
	pid = fork();
	if (pid < 0) {
		close(fd);
		unlink(out);
		return bench_fail(run, errno, "fork");
	}
	if (!pid) {
		dup2(fd, 1);
		execl("/usr/bin/fio", "fio", "--name=tio-bench", fname, size,
		      "--rw=read", "--bs=1M", "--ioengine=io_uring",
		      "--iodepth=8", "--output-format=json", (char *)NULL);
		_exit(127);
	}
	close(fd);
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		unlink(out);
		return bench_fail(run, EIO, "fio failed");
	}
	root = json_object_from_file(out);
	unlink(out);
	if (!root)
		return bench_fail(run, EIO, "fio output is not JSON");
	if (json_object_object_get_ex(root, "jobs", &jobs) &&
	    json_object_array_length(jobs) > 0 &&
	    json_object_object_get_ex(json_object_array_get_idx(jobs, 0),
				      "read", &rd) &&
	    json_object_object_get_ex(rd, "bw_bytes", &bw) &&
	    json_object_get_double(bw) > 0)
		*ns = (double)s->size / json_object_get_double(bw) * 1e9;
	else
		err = bench_fail(run, EIO, "no read bandwidth in fio's output");
	json_object_put(root);
	return err;
}

static int io_run(struct bench_run *run, uint64_t n)
{
	struct istate *s = run->state;
	enum ikind k = (enum ikind)run->c->arg;
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

#define IO(n, k, r, tr, what) {						\
	.suite = "io", .name = n, .ref = r, .target_ratio = tr,		\
	.note = what, .setup = io_setup, .run = io_run,			\
	.teardown = io_teardown, .arg = k }

static struct bench_case cases[] = {
	IO("fio-io_uring", I_FIO, "fio-io_uring", 0,
	   "fio --ioengine=io_uring, 1 MiB blocks, depth 8 (its own bandwidth)"),
	IO("read-malloc", I_READ, "fio-io_uring", 0, "read() into malloc memory"),
	IO("mmap-memcpy", I_MMAP, "fio-io_uring", 0, "mmap + memcpy"),
	IO("read-pinned", I_PINNED, "fio-io_uring", 1.11,
	   "read() into a pinned buffer (target: >= 0.9x fio's GB/s)"),
};

static void __attribute__((constructor)) io_register(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bench_register(&cases[i]);
}
