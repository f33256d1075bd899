// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Running the command table's rows as FFI functions: decoding a completed
 * command into its FFI value (a new tio.Buffer or tio.Stream, an int), the
 * globals (tio.buffer.alloc, tio.fence.signal, ... and the userspace
 * tio.stream.signalled, tio.backend, tio.buffer.tensor) and tio_init(),
 * which registers them. The top of dev/ below batches: it calls down into
 * the table, the context and the objects, and nothing calls up into it
 * but batch.c.
 */
#include <errno.h>
#include <string.h>

#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/function.h>
#include <tensorio/string.h>

#include "dev/dev_internal.h"

/**
 * tio_cmd_decode() - the FFI value of a completed command
 * @ctx: the context
 * @cmd: the command
 * @payload: its payload, outputs written back
 * @ret: the value (owned): a new Buffer or Stream for the commands that
 *	create one (which then owns the handle), an int for those that
 *	produce one, None otherwise
 *
 * Return: 0, or -1 with an error raised (the handle is freed then).
 */
int tio_cmd_decode(struct tio_ctx *ctx, const struct tio_cmd_desc *cmd,
		   const void *payload, tio_any_t *ret)
{
	const char *f = (const char *)payload + cmd->ret_offset;
	uint64_t u64;
	uint32_t u32;
	tio_buffer_t *buf;
	tio_stream_t *s;

	switch (cmd->ret) {
	case TIO_RET_BUFFER:
		if (tio_buffer_from_payload(ctx, cmd, payload, &buf))
			return -1;
		*ret = tio_any_object(&buf->header);
		return 0;
	case TIO_RET_STREAM:
		if (tio_stream_wrap(ctx, payload, &s))
			return -1;
		*ret = tio_any_object(&s->header);
		return 0;
	case TIO_RET_INT:
		if (cmd->ret_width == 8) {
			memcpy(&u64, f, 8);
			*ret = tio_any_int((int64_t)u64);
		} else {
			memcpy(&u32, f, 4);
			*ret = tio_any_int(cmd->flags & TIO_CMD_F_SIGNED ?
					   (int64_t)(int32_t)u32 : (int64_t)u32);
		}
		return 0;
	default:
		*ret = tio_any_none();
		return 0;
	}
}

/*
 * The safe call of every command's FFI global (self is its row): encode,
 * run and decode one command.
 */
static int tio_cmd_call(void *self, const tio_any_t *args, int32_t nargs,
			tio_any_t *ret)
{
	const struct tio_cmd_desc *cmd = self;
	tio_object_t *keep[2] = { NULL, NULL };
	struct tio_ctx *ctx = tio_ctx_get();
	struct tio_cmd c;

	*ret = tio_any_none();
	if (TIO_UNLIKELY(!ctx))
		return -1;
	memset(c.payload.bytes, 0, TIO_CMD_PAYLOAD);
	if (tio_cmd_encode(cmd, args, nargs, c.payload.bytes, keep) ||
	    tio_exec(ctx, cmd, c.payload.bytes))
		return -1;
	return tio_cmd_decode(ctx, cmd, c.payload.bytes, ret);
}

/**
 * tio_cmd_of_func() - the command behind a Function, if it is one's global
 * @func: a Function
 *
 * Return: the row, or NULL for any other function.
 */
const struct tio_cmd_desc *tio_cmd_of_func(tio_object_t *func)
{
	const tio_func_obj_t *f = (const tio_func_obj_t *)func;

	return f->call == tio_cmd_call ? f->self : NULL;
}

/* Plain userspace functions. */
static int fn_signalled(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	tio_object_t *o;
	const volatile uint64_t *w;

	(void)self;
	if (nargs != 1 || tio_any_to_object(&args[0], tio_stream_type_index(), &o))
		return tio_raise_errno(EINVAL, "tio.stream.signalled takes one tio.Stream");
	w = tio_stream_seqno_word((tio_stream_t *)o);
	if (!w)
		return -1;
	*ret = tio_any_int((int64_t)__atomic_load_n(w, __ATOMIC_ACQUIRE));
	return 0;
}

static int fn_backend(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	const char *name;

	(void)self; (void)args;
	if (nargs)
		return tio_raise_errno(EINVAL, "tio.backend takes no arguments");
	name = tio_backend_name();
	if (!name)
		return -1;
	return tio_str_from_cstr(name, ret);
}

static int fn_tensor(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	tio_object_t *o, *t;

	(void)self;
	if (nargs != 1 || tio_any_to_object(&args[0], tio_buffer_type_index(), &o))
		return tio_raise_errno(EINVAL, "tio.buffer.tensor takes one tio.Buffer");
	if (tio_buffer_tensor((tio_buffer_t *)o, NULL, &t))
		return -1;
	*ret = tio_any_object(t);
	return 0;
}

static const struct {
	const char *name;
	tio_safe_call_t call;
} user_fns[] = {
	{ "tio.stream.signalled", fn_signalled },
	{ "tio.backend", fn_backend },
	{ "tio.buffer.tensor", fn_tensor },
};

static int tio_register_one(const char *name, tio_safe_call_t call, void *self)
{
	tio_object_t *f;
	int ret;

	if (tio_func_new(call, self, NULL, &f))
		return -1;
	ret = tio_func_set_global(name, f, 1);
	tio_object_decref(f);
	return ret;
}

static pthread_once_t tio_dev_functions_once = PTHREAD_ONCE_INIT;

static void tio_dev_functions_init(void)
{
	size_t i;

	for (i = 0; i < TIO_CMD_COUNT; i++)
		if (tio_cmds[i].global)
			tio_register_one(tio_cmds[i].global, tio_cmd_call, (void *)&tio_cmds[i]);
	for (i = 0; i < sizeof(user_fns) / sizeof(user_fns[0]); i++)
		tio_register_one(user_fns[i].name, user_fns[i].call, NULL);
	tio_error_clear();
}

int tio_device_register_globals(void)
{
	pthread_once(&tio_dev_functions_once, tio_dev_functions_init);
	return 0;
}

int tio_init(void)
{
	if (!tio_ctx_get())
		return -1;
	return tio_device_register_globals();
}
