// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The functions a binding without the headers calls by name (ctypes,
 * cffi's ABI mode): reference counting and the error accessors are
 * exported from libtensorio.so, not only inline in the headers.
 */
#include <dlfcn.h>

#include "kselftest_harness.h"
#include <tensorio/ffi.h>

#define SYM(name) dlsym(lib, name)

TEST(refcount_and_error_accessors_are_exported)
{
	void *lib = dlopen("libtensorio.so.0", RTLD_NOW | RTLD_NOLOAD);
	void (*incref)(tio_object_t *), (*decref)(tio_object_t *);
	const char *(*kind)(const tio_object_t *), *(*message)(const tio_object_t *);
	const char *(*backtrace)(const tio_object_t *);
	tio_object_t *(*move)(void);
	tio_object_t *err;
	tio_any_t s;

	ASSERT_NE(NULL, lib);
	incref = (void (*)(tio_object_t *))SYM("tio_object_incref");
	decref = (void (*)(tio_object_t *))SYM("tio_object_decref");
	kind = (const char *(*)(const tio_object_t *))SYM("tio_error_kind");
	message = (const char *(*)(const tio_object_t *))SYM("tio_error_message");
	backtrace = (const char *(*)(const tio_object_t *))SYM("tio_error_backtrace");
	move = (tio_object_t *(*)(void))SYM("tio_error_move_from_raised");
	ASSERT_NE(NULL, incref);
	ASSERT_NE(NULL, decref);
	ASSERT_NE(NULL, kind);
	ASSERT_NE(NULL, message);
	ASSERT_NE(NULL, backtrace);
	ASSERT_NE(NULL, move);
	ASSERT_NE(NULL, SYM("tio_any_decref"));

	ASSERT_EQ(0, tio_str_from_cstr("a string long enough to be an object", &s));
	ASSERT_TRUE(tio_any_is_object(&s));
	incref(s.v_obj);
	EXPECT_EQ(2, tio_object_strong_count(s.v_obj));
	decref(s.v_obj);
	EXPECT_EQ(1, tio_object_strong_count(s.v_obj));
	decref(s.v_obj);

	tio_error_raise("ValueError", "from %s", "a binding");
	err = move();
	ASSERT_NE(NULL, err);
	EXPECT_STREQ("ValueError", kind(err));
	EXPECT_STREQ("from a binding", message(err));
	EXPECT_NE(NULL, backtrace(err));
	decref(err);
	dlclose(lib);
}

TEST_HARNESS_MAIN
