/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the reliability programs (tests/fuzz, tests/fault,
 * tests/stress): the other dma-buf and sync_file producers of the debug
 * kernel (sw_sync, udmabuf, the system dma-heap, vgem) and io_uring
 * command submission. Each returns -errno (or a negative value) when the
 * peer is missing, so the callers work on any kernel.
 */
#ifndef TIO_PEERS_H
#define TIO_PEERS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>

#include <linux/tensorio.h>

#define TIO_DEV "/dev/tensorio"

/* drivers/dma-buf/sw_sync.c (not exported as uapi). */
struct tio_sw_sync_create_fence {
	__u32 value;
	char name[32];
	__s32 fence;
};
#define TIO_SW_SYNC_CREATE_FENCE _IOWR('W', 0, struct tio_sw_sync_create_fence)
#define TIO_SW_SYNC_INC		 _IOW('W', 1, __u32)

static inline uint64_t tio_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* A sw_sync timeline fd (debugfs), or -errno. */
static inline int tio_sw_sync_timeline(void)
{
	int fd = open("/sys/kernel/debug/sync/sw_sync", O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* A sync_file that signals when the timeline reaches @value, or -errno. */
static inline int tio_sw_sync_fence(int tl, __u32 value)
{
	struct tio_sw_sync_create_fence d = { .value = value };

	snprintf(d.name, sizeof(d.name), "tio%u", value);
	if (ioctl(tl, TIO_SW_SYNC_CREATE_FENCE, &d))
		return -errno;
	return d.fence;
}

static inline int tio_sw_sync_inc(int tl, __u32 n)
{
	return ioctl(tl, TIO_SW_SYNC_INC, &n) ? -errno : 0;
}

/* A dma-buf from udmabuf over a sealed memfd, or -errno. */
static inline int tio_udmabuf(size_t size)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = size };
	int memfd, dev, fd, err;

	memfd = memfd_create("tio-udmabuf", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (memfd < 0)
		return -errno;
	if (ftruncate(memfd, size) || fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		err = -errno;
		close(memfd);
		return err;
	}
	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		err = -errno;
		close(memfd);
		return err;
	}
	c.memfd = memfd;
	fd = ioctl(dev, UDMABUF_CREATE, &c);
	err = fd < 0 ? -errno : fd;
	close(dev);
	close(memfd);
	return err;
}

/* A dma-buf from the system dma-heap, or -errno. */
static inline int tio_heap_dmabuf(size_t size)
{
	struct dma_heap_allocation_data a = {
		.len = size, .fd_flags = O_RDWR | O_CLOEXEC,
	};
	int heap, err;

	heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);
	if (heap < 0)
		return -errno;
	err = ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &a) ? -errno : (int)a.fd;
	close(heap);
	return err;
}

/* DRM uapi, the few bits needed to get a vgem dumb buffer as a dma-buf. */
struct tio_drm_create_dumb {
	__u32 height, width, bpp, flags, handle, pitch;
	__u64 size;
};
struct tio_drm_prime_handle {
	__u32 handle, flags;
	__s32 fd;
};
#define TIO_DRM_IOCTL_MODE_CREATE_DUMB _IOWR('d', 0xB2, struct tio_drm_create_dumb)
#define TIO_DRM_IOCTL_PRIME_HANDLE_TO_FD _IOWR('d', 0x2d, struct tio_drm_prime_handle)

/* A vgem dma-buf of @pages pages, or -errno. */
static inline int tio_vgem_dmabuf(unsigned int pages)
{
	struct tio_drm_create_dumb c = { .height = pages, .width = 1024, .bpp = 32 };
	struct tio_drm_prime_handle p = { .flags = O_RDWR | O_CLOEXEC };
	char path[64], name[64];
	int fd = -ENODEV, n;

	for (n = 0; n < 8; n++) {
		snprintf(path, sizeof(path), "/sys/class/drm/card%d/device/driver", n);
		ssize_t len = readlink(path, name, sizeof(name) - 1);

		if (len < 0)
			continue;
		name[len] = 0;
		if (!strstr(name, "vgem"))
			continue;
		snprintf(path, sizeof(path), "/dev/dri/card%d", n);
		fd = open(path, O_RDWR | O_CLOEXEC);
		break;
	}
	if (fd < 0)
		return fd == -ENODEV ? fd : -errno;
	if (ioctl(fd, TIO_DRM_IOCTL_MODE_CREATE_DUMB, &c)) {
		n = -errno;
		close(fd);
		return n;
	}
	p.handle = c.handle;
	n = ioctl(fd, TIO_DRM_IOCTL_PRIME_HANDLE_TO_FD, &p) ? -errno : p.fd;
	close(fd);	/* the dma-buf keeps the object */
	return n;
}

/* Prepare @sqe as a tensorio uring command on @fd with payload @p. */
static inline void tio_prep_cmd(struct io_uring_sqe *sqe, int fd,
				unsigned int cmd, const void *p)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = cmd;
	*(__u64 *)sqe->cmd = (__u64)(uintptr_t)p;
}

/*
 * One uring command, waited for (reaping others' completions first), or
 * -errno of the submission. Returns the CQE's res.
 */
static inline int tio_uring_sync(struct io_uring *ring, int fd,
				 unsigned int cmd, void *p, __u64 tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe)
		return -EBUSY;
	tio_prep_cmd(sqe, fd, cmd, p);
	sqe->user_data = tag;
	ret = io_uring_submit(ring);
	if (ret < 0)
		return ret;
	for (;;) {
		ret = io_uring_wait_cqe(ring, &cqe);
		if (ret < 0)
			return ret;
		if (cqe->user_data == tag) {
			ret = cqe->res;
			io_uring_cqe_seen(ring, cqe);
			return ret;
		}
		io_uring_cqe_seen(ring, cqe);
	}
}

#endif /* TIO_PEERS_H */
