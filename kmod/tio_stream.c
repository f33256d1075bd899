// SPDX-License-Identifier: GPL-2.0
/*
 * Streams and fences. Placeholder until the streams work lands: every
 * command reports -EOPNOTSUPP and INFO advertises no stream feature.
 */
#include "tio_priv.h"

int tio_cmd_stream_create(struct tio_file *tf, void *data)
{
	return -EOPNOTSUPP;
}

int tio_cmd_stream_destroy(struct tio_file *tf, void *data)
{
	return -EOPNOTSUPP;
}

int tio_cmd_fence_emit(struct tio_file *tf, void *data)
{
	return -EOPNOTSUPP;
}

int tio_cmd_fence_signal(struct tio_file *tf, void *data)
{
	return -EOPNOTSUPP;
}

int tio_cmd_fence_wait(struct tio_file *tf, void *data)
{
	return -EOPNOTSUPP;
}

int tio_cmd_fence_export(struct tio_file *tf, void *data)
{
	return -EOPNOTSUPP;
}

int tio_cmd_fence_import(struct tio_file *tf, void *data)
{
	return -EOPNOTSUPP;
}

int tio_cmd_buf_attach_fence(struct tio_file *tf, void *data)
{
	return -EOPNOTSUPP;
}

int tio_cmd_buf_wait(struct tio_file *tf, void *data)
{
	return -EOPNOTSUPP;
}
