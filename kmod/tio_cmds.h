/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The driver's commands, one row each, in number order:
 *
 *	TIO_CMD(NAME, fn, payload, nb, kind)
 *
 * @NAME: its number is TIO_IOC_<NAME>
 * @fn: its handler is tio_cmd_<fn>()
 * @payload: its payload is struct <payload>
 * @nb: what it may do to a non-blocking issuer: enum tio_nb, without the
 *	TIO_NB_ prefix
 * @kind: how it is dispatched: enum tio_kind, without the TIO_KIND_ prefix
 *
 * Everything the driver keeps per command is generated from these rows:
 * the dispatch table and its build-time checks (tio_ops[], tio_ioctl.c)
 * and the one dispatch of the hot commands (TIO_HOT_USER, TIO_HOT_RECORD:
 * tio_dispatch.h).
 * An includer defines TIO_CMD(); this file undefines it. There is no
 * include guard: each inclusion expands the rows again.
 * scripts/check-commands.sh checks that these rows, the uapi header, the
 * library's command table and docs/uapi.md name the same commands.
 */
#ifndef TIO_CMD
#error "define TIO_CMD(NAME, fn, payload, nb, kind) before including tio_cmds.h"
#endif

TIO_CMD(INFO,		  info,		    tio_info,	       INLINE, HOT)
TIO_CMD(BUF_ALLOC,	  buf_alloc,	    tio_buf_alloc,     INLINE, HOT)
TIO_CMD(BUF_PIN_USER,	  buf_pin_user,	    tio_buf_pin,       PUNT,   TABLE)
TIO_CMD(BUF_FREE,	  buf_free,	    tio_handle_op,     INLINE, HOT)
TIO_CMD(BUF_INFO,	  buf_info,	    tio_buf_info,      INLINE, TABLE)
TIO_CMD(BUF_SET_DESC,	  buf_set_desc,	    tio_buf_desc,      INLINE, TABLE)
TIO_CMD(BUF_EXPORT,	  buf_export,	    tio_buf_export,    INLINE, TABLE)
TIO_CMD(BUF_IMPORT,	  buf_import,	    tio_buf_import,    PUNT,   TABLE)
TIO_CMD(BUF_ATTACH_FENCE, buf_attach_fence, tio_buf_attach,    INLINE, TABLE)
TIO_CMD(BUF_WAIT,	  buf_wait,	    tio_buf_wait,      WAIT,   TABLE)
TIO_CMD(STREAM_CREATE,	  stream_create,    tio_stream_create, INLINE, TABLE)
TIO_CMD(STREAM_DESTROY,	  stream_destroy,   tio_handle_op,     INLINE, TABLE)
TIO_CMD(FENCE_EMIT,	  fence_emit,	    tio_fence_emit,    INLINE, HOT)
TIO_CMD(FENCE_SIGNAL,	  fence_signal,	    tio_fence_signal,  INLINE, HOT)
TIO_CMD(FENCE_WAIT,	  fence_wait,	    tio_fence_wait,    WAIT,   TABLE)
TIO_CMD(FENCE_EXPORT,	  fence_export,	    tio_fence_export,  INLINE, TABLE)
TIO_CMD(FENCE_IMPORT,	  fence_import,	    tio_fence_import,  INLINE, TABLE)
TIO_CMD(SUBMIT,		  submit,	    tio_submit,	       INLINE, BATCH)
TIO_CMD(RING_SETUP,	  ring_setup,	    tio_ring_setup,    INLINE, TABLE)
TIO_CMD(RING_ENTER,	  ring_enter,	    tio_ring_enter,    INLINE, BATCH)

#undef TIO_CMD
