// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Errors and values crossing between libtensorio and a TVM FFI runtime in
 * one process, in both layouts:
 *   one: libtensorio-tvmffi is the TVM FFI runtime (libtvm_ffi.so);
 *   two: a foreign runtime with its own thread-local error slot
 *        (fixture_foreign_rt.c, standing in for TVM FFI's own library)
 *        beside libtensorio, found at run time (nothing links it).
 * The "TVM" module is fixture_tvm.c linked with that layout's runtime; the
 * tensorio module is fixture_tio_raise.c. The runtime is opened with
 * dlopen RTLD_LOCAL and its entry points called through dlsym, as a TVM
 * FFI program's own calls would be. Every test ends with no object of
 * either runtime left alive and nothing raised.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ffi_test.h"
#include "kselftest_harness.h"
#include "tvmffi_abi.h"

#define FOREIGN_DIR FIXTURE_DIR "/foreign"
#define FIX_TIO FIXTURE_DIR "/fixture_tio_raise.so"
#define STANDIN_BACKTRACE "standin.frame at standin.cc:1\n"

/* The runtime's entry points, as a program on it calls them. */
struct rt {
	void *h;
	void (*set)(TVMFFIObjectHandle);
	void (*move)(TVMFFIObjectHandle *);
	void (*raise)(const char *, const char *);
	int (*decref)(TVMFFIObjectHandle);
	int (*create)(void *, TVMFFISafeCallType, void (*)(void *), TVMFFIObjectHandle *);
	int (*call)(TVMFFIObjectHandle, TVMFFIAny *, int32_t, TVMFFIAny *);
	int64_t (*live)(void);	/* the stand-in's objects; NULL for ours */
};

#define SYM(r, f, name) (*(void **)&(r)->f = dlsym((r)->h, name))

static int rt_open(struct rt *r, const char *path)
{
	memset(r, 0, sizeof(*r));
	r->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!r->h)
		return -1;
	SYM(r, live, "tvmffi_standin_live");
	return !SYM(r, set, "TVMFFIErrorSetRaised") || !SYM(r, move, "TVMFFIErrorMoveFromRaised") ||
	       !SYM(r, raise, "TVMFFIErrorSetRaisedFromCStr") ||
	       !SYM(r, decref, "TVMFFIObjectDecRef") || !SYM(r, create, "TVMFFIFunctionCreate") ||
	       !SYM(r, call, "TVMFFIFunctionCall") ? -1 : 0;
}

static int64_t rt_live(const struct rt *r)
{
	return r->live ? r->live() : 0;
}

static const TVMFFIErrorCell *cell_of(void *err)
{
	return (const TVMFFIErrorCell *)((TVMFFIObject *)err + 1);
}

static int field_is(const TVMFFIByteArray *b, const char *s)
{
	return b->size == strlen(s) && !memcmp(b->data, s, b->size);
}

static int field_has(const TVMFFIByteArray *b, const char *s)
{
	return b->data && memmem(b->data, b->size, s, strlen(s)) != NULL;
}

FIXTURE(interop) {
	struct rt rt;
};

FIXTURE_VARIANT(interop) {
	const char *runtime;	/* what a TVM FFI program has as libtvm_ffi.so */
	const char *tvm_module;	/* fixture_tvm.c linked with it */
	int foreign;
};

FIXTURE_VARIANT_ADD(interop, one_runtime) {
	.runtime = LIB_DIR "/libtensorio-tvmffi.so.0",
	.tvm_module = FIXTURE_DIR "/fixture_tvm.so",
};

FIXTURE_VARIANT_ADD(interop, two_runtimes) {
	.runtime = FOREIGN_DIR "/libtvm_ffi.so",
	.tvm_module = FOREIGN_DIR "/fixture_tvm.so",
	.foreign = 1,
};

FIXTURE_SETUP(interop)
{
	ASSERT_EQ(0, rt_open(&self->rt, variant->runtime)) TH_LOG("%s", dlerror());
	ASSERT_EQ(0, rt_live(&self->rt));
}

FIXTURE_TEARDOWN(interop)
{
}

/* Nothing raised on either side, nothing of either runtime alive. */
#define ASSERT_CLEAN(r) do {						\
	TVMFFIObjectHandle h_ = (void *)1;				\
	(r)->move(&h_);							\
	EXPECT_EQ(NULL, h_);						\
	EXPECT_EQ(NULL, tio_error_peek_raised());			\
	EXPECT_EQ(0, rt_live(r));					\
	ASSERT_NO_LEAKS();						\
} while (0)

/* A module on the TVM FFI runtime raises; tensorio takes the error. */
TEST_F(interop, tvm_module_raises_to_tio)
{
	tio_object_t *m, *e;
	tio_any_t ret;

	ASSERT_EQ(0, tio_module_load(variant->tvm_module, &m));
	EXPECT_EQ(-1, call_named(m, "raise", NULL, 0, &ret));
	e = tio_error_move_from_raised();
	ASSERT_NE(NULL, e);
	EXPECT_STREQ("ValueError", tio_error_kind(e));
	EXPECT_STREQ("raised the TVM way", tio_error_message(e));
	if (variant->foreign) {
		EXPECT_STREQ(STANDIN_BACKTRACE, tio_error_backtrace(e));
	} else {
		EXPECT_NE(NULL, strstr(tio_error_backtrace(e), "__tvm_ffi_raise"))
			TH_LOG("%s", tio_error_backtrace(e));
	}
	tio_object_decref(e);
	EXPECT_EQ(-1, call_named(m, "raise_parts", NULL, 0, &ret));
	ASSERT_RAISED("TypeError", "argument 1 of f(x): bad");
	tio_object_decref(m);
	ASSERT_CLEAN(&self->rt);
}

typedef int (*sym_t)(void *, const TVMFFIAny *, int32_t, TVMFFIAny *);

static sym_t tio_sym(void *h, const char *name)
{
	sym_t f;

	*(void **)&f = dlsym(h, name);
	return f;
}

/* A tensorio module raises with tio_error_raise(); the TVM FFI runtime takes it. */
TEST_F(interop, tio_module_raises_to_tvm)
{
	TVMFFIAny arg = { .type_index = kTVMFFIInt, .v_int64 = 7 };
	TVMFFIAny ret = { .type_index = kTVMFFINone };
	TVMFFIObjectHandle e = NULL;
	const TVMFFIErrorCell *c;
	void *h = dlopen(FIX_TIO, RTLD_NOW | RTLD_LOCAL);

	ASSERT_NE(NULL, h) TH_LOG("%s", dlerror());
	ASSERT_EQ(-1, tio_sym(h, "__tvm_ffi_fail")(NULL, &arg, 1, &ret));
	self->rt.move(&e);
	ASSERT_NE(NULL, e);
	c = cell_of(e);
	EXPECT_TRUE(field_is(&c->kind, "ValueError"));
	EXPECT_TRUE(field_is(&c->message, "tio module says no to 7"));
	/* The backtrace is text in the cell when the runtime gets it. */
	EXPECT_TRUE(field_has(&c->backtrace, "fixture_fail"))
		TH_LOG("%.*s", (int)c->backtrace.size, c->backtrace.data);
	EXPECT_EQ(NULL, c->cause_chain);
	self->rt.decref(e);
	EXPECT_EQ(NULL, tio_error_move_from_raised());

	/* A chained error keeps its cause. */
	e = NULL;
	ASSERT_EQ(-1, tio_sym(h, "__tvm_ffi_chain")(NULL, NULL, 0, &ret));
	self->rt.move(&e);
	ASSERT_NE(NULL, e);
	c = cell_of(e);
	EXPECT_TRUE(field_is(&c->kind, "KeyError"));
	ASSERT_NE(NULL, c->cause_chain);
	EXPECT_TRUE(field_is(&cell_of(c->cause_chain)->kind, "IndexError"));
	EXPECT_TRUE(field_is(&cell_of(c->cause_chain)->message, "deep down"));
	self->rt.decref(e);
	dlclose(h);
	ASSERT_CLEAN(&self->rt);
}

static int raise_key(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	tio_error_raise("IndexError", "deep down");
	return tio_error_raise_chained("KeyError", "no '%s'", "k");
}

/* The TVM FFI runtime's raise, as its module would. */
static void (*foreign_raise)(const char *, const char *);

static int raise_foreign(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *ret)
{
	foreign_raise("RuntimeError", "the foreign callback says no");
	return -1;
}

/*
 * Errors cross and come back: a TVM module catches what a tensorio
 * Function raised; a tensorio module passes on what a Function of the
 * TVM FFI runtime raised, to a caller on either side.
 */
TEST_F(interop, errors_cross_back_and_forth)
{
	TVMFFIAny ret = { .type_index = kTVMFFINone }, farg;
	TVMFFIObjectHandle fe = NULL, g;
	tio_object_t *m, *f, *e;
	tio_any_t arg, r;
	const char *s;
	void *h;

	ASSERT_EQ(0, tio_module_load(variant->tvm_module, &m));
	ASSERT_EQ(0, tio_func_new(raise_key, NULL, NULL, &f));
	arg = tio_any_object(f);
	ASSERT_EQ(0, call_named(m, "catch", &arg, 1, &r));
	ASSERT_EQ(0, tio_any_to_str(&r, &s, NULL));
	EXPECT_STREQ("KeyError: no 'k' (cause IndexError)", s);
	tio_any_decref(&r);	/* a String of the runtime's making */
	tio_object_decref(f);
	tio_object_decref(m);

	foreign_raise = self->rt.raise;
	ASSERT_EQ(0, self->rt.create(NULL, raise_foreign, NULL, &g));
	h = dlopen(FIX_TIO, RTLD_NOW | RTLD_LOCAL);
	ASSERT_NE(NULL, h);
	farg.type_index = kTVMFFIFunction;
	farg.zero_padding = 0;
	farg.v_obj = g;
	ASSERT_EQ(-1, tio_sym(h, "__tvm_ffi_call")(NULL, &farg, 1, &ret));
	self->rt.move(&fe);
	ASSERT_NE(NULL, fe);
	EXPECT_TRUE(field_is(&cell_of(fe)->kind, "RuntimeError"));
	EXPECT_TRUE(field_is(&cell_of(fe)->message, "the foreign callback says no"));
	self->rt.decref(fe);

	r = tio_any_none();
	ASSERT_EQ(-1, tio_func_call_any(g, NULL, 0, &r));
	e = tio_error_move_from_raised();
	ASSERT_NE(NULL, e);
	EXPECT_STREQ("the foreign callback says no", tio_error_message(e));
	if (variant->foreign) {
		EXPECT_STREQ(STANDIN_BACKTRACE, tio_error_backtrace(e));
	}
	tio_object_decref(e);
	self->rt.decref(g);
	dlclose(h);
	ASSERT_CLEAN(&self->rt);
}

static int five(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *ret)
{
	ret->type_index = kTVMFFIInt;
	ret->zero_padding = 0;
	ret->v_int64 = 5;
	return 0;
}

static int add_one(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	*ret = tio_any_int(args[0].v_int64 + 1);
	return 0;
}

/* Success paths, both ways. */
TEST_F(interop, success_paths)
{
	TVMFFIAny arg = { .type_index = kTVMFFIInt, .v_int64 = 21 };
	TVMFFIAny ret = { .type_index = kTVMFFINone };
	TVMFFIObjectHandle g;
	tio_object_t *m, *f;
	tio_any_t r;
	void *h = dlopen(FIX_TIO, RTLD_NOW | RTLD_LOCAL);

	ASSERT_NE(NULL, h);
	ASSERT_EQ(0, tio_sym(h, "__tvm_ffi_twice")(NULL, &arg, 1, &ret));
	EXPECT_EQ(kTVMFFIInt, ret.type_index);
	EXPECT_EQ(42, ret.v_int64);

	ASSERT_EQ(0, tio_module_load(variant->tvm_module, &m));
	ASSERT_EQ(0, call_named(m, "_hidden", NULL, 0, &r));
	EXPECT_EQ(7, r.v_int64);
	tio_object_decref(m);

	/* A Function of each runtime called through the other. */
	ASSERT_EQ(0, self->rt.create(NULL, five, NULL, &g));
	r = tio_any_none();
	ASSERT_EQ(0, tio_func_call_any(g, NULL, 0, &r));
	EXPECT_EQ(5, r.v_int64);
	ASSERT_EQ(0, tio_func_new(add_one, NULL, NULL, &f));
	ret.type_index = kTVMFFINone;
	ASSERT_EQ(0, self->rt.call(f, &arg, 1, &ret));
	EXPECT_EQ(22, ret.v_int64);
	tio_object_decref(f);
	self->rt.decref(g);
	dlclose(h);
	ASSERT_CLEAN(&self->rt);
}

struct thread_arg {
	struct rt *rt;
	sym_t fail;
	int id, bad;
};

/* Each thread's errors stay its own, on either side. */
static void *thread_main(void *p)
{
	struct thread_arg *a = p;
	TVMFFIAny arg = { .type_index = kTVMFFIInt }, ret;
	TVMFFIObjectHandle e;
	tio_object_t *te;
	char want[64];
	int i;

	for (i = 0; i < 50; i++) {
		arg.v_int64 = a->id * 1000 + i;
		snprintf(want, sizeof(want), "tio module says no to %d", a->id * 1000 + i);
		e = NULL;
		if (a->fail(NULL, &arg, 1, &ret) != -1)
			a->bad++;
		a->rt->move(&e);
		if (!e || !field_is(&cell_of(e)->message, want))
			a->bad++;
		a->rt->decref(e);
		snprintf(want, sizeof(want), "thread %d, %d", a->id, i);
		a->rt->raise("RuntimeError", want);
		te = tio_error_move_from_raised();
		if (!te || strcmp(tio_error_message(te), want))
			a->bad++;
		tio_object_decref(te);
	}
	return NULL;
}

TEST_F(interop, threads)
{
	struct thread_arg a[4];
	pthread_t t[4];
	void *h = dlopen(FIX_TIO, RTLD_NOW | RTLD_LOCAL);
	int i;

	ASSERT_NE(NULL, h);
	setenv("TIO_BACKTRACE", "0", 1);	/* a symbolised backtrace each: slow */
	for (i = 0; i < 4; i++) {
		a[i] = (struct thread_arg){ &self->rt, tio_sym(h, "__tvm_ffi_fail"), i, 0 };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, thread_main, &a[i]));
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, a[i].bad);
	}
	dlclose(h);
	ASSERT_CLEAN(&self->rt);
}

/*
 * A foreign runtime loaded after an error was raised and left: found at
 * the next raise, which goes to its slot; the stale error goes. (This one
 * has a SysV symbol hash table only, the others a GNU one.)
 */
TEST(runtime_loaded_late)
{
	TVMFFIAny arg = { .type_index = kTVMFFIInt, .v_int64 = 3 }, ret;
	TVMFFIObjectHandle e = NULL;
	tio_object_t *te;
	struct rt rt;
	void *h;

	tio_error_raise("ValueError", "raised before");
	ASSERT_EQ(0, rt_open(&rt, FOREIGN_DIR "-sysv/libtvm_ffi.so"));
	h = dlopen(FIX_TIO, RTLD_NOW | RTLD_LOCAL);
	ASSERT_NE(NULL, h);
	ASSERT_EQ(-1, tio_sym(h, "__tvm_ffi_fail")(NULL, &arg, 1, &ret));
	rt.move(&e);
	ASSERT_NE(NULL, e);
	EXPECT_TRUE(field_is(&cell_of(e)->message, "tio module says no to 3"));
	rt.decref(e);
	EXPECT_EQ(NULL, tio_error_move_from_raised());

	rt.raise("RuntimeError", "raised after");
	te = tio_error_move_from_raised();
	ASSERT_NE(NULL, te);
	EXPECT_STREQ("raised after", tio_error_message(te));
	tio_object_decref(te);
	dlclose(h);
	ASSERT_CLEAN(&rt);
}

/* Found through a module that links it (RTLD_LOCAL), nothing else. */
TEST(runtime_found_through_a_module)
{
	tio_object_t *m;
	tio_any_t ret;

	ASSERT_EQ(0, tio_module_load(FOREIGN_DIR "/fixture_tvm.so", &m));
	EXPECT_EQ(-1, call_named(m, "raise", NULL, 0, &ret));
	ASSERT_RAISED("ValueError", "raised the TVM way");
	EXPECT_EQ(NULL, tio_error_move_from_raised());
	tio_object_decref(m);
	ASSERT_NO_LEAKS();
}

TEST_HARNESS_MAIN
