// SPDX-License-Identifier: GPL-2.0
/*
 * dma-buf interop: BUF_EXPORT and BUF_IMPORT between tensorio files and
 * processes, with vgem, mmap through the device fd and through the
 * dma-buf, lifetimes past BUF_FREE and close, and bad fds.
 */
#include <dirent.h>
#include <linux/dma-buf.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <xf86drm.h>

#include "kselftest_harness.h"
#include "tio_fdpass.h"
#include "tio_buf_common.h"
#include "tio_vgem.h"

FIXTURE(dmabuf) {
	int fd;
	int fd2;
	long long pinned0;
};

FIXTURE_SETUP(dmabuf)
{
	struct tio_info info = { 0 };

	self->fd = tio_open();
	ASSERT_LE(0, self->fd);
	self->fd2 = tio_open();
	ASSERT_LE(0, self->fd2);
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_INFO, &info));
	ASSERT_TRUE(info.features & TIO_FEAT_DMABUF);
	self->pinned0 = info.pinned;
}

FIXTURE_TEARDOWN(dmabuf)
{
	close(self->fd);
	close(self->fd2);
}

static ino_t ino_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : st.st_ino;
}

TEST_F(dmabuf, export_twice_same_dmabuf)
{
	struct tio_buf_info bi = { 0 };
	uint32_t h;
	int a, b;

	ASSERT_EQ(0, tio_alloc(self->fd, PAGE, NULL, &h, NULL));
	bi.handle = h;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_INFO, &bi));
	EXPECT_EQ(0, bi.state & TIO_BUF_S_EXPORTED);
	ASSERT_EQ(0, tio_export(self->fd, h, TIO_EXPORT_F_CLOEXEC, &a));
	ASSERT_EQ(0, tio_export(self->fd, h, TIO_EXPORT_F_RDWR, &b));
	EXPECT_NE(a, b);
	EXPECT_EQ(ino_of(a), ino_of(b));
	EXPECT_EQ(FD_CLOEXEC, fcntl(a, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(0, fcntl(b, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_RDWR, fcntl(a, F_GETFL) & O_ACCMODE);
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_INFO, &bi));
	EXPECT_EQ(TIO_BUF_S_EXPORTED, bi.state & TIO_BUF_S_EXPORTED);
	close(a);
	close(b);
	/* Once every fd is gone the buffer has no dma-buf; a new one comes. */
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_INFO, &bi));
	EXPECT_EQ(0, bi.state & TIO_BUF_S_EXPORTED);
	ASSERT_EQ(0, tio_export(self->fd, h, 0, &a));
	close(a);
	EXPECT_EQ(0, tio_free(self->fd, h));
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
}

TEST_F(dmabuf, export_bad_inputs)
{
	struct tio_buf_export e = { 0 };
	uint32_t h;
	int dfd;

	ASSERT_EQ(0, tio_alloc(self->fd, PAGE, NULL, &h, NULL));
	e.handle = h;
	e.flags = 4;
	EXPECT_EQ(-EINVAL, tio_ioc(self->fd, TIO_IOC_BUF_EXPORT, &e));
	e.flags = 0;
	e.pad = 1;
	EXPECT_EQ(-EINVAL, tio_ioc(self->fd, TIO_IOC_BUF_EXPORT, &e));
	EXPECT_EQ(-ENOENT, tio_export(self->fd, 0, 0, &dfd));
	EXPECT_EQ(-ENOENT, tio_export(self->fd2, h, 0, &dfd));
	EXPECT_EQ(0, tio_free(self->fd, h));
	EXPECT_EQ(-ENOENT, tio_export(self->fd, h, 0, &dfd));
}

TEST_F(dmabuf, import_bad_fds)
{
	struct tio_buf_import im = { 0 };
	struct dma_buf_export_sync_file sf = { .flags = DMA_BUF_SYNC_READ };
	uint32_t h, h2;
	int pfd[2], reg, dfd;

	EXPECT_EQ(-EBADF, tio_import(self->fd, -1, &h, NULL, NULL));
	EXPECT_EQ(-EBADF, tio_import(self->fd, 12345, &h, NULL, NULL));
	reg = open("/proc/self/status", O_RDONLY);
	ASSERT_LE(0, reg);
	EXPECT_EQ(-EINVAL, tio_import(self->fd, reg, &h, NULL, NULL));
	close(reg);
	ASSERT_EQ(0, pipe(pfd));
	EXPECT_EQ(-EINVAL, tio_import(self->fd, pfd[0], &h, NULL, NULL));
	close(pfd[0]);
	close(pfd[1]);
	/* Our own device fd is no dma-buf either. */
	EXPECT_EQ(-EINVAL, tio_import(self->fd, self->fd2, &h, NULL, NULL));
	/* A sync_file, taken from a dma-buf's reservation. */
	ASSERT_EQ(0, tio_alloc(self->fd, PAGE, NULL, &h2, NULL));
	ASSERT_EQ(0, tio_export(self->fd, h2, 0, &dfd));
	if (ioctl(dfd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &sf) == 0) {
		EXPECT_EQ(-EINVAL, tio_import(self->fd, sf.fd, &h, NULL, NULL));
		close(sf.fd);
	} else {
		TH_LOG("no DMA_BUF_IOCTL_EXPORT_SYNC_FILE: %s", strerror(errno));
	}
	im.fd = dfd;
	im.flags = 1;
	EXPECT_EQ(-EINVAL, tio_ioc(self->fd, TIO_IOC_BUF_IMPORT, &im));
	im.flags = 0;
	im.pad = 1;
	EXPECT_EQ(-EINVAL, tio_ioc(self->fd, TIO_IOC_BUF_IMPORT, &im));
	close(dfd);
	EXPECT_EQ(0, tio_free(self->fd, h2));
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
}

TEST_F(dmabuf, round_trip_two_files)
{
	struct tio_tensor_desc d = tio_desc_2d(16, 64), out;
	struct tio_buf_info bi = { .desc_ptr = (uintptr_t)&out };
	struct dma_buf_sync sync = { 0 };
	unsigned char *p, *q, *r;
	uint32_t h, h2, h3;
	uint64_t off, off2, size;
	int dfd, dfd2;

	ASSERT_EQ(0, tio_alloc(self->fd, 4 * PAGE, &d, &h, &off));
	p = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, off);
	ASSERT_NE(MAP_FAILED, p);
	tio_fill(p, 4 * PAGE, 11);
	ASSERT_EQ(0, tio_export(self->fd, h, TIO_EXPORT_F_CLOEXEC, &dfd));

	ASSERT_EQ(0, tio_import(self->fd2, dfd, &h2, &off2, &size));
	EXPECT_EQ(4 * PAGE, size);
	EXPECT_EQ((uint64_t)h2 << 40, off2);
	bi.handle = h2;
	ASSERT_EQ(0, ioctl(self->fd2, TIO_IOC_BUF_INFO, &bi));
	EXPECT_EQ(TIO_BUF_KIND_IMPORT, bi.kind);
	EXPECT_EQ(4 * PAGE, bi.size);
	EXPECT_EQ(TIO_BUF_S_DESC | TIO_BUF_S_EXPORTED, bi.state);
	EXPECT_EQ(0, memcmp(&d, &out, sizeof(d)));

	/* Through the second file's device fd. */
	q = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd2, off2);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0, tio_check(q, 4 * PAGE, 11));
	/* Through the dma-buf fd, bracketed by the CPU access ioctls. */
	r = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0);
	ASSERT_NE(MAP_FAILED, r);
	sync.flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW;
	EXPECT_EQ(0, ioctl(dfd, DMA_BUF_IOCTL_SYNC, &sync));
	EXPECT_EQ(0, tio_check(r, 4 * PAGE, 11));
	tio_fill(r, 4 * PAGE, 12);
	sync.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW;
	EXPECT_EQ(0, ioctl(dfd, DMA_BUF_IOCTL_SYNC, &sync));
	EXPECT_EQ(0, tio_check(p, 4 * PAGE, 12));
	EXPECT_EQ(0, tio_check(q, 4 * PAGE, 12));
	/* Out of range through the dma-buf. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, dfd, 4 * PAGE));

	/* Re-exporting the import gives back the same dma-buf. */
	ASSERT_EQ(0, tio_export(self->fd2, h2, 0, &dfd2));
	EXPECT_EQ(ino_of(dfd), ino_of(dfd2));
	/* Importing twice gives two handles of it. */
	ASSERT_EQ(0, tio_import(self->fd2, dfd2, &h3, NULL, NULL));
	EXPECT_NE(h2, h3);
	close(dfd2);

	munmap(p, 4 * PAGE);
	munmap(q, 4 * PAGE);
	munmap(r, 4 * PAGE);
	close(dfd);
	EXPECT_EQ(0, tio_free(self->fd2, h2));
	EXPECT_EQ(0, tio_free(self->fd2, h3));
	EXPECT_EQ(self->pinned0 + 4 * PAGE, tio_pinned(self->fd));
	EXPECT_EQ(0, tio_free(self->fd, h));
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
}

TEST_F(dmabuf, pinned_user_memory_export)
{
	struct tio_buf_pin pin = { .size = 2 * PAGE };
	unsigned char *u, *q;
	uint32_t h, h2;
	uint64_t off2;
	int dfd;

	u = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, u);
	tio_fill(u, 2 * PAGE, 21);
	pin.addr = (uintptr_t)u;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_PIN_USER, &pin));
	h = pin.handle;
	ASSERT_EQ(0, tio_export(self->fd, h, 0, &dfd));
	ASSERT_EQ(0, tio_import(self->fd2, dfd, &h2, &off2, NULL));
	q = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd2, off2);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0, tio_check(q, 2 * PAGE, 21));
	tio_fill(q, 2 * PAGE, 22);
	EXPECT_EQ(0, tio_check(u, 2 * PAGE, 22));
	munmap(q, 2 * PAGE);
	close(dfd);
	EXPECT_EQ(0, tio_free(self->fd2, h2));
	EXPECT_EQ(0, tio_free(self->fd, h));
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
	munmap(u, 2 * PAGE);
}

TEST_F(dmabuf, readonly_export)
{
	struct tio_buf_pin pin = { .size = PAGE, .flags = TIO_PIN_F_READONLY };
	unsigned char *u, *q;
	uint32_t h, h2;
	uint64_t off2;
	int dfd;

	u = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, u);
	tio_fill(u, PAGE, 31);
	pin.addr = (uintptr_t)u;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_PIN_USER, &pin));
	h = pin.handle;
	EXPECT_EQ(-EACCES, tio_export(self->fd, h, TIO_EXPORT_F_RDWR, &dfd));
	ASSERT_EQ(0, tio_export(self->fd, h, 0, &dfd));
	EXPECT_EQ(O_RDONLY, fcntl(dfd, F_GETFL) & O_ACCMODE);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0));
	ASSERT_EQ(0, tio_import(self->fd2, dfd, &h2, &off2, NULL));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
				   self->fd2, off2));
	q = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd2, off2);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0, tio_check(q, PAGE, 31));
	EXPECT_EQ(-EACCES, tio_export(self->fd2, h2, TIO_EXPORT_F_RDWR, &dfd));
	munmap(q, PAGE);
	close(dfd);
	EXPECT_EQ(0, tio_free(self->fd2, h2));
	EXPECT_EQ(0, tio_free(self->fd, h));
	munmap(u, PAGE);
}

/* The dma-buf keeps the backing alive past BUF_FREE and close. */
TEST_F(dmabuf, dmabuf_outlives_handle_and_file)
{
	unsigned char *p, *r;
	uint32_t h;
	uint64_t off;
	int fd = tio_open(), dfd;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, tio_alloc(fd, 3 * PAGE, NULL, &h, &off));
	p = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
	ASSERT_NE(MAP_FAILED, p);
	tio_fill(p, 3 * PAGE, 41);
	munmap(p, 3 * PAGE);
	ASSERT_EQ(0, tio_export(fd, h, 0, &dfd));
	ASSERT_EQ(0, tio_free(fd, h));
	close(fd);
	EXPECT_EQ(self->pinned0 + 3 * PAGE, tio_pinned(self->fd));
	r = mmap(NULL, 3 * PAGE, PROT_READ, MAP_SHARED, dfd, 0);
	ASSERT_NE(MAP_FAILED, r);
	close(dfd);	/* the mapping still holds the dma-buf */
	EXPECT_EQ(0, tio_check(r, 3 * PAGE, 41));
	EXPECT_EQ(self->pinned0 + 3 * PAGE, tio_pinned(self->fd));
	munmap(r, 3 * PAGE);
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
}

/* Child: import the dma-buf it receives, check descriptor and bytes. */
static int child_import(int sock, const struct tio_tensor_desc *want)
{
	struct tio_tensor_desc out;
	struct tio_buf_info bi = { .desc_ptr = (uintptr_t)&out };
	uint64_t off, size;
	unsigned char *q;
	int fd, dfd, ret = 10;

	dfd = tio_recv_fd(sock, 0);
	fd = tio_open();
	if (dfd < 0 || fd < 0)
		return 1;
	if (tio_import(fd, dfd, &bi.handle, &off, &size))
		return 2;
	close(dfd);
	if (ioctl(fd, TIO_IOC_BUF_INFO, &bi) || !(bi.state & TIO_BUF_S_DESC))
		return 3;
	if (memcmp(&out, want, sizeof(out)))
		return 4;
	q = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, off);
	if (q == MAP_FAILED)
		return 5;
	/* Tell the parent we hold it; it closes everything of its own. */
	if (write(sock, "r", 1) != 1 || read(sock, &ret, 1) != 1)
		return 6;
	ret = tio_check(q, size, 51) ? 7 : 0;
	munmap(q, size);
	close(fd);
	return ret;
}

TEST_F(dmabuf, unix_socket_to_child_keeps_descriptor)
{
	struct tio_tensor_desc d = tio_desc_2d(8, 128);
	unsigned char *p;
	uint64_t off;
	uint32_t h;
	int sv[2], dfd, st;
	char c;
	pid_t pid;

	d.flags = TIO_DESC_F_STRIDED;
	d.strides[0] = 128;
	d.strides[1] = 1;
	d.byte_offset = 64;
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(sv[0]);
		_exit(child_import(sv[1], &d));
	}
	close(sv[1]);
	ASSERT_EQ(0, tio_alloc(self->fd, 2 * PAGE, &d, &h, &off));
	p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, off);
	ASSERT_NE(MAP_FAILED, p);
	tio_fill(p, 2 * PAGE, 51);
	munmap(p, 2 * PAGE);
	ASSERT_EQ(0, tio_export(self->fd, h, TIO_EXPORT_F_CLOEXEC, &dfd));
	ASSERT_EQ(0, tio_send_fd(sv[0], dfd, 0));
	close(dfd);
	ASSERT_EQ(1, read(sv[0], &c, 1));
	/* The exporter lets go of everything while the child still maps it. */
	ASSERT_EQ(0, tio_free(self->fd, h));
	ASSERT_EQ(1, write(sv[0], "g", 1));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));
	close(sv[0]);
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
}

/* ---- vgem ---- */

TEST_F(dmabuf, vgem_import)
{
	struct drm_mode_create_dumb cd = { .width = 1024, .height = 4, .bpp = 32 };
	struct drm_mode_map_dumb md = { 0 };
	struct drm_mode_destroy_dumb dd = { 0 };
	struct tio_tensor_desc d = tio_desc_2d(4, 1024);
	struct tio_buf_desc sd = { .desc_ptr = (uintptr_t)&d };
	struct tio_buf_info bi = { 0 };
	unsigned char *v, *q;
	uint64_t off, size;
	uint32_t h;
	int vg, dfd;

	vg = open_vgem();
	if (vg < 0)
		SKIP(return, "no vgem device");
	ASSERT_EQ(0, drmIoctl(vg, DRM_IOCTL_MODE_CREATE_DUMB, &cd));
	ASSERT_LE(4 * PAGE, cd.size);
	md.handle = cd.handle;
	ASSERT_EQ(0, drmIoctl(vg, DRM_IOCTL_MODE_MAP_DUMB, &md));
	v = mmap(NULL, cd.size, PROT_READ | PROT_WRITE, MAP_SHARED, vg, md.offset);
	ASSERT_NE(MAP_FAILED, v);
	tio_fill(v, cd.size, 61);
	ASSERT_EQ(0, drmPrimeHandleToFD(vg, cd.handle, DRM_CLOEXEC | DRM_RDWR, &dfd));

	ASSERT_EQ(0, tio_import(self->fd, dfd, &h, &off, &size));
	EXPECT_EQ(cd.size, size);
	q = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, off);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0, tio_check(q, size, 61));
	tio_fill(q, size, 62);
	EXPECT_EQ(0, tio_check(v, size, 62));
	bi.handle = h;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_INFO, &bi));
	EXPECT_EQ(TIO_BUF_KIND_IMPORT, bi.kind);
	EXPECT_EQ(0, bi.state & TIO_BUF_S_DESC);
	/* A vgem buffer carries no descriptor, but can be given one. */
	sd.handle = h;
	EXPECT_EQ(0, tio_ioc(self->fd, TIO_IOC_BUF_SET_DESC, &sd));
	d.shape[0] = 1 + size / 4096;
	EXPECT_EQ(-ERANGE, tio_ioc(self->fd, TIO_IOC_BUF_SET_DESC, &sd));
	munmap(q, size);
	/* The import holds the dma-buf (and the vgem object) after close. */
	close(dfd);
	munmap(v, cd.size);
	dd.handle = cd.handle;
	EXPECT_EQ(0, drmIoctl(vg, DRM_IOCTL_MODE_DESTROY_DUMB, &dd));
	close(vg);
	q = mmap(NULL, size, PROT_READ, MAP_SHARED, self->fd, off);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0, tio_check(q, size, 62));
	munmap(q, size);
	EXPECT_EQ(0, tio_free(self->fd, h));
}

/* A tensorio dma-buf mapped into vgem's world and back. */
TEST_F(dmabuf, export_to_vgem)
{
	uint32_t h, gem;
	uint64_t off;
	unsigned char *p;
	int vg, dfd;

	vg = open_vgem();
	if (vg < 0)
		SKIP(return, "no vgem device");
	ASSERT_EQ(0, tio_alloc(self->fd, 4 * PAGE, NULL, &h, &off));
	p = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, off);
	ASSERT_NE(MAP_FAILED, p);
	tio_fill(p, 4 * PAGE, 71);
	ASSERT_EQ(0, tio_export(self->fd, h, TIO_EXPORT_F_RDWR, &dfd));
	/* vgem attaches and maps it (our map_dma_buf) on import. */
	ASSERT_EQ(0, drmPrimeFDToHandle(vg, dfd, &gem));
	close(dfd);
	ASSERT_EQ(0, tio_free(self->fd, h));
	munmap(p, 4 * PAGE);
	EXPECT_EQ(self->pinned0 + 4 * PAGE, tio_pinned(self->fd));
	/* Closing vgem drops the last reference. */
	close(vg);
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
}

TEST_HARNESS_MAIN
