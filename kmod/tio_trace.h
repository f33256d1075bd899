/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tensorio tracepoints: command entry and exit (every submission form),
 * asynchronous io_uring waits (parked and done) and expired fences, so
 * that perf or trace-cmd can attribute time to commands and to waiting.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM tensorio

#if !defined(_TIO_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TIO_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(tio_cmd_enter,
	    TP_PROTO(const void *tf, unsigned int nr),
	    TP_ARGS(tf, nr),
	    TP_STRUCT__entry(__field(const void *, tf)
			     __field(unsigned int, nr)),
	    TP_fast_assign(__entry->tf = tf;
			   __entry->nr = nr;),
	    TP_printk("file=%p nr=%#x", __entry->tf, __entry->nr)
);

TRACE_EVENT(tio_cmd_exit,
	    TP_PROTO(const void *tf, unsigned int nr, int ret),
	    TP_ARGS(tf, nr, ret),
	    TP_STRUCT__entry(__field(const void *, tf)
			     __field(unsigned int, nr)
			     __field(int, ret)),
	    TP_fast_assign(__entry->tf = tf;
			   __entry->nr = nr;
			   __entry->ret = ret;),
	    TP_printk("file=%p nr=%#x ret=%d", __entry->tf, __entry->nr,
		      __entry->ret)
);

/* An io_uring wait parks on a fence (timeout_ns < 0: none). */
TRACE_EVENT(tio_uring_wait_park,
	    TP_PROTO(const void *tf, u64 context, u64 seqno, s64 timeout_ns),
	    TP_ARGS(tf, context, seqno, timeout_ns),
	    TP_STRUCT__entry(__field(const void *, tf)
			     __field(u64, context)
			     __field(u64, seqno)
			     __field(s64, timeout_ns)),
	    TP_fast_assign(__entry->tf = tf;
			   __entry->context = context;
			   __entry->seqno = seqno;
			   __entry->timeout_ns = timeout_ns;),
	    TP_printk("file=%p context=%llu seqno=%llu timeout_ns=%lld",
		      __entry->tf, __entry->context, __entry->seqno,
		      __entry->timeout_ns)
);

/*
 * A parked io_uring wait completes (its fence signalled, its timeout
 * passed or it was cancelled): status is the fence's error or the result.
 */
TRACE_EVENT(tio_uring_wait_done,
	    TP_PROTO(const void *tf, u64 context, u64 seqno, int status),
	    TP_ARGS(tf, context, seqno, status),
	    TP_STRUCT__entry(__field(const void *, tf)
			     __field(u64, context)
			     __field(u64, seqno)
			     __field(int, status)),
	    TP_fast_assign(__entry->tf = tf;
			   __entry->context = context;
			   __entry->seqno = seqno;
			   __entry->status = status;),
	    TP_printk("file=%p context=%llu seqno=%llu status=%d",
		      __entry->tf, __entry->context, __entry->seqno,
		      __entry->status)
);

/* Points of a timeline expired: seen outside the file, never signalled. */
TRACE_EVENT(tio_fence_expire,
	    TP_PROTO(u64 context, u64 seqno, u64 count, u32 timeout_ms),
	    TP_ARGS(context, seqno, count, timeout_ms),
	    TP_STRUCT__entry(__field(u64, context)
			     __field(u64, seqno)
			     __field(u64, count)
			     __field(u32, timeout_ms)),
	    TP_fast_assign(__entry->context = context;
			   __entry->seqno = seqno;
			   __entry->count = count;
			   __entry->timeout_ms = timeout_ms;),
	    TP_printk("context=%llu seqno=%llu count=%llu timeout_ms=%u",
		      __entry->context, __entry->seqno, __entry->count,
		      __entry->timeout_ms)
);

#endif /* _TIO_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE tio_trace
#include <trace/define_trace.h>
