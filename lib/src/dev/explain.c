// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Why a command failed, in words: the driver answers with an errno only,
 * so when one comes back the library looks at what was asked and names the
 * field at fault (the same checks as the driver's) for the error message.
 * Runs on the failure path only; the errno, and so the error's kind, is
 * what the backend returned.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dev/dev_internal.h"

static uint64_t page_round(const struct tio_ctx *ctx, uint64_t size)
{
	uint64_t p = ctx->page_size ? ctx->page_size : 4096;

	return size > UINT64_MAX - (p - 1) ? size : (size + p - 1) & ~(p - 1);
}

/* A descriptor the command carries, checked against @size. */
static void explain_desc(uint64_t desc_ptr, uint64_t size, char *why, size_t len)
{
	const struct tio_tensor_desc *d = (const void *)(uintptr_t)desc_ptr;

	if (d)
		tio_desc_explain(d, size, why, len);
}

static void explain_size(const struct tio_ctx *ctx, uint64_t size, int err,
			 char *why, size_t len)
{
	if (err == ENOMEM && tio_mem_check(size, tio_mem_locked(), why, len) != ENOMEM)
		snprintf(why, len, "%llu bytes: out of memory (RLIMIT_MEMLOCK and the memory "
			 "available allow it)", (unsigned long long)size);
	else if (err == E2BIG)
		snprintf(why, len, "size %llu is above the limit of %llu bytes (max_buf_size)",
			 (unsigned long long)size,
			 (unsigned long long)ctx->info.max_buf_size);
	else if (err == EINVAL && !size)
		snprintf(why, len, "size 0: a buffer has at least 1 byte");
}

/* BUF_SET_DESC names a handle: its size comes from BUF_INFO. */
static void explain_set_desc(struct tio_ctx *ctx, const struct tio_buf_desc *a,
			     char *why, size_t len)
{
	struct tio_buf_info info;

	if (a->flags & ~TIO_DESC_CLEAR) {
		snprintf(why, len, "unknown flags %#x", a->flags & ~TIO_DESC_CLEAR);
		return;
	}
	memset(&info, 0, sizeof(info));
	info.handle = a->handle;
	if (!a->desc_ptr || ctx->ops->exec(ctx, TIO_IOC_BUF_INFO, &info))
		return;
	explain_desc(a->desc_ptr, info.size, why, len);
}

static void explain_seqno(uint32_t stream, uint64_t seqno, char *why, size_t len)
{
	snprintf(why, len, "seqno %llu was never emitted on stream %u",
		 (unsigned long long)seqno, stream);
}

/**
 * tio_cmd_explain() - the cause of a failed command, when it can be named
 * @ctx: the context the command ran in
 * @op: TIO_IOC_<OP>
 * @payload: the command's payload, as it was sent
 * @err: the errno it failed with (either sign)
 * @why: where to write the cause ("" when none can be named)
 * @len: room at @why
 */
void tio_cmd_explain(struct tio_ctx *ctx, unsigned int op, const void *payload,
		     int err, char *why, size_t len)
{
	if (err < 0)
		err = -err;
	why[0] = '\0';
	switch (op) {
	case TIO_IOC_BUF_ALLOC: {
		const struct tio_buf_alloc *a = payload;

		if (a->flags && err == EINVAL)
			snprintf(why, len, "unknown flags %#x", a->flags);
		else if (err == E2BIG || err == ENOMEM || !a->size)
			explain_size(ctx, page_round(ctx, a->size), err, why, len);
		else
			explain_desc(a->desc_ptr, page_round(ctx, a->size), why, len);
		break;
	}
	case TIO_IOC_BUF_PIN_USER: {
		const struct tio_buf_pin *a = payload;

		if (err == E2BIG || err == ENOMEM || !a->size)
			explain_size(ctx, a->size, err, why, len);
		else if (a->flags & ~TIO_PIN_F_READONLY)
			snprintf(why, len, "unknown flags %#x", a->flags & ~TIO_PIN_F_READONLY);
		else if ((a->addr | a->size) & (ctx->page_size - 1))
			snprintf(why, len, "address %#llx and size %llu must be page aligned",
				 (unsigned long long)a->addr, (unsigned long long)a->size);
		else
			explain_desc(a->desc_ptr, a->size, why, len);
		break;
	}
	case TIO_IOC_BUF_SET_DESC:
		if (err == EINVAL || err == ERANGE || err == EOVERFLOW)
			explain_set_desc(ctx, payload, why, len);
		break;
	case TIO_IOC_FENCE_WAIT: {
		const struct tio_fence_wait *a = payload;

		if (err == EINVAL && !(a->flags & ~TIO_WAIT_F_ABSOLUTE))
			explain_seqno(a->stream, a->seqno, why, len);
		break;
	}
	case TIO_IOC_FENCE_EXPORT: {
		const struct tio_fence_export *a = payload;

		if (err == EINVAL && !(a->flags & ~TIO_EXPORT_F_CLOEXEC))
			explain_seqno(a->stream, a->seqno, why, len);
		break;
	}
	case TIO_IOC_FENCE_SIGNAL: {
		const struct tio_fence_signal *a = payload;

		if (err == EINVAL && (a->error > 0 || a->error < -4095))
			snprintf(why, len, "error %d is not a negative errno", a->error);
		else if (err == EINVAL && !a->flags)
			explain_seqno(a->stream, a->seqno, why, len);
		break;
	}
	case TIO_IOC_BUF_ATTACH_FENCE: {
		const struct tio_buf_attach *a = payload;

		if (err == EINVAL)
			explain_seqno(a->stream, a->seqno, why, len);
		break;
	}
	}
}
