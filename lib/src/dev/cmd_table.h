/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The command table: every driver command described once (cmd_table.c).
 *
 * A row gives the command's name, its ioctl number (which carries the
 * payload size and direction), the FFI global that runs it with its
 * arguments, how each argument is encoded into the payload and how the
 * result is decoded. The C API, the FFI globals, batches, the user backend
 * and error messages all read this table; adding a command is one row
 * here plus its handler in each backend.
 */
#ifndef TIO_DEV_CMD_TABLE_H
#define TIO_DEV_CMD_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <linux/tensorio.h>

#include <tensorio/any.h>

struct tio_ctx;

/* Rows of tio_cmds[], in uapi order. */
enum tio_cmd_id {
	TIO_CMD_INFO,
	TIO_CMD_BUF_ALLOC,
	TIO_CMD_BUF_PIN_USER,
	TIO_CMD_BUF_FREE,
	TIO_CMD_BUF_INFO,
	TIO_CMD_BUF_SET_DESC,
	TIO_CMD_BUF_EXPORT,
	TIO_CMD_BUF_IMPORT,
	TIO_CMD_BUF_ATTACH_FENCE,
	TIO_CMD_BUF_WAIT,
	TIO_CMD_STREAM_CREATE,
	TIO_CMD_STREAM_DESTROY,
	TIO_CMD_FENCE_EMIT,
	TIO_CMD_FENCE_SIGNAL,
	TIO_CMD_FENCE_WAIT,
	TIO_CMD_FENCE_EXPORT,
	TIO_CMD_FENCE_IMPORT,
	TIO_CMD_SUBMIT,
	TIO_CMD_RING_SETUP,
	TIO_CMD_RING_ENTER,
	TIO_CMD_COUNT
};

/* How an FFI argument goes into the payload. */
enum tio_arg_kind {
	TIO_ARG_END,		/* no more arguments */
	TIO_ARG_INT,		/* an int, stored in @width bytes, within [lo, hi] */
	TIO_ARG_PTR,		/* an OpaquePtr, an int address or None: __u64 */
	TIO_ARG_BUFFER,		/* a tio.Buffer: its handle, __u32 */
	TIO_ARG_STREAM,		/* a tio.Stream: its handle, __u32 */
	TIO_ARG_FIXED,		/* not an argument: @dflt always, in @width bytes */
};

/**
 * struct tio_cmd_arg - one argument of a command's FFI global
 * @name: its name, for messages and signatures
 * @kind: enum tio_arg_kind
 * @width: bytes of the payload field (4 or 8)
 * @offset: the field's offset in the payload
 * @dflt: its value when the caller leaves it out (optional arguments)
 * @lo: smallest accepted value (TIO_ARG_INT)
 * @hi: largest accepted value (TIO_ARG_INT)
 * @range: what [@lo, @hi] means, for the message, or NULL
 */
struct tio_cmd_arg {
	const char *name;
	uint8_t kind;
	uint8_t width;
	uint16_t offset;
	int64_t dflt;
	int64_t lo, hi;
	const char *range;
};

#define TIO_CMD_MAX_ARGS 5

/* What a command's FFI global returns. */
enum tio_ret_kind {
	TIO_RET_NONE,		/* None */
	TIO_RET_INT,		/* the payload field at ret_offset, ret_width bytes */
	TIO_RET_BUFFER,		/* a new tio.Buffer: @buf says where its fields are */
	TIO_RET_STREAM,		/* a new tio.Stream from the STREAM_CREATE payload */
};

/* Row flags. */
#define TIO_CMD_F_WAIT	0x1	/* may sleep: a batch parks it (timeout at @timeout_offset) */
#define TIO_CMD_F_SIGNED 0x2	/* TIO_RET_INT: the field is signed */
#define TIO_CMD_F_PUNT	0x4	/* the driver punts it to io-wq (uring issue) */
#define TIO_CMD_F_NESTS	0x8	/* runs records itself: no record may carry it */

struct tio_cmd_desc;

/**
 * struct tio_cmd_buf_ret - where a buffer-creating command leaves its buffer
 * @kind: TIO_BUF_KIND_* of the new buffer
 * @size: payload offset of its __u64 size
 * @mmap_offset: payload offset of its __u64 mmap offset
 * @addr: TIO_BUF_KIND_USER: payload offset of its __u64 user address
 *
 * The handle is at the row's @ret_offset.
 */
struct tio_cmd_buf_ret {
	uint8_t kind;
	uint16_t size, mmap_offset, addr;
};

/**
 * struct tio_cmd_desc - one driver command
 * @op: its ioctl number (TIO_IOC_*); _IOC_SIZE(@op) is the payload size,
 *	_IOC_DIR(@op) the direction
 * @name: "BUF_ALLOC", for messages
 * @global: the FFI global running it ("tio.buffer.alloc"), or NULL
 * @nreq: how many of @args a caller must pass
 * @args: the arguments in order, TIO_ARG_FIXED ones last
 * @ret: enum tio_ret_kind
 * @ret_offset: TIO_RET_INT: the result's payload offset; TIO_RET_BUFFER:
 *	the new handle's
 * @ret_width: TIO_RET_INT: its width in bytes
 * @buf: TIO_RET_BUFFER: where the rest of the buffer is
 * @timeout_offset: TIO_CMD_F_WAIT: the payload offset of the __s64 timeout
 * @flags: TIO_CMD_F_*
 *
 * Rows are data only: the table calls nothing above it (the objects a
 * result makes are made in call.c), so it stays at the bottom of dev/.
 */
struct tio_cmd_desc {
	unsigned int op;
	const char *name;
	const char *global;
	uint8_t nreq;
	struct tio_cmd_arg args[TIO_CMD_MAX_ARGS];
	uint8_t ret;
	uint8_t ret_width;
	uint16_t ret_offset;
	uint16_t timeout_offset;
	unsigned int flags;
	struct tio_cmd_buf_ret buf;
};

extern const struct tio_cmd_desc tio_cmds[TIO_CMD_COUNT];

/* The row of ioctl number @op, or NULL. */
const struct tio_cmd_desc *tio_cmd_of(unsigned int op);

/*
 * Encode @args into the zeroed @payload as @cmd's row says; @keep (two
 * slots) receives the objects whose handles it used (borrowed).
 * Return: 0, or -1 with an error raised.
 */
int tio_cmd_encode(const struct tio_cmd_desc *cmd, const tio_any_t *args,
		   int32_t nargs, void *payload, tio_object_t **keep);

/* call.c: the FFI value of @cmd's completed @payload (owned). 0, or -1 raised. */
int tio_cmd_decode(struct tio_ctx *ctx, const struct tio_cmd_desc *cmd,
		   const void *payload, tio_any_t *ret);

/* Raise "@cmd: argument @i+1 (name) must be @what". Returns -1. */
int tio_cmd_arg_error(const struct tio_cmd_desc *cmd, int32_t i, const char *what);
/* Raise the range error of int argument @i, which got @v. Returns -1. */
int tio_cmd_range_error(const struct tio_cmd_desc *cmd, int32_t i, int64_t v);

/* Store @v in the payload field of argument @a (4 or 8 bytes). */
static inline void tio_cmd_store(void *payload, const struct tio_cmd_arg *a, uint64_t v)
{
	char *f = (char *)payload + a->offset;
	uint32_t v32 = (uint32_t)v;

	if (a->width == 8)
		memcpy(f, &v, 8);
	else
		memcpy(f, &v32, 4);
}

/*
 * The C API's encoder: the @n typed arguments @v, in the row's order
 * (objects as their handles), go straight into the payload at the row's
 * offsets, range-checked as the FFI encoder checks them; the rest of the
 * payload is zeroed. No FFI values on the way. 0, or -1 raised.
 */
static inline __attribute__((always_inline)) int
tio_cmd_fill(const struct tio_cmd_desc *cmd, void *payload, const int64_t *v, int32_t n)
{
	const struct tio_cmd_arg *a;
	int32_t i;

	memset(payload, 0, _IOC_SIZE(cmd->op));
	for (i = 0; i < n; i++) {
		a = &cmd->args[i];
		if (a->kind == TIO_ARG_INT && (v[i] < a->lo || v[i] > a->hi))
			return tio_cmd_range_error(cmd, i, v[i]);
		tio_cmd_store(payload, a, (uint64_t)v[i]);
	}
	return 0;
}

/* call.c: the row behind an FFI Function, or NULL for any other function. */
const struct tio_cmd_desc *tio_cmd_of_func(tio_object_t *func);

#endif /* TIO_DEV_CMD_TABLE_H */
