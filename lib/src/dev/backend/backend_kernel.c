// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kernel backend: command records go to /dev/tensorio as ioctls; its
 * asynchronous queue (kernel_uring.c) sends them through io_uring or the
 * driver's command ring (kernel_ring.c, the state in ctx->priv).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dev/dev_internal.h"

#define TIO_DEV_PATH "/dev/tensorio"
#define TIO_KERNEL_NEEDS (TIO_FEAT_BUFFERS | TIO_FEAT_STREAMS)

/**
 * tio_backend_kernel_open() - open the driver and check what it offers
 * @ctx: the context being built
 * @why: receives the reason on failure
 * @len: room in @why
 *
 * Return: 0, or a negative errno with @why set.
 */
int tio_backend_kernel_open(struct tio_ctx *ctx, char *why, size_t len)
{
	int fd, err;

	fd = open(TIO_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		/* The caller's error appends the errno's text. */
		snprintf(why, len, "cannot open %s%s", TIO_DEV_PATH,
			 err == ENOENT ? " (is tensorio.ko loaded?)" : "");
		return -err;
	}
	memset(&ctx->info, 0, sizeof(ctx->info));
	if (ioctl(fd, TIO_IOC_INFO, &ctx->info) < 0) {
		err = errno;
		snprintf(why, len, "%s: TIO_IOC_INFO failed", TIO_DEV_PATH);
		goto err_close;
	}
	if ((ctx->info.version >> 16) != TIO_UAPI_VERSION_MAJOR) {
		err = EPROTO;
		snprintf(why, len, "%s speaks uapi %u.%u, this library %u.%u",
			 TIO_DEV_PATH, ctx->info.version >> 16,
			 ctx->info.version & 0xffff, TIO_UAPI_VERSION_MAJOR,
			 TIO_UAPI_VERSION_MINOR);
		goto err_close;
	}
	if ((ctx->info.features & TIO_KERNEL_NEEDS) != TIO_KERNEL_NEEDS) {
		err = EOPNOTSUPP;
		snprintf(why, len,
			 "%s lacks buffers or streams (features 0x%llx)",
			 TIO_DEV_PATH, (unsigned long long)ctx->info.features);
		goto err_close;
	}
	/* The command ring's state; the ring itself is set up on first use. */
	ctx->priv = tio_kring_new();
	if (!ctx->priv) {
		err = ENOMEM;
		snprintf(why, len, "out of memory for the command ring's state");
		goto err_close;
	}
	ctx->fd = fd;
	return 0;

err_close:
	close(fd);
	return -err;
}

static int tio_kernel_exec(struct tio_ctx *ctx, unsigned int op, void *payload)
{
	int ret;

	do {
		ret = ioctl(ctx->fd, op, payload);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : ret;	/* SUBMIT: the failed count */
}

static int tio_kernel_submit(struct tio_ctx *ctx, struct tio_cmd *cmds, uint32_t n,
			     unsigned int flags, uint32_t *done)
{
	struct tio_submit s = {
		.cmds_ptr = (uintptr_t)cmds, .flags = flags,
	};
	int ret;

	s.count = n > ctx->info.max_submit && ctx->info.max_submit ? ctx->info.max_submit : n;

	do {
		ret = ioctl(ctx->fd, TIO_IOC_SUBMIT, &s);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return -errno;
	*done = s.done;
	return ret;
}

static int tio_kernel_map(struct tio_ctx *ctx, uint64_t offset, size_t len,
			  int prot, void **addr)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, ctx->fd, (off_t)offset);

	if (p == MAP_FAILED)
		return -errno;
	*addr = p;
	return 0;
}

static void tio_kernel_unmap(struct tio_ctx *ctx, void *addr, size_t len)
{
	(void)ctx;
	munmap(addr, len);
}

static void tio_kernel_destroy(struct tio_ctx *ctx)
{
	tio_kring_free(ctx->priv);
	ctx->priv = NULL;
	close(ctx->fd);
	ctx->fd = -1;
}

const struct tio_backend_ops tio_backend_kernel_ops = {
	.name = "kernel",
	.exec = tio_kernel_exec,
	.submit = tio_kernel_submit,
	.map = tio_kernel_map,
	.unmap = tio_kernel_unmap,
	.destroy = tio_kernel_destroy,
	.queue = &tio_kernel_uring_ops,
};
