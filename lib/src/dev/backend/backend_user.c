// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The user backend: the driver's commands emulated in this process, with
 * the driver's semantics and errors (docs/uapi.md), so that everything
 * above the backend runs unchanged without /dev/tensorio.
 *
 * - Buffers are memfds, mapped and mlock()ed (user_buffer.c).
 * - Streams are timelines over a shared seqno page and a futex word
 *   (user_timeline.c).
 * - Buffers and streams share one handle table (user_table.c); SUBMIT
 *   runs a vector of records through this backend (user_submit.c).
 * - sync_file export/import and the command ring need the kernel:
 *   -EOPNOTSUPP.
 *
 * This file opens the backend, runs each command through its handler
 * (the table below, indexed by the command table's rows), maps buffers
 * and seqno pages, and closes. Locking: user_internal.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dev/backend/user_internal.h"

/*
 * The largest buffer: the driver has a module parameter for it, this
 * backend TIO_MAX_BUF_SIZE (bytes); by default the machine's memory, as a
 * locked buffer can never be larger.
 */
static uint64_t ub_max_buf_size(void)
{
	const char *e = getenv("TIO_MAX_BUF_SIZE");
	unsigned long long v;
	char *end;
	uint64_t total = tio_mem_total();

	if (e && *e) {
		errno = 0;
		v = strtoull(e, &end, 0);
		if (!errno && !*end && v)
			return v < UB_MAX_BUF_SIZE ? v : UB_MAX_BUF_SIZE;
	}
	return total < UB_MAX_BUF_SIZE ? total : UB_MAX_BUF_SIZE;
}

static const char *ub_missing_handler(void);

int tio_backend_user_open(struct tio_ctx *ctx, char *why, size_t len)
{
	const char *missing = ub_missing_handler();
	struct ub_state *ub;

	if (missing) {
		snprintf(why, len, "the user backend has no handler for %s", missing);
		return -ENOSYS;
	}
	ub = calloc(1, sizeof(*ub));
	if (!ub) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&ub->lock, NULL);
	ub->next_context = 1;
	ctx->priv = ub;
	memset(&ctx->info, 0, sizeof(ctx->info));
	ctx->info.version = TIO_UAPI_VERSION;
	ctx->info.features = TIO_FEAT_BUFFERS | TIO_FEAT_PIN_USER |
			     TIO_FEAT_STREAMS | TIO_FEAT_DMA_RESV |
			     TIO_FEAT_SUBMIT | TIO_FEAT_DOORBELL;
	if (!access("/dev/udmabuf", R_OK | W_OK))
		ctx->info.features |= TIO_FEAT_DMABUF;
	ctx->info.max_buf_size = ub_max_buf_size();
	ctx->info.max_pinned = ctx->info.max_buf_size;
	ctx->info.max_submit = UB_MAX_SUBMIT;
	return 0;
}

/* The handlers that take ub->lock themselves, or need no lock. */
static int ub_info(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	struct tio_info *a = p;

	if (a->flags)
		return -EINVAL;
	*a = ctx->info;
	a->pinned = __atomic_load_n(&ub->locked, __ATOMIC_RELAXED);
	return 0;
}

/* sync_file export/import and the command ring need the kernel. */
static int ub_needs_kernel(struct tio_ctx *ctx, struct ub_state *ub, void *p)
{
	(void)ctx; (void)ub; (void)p;
	return -EOPNOTSUPP;
}

/*
 * How this backend runs each row of the command table, indexed by its
 * rows (enum tio_cmd_id): a command the backend cannot run has the
 * explicit ub_needs_kernel (-EOPNOTSUPP). A row left without a handler
 * would be -ENOTTY here, so the backend refuses to open while one lacks
 * it (every user backend test fails, naming the command);
 * tests/lib/test_dev_commands.c checks every row's answer.
 */
static const struct ub_cmd {
	int (*run)(struct tio_ctx *ctx, struct ub_state *ub, void *payload);
	bool locked;	/* run under ub->lock */
} ub_cmds[] = {
	[TIO_CMD_INFO] = { ub_info, false },
	[TIO_CMD_BUF_ALLOC] = { tio_ub_buf_alloc, false },
	[TIO_CMD_BUF_PIN_USER] = { tio_ub_buf_pin, false },
	[TIO_CMD_BUF_FREE] = { tio_ub_buf_free_cmd, true },
	[TIO_CMD_BUF_INFO] = { tio_ub_buf_info, true },
	[TIO_CMD_BUF_SET_DESC] = { tio_ub_buf_set_desc, true },
	[TIO_CMD_BUF_EXPORT] = { tio_ub_buf_export, true },
	[TIO_CMD_BUF_IMPORT] = { tio_ub_buf_import, false },
	[TIO_CMD_BUF_ATTACH_FENCE] = { tio_ub_buf_attach_fence, true },
	[TIO_CMD_BUF_WAIT] = { tio_ub_buf_wait, false },
	[TIO_CMD_STREAM_CREATE] = { tio_ub_stream_create, false },
	[TIO_CMD_STREAM_DESTROY] = { tio_ub_stream_destroy, true },
	[TIO_CMD_FENCE_EMIT] = { tio_ub_fence_emit, true },
	[TIO_CMD_FENCE_SIGNAL] = { tio_ub_fence_signal, true },
	[TIO_CMD_FENCE_WAIT] = { tio_ub_fence_wait, false },
	[TIO_CMD_FENCE_EXPORT] = { ub_needs_kernel, false },
	[TIO_CMD_FENCE_IMPORT] = { ub_needs_kernel, false },
	[TIO_CMD_SUBMIT] = { tio_ub_submit, false },
	[TIO_CMD_RING_SETUP] = { ub_needs_kernel, false },
	[TIO_CMD_RING_ENTER] = { ub_needs_kernel, false },
};
_Static_assert(sizeof(ub_cmds) / sizeof(ub_cmds[0]) == TIO_CMD_COUNT,
	       "the user backend's table has one row per command (cmd_table.h)");

/* The first command table row without a handler, or NULL. */
static const char *ub_missing_handler(void)
{
	size_t i;

	for (i = 0; i < TIO_CMD_COUNT; i++)
		if (!ub_cmds[i].run)
			return tio_cmds[i].name;
	return NULL;
}

static int ub_exec(struct tio_ctx *ctx, unsigned int op, void *p)
{
	const struct tio_cmd_desc *cmd = tio_cmd_of(op);
	struct ub_state *ub = ctx->priv;
	const struct ub_cmd *h;
	int ret;

	if (!cmd || !(h = &ub_cmds[cmd - tio_cmds])->run)
		return -ENOTTY;
	if (!h->locked)
		return h->run(ctx, ub, p);
	pthread_mutex_lock(&ub->lock);
	ret = h->run(ctx, ub, p);
	pthread_mutex_unlock(&ub->lock);
	return ret;
}

static int ub_map(struct tio_ctx *ctx, uint64_t offset, size_t len, int prot,
		  void **addr)
{
	struct ub_state *ub = ctx->priv;
	uint64_t handle = offset >> UB_HANDLE_SHIFT;
	uint64_t off = offset & ((UINT64_C(1) << UB_HANDLE_SHIFT) - 1);
	struct ub_obj *o;
	void *p;
	int fd;

	pthread_mutex_lock(&ub->lock);
	if (handle > UINT32_MAX || !handle || handle > ub->cap || !ub->objs[handle - 1]) {
		pthread_mutex_unlock(&ub->lock);
		return -EINVAL;
	}
	o = ub->objs[handle - 1];
	if (o->type == UB_STREAM) {
		/* The seqno page, read-only; the doorbell's, when it has one. */
		if ((off && (off != ctx->page_size || !o->tl->bell)) ||
		    len != ctx->page_size) {
			pthread_mutex_unlock(&ub->lock);
			return -EINVAL;
		}
		if (!off && (prot & PROT_WRITE)) {
			pthread_mutex_unlock(&ub->lock);
			return -EPERM;
		}
		/*
		 * The mappings the timeline holds (it outlives the handle's
		 * holder): one address per word, which a device registered on it,
		 * the backend and every waiter share.
		 */
		*addr = off ? (void *)o->tl->bell : (void *)o->tl->page;
		pthread_mutex_unlock(&ub->lock);
		return 1;
	}
	if (o->bkind == TIO_BUF_KIND_USER || off >= o->size || len > o->size - off) {
		pthread_mutex_unlock(&ub->lock);
		return -EINVAL;
	}
	/* The whole buffer: the mapping we hold already, not a second one. */
	if (o->addr && !off && len == o->size) {
		*addr = o->addr;
		pthread_mutex_unlock(&ub->lock);
		return 1;
	}
	fd = o->fd;
	p = mmap(NULL, len, prot, MAP_SHARED, fd, (off_t)off);
	pthread_mutex_unlock(&ub->lock);
	if (p == MAP_FAILED)
		return -errno;
	*addr = p;
	return 0;
}

static void ub_unmap(struct tio_ctx *ctx, void *addr, size_t len)
{
	(void)ctx;
	munmap(addr, len);
}

static void ub_destroy(struct tio_ctx *ctx)
{
	struct ub_state *ub = ctx->priv;
	size_t i;

	/* tio_shutdown() only gets here with no object alive. */
	for (i = 0; i < ub->cap; i++) {
		struct ub_obj *o = ub->objs[i];

		if (!o)
			continue;
		if (o->type == UB_BUF) {
			tio_ub_buf_free(ub, o);
		} else {
			tio_ub_tl_put(o->tl);
			free(o);
		}
	}
	free(ub->objs);
	pthread_mutex_destroy(&ub->lock);
	free(ub);
	ctx->priv = NULL;
}

const struct tio_backend_ops tio_backend_user_ops = {
	.name = "user",
	.exec = ub_exec,
	.submit = tio_ub_submit_some,
	.map = ub_map,
	.unmap = ub_unmap,
	.destroy = ub_destroy,
};
