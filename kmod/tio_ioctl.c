// SPDX-License-Identifier: GPL-2.0
/*
 * Command dispatch: one table serves ioctl(), io_uring commands and the
 * records of TIO_IOC_SUBMIT, so every path runs the same handlers.
 */
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/nospec.h>
#include <linux/uaccess.h>

#include "tio_priv.h"

/**
 * struct tio_op - one command
 * @cmd: its ioctl number; _IOC_NR(@cmd) indexes the table
 * @fn: the handler, on a kernel copy of the payload
 */
struct tio_op {
	unsigned int cmd;
	int (*fn)(struct tio_file *tf, void *data);
};

static int tio_cmd_info(struct tio_file *tf, void *data)
{
	struct tio_info *info = data;

	if (info->flags)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	info->version = TIO_UAPI_VERSION;
	info->features = 0;
	info->max_buf_size = READ_ONCE(tio_max_buf_size);
	info->max_pinned = READ_ONCE(tio_max_pinned);
	info->pinned = atomic64_read(&tio_pinned_total);
	info->max_submit = TIO_MAX_SUBMIT;
	return 0;
}

static const struct tio_op tio_ops[] = {
	[_IOC_NR(TIO_IOC_INFO)] = { TIO_IOC_INFO, tio_cmd_info },
	[_IOC_NR(TIO_IOC_BUF_ALLOC)] = { TIO_IOC_BUF_ALLOC, tio_cmd_buf_alloc },
	[_IOC_NR(TIO_IOC_BUF_PIN_USER)] = { TIO_IOC_BUF_PIN_USER, tio_cmd_buf_pin_user },
	[_IOC_NR(TIO_IOC_BUF_FREE)] = { TIO_IOC_BUF_FREE, tio_cmd_buf_free },
	[_IOC_NR(TIO_IOC_BUF_INFO)] = { TIO_IOC_BUF_INFO, tio_cmd_buf_info },
	[_IOC_NR(TIO_IOC_BUF_SET_DESC)] = { TIO_IOC_BUF_SET_DESC, tio_cmd_buf_set_desc },
	[_IOC_NR(TIO_IOC_BUF_EXPORT)] = { TIO_IOC_BUF_EXPORT, tio_cmd_buf_export },
	[_IOC_NR(TIO_IOC_BUF_IMPORT)] = { TIO_IOC_BUF_IMPORT, tio_cmd_buf_import },
	[_IOC_NR(TIO_IOC_BUF_ATTACH_FENCE)] = {
		TIO_IOC_BUF_ATTACH_FENCE, tio_cmd_buf_attach_fence
	},
	[_IOC_NR(TIO_IOC_BUF_WAIT)] = { TIO_IOC_BUF_WAIT, tio_cmd_buf_wait },
	[_IOC_NR(TIO_IOC_STREAM_CREATE)] = { TIO_IOC_STREAM_CREATE, tio_cmd_stream_create },
	[_IOC_NR(TIO_IOC_STREAM_DESTROY)] = { TIO_IOC_STREAM_DESTROY, tio_cmd_stream_destroy },
	[_IOC_NR(TIO_IOC_FENCE_EMIT)] = { TIO_IOC_FENCE_EMIT, tio_cmd_fence_emit },
	[_IOC_NR(TIO_IOC_FENCE_SIGNAL)] = { TIO_IOC_FENCE_SIGNAL, tio_cmd_fence_signal },
	[_IOC_NR(TIO_IOC_FENCE_WAIT)] = { TIO_IOC_FENCE_WAIT, tio_cmd_fence_wait },
	[_IOC_NR(TIO_IOC_FENCE_EXPORT)] = { TIO_IOC_FENCE_EXPORT, tio_cmd_fence_export },
	[_IOC_NR(TIO_IOC_FENCE_IMPORT)] = { TIO_IOC_FENCE_IMPORT, tio_cmd_fence_import },
};

/* Every payload fits a command record. */
static_assert(sizeof(struct tio_info) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_buf_alloc) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_buf_pin) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_buf_export) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_buf_import) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_buf_info) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_buf_desc) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_handle_op) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_stream_create) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_fence_emit) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_fence_signal) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_fence_wait) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_fence_export) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_fence_import) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_buf_attach) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_buf_wait) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_submit) <= TIO_CMD_PAYLOAD);
static_assert(sizeof(struct tio_cmd) == 64);

static const struct tio_op *tio_op_lookup(unsigned int cmd)
{
	unsigned int nr = _IOC_NR(cmd);

	if (_IOC_TYPE(cmd) != TIO_IOC_MAGIC || nr >= ARRAY_SIZE(tio_ops))
		return NULL;
	nr = array_index_nospec(nr, ARRAY_SIZE(tio_ops));
	if (!tio_ops[nr].fn || tio_ops[nr].cmd != cmd)
		return NULL;
	return &tio_ops[nr];
}

/**
 * tio_ioctl() - the unlocked_ioctl of /dev/tensorio
 * @file: the open file
 * @cmd: a TIO_IOC_* number
 * @arg: user pointer to the command's payload
 *
 * Return: the handler's result; -ENOTTY for an unknown command, -EFAULT
 * when the payload cannot be copied.
 */
long tio_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct tio_file *tf = file->private_data;
	void __user *uptr = (void __user *)arg;
	const struct tio_op *op;
	u64 buf[TIO_CMD_PAYLOAD / sizeof(u64)];
	int ret;

	op = tio_op_lookup(cmd);
	if (!op)
		return -ENOTTY;
	if (copy_from_user(buf, uptr, _IOC_SIZE(cmd)))
		return -EFAULT;
	ret = op->fn(tf, buf);
	if (!ret && (_IOC_DIR(cmd) & _IOC_READ) &&
	    copy_to_user(uptr, buf, _IOC_SIZE(cmd)))
		ret = -EFAULT;
	return ret;
}
