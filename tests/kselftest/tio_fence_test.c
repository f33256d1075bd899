// SPDX-License-Identifier: GPL-2.0
/*
 * Fences across processes and drivers: FENCE_EXPORT/IMPORT with sync_file
 * (SYNC_IOC_FILE_INFO, poll, SYNC_IOC_MERGE), ordering of imported points,
 * error propagation, process exit, BUF_ATTACH_FENCE/BUF_WAIT through the
 * buffer's dma_resv (DMA_BUF_IOCTL_EXPORT_SYNC_FILE, poll) and vgem.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/sync_file.h>
#include <linux/tensorio.h>
#include <libdrm/drm.h>

#include "kselftest_harness.h"
#include "tio_fdpass.h"

/* libdrm ships no vgem_drm.h: include/uapi/drm/vgem_drm.h, 4.10 on. */
#define DRM_VGEM_FENCE_ATTACH	0x1
#define DRM_VGEM_FENCE_SIGNAL	0x2
#define VGEM_FENCE_WRITE	0x1
struct drm_vgem_fence_attach {
	__u32 handle;
	__u32 flags;
	__u32 out_fence;
	__u32 pad;
};

struct drm_vgem_fence_signal {
	__u32 fence;
	__u32 flags;
};

#define DRM_IOCTL_VGEM_FENCE_ATTACH DRM_IOWR(DRM_COMMAND_BASE + \
	DRM_VGEM_FENCE_ATTACH, struct drm_vgem_fence_attach)
#define DRM_IOCTL_VGEM_FENCE_SIGNAL DRM_IOW(DRM_COMMAND_BASE + \
	DRM_VGEM_FENCE_SIGNAL, struct drm_vgem_fence_signal)

#define TIO_DEV "/dev/tensorio"

static __u32 stream_new(int fd)
{
	struct tio_stream_create c = { 0 };

	return ioctl(fd, TIO_IOC_STREAM_CREATE, &c) ? 0 : c.handle;
}

static __u64 emit(int fd, __u32 stream)
{
	struct tio_fence_emit e = { .stream = stream };

	return ioctl(fd, TIO_IOC_FENCE_EMIT, &e) ? 0 : e.seqno;
}

static int fsignal(int fd, __u32 stream, __u64 seqno, int error)
{
	struct tio_fence_signal s = {
		.stream = stream, .seqno = seqno, .error = error,
	};

	return ioctl(fd, TIO_IOC_FENCE_SIGNAL, &s) ? -errno : 0;
}

static int fwait(int fd, __u32 stream, __u64 seqno, __s64 timeout, int *status)
{
	struct tio_fence_wait w = {
		.stream = stream, .seqno = seqno, .timeout_ns = timeout,
	};

	if (ioctl(fd, TIO_IOC_FENCE_WAIT, &w))
		return -errno;
	if (status)
		*status = w.status;
	return 0;
}

/* A sync_file fd, or -errno. */
static int fexport(int fd, __u32 stream, __u64 seqno, __u32 flags)
{
	struct tio_fence_export x = {
		.stream = stream, .seqno = seqno, .flags = flags, .fd = -1,
	};

	return ioctl(fd, TIO_IOC_FENCE_EXPORT, &x) ? -errno : x.fd;
}

/* The new seqno, or 0 with errno set. */
static __u64 fimport(int fd, __u32 stream, int sync_fd)
{
	struct tio_fence_import m = { .stream = stream, .fd = sync_fd };

	return ioctl(fd, TIO_IOC_FENCE_IMPORT, &m) ? 0 : m.seqno;
}

/* The sync_file's status: 1 signalled, 0 pending, < 0 error; -100 if bad. */
static int sync_status(int sfd, struct sync_fence_info *fi, __u32 *nfences)
{
	struct sync_fence_info info[4];
	struct sync_file_info sfi = { 0 };

	memset(info, 0, sizeof(info));
	sfi.num_fences = 4;
	sfi.sync_fence_info = (__u64)(unsigned long)info;
	if (ioctl(sfd, SYNC_IOC_FILE_INFO, &sfi))
		return -100;
	if (fi)
		*fi = info[0];
	if (nfences)
		*nfences = sfi.num_fences;
	return sfi.status;
}

static int poll_in(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, timeout_ms);

	return n == 1 ? p.revents : n;
}

FIXTURE(fence) {
	int fd;
	__u32 s;
};

FIXTURE_SETUP(fence)
{
	struct tio_info info = { 0 };

	self->fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_INFO, &info));
	if (!(info.features & TIO_FEAT_SYNC_FILE))
		/* Skips the body too (plain SKIP in a setup does not). */
		SKIP({ _metadata->passed = 0; return; }, "no TIO_FEAT_SYNC_FILE");
	self->s = stream_new(self->fd);
	ASSERT_NE(0, self->s);
}

FIXTURE_TEARDOWN(fence)
{
	close(self->fd);
}

TEST_F(fence, export_sync_file)
{
	struct sync_fence_info fi;
	__u32 n = 0;
	int sfd;

	ASSERT_EQ(1, emit(self->fd, self->s));
	sfd = fexport(self->fd, self->s, 1, 0);
	ASSERT_LE(0, sfd);
	EXPECT_EQ(0, fcntl(sfd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(0, sync_status(sfd, &fi, &n));
	EXPECT_EQ(1, n);
	EXPECT_STREQ("tensorio", fi.driver_name);
	EXPECT_EQ(0, strncmp(fi.obj_name, "stream-", 7));
	EXPECT_EQ(0, poll_in(sfd, 0));
	ASSERT_EQ(0, fsignal(self->fd, self->s, 1, 0));
	EXPECT_EQ(POLLIN, poll_in(sfd, -1));
	EXPECT_EQ(1, sync_status(sfd, &fi, NULL));
	EXPECT_EQ(1, fi.status);
	EXPECT_NE(0, fi.timestamp_ns);
	close(sfd);
	/* CLOEXEC honoured; a retired point exports as signalled. */
	sfd = fexport(self->fd, self->s, 1, TIO_EXPORT_F_CLOEXEC);
	ASSERT_LE(0, sfd);
	EXPECT_EQ(FD_CLOEXEC, fcntl(sfd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(1, sync_status(sfd, NULL, NULL));
	close(sfd);
}

TEST_F(fence, export_bad_inputs)
{
	struct tio_fence_export x = { .stream = self->s, .seqno = 1 };

	ASSERT_EQ(1, emit(self->fd, self->s));
	x.flags = TIO_EXPORT_F_RDWR;
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_FENCE_EXPORT, &x));
	EXPECT_EQ(EINVAL, errno);
	x.flags = 0;
	x.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_FENCE_EXPORT, &x));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EINVAL, fexport(self->fd, self->s, 0, 0));
	EXPECT_EQ(-EINVAL, fexport(self->fd, self->s, 2, 0));
	EXPECT_EQ(-ENOENT, fexport(self->fd, 0, 1, 0));
	EXPECT_EQ(-ENOENT, fexport(self->fd, self->s + 1, 1, 0));
}

TEST_F(fence, sync_file_error)
{
	int sfd, sfd2;

	ASSERT_EQ(1, emit(self->fd, self->s));
	ASSERT_EQ(2, emit(self->fd, self->s));
	sfd = fexport(self->fd, self->s, 1, 0);
	sfd2 = fexport(self->fd, self->s, 2, 0);
	ASSERT_LE(0, sfd);
	ASSERT_LE(0, sfd2);
	ASSERT_EQ(0, fsignal(self->fd, self->s, 2, -EREMOTEIO));
	EXPECT_EQ(POLLIN, poll_in(sfd, -1));
	EXPECT_EQ(-EREMOTEIO, sync_status(sfd, NULL, NULL));
	EXPECT_EQ(-EREMOTEIO, sync_status(sfd2, NULL, NULL));
	close(sfd);
	close(sfd2);
}

TEST_F(fence, merge)
{
	struct sync_merge_data m = { .name = "tio-merge" };
	__u32 s2 = stream_new(self->fd), n = 0;
	int a, b;

	ASSERT_NE(0, s2);
	ASSERT_EQ(1, emit(self->fd, self->s));
	ASSERT_EQ(1, emit(self->fd, s2));
	a = fexport(self->fd, self->s, 1, 0);
	b = fexport(self->fd, s2, 1, 0);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	m.fd2 = b;
	ASSERT_EQ(0, ioctl(a, SYNC_IOC_MERGE, &m));
	EXPECT_EQ(0, sync_status(m.fence, NULL, &n));
	EXPECT_EQ(2, n);
	ASSERT_EQ(0, fsignal(self->fd, self->s, 1, 0));
	EXPECT_EQ(0, poll_in(m.fence, 0));
	EXPECT_EQ(0, sync_status(m.fence, NULL, NULL));
	ASSERT_EQ(0, fsignal(self->fd, s2, 1, 0));
	EXPECT_EQ(POLLIN, poll_in(m.fence, -1));
	EXPECT_EQ(1, sync_status(m.fence, NULL, NULL));
	close(m.fence);
	close(a);
	close(b);
}

TEST_F(fence, sync_file_outlives_file)
{
	int fd2 = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	__u32 s2;
	int sfd, done;

	ASSERT_LE(0, fd2);
	s2 = stream_new(fd2);
	ASSERT_NE(0, s2);
	ASSERT_EQ(1, emit(fd2, s2));
	ASSERT_EQ(2, emit(fd2, s2));
	ASSERT_EQ(0, fsignal(fd2, s2, 1, 0));
	done = fexport(fd2, s2, 1, 0);
	sfd = fexport(fd2, s2, 2, 0);
	ASSERT_LE(0, sfd);
	ASSERT_LE(0, done);
	ASSERT_EQ(0, close(fd2));
	/* Closing cancelled point 2; point 1 stays a clean signal. */
	EXPECT_EQ(POLLIN, poll_in(sfd, -1));
	EXPECT_EQ(-ECANCELED, sync_status(sfd, NULL, NULL));
	EXPECT_EQ(1, sync_status(done, NULL, NULL));
	close(sfd);
	close(done);
}

TEST_F(fence, import_bad_inputs)
{
	struct tio_fence_import m = { .stream = self->s };
	int pipefd[2], sfd;

	ASSERT_EQ(1, emit(self->fd, self->s));
	sfd = fexport(self->fd, self->s, 1, 0);
	ASSERT_LE(0, sfd);
	m.fd = sfd;
	m.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_FENCE_IMPORT, &m));
	EXPECT_EQ(EINVAL, errno);
	m.flags = 0;
	m.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_FENCE_IMPORT, &m));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, fimport(self->fd, 0, sfd));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(0, fimport(self->fd, self->s + 9, sfd));
	EXPECT_EQ(ENOENT, errno);
	/* Wrong fd types. */
	ASSERT_EQ(0, pipe(pipefd));
	EXPECT_EQ(0, fimport(self->fd, self->s, pipefd[0]));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, fimport(self->fd, self->s, self->fd));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, fimport(self->fd, self->s, -1));
	EXPECT_EQ(EBADF, errno);
	close(pipefd[1]);
	EXPECT_EQ(0, fimport(self->fd, self->s, pipefd[1]));	/* closed */
	EXPECT_EQ(EBADF, errno);
	close(pipefd[0]);
	/* Nothing was added: the next point is 2. */
	EXPECT_EQ(2, emit(self->fd, self->s));
	close(sfd);
}

TEST_F(fence, import_orders_points)
{
	__u32 dep = stream_new(self->fd);
	int sfd, st = 1;
	volatile __u64 *word;
	struct tio_stream_create c = { 0 };

	/* A second stream whose seqno page we watch. */
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &c));
	word = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, c.seqno_offset);
	ASSERT_NE(MAP_FAILED, word);
	ASSERT_NE(0, dep);
	ASSERT_EQ(1, emit(self->fd, dep));
	sfd = fexport(self->fd, dep, 1, 0);
	ASSERT_LE(0, sfd);

	ASSERT_EQ(1, emit(self->fd, c.handle));
	ASSERT_EQ(2, fimport(self->fd, c.handle, sfd));
	ASSERT_EQ(3, emit(self->fd, c.handle));
	/* 3 completes but waits behind the import. */
	ASSERT_EQ(0, fsignal(self->fd, c.handle, 3, 0));
	EXPECT_EQ(0, fwait(self->fd, c.handle, 1, 0, &st));
	EXPECT_EQ(-ETIME, fwait(self->fd, c.handle, 2, 0, &st));
	EXPECT_EQ(-ETIME, fwait(self->fd, c.handle, 3, 0, &st));
	EXPECT_EQ(1, *word);
	/* The dependency signals: 2 and 3 follow, with its error on 2. */
	ASSERT_EQ(0, fsignal(self->fd, dep, 1, -EIO));
	EXPECT_EQ(0, fwait(self->fd, c.handle, 3, -1, &st));
	EXPECT_EQ(0, st);
	EXPECT_EQ(0, fwait(self->fd, c.handle, 2, 0, &st));
	EXPECT_EQ(-EIO, st);
	EXPECT_EQ(3, *word);
	/* Importing a signalled sync_file: ready at once. */
	ASSERT_EQ(4, fimport(self->fd, c.handle, sfd));
	EXPECT_EQ(0, fwait(self->fd, c.handle, 4, -1, &st));
	EXPECT_EQ(-EIO, st);
	munmap((void *)word, 4096);
	close(sfd);
}

TEST_F(fence, import_own_stream)
{
	int sfd, st = 1;

	ASSERT_EQ(1, emit(self->fd, self->s));
	sfd = fexport(self->fd, self->s, 1, 0);
	ASSERT_LE(0, sfd);
	/* Point 2 waits for point 1 of its own stream. */
	ASSERT_EQ(2, fimport(self->fd, self->s, sfd));
	EXPECT_EQ(-ETIME, fwait(self->fd, self->s, 2, 0, &st));
	ASSERT_EQ(0, fsignal(self->fd, self->s, 1, 0));
	EXPECT_EQ(0, fwait(self->fd, self->s, 2, -1, &st));
	EXPECT_EQ(0, st);
	close(sfd);
}

TEST_F(fence, signal_error_abandons_import)
{
	__u32 dep = stream_new(self->fd);
	int sfd, st = 0;

	ASSERT_NE(0, dep);
	ASSERT_EQ(1, emit(self->fd, dep));
	sfd = fexport(self->fd, dep, 1, 0);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(1, fimport(self->fd, self->s, sfd));
	/* A clean signal does not complete an import point... */
	ASSERT_EQ(0, fsignal(self->fd, self->s, 1, 0));
	EXPECT_EQ(-ETIME, fwait(self->fd, self->s, 1, 0, &st));
	/* ...an error does. */
	ASSERT_EQ(0, fsignal(self->fd, self->s, 1, -ETIMEDOUT));
	EXPECT_EQ(0, fwait(self->fd, self->s, 1, 0, &st));
	EXPECT_EQ(-ETIMEDOUT, st);
	/* The dependency signalling later changes nothing. */
	ASSERT_EQ(0, fsignal(self->fd, dep, 1, 0));
	EXPECT_EQ(0, fwait(self->fd, self->s, 1, 0, &st));
	EXPECT_EQ(-ETIMEDOUT, st);
	close(sfd);
}

TEST_F(fence, destroy_with_pending_import)
{
	__u32 dep = stream_new(self->fd);
	struct tio_handle_op d = { .handle = self->s };
	int sfd, out;

	ASSERT_NE(0, dep);
	ASSERT_EQ(1, emit(self->fd, dep));
	sfd = fexport(self->fd, dep, 1, 0);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(1, fimport(self->fd, self->s, sfd));
	out = fexport(self->fd, self->s, 1, 0);
	ASSERT_LE(0, out);
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_DESTROY, &d));
	EXPECT_EQ(POLLIN, poll_in(out, -1));
	EXPECT_EQ(-ECANCELED, sync_status(out, NULL, NULL));
	/* The dependency signalling after the destroy is harmless. */
	ASSERT_EQ(0, fsignal(self->fd, dep, 1, 0));
	EXPECT_EQ(1, sync_status(sfd, NULL, NULL));
	close(out);
	close(sfd);
}

/*
 * A child owns a stream with unsignalled points and hands us a sync_file;
 * we wait on it (poll, and FENCE_WAIT through an imported point) and the
 * child exits: everything wakes with -ECANCELED.
 */
TEST_F(fence, process_exit_cancels)
{
	int sv[2], sfd, st = 0, wst;
	__u64 mine;
	pid_t pid;
	char go;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = open(TIO_DEV, O_RDWR), x;
		__u32 s = stream_new(fd);

		close(sv[0]);
		if (fd < 0 || !s || emit(fd, s) != 1 || emit(fd, s) != 2)
			_exit(1);
		x = fexport(fd, s, 2, 0);
		if (x < 0 || tio_send_fd(sv[1], x, 0))
			_exit(2);
		/* Exit, points unsignalled, once the parent says so. */
		if (read(sv[1], &go, 1) != 1)
			_exit(3);
		_exit(0);
	}
	close(sv[1]);
	sfd = tio_recv_fd(sv[0], 0);
	ASSERT_LE(0, sfd);
	EXPECT_EQ(0, sync_status(sfd, NULL, NULL));
	mine = fimport(self->fd, self->s, sfd);
	ASSERT_EQ(1, mine);
	ASSERT_EQ(1, write(sv[0], "g", 1));
	EXPECT_EQ(POLLIN, poll_in(sfd, -1));
	EXPECT_EQ(-ECANCELED, sync_status(sfd, NULL, NULL));
	EXPECT_EQ(0, fwait(self->fd, self->s, mine, -1, &st));
	EXPECT_EQ(-ECANCELED, st);
	wst = -1;
	ASSERT_EQ(pid, waitpid(pid, &wst, 0));
	EXPECT_TRUE(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
	close(sfd);
	close(sv[0]);
}

/* Buffers: BUF_ATTACH_FENCE, BUF_WAIT and implicit sync. */

/* A buffer handle, or 0 when buffers are unavailable. */
static __u32 buf_new(int fd)
{
	struct tio_buf_alloc a = { .size = 4096 };

	return ioctl(fd, TIO_IOC_BUF_ALLOC, &a) ? 0 : a.handle;
}

static int buf_export(int fd, __u32 h)
{
	struct tio_buf_export x = {
		.handle = h, .flags = TIO_EXPORT_F_CLOEXEC | TIO_EXPORT_F_RDWR,
	};

	return ioctl(fd, TIO_IOC_BUF_EXPORT, &x) ? -errno : x.fd;
}

static int attach(int fd, __u32 h, __u32 s, __u64 seqno, __u32 flags)
{
	struct tio_buf_attach a = {
		.handle = h, .stream = s, .seqno = seqno, .flags = flags,
	};

	return ioctl(fd, TIO_IOC_BUF_ATTACH_FENCE, &a) ? -errno : 0;
}

static int bwait(int fd, __u32 h, __u32 flags, __s64 timeout, int *status)
{
	struct tio_buf_wait w = {
		.handle = h, .flags = flags, .timeout_ns = timeout,
	};

	if (ioctl(fd, TIO_IOC_BUF_WAIT, &w))
		return -errno;
	if (status)
		*status = w.status;
	return 0;
}

/* DMA_BUF_IOCTL_EXPORT_SYNC_FILE: a sync_file fd or -errno. */
static int dmabuf_sync_file(int dfd, __u32 flags)
{
	struct dma_buf_export_sync_file x = { .flags = flags, .fd = -1 };

	return ioctl(dfd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &x) ? -errno : x.fd;
}

#define NEED_BUFFERS(b) do {						\
	if (!(b))							\
		SKIP(return, "buffers unavailable (%s)", strerror(errno)); \
} while (0)

TEST_F(fence, attach_bad_inputs)
{
	__u32 b = buf_new(self->fd);
	struct tio_buf_attach a = { .handle = b, .stream = self->s, .seqno = 1 };

	NEED_BUFFERS(b);
	ASSERT_EQ(1, emit(self->fd, self->s));
	a.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_BUF_ATTACH_FENCE, &a));
	EXPECT_EQ(EINVAL, errno);
	a.flags = 4;
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_BUF_ATTACH_FENCE, &a));
	EXPECT_EQ(EINVAL, errno);
	a.flags = 0;
	a.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_BUF_ATTACH_FENCE, &a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EINVAL, attach(self->fd, b, self->s, 2, 0));
	EXPECT_EQ(-EINVAL, attach(self->fd, b, self->s, 0, 0));
	EXPECT_EQ(-ENOENT, attach(self->fd, b, self->s + 5, 1, 0));
	EXPECT_EQ(-ENOENT, attach(self->fd, b + 5, self->s, 1, 0));
	/* Handles of the wrong kind. */
	EXPECT_EQ(-ENOENT, attach(self->fd, self->s, self->s, 1, 0));
	EXPECT_EQ(-ENOENT, attach(self->fd, b, b, 1, 0));
	/* Nothing attached: the buffer is idle. */
	EXPECT_EQ(0, bwait(self->fd, b, 0, 0, NULL));
}

TEST_F(fence, buf_wait_bad_inputs)
{
	__u32 b = buf_new(self->fd);
	struct tio_buf_wait w = { .handle = b };

	NEED_BUFFERS(b);
	w.flags = 4;
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_BUF_WAIT, &w));
	EXPECT_EQ(EINVAL, errno);
	w.flags = 0;
	w.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_BUF_WAIT, &w));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-ENOENT, bwait(self->fd, 0, 0, 0, NULL));
	EXPECT_EQ(-ENOENT, bwait(self->fd, self->s, 0, 0, NULL));
}

TEST_F(fence, attach_read_and_write)
{
	__u32 b = buf_new(self->fd);
	int st = 1;

	NEED_BUFFERS(b);
	ASSERT_EQ(1, emit(self->fd, self->s));
	ASSERT_EQ(2, emit(self->fd, self->s));
	ASSERT_EQ(0, attach(self->fd, b, self->s, 1, TIO_RESV_F_WRITE));
	ASSERT_EQ(0, attach(self->fd, b, self->s, 2, 0));	/* a reader */
	EXPECT_EQ(-ETIME, bwait(self->fd, b, TIO_RESV_F_WRITE, 0, &st));
	EXPECT_EQ(-ETIME, bwait(self->fd, b, 0, 1000000, &st));
	ASSERT_EQ(0, fsignal(self->fd, self->s, 1, 0));
	/* Writers done; readers not yet. */
	EXPECT_EQ(0, bwait(self->fd, b, TIO_RESV_F_WRITE, -1, &st));
	EXPECT_EQ(0, st);
	EXPECT_EQ(-ETIME, bwait(self->fd, b, 0, 0, &st));
	ASSERT_EQ(0, fsignal(self->fd, self->s, 2, -EIO));
	EXPECT_EQ(0, bwait(self->fd, b, TIO_WAIT_F_ABSOLUTE, -1, &st));
	EXPECT_EQ(-EIO, st);
}

TEST_F(fence, attach_implicit_sync_dmabuf)
{
	__u32 b = buf_new(self->fd);
	int dfd, sfd, rfd;

	NEED_BUFFERS(b);
	dfd = buf_export(self->fd, b);
	ASSERT_LE(0, dfd);
	ASSERT_EQ(1, emit(self->fd, self->s));
	ASSERT_EQ(0, attach(self->fd, b, self->s, 1, TIO_RESV_F_WRITE));
	/* Readers wait for the writer; poll on the dma-buf too. */
	sfd = dmabuf_sync_file(dfd, DMA_BUF_SYNC_READ);
	ASSERT_LE(0, sfd);
	rfd = dmabuf_sync_file(dfd, DMA_BUF_SYNC_WRITE);
	ASSERT_LE(0, rfd);
	EXPECT_EQ(0, sync_status(sfd, NULL, NULL));
	EXPECT_EQ(0, poll_in(dfd, 0));
	ASSERT_EQ(0, fsignal(self->fd, self->s, 1, 0));
	EXPECT_EQ(POLLIN, poll_in(sfd, -1));
	EXPECT_EQ(1, sync_status(sfd, NULL, NULL));
	EXPECT_EQ(1, sync_status(rfd, NULL, NULL));
	EXPECT_EQ(POLLIN, poll_in(dfd, -1));
	close(rfd);
	close(sfd);
	close(dfd);
}

/* The vgem card's fd, or -1. */
static int vgem_open(void)
{
	char name[16], path[300];
	struct dirent *de;
	DIR *d = opendir("/dev/dri");
	int fd = -1;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		struct drm_version v = { .name = name, .name_len = sizeof(name) };

		if (strncmp(de->d_name, "card", 4))
			continue;
		snprintf(path, sizeof(path), "/dev/dri/%s", de->d_name);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(name, 0, sizeof(name));
		if (!ioctl(fd, DRM_IOCTL_VERSION, &v) &&
		    !strncmp(name, "vgem", 4))
			break;
		close(fd);
		fd = -1;
	}
	closedir(d);
	return fd;
}

/* A vgem GEM handle for a 4 KiB buffer, or 0. */
static __u32 vgem_bo(int vfd)
{
	struct drm_mode_create_dumb c = { .width = 1024, .height = 1, .bpp = 32 };

	return ioctl(vfd, DRM_IOCTL_MODE_CREATE_DUMB, &c) ? 0 : c.handle;
}

TEST_F(fence, vgem_fence_as_dependency)
{
	struct drm_vgem_fence_attach fa = { .flags = VGEM_FENCE_WRITE };
	struct drm_vgem_fence_signal fs = { 0 };
	struct drm_prime_handle ph = { .flags = DRM_CLOEXEC };
	int vfd = vgem_open(), sfd, st = 1;
	__u64 p;

	if (vfd < 0)
		SKIP(return, "no vgem");
	fa.handle = vgem_bo(vfd);
	ASSERT_NE(0, fa.handle);
	ASSERT_EQ(0, ioctl(vfd, DRM_IOCTL_VGEM_FENCE_ATTACH, &fa));
	ph.handle = fa.handle;
	ASSERT_EQ(0, ioctl(vfd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph));
	sfd = dmabuf_sync_file(ph.fd, DMA_BUF_SYNC_READ);
	ASSERT_LE(0, sfd);
	p = fimport(self->fd, self->s, sfd);
	ASSERT_EQ(1, p);
	EXPECT_EQ(-ETIME, fwait(self->fd, self->s, p, 0, &st));
	fs.fence = fa.out_fence;
	ASSERT_EQ(0, ioctl(vfd, DRM_IOCTL_VGEM_FENCE_SIGNAL, &fs));
	EXPECT_EQ(0, fwait(self->fd, self->s, p, -1, &st));
	EXPECT_EQ(0, st);
	close(sfd);
	close(ph.fd);
	close(vfd);
}

TEST_F(fence, vgem_sees_our_fence)
{
	struct drm_prime_handle ph = { 0 }, back = { .flags = DRM_CLOEXEC };
	__u32 b = buf_new(self->fd);
	int vfd, dfd, sfd;

	NEED_BUFFERS(b);
	vfd = vgem_open();
	if (vfd < 0)
		SKIP(return, "no vgem");
	dfd = buf_export(self->fd, b);
	ASSERT_LE(0, dfd);
	ph.fd = dfd;
	ASSERT_EQ(0, ioctl(vfd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &ph));
	ASSERT_EQ(1, emit(self->fd, self->s));
	ASSERT_EQ(0, attach(self->fd, b, self->s, 1, TIO_RESV_F_WRITE));
	/* vgem's view of the buffer carries our fence. */
	back.handle = ph.handle;
	ASSERT_EQ(0, ioctl(vfd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &back));
	sfd = dmabuf_sync_file(back.fd, DMA_BUF_SYNC_READ);
	ASSERT_LE(0, sfd);
	EXPECT_EQ(0, sync_status(sfd, NULL, NULL));
	EXPECT_EQ(0, poll_in(sfd, 0));
	ASSERT_EQ(0, fsignal(self->fd, self->s, 1, 0));
	EXPECT_EQ(POLLIN, poll_in(sfd, -1));
	EXPECT_EQ(1, sync_status(sfd, NULL, NULL));
	close(sfd);
	close(back.fd);
	close(dfd);
	close(vfd);
}

/*
 * An imported point inside a run of points that completed with an error
 * keeps its own clean outcome; the points around it, which have no fence
 * of their own, report the run's error, also through a sync_file made
 * after they signalled.
 */
TEST_F(fence, import_inside_error_run)
{
	__u32 dep = stream_new(self->fd);
	int sfd, sfd1, sfd3, st = 1;

	ASSERT_NE(0, dep);
	ASSERT_EQ(1, emit(self->fd, dep));
	ASSERT_EQ(0, fsignal(self->fd, dep, 1, 0));
	sfd = fexport(self->fd, dep, 1, 0);
	ASSERT_LE(0, sfd);

	ASSERT_EQ(1, emit(self->fd, self->s));
	ASSERT_EQ(2, fimport(self->fd, self->s, sfd));	/* ready at once */
	ASSERT_EQ(3, emit(self->fd, self->s));
	ASSERT_EQ(0, fsignal(self->fd, self->s, 3, -EIO));
	EXPECT_EQ(0, fwait(self->fd, self->s, 1, 0, &st));
	EXPECT_EQ(-EIO, st);
	EXPECT_EQ(0, fwait(self->fd, self->s, 2, 0, &st));
	EXPECT_EQ(0, st);
	EXPECT_EQ(0, fwait(self->fd, self->s, 3, 0, &st));
	EXPECT_EQ(-EIO, st);
	sfd1 = fexport(self->fd, self->s, 1, 0);
	sfd3 = fexport(self->fd, self->s, 3, 0);
	ASSERT_LE(0, sfd1);
	ASSERT_LE(0, sfd3);
	EXPECT_EQ(-EIO, sync_status(sfd1, NULL, NULL));
	EXPECT_EQ(-EIO, sync_status(sfd3, NULL, NULL));
	close(sfd1);
	close(sfd3);
	close(sfd);
}

/*
 * A sync_file of a point taken between points that never get a fence:
 * it signals when its own point does, not before, and outlives its file.
 */
TEST_F(fence, sync_file_among_points_without_fences)
{
	int fd2 = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	__u32 s2;
	int i, sfd;

	ASSERT_LE(0, fd2);
	s2 = stream_new(fd2);
	ASSERT_NE(0, s2);
	for (i = 1; i <= 100; i++)
		ASSERT_EQ(i, emit(fd2, s2));
	sfd = fexport(fd2, s2, 50, 0);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(0, fsignal(fd2, s2, 49, 0));
	EXPECT_EQ(0, poll_in(sfd, 0));
	EXPECT_EQ(0, sync_status(sfd, NULL, NULL));
	ASSERT_EQ(0, fsignal(fd2, s2, 60, 0));
	EXPECT_EQ(POLLIN, poll_in(sfd, 0));
	EXPECT_EQ(1, sync_status(sfd, NULL, NULL));
	/* Points 61..100 are cancelled with the file; the sync_file stays. */
	close(fd2);
	EXPECT_EQ(1, sync_status(sfd, NULL, NULL));
	close(sfd);
}

TEST_HARNESS_MAIN
