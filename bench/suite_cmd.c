// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Suite "cmd": one row per driver command, taken from the library's
 * command table (tio_command_info()), so a command added there gets a row
 * here. Each row calls the command's FFI global through tio_func_call(),
 * the path a binding takes, on either backend; a command that makes an
 * object is measured with the command that frees it (the object's last
 * reference). The recipes below say how each command is driven; a table
 * row without one is a failed row naming the command (tests/bench and
 * tests/tools check that none is missing).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/tensorio.h>
#include <tensorio/batch.h>
#include <tensorio/buffer.h>
#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/function.h>
#include <tensorio/stream.h>

#include "bench.h"

struct cmdst {
	tio_object_t *fn;	/* the row's global */
	tio_buffer_t *buf;	/* a 4 KiB buffer */
	tio_stream_t *stream;	/* point 1 emitted and signalled */
	void *page;		/* a page of user memory (BUF_PIN_USER) */
	int dmabuf;		/* the buffer exported (BUF_IMPORT), or -1 */
	tio_any_t args[4];
	int32_t nargs;
};

/*
 * A recipe: how to call command @op's global once. @prep fills the
 * arguments (0, BENCH_SKIP with the reason, or -errno); @drop disposes of
 * a result that owns something. Keyed by the uapi's number, so a recipe
 * cannot outlive its command.
 */
struct recipe {
	unsigned int op;
	const char *note;
	int (*prep)(struct bench_run *run, struct cmdst *s);
	void (*drop)(tio_any_t *ret);
	const char *skip;	/* not measured here, and why */
};

static void drop_object(tio_any_t *ret)
{
	tio_any_decref(ret);
}

static void drop_fd(tio_any_t *ret)
{
	if (ret->v_int64 >= 0)
		close((int)ret->v_int64);
}

#define ARGS(...) do {							\
	tio_any_t a_[] = { __VA_ARGS__ };				\
	memcpy(s->args, a_, sizeof(a_));				\
	s->nargs = (int32_t)(sizeof(a_) / sizeof(a_[0]));		\
} while (0)
#define BUF tio_any_object((tio_object_t *)s->buf)
#define STREAM tio_any_object((tio_object_t *)s->stream)

static uint64_t features(void)
{
	struct tio_driver_info info;

	if (tio_driver_info(&info)) {
		tio_error_clear();
		return 0;
	}
	return info.features;
}

static int p_none(struct bench_run *run, struct cmdst *s)
{
	(void)run;
	s->nargs = 0;
	return 0;
}

static int p_alloc(struct bench_run *run, struct cmdst *s)
{
	(void)run;
	ARGS(tio_any_int(4096));
	return 0;
}

static int p_pin(struct bench_run *run, struct cmdst *s)
{
	(void)run;
	ARGS(tio_any_ptr(s->page), tio_any_int(4096));
	return 0;
}

static int p_buf(struct bench_run *run, struct cmdst *s)
{
	(void)run;
	ARGS(BUF);
	return 0;
}

static int p_clear_desc(struct bench_run *run, struct cmdst *s)
{
	(void)run;
	ARGS(BUF, tio_any_none(), tio_any_int(TIO_DESC_CLEAR));
	return 0;
}

static int p_export(struct bench_run *run, struct cmdst *s)
{
	if (!(features() & TIO_FEAT_DMABUF))
		return bench_skip(run, "no dma-buf export on the %s backend", tio_backend_name());
	ARGS(BUF);
	return 0;
}

static int p_import(struct bench_run *run, struct cmdst *s)
{
	int ret = p_export(run, s);

	if (ret)
		return ret;
	if (tio_buffer_export(s->buf, TIO_EXPORT_F_CLOEXEC, &s->dmabuf)) {
		tio_error_clear();
		return bench_skip(run, "BUF_EXPORT failed on the %s backend", tio_backend_name());
	}
	ARGS(tio_any_int(s->dmabuf));
	return 0;
}

static int p_attach(struct bench_run *run, struct cmdst *s)
{
	(void)run;
	ARGS(BUF, STREAM, tio_any_int(1));
	return 0;
}

static int p_stream(struct bench_run *run, struct cmdst *s)
{
	(void)run;
	ARGS(STREAM);
	return 0;
}

static int p_signal(struct bench_run *run, struct cmdst *s)
{
	(void)run;
	ARGS(STREAM, tio_any_int(1));	/* signalled already: no new point */
	return 0;
}

static int p_wait(struct bench_run *run, struct cmdst *s)
{
	(void)run;
	ARGS(STREAM, tio_any_int(1), tio_any_int(0));
	return 0;
}

static int p_sync_file(struct bench_run *run, struct cmdst *s)
{
	if (!(features() & TIO_FEAT_SYNC_FILE))
		return bench_skip(run, "no sync_file on the %s backend", tio_backend_name());
	ARGS(STREAM, tio_any_int(1));
	return 0;
}

static int p_fence_import(struct bench_run *run, struct cmdst *s)
{
	tio_any_t a[2] = { STREAM, tio_any_int(1) }, fd = tio_any_none();
	int ret = p_sync_file(run, s);

	if (ret)
		return ret;
	if (tio_func_call_global("tio.fence.export", a, 2, &fd)) {
		tio_error_clear();
		return bench_skip(run, "FENCE_EXPORT failed on the %s backend",
				  tio_backend_name());
	}
	s->dmabuf = (int)fd.v_int64;
	ARGS(STREAM, tio_any_int(s->dmabuf));
	return 0;
}

static const struct recipe recipes[] = {
	{ TIO_IOC_INFO, "the driver's no-op", p_none },
	{ TIO_IOC_BUF_ALLOC, "4 KiB, then its last reference frees it (BUF_FREE)",
	  p_alloc, drop_object },
	{ TIO_IOC_BUF_PIN_USER, "a 4 KiB page of user memory, then BUF_FREE",
	  p_pin, drop_object },
	{ TIO_IOC_BUF_FREE, NULL, NULL, NULL, "measured with BUF_ALLOC (a buffer's last reference)" },
	{ TIO_IOC_BUF_INFO, "a 4 KiB buffer's size", p_buf },
	{ TIO_IOC_BUF_SET_DESC, "clear a 4 KiB buffer's descriptor", p_clear_desc },
	{ TIO_IOC_BUF_EXPORT, "a 4 KiB buffer as a dma-buf fd (closed after)", p_export, drop_fd },
	{ TIO_IOC_BUF_IMPORT, "a 4 KiB dma-buf, then BUF_FREE", p_import, drop_object },
	{ TIO_IOC_BUF_ATTACH_FENCE, "a signalled point to a 4 KiB buffer", p_attach },
	{ TIO_IOC_BUF_WAIT, "a 4 KiB buffer whose points are signalled", p_buf },
	{ TIO_IOC_STREAM_CREATE, "then its last reference destroys it (STREAM_DESTROY)",
	  p_none, drop_object },
	{ TIO_IOC_STREAM_DESTROY, NULL, NULL, NULL, "measured with STREAM_CREATE (a stream's last reference)" },
	{ TIO_IOC_FENCE_EMIT, "one point, left unsignalled until the row ends", p_stream },
	{ TIO_IOC_FENCE_SIGNAL, "a point signalled already", p_signal },
	{ TIO_IOC_FENCE_WAIT, "a signalled point, timeout 0", p_wait },
	{ TIO_IOC_FENCE_EXPORT, "a signalled point as a sync_file (closed after)",
	  p_sync_file, drop_fd },
	{ TIO_IOC_FENCE_IMPORT, "a sync_file as a new point", p_fence_import },
	{ TIO_IOC_SUBMIT, NULL, NULL, NULL, "the envelope of batches: suite overhead, submit/bN rows" },
	{ TIO_IOC_RING_SETUP, NULL, NULL, NULL, "once per file: suite overhead, ring/bN rows" },
	{ TIO_IOC_RING_ENTER, NULL, NULL, NULL, "suite overhead, ring/bN rows" },
};

static const struct recipe *recipe_of(unsigned int op)
{
	size_t i;

	for (i = 0; i < sizeof(recipes) / sizeof(recipes[0]); i++)
		if (recipes[i].op == op)
			return &recipes[i];
	return NULL;
}

static void cmd_teardown(struct bench_run *run)
{
	struct cmdst *s = run->state;

	if (!s)
		return;
	tio_object_decref(s->fn);
	if (s->buf)
		tio_buffer_decref(s->buf);
	if (s->stream)
		tio_stream_decref(s->stream);
	if (s->dmabuf >= 0)
		close(s->dmabuf);
	if (s->page)
		munmap(s->page, 4096);
	free(s);
	run->state = NULL;
	tio_error_clear();
}

static int cmd_setup(struct bench_run *run)
{
	struct tio_command_info c;
	const struct recipe *r;
	struct cmdst *s;
	uint64_t seq;
	int ret;

	if (tio_command_info((int32_t)run->c->arg, &c)) {
		tio_error_clear();
		return bench_fail(run, EPROTO, "tio_command_info(%d)", (int)run->c->arg);
	}
	r = recipe_of(c.op);
	if (!r)
		return bench_fail(run, ENOSYS, "tio-bench has no recipe for %s", c.name);
	if (r->skip)
		return bench_skip(run, "%s", r->skip);
	if (tio_init()) {
		tio_error_clear();
		return bench_skip(run, "tio_init failed: no usable backend");
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return bench_fail(run, ENOMEM, "state");
	s->dmabuf = -1;
	run->state = s;
	s->page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->page == MAP_FAILED) {
		s->page = NULL;
		ret = bench_fail(run, errno, "mmap");
		goto fail;
	}
	if (tio_func_get_global(c.global, &s->fn) || !s->fn ||
	    tio_buffer_alloc(4096, NULL, &s->buf) || tio_stream_create(&s->stream) ||
	    tio_fence_emit(s->stream, &seq) || tio_fence_signal(s->stream, seq, 0)) {
		ret = bench_fail(run, EPROTO, "%s: %s", c.global,
				 tio_error_peek_raised() ?
				 tio_error_message(tio_error_peek_raised()) : "no such global");
		goto fail;
	}
	ret = r->prep(run, s);
	if (ret)
		goto fail;
	return 0;
fail:
	cmd_teardown(run);
	return ret;
}

static int cmd_run(struct bench_run *run, uint64_t n)
{
	struct cmdst *s = run->state;
	const struct recipe *r;
	struct tio_command_info c;
	tio_any_t ret;
	uint64_t i;

	tio_command_info((int32_t)run->c->arg, &c);
	r = recipe_of(c.op);
	for (i = 0; i < n; i++) {
		ret = tio_any_none();
		if (tio_func_call(s->fn, s->args, s->nargs, &ret))
			goto fail;
		if (r->drop)
			r->drop(&ret);
	}
	return 0;
fail:
	return bench_fail(run, EPROTO, "%s (%s backend): %s", c.global, tio_backend_name(),
			  tio_error_peek_raised() ?
			  tio_error_message(tio_error_peek_raised()) : "failed");
}

/* One row per command of the library's table, named after it. */
static void __attribute__((constructor)) cmd_register(void)
{
	struct tio_command_info c;
	const struct recipe *r;
	struct bench_case *bc;
	int32_t i, n = tio_command_count();

	bc = calloc((size_t)n, sizeof(*bc));
	if (!bc)
		return;	/* the suite is then empty; tests/bench notices */
	for (i = 0; i < n; i++) {
		if (tio_command_info(i, &c)) {
			tio_error_clear();
			continue;
		}
		r = recipe_of(c.op);
		bc[i].suite = "cmd";
		bc[i].name = c.name;
		bc[i].note = !r ? "no recipe in tio-bench" : r->note ? r->note : r->skip;
		bc[i].setup = cmd_setup;
		bc[i].run = cmd_run;
		bc[i].teardown = cmd_teardown;
		bc[i].arg = (uintptr_t)i;
		bench_register(&bc[i]);
	}
}
