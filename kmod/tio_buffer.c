// SPDX-License-Identifier: GPL-2.0
/*
 * Tensor buffers. Placeholder until the buffers work lands: every command
 * reports -EOPNOTSUPP and INFO advertises no buffer feature.
 */
#include "tio_priv.h"

int tio_cmd_buf_alloc(struct tio_file *tf, void *data)
{
	return -EOPNOTSUPP;
}

int tio_cmd_buf_pin_user(struct tio_file *tf, void *data)
{
	return -EOPNOTSUPP;
}

int tio_cmd_buf_free(struct tio_file *tf, void *data)
{
	return -EOPNOTSUPP;
}

int tio_cmd_buf_info(struct tio_file *tf, void *data)
{
	return -EOPNOTSUPP;
}

int tio_cmd_buf_set_desc(struct tio_file *tf, void *data)
{
	return -EOPNOTSUPP;
}

int tio_cmd_buf_export(struct tio_file *tf, void *data)
{
	return -EOPNOTSUPP;
}

int tio_cmd_buf_import(struct tio_file *tf, void *data)
{
	return -EOPNOTSUPP;
}
