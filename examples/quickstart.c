// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * README.md's quick start: a pinned buffer, a point on a stream, a durable
 * safetensors save and its load. The README quotes this file from its
 * first #include; tests/tools/test-docs.sh checks that the two agree.
 *
 *   build/examples/quickstart [FILE]      (default /tmp/quickstart.safetensors)
 */
#include <stdio.h>

#include <tensorio/buffer.h>
#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/safetensors.h>
#include <tensorio/stream.h>

static int fail(const char *what)
{
	tio_object_t *e = tio_error_move_from_raised();

	fprintf(stderr, "%s: %s\n", what, e ? tio_error_message(e) : "?");
	tio_object_decref(e);
	return 1;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/tmp/quickstart.safetensors";
	int64_t shape[1] = { 1024 };
	DLTensor w = { .ndim = 1, .shape = shape, .dtype = { kDLFloat, 32, 1 },
		       .device = { kDLCPU, 0 } };
	const DLTensor *tensors[] = { &w };
	const char *names[] = { "w" };
	tio_safetensors_t *st;
	tio_buffer_t *buf;
	tio_stream_t *s;
	uint64_t point;
	int i, status;
	float *x;

	if (tio_init())		/* the kernel backend when /dev/tensorio opens */
		return fail("tio_init");
	if (tio_buffer_alloc(1024 * sizeof(float), NULL, &buf))	/* pinned, zeroed */
		return fail("tio_buffer_alloc");
	x = tio_buffer_data(buf);
	for (i = 0; i < 1024; i++)
		x[i] = 1.0f;

	if (tio_stream_create(&s) || tio_fence_emit(s, &point) ||
	    tio_fence_signal(s, point, 0) || tio_fence_wait(s, point, -1, &status))
		return fail("stream");

	w.data = x;
	if (tio_safetensors_save(path, names, tensors, 1) ||	/* durable, atomic */
	    tio_safetensors_load(path, &st))	/* O_DIRECT into pinned memory */
		return fail(path);
	printf("backend %s; point %llu, status %d; %lld tensor in %s\n",
	       tio_backend_name(), (unsigned long long)point, status,
	       (long long)tio_safetensors_count(st), path);

	tio_safetensors_free(st);
	tio_stream_decref(s);
	tio_buffer_decref(buf);
	return tio_shutdown() ? fail("tio_shutdown") : 0;
}
