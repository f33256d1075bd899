/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the io_uring kselftests: one IORING_OP_URING_CMD per call,
 * built with liburing 2.3 primitives (io_uring_prep_cmd() came later).
 */
#ifndef TIO_URING_COMMON_H
#define TIO_URING_COMMON_H

#include <errno.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <liburing.h>
#include <linux/sync_file.h>
#include <linux/tensorio.h>

#define TIO_DEV "/dev/tensorio"
/* An impossible CQE result: the ring itself failed. */
#define TIO_RING_ERR (-100000)

/* ioctl() as a result code: 0 or positive, or -errno. */
static inline int tio_ioc(int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg);

	return ret < 0 ? -errno : ret;
}

/* A sync_file fd for a point (FENCE_EXPORT), or -1. */
static inline int tio_export_point(int fd, __u32 stream, __u64 seqno)
{
	struct tio_fence_export x = { .stream = stream, .seqno = seqno,
				      .flags = TIO_EXPORT_F_CLOEXEC };

	return tio_ioc(fd, TIO_IOC_FENCE_EXPORT, &x) ? -1 : x.fd;
}

/* A sync_file's status: 1 signalled, 0 active, or the fence's error. */
static inline int tio_sync_status(int sfd)
{
	struct sync_file_info info = { 0 };

	return ioctl(sfd, SYNC_IOC_FILE_INFO, &info) ? -1000 : info.status;
}

/* Fill @sqe with the uring form of a command. */
static inline void tio_prep_cmd(struct io_uring_sqe *sqe, int fd, bool fixed,
				unsigned int cmd, const void *payload)
{
	memset(sqe, 0, sizeof(*sqe));
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = cmd;
	sqe->addr3 = (uintptr_t)payload;	/* the first 8 bytes of sqe->cmd */
	if (fixed)
		sqe->flags |= IOSQE_FIXED_FILE;
}

/* Submit one command and wait for its CQE: its res, or TIO_RING_ERR. */
static inline int tio_uring_run(struct io_uring *ring, int fd, bool fixed,
				unsigned int cmd, const void *payload)
{
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	int res;

	sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return TIO_RING_ERR;
	tio_prep_cmd(sqe, fd, fixed, cmd, payload);
	sqe->user_data = 0x7105;
	/* With SQPOLL the count includes SQEs the thread has not taken yet. */
	if (io_uring_submit(ring) < 1)
		return TIO_RING_ERR;
	if (io_uring_wait_cqe(ring, &cqe))
		return TIO_RING_ERR;
	res = cqe->user_data == 0x7105 ? cqe->res : TIO_RING_ERR;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

/* Submit one command without waiting; @tag becomes the CQE's user_data. */
static inline int tio_uring_submit(struct io_uring *ring, int fd, bool fixed,
				   unsigned int cmd, const void *payload,
				   uint64_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		return -EBUSY;
	tio_prep_cmd(sqe, fd, fixed, cmd, payload);
	sqe->user_data = tag;
	return io_uring_submit(ring) >= 1 ? 0 : -EIO;
}

/*
 * Column @col (0: the first) of the numbers after @key in a debugfs file
 * of "key n0 n1 ..." lines, or -1.
 */
static inline long long tio_dbg_read_col(const char *path, const char *key,
					 int col)
{
	char line[160], name[64];
	long long val[4], ret = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lld %lld %lld %lld", name, &val[0],
			   &val[1], &val[2], &val[3]) > col + 1 &&
		    !strcmp(name, key))
			ret = val[col];
	fclose(f);
	return ret;
}

/* A value from a debugfs stats file, or -1. */
static inline long long tio_dbg_read(const char *path, const char *key)
{
	return tio_dbg_read_col(path, key, 0);
}

/* Module-wide: other tests' rings may still be tearing down. */
static inline long long tio_dbg_stat(const char *key)
{
	return tio_dbg_read("/sys/kernel/debug/tensorio/stats", key);
}

/* The only open file of this process (debugfs files/PID.N/stats). */
static inline long long tio_dbg_file_stat(const char *key)
{
	char pattern[96];
	glob_t g;
	long long ret = -1;

	snprintf(pattern, sizeof(pattern),
		 "/sys/kernel/debug/tensorio/files/%d.*/stats", (int)getpid());
	if (glob(pattern, 0, NULL, &g))
		return -1;
	if (g.gl_pathc == 1)
		ret = tio_dbg_read(g.gl_pathv[0], key);
	globfree(&g);
	return ret;
}

#endif /* TIO_URING_COMMON_H */
