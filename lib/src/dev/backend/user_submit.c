// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The user backend's TIO_IOC_SUBMIT: a vector of records run in order
 * through the backend's own exec, with the driver's checks and results.
 */
#include <errno.h>

#include "dev/backend/user_internal.h"

/* TIO_IOC_SUBMIT's semantics: in order, stop at a failure unless told. */
static int ub_submit_vec(struct tio_ctx *ctx, struct tio_cmd *cmds, uint32_t n,
			 unsigned int flags, uint32_t *done)
{
	uint32_t i, failed = 0;
	int ret;

	if ((flags & ~TIO_SUBMIT_F_CONTINUE) || !n || n > ctx->info.max_submit)
		return -EINVAL;
	*done = 0;
	for (i = 0; i < n; i++) {
		struct tio_cmd *c = &cmds[i];
		const struct tio_cmd_desc *cmd = tio_cmd_of(c->op);

		/* The driver's order of checks (tio_record_check()). */
		if (c->flags || c->pad)
			ret = -EINVAL;
		else if (!cmd)
			ret = -ENOTTY;
		else if (cmd->flags & TIO_CMD_F_NESTS)
			ret = -EINVAL;
		else
			ret = ctx->ops->exec(ctx, c->op, c->payload.bytes);
		c->result = ret;
		*done = i + 1;
		if (ret) {
			failed++;
			if (!(flags & TIO_SUBMIT_F_CONTINUE))
				break;
		}
	}
	return (int)failed;
}

int tio_ub_submit(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_submit *a = p;

	(void)ub;
	if (a->pad)
		return -EINVAL;
	return ub_submit_vec(ctx, (struct tio_cmd *)(uintptr_t)a->cmds_ptr, a->count,
			     a->flags, &a->done);
}

/* The backend's vectored submit: up to max_submit of @n records. */
int tio_ub_submit_some(struct tio_ctx *ctx, struct tio_cmd *cmds, uint32_t n,
		       unsigned int flags, uint32_t *done)
{
	return ub_submit_vec(ctx, cmds, n < ctx->info.max_submit ? n : ctx->info.max_submit,
			     flags, done);
}
