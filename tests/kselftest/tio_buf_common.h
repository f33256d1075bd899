/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the buffer kselftests (tio_buffer_test.c,
 * tio_dmabuf_test.c). Include after kselftest_harness.h.
 */
#ifndef TIO_BUF_COMMON_H
#define TIO_BUF_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/tensorio.h>

#define TIO_DEV "/dev/tensorio"
#define PAGE 4096UL

static inline int tio_open(void)
{
	return open(TIO_DEV, O_RDWR | O_CLOEXEC);
}

/* ioctl() returning 0 or -errno. */
static inline int tio_ioc(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

/* Module-wide pinned bytes, or -1. */
static inline long long tio_pinned(int fd)
{
	struct tio_info info = { 0 };

	if (ioctl(fd, TIO_IOC_INFO, &info))
		return -1;
	return (long long)info.pinned;
}

/* This process's VmPin in KiB, or -1. */
static inline long tio_vmpin_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Give up CAP_IPC_LOCK, so that RLIMIT_MEMLOCK applies: 0 or -1. */
static inline int drop_cap_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	data[CAP_IPC_LOCK / 32].effective &= ~(1U << (CAP_IPC_LOCK % 32));
	data[CAP_IPC_LOCK / 32].permitted &= ~(1U << (CAP_IPC_LOCK % 32));
	return syscall(SYS_capset, &hdr, data);
}

/* A new ALLOC buffer: 0 or -errno, handle and mmap offset returned. */
static inline int tio_alloc(int fd, uint64_t size, const struct tio_tensor_desc *d,
			    uint32_t *handle, uint64_t *off)
{
	struct tio_buf_alloc a = { .size = size, .desc_ptr = (uintptr_t)d };
	int ret = tio_ioc(fd, TIO_IOC_BUF_ALLOC, &a);

	if (!ret) {
		*handle = a.handle;
		if (off)
			*off = a.mmap_offset;
	}
	return ret;
}

static inline int tio_free(int fd, uint32_t handle)
{
	struct tio_handle_op op = { .handle = handle };

	return tio_ioc(fd, TIO_IOC_BUF_FREE, &op);
}

/* 0 or -errno; the fd in *dmafd. */
static inline int tio_export(int fd, uint32_t handle, uint32_t flags, int *dmafd)
{
	struct tio_buf_export e = { .handle = handle, .flags = flags };
	int ret = tio_ioc(fd, TIO_IOC_BUF_EXPORT, &e);

	if (!ret)
		*dmafd = e.fd;
	return ret;
}

static inline int tio_import(int fd, int dmafd, uint32_t *handle, uint64_t *off,
			     uint64_t *size)
{
	struct tio_buf_import im = { .fd = dmafd };
	int ret = tio_ioc(fd, TIO_IOC_BUF_IMPORT, &im);

	if (!ret) {
		*handle = im.handle;
		if (off)
			*off = im.mmap_offset;
		if (size)
			*size = im.size;
	}
	return ret;
}

static inline void tio_fill(void *p, size_t n, unsigned int seed)
{
	unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i++)
		c[i] = (unsigned char)(i * 31 + seed);
}

/* 0 when @p holds tio_fill(@seed), else 1 + the first bad index. */
static inline size_t tio_check(const void *p, size_t n, unsigned int seed)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (c[i] != (unsigned char)(i * 31 + seed))
			return i + 1;
	return 0;
}

/* A 2-D float32 descriptor of @rows x @cols. */
static inline struct tio_tensor_desc tio_desc_2d(int64_t rows, int64_t cols)
{
	struct tio_tensor_desc d = {
		.code = TIO_DTYPE_FLOAT, .bits = 32, .lanes = 1, .ndim = 2,
	};

	d.shape[0] = rows;
	d.shape[1] = cols;
	return d;
}

#endif /* TIO_BUF_COMMON_H */
