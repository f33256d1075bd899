// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * docs/library.md's example: a buffer, a stream, then 1 000 driver calls
 * (fence emits) batched through io_uring with an asynchronous wait and a
 * userspace call in the same batch.
 *
 *   build/examples/batch_calls            # backend chosen automatically
 *   TIO_BACKEND=user build/examples/batch_calls
 */
#include <stdio.h>
#include <string.h>

#include <tensorio/batch.h>
#include <tensorio/buffer.h>
#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/function.h>
#include <tensorio/stream.h>

static int fail(const char *what)
{
	tio_object_t *e = tio_error_move_from_raised();

	fprintf(stderr, "%s: %s: %s\n", what, e ? tio_error_kind(e) : "?",
		e ? tio_error_message(e) : "?");
	tio_object_decref(e);
	return 1;
}

int main(void)
{
	tio_object_t *signalled;
	tio_buffer_t *buf;
	tio_stream_t *s;
	tio_batch_t *b;
	tio_any_t arg, v;
	int64_t i, wait_idx, read_idx;
	char *p;

	/* 1. The context: kernel backend when /dev/tensorio is there. */
	if (tio_init())
		return fail("tio_init");
	printf("backend: %s\n", tio_backend_name());

	/* 2. A pinned buffer, mapped into this process. */
	if (tio_buffer_alloc(1 << 20, NULL, &buf))
		return fail("tio_buffer_alloc");
	p = tio_buffer_data(buf);
	if (!p)
		return fail("tio_buffer_data");
	strcpy(p, "hello, tensorio");

	/* 3. A stream (fence timeline). */
	if (tio_stream_create(&s))
		return fail("tio_stream_create");

	/* 4. A batch: a wait for point 1000, 1 000 emits, a signal, a read. */
	if (tio_batch_new(0, &b))
		return fail("tio_batch_new");
	wait_idx = -1;
	for (i = 0; i < 1000; i++) {
		if (tio_batch_fence_emit(b, s) < 0)
			return fail("tio_batch_fence_emit");
		if (i == 0)
			wait_idx = tio_batch_fence_wait(b, s, 1000, -1);
	}
	tio_batch_fence_signal(b, s, 1000, 0);
	if (tio_func_get_global("tio.stream.signalled", &signalled) || !signalled)
		return fail("tio.stream.signalled");
	arg = tio_any_object((tio_object_t *)s);
	read_idx = tio_batch_add(b, signalled, &arg, 1);	/* runs in userspace */

	/* 5. One submission; then collect the asynchronous wait. */
	if (tio_batch_submit(b) || tio_batch_wait(b, -1, -1) < 0)
		return fail("tio_batch_submit");
	printf("entries %lld, failed %lld, kernel entries %lld\n",
	       (long long)tio_batch_count(b), (long long)tio_batch_failed(b),
	       (long long)tio_batch_enters(b));
	if (tio_batch_result(b, wait_idx, &v))
		return fail("wait");
	printf("wait for point 1000: status %lld\n", (long long)v.v_int64);
	if (tio_batch_result(b, read_idx, &v))
		return fail("signalled");
	printf("seqno word after the batch: %lld\n", (long long)v.v_int64);
	printf("buffer says: %s\n", p);

	tio_batch_free(b);
	tio_object_decref(signalled);
	tio_stream_decref(s);
	tio_buffer_decref(buf);
	return tio_shutdown() ? fail("tio_shutdown") : 0;
}
