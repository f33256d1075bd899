// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Errors: create, raise, move, chain; backtraces with function names and
 * file:line; errors crossing call boundaries; per-thread raised state.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ffi_test.h"
#include "kselftest_harness.h"

TEST(create_error_object)
{
	tio_object_t *e, *e2;

	ASSERT_EQ(0, tio_error_new("ValueError", "bad value", "frame a\nframe b\n", NULL, &e));
	EXPECT_EQ(TIO_TYPE_ERROR, e->type_index);
	EXPECT_STREQ("ValueError", tio_error_kind(e));
	EXPECT_STREQ("bad value", tio_error_message(e));
	EXPECT_STREQ("frame a\nframe b\n", tio_error_backtrace(e));
	EXPECT_EQ(NULL, tio_error_cause(e));
	ASSERT_EQ(0, tio_error_new("RuntimeError", "wrapped", NULL, e, &e2));
	EXPECT_EQ(e, tio_error_cause(e2));
	EXPECT_EQ(2, tio_object_strong_count(e));
	/* The TVM FFI cell: kind/message/backtrace byte arrays. */
	EXPECT_EQ(7, ((tio_error_obj_t *)e2)->cell.message.size);
	tio_object_decref(e);
	EXPECT_EQ(2, LIVE());
	tio_object_decref(e2);
	EXPECT_EQ(-1, tio_error_new(NULL, "x", NULL, NULL, &e));
	ASSERT_NO_LEAKS();
}

TEST(update_backtrace_replace_and_append)
{
	tio_byte_array_t more = { "outer\n", 6 };
	tio_error_obj_t *eo;
	tio_object_t *e;

	ASSERT_EQ(0, tio_error_new("E", "m", "inner\n", NULL, &e));
	eo = (tio_error_obj_t *)e;
	eo->cell.update_backtrace(e, &more, TIO_BACKTRACE_APPEND);
	EXPECT_STREQ("inner\nouter\n", tio_error_backtrace(e));
	eo->cell.update_backtrace(e, &more, TIO_BACKTRACE_REPLACE);
	EXPECT_STREQ("outer\n", tio_error_backtrace(e));
	tio_object_decref(e);
	ASSERT_NO_LEAKS();
}

TEST(raise_and_move)
{
	tio_object_t *e;

	EXPECT_EQ(NULL, tio_error_move_from_raised());
	EXPECT_EQ(-1, tio_error_raise("KeyError", "no key '%s' (%d)", "k", 3));
	e = tio_error_peek_raised();
	ASSERT_NE(NULL, e);
	EXPECT_STREQ("no key 'k' (3)", tio_error_message(e));
	/* A second raise replaces (and releases) the first. */
	tio_error_raise("IndexError", "second");
	EXPECT_EQ(1, LIVE());
	e = tio_error_move_from_raised();
	ASSERT_NE(NULL, e);
	EXPECT_STREQ("IndexError", tio_error_kind(e));
	EXPECT_EQ(NULL, tio_error_peek_raised());
	/* set_raised takes its own reference. */
	tio_error_set_raised(e);
	EXPECT_EQ(2, tio_object_strong_count(e));
	tio_object_decref(e);
	tio_error_clear();
	ASSERT_NO_LEAKS();
}

__attribute__((noinline)) static int deep_failure(void)
{
	return tio_error_raise("RuntimeError", "from deep_failure");
}

TEST(backtrace_has_names_and_lines)
{
	tio_object_t *e;
	const char *bt;

	ASSERT_EQ(-1, deep_failure());
	e = tio_error_move_from_raised();
	ASSERT_NE(NULL, e);
	bt = tio_error_backtrace(e);
	TH_LOG("%s", bt);
	EXPECT_NE(NULL, strstr(bt, "#0 "));
	EXPECT_NE(NULL, strstr(bt, "deep_failure"));
	EXPECT_NE(NULL, strstr(bt, "test_ffi_error.c:"));
	/* The library's own frames are not in it. */
	EXPECT_EQ(NULL, strstr(bt, "vraise"));
	tio_object_decref(e);
	ASSERT_NO_LEAKS();
}

/* Raising records addresses only; the text is made on the first read. */
TEST(backtrace_is_symbolised_when_read)
{
	const tio_error_obj_t *eo;
	tio_object_t *e;
	const char *bt;

	ASSERT_EQ(-1, deep_failure());
	e = tio_error_move_from_raised();
	ASSERT_NE(NULL, e);
	eo = (const tio_error_obj_t *)e;
	EXPECT_EQ(NULL, eo->cell.backtrace.data);
	EXPECT_EQ(0, eo->cell.backtrace.size);
	bt = tio_error_backtrace(e);
	EXPECT_NE(NULL, strstr(bt, "deep_failure"));
	/* Stored in the TVM FFI cell for its readers; read twice, made once. */
	EXPECT_EQ(bt, eo->cell.backtrace.data);
	EXPECT_EQ(strlen(bt), eo->cell.backtrace.size);
	EXPECT_EQ(bt, tio_error_backtrace(e));
	tio_object_decref(e);
	ASSERT_NO_LEAKS();
}

/* An error never read is released without its text ever being made. */
TEST(unread_backtrace_costs_no_text)
{
	tio_object_t *e;
	int i;

	for (i = 0; i < 1000; i++) {
		ASSERT_EQ(-1, deep_failure());
		e = tio_error_move_from_raised();
		ASSERT_NE(NULL, e);
		EXPECT_EQ(NULL, ((const tio_error_obj_t *)e)->cell.backtrace.data);
		tio_object_decref(e);
	}
	ASSERT_NO_LEAKS();
}

TEST(append_to_an_unread_backtrace_keeps_its_frames)
{
	tio_byte_array_t more = { "python frame\n", 13 };
	tio_error_obj_t *eo;
	tio_object_t *e;
	const char *bt;

	ASSERT_EQ(-1, deep_failure());
	e = tio_error_move_from_raised();
	eo = (tio_error_obj_t *)e;
	eo->cell.update_backtrace(e, &more, TIO_BACKTRACE_APPEND);
	bt = tio_error_backtrace(e);
	EXPECT_NE(NULL, strstr(bt, "deep_failure"));
	EXPECT_NE(NULL, strstr(bt, "python frame\n"));
	EXPECT_EQ(bt, eo->cell.backtrace.data);
	tio_object_decref(e);
	ASSERT_NO_LEAKS();
}

static void *read_backtrace(void *arg)
{
	return (void *)tio_error_backtrace(arg);
}

/* Threads reading one error's backtrace at once get the same text. */
TEST(backtrace_read_from_threads)
{
	pthread_t th[4];
	void *got[4];
	tio_object_t *e;
	int i;

	ASSERT_EQ(-1, deep_failure());
	e = tio_error_move_from_raised();
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, read_backtrace, e));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_join(th[i], &got[i]));
	for (i = 1; i < 4; i++)
		EXPECT_EQ(got[0], got[i]);
	EXPECT_NE(NULL, strstr(got[0], "deep_failure"));
	tio_object_decref(e);
	ASSERT_NO_LEAKS();
}

TEST(chained_errors)
{
	tio_object_t *e, *c;

	tio_error_raise("OSError", "disk on fire");
	ASSERT_EQ(-1, tio_error_raise_chained("RuntimeError", "save failed"));
	e = tio_error_move_from_raised();
	ASSERT_NE(NULL, e);
	c = tio_error_cause(e);
	ASSERT_NE(NULL, c);
	EXPECT_STREQ("OSError", tio_error_kind(c));
	EXPECT_STREQ("disk on fire", tio_error_message(c));
	EXPECT_EQ(NULL, tio_error_cause(c));
	tio_object_decref(e);
	/* Chaining with nothing raised has no cause. */
	tio_error_raise_chained("RuntimeError", "alone");
	e = tio_error_move_from_raised();
	EXPECT_EQ(NULL, tio_error_cause(e));
	tio_object_decref(e);
	ASSERT_NO_LEAKS();
}

static int failing(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	return tio_error_raise("ValueError", "callback says no to %lld",
			       (long long)args[0].v_int64);
}

static int outer(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	/* Propagates the inner error as it is. */
	return tio_func_call(self, args, nargs, ret);
}

TEST(error_crosses_call_boundaries)
{
	tio_object_t *inner, *out, *e;
	tio_any_t arg = tio_any_int(5), ret = tio_any_none();

	ASSERT_EQ(0, tio_func_new(failing, NULL, NULL, &inner));
	ASSERT_EQ(0, tio_func_new(outer, inner, NULL, &out));
	ASSERT_EQ(-1, tio_func_call(out, &arg, 1, &ret));
	EXPECT_EQ(TIO_TYPE_NONE, ret.type_index);
	e = tio_error_move_from_raised();
	ASSERT_NE(NULL, e);
	EXPECT_STREQ("ValueError", tio_error_kind(e));
	EXPECT_STREQ("callback says no to 5", tio_error_message(e));
	EXPECT_NE(NULL, strstr(tio_error_backtrace(e), "failing"));
	tio_object_decref(e);
	tio_object_decref(out);
	tio_object_decref(inner);
	ASSERT_NO_LEAKS();
}

static void *raise_in_thread(void *arg)
{
	tio_object_t *e;

	if (tio_error_peek_raised())
		return (void *)1;	/* the main thread's error leaked here */
	tio_error_raise("ThreadError", "only mine");
	e = tio_error_move_from_raised();
	if (!e || strcmp(tio_error_message(e), "only mine"))
		return (void *)2;
	tio_object_decref(e);
	/* Left raised at exit: released with the thread. */
	tio_error_raise("ThreadError", "left behind");
	return NULL;
}

TEST(raised_error_is_per_thread)
{
	pthread_t th;
	void *r;

	tio_error_raise("MainError", "main");
	ASSERT_EQ(0, pthread_create(&th, NULL, raise_in_thread, NULL));
	ASSERT_EQ(0, pthread_join(th, &r));
	EXPECT_EQ(NULL, r);
	ASSERT_RAISED("MainError", "main");
	ASSERT_NO_LEAKS();
}

TEST(backtrace_function)
{
	char *bt = NULL;

	ASSERT_EQ(0, tio_backtrace(0, &bt));
	ASSERT_NE(NULL, bt);
	EXPECT_NE(NULL, strstr(bt, "backtrace_function"));
	free(bt);
}

TEST(backtrace_can_be_disabled)
{
	tio_object_t *e;

	/* Read once per process: this test's forked child sets it first. */
	setenv("TIO_BACKTRACE", "0", 1);
	tio_error_raise("E", "quiet");
	e = tio_error_move_from_raised();
	EXPECT_STREQ("", tio_error_backtrace(e));
	tio_object_decref(e);
	ASSERT_NO_LEAKS();
}

TEST_HARNESS_MAIN
