// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Suite "overhead": the same operations through libtensorio (info/lib,
 * buf4k/lib, fence/lib) and its batch (info/lib/ring/b64,
 * info/lib/vectored/b64).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tensorio/batch.h>
#include <tensorio/buffer.h>
#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/stream.h>

#include "overhead.h"

/*
 * The same operations through libtensorio, on whichever backend it picked
 * (kernel in the VM; user, memfd + futex emulation, on the host): the
 * rows that show what the library adds, and the user backend's cost.
 */
struct libst {
	tio_stream_t *stream;
	tio_batch_t *b;		/* the batch rows' batch */
};

int ovh_lib_setup(struct bench_run *run)
{
	struct libst *s;

	if (tio_init()) {
		tio_error_clear();
		return bench_skip(run, "tio_init failed: no usable backend");
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return bench_fail(run, ENOMEM, "state");
	if (ARG_KIND(run->c->arg) == K_FENCE && tio_stream_create(&s->stream)) {
		tio_error_clear();
		free(s);
		return bench_fail(run, EPROTO, "tio_stream_create (%s backend)",
				  tio_backend_name());
	}
	/* A batch row: ARG()'s path is the batch's TIO_BATCH_* mode. */
	if (ARG_BATCH(run->c->arg) > 1 &&
	    (tio_batch_new(0, &s->b) ||
	     tio_batch_set_mode(s->b, (int)ARG_PATH(run->c->arg)))) {
		tio_error_clear();
		tio_batch_free(s->b);
		free(s);
		return bench_fail(run, EPROTO, "tio_batch_new");
	}
	run->state = s;
	return 0;
}

void ovh_lib_teardown(struct bench_run *run)
{
	struct libst *s = run->state;

	if (!s)
		return;
	if (s->stream)
		tio_stream_decref(s->stream);
	tio_batch_free(s->b);
	free(s);
	run->state = NULL;
}

int ovh_lib_run(struct bench_run *run, uint64_t n)
{
	struct libst *s = run->state;
	struct tio_driver_info info;
	uint64_t i, seq;

	for (i = 0; i < n; i++) {
		switch (ARG_KIND(run->c->arg)) {
		case K_INFO:
			if (tio_driver_info(&info))
				goto fail;
			break;
		case K_BUF: {
			tio_buffer_t *b;

			if (tio_buffer_alloc(4096, NULL, &b))
				goto fail;
			tio_buffer_decref(b);
			break;
		}
		case K_FENCE:
			if (tio_fence_emit(s->stream, &seq) ||
			    tio_fence_signal(s->stream, seq, 0))
				goto fail;
			break;
		}
	}
	return 0;
fail:
	tio_error_clear();
	return bench_fail(run, EPROTO, "library call failed (%s backend)",
			  tio_backend_name());
}

/*
 * A batch of 64 INFO records through libtensorio's batch in one mode
 * (TIO_BATCH_CMD_RING or TIO_BATCH_VECTORED): filled, submitted and reset
 * each iteration, as a user of the batch API would.
 */
int ovh_libbatch_run(struct bench_run *run, uint64_t n)
{
	struct libst *s = run->state;
	struct tio_info info = { 0 };
	uint64_t it;
	int i;

	for (it = 0; it < n; it++) {
		for (i = 0; i < 64; i++)
			if (tio_batch_add_record(s->b, TIO_IOC_INFO, &info, sizeof(info)) < 0)
				goto fail;
		if (tio_batch_submit(s->b) || tio_batch_failed(s->b))
			goto fail;
		if (!it && tio_batch_mode(s->b) != (int)ARG_PATH(run->c->arg) &&
		    !strcmp(tio_backend_name(), "kernel"))
			return bench_fail(run, EOPNOTSUPP, "the batch used mode %d",
					  tio_batch_mode(s->b));
		tio_batch_reset(s->b);
	}
	return 0;
fail:
	tio_error_clear();
	return bench_fail(run, EPROTO, "batch of INFO records failed (%s backend)",
			  tio_backend_name());
}
