// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The command table (cmd_table.h): one row per driver command, what is
 * read from it alone (names, sizes, argument checks and encoding, the
 * public tio_command_info()), and the FFI types tio.Buffer and tio.Stream
 * the rows take. It calls nothing else in dev/ but errno.c: running a
 * row and decoding its result is call.c's, above the objects.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <tensorio/batch.h>
#include <tensorio/error.h>
#include <tensorio/function.h>
#include <tensorio/string.h>
#include <tensorio/type.h>

#include "dev/dev_internal.h"

static pthread_once_t tio_dev_types_once = PTHREAD_ONCE_INIT;
/* Written once, under the once; -1 until then (no object can match). */
struct tio_dev_types tio_dev_types = { -1, -1 };

static void tio_dev_field(int32_t type, const char *name, const char *doc,
			  size_t offset, size_t size)
{
	tio_field_info_t f;

	memset(&f, 0, sizeof(f));
	f.struct_size = sizeof(f);
	f.name = name;
	f.doc = doc;
	f.offset = (int64_t)offset;
	f.size = (int64_t)size;
	f.field_type_index = TIO_TYPE_INT;
	if (tio_type_register_field(type, &f))
		tio_error_clear();	/* already registered: keep going */
}

static void tio_dev_types_register(void)
{
	int32_t b, s;

	if (tio_type_register("tio.Buffer", TIO_TYPE_OBJECT, &b) ||
	    tio_type_register("tio.Stream", TIO_TYPE_OBJECT, &s))
		return;
	tio_dev_field(b, "handle", "the backend's buffer handle",
		      offsetof(struct tio_buffer, handle), sizeof(int64_t));
	tio_dev_field(b, "kind", "TIO_BUF_KIND_* (1 alloc, 2 user, 3 import)",
		      offsetof(struct tio_buffer, kind), sizeof(int64_t));
	tio_dev_field(b, "size", "size in bytes",
		      offsetof(struct tio_buffer, size), sizeof(int64_t));
	tio_dev_field(s, "handle", "the backend's stream handle",
		      offsetof(struct tio_stream, handle), sizeof(int64_t));
	tio_dev_field(s, "context", "the timeline's dma_fence context",
		      offsetof(struct tio_stream, context), sizeof(int64_t));
	tio_type_set_doc(b, "a tensorio buffer (pinned memory, dma-buf)");
	tio_type_set_doc(s, "a tensorio stream (fence timeline)");
	tio_error_clear();
	__atomic_store_n(&tio_dev_types.buffer, b, __ATOMIC_RELEASE);
	__atomic_store_n(&tio_dev_types.stream, s, __ATOMIC_RELEASE);
}

static int32_t tio_dev_type(int32_t *which, const char *name)
{
	int32_t t;

	pthread_once(&tio_dev_types_once, tio_dev_types_register);
	t = __atomic_load_n(which, __ATOMIC_ACQUIRE);
	if (t < 0)
		tio_raise_errno(ENOMEM, "registering the FFI type %s", name);
	return t;
}

/** tio_buffer_type_index() - tio.Buffer's type index, or -1 with an error raised */
int32_t tio_buffer_type_index(void)
{
	return tio_dev_type(&tio_dev_types.buffer, "tio.Buffer");
}

/** tio_stream_type_index() - tio.Stream's type index, or -1 with an error raised */
int32_t tio_stream_type_index(void)
{
	return tio_dev_type(&tio_dev_types.stream, "tio.Stream");
}

/* Row helpers: an argument stored in field @f of payload struct @s. */
#define FIELD(s, f) sizeof(((struct s *)0)->f), offsetof(struct s, f)
#define A_INT(n, s, f, d, l, h) { n, TIO_ARG_INT, FIELD(s, f), d, l, h, NULL }
#define A_RANGE(n, s, f, d, l, h, r) { n, TIO_ARG_INT, FIELD(s, f), d, l, h, r }
#define A_U32(n, s, f, d) A_INT(n, s, f, d, 0, UINT32_MAX)
#define A_S32(n, s, f, d) A_INT(n, s, f, d, INT32_MIN, INT32_MAX)
#define A_64(n, s, f, d) A_INT(n, s, f, d, INT64_MIN, INT64_MAX)
#define A_PTR(n, s, f) { n, TIO_ARG_PTR, FIELD(s, f), 0, 0, 0, NULL }
#define A_BUF(s, f) { "buffer", TIO_ARG_BUFFER, FIELD(s, f), 0, 0, 0, NULL }
#define A_STREAM(s, f) { "stream", TIO_ARG_STREAM, FIELD(s, f), 0, 0, 0, NULL }
#define R_INT(s, f) .ret = TIO_RET_INT, .ret_width = sizeof(((struct s *)0)->f), \
	.ret_offset = offsetof(struct s, f)
#define R_BUF(s, k, addr_) .ret = TIO_RET_BUFFER, .ret_offset = offsetof(struct s, handle), \
	.buf = { k, offsetof(struct s, size), offsetof(struct s, mmap_offset), addr_ }
#define WAITS(s) .flags = TIO_CMD_F_WAIT | TIO_CMD_F_SIGNED, \
	.timeout_offset = offsetof(struct s, timeout_ns)

const struct tio_cmd_desc tio_cmds[TIO_CMD_COUNT] = {
	[TIO_CMD_INFO] = { TIO_IOC_INFO, "INFO", "tio.driver.info", 0, { { 0 } },
		R_INT(tio_info, features) },
	[TIO_CMD_BUF_ALLOC] = { TIO_IOC_BUF_ALLOC, "BUF_ALLOC", "tio.buffer.alloc", 1, {
		A_RANGE("size", tio_buf_alloc, size, 0, 1, INT64_MAX, "positive"),
		A_PTR("desc", tio_buf_alloc, desc_ptr) },
		R_BUF(tio_buf_alloc, TIO_BUF_KIND_ALLOC, 0) },
	[TIO_CMD_BUF_PIN_USER] = { TIO_IOC_BUF_PIN_USER, "BUF_PIN_USER",
		"tio.buffer.pin_user", 2, {
		A_PTR("addr", tio_buf_pin, addr),
		A_RANGE("size", tio_buf_pin, size, 0, 1, INT64_MAX, "positive"),
		A_U32("flags", tio_buf_pin, flags, 0),
		A_PTR("desc", tio_buf_pin, desc_ptr) },
		R_BUF(tio_buf_pin, TIO_BUF_KIND_USER, offsetof(struct tio_buf_pin, addr)),
		.flags = TIO_CMD_F_PUNT },
	[TIO_CMD_BUF_FREE] = { TIO_IOC_BUF_FREE, "BUF_FREE", NULL, 1, {
		A_U32("handle", tio_handle_op, handle, 0) } },
	[TIO_CMD_BUF_INFO] = { TIO_IOC_BUF_INFO, "BUF_INFO", "tio.buffer.info", 1, {
		A_BUF(tio_buf_info, handle),
		A_PTR("desc", tio_buf_info, desc_ptr) },
		R_INT(tio_buf_info, size) },
	[TIO_CMD_BUF_SET_DESC] = { TIO_IOC_BUF_SET_DESC, "BUF_SET_DESC",
		"tio.buffer.set_desc", 2, {
		A_BUF(tio_buf_desc, handle),
		A_PTR("desc", tio_buf_desc, desc_ptr),
		A_U32("flags", tio_buf_desc, flags, 0) } },
	[TIO_CMD_BUF_EXPORT] = { TIO_IOC_BUF_EXPORT, "BUF_EXPORT", "tio.buffer.export", 1, {
		A_BUF(tio_buf_export, handle),
		A_U32("flags", tio_buf_export, flags, TIO_EXPORT_F_CLOEXEC) },
		R_INT(tio_buf_export, fd), .flags = TIO_CMD_F_SIGNED },
	[TIO_CMD_BUF_IMPORT] = { TIO_IOC_BUF_IMPORT, "BUF_IMPORT", "tio.buffer.import", 1, {
		A_S32("fd", tio_buf_import, fd, 0) },
		R_BUF(tio_buf_import, TIO_BUF_KIND_IMPORT, 0),
		.flags = TIO_CMD_F_PUNT },
	[TIO_CMD_BUF_ATTACH_FENCE] = { TIO_IOC_BUF_ATTACH_FENCE, "BUF_ATTACH_FENCE",
		"tio.buffer.attach_fence", 3, {
		A_BUF(tio_buf_attach, handle),
		A_STREAM(tio_buf_attach, stream),
		A_64("seqno", tio_buf_attach, seqno, 0),
		A_U32("flags", tio_buf_attach, flags, 0) } },
	[TIO_CMD_BUF_WAIT] = { TIO_IOC_BUF_WAIT, "BUF_WAIT", "tio.buffer.wait", 1, {
		A_BUF(tio_buf_wait, handle),
		A_64("timeout_ns", tio_buf_wait, timeout_ns, -1),
		A_U32("flags", tio_buf_wait, flags, 0) },
		R_INT(tio_buf_wait, status), WAITS(tio_buf_wait) },
	[TIO_CMD_STREAM_CREATE] = { TIO_IOC_STREAM_CREATE, "STREAM_CREATE",
		"tio.stream.create", 0, {
		A_RANGE("flags", tio_stream_create, flags, 0, 0, TIO_STREAM_F_DOORBELL,
			"0 or TIO_STREAM_F_DOORBELL") },
		.ret = TIO_RET_STREAM },
	[TIO_CMD_STREAM_DESTROY] = { TIO_IOC_STREAM_DESTROY, "STREAM_DESTROY", NULL, 1, {
		A_U32("handle", tio_handle_op, handle, 0) } },
	[TIO_CMD_FENCE_EMIT] = { TIO_IOC_FENCE_EMIT, "FENCE_EMIT", "tio.fence.emit", 1, {
		A_STREAM(tio_fence_emit, stream) },
		R_INT(tio_fence_emit, seqno) },
	[TIO_CMD_FENCE_SIGNAL] = { TIO_IOC_FENCE_SIGNAL, "FENCE_SIGNAL",
		"tio.fence.signal", 2, {
		A_STREAM(tio_fence_signal, stream),
		A_64("seqno", tio_fence_signal, seqno, 0),
		A_RANGE("error", tio_fence_signal, error, 0, -4095, 0,
			"0 or a negative errno") } },
	[TIO_CMD_FENCE_WAIT] = { TIO_IOC_FENCE_WAIT, "FENCE_WAIT", "tio.fence.wait", 2, {
		A_STREAM(tio_fence_wait, stream),
		A_64("seqno", tio_fence_wait, seqno, 0),
		A_64("timeout_ns", tio_fence_wait, timeout_ns, -1) },
		R_INT(tio_fence_wait, status), WAITS(tio_fence_wait) },
	[TIO_CMD_FENCE_EXPORT] = { TIO_IOC_FENCE_EXPORT, "FENCE_EXPORT",
		"tio.fence.export", 2, {
		A_STREAM(tio_fence_export, stream),
		A_64("seqno", tio_fence_export, seqno, 0),
		A_U32("flags", tio_fence_export, flags, TIO_EXPORT_F_CLOEXEC) },
		R_INT(tio_fence_export, fd), .flags = TIO_CMD_F_SIGNED },
	[TIO_CMD_FENCE_IMPORT] = { TIO_IOC_FENCE_IMPORT, "FENCE_IMPORT",
		"tio.fence.import", 2, {
		A_STREAM(tio_fence_import, stream),
		A_S32("fd", tio_fence_import, fd, 0) },
		R_INT(tio_fence_import, seqno) },
	[TIO_CMD_SUBMIT] = { TIO_IOC_SUBMIT, "SUBMIT", NULL, 0, { { 0 } },
		.flags = TIO_CMD_F_NESTS },
	[TIO_CMD_RING_SETUP] = { TIO_IOC_RING_SETUP, "RING_SETUP", NULL, 0, { { 0 } } },
	[TIO_CMD_RING_ENTER] = { TIO_IOC_RING_ENTER, "RING_ENTER", NULL, 0, { { 0 } },
		.flags = TIO_CMD_F_NESTS },
};

/**
 * tio_cmd_of() - the row of a command
 * @op: its ioctl number
 *
 * On every command's path (the user backend looks each one up). Aligned to
 * a cache line so that its loop never straddles two, wherever the linker
 * puts it: straddling costs the user backend's FENCE_EMIT 17% (2-vCPU AMD
 * EPYC, tio-bench cmd/FENCE_EMIT 24.5 against 28.5 ns).
 *
 * Return: the row, or NULL when @op is no command of this uapi.
 */
__attribute__((aligned(64)))
const struct tio_cmd_desc *tio_cmd_of(unsigned int op)
{
	size_t i;

	for (i = 0; i < TIO_CMD_COUNT; i++)
		if (tio_cmds[i].op == op)
			return &tio_cmds[i];
	return NULL;
}

const char *tio_op_name(unsigned int op)
{
	const struct tio_cmd_desc *cmd = tio_cmd_of(op);

	return cmd ? cmd->name : "unknown command";
}

size_t tio_op_size(unsigned int op)
{
	return tio_cmd_of(op) ? _IOC_SIZE(op) : 0;
}

/* How many arguments @cmd's global takes at most (its fixed ones are not). */
static int32_t tio_cmd_nargs_max(const struct tio_cmd_desc *cmd)
{
	int32_t max;

	for (max = 0; max < TIO_CMD_MAX_ARGS && cmd->args[max].kind &&
	     cmd->args[max].kind != TIO_ARG_FIXED; max++)
		;
	return max;
}

int32_t tio_command_count(void)
{
	return TIO_CMD_COUNT;
}

int tio_command_info(int32_t index, struct tio_command_info *out)
{
	const struct tio_cmd_desc *cmd;
	int32_t max;

	if (index < 0 || index >= TIO_CMD_COUNT)
		return tio_raise_errno(ERANGE, "command %d of %d", index, TIO_CMD_COUNT);
	cmd = &tio_cmds[index];
	max = tio_cmd_nargs_max(cmd);
	out->name = cmd->name;
	out->global = cmd->global;
	out->op = cmd->op;
	out->payload_size = _IOC_SIZE(cmd->op);
	out->flags = (cmd->flags & TIO_CMD_F_WAIT ? TIO_COMMAND_WAITS : 0) |
		     (_IOC_DIR(cmd->op) & _IOC_READ ? TIO_COMMAND_WRITES_BACK : 0) |
		     (cmd->flags & TIO_CMD_F_NESTS ? TIO_COMMAND_RUNS_RECORDS : 0);
	out->nargs = cmd->global ? cmd->nreq : 0;
	out->nargs_max = cmd->global ? max : 0;
	return 0;
}

int tio_cmd_arg_error(const struct tio_cmd_desc *cmd, int32_t i, const char *what)
{
	return tio_raise_errno(EINVAL, "%s: argument %d (%s) must be %s",
			       cmd->global ? cmd->global : cmd->name, i + 1,
			       cmd->args[i].name, what);
}

int tio_cmd_range_error(const struct tio_cmd_desc *cmd, int32_t i, int64_t v)
{
	const struct tio_cmd_arg *a = &cmd->args[i];
	char what[64];

	if (a->range)
		snprintf(what, sizeof(what), "%s", a->range);
	else
		snprintf(what, sizeof(what), "in [%lld, %lld]", (long long)a->lo,
			 (long long)a->hi);
	return tio_raise_errno(EINVAL, "%s: argument %d (%s) must be %s, got %lld",
			       cmd->global ? cmd->global : cmd->name, i + 1, a->name,
			       what, (long long)v);
}

/**
 * tio_cmd_encode() - fill a command's payload from FFI arguments
 * @cmd: the command
 * @args: the arguments, as the row lists them
 * @nargs: how many (optional ones take their defaults)
 * @payload: the zeroed payload
 * @keep: two slots for the objects whose handles went in (borrowed)
 *
 * Return: 0, or -1 with an error raised.
 */
int tio_cmd_encode(const struct tio_cmd_desc *cmd, const tio_any_t *args,
		   int32_t nargs, void *payload, tio_object_t **keep)
{
	const struct tio_cmd_arg *a = cmd->args;
	tio_object_t *o;
	int32_t i, max, t;

	max = tio_cmd_nargs_max(cmd);
	if (TIO_UNLIKELY(nargs < cmd->nreq || nargs > max))
		return tio_raise_errno(EINVAL, "%s takes %d to %d arguments, got %d",
				       cmd->global ? cmd->global : cmd->name,
				       cmd->nreq, max, nargs);
	/* No call on the way but the error paths': this is every call's path. */
	for (i = 0; i < nargs; i++, a++) {
		const tio_any_t *v = &args[i];

		switch (a->kind) {
		case TIO_ARG_INT:
			if (v->type_index != TIO_TYPE_INT && v->type_index != TIO_TYPE_BOOL)
				return tio_cmd_arg_error(cmd, i, "an int");
			if (v->v_int64 < a->lo || v->v_int64 > a->hi)
				return tio_cmd_range_error(cmd, i, v->v_int64);
			tio_cmd_store(payload, a, (uint64_t)v->v_int64);
			break;
		case TIO_ARG_PTR:
			if (v->type_index != TIO_TYPE_OPAQUE_PTR &&
			    v->type_index != TIO_TYPE_INT && v->type_index != TIO_TYPE_NONE)
				return tio_cmd_arg_error(cmd, i, "a pointer, an address or None");
			tio_cmd_store(payload, a, v->type_index == TIO_TYPE_NONE ? 0 : v->v_uint64);
			break;
		default:	/* TIO_ARG_BUFFER, TIO_ARG_STREAM */
			t = __atomic_load_n(a->kind == TIO_ARG_BUFFER ? &tio_dev_types.buffer :
					    &tio_dev_types.stream, __ATOMIC_RELAXED);
			o = v->type_index >= TIO_TYPE_STATIC_OBJECT_BEGIN ? v->v_obj : NULL;
			if (!o || o->type_index != t)
				return tio_cmd_arg_error(cmd, i, a->kind == TIO_ARG_BUFFER ?
						     "a tio.Buffer" : "a tio.Stream");
			/* Both keep their handle in the same place. */
			tio_cmd_store(payload, a, (uint64_t)((struct tio_buffer *)o)->handle);
			keep[keep[0] ? 1 : 0] = o;
			break;
		}
	}
	for (; i < TIO_CMD_MAX_ARGS && a->kind; i++, a++)
		tio_cmd_store(payload, a, (uint64_t)a->dflt);
	return 0;
}
